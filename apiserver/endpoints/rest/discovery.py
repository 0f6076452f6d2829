"""Discovery documents of the REST edge (/api, /apis, /api/v1, /apis/<group>/<version>),
built from kemu.machinery.kinds: every kind kemu serves, its scope, verbs and subresources.

Beside the stored kinds, a few resources are served that no kind of kemu.machinery.kinds
stands for (`OTHER_RESOURCES`): the authorization reviews (create only, nothing stored), the
events.k8s.io/v1 view of core/v1 Events and metrics.k8s.io/v1beta1's NodeMetrics and PodMetrics
(computed); the REST edge routes each to its handler.

Two forms, as upstream: the legacy documents (one request per group version), and aggregated
discovery (apidiscovery.k8s.io v2, or v2beta1 for older clients: one APIGroupDiscoveryList on
/api and one on /apis), which kubectl 1.32 asks for in its Accept header.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kemu.machinery import subresources
from kemu.machinery.apiextensions import custom
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.kinds import ALL_SERVED, Kind, Served

VERBS: Final[JSONArray] = [
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
]
IN_CATEGORY_ALL: Final = frozenset(
    {
        "Pod",
        "Service",
        "DaemonSet",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "Job",
        "CronJob",
        "ReplicationController",  # kinds-b (issue #57)
        "HorizontalPodAutoscaler",
    }
)
"""The kinds `kubectl get all` lists: those whose upstream REST storage names the category
"all" (its Categories())."""
AGGREGATED_GROUP: Final = "apidiscovery.k8s.io"
AGGREGATED_VERSIONS: Final = ("v2", "v2beta1")  # preferred first


@dataclass(frozen=True)
class OtherResource:
    """A resource served without a kind of its own in kemu.machinery.kinds."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool
    verbs: tuple[str, ...]
    short_names: tuple[str, ...] = ()
    minors: tuple[int, int] = (0, 1_000)
    """The emulated minor versions that serve it: from the first, before the second."""

    def served_at(self, minor: int) -> bool:
        return self.minors[0] <= minor < self.minors[1]

    @property
    def key(self) -> tuple[str, str, str]:
        return self.group, self.version, self.resource


AUTHORIZATION: Final = "authorization.k8s.io"
AUTHENTICATION: Final = "authentication.k8s.io"
EVENTS: Final = "events.k8s.io"
METRICS: Final = "metrics.k8s.io"

SELF_SUBJECT_ACCESS_REVIEWS: Final = OtherResource(
    AUTHORIZATION, "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", False, ("create",)
)
SELF_SUBJECT_RULES_REVIEWS: Final = OtherResource(
    AUTHORIZATION, "v1", "selfsubjectrulesreviews", "SelfSubjectRulesReview", False, ("create",)
)
SUBJECT_ACCESS_REVIEWS: Final = OtherResource(
    AUTHORIZATION, "v1", "subjectaccessreviews", "SubjectAccessReview", False, ("create",)
)
LOCAL_SUBJECT_ACCESS_REVIEWS: Final = OtherResource(
    AUTHORIZATION, "v1", "localsubjectaccessreviews", "LocalSubjectAccessReview", True, ("create",)
)
# authentication.k8s.io SelfSubjectReview (`kubectl auth whoami`): alpha 1.26, beta 1.27, GA
# 1.28 (KEP-3325); each version served from its release on (v1alpha1 and v1beta1 are off by
# default upstream from 1.28 and 1.29: kemu serves the one `kubectl auth whoami` finds first)
SELF_SUBJECT_REVIEWS: Final = tuple(
    OtherResource(
        AUTHENTICATION,
        version,
        "selfsubjectreviews",
        "SelfSubjectReview",
        False,
        ("create",),
        minors=minors,
    )
    for version, minors in (("v1", (28, 1_000)), ("v1beta1", (27, 28)), ("v1alpha1", (26, 27)))
)
EVENTS_V1: Final = OtherResource(
    EVENTS, "v1", "events", "Event", True, ("get", "list", "watch"), ("ev",)
)
NODE_METRICS: Final = OtherResource(
    METRICS, "v1beta1", "nodes", "NodeMetrics", False, ("get", "list")
)
POD_METRICS: Final = OtherResource(METRICS, "v1beta1", "pods", "PodMetrics", True, ("get", "list"))
OTHER_RESOURCES: Final = (
    SELF_SUBJECT_ACCESS_REVIEWS,
    SELF_SUBJECT_RULES_REVIEWS,
    SUBJECT_ACCESS_REVIEWS,
    LOCAL_SUBJECT_ACCESS_REVIEWS,
    *SELF_SUBJECT_REVIEWS,
    EVENTS_V1,
    NODE_METRICS,
    POD_METRICS,
)


def other_resource(
    group: str, version: str, resource: str, served: Served = ALL_SERVED
) -> OtherResource | None:
    return next(
        (
            r
            for r in OTHER_RESOURCES
            if r.key == (group, version, resource) and r.served_at(served.minor)
        ),
        None,
    )


def group_version(kind: Kind) -> tuple[str, str]:
    group, _, version = kind.api_version.rpartition("/")
    return group, version


def kinds_of(group: str, version: str, served: Served = ALL_SERVED) -> list[Kind]:
    """The kinds served under a group version at the apiserver's emulated version and gates
    (`served`; the default: every kind, at 1.37)."""
    return served.kinds_of(group, version)


def others_of(group: str, version: str, served: Served = ALL_SERVED) -> list[OtherResource]:
    return [
        r
        for r in OTHER_RESOURCES
        if (r.group, r.version) == (group, version) and r.served_at(served.minor)
    ]


def group_versions(served: Served = ALL_SERVED) -> dict[str, list[str]]:
    """Every group (the core group "" first) and its versions, preferred first, in the order
    of KINDS then OTHER_RESOURCES."""
    out: dict[str, list[str]] = {"": []}
    pairs = served.group_versions() + [
        (r.group, r.version) for r in OTHER_RESOURCES if r.served_at(served.minor)
    ]
    for group, version in pairs:
        versions = out.setdefault(group, [])
        if version not in versions:
            versions.append(version)
    return out


def groups(served: Served = ALL_SERVED) -> list[str]:
    """The named groups (the core group is served under /api)."""
    return [g for g in group_versions(served) if g]


def api_versions() -> JSONObject:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [],
    }


def _group(group: str, versions: list[str]) -> JSONObject:
    gvs: JSONArray = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(served: Served = ALL_SERVED) -> JSONObject:
    items: JSONArray = [_group(g, vs) for g, vs in group_versions(served).items() if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": items}


def api_group(group: str, served: Served = ALL_SERVED) -> JSONObject | None:
    versions = group_versions(served).get(group) if group else None
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group(group, versions)}


def _subresources(k: Kind) -> list[tuple[str, str, list[str]]]:
    """(name, kind, verbs) of a kind's subresources (kemu.machinery.subresources)."""
    return [(s.name, s.served_kind or k.kind, sorted(s.verbs)) for s in subresources.of_kind(k)]


def _custom_categories(k: Kind) -> JSONArray:
    """A custom resource's spec.names.categories."""
    definition = custom.definition_for(k) if k.custom else None
    return list(definition.categories) if definition is not None else []


def _group_version(sub: str) -> tuple[str, str] | None:
    """The group and version of a subresource's kind when of another group (policy/v1
    Eviction, autoscaling/v1 Scale)."""
    return subresources.SUBRESOURCES[sub].group_version


def resource_list(group: str, version: str, served: Served = ALL_SERVED) -> JSONObject | None:
    kinds = kinds_of(group, version, served)
    others = others_of(group, version, served)
    if not kinds and not others:
        return None
    resources: JSONArray = []
    for k in kinds:
        entry: JSONObject = {
            "name": k.path_resource,
            "singularName": k.singular or k.kind.lower(),
            "namespaced": k.namespaced,
            "kind": k.kind,
            "verbs": VERBS,
        }
        if k.short_names:
            entry["shortNames"] = list(k.short_names)
        if k.kind in IN_CATEGORY_ALL and not k.custom:
            entry["categories"] = ["all"]
        categories = _custom_categories(k)
        if categories:
            entry["categories"] = categories
        resources.append(entry)
        for sub, sub_kind, verbs in _subresources(k):
            item: JSONObject = {
                "name": f"{k.path_resource}/{sub}",
                "singularName": "",
                "namespaced": k.namespaced,
                "kind": sub_kind,
                "verbs": [*verbs],
            }
            other = _group_version(sub)
            if other is not None:
                item.update(group=other[0], version=other[1])
            resources.append(item)
    for r in others:
        entry = {
            "name": r.resource,
            "singularName": r.kind.lower(),
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": list(r.verbs),
        }
        if r.short_names:
            entry["shortNames"] = list(r.short_names)
        resources.append(entry)
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


def _aggregated_resource(k: Kind, group: str, version: str) -> JSONObject:
    entry: JSONObject = {
        "resource": k.path_resource,
        "responseKind": {"group": group, "version": version, "kind": k.kind},
        "scope": "Namespaced" if k.namespaced else "Cluster",
        "singularResource": k.singular or k.kind.lower(),
        "verbs": VERBS,
    }
    if k.short_names:
        entry["shortNames"] = list(k.short_names)
    if k.kind in IN_CATEGORY_ALL and not k.custom:
        entry["categories"] = ["all"]
    categories = _custom_categories(k)
    if categories:
        entry["categories"] = categories
    subs: JSONArray = []
    for sub, sub_kind, verbs in _subresources(k):
        sub_group, sub_version = _group_version(sub) or (group, version)
        subs.append(
            {
                "subresource": sub,
                "responseKind": {"group": sub_group, "version": sub_version, "kind": sub_kind},
                "verbs": [*verbs],
            }
        )
    if subs:
        entry["subresources"] = subs
    return entry


def _aggregated_other(r: OtherResource) -> JSONObject:
    entry: JSONObject = {
        "resource": r.resource,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": "Namespaced" if r.namespaced else "Cluster",
        "singularResource": r.kind.lower(),
        "verbs": list(r.verbs),
    }
    if r.short_names:
        entry["shortNames"] = list(r.short_names)
    return entry


def aggregated(legacy_core: bool, version: str, served: Served = ALL_SERVED) -> JSONObject:
    """The APIGroupDiscoveryList of /api (legacy_core) or of /apis."""
    items: JSONArray = []
    for g, versions in group_versions(served).items():
        if (g == "") != legacy_core:
            continue
        entries: JSONArray = []
        for v in versions:
            resources: JSONArray = [_aggregated_resource(k, g, v) for k in kinds_of(g, v, served)]
            resources += [_aggregated_other(r) for r in others_of(g, v, served)]
            entries.append({"version": v, "resources": resources, "freshness": "Current"})
        items.append({"metadata": {"name": g} if g else {}, "versions": entries})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": f"{AGGREGATED_GROUP}/{version}",
        "metadata": {},
        "items": items,
    }
