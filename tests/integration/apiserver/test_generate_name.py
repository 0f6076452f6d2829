"""Creates by `metadata.generateName` (upstream's store.go Create and
staging/src/k8s.io/apiserver/pkg/storage/names/generate.go): the base cut to 58 characters and
5 characters of utilrand's alphabet; a generated name that is taken tried again with another,
8 attempts in all, from RetryGenerateName (1.31 beta on, 1.32 GA), else AlreadyExists with
rest.CheckGeneratedNameError's message. The registry runs in process on a real etcd with a
name generator that repeats itself; the names of a real apiserver are checked through gRPC."""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import pytest

from apiserver.admission.plugins import SERVICE_ACCOUNT, AdmissionPlugins
from apiserver.registry.names import (
    MAX_GENERATED_NAME_LENGTH,
    RANDOM_NAMES,
    NameGenerator,
    SeededNames,
    Taken,
)
from apiserver.registry.registry import GENERATE_NAME_ATTEMPTS, Registry, RegistrySettings
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import RETRY_GENERATE_NAME, FeatureGates
from kemu.component.version import Version
from kemu.machinery.errors import AlreadyExists
from kemu.machinery.kinds import KINDS
from kemu.machinery.namespaces import new_namespace, prepare_for_create
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


class Repeating:
    """Answers `names` in turn, the last one for ever; counts what it was asked."""

    def __init__(self, *names: str) -> None:
        self.names = list(names)
        self.asked = 0

    def generate(self, resource: str, namespace: str, base: str, taken: Taken) -> str:
        del resource, namespace, taken
        self.asked += 1
        return base + (self.names.pop(0) if len(self.names) > 1 else self.names[0])

    def turn(self, resource: str, namespace: str, base: str) -> AbstractAsyncContextManager[None]:
        return RANDOM_NAMES.turn(resource, namespace, base)


async def _registry(
    store: EtcdStore,
    names: NameGenerator,
    version: str,
    tg: anyio.abc.TaskGroup,
    disabled: tuple[str, ...] = (SERVICE_ACCOUNT,),
) -> Registry:
    caches = {k.resource: WatchCache(store, k) for k in KINDS}
    settings = RegistrySettings(
        FeatureGates.for_version(Version.parse(version)),
        admission=AdmissionPlugins.from_flags([], list(disabled)),
        names=names,
    )
    for cache in caches.values():
        await tg.start(cache.run)
    registry = Registry(store, caches, settings)
    ns = new_namespace("default")
    prepare_for_create(ns)
    await registry.create(ns)
    return registry


def _pod() -> types_pb2.Pod:
    pod = make_pod("").obj()
    pod.metadata.generate_name = "web-"
    return pod


@pytest.mark.parametrize("version", ["1.31", "1.37"])
async def test_a_taken_generated_name_is_tried_again_with_another(
    store: EtcdStore, version: str
) -> None:
    names = Repeating("aaaaa", "aaaaa", "bbbbb")
    async with anyio.create_task_group() as tg:
        registry = await _registry(store, names, version, tg)
        first = await registry.create(_pod())
        second = await registry.create(_pod())
        assert isinstance(first, types_pb2.Pod) and isinstance(second, types_pb2.Pod)
        assert (first.metadata.name, second.metadata.name) == ("web-aaaaa", "web-bbbbb")
        assert names.asked == 3
        tg.cancel_scope.cancel()


async def test_a_name_taken_every_attempt_is_a_conflict_after_eight(store: EtcdStore) -> None:
    names = Repeating("aaaaa")
    async with anyio.create_task_group() as tg:
        registry = await _registry(store, names, "1.37", tg)
        await registry.create(_pod())
        with pytest.raises(AlreadyExists) as e:
            await registry.create(_pod())
        assert str(e.value) == (
            'pods "web-aaaaa" already exists, the server was not able to generate a unique '
            "name for the object"
        )
        assert names.asked == 1 + GENERATE_NAME_ATTEMPTS
        tg.cancel_scope.cancel()


async def test_before_retry_generate_name_a_taken_name_is_a_conflict_at_once(
    store: EtcdStore,
) -> None:
    """1.30: the gate is alpha (off); upstream answers the first collision."""
    assert not FeatureGates.for_version(Version.parse("1.30")).enabled(RETRY_GENERATE_NAME)
    names = Repeating("aaaaa", "aaaaa", "bbbbb")
    async with anyio.create_task_group() as tg:
        registry = await _registry(store, names, "1.30", tg)
        await registry.create(_pod())
        with pytest.raises(AlreadyExists, match="not able to generate a unique name"):
            await registry.create(_pod())
        assert names.asked == 2
        tg.cancel_scope.cancel()


async def test_a_generated_name_is_the_base_cut_to_58_and_five_safe_characters(
    kemu_cluster: Cluster,
) -> None:
    async with Client(kemu_cluster.server) as client:
        pod = make_pod("").obj()
        pod.metadata.generate_name = "g" * 70
        created = await client.create(pod)
    assert re.fullmatch(
        "g" * MAX_GENERATED_NAME_LENGTH + "[bcdfghjklmnpqrstvwxz2456789]{5}",
        created.metadata.name,
    ), created.metadata.name


async def test_a_pods_token_volume_is_named_alike_by_two_apiservers_on_the_virtual_clock(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    """The ServiceAccount plugin's kube-api-access-xxxxx volume comes from the apiserver's
    name generator, keyed by the pod: two fresh clusters' SeededNames give a pod one name."""
    volumes: list[list[str]] = []
    for _ in range(2):
        cluster = kemu_cluster_factory()
        cluster.start_etcd()
        store = EtcdStore([cluster.etcd.url])
        try:
            async with anyio.create_task_group() as tg:
                registry = await _registry(store, SeededNames(), "1.37", tg, disabled=())
                account = types_pb2.ServiceAccount(
                    metadata=types_pb2.ObjectMeta(name="default", namespace="default")
                )
                await registry.create(account)
                names = []
                for name in ("a", "b"):
                    pod = await registry.create(make_pod(name).obj())
                    assert isinstance(pod, types_pb2.Pod)
                    names.append(pod.spec.volumes[0].name)
                volumes.append(names)
                tg.cancel_scope.cancel()
        finally:
            await store.close()
    assert volumes[0] == volumes[1]
    assert volumes[0][0] != volumes[0][1]
    assert all(
        re.fullmatch("kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", v) for v in volumes[0]
    )


async def test_concurrent_creates_of_one_base_commit_in_the_order_of_their_names(
    store: EtcdStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A controller's batch of identical pods (slowStartBatch) is created concurrently: on
    the virtual clock the n-th name of the base is the n-th object written, so that every
    watcher (the scheduler's queue) gets them in one order each run. The store here writes
    the earlier creates later (each waits longer than the next): the names would otherwise
    go in serving order and the objects in the reverse."""
    count = 6
    created: list[types_pb2.Pod] = []
    async with anyio.create_task_group() as tg:
        registry = await _registry(store, SeededNames(), "1.37", tg)
        written = registry.store.create
        calls = 0

        async def later_first(kind: Any, obj: Any) -> bytes:
            nonlocal calls
            calls += 1
            await anyio.sleep(0.04 * (count - calls))
            return await written(kind, obj)

        monkeypatch.setattr(registry.store, "create", later_first)

        async def create() -> None:
            pod = await registry.create(_pod())
            assert isinstance(pod, types_pb2.Pod)
            created.append(pod)

        async with anyio.create_task_group() as creates:
            for _ in range(count):
                creates.start_soon(create)
        tg.cancel_scope.cancel()
    by_write = [
        p.metadata.name for p in sorted(created, key=lambda p: int(p.metadata.resource_version))
    ]
    expected = SeededNames()
    names = [expected.generate("pods", "default", "web-", lambda _: False) for _ in range(count)]
    assert by_write == names
