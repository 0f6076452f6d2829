from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import NODE_ADD
from kemu.testing.builders import make_pod
from scheduler.queue.active_queue import InFlightTracker


def _pod(name: str) -> types_pb2.Pod:
    return make_pod(name).uid(name).obj()


def test_events_are_seen_only_by_pods_popped_before_them_and_pruned_after_done() -> None:
    t = InFlightTracker()
    assert not t.add_event(NODE_ADD, None, "n0")  # nobody in flight: not kept
    t.add_pod(_pod("a"))
    t.add_event(NODE_ADD, None, "n1")
    t.add_pod(_pod("b"))
    t.add_event(NODE_ADD, None, "n2")
    assert [e.new_obj for e in t.events_for("a") or []] == ["n1", "n2"]
    assert [e.new_obj for e in t.events_for("b") or []] == ["n2"]
    t.done("a")
    assert [e.new_obj for e in t.events()] == ["n2"]
    t.done("b")
    t.done("b")  # idempotent
    assert t.events() == [] and len(t) == 0
    assert t.events_for("a") is None


def test_a_pod_that_missed_dropped_events_is_told_so() -> None:
    t = InFlightTracker(max_events=2)
    t.add_pod(_pod("a"))
    for i in range(3):
        t.add_event(NODE_ADD, None, f"n{i}")
    t.add_pod(_pod("b"))
    t.add_event(NODE_ADD, None, "late")
    assert t.events_for("a") is None
    assert [e.new_obj for e in t.events_for("b") or []] == ["late"]


def test_a_pod_cannot_be_in_flight_twice() -> None:
    t = InFlightTracker()
    assert t.add_pod(_pod("a"))
    assert not t.add_pod(_pod("a"))


def test_events_are_kept_back_to_the_oldest_pod_still_in_flight_in_any_finishing_order() -> None:
    # Pods finish out of order and a uid comes back in flight: the events kept are always
    # those from the oldest pod still in flight on, as a scan of every pod would find.
    t = InFlightTracker()
    names = [f"p{i}" for i in range(6)]
    for i, name in enumerate(names):
        t.add_pod(_pod(name))
        t.add_event(NODE_ADD, None, f"after-{name}-{i}")
    t.done("p0")
    t.done("p2")
    assert [e.new_obj for e in t.events()][0] == "after-p1-1"
    t.done("p1")
    assert [e.new_obj for e in t.events()][0] == "after-p3-3"
    t.add_pod(_pod("p1"))  # back in flight, now the newest
    t.add_event(NODE_ADD, None, "after-p1-again")
    for name in ("p3", "p4", "p5"):
        t.done(name)
    assert [e.new_obj for e in t.events()] == ["after-p1-again"]
    t.done("p1")
    assert t.events() == [] and len(t) == 0


def test_finishing_many_pods_in_flight_is_not_quadratic() -> None:
    # 20,000 pods in flight finished oldest first: with a scan of every pod per done() this
    # is 2*10^8 steps (minutes); with the ordered heads it is linear (well under a second).
    t = InFlightTracker()
    n = 20_000
    for i in range(n):
        t.add_pod(_pod(f"p{i}"))
    for i in range(n):
        t.done(f"p{i}")
    assert len(t) == 0 and len(t._order) == 0
