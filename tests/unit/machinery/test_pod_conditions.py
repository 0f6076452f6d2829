"""The one pod-condition setter (upstream's podutil.UpdatePodCondition) and the binding's
PodScheduled=True written through it (setPodNodeAndMetadata)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp
from kemu.machinery.pod_conditions import (
    condition_observed_generation,
    get_pod_condition,
    set_scheduled,
    update_pod_condition,
)


def status_with(cond: types_pb2.PodCondition) -> types_pb2.PodStatus:
    return types_pb2.PodStatus(conditions=[cond])


def test_the_transition_time_moves_only_when_the_status_does() -> None:
    status = status_with(
        types_pb2.PodCondition(
            type="Ready", status="True", reason="A", last_transition_time=timestamp(10.0)
        )
    )
    assert update_pod_condition(status, types_pb2.PodCondition(type="Ready", status="True"), 20)
    ready = get_pod_condition(status, "Ready")
    assert ready is not None and ready.reason == "" and ready.last_transition_time.seconds == 10
    assert not update_pod_condition(status, types_pb2.PodCondition(type="Ready", status="True"), 30)
    assert update_pod_condition(status, types_pb2.PodCondition(type="Ready", status="False"), 40)
    assert ready.status == "False" and ready.last_transition_time.seconds == 40
    assert len(status.conditions) == 1


def test_observed_generation_with_the_gate_or_when_the_condition_already_has_one() -> None:
    bare = status_with(types_pb2.PodCondition(type="PodScheduled", status="False"))
    tracked = status_with(
        types_pb2.PodCondition(type="PodScheduled", status="False", observed_generation=1)
    )
    assert condition_observed_generation(bare, "PodScheduled", 3, tracking=True) == 3
    assert condition_observed_generation(bare, "PodScheduled", 3, tracking=False) == 0
    assert condition_observed_generation(tracked, "PodScheduled", 3, tracking=False) == 3
    assert condition_observed_generation(tracked, "Ready", 3, tracking=False) == 0


def test_set_scheduled_writes_the_binding_condition_whole() -> None:
    pod = types_pb2.Pod(
        metadata=types_pb2.ObjectMeta(generation=2),
        status=status_with(
            types_pb2.PodCondition(
                type="PodScheduled",
                status="False",
                reason="Unschedulable",
                message="0/3 nodes are available",
                last_transition_time=timestamp(5.0),
            )
        ),
    )
    set_scheduled(pod, 50.0, tracking=True)
    (cond,) = pod.status.conditions
    assert (cond.status, cond.reason, cond.message) == ("True", "", "")
    assert cond.observed_generation == 2 and cond.last_transition_time.seconds == 50
    gate_off = types_pb2.Pod(metadata=types_pb2.ObjectMeta(generation=2))
    set_scheduled(gate_off, 60.0, tracking=False)
    (cond,) = gate_off.status.conditions
    assert cond.status == "True" and cond.observed_generation == 0
