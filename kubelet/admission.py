"""Pod admission: does a pod fit next to the pods this node already admitted?

Upstream's predicateAdmitHandler (pkg/kubelet/lifecycle/predicate.go) runs the scheduler's
resource fit against a NodeInfo of the admitted pods at their *allocated* resources. The first
failure decides: the pod count first, then cpu, memory, ephemeral-storage and extended
resources, each only when the pod requests a positive amount (extended resources the node does
not know are ignored, as upstream removes them). The pod is then rejected with reason
`OutOf<resource>` and the message of InsufficientResourceError:
"Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000".

What a pod needs is kemu.machinery.resources.kubelet_pod_requests (the scheduler's model, at
the kubelet's allocation). Resources are exact integers: milli-CPU for cpu, base units (bytes,
counts) for the rest. An allocation maps each container name (init and app containers share
one name space) to the requests and limits the kubelet admitted it with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
_NATIVE: Final = (CPU, MEMORY, EPHEMERAL_STORAGE)

REASON_PREFIX: Final = "OutOf"

ResourceList = dict[str, str]
"""A Kubernetes ResourceList: resource name -> quantity string."""


@dataclass(frozen=True)
class ContainerAllocation:
    requests: Mapping[str, str]
    limits: Mapping[str, str]

    def to_json(self) -> dict[str, dict[str, str]]:
        return {"requests": dict(self.requests), "limits": dict(self.limits)}

    @classmethod
    def from_json(cls, data: Mapping[str, Mapping[str, str]]) -> ContainerAllocation:
        return cls(dict(data.get("requests", {})), dict(data.get("limits", {})))


PodAllocation = dict[str, ContainerAllocation]
"""Container name -> what it was allocated."""


def allocation_from_spec(pod: types_pb2.Pod) -> PodAllocation:
    """The allocation a pod gets when admitted: what its spec asks for."""
    return {
        c.name: ContainerAllocation(dict(c.resources.requests), dict(c.resources.limits))
        for c in (*pod.spec.init_containers, *pod.spec.containers)
    }


def requests_of(allocation: PodAllocation) -> dict[str, Mapping[str, str]]:
    """Container name -> its requests (what kemu.machinery.resources.kubelet_pod_requests
    takes as an allocated or actual size)."""
    return {name: a.requests for name, a in allocation.items()}


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


ADMITTED: Final = AdmitResult(True)


def insufficient(resource: str, requested: int, used: int, capacity: int) -> AdmitResult:
    return AdmitResult(
        False,
        f"{REASON_PREFIX}{resource}",
        f"Node didn't have enough resource: {resource}, requested: {requested}, "
        f"used: {used}, capacity: {capacity}",
    )


def used_by(admitted: Iterable[Mapping[str, int]]) -> tuple[dict[str, int], int]:
    """(summed requests, pod count) of the admitted pods' requests."""
    used: dict[str, int] = {}
    count = 0
    for requests in admitted:
        _add(used, requests)
        count += 1
    return used, count


def fits(
    requests: Mapping[str, int],
    used: Mapping[str, int],
    pod_count: int,
    allocatable: Mapping[str, int],
) -> AdmitResult:
    """Whether a pod requesting `requests` fits next to `pod_count` pods using `used`."""
    allowed = allocatable.get(PODS, 0)
    if pod_count + 1 > allowed:
        return insufficient(PODS, 1, pod_count, allowed)
    extended = sorted(n for n in requests if n not in _NATIVE and n != PODS)
    for name in (*_NATIVE, *extended):
        wanted = requests.get(name, 0)
        if wanted <= 0:
            continue
        if name not in _NATIVE and name not in allocatable:
            continue  # an extended resource the node does not know: not ours to check
        capacity = allocatable.get(name, 0)
        in_use = used.get(name, 0)
        if wanted > capacity - in_use:
            return insufficient(name, wanted, in_use, capacity)
    return ADMITTED
