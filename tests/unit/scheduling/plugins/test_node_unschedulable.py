from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import node_unschedulable
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle

TOLERATES = (
    make_pod("p")
    .uid("p")
    .toleration("node.kubernetes.io/unschedulable", effect="NoSchedule", operator="Exists")
)


# Cases from upstream TestNodeUnschedulable.
@pytest.mark.parametrize(
    ("pod", "unschedulable", "want"),
    [
        (make_pod("p").obj(), True, Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
        (make_pod("p").obj(), False, Code.SUCCESS),
        (TOLERATES.obj(), True, Code.SUCCESS),
        # A toleration for another effect does not tolerate the NoSchedule taint.
        (
            make_pod("p")
            .toleration("node.kubernetes.io/unschedulable", effect="NoExecute", operator="Exists")
            .obj(),
            True,
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
        # Empty key with Exists tolerates everything.
        (make_pod("p").toleration(operator="Exists").obj(), True, Code.SUCCESS),
    ],
)
def test_filter(pod: types_pb2.Pod, unschedulable: bool, want: Code) -> None:
    pl = node_unschedulable.new({}, FakeHandle())
    node = NodeInfo(make_node("n").unschedulable(unschedulable).obj())
    status = pl.filter(CycleState(), pod, node)
    assert status.code == want
    if want != Code.SUCCESS:
        assert status.message() == "node(s) were unschedulable"


def test_filter_without_node_is_unknown_condition() -> None:
    pl = node_unschedulable.new({}, FakeHandle())
    status = pl.filter(CycleState(), make_pod("p").obj(), NodeInfo())
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == "node(s) had unknown conditions"


def _node(unschedulable: bool) -> types_pb2.Node:
    return make_node("n").unschedulable(unschedulable).obj()


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [
        (None, _node(False), QueueingHint.QUEUE),  # schedulable node added
        (None, _node(True), QueueingHint.SKIP),  # cordoned node added
        (_node(True), _node(False), QueueingHint.QUEUE),  # uncordoned
        (_node(False), _node(False), QueueingHint.SKIP),  # no change to schedulability
        (_node(False), _node(True), QueueingHint.SKIP),  # cordoned
    ],
)
def test_node_hint_queues_when_node_becomes_schedulable(
    old: types_pb2.Node | None, new: types_pb2.Node, want: QueueingHint
) -> None:
    pl = node_unschedulable.new({}, FakeHandle())
    assert pl.is_schedulable_after_node_change(make_pod("p").obj(), old, new) == want


def test_pod_hint_queues_the_pod_itself_when_it_now_tolerates_cordon() -> None:
    pl = node_unschedulable.new({}, FakeHandle())
    pod = make_pod("p").uid("p").obj()
    assert pl.is_schedulable_after_pod_toleration_change(pod, pod, TOLERATES.obj()) == (
        QueueingHint.QUEUE
    )
    other = make_pod("q").uid("q").toleration(operator="Exists").obj()
    assert pl.is_schedulable_after_pod_toleration_change(pod, other, other) == QueueingHint.SKIP
    unrelated = make_pod("p").uid("p").toleration("foo", operator="Exists").obj()
    assert pl.is_schedulable_after_pod_toleration_change(pod, pod, unrelated) == (QueueingHint.SKIP)


def test_events_registered() -> None:
    pl = node_unschedulable.new({}, FakeHandle())
    events = {(e.event.resource, e.event.action) for e in pl.events_to_register()}
    assert events == {
        (EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
        (EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
    }
    assert all(e.hint is not None for e in pl.events_to_register())
