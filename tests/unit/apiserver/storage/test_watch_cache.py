"""The watch cache on a stand-in store: a progress notification that comes ahead of changes
etcd has not sent yet (etcd before 3.5.8, on a watch of a member catching up:
etcd-io/etcd#15220) does not make the cache drop those changes, nor crash on the deletion of
an object whose creation it would have dropped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest

from apiserver.storage import watch_cache
from apiserver.storage.etcd import Progress, RangeResult, StorageEvent
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Expired, InternalError, Unavailable
from kemu.machinery.kinds import kind_for_resource
from kemu.testing.fake_time import wait_until

KEY = "/registry/replicasets/ns/big-8"
BIG_8 = types_pb2.ReplicaSet(
    metadata=types_pb2.ObjectMeta(name="big-8", namespace="ns")
).SerializeToString()


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
        yield Progress(10)
        await self.progressed.wait()  # a client starts watching here
        yield [StorageEvent("PUT", KEY, BIG_8, None, 5)]
        yield [StorageEvent("DELETE", KEY, None, BIG_8, 6)]
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


class _BrokenOnce(_Store):
    """A watch that gRPC breaks after one change (INTERNAL "Internal error from Core", seen
    while an etcd member lost its leader), then one that serves the next change."""

    async def watch(
        self, prefix: str, start_revision: int, progress_requests: Any = None
    ) -> AsyncIterator[list[StorageEvent] | Progress]:
        self.watched_from.append(start_revision)
        if len(self.watched_from) == 1:
            yield [StorageEvent("PUT", KEY, BIG_8, None, 5)]
            raise InternalError("etcd watch failed: INTERNAL: Internal error from Core")
        yield [StorageEvent("DELETE", KEY, None, BIG_8, 6)]
        self.done.set()
        await anyio.sleep_forever()


@pytest.mark.anyio
async def test_a_watch_grpc_breaks_is_watched_again_from_the_next_revision() -> None:
    store = _BrokenOnce()
    cache = WatchCache(store, kind_for_resource("replicasets"))  # type: ignore[arg-type]
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        with anyio.fail_after(5):
            await store.done.wait()
        tg.cancel_scope.cancel()
    assert store.watched_from == [2, 6]
    assert [(e.type, e.revision) for e in cache._history] == [("ADDED", 5), ("DELETED", 6)]
    assert cache.get(KEY) is None


class _EmptyStore:
    """An etcd with no object of the resource, at revision 1."""

    async def current_revision(self) -> int:
        return 1

    async def range(self, prefix: str, **_: Any) -> RangeResult:
        return RangeResult([], 1, False)


_RS = types_pb2.ReplicaSet(
    metadata=types_pb2.ObjectMeta(name="rs", namespace="ns")
).SerializeToString()


async def _history_cache(clock: FakeClock, **kwargs: Any) -> WatchCache:
    cache = WatchCache(
        _EmptyStore(),  # type: ignore[arg-type]
        kind_for_resource("replicasets"),
        clock=clock,
        **kwargs,
    )
    await cache._initialize()
    return cache


def _put(cache: WatchCache, revision: int) -> None:
    cache._apply(
        [StorageEvent("PUT", f"/registry/replicasets/ns/rs-{revision}", _RS, None, revision)]
    )


def _resumable_from(cache: WatchCache, revision: int) -> bool:
    try:
        _, stream, w = cache.watch(namespace="", filter=None, resource_version=revision)
    except Expired:
        return False
    cache.stop(w)
    stream.close()
    return True


def test_the_history_bounds_are_upstreams() -> None:
    assert (watch_cache.LOWER_BOUND_CAPACITY, watch_cache.UPPER_BOUND_CAPACITY) == (100, 102_400)
    assert watch_cache.EVENT_FRESH_DURATION == 75.0


@pytest.mark.anyio
async def test_the_history_doubles_while_its_oldest_event_is_fresh_up_to_the_upper_bound() -> None:
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock, lower_bound_capacity=4, upper_bound_capacity=16)
    assert cache.capacity == 4
    for rv in range(2, 6):  # 4 events fill it
        _put(cache, rv)
    assert (cache.capacity, len(cache._history)) == (4, 4)
    clock.advance(
        74.0 - clock.monotonic()
    )  # the oldest is still fresh: grow instead of forgetting it
    _put(cache, 6)
    assert (cache.capacity, len(cache._history)) == (8, 5)
    assert _resumable_from(cache, 1)  # nothing was forgotten since the cache's start
    for rv in range(7, 30):
        _put(cache, rv)
    # 16 at most: the oldest are forgotten past it, and a watch from before them is Gone.
    assert (cache.capacity, len(cache._history)) == (16, 16)
    assert [e.revision for e in cache._history] == list(range(14, 30))
    assert _resumable_from(cache, 13)
    assert not _resumable_from(cache, 12)


@pytest.mark.anyio
async def test_a_full_history_of_stale_events_is_not_grown_and_halves_when_its_newest_quarter_is_stale() -> (
    None
):
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock, lower_bound_capacity=4, upper_bound_capacity=64)
    for rv in range(2, 34):  # 32 events at t=0: capacity 32, full
        _put(cache, rv)
    assert (cache.capacity, len(cache._history)) == (32, 32)
    clock.advance(75.5 - clock.monotonic())  # every event held is older than 75 s
    _put(cache, 34)
    # Not grown; the newest quarter is stale too, so halved: the newest 16 kept, then the
    # oldest of those dropped to make room.
    assert (cache.capacity, len(cache._history)) == (16, 16)
    assert [e.revision for e in cache._history] == list(range(19, 35))
    assert not _resumable_from(cache, 17)
    assert _resumable_from(cache, 18)
    for rv in range(35, 39):  # 5 fresh events now: the newest quarter (4) is fresh
        _put(cache, rv)
    assert cache.capacity == 8  # halved once more at 35 (its quarter, 2, was stale), not at 36+
    assert [e.revision for e in cache._history][-5:] == list(range(34, 39))
    for rv in range(39, 45):  # a quiet resource: an event every 80 s
        clock.advance(80)
        _put(cache, rv)
    assert cache.capacity == 4  # never below the lower bound
    assert [e.revision for e in cache._history] == list(range(41, 45))
    clock.advance(1)
    for rv in range(45, 48):  # a burst again: the oldest events held are still stale
        _put(cache, rv)
    assert (cache.capacity, [e.revision for e in cache._history]) == (4, list(range(44, 48)))
    _put(cache, 48)  # now every event held is fresh: grow
    assert (cache.capacity, len(cache._history)) == (8, 5)


@pytest.mark.anyio
async def test_a_burst_larger_than_the_old_fixed_history_stays_resumable() -> None:
    """All at once (a 50,000-pod burst's creates and binds within 75 s): the history grows
    with the burst, so a watcher that fell behind resumes instead of relisting."""
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock)
    for rv in range(2, 30_002):
        clock.advance(0.001)
        _put(cache, rv)
    assert cache.capacity == 51_200
    assert len(cache._history) == 30_000
    assert _resumable_from(cache, 1)


def test_bad_bounds_are_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="lower_bound_capacity"):
        WatchCache(_EmptyStore(), kind_for_resource("pods"), lower_bound_capacity=0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="upper_bound_capacity"):
        WatchCache(
            _EmptyStore(),  # type: ignore[arg-type]
            kind_for_resource("pods"),
            lower_bound_capacity=8,
            upper_bound_capacity=4,
        )


@pytest.mark.anyio
async def test_a_watch_from_a_revision_in_the_history_gets_exactly_the_later_events() -> None:
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock)
    for rv in range(2, 1002):
        _put(cache, rv)
    for since, expected in ((1, 1000), (500, 501), (1000, 1), (1001, 0)):
        initial, stream, w = cache.watch(namespace="", filter=None, resource_version=since)
        assert len(initial) == expected, since
        assert initial == [e.frame("ADDED") for e in cache._history if e.revision > since]
        cache.stop(w)
        stream.close()


@pytest.mark.anyio
async def test_end_watches_ends_every_stream_after_its_queued_frames_and_refuses_new_ones() -> None:
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock)
    _, first, _ = cache.watch(namespace="", filter=None, resource_version=None)
    _, second, _ = cache.watch(namespace="ns", filter=None, resource_version=1)
    _put(cache, 2)
    assert cache.watcher_count == 2
    cache.end_watches()
    assert cache.watcher_count == 0
    for stream in (first, second):
        assert stream.receive_nowait()  # the change queued before the end is still sent
        with pytest.raises(anyio.EndOfStream):
            stream.receive_nowait()
    with pytest.raises(Unavailable, match="shutting down"):
        cache.watch(namespace="", filter=None, resource_version=None)


@pytest.mark.anyio
async def test_close_watches_ends_every_stream_and_serves_the_watches_that_follow() -> None:
    clock = FakeClock(monotonic=0.0)
    cache = await _history_cache(clock)
    _, first, _ = cache.watch(namespace="", filter=None, resource_version=None)
    _put(cache, 2)
    assert cache.close_watches() == 1
    assert first.receive_nowait()  # the change queued before the drop is still sent
    with pytest.raises(anyio.EndOfStream):
        first.receive_nowait()
    _, again, _ = cache.watch(namespace="", filter=None, resource_version=2)
    assert cache.watcher_count == 1
    _put(cache, 3)
    assert again.receive_nowait()


class _Recorder:
    """A CacheObserver that records what it is told (and fails once, on the creation)."""

    def __init__(self, fail_on: str = "") -> None:
        self.seen: list[tuple[str, str]] = []
        self._fail_on = fail_on

    def replaced(self, objects: Any) -> None:
        self.seen.append(("REPLACED", ",".join(o.metadata.name for o in objects)))

    def changed(self, event_type: str, obj: Any, prev: Any) -> None:
        self.seen.append((event_type, obj.metadata.name))
        if event_type == self._fail_on:
            raise RuntimeError("an observer's bug")


@pytest.mark.anyio
async def test_observers_are_told_of_the_start_and_of_each_change_even_after_one_fails() -> None:
    store = _Store()
    cache = WatchCache(store, kind_for_resource("replicasets"))  # type: ignore[arg-type]
    early, failing = _Recorder(), _Recorder(fail_on="ADDED")
    cache.observe(early)
    cache.observe(failing)
    async with anyio.create_task_group() as tg:
        await tg.start(cache.run)
        late = _Recorder()
        cache.observe(late)  # the cache is ready: told what it holds at once
        store.progressed.set()
        with anyio.fail_after(5):
            await store.done.wait()
        await wait_until(lambda: len(late.seen) == 3)
        tg.cancel_scope.cancel()
    expected = [("REPLACED", ""), ("ADDED", "big-8"), ("DELETED", "big-8")]
    assert early.seen == failing.seen == late.seen == expected
