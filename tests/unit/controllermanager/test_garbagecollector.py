"""The garbage collector against the fake client: the graph (virtual owners, dependents,
transitions) and the decisions (background, foreground, orphan, dangling references, a restart
in the middle of a foreground deletion, API errors retried)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from google.protobuf.message import Message

from controllermanager.config import GarbageCollectorOptions
from controllermanager.garbagecollector.garbagecollector import (
    GarbageCollector,
)
from controllermanager.garbagecollector.graph import (
    ObjectReference,
    ReferenceCache,
    references_diffs,
)
from controllermanager.garbagecollector.graph_builder import GraphBuilder
from controllermanager.garbagecollector.operations import resolve_kind
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.machinery.kinds import BY_KIND
from kemu.testing.builders import make_lease, make_pdb, make_pod, owned, owner_reference
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

Pod, Lease, Pdb = types_pb2.Pod, types_pb2.Lease, types_pb2.PodDisruptionBudget


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[GarbageCollector]:
    informers = InformerFactory(fake, clock=clock)
    gc = GarbageCollector(
        fake, informers, clock, options=GarbageCollectorOptions(concurrent_gc_syncs=2)
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(gc.run)
        await settle()
        yield gc
        tg.cancel_scope.cancel()


def stored(fake: FakeClient, kind: type[Message], name: str) -> Any:
    return fake._objects.get((BY_KIND[kind.DESCRIPTOR.name].resource, "default", name))


def exists(fake: FakeClient, kind: type[Message], name: str) -> bool:
    return stored(fake, kind, name) is not None


def refs(fake: FakeClient, kind: type[Message], name: str) -> list[str]:
    return [r.name for r in stored(fake, kind, name).metadata.owner_references]


# ---------------------------------------------------------------- the graph


def _builder() -> GraphBuilder:
    clock = FakeClock()
    return GraphBuilder(WorkQueue(clock), WorkQueue(clock), ReferenceCache())


def _with_uid(obj: Any, uid: str) -> Any:
    obj.metadata.uid = uid
    return obj


def test_an_unseen_owner_is_a_virtual_node_to_verify_until_its_object_shows_up() -> None:
    b = _builder()
    owner = _with_uid(make_pdb("o").obj(), "o-uid")
    dep = _with_uid(owned(make_lease("d"), owner_reference(owner)), "d-uid")
    b.on_add(BY_KIND["Lease"], dep)
    node = b.uid_to_node["o-uid"]
    assert [d.identity.name for d in node.dependents] == ["d"]
    flags = [node.virtual]
    assert len(b.attempt_to_delete) == 1  # the virtual owner, to be looked up
    b.on_add(BY_KIND["PodDisruptionBudget"], owner)
    assert b.uid_to_node["o-uid"] is node
    flags.append(node.virtual)
    assert flags == [True, False]  # observed now

    b.on_delete(BY_KIND["PodDisruptionBudget"], owner)
    assert "o-uid" not in b.uid_to_node
    assert b.absent_owner_cache.has(
        ObjectReference("policy/v1", "PodDisruptionBudget", "o", "o-uid", "default")
    )


def test_a_dependent_that_drops_its_reference_leaves_the_owners_dependents() -> None:
    b = _builder()
    owner = _with_uid(make_pdb("o").obj(), "o-uid")
    b.on_add(BY_KIND["PodDisruptionBudget"], owner)
    dep = _with_uid(owned(make_lease("d"), owner_reference(owner, block_owner_deletion=True)), "d")
    b.on_add(BY_KIND["Lease"], dep)
    assert [d.identity.name for d in b.uid_to_node["o-uid"].blocking_dependents()] == ["d"]
    freed = types_pb2.Lease()
    freed.CopyFrom(dep)
    del freed.metadata.owner_references[:]
    b.on_update(BY_KIND["Lease"], dep, freed)
    assert not b.uid_to_node["o-uid"].dependents


def test_references_diffs_by_uid() -> None:
    a = types_pb2.OwnerReference(uid="a", name="a")
    b = types_pb2.OwnerReference(uid="b", name="b")
    b2 = types_pb2.OwnerReference(uid="b", name="b", block_owner_deletion=True)
    c = types_pb2.OwnerReference(uid="c", name="c")
    diff = references_diffs([a, b], [b2, c])
    assert (diff.added, diff.removed, diff.changed) == ([c], [a], [(b, b2)])
    assert not references_diffs([a], [a])


def test_owner_references_resolve_to_served_kinds_by_group() -> None:
    assert resolve_kind("policy/v1beta1", "PodDisruptionBudget") is BY_KIND["PodDisruptionBudget"]
    assert resolve_kind("v1", "Pod") is BY_KIND["Pod"]
    assert resolve_kind("apps/v1", "Pod") is None
    assert resolve_kind("v1", "Nothing") is None


# ---------------------------------------------------------------- the collector


async def test_background_deletes_dependents_whose_every_owner_is_gone() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    other = fake.add(make_pod("other").obj())
    fake.add(owned(make_lease("dep"), owner_reference(owner, controller=True)))
    fake.add(owned(make_pod("shared").obj(), owner_reference(owner), owner_reference(other)))
    fake.add(make_lease("free"))
    async with running(fake, clock):
        await fake.delete(Pdb, "owner")
        await wait_until(lambda: not exists(fake, Lease, "dep"))
        await wait_until(lambda: refs(fake, Pod, "shared") == ["other"])
        assert exists(fake, Lease, "free")
        await fake.delete(Pod, "other")
        await wait_until(lambda: not exists(fake, Pod, "shared"))


async def test_a_dependent_of_an_owner_that_does_not_exist_is_deleted() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    real = fake.add(make_lease("real"))
    ghost = types_pb2.OwnerReference(api_version="v1", kind="Pod", name="ghost", uid="g")
    wrong_uid = types_pb2.OwnerReference(
        api_version="coordination.k8s.io/v1", kind="Lease", name="real", uid="other"
    )
    fake.add(owned(make_lease("of-ghost"), ghost))
    fake.add(owned(make_lease("of-wrong-uid"), wrong_uid))
    fake.add(owned(make_lease("of-real"), owner_reference(real)))
    async with running(fake, clock) as gc:
        await wait_until(lambda: not exists(fake, Lease, "of-ghost"))
        await wait_until(lambda: not exists(fake, Lease, "of-wrong-uid"))
        await settle()
        assert exists(fake, Lease, "of-real")
        assert "g" not in gc.graph  # the virtual node went with the virtual delete event


async def test_foreground_deletes_blocking_dependents_then_removes_the_finalizer() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    block = owner_reference(owner, block_owner_deletion=True)
    middle = fake.add(owned(make_pod("middle").obj(), block))
    fake.add(owned(make_lease("leaf"), owner_reference(middle, block_owner_deletion=True)))
    keeper = fake.add(make_lease("keeper"))
    fake.add(owned(make_lease("kept"), block, owner_reference(keeper)))
    async with running(fake, clock):
        kept = await fake.delete(Pdb, "owner", propagation_policy="Foreground")
        assert list(kept.metadata.finalizers) == ["foregroundDeletion"]
        await wait_until(lambda: not exists(fake, Pdb, "owner"))
        assert not exists(fake, Pod, "middle") and not exists(fake, Lease, "leaf")
        assert refs(fake, Lease, "kept") == ["keeper"]  # another owner keeps it
    deleted = [(a.resource, a.name) for a in fake.actions if a.verb == "delete"]
    assert deleted.index(("pods", "middle")) < deleted.index(("leases", "leaf"))  # foreground
    finalizer_patches = [
        a.name for a in fake.actions if a.verb == "patch" and "finalizers" in a.patch
    ]
    assert finalizer_patches[-1] == "owner"


async def test_orphan_strips_the_owner_reference_and_removes_the_finalizer() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    fake.add(owned(make_lease("a"), owner_reference(owner, block_owner_deletion=True)))
    fake.add(owned(make_pod("b").obj(), owner_reference(owner)))
    async with running(fake, clock):
        await fake.delete(Pdb, "owner", propagation_policy="Orphan")
        await wait_until(lambda: not exists(fake, Pdb, "owner"))
        assert refs(fake, Lease, "a") == [] and refs(fake, Pod, "b") == []


async def test_orphan_keeps_a_dependent_the_graph_sees_only_after_the_owner_is_gone() -> None:
    """The pod informer lags behind the owner's: the orphan worker finds no dependent in the
    graph and lets the owner go; the pod, seen afterwards with a reference to an owner that
    no longer exists, is orphaned (it existed when the owner was deleted with the Orphan
    policy), not collected."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    async with running(fake, clock):
        fake.hold_watches("pods")
        await fake.create(owned(make_pod("dep").obj(), owner_reference(owner)))
        await fake.delete(Pdb, "owner", propagation_policy="Orphan")
        await wait_until(lambda: not exists(fake, Pdb, "owner"))
        fake.release_watches("pods")
        await settle()
        await advance(clock, 5.0)
        assert exists(fake, Pod, "dep") and refs(fake, Pod, "dep") == []
        # A dependent created after the owner's deletion is garbage, as before.
        await fake.create(owned(make_pod("late").obj(), owner_reference(owner)))
        await wait_until(lambda: not exists(fake, Pod, "late"))


async def test_a_restarted_collector_finishes_a_foreground_deletion() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    fake.add(owned(make_lease("dep"), owner_reference(owner, block_owner_deletion=True)))
    await fake.delete(Pdb, "owner", propagation_policy="Foreground")  # no collector running
    assert exists(fake, Pdb, "owner")
    async with running(fake, clock):
        await wait_until(lambda: not exists(fake, Pdb, "owner"))
        assert not exists(fake, Lease, "dep")


async def test_an_api_error_is_retried_with_backoff() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    owner = fake.add(make_pdb("owner").obj())
    fake.add(owned(make_lease("dep"), owner_reference(owner)))
    async with running(fake, clock):
        fake.fail("delete", Unavailable("etcd is down"), resource="leases", times=1)
        await fake.delete(Pdb, "owner")
        await settle()
        assert exists(fake, Lease, "dep")
        await advance(clock, 1.0)
        await wait_until(lambda: not exists(fake, Lease, "dep"))


async def test_a_stateful_sets_pods_and_claims_go_with_it_and_a_cron_jobs_jobs() -> None:
    """Issue #34's kinds are in the graph: a StatefulSet's pods and its claims (the claims'
    retention policy Delete puts the reference there), a CronJob's Jobs."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    meta = types_pb2.ObjectMeta
    sts = fake.add(types_pb2.StatefulSet(metadata=meta(name="db", namespace="default")))
    cron = fake.add(types_pb2.CronJob(metadata=meta(name="backup", namespace="default")))
    fake.add(owned(make_pod("db-0").obj(), owner_reference(sts, controller=True)))
    claim = types_pb2.PersistentVolumeClaim(metadata=meta(name="data-db-0", namespace="default"))
    fake.add(owned(claim, owner_reference(sts)))
    job = types_pb2.Job(metadata=meta(name="backup-1", namespace="default"))
    fake.add(owned(job, owner_reference(cron, controller=True)))
    async with running(fake, clock):
        await fake.delete(types_pb2.StatefulSet, "db", "default")
        await wait_until(lambda: not exists(fake, Pod, "db-0"))
        await wait_until(lambda: not exists(fake, types_pb2.PersistentVolumeClaim, "data-db-0"))
        assert exists(fake, types_pb2.Job, "backup-1")
        await fake.delete(types_pb2.CronJob, "backup", "default")
        await wait_until(lambda: not exists(fake, types_pb2.Job, "backup-1"))
