"""The watch cache on a stand-in store: a progress notification that comes ahead of changes
etcd has not sent yet (etcd before 3.5.8, on a watch of a member catching up:
etcd-io/etcd#15220) does not make the cache drop those changes, nor crash on the deletion of
an object whose creation it would have dropped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from apiserver.storage.etcd import Progress, RangeResult, StorageEvent
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.machinery.kinds import kind_for_resource
from kemu.testing.fake_time import wait_until

KEY = "/registry/replicasets/ns/big-8"


class _Store:
    """current_revision, range and watch, as EtcdStore: a watch that sends a progress
    notification at 10, then the creation (5) and the deletion (6) it was ahead of."""

    def __init__(self) -> None:
        self.watched_from: list[int] = []
        self.done = anyio.Event()
        self.progressed = anyio.Event()

    async def current_revision(self) -> int:
        return 1

    async def range(self, prefix: str, **_: Any) -> RangeResult:
        return RangeResult([], 1, False)

    async def watch(
        self, prefix: str, start_revision: int, progress_requests: Any = None
    ) -> AsyncIterator[list[StorageEvent] | Progress]:
        self.watched_from.append(start_revision)
        rs = types_pb2.ReplicaSet(metadata=types_pb2.ObjectMeta(name="big-8", namespace="ns"))
        value = rs.SerializeToString()
        yield Progress(10)
        await self.progressed.wait()  # a client starts watching here
        yield [StorageEvent("PUT", KEY, value, None, 5)]
        yield [StorageEvent("DELETE", KEY, None, value, 6)]
        self.done.set()
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_changes_sent_after_a_progress_notification_ahead_of_them_are_applied() -> None:
    store = _Store()
    cache = WatchCache(store, kind_for_resource("replicasets"))  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        await wait_until(lambda: cache.revision >= 10)
        # Watchers that start after the early notification: one from a revision, one from now.
        _, from_rv, _ = cache.watch(namespace="", filter=None, resource_version=1)
        _, from_now, _ = cache.watch(namespace="", filter=None, resource_version=None)
        store.progressed.set()
        with anyio.fail_after(5):
            await store.done.wait()
        tg.cancel_scope.cancel()
    assert cache.get(KEY) is None
    assert [(e.type, e.revision) for e in cache._history] == [("ADDED", 5), ("DELETED", 6)]
    assert cache.revision == 10
    assert store.watched_from == [2]
    for stream in (from_rv, from_now):
        frames = [stream.receive_nowait() for _ in range(2)]
        assert len(frames) == 2  # the creation and the deletion, not skipped as older
