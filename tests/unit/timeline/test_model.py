"""kemu.timeline.model: what a timeline keeps of the pods, nodes and Events it is fed, on a
fake clock."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.testing.builders import make_node, make_pod
from kemu.timeline.model import (
    NODE_GROUP_LABEL,
    PREEMPTED,
    PREEMPTION_BY_KUBE_SCHEDULER,
    PREEMPTION_BY_SCHEDULER,
    SCALE_DOWN,
    SCALE_DOWN_EMPTY,
    TRIGGERED_SCALE_UP,
    MarkerKind,
    Timeline,
    pod_group_of,
)


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def pod(name: str, uid: str = "", priority: int = 0) -> types_pb2.Pod:
    return make_pod(name).namespace("ns").uid(uid or f"uid-{name}").priority(priority).obj()


def with_(p: types_pb2.Pod, *, node: str = "", nominated: str = "") -> types_pb2.Pod:
    out = types_pb2.Pod()
    out.CopyFrom(p)
    if node:
        out.spec.node_name = node
    out.status.nominated_node_name = nominated
    return out


def event(reason: str, message: str = "", *, involved: str = "", uid: str = "") -> types_pb2.Event:
    e = types_pb2.Event(reason=reason, message=message, type="Normal")
    e.involved_object.name, e.involved_object.uid = involved, uid
    return e


def test_the_reasons_and_labels_it_reads_are_those_their_writers_write() -> None:
    from autoscaler.scale_up import TRIGGERED_SCALE_UP as WRITTEN_SCALE_UP
    from autoscaler.scaledown.actuation import SCALE_DOWN as WRITTEN_DOWN
    from autoscaler.scaledown.actuation import SCALE_DOWN_EMPTY as WRITTEN_EMPTY
    from cloud.config import NODE_GROUP_LABEL as WRITTEN_LABEL
    from kemu.scheduling import preemption
    from kemu.testing.invariants import PREEMPTED as READ_BY_INVARIANTS

    assert (TRIGGERED_SCALE_UP, SCALE_DOWN, SCALE_DOWN_EMPTY) == (
        WRITTEN_SCALE_UP,
        WRITTEN_DOWN,
        WRITTEN_EMPTY,
    )
    assert NODE_GROUP_LABEL == WRITTEN_LABEL
    assert PREEMPTED == READ_BY_INVARIANTS
    assert (PREEMPTION_BY_SCHEDULER, PREEMPTION_BY_KUBE_SCHEDULER) == (
        preemption.PREEMPTION_BY_SCHEDULER,
        preemption.PREEMPTION_BY_KUBE_SCHEDULER,
    )


def test_a_pod_nominated_then_bound_then_deleted() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    p = pod("a", priority=10)
    tl.pod_added(p)
    clock.t = 101.0
    nominated = with_(p, nominated="n1")
    tl.pod_updated(p, nominated)
    clock.t = 102.0
    # The binding clears the nomination in the same write (KEP-5278's apiserver clearing).
    bound = with_(p, node="n1")
    tl.pod_updated(nominated, bound)
    clock.t = 105.0
    tl.pod_deleted(bound)
    (track,) = tl.pods.values()
    assert (track.key, track.priority, track.seen) == ("ns/a", 10, 100.0)
    assert [(n.node, n.start, n.end) for n in track.nominations] == [("n1", 101.0, 102.0)]
    assert (track.node, track.bound, track.deleted, track.gone) == ("n1", 102.0, 105.0, 105.0)
    assert track.steps() == [
        (100.0, "created"),
        (101.0, "nominated to n1"),
        (102.0, "bound to n1"),
        (105.0, "deleted"),
    ]
    assert tl.pending == [(100.0, 0), (100.0, 1), (102.0, 0)]


def test_a_nomination_moved_to_another_node_and_one_cleared_are_spans_of_their_own() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    p = pod("a")
    tl.pod_added(p)
    versions = [("n1", 101.0), ("n2", 102.0), ("", 103.0), ("n2", 104.0)]
    old = p
    for nominated, t in versions:
        clock.t = t
        new = with_(p, nominated=nominated)
        tl.pod_updated(old, new)
        old = new
    (track,) = tl.pods.values()
    spans = [(n.node, n.start, n.end) for n in track.nominations]
    assert spans == [("n1", 101.0, 102.0), ("n2", 102.0, 103.0), ("n2", 104.0, None)]
    assert (103.0, "nomination to n2 cleared") in track.steps()
    assert track.bound is None and tl.pending[-1] == (100.0, 1)


def test_preempted_from_the_condition_and_from_the_event_with_its_preemptor() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    victim = with_(pod("low", priority=1), node="n1")
    preemptor = pod("high", priority=100)
    tl.pod_added(victim)
    tl.pod_added(preemptor)
    clock.t = 101.0
    tl.event_seen(
        event(PREEMPTED, "Preempted by pod uid-high on node n1", uid="uid-low", involved="low")
    )
    clock.t = 102.0
    marked = make_pod("low").namespace("ns").uid("uid-low").priority(1).node("n1")
    marked = marked.condition("DisruptionTarget", "True", PREEMPTION_BY_SCHEDULER)
    tl.pod_updated(victim, marked.obj())
    low, high = tl.pods["uid-low"], tl.pods["uid-high"]
    assert (low.preempted, low.preempted_by, low.preempted_on) == (101.0, "ns/high", "n1")
    assert high.victims == [(101.0, "ns/low")]
    assert (101.0, "preempted by ns/high on n1") in low.steps()
    assert (101.0, "preempted ns/low") in high.steps()


def test_a_victim_whose_event_came_first_and_one_marked_by_the_old_reason() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    tl.event_seen(event(PREEMPTED, "Preempted by pod x on node n2", uid="uid-early"))
    clock.t = 101.0
    tl.pod_added(with_(pod("early"), node="n2"))
    assert tl.pods["uid-early"].preempted == 100.0
    assert tl.pods["uid-early"].preempted_on == "n2"
    old = make_pod("old").namespace("ns").uid("uid-old").node("n1")
    tl.pod_added(old.condition("DisruptionTarget", "True", PREEMPTION_BY_KUBE_SCHEDULER).obj())
    evicted = make_pod("evicted").namespace("ns").uid("uid-ev").node("n1")
    tl.pod_added(evicted.condition("DisruptionTarget", "True", "EvictionByEvictionAPI").obj())
    assert tl.pods["uid-old"].preempted == 101.0
    assert tl.pods["uid-ev"].preempted is None


def test_a_namesake_created_again_is_a_new_pod_and_the_old_one_deleted() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    first = with_(pod("a", uid="u1"), node="n1")
    tl.pod_added(first)
    clock.t = 103.0
    tl.pod_updated(first, pod("a", uid="u2"))
    assert tl.pods["u1"].deleted == 103.0
    assert tl.pods["u2"].bound is None and tl.pending[-1] == (103.0, 1)


def test_finished_and_terminating_pods_are_not_pending_and_their_bar_ends_when_they_finish() -> (
    None
):
    clock = Clock()
    tl = Timeline("run", clock)
    done = make_pod("done").namespace("ns").uid("u-done").node("n1")
    tl.pod_added(done.obj())
    clock.t = 104.0
    tl.pod_updated(done.obj(), done.phase("Succeeded").obj())
    clock.t = 106.0
    tl.pod_deleted(done.obj())
    track = tl.pods["u-done"]
    assert (track.finished, track.phase, track.deleted, track.gone) == (
        104.0,
        "Succeeded",
        106.0,
        104.0,
    )
    unbound = pod("gone")
    tl.pod_added(unbound)
    terminating = types_pb2.Pod()
    terminating.CopyFrom(unbound)
    # asked at 107 with a grace period of 30 s; seen later
    terminating.metadata.deletion_timestamp.seconds = 137
    terminating.metadata.deletion_grace_period_seconds = 30
    clock.t = 109.0
    tl.pod_updated(unbound, terminating)
    assert tl.pods["uid-gone"].terminating == 107.0
    assert tl.pending[-2:] == [(106.0, 1), (107.0, 0)]


def test_nodes_lives_readiness_groups_and_the_count() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    ready = make_node("pool-1").label(NODE_GROUP_LABEL, "pool").ready()
    tl.node_added(make_node("pool-1").label(NODE_GROUP_LABEL, "pool").obj())
    clock.t = 102.0
    tl.node_updated(make_node("pool-1").obj(), ready.obj())
    clock.t = 110.0
    tl.node_deleted(ready.obj())
    clock.t = 111.0
    tl.node_added(ready.obj())  # the same name again
    track = tl.nodes["pool-1"]
    assert track.group == "pool"
    assert [(s.start, s.end) for s in track.lives] == [(100.0, 110.0), (111.0, None)]
    assert [(s.start, s.end) for s in track.not_ready] == [(100.0, 102.0)]
    assert tl.node_count == [(100.0, 0), (100.0, 1), (110.0, 0), (111.0, 1)]


def test_autoscaler_events_are_scale_markers_one_per_scale_up_and_per_node_removed() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    message = "pod triggered scale-up: [{pool 1->3 (max: 4)}]"
    tl.event_seen(event(TRIGGERED_SCALE_UP, message, involved="a"))
    clock.t = 101.0
    tl.event_seen(event(TRIGGERED_SCALE_UP, message, involved="b"))  # the same loop's
    clock.t = 120.0
    tl.event_seen(event(TRIGGERED_SCALE_UP, message, involved="c"))  # a later one

    def on_node(reason: str, message: str, node: str, kind: str = "Node") -> None:
        e = event(reason, message, involved=node)
        e.involved_object.kind = kind
        tl.event_seen(e)

    tl.node_added(make_node("pool-1").obj())
    tl.node_added(make_node("pool-2").obj())
    on_node(SCALE_DOWN, "marked the node as toBeDeleted/unschedulable", "pool-2")
    on_node(SCALE_DOWN, "deleting pod for node scale down", "a-pod", kind="Pod")
    failed = event(SCALE_DOWN, "failed to mark the node", involved="pool-3")
    failed.type = "Warning"
    tl.event_seen(failed)
    clock.t = 121.0
    on_node(SCALE_DOWN, "marked the node as toBeDeleted/unschedulable", "pool-1")
    on_node(SCALE_DOWN_EMPTY, "removing empty node 'pool-1'", "pool-1")
    tl.node_deleted(make_node("pool-2").obj())  # before the Event that says so
    on_node(SCALE_DOWN, "node removed by cluster autoscaler", "pool-2")
    tl.event_seen(event("Scheduled", "bound", involved="a"))
    tl.node_deleted(make_node("pool-1").obj())
    clock.t = 130.0
    tl.node_added(make_node("pool-1").obj())  # a namesake, scaled down in turn
    on_node(SCALE_DOWN, "marked the node as toBeDeleted/unschedulable", "pool-1")
    got = [(m.kind, m.at, m.label) for m in tl.markers]
    assert got == [
        (MarkerKind.SCALE_UP, 100.0, "pool 1->3"),
        (MarkerKind.SCALE_UP, 120.0, "pool 1->3"),
        (MarkerKind.SCALE_DOWN, 120.0, "pool-2 (drained)"),
        (MarkerKind.SCALE_DOWN, 121.0, "pool-1 (empty)"),
        (MarkerKind.SCALE_DOWN, 130.0, "pool-1"),
    ]


def test_first_last_and_finish() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    tl.pod_added(pod("a"))
    clock.t = 103.0
    tl.origin = 102.0  # the driver's t=0 came after the recorder's start
    tl.mark(MarkerKind.FAULT, "kill x", until=105.0)
    assert (tl.first, tl.last) == (100.0, 105.0)
    clock.t = 108.0
    tl.finish()
    assert tl.last == 108.0


def _at(ts: object, seconds: float) -> None:
    from google.protobuf.timestamp_pb2 import Timestamp

    assert isinstance(ts, Timestamp)
    ts.FromNanoseconds(int(seconds * 1e9))


def _dated_versions() -> tuple[types_pb2.Pod, types_pb2.Pod, types_pb2.Pod]:
    """A pod created at 110, bound at 112 and deleted at 120 (grace 0), by its own fields."""
    created = pod("a", priority=5)
    _at(created.metadata.creation_timestamp, 110.0)
    builder = make_pod("a").namespace("ns").uid("uid-a").priority(5).node("n1")
    bound = builder.condition("PodScheduled", "True").obj()
    _at(bound.metadata.creation_timestamp, 110.0)
    _at(bound.status.conditions[0].last_transition_time, 112.0)
    deleted = types_pb2.Pod()
    deleted.CopyFrom(bound)
    _at(deleted.metadata.deletion_timestamp, 120.0)
    deleted.metadata.deletion_grace_period_seconds = 0
    return created, bound, deleted


def test_a_pod_is_dated_by_its_own_timestamps_whenever_it_is_seen() -> None:
    """The cluster's clock on the time axis: a replay at rate max delivers changes late (the
    virtual clock jumps meanwhile), a real-time recorder by its queue."""
    created, bound, deleted = _dated_versions()
    tracks = []
    for seen in ((111.0, 150.0, 400.0), (130.0, 131.0, 132.0), (119.0, 119.5, 120.0)):
        clock = Clock()
        tl = Timeline("run", clock)
        clock.t = seen[0]
        tl.pod_added(created)
        clock.t = seen[1]
        tl.pod_updated(created, bound)
        clock.t = seen[2]
        tl.pod_deleted(deleted)
        (track,) = tl.pods.values()
        assert (track.seen, track.bound, track.terminating, track.deleted) == (
            110.0,
            112.0,
            120.0,
            120.0,
        ), seen
        assert tl.pending == [(100.0, 0), (110.0, 1), (112.0, 0)]
        tracks.append(track)
    assert tracks[0] == tracks[1] == tracks[2]


def test_only_what_the_objects_do_not_date_takes_the_time_it_was_seen() -> None:
    clock = Clock()
    tl = Timeline("run", clock)
    created, bound, _ = _dated_versions()
    clock.t = 111.0
    tl.pod_added(with_(created, nominated="n1"))  # no object time for a nomination
    clock.t = 140.0  # the binding seen late: it ends the nomination at its own time
    tl.pod_updated(created, bound)
    clock.t = 150.0
    tl.pod_deleted(bound)  # removed with no deletionTimestamp: when seen
    (track,) = tl.pods.values()
    assert [(n.node, n.start, n.end) for n in track.nominations] == [("n1", 111.0, 112.0)]
    assert (track.bound, track.deleted) == (112.0, 150.0)


def test_preemption_finish_and_nodes_are_dated_by_their_conditions_and_events() -> None:
    clock = Clock()
    clock.t = 500.0
    tl = Timeline("run", clock)
    tl.begin(clock, at=100.0)  # a replay's: drawn from its trace's first event
    node = make_node("n1").obj()
    _at(node.metadata.creation_timestamp, 90.0)  # before the start: drawn from it
    ready = make_node("n1").ready().obj()
    _at(ready.metadata.creation_timestamp, 90.0)
    _at(ready.status.conditions[0].last_transition_time, 104.0)
    tl.node_added(node)
    tl.node_updated(node, ready)
    assert [(s.start, s.end) for s in tl.nodes["n1"].lives] == [(100.0, None)]
    assert [(s.start, s.end) for s in tl.nodes["n1"].not_ready] == [(100.0, 104.0)]
    low_pod = make_pod("low").namespace("ns").uid("uid-low").node("n1")
    victim = low_pod.condition("DisruptionTarget", "True", PREEMPTION_BY_SCHEDULER).obj()
    _at(victim.metadata.creation_timestamp, 101.0)
    _at(victim.status.conditions[0].last_transition_time, 130.0)
    tl.pod_added(victim)
    low = tl.pods["uid-low"]
    assert (low.seen, low.existed, low.preempted) == (101.0, False, 130.0)
    old = pod("old")
    _at(old.metadata.creation_timestamp, 50.0)
    tl.pod_added(old)
    assert (tl.pods["uid-old"].seen, tl.pods["uid-old"].existed) == (100.0, True)
    assert tl.pods["uid-old"].steps()[0] == (100.0, "there at the start")
    done_pod = make_pod("done").namespace("ns").uid("uid-done").node("n1").phase("Succeeded")
    done = done_pod.condition("PodScheduled", "True").obj()
    _at(done.metadata.creation_timestamp, 101.0)
    _at(done.status.conditions[0].last_transition_time, 102.0)
    terminated = done.status.container_statuses.add(name="c")
    _at(terminated.state.terminated.finished_at, 140.0)
    tl.pod_added(done)
    assert tl.pods["uid-done"].finished == 140.0
    message = "pod triggered scale-up: [{pool 1->2 (max: 4)}]"
    up = event(TRIGGERED_SCALE_UP, message, involved="a")
    up.metadata.uid, up.count = "e1", 1
    _at(up.last_timestamp, 120.0)
    tl.event_seen(up)
    tl.event_seen(up)  # the same occurrence again (another field changed): not a new one
    assert [(m.kind, m.at) for m in tl.markers] == [(MarkerKind.SCALE_UP, 120.0)]


def test_a_pods_group_is_its_schedulinggroup_or_its_1_35_workload_reference() -> None:
    member = make_pod("m").namespace("ns").pod_group("trainer").obj()
    old = make_pod("o").namespace("ns").workload_ref("job", "workers").obj()
    assert pod_group_of(member) == "ns/trainer"
    assert pod_group_of(old) == "ns/job/workers"
    assert pod_group_of(make_pod("plain").namespace("ns").obj()) == ""
