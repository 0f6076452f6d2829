"""A simulated container's log: what `kubectl logs` (pods/log) shows. Kemu's containers run
no process, so their log is what the kubelet did to them, as lines derived from the
container's status alone (the one definition; the apiserver serves it, docs/kubelet.md):

- a line when the current instance started (`state.running.startedAt`, or
  `state.terminated.startedAt`): its image and restart count;
- a line when it exited (`state.terminated.finishedAt`): its exit code and reason.

A container not started yet has no log: the kubelet's error, `container "c" in pod "p" is
waiting to start: REASON`, is what the caller gets (BadRequest), as upstream's. kemu keeps no
previous instance (no `lastState`), so `previous` finds none.
"""

from __future__ import annotations

from dataclasses import dataclass

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest


@dataclass(frozen=True, slots=True)
class LogLine:
    at: Timestamp
    text: str


def _status(pod: types_pb2.Pod, name: str) -> types_pb2.ContainerStatus | None:
    for cs in (*pod.status.container_statuses, *pod.status.init_container_statuses):
        if cs.name == name:
            return cs
    return None


def container_log(pod: types_pb2.Pod, container: str) -> list[LogLine]:
    """The log lines of `container` (of `pod`, which has it) in order; BadRequest while it
    waits to start."""
    cs = _status(pod, container)
    state = cs.state if cs is not None else types_pb2.ContainerState()
    if state.HasField("running"):
        started, ended = state.running.started_at, None
    elif state.HasField("terminated"):
        started, ended = state.terminated.started_at, state.terminated
    else:
        reason = state.waiting.reason or "ContainerCreating"
        raise BadRequest(
            f'container "{container}" in pod "{pod.metadata.name}" is waiting to start: {reason}'
        )
    assert cs is not None
    image = cs.image or next(
        (c.image for c in (*pod.spec.containers, *pod.spec.init_containers) if c.name == container),
        "",
    )
    lines = [
        LogLine(
            started,
            f"kemu: container {container} started (image {image}, restart count "
            f"{cs.restart_count}); a simulated container runs no process",
        )
    ]
    if ended is not None:
        reason = f" ({ended.reason})" if ended.reason else ""
        lines.append(
            LogLine(
                ended.finished_at,
                f"kemu: container {container} exited with code {ended.exit_code}{reason}",
            )
        )
    return lines


def previous_not_found(pod: types_pb2.Pod, container: str) -> BadRequest:
    """`previous=true`: kemu keeps no terminated instance before the current one."""
    return BadRequest(
        f'previous terminated container "{container}" in pod "{pod.metadata.name}" not found'
    )
