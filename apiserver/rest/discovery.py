"""Discovery documents of the REST edge (/api, /apis, /api/v1, /apis/<group>/<version>),
built from kemu.machinery.kinds: every kind kemu serves, its scope, verbs and subresources.

Two forms, as upstream: the legacy documents (one request per group version), and aggregated
discovery (apidiscovery.k8s.io v2, or v2beta1 for older clients: one APIGroupDiscoveryList on
/api and one on /apis), which kubectl 1.32 asks for in its Accept header.
"""

from __future__ import annotations

from typing import Any, Final

from kemu.machinery import subresources
from kemu.machinery.kinds import KINDS, Kind

VERBS: Final = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
AGGREGATED_GROUP: Final = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS: Final = ("v2", "v2beta1")  # preferred first


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
    """(name, kind, verbs) of a kind's subresources (kemu.machinery.subresources)."""
    return [(s.name, s.served_kind or k.kind, sorted(s.verbs)) for s in subresources.of_kind(k)]


def _group_version(sub: str) -> tuple[str, str] | None:
    """The group and version of a subresource's kind when of another group (policy/v1
    Eviction, autoscaling/v1 Scale)."""
    return subresources.SUBRESOURCES[sub].group_version


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
            other = _group_version(sub)
            if other is not None:
                item.update(group=other[0], version=other[1])
            resources.append(item)
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": f"{group}/{version}" if group else version,
        "resources": resources,
    }


# ---------------------------------------------------------------- aggregated discovery


def aggregated_version(accept: str) -> str | None:
    """The apidiscovery version an Accept header asks for (the first one kemu serves, in the
    client's order), or None for the legacy documents."""
    for media in accept.split(","):
        params = dict(p.strip().partition("=")[::2] for p in media.split(";")[1:] if "=" in p)
        if (
            params.get("g") == AGGREGATED_GROUP
            and params.get("as") == "APIGroupDiscoveryList"
            and params.get("v") in AGGREGATED_VERSIONS
        ):
            return params["v"]
    return None


def aggregated_content_type(version: str) -> str:
    return f"application/json;g={AGGREGATED_GROUP};v={version};as=APIGroupDiscoveryList"


def _aggregated_resource(k: Kind) -> dict[str, Any]:
    group, version = group_version(k)
    entry: dict[str, Any] = {
        "resource": k.resource,
        "responseKind": {"group": group, "version": version, "kind": k.kind},
        "scope": "Namespaced" if k.namespaced else "Cluster",
        "singularResource": k.kind.lower(),
        "verbs": VERBS,
    }
    if k.short_names:
        entry["shortNames"] = list(k.short_names)
    if k.kind == "Pod":
        entry["categories"] = ["all"]
    subs = []
    for sub, sub_kind, verbs in _subresources(k):
        sub_group, sub_version = _group_version(sub) or (group, version)
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": sub_group, "version": sub_version, "kind": sub_kind},
                "verbs": verbs,
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def aggregated(legacy_core: bool, version: str) -> dict[str, Any]:
    """The APIGroupDiscoveryList of /api (legacy_core) or of /apis."""
    names = [""] if legacy_core else groups()
    items = []
    for g in names:
        resources = [_aggregated_resource(k) for k in kinds_of(g, "v1")]
        items.append(
            {
                "metadata": {"name": g} if g else {},
                "versions": [{"version": "v1", "resources": resources, "freshness": "Current"}],
            }
        )
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{AGGREGATED_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }
