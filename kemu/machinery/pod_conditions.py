"""Pod conditions as upstream's pkg/api/v1/pod helpers write them (UpdatePodCondition,
CalculatePodConditionObservedGeneration), for every component that sets one."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp


def condition_observed_generation(
    status: types_pb2.PodStatus, condition_type: str, generation: int, *, tracking: bool
) -> int:
    """The observedGeneration a writer puts on its condition (upstream's
    CalculatePodConditionObservedGeneration, pkg/api/v1/pod/util.go): `generation` when
    PodObservedGenerationTracking (`tracking`) is on, or when the condition already carries
    one (so that a writer with the gate off does not fight the apiserver over it); else 0."""
    if tracking:
        return generation
    old = get_pod_condition(status, condition_type)
    return generation if old is not None and old.observed_generation else 0


def get_pod_condition(
    status: types_pb2.PodStatus, condition_type: str
) -> types_pb2.PodCondition | None:
    return next((c for c in status.conditions if c.type == condition_type), None)


def is_pod_ready(pod: types_pb2.Pod) -> bool:
    """The pod's Ready condition is True (upstream podutil.IsPodReady)."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def update_pod_condition(
    status: types_pb2.PodStatus, condition: types_pb2.PodCondition, now: float
) -> bool:
    """Sets `condition` in `status` (the caller's copy), replacing one of its type; its
    lastTransitionTime is `now` unless the status did not change. True when anything
    changed (status, reason, message, times or observedGeneration)."""
    new = types_pb2.PodCondition()
    new.CopyFrom(condition)
    new.last_transition_time.CopyFrom(timestamp(now))
    old = get_pod_condition(status, condition.type)
    if old is None:
        status.conditions.append(new)
        return True
    if new.status == old.status:
        if old.HasField("last_transition_time"):
            new.last_transition_time.CopyFrom(old.last_transition_time)
        else:
            new.ClearField("last_transition_time")
    changed = new != old
    old.CopyFrom(new)
    return changed


def set_scheduled(pod: types_pb2.Pod, now: float, *, tracking: bool) -> None:
    """The binding's PodScheduled=True (pkg/registry/core/pod/storage/storage.go
    setPodNodeAndMetadata): written whole through update_pod_condition, its observedGeneration
    as condition_observed_generation says (`tracking`: PodObservedGenerationTracking)."""
    generation = condition_observed_generation(
        pod.status, "PodScheduled", pod.metadata.generation, tracking=tracking
    )
    condition = types_pb2.PodCondition(
        type="PodScheduled", status="True", observed_generation=generation
    )
    update_pod_condition(pod.status, condition, now)
