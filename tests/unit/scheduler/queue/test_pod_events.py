from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, EventResource
from kemu.testing.builders import make_pod
from scheduler.queue.pod_events import (
    has_nominated_node_name_changed,
    le_priority_pre_check,
    pod_scheduling_properties_change,
)


def _base() -> types_pb2.Pod:
    return make_pod("p").uid("u").req(cpu="1", memory="1Gi").label("app", "a").obj()


def _with(fn: object) -> types_pb2.Pod:
    pod = _base()
    assert callable(fn)
    fn(pod)
    return pod


@pytest.mark.parametrize(
    ("change", "want"),
    [
        (lambda p: p.metadata.labels.update({"app": "b"}), [ActionType.UPDATE_POD_LABEL]),
        (
            lambda p: p.spec.containers[0].resources.requests.update({"cpu": "500m"}),
            [ActionType.UPDATE_POD_SCALE_DOWN],
        ),
        (
            lambda p: p.spec.containers[0].resources.requests.update({"cpu": "2"}),
            [ActionType.UPDATE_POD_SCALE_UP],
        ),
        (lambda p: p.spec.tolerations.add(key="k"), [ActionType.UPDATE_POD_TOLERATION]),
        (lambda p: setattr(p.status, "nominated_node_name", "n1"), [ActionType.UPDATE_POD_OTHER]),
        (
            lambda p: (p.metadata.labels.update({"app": "b"}), p.spec.tolerations.add(key="k")),
            [ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_TOLERATION],
        ),
    ],
    ids=["label", "scale-down", "scale-up", "toleration", "status-only", "label-and-toleration"],
)
def test_pod_update_events_of_an_unscheduled_pod(change: object, want: list[ActionType]) -> None:
    events = pod_scheduling_properties_change(_with(change), _base())
    assert [e.action for e in events] == want
    assert {e.resource for e in events} == {EventResource.UNSCHEDULED_POD}


def test_gates_eliminated_and_assigned_resource() -> None:
    old = make_pod("p").gate("g").obj()
    new = make_pod("p").node("n1").obj()
    (event,) = pod_scheduling_properties_change(new, old)
    assert event.resource == EventResource.ASSIGNED_POD
    assert event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert str(event) == "AssignedPodUpdatePodSchedulingGatesEliminated"


def test_nominated_node_name_changed_only_when_an_existing_nomination_moves_or_goes() -> None:
    none, n1, n2 = (
        make_pod("p").obj(),
        make_pod("p").nominated("n1").obj(),
        make_pod("p").nominated("n2").obj(),
    )
    assert has_nominated_node_name_changed(n1, n2)
    assert has_nominated_node_name_changed(n1, none)
    assert not has_nominated_node_name_changed(none, n1)
    assert not has_nominated_node_name_changed(n1, n1)


def test_le_priority_pre_check() -> None:
    check = le_priority_pre_check(10)
    assert check(make_pod("a").priority(10).obj())
    assert check(make_pod("b").obj())
    assert not check(make_pod("c").priority(11).obj())
