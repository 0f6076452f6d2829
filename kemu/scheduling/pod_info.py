"""A pod update's PodInfo without recomputing what the update did not change.

Most updates of a pod the scheduler holds change neither its spec nor the parts of its status
its requests are computed from: a DisruptionTarget condition on a victim, PodScheduled=False
and the nominatedNodeName of a preemptor, the phase and readiness a kubelet reports. Upstream
builds a new PodInfo for each (framework.NewPodInfo: requests, host ports, affinity terms);
`refreshed_pod_info` gives the same PodInfo by taking what the previous one computed from the
spec, and recomputes only when something that feeds it changed.

What a PodInfo computes and from what (kemu.scheduling.types.PodInfo): `priority`,
`host_ports` and the four affinity-term tuples from the spec (the terms from the namespace
too, which never changes); `requests`/`non_zero_requests` from the spec (containers, init
containers and their restart policies, overhead, pod-level resources) and from the status
(each container status's allocated and actual resources, whether there are any, and whether
the resize is Infeasible; kemu.machinery.resources.scheduler_pod_requests); `uid` from the
metadata (immutable); the lazily read `meta_view` and `start_time_ns` from the metadata and
status (reset: read again from the new pod). A slot not in this list disables the reuse
(`REUSABLE`) rather than copying something that may have changed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import is_pod_resize_infeasible
from kemu.scheduling.types import PodInfo

# Slots computed from the spec, the namespace or the uid (equal inputs, equal values).
_COPIED: Final = (
    "host_ports",
    "non_zero_requests",
    "preferred_affinity_terms",
    "preferred_anti_affinity_terms",
    "priority",
    "requests",
    "required_affinity_terms",
    "required_anti_affinity_terms",
    "uid",
)
# Slots set from the new pod itself (`pod`) or reset to "not read yet".
_RESET: Final = ("_meta_view", "_start_time_ns", "pod")

# False if PodInfo gained or lost a slot since this module was written: then every update
# builds a new PodInfo (correct, only slower) until the lists above are brought up to date.
REUSABLE: Final = set(PodInfo.__slots__) == set(_COPIED) | set(_RESET)


def _status_resources(
    statuses: list[types_pb2.ContainerStatus],
) -> list[tuple[str, dict[str, str], types_pb2.ResourceRequirements | None]]:
    return [
        (
            cs.name,
            dict(cs.allocated_resources),
            cs.resources if cs.HasField("resources") else None,
        )
        for cs in statuses
    ]


def same_status_resources(old: types_pb2.Pod, new: types_pb2.Pod) -> bool:
    """Whether the status parts a pod's requests are computed from are equal: each container
    status's name, allocated and actual resources (app and init), and an Infeasible resize."""
    o, n = old.status, new.status
    if o.container_statuses != n.container_statuses and _status_resources(
        list(o.container_statuses)
    ) != _status_resources(list(n.container_statuses)):
        return False
    if o.init_container_statuses != n.init_container_statuses and _status_resources(
        list(o.init_container_statuses)
    ) != _status_resources(list(n.init_container_statuses)):
        return False
    return is_pod_resize_infeasible(old) == is_pod_resize_infeasible(new)


def same_requests_inputs(old: types_pb2.Pod, new: types_pb2.Pod) -> bool:
    """Whether everything a pod's requests are computed from is equal in both (so that their
    requests are equal, however counted): the containers, init containers, overhead and
    pod-level resources of the spec, and `same_status_resources`."""
    o, n = old.spec, new.spec
    return (
        o.containers == n.containers
        and o.init_containers == n.init_containers
        and o.overhead == n.overhead
        and o.resources == n.resources
        and same_status_resources(old, new)
    )


def same_computed_inputs(old: types_pb2.Pod, new: types_pb2.Pod) -> bool:
    """Whether everything a PodInfo computes eagerly reads the same in both pods: the same
    uid and namespace, an equal spec and `same_status_resources`."""
    return (
        old.metadata.uid == new.metadata.uid
        and old.metadata.namespace == new.metadata.namespace
        and old.spec == new.spec
        and same_status_resources(old, new)
    )


def refreshed_pod_info(
    prev: PodInfo | None,
    pod: types_pb2.Pod,
    factory: Callable[[types_pb2.Pod], PodInfo],
) -> PodInfo:
    """The PodInfo of `pod`, an update of `prev.pod`: `prev`'s computed values with `pod` in
    it when the update changed none of their inputs, else `factory(pod)`. `prev` must have
    been built by `factory` (the same in-place-resize and aggregation settings)."""
    if (
        prev is None
        or not REUSABLE
        or type(prev) is not PodInfo
        or not same_computed_inputs(prev.pod, pod)
    ):
        return factory(pod)
    pi = PodInfo.__new__(PodInfo)
    for name in _COPIED:
        setattr(pi, name, getattr(prev, name))
    pi.pod = pod
    pi._meta_view = None
    pi._start_time_ns = -1
    return pi
