"""The APIServices of the group versions the apiserver serves itself (upstream's
kube-apiserver autoregister controller, pkg/controlplane/apiserver/aggregator.go
APIVersionPriorities, and kube-aggregator's available controller, which marks a local one
Available with reason Local): `kubectl get apiservices` lists v1., v1.apps, ... as `Local`
and `True`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2

_PRIORITIES: Final[dict[tuple[str, str], tuple[int, int]]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("resource.k8s.io", "v1"): (15900, 15),
}
"""(groupPriorityMinimum, versionPriority) of upstream's table; a group version it does
not name gets `_DEFAULT` (an alpha or beta version ranks below its group's GA one)."""
_DEFAULT: Final = (15000, 9)
AVAILABLE: Final = "Available"
LOCAL: Final = "Local"


def api_service_name(group: str, version: str) -> str:
    """version.group (`v1.` for the core group)."""
    return f"{version}.{group}"


def local_api_service(group: str, version: str, now: Timestamp) -> types_pb2.APIService:
    svc = types_pb2.APIService()
    svc.metadata.name = api_service_name(group, version)
    svc.metadata.labels["kube-aggregator.kubernetes.io/automanaged"] = "onstart"
    svc.spec.group = group
    svc.spec.version = version
    group_min, version_priority = _PRIORITIES.get((group, version), _DEFAULT)
    if (group, version) not in _PRIORITIES:
        group_min = next((g for (grp, _), (g, _) in _PRIORITIES.items() if grp == group), group_min)
    svc.spec.group_priority_minimum = group_min
    svc.spec.version_priority = version_priority
    cond = svc.status.conditions.add()
    cond.type = AVAILABLE
    cond.status = "True"
    cond.reason = LOCAL
    cond.message = "Local APIServices are always available"
    cond.last_transition_time.CopyFrom(now)
    return svc


def local_api_services(
    group_versions: Iterable[tuple[str, str]], now: Timestamp
) -> list[types_pb2.APIService]:
    """One Local APIService per served (group, version)."""
    return [local_api_service(g, v, now) for g, v in group_versions]
