"""The namespace controller against the fake client and a fake clock: a terminating namespace
is emptied of every namespaced kind, bound pods go gracefully and are waited for with
upstream's estimate, and the namespace is finalized (and so removed) only once it is empty."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.namespace import NAMESPACED_KINDS, NamespaceController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.errors import NotFound
from kemu.machinery.namespaces import new_namespace
from kemu.testing.builders import make_job, make_pdb, make_pod
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[NamespaceController]:
    informers = InformerFactory(fake, clock=clock)
    controller = NamespaceController(fake, informers.informer(types_pb2.Namespace), clock)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield controller
        tg.cancel_scope.cancel()


def _content(ns: str) -> list[object]:
    config = types_pb2.ConfigMap()
    config.metadata.name, config.metadata.namespace = "cfg", ns
    config.data["k"] = "v"
    svc = types_pb2.Service()
    svc.metadata.name, svc.metadata.namespace = "web", ns
    # A batch/v1 Job orphans by default: deleted Background, as upstream, it holds nothing up.
    job = make_job("job").manual_selector().obj()
    job.metadata.namespace = ns
    meta = types_pb2.ObjectMeta(name="data", namespace=ns)
    claim = types_pb2.PersistentVolumeClaim(metadata=meta)
    claim.spec.access_modes.append("ReadWriteOnce")
    claim.spec.resources.requests["storage"] = "1Gi"
    # issue #34's namespaced kinds are emptied too
    storage_and_apps: list[object] = [
        claim,
        types_pb2.Secret(metadata=meta, data={"k": b"v"}),
        types_pb2.ServiceAccount(metadata=meta),
        types_pb2.StatefulSet(metadata=meta),
        types_pb2.CronJob(metadata=meta),
    ]
    return [
        *storage_and_apps,
        job,
        make_pod("pending").namespace(ns).obj(),
        make_pod("running").namespace(ns).node("n1").grace(10).phase("Running").obj(),
        make_pdb("pdb").namespace(ns).selector(app="x").min_available(1).obj(),
        config,
        svc,
    ]


async def _gone(fake: FakeClient, name: str) -> bool:
    try:
        await fake.get(types_pb2.Namespace, name)
    except NotFound:
        return True
    return False


def finalized(fake: FakeClient) -> list[str]:
    """The namespaces whose finalize subresource was written, in order."""
    return [a.name for a in fake.actions if a.subresource == "finalize"]


async def test_a_terminating_namespace_is_emptied_then_finalized_and_removed() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    await fake.create(new_namespace("doomed", finalizers=["kubernetes"]))
    await fake.create(new_namespace("kept", finalizers=["kubernetes"]))
    for obj in [*_content("doomed"), *_content("kept")]:
        await fake.create(obj)  # type: ignore[type-var]
    async with running(fake, clock):
        await fake.delete(types_pb2.Namespace, "doomed")
        # Everything but the bound pod goes at once; that one is terminating, not gone.
        await wait_until(lambda: fake.verbs("configmaps").count("delete") == 1)
        await settle()
        pod = await fake.get(types_pb2.Pod, "running", "doomed")
        assert pod.metadata.HasField("deletion_timestamp")
        assert (await fake.list(types_pb2.ConfigMap, "doomed")).items == []
        assert (await fake.list(types_pb2.PodDisruptionBudget, "doomed")).items == []
        assert (await fake.list(types_pb2.PersistentVolumeClaim, "doomed")).items == []
        assert (await fake.list(types_pb2.StatefulSet, "doomed")).items == []
        ns = await fake.get(types_pb2.Namespace, "doomed")
        assert list(ns.spec.finalizers) == ["kubernetes"] and finalized(fake) == []
        # Its kubelet finishes the pod; the controller looks again after 10/2+1 seconds.
        await fake.delete(types_pb2.Pod, "running", "doomed", grace_period_seconds=0)
        await advance(clock, 5.0)
        assert not await _gone(fake, "doomed")
        await advance(clock, 1.5)
        await wait_until(lambda: finalized(fake) == ["doomed"])
        assert await _gone(fake, "doomed")
        for kind in NAMESPACED_KINDS:
            assert (await fake.list(kind.message, "doomed")).items == [], kind.kind
        # The other namespace and its content are untouched.
        kept = await fake.get(types_pb2.Namespace, "kept")
        assert not kept.metadata.HasField("deletion_timestamp")
        assert len((await fake.list(types_pb2.Pod, "kept")).items) == 2


async def test_a_namespace_that_is_not_terminating_is_left_alone() -> None:
    clock = FakeClock()
    fake = FakeClient(new_namespace("live", finalizers=["kubernetes"]), clock=clock)
    await fake.create(make_pod("p").namespace("live").obj())
    async with running(fake, clock) as controller:
        await controller.sync("live")
        await controller.sync("missing")
        await settle()
    assert "delete" not in fake.verbs("pods")
    assert len((await fake.list(types_pb2.Pod, "live")).items) == 1
