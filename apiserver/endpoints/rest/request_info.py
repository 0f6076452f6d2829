"""The RequestInfo of an HTTP request, resolved from its method, path and query as upstream's
RequestInfoFactory does (k8s.io/apiserver/pkg/endpoints/request/requestinfo.go), before and
independently of routing: the in-flight limit (apiserver/endpoints/inflight.py) and priority
and fairness (apiserver/flowcontrol) read it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from apiserver.endpoints.identity import ANONYMOUS, UserInfo
from apiserver.endpoints.inflight import RequestInfo, selected_name
from kemu.machinery import subresources
from kemu.machinery.kinds import BY_KIND

_NAMESPACE_SUBRESOURCES: Final = frozenset(
    s.name for s in subresources.of_kind(BY_KIND["Namespace"])
)
_VERBS: Final = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}


def request_info(
    method: str, path: str, query: Mapping[str, str], user: UserInfo = ANONYMOUS
) -> RequestInfo:
    """/api/v1/... and /apis/GROUP/VERSION/... are resource requests; anything else
    (discovery, /openapi, /version, the health probes) a non-resource one. `user` made it."""
    parts = [p for p in path.split("/") if p]
    group = ""
    if parts[:1] == ["api"] and len(parts) >= 3:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, rest = parts[1], parts[3:]
    else:
        return RequestInfo(_VERBS.get(method, "get"), path=path or "/", user=user)
    watch = False
    if rest[0] == "watch":  # the deprecated /watch/ prefix
        watch, rest = True, rest[1:]
    namespace = ""
    # namespaces/NS/RESOURCE...; namespaces/NS, namespaces/NS/status and namespaces/NS/finalize
    # are the Namespace object itself
    if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in _NAMESPACE_SUBRESOURCES:
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if rest else ""
    named = len(rest) >= 2
    subresource = rest[2] if len(rest) >= 3 else ""
    if method in ("GET", "HEAD"):
        if watch or query.get("watch", "").lower() in ("true", "1"):
            verb = "watch"
        else:
            verb = "get" if named else "list"
    elif method == "DELETE" and not named:
        verb = "deletecollection"
    else:
        verb = _VERBS.get(method, method.lower())
    initial = verb == "watch" and query.get("sendInitialEvents", "").lower() in ("true", "1")
    selector = query.get("fieldSelector", "") if verb in ("list", "watch") else ""
    return RequestInfo(
        verb,
        resource,
        namespace,
        "",
        group,
        subresource,
        user,
        send_initial_events=initial,
        name=rest[1] if named else selected_name(selector),
        field_selector=selector,
    )
