"""The pod garbage collector against the fake client and a fake clock: pods bound to nodes
that do not exist are deleted after the quarantine, not before; others are kept."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TypeVar

import anyio
import pytest
from google.protobuf.message import Message

from controllermanager.config import PodGCOptions
from controllermanager.podgc import (
    DELETION_BY_POD_GC,
    NODE_GONE_MESSAGE,
    PodGCController,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

M = TypeVar("M", bound=Message)
QUARANTINE = 40.0


class RecordingClient(FakeClient):
    """The fake, also recording the grace period and uid precondition of every delete."""

    def __init__(self, *objects: Message, clock: FakeClock) -> None:
        super().__init__(*objects, clock=clock)
        self.deletes: list[tuple[str, int | None, str | None]] = []

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> M:
        self.deletes.append((name, grace_period_seconds, uid))
        return await super().delete(
            kind,
            name,
            namespace,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            propagation_policy=propagation_policy,
            orphan_dependents=orphan_dependents,
        )


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, *, disruption_conditions: bool = True
) -> AsyncIterator[PodGCController]:
    informers = InformerFactory(fake, clock=clock)
    gc = PodGCController(
        fake,
        informers,
        clock,
        options=PodGCOptions(quarantine=QUARANTINE),
        disruption_conditions=disruption_conditions,
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(gc.run)
        await settle()
        yield gc
        tg.cancel_scope.cancel()


def exists(fake: FakeClient, name: str, namespace: str = "default") -> bool:
    return ("pods", namespace, name) in fake._objects


def events(fake: FakeClient) -> list[types_pb2.Event]:
    return [o for o in fake._objects.values() if isinstance(o, types_pb2.Event)]


def running_pod(name: str, node: str) -> types_pb2.Pod:
    return make_pod(name).node(node).phase("Running").condition("Ready").obj()


async def test_a_pod_on_a_node_that_does_not_exist_is_deleted_after_the_quarantine() -> None:
    clock = FakeClock()
    fake = RecordingClient(
        make_node("n1").obj(),
        running_pod("orphan", "gone"),
        running_pod("kept", "n1"),
        make_pod("pending").obj(),
        clock=clock,
    )
    orphan_uid = fake._objects[("pods", "default", "orphan")].metadata.uid  # type: ignore[attr-defined]
    async with running(fake, clock):
        await advance(clock, QUARANTINE - 1)
        assert exists(fake, "orphan"), "not before the quarantine has passed"
        await advance(clock, 1.5)
        await wait_until(lambda: not exists(fake, "orphan"))
        assert fake.deletes == [("orphan", 0, orphan_uid)]
        # Marked Failed with the DisruptionTarget condition before the deletion.
        (written,) = [a.object for a in fake.actions if a.verb == "update_status"]
        assert isinstance(written, types_pb2.Pod)
        assert written.status.phase == "Failed"
        cond = next(c for c in written.status.conditions if c.type == "DisruptionTarget")
        assert (cond.status, cond.reason, cond.message) == (
            "True",
            DELETION_BY_POD_GC,
            NODE_GONE_MESSAGE,
        )
        await wait_until(lambda: len(events(fake)) == 1)
        (event,) = events(fake)
        assert (event.type, event.reason, event.involved_object.name) == (
            "Warning",
            DELETION_BY_POD_GC,
            "orphan",
        )

        await advance(clock, 3 * QUARANTINE, step=5)
        assert exists(fake, "kept") and exists(fake, "pending")
        assert len(fake.deletes) == 1


async def test_pods_of_a_deleted_node_go_after_the_quarantine_terminating_ones_too() -> None:
    clock = FakeClock()
    terminating = running_pod("terminating", "n1")
    terminating.metadata.deletion_timestamp.FromSeconds(int(clock.now()) + 300)
    fake = RecordingClient(
        make_node("n1").obj(),
        make_node("n2").obj(),
        running_pod("a", "n1"),
        terminating,
        running_pod("b", "n2"),
        clock=clock,
    )
    async with running(fake, clock):
        await advance(clock, 10)
        await fake.delete(types_pb2.Node, "n1")
        await advance(clock, QUARANTINE - 1)
        assert exists(fake, "a") and exists(fake, "terminating")
        await advance(clock, 1.5)
        await wait_until(lambda: not exists(fake, "a") and not exists(fake, "terminating"))
        assert exists(fake, "b")
        assert sorted((name, grace) for name, grace, _ in fake.deletes) == [
            ("a", 0),
            ("n1", None),
            ("terminating", 0),
        ]


async def test_a_node_that_appears_within_the_quarantine_keeps_its_pods() -> None:
    clock = FakeClock()
    fake = RecordingClient(running_pod("early", "late-node"), clock=clock)
    async with running(fake, clock):
        await advance(clock, 20)
        await fake.create(make_node("late-node").obj())
        await advance(clock, 3 * QUARANTINE, step=5)
        assert exists(fake, "early")
        assert fake.deletes == []


async def test_a_node_missing_from_the_informer_but_found_by_get_keeps_its_pods() -> None:
    clock = FakeClock()
    fake = RecordingClient(running_pod("p", "lagging"), clock=clock)
    async with running(fake, clock):
        await advance(clock, 10)
        # The node exists in the apiserver but its watch event has not arrived (informer lag).
        node = make_node("lagging").obj()
        node.metadata.resource_version = "1"
        fake._objects[("nodes", "", "lagging")] = node
        await advance(clock, QUARANTINE)
        await wait_until(lambda: ("get", "nodes") in [(a.verb, a.resource) for a in fake.actions])
        await settle()
        assert exists(fake, "p")
        assert fake.deletes == []


async def test_a_pod_bound_later_to_a_missing_node_is_found_by_its_event() -> None:
    clock = FakeClock()
    fake = RecordingClient(make_pod("p").obj(), clock=clock)
    async with running(fake, clock):
        await advance(clock, 5)
        await fake.bind("default", "p", "nowhere")
        await advance(clock, QUARANTINE - 1)
        assert exists(fake, "p")
        await advance(clock, 1.5)
        await wait_until(lambda: not exists(fake, "p"))


async def test_without_pod_disruption_conditions_the_pod_is_only_deleted() -> None:
    clock = FakeClock()
    fake = RecordingClient(running_pod("orphan", "gone"), clock=clock)
    async with running(fake, clock, disruption_conditions=False):
        await advance(clock, QUARANTINE + 1)
        await wait_until(lambda: not exists(fake, "orphan"))
        assert "update_status" not in fake.verbs("pods")


async def test_an_unscheduled_pod_left_terminating_is_marked_failed_and_deleted() -> None:
    """upstream gcUnscheduledTerminating: the apiserver deletes an unbound pod in two writes
    (deletionTimestamp with grace 0, then the removal); one that dies in between leaves it
    terminating with no kubelet to finish it. That state cannot be made through the API, so a
    finalizer holds the same shape here (an unbound pod with a deletionTimestamp). A pending
    pod, and a terminating pod on a node (its kubelet finishes it), are left alone."""
    clock = FakeClock()
    held = make_pod("stuck").obj()
    held.metadata.finalizers.append("example.com/hold")
    fake = RecordingClient(
        make_node("n1").obj(),
        held,
        running_pod("bound", "n1"),
        make_pod("pending").obj(),
        clock=clock,
    )
    await fake.delete(types_pb2.Pod, "stuck")
    await fake.delete(types_pb2.Pod, "bound", grace_period_seconds=30)
    stuck = await fake.get(types_pb2.Pod, "stuck")
    assert stuck.metadata.HasField("deletion_timestamp") and not stuck.spec.node_name
    fake.deletes.clear()
    async with running(fake, clock):
        await advance(clock, 19.0, step=1.0)
        assert fake.deletes == [], "before the first gc pass (20 s)"
        await advance(clock, 2.0, step=0.5)
        await wait_until(lambda: fake.deletes == [("stuck", 0, stuck.metadata.uid)])
        assert exists(fake, "bound") and exists(fake, "pending")
    failed = [a for a in fake.actions if a.verb == "update_status" and a.name == "stuck"]
    assert failed and isinstance(failed[-1].object, types_pb2.Pod)
    assert failed[-1].object.status.phase == "Failed"
