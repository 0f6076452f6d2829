"""1.37's pod-group entities in the scheduling queue (scheduler/queue/pod_group_entity.py;
upstream pkg/scheduler/backend/queue/scheduling_queue.go at commit 9d2a8fb7c431,
backoff_queue.go calculateBackoffDuration): a group queued, popped, backed off and requeued
as one; members aside while their group is in flight or their PodGroup is not observed; the
queue's pod and entity metrics."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import SUCCESS, Code, Status, as_error
from kemu.testing.builders import make_gang_pod_group, make_pod
from scheduler.metrics import SchedulerMetrics
from scheduler.queue import PriorityQueue, QueueOptions
from scheduler.queue.pod_group_entity import (
    PodGroupQueueing,
    QueuedPodGroupInfo,
    entity_backoff,
)

pytestmark = pytest.mark.anyio

PROFILE = "default-scheduler"
FIT = "NodeResourcesFit"
GROUP = PodGroupKey("default", "g")
REJECTED = Status(Code.UNSCHEDULABLE, ("pod group is unschedulable",))


def group_of(pod: types_pb2.Pod) -> PodGroupKey | None:
    if not pod.spec.HasField("scheduling_group"):
        return None
    return PodGroupKey(pod.metadata.namespace, pod.spec.scheduling_group.pod_group_name)


def member(name: str, group: str = "g", priority: int = 0) -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .priority(priority)
        .scheduler_name(PROFILE)
        .pod_group(group)
        .obj()
    )


def lone(name: str) -> types_pb2.Pod:
    return make_pod(name).uid(f"uid-{name}").scheduler_name(PROFILE).obj()


def new_queue(
    clock: FakeClock,
    metrics: Any = None,
    *,
    pop_backoff: bool = False,
    root_of: Callable[[PodGroupKey], PodGroupKey | None] = lambda key: key,
) -> PriorityQueue:
    q = PriorityQueue(
        clock=clock,
        options=QueueOptions(pop_from_backoff_q=pop_backoff),
        metrics=metrics,
        pod_groups=PodGroupQueueing(group_of, root_of),
    )
    q.add_pod_group(make_gang_pod_group("g", 2))
    return q


async def pop_now(q: PriorityQueue) -> QueuedPodInfo:
    with anyio.fail_after(1):
        qpi = await q.pop()
    assert qpi is not None
    return qpi


def names(pods: list[types_pb2.Pod]) -> list[str]:
    return sorted(p.metadata.name for p in pods)


def fail_member(q: PriorityQueue, qpi: QueuedPodInfo, *plugins: str) -> None:
    """A member's failure handled as the cycle does (handle_scheduling_failure)."""
    qpi.unschedulable_plugins.update(plugins)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle())


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    value = registry.get_sample_value(name, labels)
    return 0.0 if value is None else value


async def test_s_pg_13_a_group_is_queued_popped_and_backed_off_as_one_entity() -> None:
    """S-PG-13: the members of an observed PodGroup are one entity: counted as pods in
    scheduler_pending_pods and once in scheduler_queued_entities; one Pop returns the group
    with every member in flight; a member added meanwhile waits aside ("pending"); a rejected
    attempt sends the group, the failed members and the new one, to backoffQ for 1 s, then 2 s;
    each member's attempts and the group's own are counted."""
    clock = FakeClock()
    registry = CollectorRegistry()
    q = new_queue(clock, SchedulerMetrics(registry, entities=True))
    for name in ("a", "b"):
        q.add(member(name))
    q.add(lone("p"))
    assert sample(registry, "scheduler_pending_pods", queue="active") == 3
    assert sample(registry, "scheduler_queued_entities", queue="active", type="podgroup") == 1
    assert sample(registry, "scheduler_queued_entities", queue="active", type="pod") == 1
    assert (
        sample(
            registry,
            "scheduler_queue_incoming_entities_total",
            queue="active",
            event="UnschedulablePodAdd",
            type="podgroup",
        )
        == 2
    )  # (created by a's add, requeued with b)

    group = await pop_now(q)  # (created first: the older entity)
    assert isinstance(group, QueuedPodGroupInfo)
    assert names([m.pod for m in group]) == ["a", "b"] == names(q.in_flight_pods())
    assert group.attempts == 1 and all(m.attempts == 1 for m in group)

    q.add(member("c"))
    assert names(q.pending_pod_group_pods()) == ["c"]
    assert sample(registry, "scheduler_pending_pods", queue="pending") == 1

    members = {m.pod.metadata.name: m for m in group}
    fail_member(q, members["a"], FIT)
    fail_member(q, members["b"], FIT)
    q.add_attempted_pod_group_if_needed(group, REJECTED)
    assert names(q.pods_in_backoff_q()) == ["a", "b", "c"]
    assert q.pending_pod_group_pods() == [] and q.in_flight_pods() == []
    assert group.unschedulable_count == 1
    assert q.backoff_duration(group) == 1.0

    clock.advance(1.0)
    q.flush_backoff_q_completed()
    assert await pop_now(q) is not group  # (the lone pod, older, first)
    again = await pop_now(q)
    assert again is group and len(group) == 3 and group.attempts == 2
    for m in group:
        fail_member(q, m, FIT)
    q.add_attempted_pod_group_if_needed(group, REJECTED)
    assert group.unschedulable_count == 2 and q.backoff_duration(group) == 2.0


def test_s_pg_13_group_backoff_cap_grows_with_the_square_root_of_its_size() -> None:
    """upstream calculateBackoffDuration (1.37): initial * 2**(count-1), capped at max, the
    cap times sqrt(size) for an entity of several pods; no count, no backoff."""
    assert entity_backoff(0, 4, 1.0, 10.0) == 0.0
    assert [entity_backoff(n, 1, 1.0, 10.0) for n in (1, 2, 3, 4, 5, 9)] == [1, 2, 4, 8, 10, 10]
    assert entity_backoff(5, 4, 1.0, 10.0) == 16.0
    assert entity_backoff(9, 4, 1.0, 10.0) == 20.0
    assert entity_backoff(9, 3, 1.0, 10.0) == pytest.approx(10.0 * math.sqrt(3))
    assert entity_backoff(2000, 2, 1.0, 10.0) == pytest.approx(10.0 * math.sqrt(2))


async def test_a_successful_attempt_requeues_what_is_left_without_backoff() -> None:
    """A successful attempt (some members placed, one failed): the rest goes to activeQ at
    once, its timestamp kept (so that it is tried again first), its counts reset; an error
    counts a consecutive error (error backoff)."""
    clock = FakeClock()
    q = new_queue(clock)
    q.add(member("a"))
    q.add(member("b"))
    group = await pop_now(q)
    assert isinstance(group, QueuedPodGroupInfo)
    stamp = group.timestamp
    members = {m.pod.metadata.name: m for m in group}
    q.done(members["a"].pod.metadata.uid)  # (bound)
    clock.advance(5)
    fail_member(q, members["b"], FIT)
    q.add_attempted_pod_group_if_needed(group, SUCCESS)
    assert names(q.pods_in_active_q()) == ["b"]
    assert group.timestamp == stamp and group.unschedulable_count == 0

    again = await pop_now(q)
    assert again is group
    fail_member(q, members["b"])  # (no plugin: an error)
    q.add_attempted_pod_group_if_needed(group, as_error("boom"))
    assert group.consecutive_errors_count == 1
    assert names(q.pods_in_backoff_q()) == ["b"]


async def test_an_attempt_with_nothing_back_queues_nothing() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(member("a"))
    group = await pop_now(q)
    assert isinstance(group, QueuedPodGroupInfo)
    q.done(next(iter(group)).pod.metadata.uid)
    q.add_attempted_pod_group_if_needed(group, SUCCESS)
    assert len(q) == 0
    q.add(member("b"))  # (no longer in flight: a new entity in activeQ)
    assert names(q.pods_in_active_q()) == ["b"]


async def test_s_pg_14_members_wait_for_their_pod_group_to_be_observed() -> None:
    """S-PG-14: a member whose PodGroup is not observed waits aside (upstream
    incompletePodGroupPods; scheduler_pending_pods{queue="incomplete"}), not gated; once the
    PodGroup is observed the members queue as its entity; when it is deleted they wait
    again."""
    clock = FakeClock()
    registry = CollectorRegistry()
    q = new_queue(clock, SchedulerMetrics(registry, entities=True))
    q.add(member("x", group="h"))
    q.add(member("y", group="h"))
    assert len(q) == 0 and names(q.incomplete_pod_group_pods()) == ["x", "y"]
    assert sample(registry, "scheduler_pending_pods", queue="incomplete") == 2
    assert sample(registry, "scheduler_pending_pods", queue="gated") == 0

    pg = make_gang_pod_group("h", 2)
    q.add_pod_group(pg)
    assert names(q.pods_in_active_q()) == ["x", "y"] and q.incomplete_pod_group_pods() == []
    entity = q.get_pod_group(PodGroupKey("default", "h"))
    assert entity is not None and len(entity) == 2

    q.delete_pod_group(pg)
    assert len(q) == 0 and names(q.incomplete_pod_group_pods()) == ["x", "y"]
    q.delete(member("x", group="h"))
    assert names(q.incomplete_pod_group_pods()) == ["y"]


async def test_members_are_updated_deleted_and_activated_through_their_group() -> None:
    clock = FakeClock()
    q = new_queue(clock)
    q.add(member("a"))
    q.add(member("b"))
    old = member("a")
    new = member("a")
    new.metadata.labels["x"] = "y"
    q.update(old, new)
    entity = q.get_pod_group(GROUP)
    assert entity is not None
    got = entity.get("default/a")
    assert got is not None and got.pod.metadata.labels["x"] == "y"
    q.delete(member("a"))
    assert names(q.pods_in_active_q()) == ["b"]
    q.delete(member("b"))
    assert q.get_pod_group(GROUP) is None and len(q) == 0
    # A member taken out alone (a CompositePodGroup tree's cycle collects members so).
    q.add(member("c"))
    q.add(member("d"))
    taken = q.pop_specific_pod(member("c"))
    assert taken is not None and names(q.pods_in_active_q()) == ["d"]


async def test_a_backing_off_group_is_not_popped_early() -> None:
    """SchedulerPopFromBackoffQ takes a rejected pod from backoffQ when activeQ is empty, never
    a group (its own rejecting plugins are empty: the error heap); the group's backoff runs
    out first."""
    clock = FakeClock()
    q = new_queue(clock, pop_backoff=True)
    q.add(member("a"))
    group = await pop_now(q)
    assert isinstance(group, QueuedPodGroupInfo)
    fail_member(q, next(iter(group)), FIT)
    q.add_attempted_pod_group_if_needed(group, REJECTED)
    assert names(q.pods_in_backoff_q()) == ["a"]
    with anyio.move_on_after(0.05) as scope:
        await q.pop()
    assert scope.cancelled_caught
    clock.advance(1.0)
    q.flush_backoff_q_completed()
    assert await pop_now(q) is group


def composite(name: str) -> types_pb2.CompositePodGroup:
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, "default"
    cpg.spec.scheduling_policy.gang.min_group_count = 2
    return cpg


async def test_s_pg_cpg_6_a_composite_tree_is_one_entity_keyed_by_its_root() -> None:
    """S-PG-CPG-6: the members of every leaf of a CompositePodGroup tree queue in one entity
    keyed by the root (upstream getRootLookupInfo, type `compositepodgroup` in the entity
    metrics); one Pop hands the tree over, a member added meanwhile waits aside; the rejected
    attempt backs the tree off as one (1 s, its unschedulable count 1); a member whose tree's
    root is not observed yet waits `incomplete` until its CompositePodGroup is."""
    clock = FakeClock()
    registry = CollectorRegistry()
    observed = {"root"}
    tree = {"a": "root", "b": "root", "c": "other"}

    def root_of(key: PodGroupKey) -> PodGroupKey | None:
        parent = tree.get(key.name)
        if parent is None:
            return key
        return CompositePodGroupKey(key.namespace, parent) if parent in observed else None

    q = new_queue(clock, SchedulerMetrics(registry, entities=True), root_of=root_of)
    for name in ("a", "b", "c"):
        q.add_pod_group(make_gang_pod_group(name, 1))
    q.add(member("a1", "a"))
    q.add(member("b1", "b"))
    q.add(member("c1", "c"))
    entities = "scheduler_queued_entities"
    assert sample(registry, entities, queue="active", type="compositepodgroup") == 1
    assert sample(registry, entities, queue="active", type="podgroup") == 0
    assert sample(registry, "scheduler_pending_pods", queue="active") == 2
    assert sample(registry, "scheduler_pending_pods", queue="incomplete") == 1
    assert (
        sample(
            registry,
            "scheduler_queue_incoming_entities_total",
            queue="active",
            event="UnschedulablePodAdd",
            type="compositepodgroup",
        )
        == 2
    )

    entity = await pop_now(q)
    assert isinstance(entity, QueuedPodGroupInfo)
    assert entity.group == CompositePodGroupKey("default", "root")
    assert names([m.pod for m in entity]) == ["a1", "b1"] == names(q.in_flight_pods())
    q.add(member("b2", "b"))
    assert names(q.pending_pod_group_pods()) == ["b2"]
    for m in entity:
        fail_member(q, m, FIT)
    q.add_attempted_pod_group_if_needed(entity, REJECTED)
    assert q.get_pod_group(CompositePodGroupKey("default", "root")) is entity
    assert names([m.pod for m in entity]) == ["a1", "b1", "b2"]
    assert entity.unschedulable_count == 1
    assert q.backoff_duration(entity) == 1.0
    assert sample(registry, entities, queue="backoff", type="compositepodgroup") == 1

    # c's tree resolves once its root CompositePodGroup is observed.
    observed.add("other")
    q.add_composite_pod_group(composite("other"))
    assert q.len_incomplete() == 0
    other = await pop_now(q)
    assert isinstance(other, QueuedPodGroupInfo)
    assert other.group == CompositePodGroupKey("default", "other")
    assert names([m.pod for m in other]) == ["c1"]


async def test_s_pg_cpg_6_a_leaf_deleted_leaves_the_root_entity() -> None:
    """S-PG-CPG-6: a leaf PodGroup deleted takes its members out of the tree's entity (they
    wait `incomplete` for it); the entity keeps the other leaves' members."""
    clock = FakeClock()

    def root_of(key: PodGroupKey) -> PodGroupKey | None:
        return CompositePodGroupKey(key.namespace, "root")

    q = new_queue(clock, root_of=root_of)
    pgs = {name: make_gang_pod_group(name, 1) for name in ("a", "b")}
    for pg in pgs.values():
        q.add_pod_group(pg)
    q.add(member("a1", "a"))
    q.add(member("b1", "b"))
    q.delete_pod_group(pgs["b"])
    assert names(q.incomplete_pod_group_pods()) == ["b1"]
    entity = q.get_pod_group(CompositePodGroupKey("default", "root"))
    assert entity is not None and names([m.pod for m in entity]) == ["a1"]
