"""What actuating a resize does to a pod's containers (upstream pkg/kubelet/kuberuntime
computePodResizeAction): each container is resized in place unless its resizePolicy says
RestartContainer for a resource that changed, in which case it is killed and started again at
the new size (its restartCount goes up)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.quantity import to_int
from kubelet.admission import CPU, MEMORY
from kubelet.runtime import PodAllocation

RESTART_CONTAINER: Final = "RestartContainer"


def containers_to_restart(
    pod: types_pb2.Pod, current: PodAllocation, desired: PodAllocation
) -> list[str]:
    """The containers a resize from `current` to `desired` restarts (upstream's
    computePodResizeAction): those whose resizePolicy for cpu says RestartContainer and whose
    cpu limit or request changes, or for memory and whose memory limit changes (a memory
    request alone never restarts). Containers without a policy for a resource do not restart
    (the default is NotRequired)."""
    restart: list[str] = []
    containers = [
        *(c for c in pod.spec.init_containers if c.restart_policy == "Always"),
        *pod.spec.containers,
    ]
    for c in containers:
        old, new = current.get(c.name), desired.get(c.name)
        if old is None or new is None:
            continue
        policies = {p.resource_name: p.restart_policy for p in c.resize_policy}
        changed: set[str] = set()
        for resource, sections in ((CPU, ("requests", "limits")), (MEMORY, ("limits",))):
            for section in sections:
                before = getattr(old, section).get(resource)
                after = getattr(new, section).get(resource)
                if _quantity(resource, before) != _quantity(resource, after):
                    changed.add(resource)
        if any(policies.get(r) == RESTART_CONTAINER for r in changed):
            restart.append(c.name)
    return restart


def _quantity(resource: str, text: str | None) -> int | None:
    return None if text is None else to_int(resource, text)
