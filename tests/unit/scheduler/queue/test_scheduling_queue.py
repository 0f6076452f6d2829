"""PriorityQueue: ordering, backoff, the unschedulable pool, queueing hints, in-flight events,
gating, the nominator hooks (upstream scheduling_queue_test.go, eventhandlers_test.go)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
    QueueingHintFn,
)
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.status import SUCCESS, Status, unschedulable
from kemu.scheduling.types import PodInfo, pod_priority
from kemu.testing.builders import make_node, make_pod
from scheduler.queue import (
    PriorityQueue,
    QueueingHintMapPerProfile,
    QueueMetrics,
    QueueOptions,
    build_queueing_hint_map,
)
from scheduler.queue.pod_events import (
    ASSIGNED_POD_ADD,
    has_nominated_node_name_changed,
    le_priority_pre_check,
)

pytestmark = pytest.mark.anyio

PROFILE = "default-scheduler"
FIT = "NodeResourcesFit"
GATES = "SchedulingGates"
NODE_ADD_OR_ALLOCATABLE = ClusterEvent(
    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
)
NODE_LABEL_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabel")


def pod(name: str, priority: int = 0) -> types_pb2.Pod:
    return make_pod(name).uid(f"uid-{name}").priority(priority).scheduler_name(PROFILE).obj()


def skip(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.SKIP


def queue_(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def boom(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint bug")


def hints(*regs: tuple[ClusterEvent, str, QueueingHintFn | None]) -> QueueingHintMapPerProfile:
    ext: dict[str, list[ClusterEventWithHint]] = {}
    for event, plugin, fn in regs:
        ext.setdefault(plugin, []).append(ClusterEventWithHint(event, fn))
    return {PROFILE: build_queueing_hint_map(ext)}


def new_queue(clock: FakeClock, **kwargs: Any) -> PriorityQueue:
    """A queue; QueueOptions' fields among `kwargs` go into its options (popFromBackoffQ off
    unless asked)."""
    names = {f.name for f in dataclasses.fields(QueueOptions)}
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in names}
    options.setdefault("pop_from_backoff_q", False)
    return PriorityQueue(clock=clock, options=QueueOptions(**options), **kwargs)


async def pop_now(q: PriorityQueue) -> QueuedPodInfo:
    with anyio.fail_after(1):
        qpi = await q.pop()
    assert qpi is not None
    return qpi


async def fail(
    q: PriorityQueue,
    p: types_pb2.Pod,
    *plugins: str,
    pending: Iterable[str] = (),
) -> QueuedPodInfo:
    """Adds `p`, pops it and hands it back rejected by `plugins` (none: an error)."""
    q.add(p)
    qpi = await pop_now(q)
    assert qpi.pod.metadata.name == p.metadata.name
    qpi.unschedulable_plugins.update(plugins)
    qpi.pending_plugins.update(pending)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    return qpi


def names(pods: Iterable[types_pb2.Pod]) -> set[str]:
    return {p.metadata.name for p in pods}


def where(q: PriorityQueue, name: str) -> str:
    for queue, pods in (
        ("active", q.pods_in_active_q()),
        ("backoff", q.pods_in_backoff_q()),
        ("unschedulable", q.unschedulable_pods()),
        ("in-flight", q.in_flight_pods()),
    ):
        if name in names(pods):
            return queue
    return "nowhere"


# ---------------------------------------------------------------- ordering, pop, done


async def test_active_q_pops_higher_priority_first_then_earlier_timestamp() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    for name, prio in [("low", 0), ("mid-a", 5), ("high", 10), ("mid-b", 5)]:
        q.add(pod(name, prio))
        clock.advance(0.1)
    popped = [(await pop_now(q)).pod.metadata.name for _ in range(4)]
    assert popped == ["high", "mid-a", "mid-b", "low"]


async def test_custom_less_orders_active_q() -> None:
    clock = FakeClock()
    q = new_queue(clock, less=lambda a, b: a.pod.metadata.name > b.pod.metadata.name)
    for name in ["a", "c", "b"]:
        q.add(pod(name))
    assert [(await pop_now(q)).pod.metadata.name for _ in range(3)] == ["c", "b", "a"]


async def test_pop_blocks_until_a_pod_is_added() -> None:
    q = new_queue(FakeClock())
    got: list[QueuedPodInfo | None] = []

    async def popper() -> None:
        got.append(await q.pop())

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(popper)
            await anyio.wait_all_tasks_blocked()
            assert got == []
            q.add(pod("p"))
    assert got[0] is not None and got[0].pod.metadata.name == "p"


async def test_close_wakes_pop_with_none() -> None:
    q = new_queue(FakeClock())
    got: list[QueuedPodInfo | None] = []

    async def popper() -> None:
        got.append(await q.pop())

    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            tg.start_soon(popper)
            await anyio.wait_all_tasks_blocked()
            q.close()
    assert got == [None]


async def test_pop_counts_attempts_and_every_pop_is_paired_with_done() -> None:
    clock = FakeClock()
    q = new_queue(clock, pod_initial_backoff=0, pod_max_backoff=0)
    q.add(pod("p"))
    qpi = await pop_now(q)
    assert qpi.attempts == 1 and q.scheduling_cycle() == 1
    assert qpi.initial_attempt_timestamp == clock.monotonic()
    first = qpi.initial_attempt_timestamp
    assert names(q.in_flight_pods()) == {"p"}
    q.done(qpi.pod.metadata.uid)
    q.done(qpi.pod.metadata.uid)  # idempotent
    assert q.len_in_flight() == 0

    clock.advance(5)
    q.add(pod("p"))  # e.g. re-added; a fresh QueuedPodInfo
    qpi = await pop_now(q)
    qpi.unschedulable_plugins.add(FIT)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert q.len_in_flight() == 0  # add_unschedulable_if_not_present calls done
    q.activate([pod("p")])
    again = await pop_now(q)
    assert again is qpi and again.attempts == 2
    assert again.initial_attempt_timestamp is not None and again.initial_attempt_timestamp > first
    assert again.unschedulable_plugins == set()  # cleared for the new attempt


# ---------------------------------------------------------------- backoff


@pytest.mark.parametrize(
    ("attempts", "want"), [(0, 0), (1, 1), (2, 2), (3, 4), (4, 8), (5, 10), (6, 10), (60, 10)]
)
def test_backoff_doubles_from_one_second_to_ten(attempts: int, want: float) -> None:
    q = new_queue(FakeClock())
    qpi = QueuedPodInfo(PodInfo(pod("p")), 0.0, attempts=attempts)
    assert q.backoff_duration(qpi) == want


async def test_failed_pod_waits_out_1_2_4_8_10_10_seconds_in_backoff() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("p"))
    for want in [1, 2, 4, 8, 10, 10]:
        qpi = await pop_now(q)
        q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())  # an error: backoffQ
        assert where(q, "p") == "backoff"
        clock.advance(want - 0.01)
        q.flush_backoff_q_completed()
        assert where(q, "p") == "backoff", want
        clock.advance(0.01)
        q.flush_backoff_q_completed()
        assert where(q, "p") == "active", want


async def test_run_flushes_backoff_every_second_and_stops_on_close() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    with anyio.fail_after(2):
        async with anyio.create_task_group() as tg:
            await tg.start(q.run)
            await fail(q, pod("p"))
            assert where(q, "p") == "backoff"
            clock.advance(1)
            await anyio.wait_all_tasks_blocked()
            assert where(q, "p") == "active"
            q.close()


async def test_pop_from_backoff_q_when_active_q_is_empty() -> None:
    clock = FakeClock()
    q = new_queue(clock, pop_from_backoff_q=True, queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("p"), FIT)
    q.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert where(q, "p") == "backoff"
    qpi = await pop_now(q)  # backoff not over, but nothing else to do
    assert qpi.pod.metadata.name == "p" and qpi.attempts == 2


async def test_pop_from_backoff_q_leaves_pods_that_failed_with_an_error() -> None:
    """Upstream's podErrorBackoffQ: an error is retried after its backoff, not at once (a pod
    failing with "no nodes available" would otherwise be retried in a busy loop)."""
    clock = FakeClock()
    q = new_queue(clock, pop_from_backoff_q=True)
    await fail(q, pod("p"))
    assert where(q, "p") == "backoff"
    with anyio.move_on_after(0.1) as scope:
        await q.pop()
    assert scope.cancelled_caught, "a pod that failed with an error was popped during its backoff"
    assert where(q, "p") == "backoff"
    clock.advance(1)
    q.flush_backoff_q_completed()
    assert where(q, "p") == "active"
    assert (await pop_now(q)).pod.metadata.name == "p"


# ---------------------------------------------------------------- unschedulable pool


async def test_unschedulable_pods_are_flushed_after_five_minutes() -> None:
    clock = FakeClock()
    q = new_queue(clock, queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("p"), FIT)
    assert where(q, "p") == "unschedulable"
    clock.advance(299)
    q.flush_unschedulable_pods_leftover()
    assert where(q, "p") == "unschedulable"
    clock.advance(2)
    q.flush_unschedulable_pods_leftover()
    assert where(q, "p") == "active"


async def test_run_flushes_the_pool_every_thirty_seconds() -> None:
    clock = FakeClock()
    q = new_queue(clock, queueing_hint_map=hints((NODE_ADD, FIT, None)))
    # A guard against a hang only: each wait_all_tasks_blocked polls in 0.1 s sleeps (anyio's
    # asyncio backend) while the queue's task is runnable, so eleven take over a second of wall
    # time and more on a loaded machine (2 s failed once in CI).
    with anyio.fail_after(30):
        async with anyio.create_task_group() as tg:
            await tg.start(q.run)
            await fail(q, pod("p"), FIT)
            for _ in range(10):  # 300 s: not yet more than 5 minutes
                clock.advance(30)
                await anyio.wait_all_tasks_blocked()
            assert where(q, "p") == "unschedulable"
            clock.advance(30)
            await anyio.wait_all_tasks_blocked()
            assert where(q, "p") == "active"
            q.close()


async def test_failure_with_an_error_goes_to_backoff() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("p"))
    assert where(q, "p") == "backoff"


# ---------------------------------------------------------------- hints


@pytest.mark.parametrize(
    ("registered", "rejected_by", "event", "want"),
    [
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, None)], FIT, NODE_ADD, "backoff"),
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, None)], FIT, NODE_LABEL_UPDATE, "unschedulable"),
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, None)], FIT, ASSIGNED_POD_ADD, "unschedulable"),
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, skip)], FIT, NODE_ADD, "unschedulable"),
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, queue_)], FIT, NODE_ADD, "backoff"),
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, boom)], FIT, NODE_ADD, "backoff"),
        # Only the hints of the plugins that rejected the pod count.
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, None)], "NodeAffinity", NODE_ADD, "unschedulable"),
        (
            [(NODE_ADD_OR_ALLOCATABLE, FIT, skip), (NODE_ADD, "NodeAffinity", queue_)],
            FIT,
            NODE_ADD,
            "unschedulable",
        ),
        # Wildcard events bypass the hints.
        ([(NODE_ADD_OR_ALLOCATABLE, FIT, skip)], FIT, UNSCHEDULABLE_TIMEOUT, "backoff"),
        (
            [(ClusterEvent(EventResource.WILDCARD, ActionType.ALL), FIT, None)],
            FIT,
            NODE_ADD,
            "backoff",
        ),
    ],
    ids=[
        "fit-node-add",
        "fit-unrelated-node-update",
        "fit-unrelated-pod-add",
        "hint-skip",
        "hint-queue",
        "hint-raises",
        "other-plugin-rejected",
        "other-plugin-hint-ignored",
        "wildcard-bypasses-hints",
        "registered-everything",
    ],
)
async def test_pods_move_only_on_events_their_rejecting_plugins_want(
    registered: list[tuple[ClusterEvent, str, QueueingHintFn | None]],
    rejected_by: str,
    event: ClusterEvent,
    want: str,
) -> None:
    clock = FakeClock()
    q = new_queue(clock, queueing_hint_map=hints(*registered))
    await fail(q, pod("p"), rejected_by)
    assert where(q, "p") == "unschedulable"
    q.move_all_to_active_or_backoff_queue(event, None, make_node("n").obj())
    assert where(q, "p") == want


async def test_moved_pod_goes_to_active_q_once_its_backoff_is_over() -> None:
    clock = FakeClock()
    q = new_queue(clock, queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("p"), FIT)
    clock.advance(1)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n").obj())
    assert where(q, "p") == "active"


async def test_hint_sees_the_pod_and_the_event_objects() -> None:
    seen: list[tuple[str, Any, Any]] = []

    def record(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
        seen.append((p.metadata.name, old, new))
        return QueueingHint.SKIP

    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, record)))
    await fail(q, pod("p"), FIT)
    node = make_node("n").obj()
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)
    assert seen == [("p", None, node)]


async def test_queue_from_a_pending_plugin_skips_backoff() -> None:
    clock = FakeClock()
    q = new_queue(clock, queueing_hint_map=hints((NODE_ADD, "Waiter", None)))
    await fail(q, pod("p"), pending=["Waiter"])
    assert where(q, "p") == "unschedulable"
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None)
    assert where(q, "p") == "active"


async def test_pre_check_limits_the_pods_considered() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("low", 1), FIT)
    await fail(q, pod("high", 9), FIT)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None, le_priority_pre_check(5))
    assert where(q, "low") == "backoff" and where(q, "high") == "unschedulable"


async def test_assigned_pod_added_moves_only_pods_whose_affinity_it_matches() -> None:
    q = new_queue(
        FakeClock(), queueing_hint_map=hints((ASSIGNED_POD_ADD, "InterPodAffinity", None))
    )
    wants_db = (
        make_pod("wants-db").uid("u1").scheduler_name(PROFILE).affinity({"app": "db"}, "zone").obj()
    )
    wants_web = (
        make_pod("wants-web")
        .uid("u2")
        .scheduler_name(PROFILE)
        .affinity({"app": "web"}, "zone")
        .obj()
    )
    await fail(q, wants_db, "InterPodAffinity")
    await fail(q, wants_web, "InterPodAffinity")
    q.assigned_pod_added(make_pod("db").label("app", "db").node("n1").obj())
    assert where(q, "wants-db") == "backoff" and where(q, "wants-web") == "unschedulable"


async def test_assigned_pod_added_moves_spread_rejected_pods_of_its_namespace() -> None:
    """upstream getUnschedulablePodsWithCrossTopologyTerm: PodTopologySpread's rejections in
    the added pod's namespace, and pods whose required affinity the pod matches."""
    q = new_queue(
        FakeClock(),
        queueing_hint_map=hints(
            (ASSIGNED_POD_ADD, "PodTopologySpread", None),
            (ASSIGNED_POD_ADD, "InterPodAffinity", None),
        ),
    )
    here = make_pod("spread-here").uid("u1").scheduler_name(PROFILE).obj()
    there = make_pod("spread-there").uid("u2").namespace("other").scheduler_name(PROFILE).obj()
    both = (
        make_pod("both")
        .uid("u3")
        .namespace("other")
        .scheduler_name(PROFILE)
        .affinity({"app": "db"}, "zone")
        .obj()
    )
    await fail(q, here, "PodTopologySpread")
    await fail(q, there, "PodTopologySpread")
    await fail(q, both, "PodTopologySpread", "InterPodAffinity")
    q.assigned_pod_added(make_pod("db").label("app", "db").node("n1").obj())
    assert where(q, "spread-here") == "backoff"
    assert where(q, "spread-there") == "unschedulable"
    assert where(q, "both") == "unschedulable"  # its term's scope is its own namespace
    q.assigned_pod_added(make_pod("db2").namespace("other").label("app", "db").node("n1").obj())
    assert where(q, "spread-there") == "backoff" and where(q, "both") == "backoff"


async def test_assigned_pod_scale_down_moves_pods_rejected_for_resources() -> None:
    scale_down = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    q = new_queue(FakeClock(), queueing_hint_map=hints((scale_down, FIT, None)))
    await fail(q, pod("p"), FIT)
    old = make_pod("big").req(cpu="2").node("n1").obj()
    new = make_pod("big").req(cpu="1").node("n1").obj()
    q.assigned_pod_updated(old, new, ActionType.UPDATE_POD_LABEL)  # not a scale-down
    assert where(q, "p") == "unschedulable"
    q.assigned_pod_updated(old, new, ActionType.UPDATE_POD_SCALE_DOWN)
    assert where(q, "p") == "backoff"


async def test_update_of_an_unschedulable_pod_is_an_event_for_its_hints() -> None:
    label_update = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
    q = new_queue(FakeClock(), queueing_hint_map=hints((label_update, "NodeAffinity", None)))
    await fail(q, pod("p"), "NodeAffinity")
    old = q.unschedulable_pods()[0]
    status_only = pod("p")
    status_only.status.nominated_node_name = "n1"
    q.update(old, status_only)
    assert where(q, "p") == "unschedulable"
    relabelled = pod("p")
    relabelled.metadata.labels["x"] = "y"
    q.update(status_only, relabelled)
    assert where(q, "p") == "backoff"
    qpi = q.get_pod("default", "p")
    assert qpi is not None and qpi.pod is relabelled


async def test_update_in_active_q_reorders_the_pod() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(pod("a", 1))
    q.add(pod("b", 2))
    q.update(pod("a", 1), pod("a", 3))
    assert (await pop_now(q)).pod.metadata.name == "a"


async def test_delete_removes_the_pod_from_every_queue() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("pool"), FIT)
    await fail(q, pod("backoff"))
    q.add(pod("active"))
    for name in ["pool", "backoff", "active"]:
        q.delete(pod(name))
    assert len(q) == 0


async def test_activate_moves_pods_to_active_q() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("pool"), FIT)
    await fail(q, pod("backoff"))
    q.activate([pod("pool"), pod("backoff"), pod("unknown")])
    assert names(q.pods_in_active_q()) == {"pool", "backoff"}


# ---------------------------------------------------------------- in-flight events


async def test_event_during_the_cycle_sends_the_pod_straight_back_to_backoff() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    q.add(pod("p"))
    qpi = await pop_now(q)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n").obj())  # mid-cycle
    qpi.unschedulable_plugins.add(FIT)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert where(q, "p") == "backoff"


async def test_event_before_the_pop_or_irrelevant_does_not_count() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, skip)))
    q.add(pod("p"))
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None)  # before the pop
    qpi = await pop_now(q)
    q.move_all_to_active_or_backoff_queue(NODE_LABEL_UPDATE, None, None)  # nobody registered
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None)  # the hint says Skip
    qpi.unschedulable_plugins.add(FIT)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert where(q, "p") == "unschedulable"


async def test_event_seen_by_a_pod_still_in_flight_after_another_is_done() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    q.add(pod("a", 2))
    q.add(pod("b", 1))
    a, b = await pop_now(q), await pop_now(q)
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None)
    q.done(a.pod.metadata.uid)  # a was bound
    b.unschedulable_plugins.add(FIT)
    q.add_unschedulable_if_not_present(b, q.scheduling_cycle())
    assert where(q, "b") == "backoff"


async def test_own_update_during_the_cycle_is_replayed_with_the_latest_object() -> None:
    label_update = ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_LABEL)
    q = new_queue(FakeClock(), queueing_hint_map=hints((label_update, "NodeAffinity", None)))
    q.add(pod("p"))
    qpi = await pop_now(q)
    relabelled = pod("p")
    relabelled.metadata.labels["x"] = "y"
    q.update(qpi.pod, relabelled)
    assert where(q, "p") == "in-flight"  # not re-added while in flight
    qpi.unschedulable_plugins.add("NodeAffinity")
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert where(q, "p") == "backoff"
    assert qpi.pod is relabelled


async def test_pod_deleted_in_flight_is_not_requeued() -> None:
    q = new_queue(FakeClock())
    q.add(pod("p"))
    qpi = await pop_now(q)
    q.delete(qpi.pod)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    assert where(q, "p") == "nowhere" and len(q) == 0


# ---------------------------------------------------------------- gating (PreEnqueue)


def gates_pre_enqueue(p: types_pb2.Pod) -> Status:
    if p.spec.scheduling_gates:
        return unschedulable("waiting for scheduling gates", plugin=GATES)
    return SUCCESS


def gates_eliminated(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    same = isinstance(new, types_pb2.Pod) and new.metadata.uid == p.metadata.uid
    return QueueingHint.QUEUE if same else QueueingHint.SKIP


GATES_HINTS = (
    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
    GATES,
    gates_eliminated,
)


async def test_a_bound_pod_matching_gated_pods_affinity_leaves_them_unread_and_gated() -> None:
    """upstream's SchedulingGatedPodsWithPodAffinityImpactForThroughput: a pod bound beside
    gated pods whose affinity it matches moves the ungated pods it may help, and does not read
    the gated ones' terms (their gate did not register for AssignedPodAdd): a bind costs the
    pool's ungated pods, not the 10,000 gated ones."""
    q = new_queue(
        FakeClock(),
        pre_enqueue=gates_pre_enqueue,
        queueing_hint_map=hints(GATES_HINTS, (ASSIGNED_POD_ADD, "InterPodAffinity", None)),
    )
    gated = [
        make_pod(f"g{i}").uid(f"ug{i}").scheduler_name(PROFILE).gate("example.com/g")
        .affinity({"app": "db"}, "zone").obj()
        for i in range(3)
    ]  # fmt: skip
    for p in gated:
        q.add(p)
    waiting = make_pod("w").uid("uw").scheduler_name(PROFILE).affinity({"app": "db"}, "zone").obj()
    await fail(q, waiting, "InterPodAffinity")
    db = make_pod("db").label("app", "db").node("n1").obj()
    # The pods whose terms are read for the bind: the gated ones are not among them.
    candidates = q._pods_with_cross_topology_term(db, ASSIGNED_POD_ADD)
    assert [qpi.pod.metadata.name for qpi in candidates] == ["w"]
    q.assigned_pod_added(db)
    assert where(q, "w") == "backoff" and q.len_gated() == 3


async def test_gated_pod_waits_in_the_pool_until_an_update_removes_its_gates() -> None:
    q = new_queue(
        FakeClock(),
        pre_enqueue=gates_pre_enqueue,
        queueing_hint_map=hints(GATES_HINTS, (NODE_ADD, FIT, None)),
    )
    gated = make_pod("p").uid("uid-p").scheduler_name(PROFILE).gate("example.com/g").obj()
    q.add(gated)
    assert q.len_gated() == 1 and q.len_active() == 0 and q.len_unschedulable() == 0
    qpi = q.get_pod("default", "p")
    assert qpi is not None and qpi.gated and qpi.gating_plugin == GATES

    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, None)  # not the gate's event
    relabelled = (
        make_pod("p")
        .uid("uid-p")
        .scheduler_name(PROFILE)
        .gate("example.com/g")
        .label("a", "b")
        .obj()
    )
    q.update(gated, relabelled)
    assert q.len_gated() == 1

    ungated = make_pod("p").uid("uid-p").scheduler_name(PROFILE).label("a", "b").obj()
    q.update(relabelled, ungated)
    assert q.len_gated() == 0 and where(q, "p") == "active"
    assert (qpi.gated, qpi.gating_plugin) == (False, "")
    popped = await pop_now(q)
    assert popped.attempts == 1


async def test_pre_enqueue_per_profile() -> None:
    refuse = lambda p: unschedulable("no", plugin="Refuse")  # noqa: E731
    q = new_queue(FakeClock(), pre_enqueue={PROFILE: refuse})
    q.add(pod("mine"))
    q.add(make_pod("other").uid("uid-other").scheduler_name("other-scheduler").obj())
    assert where(q, "mine") == "unschedulable" and where(q, "other") == "active"


async def test_gated_pod_is_not_flushed_into_active_q() -> None:
    clock = FakeClock()
    q = new_queue(clock, pre_enqueue=gates_pre_enqueue, queueing_hint_map=hints(GATES_HINTS))
    q.add(make_pod("p").uid("uid-p").scheduler_name(PROFILE).gate("g").obj())
    clock.advance(301)
    q.flush_unschedulable_pods_leftover()
    assert q.len_gated() == 1 and q.len_active() == 0


# ---------------------------------------------------------------- nominator hooks


async def test_queue_feeds_the_nominator_from_the_api() -> None:
    q = new_queue(FakeClock(), pre_enqueue=gates_pre_enqueue)
    nominated = make_pod("a").uid("uid-a").nominated("n1").obj()
    gated = make_pod("g").uid("uid-g").nominated("n1").gate("x").obj()
    q.add(nominated)
    q.add(gated)
    assert names(pi.pod for pi in q.nominated_pods_for_node("n1")) == {"a", "g"}
    moved = make_pod("a").uid("uid-a").nominated("n2").obj()
    q.update(nominated, moved)
    assert names(pi.pod for pi in q.nominated_pods_for_node("n2")) == {"a"}
    q.delete(moved)
    assert q.nominated_pods_for_node("n2") == []


async def test_in_memory_nomination_survives_an_update_without_nnn() -> None:
    q = new_queue(FakeClock())
    p = pod("p")
    q.add(p)
    qpi = await pop_now(q)
    q.add_nominated_pod(qpi.pod_info, "n1")  # PostFilter, before the PATCH
    qpi.unschedulable_plugins.add(FIT)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())
    other = pod("p")
    other.metadata.labels["x"] = "y"
    q.update(p, other)
    assert names(pi.pod for pi in q.nominated_pods_for_node("n1")) == {"p"}


def _le_move(q: PriorityQueue, old: types_pb2.Pod) -> None:
    """What the event handler does when a nomination is withdrawn (upstream eventhandlers.go)."""
    q.move_all_to_active_or_backoff_queue(
        ASSIGNED_POD_DELETE, old, None, le_priority_pre_check(pod_priority(old))
    )


def _handler_update(q: PriorityQueue, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
    q.update(old, new)
    if has_nominated_node_name_changed(old, new):
        _le_move(q, old)


def _handler_delete(q: PriorityQueue, p: types_pb2.Pod) -> None:
    q.delete(p)
    if p.status.nominated_node_name:
        _le_move(q, p)


def _with_nnn(p: types_pb2.Pod, nnn: str) -> types_pb2.Pod:
    out = types_pb2.Pod()
    out.CopyFrom(p)
    out.status.nominated_node_name = nnn
    return out


HIGH = make_pod("hpp").uid("hpp").priority(100).scheduler_name(PROFILE).obj()
MID_NOMINATED = (
    make_pod("mpp").uid("mpp").priority(50).scheduler_name(PROFILE).nominated("node1").obj()
)
MID = make_pod("smpp").uid("smpp").priority(50).scheduler_name(PROFILE).obj()
LOW = make_pod("lpp").uid("lpp").priority(0).scheduler_name(PROFILE).obj()


@pytest.mark.parametrize(
    ("action", "want"),
    [
        (
            lambda q: _handler_update(q, MID_NOMINATED, _with_nnn(MID_NOMINATED, "node2")),
            {"lpp", "smpp", "mpp"},
        ),
        (
            lambda q: _handler_update(q, MID_NOMINATED, _with_nnn(MID_NOMINATED, "")),
            {"lpp", "smpp", "mpp"},
        ),
        (lambda q: _handler_delete(q, MID_NOMINATED), {"lpp", "smpp"}),
        (lambda q: _handler_update(q, HIGH, _with_nnn(HIGH, "node2")), set()),
    ],
    ids=["nnn-changed", "nnn-removed", "nominated-pod-deleted", "nnn-added-to-high"],
)
async def test_move_to_active_on_nominated_node_update(action: Any, want: set[str]) -> None:
    """TestEventHandlers_MoveToActiveOnNominatedNodeUpdate (pkg/scheduler/backend/queue/scheduling_queue.go)."""

    def on_delete(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
        assert isinstance(old, types_pb2.Pod)
        return QueueingHint.QUEUE if old.status.nominated_node_name else QueueingHint.SKIP

    q = new_queue(
        FakeClock(),
        queueing_hint_map=hints((ASSIGNED_POD_DELETE, "fooPlugin1", on_delete)),
        pod_initial_backoff=0,
        pod_max_backoff=0,
    )
    for p in [HIGH, MID_NOMINATED, MID, LOW]:
        await fail(q, p, "fooPlugin1")
    assert q.len_active() == 0 and q.len_unschedulable() == 4
    action(q)
    assert names(q.pods_in_active_q()) | names(q.pods_in_backoff_q()) == want


# ---------------------------------------------------------------- metrics and debugging


async def test_pending_pods_gauge_and_incoming_counter() -> None:
    registry = CollectorRegistry()
    q = new_queue(
        FakeClock(),
        metrics=QueueMetrics(registry),
        pre_enqueue=gates_pre_enqueue,
        queueing_hint_map=hints((NODE_ADD, FIT, None)),
    )
    await fail(q, pod("pool"), FIT)
    await fail(q, pod("backoff"))
    q.add(pod("active"))
    q.add(make_pod("gated").uid("uid-gated").scheduler_name(PROFILE).gate("g").obj())

    def pending(queue: str) -> float | None:
        return registry.get_sample_value("scheduler_pending_pods", {"queue": queue})

    assert [pending(x) for x in ["active", "backoff", "unschedulable", "gated"]] == [1, 1, 1, 1]
    incoming = registry.get_sample_value(
        "scheduler_queue_incoming_pods_total", {"queue": "active", "event": "UnschedulablePodAdd"}
    )
    assert incoming == 3  # pool, backoff and active came in through activeQ
    failures = registry.get_sample_value(
        "scheduler_queue_incoming_pods_total",
        {"queue": "unschedulable", "event": "ScheduleAttemptFailure"},
    )
    assert failures == 1


async def test_pending_pods_lists_every_waiting_pod() -> None:
    q = new_queue(FakeClock(), queueing_hint_map=hints((NODE_ADD, FIT, None)))
    await fail(q, pod("pool"), FIT)
    await fail(q, pod("backoff"))
    q.add(pod("active"))
    pods, summary = q.pending_pods()
    assert names(pods) == {"pool", "backoff", "active"} and len(q) == 3
    assert summary == "activeQ:1; backoffQ:1; unschedulablePods:1"


async def test_unschedulable_pods_gauge_counts_queued_pods_per_rejecting_plugin() -> None:
    """scheduler_unschedulable_pods{plugin, profile}: up when a rejected pod comes back or
    PreEnqueue gates one (once per pod and plugin), down when it is popped or deleted."""
    registry = CollectorRegistry()
    clock = FakeClock()
    q = new_queue(
        clock,
        metrics=QueueMetrics(registry),
        pre_enqueue=gates_pre_enqueue,
        queueing_hint_map=hints((NODE_ADD, FIT, None)),
    )

    def gauge(plugin: str) -> float:
        value = registry.get_sample_value(
            "scheduler_unschedulable_pods", {"plugin": plugin, "profile": PROFILE}
        )
        return value or 0.0

    await fail(q, pod("a"), FIT)
    await fail(q, pod("b"), FIT, "Other")
    assert (gauge(FIT), gauge("Other")) == (2, 1)
    gated = make_pod("gated").uid("uid-gated").scheduler_name(PROFILE).gate("g").obj()
    q.add(gated)
    assert gauge(GATES) == 1
    q.update(gated, gated)  # gated again by the same plugin: counted once
    assert gauge(GATES) == 1
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n").obj())
    clock.advance(11)
    q.flush_backoff_q_completed()
    q.delete(pod("b"))  # deleted while queued: its plugins no longer count it
    assert (gauge(FIT), gauge("Other")) == (1, 0)
    qpi = await pop_now(q)  # a is retried: no longer unschedulable
    assert qpi.pod.metadata.name == "a"
    assert gauge(FIT) == 0
    q.delete(gated)
    assert gauge(GATES) == 0


async def test_hints_matched_once_per_event_still_run_per_pod_and_its_rejectors() -> None:
    """The queue keeps which registrations cover an event after its first occurrence; each
    pod still gets the hints of its own rejecting plugins, every time, in the map's order."""
    calls: list[tuple[str, str]] = []

    def hint_of(plugin: str, answer: QueueingHint) -> QueueingHintFn:
        def fn(p: types_pb2.Pod, old: Any, new: Any) -> QueueingHint:
            calls.append((plugin, p.metadata.name))
            return answer

        return fn

    q = new_queue(
        FakeClock(),
        queueing_hint_map=hints(
            (NODE_ADD_OR_ALLOCATABLE, "A", hint_of("A", QueueingHint.SKIP)),
            (NODE_ADD, "B", hint_of("B", QueueingHint.QUEUE)),
            (NODE_LABEL_UPDATE, "C", hint_of("C", QueueingHint.QUEUE)),
        ),
    )
    await fail(q, pod("ab"), "A", "B")
    await fail(q, pod("a"), "A")
    await fail(q, pod("c"), "C")
    node = make_node("n").obj()
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)
    assert sorted(calls) == [("A", "a"), ("A", "ab"), ("B", "ab")]
    assert (where(q, "ab"), where(q, "a"), where(q, "c")) == (
        "backoff",
        "unschedulable",
        "unschedulable",
    )
    calls.clear()
    q.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)  # the same event again
    assert calls == [("A", "a")]
    q.move_all_to_active_or_backoff_queue(NODE_LABEL_UPDATE, node, node)
    assert calls == [("A", "a"), ("C", "c")]
    assert where(q, "c") == "backoff"
