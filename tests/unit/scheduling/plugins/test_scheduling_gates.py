from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, EventResource, QueueingHint
from kemu.scheduling.plugins import scheduling_gates
from kemu.scheduling.status import Code
from kemu.testing.builders import make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle


def _pod(*gates: str, uid: str = "uid-p") -> types_pb2.Pod:
    b = make_pod("p").uid(uid)
    for g in gates:
        b.gate(g)
    return b.obj()


def test_pod_without_gates_may_enter_the_queue() -> None:
    pl = scheduling_gates.new({}, FakeHandle())
    assert pl.pre_enqueue(_pod()).is_success()


@pytest.mark.parametrize(
    ("gates", "message"),
    [
        (("foo",), "waiting for scheduling gates: [foo]"),
        (("foo", "bar"), "waiting for scheduling gates: [foo bar]"),
    ],
)
def test_gated_pod_waits_unresolvable_listing_its_gates(
    gates: tuple[str, ...], message: str
) -> None:
    pl = scheduling_gates.new({}, FakeHandle())
    status = pl.pre_enqueue(_pod(*gates))
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == message


def test_registers_for_gates_eliminated_on_the_pod() -> None:
    pl = scheduling_gates.new({}, FakeHandle())
    (ev,) = pl.events_to_register()
    assert ev.event.resource == EventResource.POD
    assert ev.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert ev.hint is not None


@pytest.mark.parametrize(
    ("new_gates", "new_uid", "want"),
    [
        ((), "uid-p", QueueingHint.QUEUE),
        (("b",), "uid-p", QueueingHint.SKIP),  # one gate left
        ((), "uid-other", QueueingHint.SKIP),  # another pod lost its gates
    ],
)
def test_hint_queues_only_the_pod_itself_once_ungated(
    new_gates: tuple[str, ...], new_uid: str, want: QueueingHint
) -> None:
    pl = scheduling_gates.new({}, FakeHandle())
    (ev,) = pl.events_to_register()
    assert ev.hint is not None
    gated = _pod("a", "b")
    assert ev.hint(gated, gated, _pod(*new_gates, uid=new_uid)) == want
