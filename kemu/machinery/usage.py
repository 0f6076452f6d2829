"""What a running pod's containers use, in kemu's simulation: the kubelet's simulated usage,
which metrics.k8s.io (`kubectl top`) serves. Kemu's containers run nothing, so their usage is
a rule, defined here once:

- by default each running container uses half of its requests (cpu, memory): the size the
  kubelet runs it at (its reported `status.containerStatuses[].resources`, the actual size
  after an in-place resize) when reported, else its spec's;
- the pod's annotations `kubelet.kemu.io/cpu-usage` and `kubelet.kemu.io/memory-usage`
  (quantities: the pod's total) override it per resource, split evenly over its running
  containers (the remainder to the first ones, so that the containers sum to the total).

The running containers are the app containers and the restartable init containers
(sidecars), in that order. The apiserver validates both annotations on every write
(`kemu.machinery.validation.pod`), so a stored pod's are quantities; one that is not is
ignored here rather than failing a read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import parse_quantity

CPU_USAGE_ANNOTATION: Final = "kubelet.kemu.io/cpu-usage"
MEMORY_USAGE_ANNOTATION: Final = "kubelet.kemu.io/memory-usage"
USAGE_ANNOTATIONS: Final = {CPU_USAGE_ANNOTATION: "cpu", MEMORY_USAGE_ANNOTATION: "memory"}


@dataclass(frozen=True, slots=True)
class ContainerUsage:
    name: str
    cpu_millis: int
    memory_bytes: int


def _amount(resource: str, text: str) -> int | None:
    try:
        q = parse_quantity(text)
    except Invalid:
        return None
    value = q.milli_value() if resource == "cpu" else q.value()
    return value if value >= 0 else None


def annotation_usage(annotations: Mapping[str, str]) -> dict[str, int]:
    """The pod totals the usage annotations set (cpu in millicores, memory in bytes); a
    value that is not a non-negative quantity is left out."""
    out = {}
    for key, resource in USAGE_ANNOTATIONS.items():
        if key in annotations:
            value = _amount(resource, annotations[key])
            if value is not None:
                out[resource] = value
    return out


def _running_containers(spec: types_pb2.PodSpec) -> list[types_pb2.Container]:
    sidecars = [
        c
        for c in spec.init_containers
        if c.HasField("restart_policy") and c.restart_policy == "Always"
    ]
    return [*spec.containers, *sidecars]


def _requests(
    c: types_pb2.Container, status: types_pb2.ContainerStatus | None
) -> Mapping[str, str]:
    if status is not None and status.HasField("resources"):
        return status.resources.requests
    return c.resources.requests


def pod_usage(pod: types_pb2.Pod) -> list[ContainerUsage]:
    """The usage of each running container of `pod` (see the module's rule)."""
    containers = _running_containers(pod.spec)
    if not containers:
        return []
    statuses = {cs.name: cs for cs in pod.status.init_container_statuses}
    statuses.update((cs.name, cs) for cs in pod.status.container_statuses)
    per_resource: dict[str, list[int]] = {}
    totals = annotation_usage(pod.metadata.annotations)
    for resource in ("cpu", "memory"):
        total = totals.get(resource)
        if total is not None:
            share, extra = divmod(total, len(containers))
            per_resource[resource] = [share + (i < extra) for i in range(len(containers))]
        else:
            per_resource[resource] = [
                (_amount(resource, _requests(c, statuses.get(c.name)).get(resource, "0")) or 0) // 2
                for c in containers
            ]
    return [
        ContainerUsage(c.name, per_resource["cpu"][i], per_resource["memory"][i])
        for i, c in enumerate(containers)
    ]
