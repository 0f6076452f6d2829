"""The API's subresources in one table: which exist, for which kinds, and which verbs each
serves. The apiserver's two edges (gRPC and REST) and kemu.client's FakeClient look a request's
subresource up here instead of each testing names of its own. Upstream registers each as its own
REST storage beside its kind's (pkg/registry/core/rest/storage_core.go: `storage["pods/status"]
= podStorage.Status`, `"pods/binding"`, `"pods/eviction"`, `"pods/resize"`,
`"namespaces/finalize"`; pkg/registry/apps/rest: `"deployments/scale"`, `"statefulsets/scale"`, ...); what a write of
each does is the registry's (apiserver/registry/registry.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kemu.machinery.errors import BadRequest, NotFound
from kemu.machinery.kinds import Kind

GET: Final = "get"
CREATE: Final = "create"
UPDATE: Final = "update"
PATCH: Final = "patch"


@dataclass(frozen=True, slots=True)
class Subresource:
    name: str
    verbs: frozenset[str]
    """The verbs it serves (a subresource is never listed, watched or deleted)."""
    kinds: frozenset[str] | None
    """The kind names that have it; None: every kind with a status (the status
    subresource)."""
    served_kind: str = ""
    """The kind its requests carry, as discovery names it ("": the object's own kind)."""
    group_version: tuple[str, str] | None = None
    """The group and version of `served_kind` when not the object's (discovery)."""

    def exists_for(self, kind: Kind) -> bool:
        if kind.custom:  # a custom resource: those its CRD enables
            return self.name in kind.custom_subresources
        return kind.has_status if self.kinds is None else kind.kind in self.kinds


STATUS: Final = Subresource("status", frozenset({GET, UPDATE, PATCH}), None)
BINDING: Final = Subresource("binding", frozenset({CREATE}), frozenset({"Pod"}), "Binding")
EVICTION: Final = Subresource(
    "eviction", frozenset({CREATE}), frozenset({"Pod"}), "Eviction", ("policy", "v1")
)
RESIZE: Final = Subresource("resize", frozenset({GET, UPDATE, PATCH}), frozenset({"Pod"}))
FINALIZE: Final = Subresource("finalize", frozenset({UPDATE, PATCH}), frozenset({"Namespace"}))
"""Upstream serves PUT only; kemu's namespace controller writes it with a merge PATCH."""
SCALE: Final = Subresource(
    "scale",
    frozenset({GET, UPDATE, PATCH}),
    frozenset({"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController"}),
    "Scale",
    ("autoscaling", "v1"),
)

# issue #57 kinds-a
APPROVAL: Final = Subresource(
    "approval", frozenset({GET, UPDATE, PATCH}), frozenset({"CertificateSigningRequest"})
)
"""certificatesigningrequests/approval: the Approved and Denied conditions only
(pkg/registry/certificates/certificates/storage: ApprovalREST)."""

LOG: Final = Subresource("log", frozenset({GET}), frozenset({"Pod"}))
"""A container's log (text/plain; the REST edge only: kemu.machinery.container_log)."""

TOKEN: Final = Subresource(
    "token",
    frozenset({CREATE}),
    frozenset({"ServiceAccount"}),
    "TokenRequest",
    ("authentication.k8s.io", "v1"),
)
"""serviceaccounts/token (kubectl create token; the REST edge only: kinds-b, issue #57)."""


# --- fidelity (issue 57 item 6): the streaming subresources, REST edge only
# (apiserver.endpoints.rest.streams). Upstream serves them as connect verbs: GET and POST.
EXEC: Final = Subresource("exec", frozenset({GET, CREATE}), frozenset({"Pod"}), "PodExecOptions")
ATTACH: Final = Subresource(
    "attach", frozenset({GET, CREATE}), frozenset({"Pod"}), "PodAttachOptions"
)
PORT_FORWARD: Final = Subresource(
    "portforward", frozenset({GET, CREATE}), frozenset({"Pod"}), "PodPortForwardOptions"
)
STREAMS: Final = frozenset({EXEC, ATTACH, PORT_FORWARD})

SUBRESOURCES: Final[Mapping[str, Subresource]] = MappingProxyType(
    {
        s.name: s
        for s in (STATUS, BINDING, EVICTION, RESIZE, FINALIZE, SCALE, LOG, APPROVAL, TOKEN)
        + (EXEC, ATTACH, PORT_FORWARD)
    }
)


def of_kind(kind: Kind) -> list[Subresource]:
    """The subresources `kind` has, in the table's order."""
    return [s for s in SUBRESOURCES.values() if s.exists_for(kind)]


def lookup(kind: Kind, name: str) -> Subresource:
    """The subresource `name` of `kind`: BadRequest if kemu has none of that name, NotFound
    (upstream's message) if `kind` does not have it."""
    sub = SUBRESOURCES.get(name)
    if sub is None:
        raise BadRequest(f'unknown subresource "{name}"')
    if not sub.exists_for(kind):
        raise not_found(kind, name)
    return sub


def check(kind: Kind, name: str, verb: str) -> Subresource | None:
    """The subresource a `verb` request names, None for the main resource ("");
    BadRequest, or NotFound as `lookup`, and for a verb it does not serve BadRequest."""
    if not name:
        return None
    sub = lookup(kind, name)
    if verb not in sub.verbs:
        raise BadRequest(
            f"{kind.resource}/{name} does not serve {verb} (it serves "
            + ", ".join(sorted(sub.verbs))
            + ")"
        )
    return sub


def not_found(kind: Kind, name: str) -> NotFound:
    return NotFound(f"the server could not find the requested resource ({kind.resource}/{name})")
