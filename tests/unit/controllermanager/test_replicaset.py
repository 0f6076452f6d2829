"""The ReplicaSet controller against the fake client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.replicaset import ReplicaSetController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Forbidden
from kemu.machinery.owners import controller_of
from kemu.testing.builders import make_pod, make_replica_set
from kemu.testing.fake_time import advance, wait_until

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, *, burst_replicas: int = 500
) -> AsyncIterator[ReplicaSetController]:
    informers = InformerFactory(fake, clock=clock)
    rsc = ReplicaSetController(fake, informers, clock, burst_replicas=burst_replicas)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(rsc.run)
        yield rsc
        tg.cancel_scope.cancel()


def pods(fake: FakeClient, *, active: bool = True) -> list[types_pb2.Pod]:
    out = []
    for (resource, _, _), obj in fake._objects.items():
        if resource == "pods":
            assert isinstance(obj, types_pb2.Pod)
            if not active or not obj.metadata.HasField("deletion_timestamp"):
                out.append(obj)
    return out


def rs_status(fake: FakeClient, name: str = "web") -> types_pb2.ReplicaSetStatus:
    rs = fake._objects[("replicasets", "default", name)]
    assert isinstance(rs, types_pb2.ReplicaSet)
    return rs.status


async def test_creates_pods_with_owner_and_generate_name_and_reports_status() -> None:
    clock = FakeClock()
    fake = FakeClient(make_replica_set("web").replicas(3).obj(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: len(pods(fake)) == 3)
        rs = await fake.get(types_pb2.ReplicaSet, "web")
        for pod in pods(fake):
            assert pod.metadata.generate_name == "web-"
            assert pod.metadata.labels["app"] == "web"
            ref = controller_of(pod)
            assert ref is not None and ref.uid == rs.metadata.uid and ref.block_owner_deletion
        await wait_until(lambda: rs_status(fake).replicas == 3)
        assert rs_status(fake).observed_generation == rs.metadata.generation
        assert rs_status(fake).ready_replicas == 0
        # Pods becoming ready count as ready and (minReadySeconds 0) available.
        for pod in pods(fake):
            await fake.patch(
                types_pb2.Pod,
                pod.metadata.name,
                {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                subresource="status",
            )
        await wait_until(lambda: rs_status(fake).available_replicas == 3)
        assert rs_status(fake).fully_labeled_replicas == 3


async def test_creations_go_in_slow_start_batches_up_to_the_burst() -> None:
    clock = FakeClock()
    fake = FakeClient(make_replica_set("web").replicas(20).obj(), clock=clock)
    async with running(fake, clock, burst_replicas=10) as rsc:
        await wait_until(lambda: len(pods(fake)) == 20)
        creates = [a for a in fake.actions if a.verb == "create" and a.resource == "pods"]
        assert len(creates) == 20
        await wait_until(lambda: rsc.expectations.pending("default/web") == (0, 0))


async def test_a_failing_create_is_one_batch_and_a_replica_failure_condition() -> None:
    clock = FakeClock()
    fake = FakeClient(make_replica_set("web").replicas(5).obj(), clock=clock)
    fake.fail("create", Forbidden("exceeded quota"), resource="pods")
    async with running(fake, clock):
        await wait_until(
            lambda: any(c.type == "ReplicaFailure" for c in rs_status(fake).conditions)
        )
        (cond,) = rs_status(fake).conditions
        assert (cond.status, cond.reason) == ("True", "FailedCreate")
        assert "exceeded quota" in cond.message
        tries = [a for a in fake.actions if a.verb == "create" and a.resource == "pods"]
        # Each sync stops after its first batch (of 1): not one try per missing pod.
        assert 1 <= len(tries) < 5
        fake.heal()
        await advance(clock, 5.0)  # the rate-limited retry
        await wait_until(lambda: len(pods(fake)) == 5)
        await wait_until(lambda: not rs_status(fake).conditions)


async def test_a_deleted_pod_is_replaced_and_scale_down_deletes_unready_first() -> None:
    clock = FakeClock()
    fake = FakeClient(make_replica_set("web").replicas(3).obj(), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: len(pods(fake)) == 3)
        victim = pods(fake)[0]
        await fake.delete(types_pb2.Pod, victim.metadata.name)
        await wait_until(
            lambda: (
                len(pods(fake)) == 3
                and victim.metadata.uid not in {p.metadata.uid for p in pods(fake)}
            )
        )
        ready = pods(fake)[:2]
        for pod in ready:
            await fake.patch(
                types_pb2.Pod,
                pod.metadata.name,
                {
                    "status": {
                        "phase": "Running",
                        "conditions": [{"type": "Ready", "status": "True"}],
                    }
                },
                subresource="status",
            )
        await fake.patch(types_pb2.ReplicaSet, "web", {"spec": {"replicas": 2}})
        await wait_until(lambda: len(pods(fake)) == 2)
        assert {p.metadata.name for p in pods(fake)} == {p.metadata.name for p in ready}


async def test_orphans_are_adopted_and_count() -> None:
    clock = FakeClock()
    fake = FakeClient(
        make_pod("stray").labels(app="web").obj(),
        make_replica_set("web").replicas(2).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: len(pods(fake)) == 2)
        stray = await fake.get(types_pb2.Pod, "stray")
        ref = controller_of(stray)
        assert ref is not None and ref.name == "web"
