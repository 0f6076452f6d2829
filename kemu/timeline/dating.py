"""When a change happened, by the cluster's clock: read from the object itself wherever it
carries the time, so that a record does not depend on when its watch delivered the change (an
outside watcher lags the event-driven virtual clock by up to a jump, and a real-time one by
its queue). The one way kemu's recorders date what they see (kemu.timeline.model for the
pictures, kemu.trace.observe for a replay's report).

- created: metadata.creationTimestamp;
- a pod bound: its PodScheduled=True condition's lastTransitionTime (the binding writes it,
  kemu.machinery.pod_conditions.set_scheduled);
- preempted or evicted: its DisruptionTarget=True condition's lastTransitionTime, with the
  reason saying which;
- terminating: when the deletion was asked for, deletionTimestamp less
  deletionGracePeriodSeconds (deletionTimestamp is the grace period's end);
- finished (Succeeded or Failed): its containers' latest terminated.finishedAt;
- removed: no object field says when; the time it was seen (`seen`), not after the grace
  period's end, not before what the object already went through (`floor`);
- a node Ready or not: its Ready condition's lastTransitionTime;
- an Event's occurrence: lastTimestamp (firstTimestamp for its first).

Each returns None where the object carries no time; the caller then takes the time it saw
the change, the cluster's (kemu.testing.cluster_time.ClusterClock). Pure: API types only.
"""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.pod_conditions import get_pod_condition


def seconds(ts: Timestamp) -> float | None:
    """Epoch seconds of a Timestamp, None when unset."""
    if ts.seconds == 0 and ts.nanos == 0:
        return None
    return ts.seconds + ts.nanos / 1e9


def created(meta: types_pb2.ObjectMeta) -> float | None:
    return seconds(meta.creation_timestamp)


def bound(pod: types_pb2.Pod) -> float | None:
    """When the pod was bound (PodScheduled=True), None if it is not or does not say."""
    if not pod.spec.node_name:
        return None
    scheduled = get_pod_condition(pod.status, "PodScheduled")
    if scheduled is None or scheduled.status != "True":
        return None
    return seconds(scheduled.last_transition_time)


def disruption(pod: types_pb2.Pod) -> tuple[str, float | None] | None:
    """The reason of the pod's DisruptionTarget=True condition and when it was set; None
    without one."""
    target = get_pod_condition(pod.status, DISRUPTION_TARGET)
    if target is None or target.status != "True":
        return None
    return target.reason, seconds(target.last_transition_time)


def deletion_requested(meta: types_pb2.ObjectMeta) -> float | None:
    """When a graceful deletion was asked for, None if none was."""
    deadline = seconds(meta.deletion_timestamp)
    if deadline is None:
        return None
    grace = (
        meta.deletion_grace_period_seconds if meta.HasField("deletion_grace_period_seconds") else 0
    )
    return deadline - grace


def removed(meta: types_pb2.ObjectMeta, seen: float, floor: float) -> float:
    """When an object whose removal was seen at `seen` went: at the end of its grace period
    at the latest, never before `floor` (its creation, binding, ...)."""
    deadline = seconds(meta.deletion_timestamp)
    at = seen if deadline is None else min(seen, deadline)
    return max(at, floor)


def finished(pod: types_pb2.Pod) -> float | None:
    """When its last container terminated, None if none says."""
    ends = [
        seconds(s.state.terminated.finished_at)
        for s in pod.status.container_statuses
        if s.state.HasField("terminated")
    ]
    known = [t for t in ends if t is not None]
    return max(known) if known else None


def node_ready(node: types_pb2.Node) -> tuple[bool, float | None]:
    """Whether the node is Ready, and since when (its Ready condition's last transition)."""
    for c in node.status.conditions:
        if c.type == "Ready":
            return c.status == "True", seconds(c.last_transition_time)
    return False, None


def event_occurred(event: types_pb2.Event) -> float | None:
    """When the Event last occurred (lastTimestamp, else firstTimestamp)."""
    return seconds(event.last_timestamp) or seconds(event.first_timestamp)
