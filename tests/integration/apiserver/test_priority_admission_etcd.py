"""Priority admission reads its own apiserver's writes: a pod created right after its
PriorityClass (the class's create returned) is admitted with the class's value even while the
PriorityClass watch cache has not yet seen the class. The registry runs in process on a real etcd
whose PriorityClass watch is held back until the test lets it go (a slow watch; in CI the window
was milliseconds, and a pod create now and then was refused "no PriorityClass with name ...")."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import anyio
import pytest

from apiserver.admission.plugins import SERVICE_ACCOUNT, AdmissionPlugins
from apiserver.registry.registry import Registry, RegistrySettings
from apiserver.storage.etcd import EtcdStore, Progress, StorageEvent
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import Invalid
from kemu.machinery.kinds import KINDS
from kemu.machinery.namespaces import new_namespace, prepare_for_create
from kemu.testing.builders import make_pod, make_priority_class
from kemu.testing.cluster import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

HELD = "/registry/priorityclasses/"


class HeldWatchStore(EtcdStore):
    """etcd, with the changes under HELD sent to watchers only once `release` is set."""

    def __init__(self, servers: list[str]) -> None:
        super().__init__(servers)
        self.release = anyio.Event()

    async def watch(
        self, prefix: str, start_revision: int
    ) -> AsyncIterator[list[StorageEvent] | Progress]:
        async for batch in super().watch(prefix, start_revision):
            if prefix == HELD and isinstance(batch, list) and batch:
                await self.release.wait()
            yield batch


@pytest.fixture
async def store(kemu_cluster_factory: Callable[[], Cluster]) -> AsyncIterator[HeldWatchStore]:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    s = HeldWatchStore([cluster.etcd.url])
    try:
        yield s
    finally:
        await s.close()


async def test_a_pod_created_right_after_its_priority_class_gets_its_value(
    store: HeldWatchStore,
) -> None:
    caches = {k.resource: WatchCache(store, k) for k in KINDS}
    settings = RegistrySettings(
        FeatureGates.for_version(DEFAULT_VERSION),
        admission=AdmissionPlugins.from_flags([], [SERVICE_ACCOUNT]),  # no controller-manager
    )
    registry = Registry(store, caches, settings)
    async with anyio.create_task_group() as tg:
        for cache in caches.values():
            await tg.start(cache.run)
        ns = new_namespace("default")
        prepare_for_create(ns)
        await registry.create(ns)
        await registry.create(make_priority_class("high", 1000).obj())
        assert [
            co.key for co in caches["priorityclasses"].objects() if co.key.endswith("/high")
        ] == []

        created: list[types_pb2.Pod] = []
        done = anyio.Event()

        async def create() -> None:
            pod = await registry.create(make_pod("p").priority_class("high").obj())
            assert isinstance(pod, types_pb2.Pod)
            created.append(pod)
            done.set()

        tg.start_soon(create)
        # The create waits for the cache to see the class: held, it has not returned.
        await anyio.sleep(0.3)
        assert created == []
        store.release.set()
        with anyio.fail_after(5):
            await done.wait()
        assert created[0].spec.priority == 1000
        # With the cache current, an unknown class is refused at once, naming the field.
        with anyio.fail_after(2), pytest.raises(Invalid, match="spec.priorityClassName"):
            await registry.create(make_pod("q").priority_class("nope").obj())
        tg.cancel_scope.cancel()
