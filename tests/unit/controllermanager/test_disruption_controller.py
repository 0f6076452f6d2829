"""The disruption controller against the fake client: event-driven status updates."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.disruption import (
    DELETION_TIMEOUT,
    SYNC_FAILED_REASON,
    DisruptionController,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Conflict, Unavailable
from kemu.testing.builders import make_pdb, make_pod
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

PDB = types_pb2.PodDisruptionBudget


def ready_pod(name: str, namespace: str = "default", app: str = "web") -> types_pb2.Pod:
    return make_pod(name).namespace(namespace).labels(app=app).condition("Ready").obj()


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, resync_period: float = 30.0
) -> AsyncIterator[DisruptionController]:
    informers = InformerFactory(fake, clock=clock)
    dc = DisruptionController(fake, informers, clock, resync_period=resync_period)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(dc.run)
        yield dc
        tg.cancel_scope.cancel()


def status(fake: FakeClient, name: str = "pdb", namespace: str = "default") -> tuple[int, ...]:
    pdb = fake._objects[("poddisruptionbudgets", namespace, name)]
    assert isinstance(pdb, PDB)
    st = pdb.status
    return st.expected_pods, st.desired_healthy, st.current_healthy, st.disruptions_allowed


async def stored(fake: FakeClient, name: str = "pdb", namespace: str = "default") -> PDB:
    return await fake.get(PDB, name, namespace)


def status_writes(fake: FakeClient) -> int:
    return sum(1 for a in fake.actions if a.verb == "update_status")


async def test_status_follows_pods_becoming_ready_and_being_deleted() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pod("c").labels(app="web").condition("Ready", "False").obj(),
        ready_pod("other", app="db"),
        ready_pod("elsewhere", namespace="ns2"),
        make_pdb("pdb").selector(app="web").min_available(2).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (3, 2, 2, 0))
        pdb = await stored(fake)
        assert pdb.status.observed_generation == pdb.metadata.generation == 1
        (cond,) = pdb.status.conditions
        assert (cond.type, cond.status, cond.reason) == (
            "DisruptionAllowed",
            "False",
            "InsufficientPods",
        )

        c = await fake.get(types_pb2.Pod, "c")
        c.status.conditions[0].status = "True"
        await fake.update_status(c)
        await wait_until(lambda: status(fake) == (3, 2, 3, 1))
        (cond,) = (await stored(fake)).status.conditions
        assert (cond.status, cond.reason) == ("True", "SufficientPods")

        await fake.delete(types_pb2.Pod, "a")
        await wait_until(lambda: status(fake) == (2, 2, 2, 0))

        await fake.create(ready_pod("d"))
        await wait_until(lambda: status(fake) == (3, 2, 3, 1))


async def test_a_terminating_pod_is_not_healthy() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pdb("pdb").selector(app="web").max_unavailable(1).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))
        await fake.bind("default", "a", "n1")
        await fake.delete(types_pb2.Pod, "a")  # bound: graceful, the pod stays terminating
        assert (await fake.get(types_pb2.Pod, "a")).metadata.HasField("deletion_timestamp")
        await wait_until(lambda: status(fake) == (2, 1, 1, 0))


async def test_relabelling_a_pod_out_of_the_selector_updates_the_pdb() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pdb("pdb").selector(app="web").min_available(1).obj(),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))
        b = await fake.get(types_pb2.Pod, "b")
        b.metadata.labels["app"] = "db"
        await fake.update(b)
        await wait_until(lambda: status(fake) == (1, 1, 1, 0))


async def test_an_empty_selector_matches_every_pod_of_the_namespace() -> None:
    clock = FakeClock()
    pdb = make_pdb("pdb").min_available(1).obj()
    pdb.spec.selector.SetInParent()
    fake = FakeClient(
        ready_pod("a", app="x"), ready_pod("b", app="y"), ready_pod("c", "ns2"), pdb, clock=clock
    )
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))


async def test_status_is_written_only_when_it_changes() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"), make_pdb("pdb").selector(app="web").min_available(1).obj(), clock=clock
    )
    async with running(fake, clock, resync_period=5) as dc:
        await wait_until(lambda: status(fake) == (1, 1, 1, 0))
        await settle()
        writes, syncs = status_writes(fake), dc.syncs
        assert writes == 1
        a = await fake.get(types_pb2.Pod, "a")
        a.metadata.annotations["note"] = "irrelevant"
        await fake.update(a)
        await settle()
        assert dc.syncs == syncs, "a pod change no status depends on needs no sync"
        await advance(clock, 5)
        await wait_until(lambda: dc.syncs > syncs)  # the periodic resync
        await settle()
        assert status_writes(fake) == writes


async def test_a_conflict_is_retried_on_a_fresh_read() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pdb("pdb").selector(app="web").min_available(1).obj(),
        clock=clock,
    )
    fake.fail("update_status", Conflict("the object has been modified"), times=1)
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))
        verbs = [a.verb for a in fake.actions if a.resource == "poddisruptionbudgets"]
        assert verbs[-3:] == ["update_status", "get", "update_status"]


async def test_a_failed_write_is_requeued_with_backoff() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pdb("pdb").selector(app="web").min_available(1).obj(),
        clock=clock,
    )
    fake.fail("update_status", Unavailable("apiserver restarting"), times=2)
    async with running(fake, clock) as dc:
        await wait_until(lambda: status_writes(fake) == 1)
        await advance(clock, 0.05, step=0.005)
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))
        assert status_writes(fake) == 3
        assert dc.queue.num_requeues("default/pdb") == 0, "forgotten after the successful sync"


async def test_disrupted_pods_expire_after_the_deletion_timeout() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"),
        ready_pod("b"),
        make_pdb("pdb").selector(app="web").min_available(1).obj(),
        clock=clock,
    )
    pdb = await stored(fake)
    evicted_at = clock.now() - 30
    pdb.status.disrupted_pods["b"].FromMicroseconds(int(evicted_at * 1_000_000))
    pdb.status.disrupted_pods["gone"].FromMicroseconds(int(evicted_at * 1_000_000))
    await fake.update_status(pdb)
    async with running(fake, clock):
        await wait_until(lambda: status(fake) == (2, 1, 1, 0))
        assert list((await stored(fake)).status.disrupted_pods) == ["b"]
        await advance(clock, DELETION_TIMEOUT - 30 - 1, step=10)
        await settle()
        assert status(fake) == (2, 1, 1, 0)
        await advance(clock, 1)
        await wait_until(lambda: status(fake) == (2, 1, 2, 1))
        assert len((await stored(fake)).status.disrupted_pods) == 0


async def test_an_invalid_selector_fails_safe() -> None:
    clock = FakeClock()
    pdb = make_pdb("pdb").min_available(1).obj()
    pdb.spec.selector.match_expressions.add(key="app", operator="Near", values=["x"])
    pdb.status.disruptions_allowed = 3
    fake = FakeClient(ready_pod("a"), clock=clock)
    created = await fake.create(pdb)
    created.status.disruptions_allowed = 3
    await fake.update_status(created)
    async with running(fake, clock) as dc:
        await wait_until(lambda: status(fake)[3] == 0)
        (cond,) = (await stored(fake)).status.conditions
        assert (cond.status, cond.reason) == ("False", SYNC_FAILED_REASON)
        assert "Near" in cond.message
        await settle()
        writes = status_writes(fake)
        dc.queue.add("default/pdb")
        await settle()
        assert status_writes(fake) == writes, "a failed PDB is not rewritten on every sync"


async def test_a_deleted_pdb_is_forgotten() -> None:
    clock = FakeClock()
    fake = FakeClient(
        ready_pod("a"), make_pdb("pdb").selector(app="web").min_available(1).obj(), clock=clock
    )
    async with running(fake, clock) as dc:
        await wait_until(lambda: status(fake) == (1, 1, 1, 0))
        await fake.delete(PDB, "pdb")
        await wait_until(lambda: not dc._pdbs.lister.keys())
        await settle()
        writes = status_writes(fake)
        await fake.delete(types_pb2.Pod, "a")
        await settle()
        assert status_writes(fake) == writes
