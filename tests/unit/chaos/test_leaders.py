"""Stale leader writes: bindings a scheduler made after another holder took the lease."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.chaos import leaders
from kemu.chaos.recorder import Holding, LeaseRecorder
from kemu.client.interface import ADDED, MODIFIED
from kemu.testing.builders import make_pod
from kemu.testing.invariants import PodVersion


def pod(name: str, rv: int, node: str = "") -> types_pb2.Pod:
    p = make_pod(name).namespace("ns").obj()
    p.metadata.uid = f"uid-{name}"
    p.metadata.resource_version = str(rv)
    p.spec.node_name = node
    return p


HISTORY = {
    "uid-a": [PodVersion(0, ADDED, pod("a", 10)), PodVersion(1, MODIFIED, pod("a", 12, "n1"))],
    "uid-b": [PodVersion(2, ADDED, pod("b", 11)), PodVersion(3, MODIFIED, pod("b", 31, "n2"))],
    "uid-c": [PodVersion(4, ADDED, pod("c", 13)), PodVersion(5, MODIFIED, pod("c", 41, "n1"))],
}
# scheduler-a led as "a-1" from revision 5; scheduler-b took the lease at 30 as "b-1"; a
# restarted scheduler-a led again as "a-2" from 40.
LEASE = LeaseRecorder([Holding(5, "a-1", 0.0), Holding(30, "b-1", 1.0), Holding(40, "a-2", 2.0)])
LOG_A = """\
I0001 leaderelection: successfully acquired lease kube-system/kube-scheduler as a-1
I0002 schedule_one: bound ns/a to n1
I0003 schedule_one: bound ns/b to n2
I0004 leaderelection: successfully acquired lease kube-system/kube-scheduler as a-2
I0005 schedule_one: bound ns/c to n1
"""


def test_each_binding_is_attributed_to_the_life_that_logged_it() -> None:
    writes = leaders.bindings("scheduler-a", LOG_A, HISTORY)
    assert [(w.identity, w.pod, w.uid, w.revision) for w in writes] == [
        ("a-1", "ns/a", "uid-a", 12),
        ("a-1", "ns/b", "uid-b", 31),
        ("a-2", "ns/c", "uid-c", 41),
    ]


def test_a_binding_committed_after_the_takeover_is_a_stale_leader_write() -> None:
    writes = leaders.bindings("scheduler-a", LOG_A, HISTORY)
    ((w, holder),) = leaders.stale(writes, LEASE.holder_at)
    assert (w.pod, holder) == ("ns/b", "b-1")
    assert w.describe(holder) == (
        "scheduler-a (a-1) bound ns/b at resourceVersion 31 while b-1 held the lease"
    )


def test_a_binding_before_any_recorded_lease_version_is_not_judged() -> None:
    writes = leaders.bindings("scheduler-a", LOG_A, HISTORY)
    late = LeaseRecorder([Holding(35, "b-1", 0.0)])
    assert [w.pod for w, _ in leaders.stale(writes, late.holder_at)] == ["ns/c"]


def test_a_binding_logged_before_any_acquisition_or_never_committed_is_ignored() -> None:
    log = "I bound ns/a to n1\nI successfully acquired lease kube-system/x as a-1\nI bound ns/z to n1\n"
    assert leaders.bindings("scheduler-a", log, HISTORY) == []


STALE_B = (
    "W0002 fencing.py:58] stale leader write: update pods ns/b at revision 31 by a-1 "
    "(leaseTransitions 0) of lease kube-system/kube-scheduler, held by b-1 (leaseTransitions 1)"
)
STALE_V = (
    "W0003 fencing.py:58] stale leader write: delete pods ns/v at revision 33 by a-1 "
    "(leaseTransitions 0) of lease kube-system/kube-scheduler, held by b-1 (leaseTransitions 1)"
)


def test_the_apiservers_lines_are_collected_over_every_life() -> None:
    logs = {
        "apiserver-b": f"{STALE_V}\nI0004 other\n",
        "apiserver-a": f"{STALE_B}\nI0005 fencing.py:76] fenced: create pods ns/x refused: lease\n",
    }
    stale = leaders.apiserver_lines(logs, leaders.STALE_WRITE)
    assert [s.split(" at ")[0] for s in stale] == [
        "apiserver-a: update pods ns/b",
        "apiserver-b: delete pods ns/v",
    ]
    assert leaders.apiserver_lines(logs, leaders.FENCED) == ["apiserver-a: create pods ns/x"]


def test_a_stale_binding_the_apiserver_logged_is_counted_once() -> None:
    writes = leaders.bindings("scheduler-a", LOG_A, HISTORY)
    stale = leaders.stale(writes, LEASE.holder_at)
    logged = leaders.apiserver_lines({"apiserver-a": STALE_B + "\n" + STALE_V}, leaders.STALE_WRITE)
    assert len(leaders.all_stale(stale, logged)) == 2
    # Unlogged (the apiserver was killed before its line): found from outside all the same.
    only_v = leaders.apiserver_lines({"apiserver-a": STALE_V}, leaders.STALE_WRITE)
    assert leaders.all_stale(stale, only_v) == [
        only_v[0],
        "scheduler-a (a-1) bound ns/b at resourceVersion 31 while b-1 held the lease",
    ]
