"""Each checker passes a good history and fails a crafted bad one."""

from __future__ import annotations

from apiserver.storage.watch_cache import LATE_CHANGE_LOG
from kemu.api.v1 import types_pb2
from kemu.chaos import checks
from kemu.chaos.recorder import Holding, LeaseRecorder
from kemu.client.interface import ADDED, DELETED, MODIFIED
from kemu.testing.builders import make_pod
from kemu.testing.invariants import PodVersion, WatchSpan

ALLOCATABLE = {"n1": {"cpu": "1", "memory": "1Gi", "pods": "10"}}


def pod(name: str, rv: int, node: str = "", cpu: str = "500m", phase: str = "") -> types_pb2.Pod:
    p = make_pod(name).namespace("ns").req(cpu=cpu, memory="100Mi").obj()
    p.metadata.uid = f"uid-{name}"
    p.metadata.resource_version = str(rv)
    p.spec.node_name = node
    p.status.phase = phase
    return p


def history(*versions: tuple[str, types_pb2.Pod]) -> dict[str, list[PodVersion]]:
    out: dict[str, list[PodVersion]] = {}
    for seq, (t, p) in enumerate(versions):
        out.setdefault(p.metadata.uid, []).append(PodVersion(seq, t, p))
    return out


def test_bound_once() -> None:
    good = history(
        (ADDED, pod("a", 1)), (MODIFIED, pod("a", 2, "n1")), (DELETED, pod("a", 3, "n1"))
    )
    assert checks.check_bound_once(good) == []
    moved = history((ADDED, pod("a", 1, "n1")), (MODIFIED, pod("a", 2, "n2")))
    assert "was bound to n1 and then has nodeName 'n2'" in checks.check_bound_once(moved)[0]


def test_watch_order() -> None:
    good = history((ADDED, pod("a", 1)), (MODIFIED, pod("b", 2)), (MODIFIED, pod("a", 3)))
    assert checks.check_watch_order(good) == []
    bad = history((ADDED, pod("a", 1)), (MODIFIED, pod("b", 3)), (MODIFIED, pod("a", 2)))
    assert "received after 3" in checks.check_watch_order(bad)[0]
    # The initial list is exempt: it is in key order, not revision order.
    assert checks.check_watch_order(bad, listed=3) == []


def test_watchers_agree() -> None:
    a = history((ADDED, pod("a", 1)), (MODIFIED, pod("a", 2)))
    assert checks.check_watchers_agree("A", a, "B", a) == []
    b = history((ADDED, pod("a", 1)))
    (v,) = checks.check_watchers_agree("A", a, "B", b)
    assert "only A saw ['2']" in v


def test_a_gap_names_the_watch_that_should_have_carried_it() -> None:
    a = history((ADDED, pod("a", 1)), (MODIFIED, pod("a", 5)), (MODIFIED, pod("a", 9)))
    b = history((ADDED, pod("a", 1)), (MODIFIED, pod("a", 9)))
    watches = {
        "B": [
            WatchSpan(100.0, 101.5, "1", "3", 0, 1, "the server ended it"),
            WatchSpan(101.6, 104.0, "3", "9", 1, 2, "Unavailable: gone"),
        ]
    }
    (v,) = checks.check_watchers_agree("A", a, "B", b, watches=watches, t0=100.0)
    assert "only B saw []" in v
    assert (
        "B lacks 5: its watch from resourceVersion 3 to 9 at t+1.60s..4.00s "
        "(1 events, 2 bookmarks; ended: Unavailable: gone)"
    ) in v
    (v,) = checks.check_watchers_agree("A", a, "B", b)
    assert v.endswith("B lacks 5: no watch recorded")


def test_a_late_change_in_an_apiservers_log_is_a_violation() -> None:
    line = "W1125 09:10:43.096706 31736 watch_cache.py:356] " + LATE_CHANGE_LOG % (
        "nodes",
        8980,
        8991,
        1,
    )
    logs = {"apiserver-a": "started\n" + line + "\n", "apiserver-b": "started\n"}
    assert checks.check_no_late_changes(logs) == [
        "apiserver-a: the nodes watch cache got the change at revision 8980 after it had moved "
        "to 8991"
    ]
    assert checks.check_no_late_changes({"apiserver-a": "started\n"}) == []


def test_acknowledged_writes() -> None:
    h = history((ADDED, pod("a", 1)), (MODIFIED, pod("a", 2)))
    assert checks.check_acknowledged([checks.Ack("uid-a", "2", "resize ns/a")], h, "A") == []
    (v,) = checks.check_acknowledged([checks.Ack("uid-a", "5", "resize ns/a")], h, "A")
    assert "resize ns/a" in v and "never saw" in v


def test_node_capacity_scheduler_view() -> None:
    fits = history((MODIFIED, pod("a", 1, "n1")), (MODIFIED, pod("b", 2, "n1")))
    assert checks.check_node_capacity(fits, ALLOCATABLE) == []
    over = history(
        (MODIFIED, pod("a", 1, "n1")),
        (MODIFIED, pod("b", 2, "n1")),
        (MODIFIED, pod("c", 3, "n1", cpu="100m")),
    )
    (v,) = checks.check_node_capacity(over, ALLOCATABLE)
    assert v.startswith("scheduler's view: ns/c bound to n1 at resourceVersion 3 needs cpu 100")


def test_node_capacity_unconfirmed_bind_is_forgotten_for_a_while() -> None:
    """The chaos CI profile's seed 712756188: etcd killed under the Bind of ns/b, the write
    committed but the scheduler saw an error and forgot b (as upstream does), then bound c into
    the room it believed free; the kubelet's admission is the safety net. Within the grace
    the scheduler's view leaves b out; later, or when b's bind was confirmed, it counts."""
    over = history(
        (MODIFIED, pod("a", 1, "n1")),
        (MODIFIED, pod("b", 2, "n1")),
        (MODIFIED, pod("c", 3, "n1")),
    )
    confirmed = {("ns/a", "n1"), ("ns/c", "n1")}
    unconfirmed = checks.unconfirmed_bindings(over, confirmed)
    assert unconfirmed == {"uid-b"}
    seen = {"uid-a": 0.0, "uid-b": 1.0, "uid-c": 2.5}
    assert checks.check_node_capacity(over, ALLOCATABLE, unconfirmed, seen) == []
    late = {"uid-a": 0.0, "uid-b": 1.0, "uid-c": 1.0 + checks.UNCONFIRMED_GRACE}
    (v,) = checks.check_node_capacity(over, ALLOCATABLE, unconfirmed, late)
    assert v.startswith("scheduler's view: ns/c bound to n1 at resourceVersion 3 needs cpu 500")
    all_confirmed = checks.unconfirmed_bindings(over, confirmed | {("ns/b", "n1")})
    assert all_confirmed == set()
    assert len(checks.check_node_capacity(over, ALLOCATABLE, all_confirmed, seen)) == 1
    # A binding logged to another node does not confirm this one.
    assert checks.unconfirmed_bindings(over, confirmed | {("ns/b", "n2")}) == {"uid-b"}


def test_node_capacity_unconfirmed_bind_still_counts_for_the_kubelet() -> None:
    a = pod("a", 1, "n1", cpu="600m", phase="Running")
    b = pod("b", 2, "n1", cpu="600m", phase="Running")
    h = history((MODIFIED, a), (MODIFIED, b))
    (v,) = checks.check_node_capacity(h, ALLOCATABLE, {"uid-a"}, {"uid-a": 0.0, "uid-b": 0.1})
    assert v.startswith("kubelet's view: n1 has cpu 1200 allocated of 1000")


def test_node_capacity_frees_terminal_and_deleted_pods() -> None:
    h = history(
        (MODIFIED, pod("a", 1, "n1", cpu="1")),
        (MODIFIED, pod("a", 2, "n1", cpu="1", phase="Succeeded")),
        (MODIFIED, pod("b", 3, "n1", cpu="1")),
        (DELETED, pod("b", 4, "n1", cpu="1")),
        (MODIFIED, pod("c", 5, "n1", cpu="1")),
    )
    assert checks.check_node_capacity(h, ALLOCATABLE) == []


def test_node_capacity_kubelet_view() -> None:
    a = pod("a", 1, "n1", cpu="500m", phase="Running")
    b = pod("b", 2, "n1", cpu="500m", phase="Running")
    grown = pod("b", 3, "n1", cpu="500m", phase="Running")
    cs = grown.status.container_statuses.add(name=grown.spec.containers[0].name)
    cs.allocated_resources["cpu"] = "700m"
    (v,) = checks.check_node_capacity(
        history((MODIFIED, a), (MODIFIED, b), (MODIFIED, grown)), ALLOCATABLE
    )
    assert v.startswith("kubelet's view: n1 has cpu 1200 allocated of 1000")


def test_pending_that_fit() -> None:
    h = history((MODIFIED, pod("a", 1, "n1", cpu="800m")), (ADDED, pod("small", 2, cpu="100m")))
    assert checks.pending_that_fit(h, ALLOCATABLE) == ["ns/small"]
    assert checks.pods_expected_and_bound(h, ALLOCATABLE) == (2, 1)
    h2 = history((MODIFIED, pod("a", 1, "n1", cpu="800m")), (ADDED, pod("big", 2, cpu="300m")))
    assert checks.pending_that_fit(h2, ALLOCATABLE) == []


def test_recovery_and_percentiles() -> None:
    assert checks.recovery_times([1.0, 5.0, 9.0], [0.5, 1.5, 7.0]) == [0.5, 2.0]
    assert checks.percentile([], 50) is None
    assert checks.percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert checks.percentile([float(i) for i in range(1, 101)], 99) == 99.0


def test_write_revision_and_lease_holder() -> None:
    versions = history(
        (ADDED, pod("a", 1)), (MODIFIED, pod("a", 4, "n1")), (DELETED, pod("a", 6, "n1"))
    )["uid-a"]
    assert checks.write_revision(versions, "bound") == 4
    assert checks.write_revision(versions, "preempted") == 6
    lease = LeaseRecorder([Holding(2, "a", 10.0), Holding(5, "b", 20.0)])
    assert lease.holder_at(4) == "a" and lease.holder_at(6) == "b"
    assert lease.holder_at(5) == "a", "the lease write at 5 is not before revision 5"
    assert lease.holder_at(2) is None and lease.holder == "b"
    assert lease.first_change_after(11.0, "a") == 20.0


def test_the_lease_recorder_keeps_every_version_of_the_scheduler_lease_only() -> None:
    lease = LeaseRecorder()

    def version(name: str, rv: int, holder: str) -> types_pb2.Lease:
        obj = types_pb2.Lease(spec=types_pb2.LeaseSpec(holder_identity=holder))
        obj.metadata.name, obj.metadata.resource_version = name, str(rv)
        obj.metadata.uid = f"uid-{name}"
        return obj

    lease.record(ADDED, version("kube-scheduler", 3, "a"))
    lease.record(MODIFIED, version("kube-controller-manager", 4, "x"))
    lease.record(MODIFIED, version("kube-scheduler", 5, "a"))  # a renewal
    lease.record(MODIFIED, version("kube-scheduler", 6, "b"))
    assert [(h.resource_version, h.holder) for h in lease.holdings] == [
        (3, "a"),
        (5, "a"),
        (6, "b"),
    ]
    assert lease.holder_at(6) == "a" and lease.holder_at(7) == "b"


def test_a_stale_leader_binding_is_not_held_to_the_scheduler_view() -> None:
    """A scheduler that lost its lease binds c onto a node its successor filled: upstream does
    not fence it, so its binding is left out of the scheduler's view; the kubelet's view is
    what upstream guarantees (the kubelet rejects c: it never gets admitted)."""
    over = history(
        (MODIFIED, pod("a", 1, "n1")),
        (MODIFIED, pod("b", 2, "n1")),
        (MODIFIED, pod("c", 3, "n1", cpu="100m")),
    )
    assert len(checks.check_node_capacity(over, ALLOCATABLE)) == 1
    assert checks.check_node_capacity(over, ALLOCATABLE, stale={"uid-c"}) == []
    admitted = history(
        (MODIFIED, pod("a", 1, "n1", phase="Running")),
        (MODIFIED, pod("b", 2, "n1", phase="Running")),
        (MODIFIED, pod("c", 3, "n1", cpu="100m", phase="Running")),
    )
    (v,) = checks.check_node_capacity(admitted, ALLOCATABLE, stale={"uid-c"})
    assert v.startswith("kubelet's view: n1 has cpu 1100 allocated of 1000")


def test_still_terminating() -> None:
    gone = pod("a", 2, "n1")
    gone.metadata.deletion_timestamp.seconds = 1
    stuck = pod("b", 3, "n1")
    stuck.metadata.deletion_timestamp.seconds = 1
    h = history((MODIFIED, gone), (DELETED, gone), (MODIFIED, stuck))
    assert checks.still_terminating(h) == ["ns/b"]
