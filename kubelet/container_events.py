"""The kubelet's container events: what upstream's kubelet records on a pod as its containers
start and stop (reasons from upstream pkg/kubelet/events/event.go; messages from
pkg/kubelet/images/image_manager.go and pkg/kubelet/kuberuntime/kuberuntime_container.go).

No image is pulled and no process runs: a container's image is "already present on machine"
unless its pull policy is Always (then it is pulled, in no time), and its Created and Started
events come together when the simulated containers start (kubelet.runtime). Killing comes when
a running pod's containers get SIGTERM.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.kinds import EVENT_NORMAL

PULLING: Final = "Pulling"
PULLED: Final = "Pulled"
CREATED: Final = "Created"
STARTED: Final = "Started"
KILLING: Final = "Killing"

PULL_ALWAYS: Final = "Always"


@dataclass(frozen=True)
class ContainerEvent:
    event_type: str
    reason: str
    message: str


def _containers(pod: types_pb2.Pod) -> Iterator[types_pb2.Container]:
    yield from pod.spec.init_containers
    yield from pod.spec.containers


def _pull_policy(c: types_pb2.Container) -> str:
    """The container's imagePullPolicy as upstream defaults it (pkg/apis/core/v1/defaults.go:
    Always for a :latest or untagged image, IfNotPresent otherwise)."""
    if c.image_pull_policy:
        return c.image_pull_policy
    if "@" in c.image:
        return "IfNotPresent"
    last = c.image.rsplit("/", 1)[-1]
    tag = last.split(":", 1)[1] if ":" in last else ""
    return PULL_ALWAYS if tag in ("", "latest") else "IfNotPresent"


def started_events(pod: types_pb2.Pod) -> list[ContainerEvent]:
    """The events of the pod's containers being pulled, created and started."""
    out: list[ContainerEvent] = []
    for c in _containers(pod):
        if _pull_policy(c) == PULL_ALWAYS:
            out.append(ContainerEvent(EVENT_NORMAL, PULLING, f'Pulling image "{c.image}"'))
            out.append(
                ContainerEvent(
                    EVENT_NORMAL,
                    PULLED,
                    f'Successfully pulled image "{c.image}" in 0s (0s including waiting). '
                    "Image size: 0 bytes.",
                )
            )
        else:
            out.append(
                ContainerEvent(
                    EVENT_NORMAL,
                    PULLED,
                    f'Container image "{c.image}" already present on machine',
                )
            )
        out.append(ContainerEvent(EVENT_NORMAL, CREATED, f"Created container: {c.name}"))
        out.append(ContainerEvent(EVENT_NORMAL, STARTED, f"Started container {c.name}"))
    return out


def killing_events(pod: types_pb2.Pod) -> list[ContainerEvent]:
    """The events of the pod's running containers getting SIGTERM (upstream killContainer)."""
    return [
        ContainerEvent(EVENT_NORMAL, KILLING, f"Stopping container {c.name}")
        for c in pod.spec.containers
    ]
