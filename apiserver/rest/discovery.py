"""Discovery documents of the REST edge (/api, /apis, /api/v1, /apis/<group>/<version>),
built from kemu.machinery.kinds: every kind kemu serves, its scope, verbs and subresources."""

from __future__ import annotations

from typing import Any, Final

from kemu.machinery.kinds import KINDS, Kind

VERBS: Final = ["create", "delete", "get", "list", "patch", "update", "watch"]


def group_version(kind: Kind) -> tuple[str, str]:
    group, _, version = kind.api_version.rpartition("/")
    return group, version


def kinds_of(group: str, version: str) -> list[Kind]:
    return [k for k in KINDS if group_version(k) == (group, version)]


def groups() -> list[str]:
    """The named groups in the order of KINDS (the core group is served under /api)."""
    out: list[str] = []
    for k in KINDS:
        g = group_version(k)[0]
        if g and g not in out:
            out.append(g)
    return out


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [],
    }


def api_group_list() -> dict[str, Any]:
    items = []
    for g in groups():
        gv = {"groupVersion": f"{g}/v1", "version": "v1"}
        items.append({"name": g, "versions": [gv], "preferredVersion": gv})
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}


def api_group(group: str) -> dict[str, Any] | None:
    if group not in groups():
        return None
    gv = {"groupVersion": f"{group}/v1", "version": "v1"}
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [gv],
        "preferredVersion": gv,
    }


def _subresources(k: Kind) -> list[tuple[str, str, list[str]]]:
    """(name, kind, verbs) of a kind's subresources."""
    out: list[tuple[str, str, list[str]]] = []
    if k.has_status:
        out.append(("status", k.kind, ["get", "patch", "update"]))
    if k.kind == "Pod":
        out += [
            ("binding", "Binding", ["create"]),
            ("eviction", "Eviction", ["create"]),
            ("resize", "Pod", ["get", "patch", "update"]),
        ]
    if k.kind == "Namespace":
        out.append(("finalize", "Namespace", ["update"]))
    return out


def resource_list(group: str, version: str) -> dict[str, Any] | None:
    served = kinds_of(group, version)
    if not served:
        return None
    resources: list[dict[str, Any]] = []
    for k in served:
        entry: dict[str, Any] = {
            "name": k.resource,
            "singularName": k.kind.lower(),
            "namespaced": k.namespaced,
            "kind": k.kind,
            "verbs": VERBS,
        }
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if k.kind == "Pod":
            entry["categories"] = ["all"]
        resources.append(entry)
        for sub, sub_kind, verbs in _subresources(k):
            item: dict[str, Any] = {
                "name": f"{k.resource}/{sub}",
                "singularName": "",
                "namespaced": k.namespaced,
                "kind": sub_kind,
                "verbs": verbs,
            }
            if sub == "eviction":
                item.update(group="policy", version="v1")
            resources.append(item)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }
