"""podgroup-protection-controller against the fake client: at 1.36 the finalizer is added to
a PodGroup a pod that has not finished references, never to one no pod references; at 1.37
(where the PodGroupProtection admission plugin stamps it) it is never added, only removed; at
both it is removed from a PodGroup being deleted once its last running member has finished or
gone; the controller runs from 1.36 with GenericWorkload only."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import podgroup_protection
from controllermanager.app import CONTROLLERS, drop_unavailable
from controllermanager.podgroup_protection import PodGroupProtectionController, event_matters
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import GENERIC_WORKLOAD, FeatureGates
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.podgroups import (
    COMPOSITE_POD_GROUP_PROTECTION_FINALIZER,
    POD_GROUP_PROTECTION_FINALIZER,
)
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle, wait_until

pytestmark = pytest.mark.anyio


def pod_group(name: str) -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup()
    pg.metadata.name = name
    pg.metadata.namespace = "default"
    pg.spec.scheduling_policy.gang.min_count = 2
    return pg


def member(name: str, group: str, *, node: str = "", phase: str = "") -> types_pb2.Pod:
    builder = make_pod(name)
    if node:
        builder = builder.node(node)
    pod = builder.obj()
    pod.spec.scheduling_group.pod_group_name = group
    if phase:
        pod.status.phase = phase
    return pod


def protected_group(name: str) -> types_pb2.PodGroup:
    """A PodGroup as 1.37's PodGroupProtection admission plugin stores it."""
    pg = pod_group(name)
    pg.metadata.finalizers.append(POD_GROUP_PROTECTION_FINALIZER)
    return pg


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock, minor: int = 36) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    controller = PodGroupProtectionController(
        fake, informers, clock, rules=VersionRules.at(Version(1, minor))
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield
        tg.cancel_scope.cancel()


def stored(fake: FakeClient, name: str) -> types_pb2.PodGroup | None:
    obj = fake._objects.get(("podgroups", "default", name))
    return obj if isinstance(obj, types_pb2.PodGroup) else None


def protected(fake: FakeClient, name: str) -> bool:
    pg = stored(fake, name)
    return pg is not None and POD_GROUP_PROTECTION_FINALIZER in pg.metadata.finalizers


async def test_a_group_with_a_running_member_is_kept_until_the_member_finishes() -> None:
    clock = FakeClock()
    fake = FakeClient(
        pod_group("used"),
        pod_group("unused"),
        pod_group("finished"),
        member("runner", "used", node="n1"),
        member("done", "finished", node="n1", phase="Succeeded"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: protected(fake, "used"))
        await settle()
        assert not protected(fake, "unused")
        assert not protected(fake, "finished")
        await fake.delete(types_pb2.PodGroup, "used", "default")
        await settle()
        pg = stored(fake, "used")
        assert pg is not None and pg.metadata.HasField("deletion_timestamp")
        runner = await fake.get(types_pb2.Pod, "runner", "default")
        runner.status.phase = "Succeeded"
        await fake.update_status(runner)
        await wait_until(lambda: stored(fake, "used") is None)


async def test_a_new_pending_member_protects_its_group_and_its_deletion_releases_it() -> None:
    clock = FakeClock()
    fake = FakeClient(pod_group("gang"), clock=clock)
    async with running(fake, clock):
        await settle()
        assert not protected(fake, "gang")
        await fake.create(member("m-0", "gang"))
        await wait_until(lambda: protected(fake, "gang"))
        await fake.delete(types_pb2.PodGroup, "gang", "default")
        await settle()
        assert stored(fake, "gang") is not None
        await fake.delete(types_pb2.Pod, "m-0", "default")
        await wait_until(lambda: stored(fake, "gang") is None)


@pytest.mark.parametrize("adds", [True, False])
def test_only_events_that_can_change_the_answer_matter(adds: bool) -> None:
    """1.36's enqueuePodGroupForPod looks at new members too; 1.37's handlePodChange only at
    pods that finished or went."""
    assert event_matters(member("new", "g"), deleted=False, adds_finalizer=adds) is adds
    running = member("running", "g", node="n1", phase="Running")
    assert not event_matters(running, deleted=False, adds_finalizer=adds)
    assert event_matters(running, deleted=True, adds_finalizer=adds)
    ended = member("ended", "g", node="n1", phase="Failed")
    assert event_matters(ended, deleted=False, adds_finalizer=adds)


async def test_s_pgapi_11_at_1_37_the_finalizer_is_only_removed() -> None:
    """upstream 1.37 processPodGroup: no addFinalizer (the admission plugin stamps every
    PodGroup); a stamped PodGroup no pod uses keeps it until it is deleted, one a running
    member uses keeps it until the member finishes."""
    clock = FakeClock()
    fake = FakeClient(
        pod_group("bare"),
        protected_group("idle"),
        protected_group("used"),
        member("pending", "bare"),
        member("runner", "used", node="n1"),
        clock=clock,
    )
    async with running(fake, clock, minor=37):
        await settle()
        assert not protected(fake, "bare")  # a pending member does not make it add one
        assert protected(fake, "idle")  # not being deleted: kept
        await fake.delete(types_pb2.PodGroup, "idle", "default")
        await wait_until(lambda: stored(fake, "idle") is None)
        await fake.delete(types_pb2.PodGroup, "used", "default")
        await settle()
        assert protected(fake, "used")
        runner = await fake.get(types_pb2.Pod, "runner", "default")
        runner.status.phase = "Failed"
        await fake.update_status(runner)
        await wait_until(lambda: stored(fake, "used") is None)


@pytest.mark.parametrize(
    ("minor", "generic_workload", "runs"),
    [(35, True, False), (36, False, False), (36, True, True), (37, True, True)],
)
def test_the_controller_runs_from_1_36_with_generic_workload(
    minor: int, generic_workload: bool, runs: bool
) -> None:
    gates = FeatureGates.for_version(Version(1, minor), {GENERIC_WORKLOAD: generic_workload})
    assert (podgroup_protection.NAME in drop_unavailable(CONTROLLERS, gates)) is runs


# ---------------------------------------------------------------- CompositePodGroups (1.37)


def composite(name: str, parent: str | None = None) -> types_pb2.CompositePodGroup:
    """A CompositePodGroup as the PodGroupProtection admission plugin stores it: with the
    protection finalizer."""
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, "default"
    cpg.metadata.finalizers.append(COMPOSITE_POD_GROUP_PROTECTION_FINALIZER)
    cpg.spec.scheduling_policy.basic.SetInParent()
    if parent is not None:
        cpg.spec.parent_composite_pod_group_name = parent
    return cpg


def child(name: str, parent: str) -> types_pb2.PodGroup:
    pg = pod_group(name)
    pg.spec.parent_composite_pod_group_name = parent
    return pg


def stored_composite(fake: FakeClient, name: str) -> types_pb2.CompositePodGroup | None:
    obj = fake._objects.get(("compositepodgroups", "default", name))
    return obj if isinstance(obj, types_pb2.CompositePodGroup) else None


@asynccontextmanager
async def running_with_composites(fake: FakeClient, clock: FakeClock) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    controller = PodGroupProtectionController(
        fake,
        informers,
        clock,
        rules=VersionRules.at(Version(1, 37)),
        composite_pod_groups=True,
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield
        tg.cancel_scope.cancel()


async def test_s_pgapi_9_a_composite_is_released_bottom_up_once_its_children_are_gone() -> None:
    """upstream pkg/controller/podgroupprotection processCompositePodGroup: the finalizer of
    a CompositePodGroup being deleted stays while a PodGroup or a CompositePodGroup names it
    as parent, and goes with the last child."""
    clock = FakeClock()
    fake = FakeClient(
        composite("root"),
        composite("mid", parent="root"),
        child("leaf", "mid"),
        composite("lonely"),
        clock=clock,
    )
    async with running_with_composites(fake, clock):
        await fake.delete(types_pb2.CompositePodGroup, "root", "default")
        await fake.delete(types_pb2.CompositePodGroup, "mid", "default")
        await fake.delete(types_pb2.CompositePodGroup, "lonely", "default")
        await wait_until(lambda: stored_composite(fake, "lonely") is None)
        await settle()
        for name in ("root", "mid"):
            kept = stored_composite(fake, name)
            assert kept is not None and kept.metadata.HasField("deletion_timestamp")
            assert COMPOSITE_POD_GROUP_PROTECTION_FINALIZER in kept.metadata.finalizers
        await fake.delete(types_pb2.PodGroup, "leaf", "default")
        await wait_until(lambda: stored_composite(fake, "mid") is None)
        await wait_until(lambda: stored_composite(fake, "root") is None)


async def test_a_composite_not_being_deleted_keeps_its_finalizer() -> None:
    clock = FakeClock()
    fake = FakeClient(composite("root"), clock=clock)
    async with running_with_composites(fake, clock):
        await settle()
        kept = stored_composite(fake, "root")
        assert kept is not None
        assert list(kept.metadata.finalizers) == [COMPOSITE_POD_GROUP_PROTECTION_FINALIZER]
