"""The gRPC edge's watch stream (Watches.stream) on a watch cache fed by hand: a stream
that is never idle still gets its periodic bookmark when it is due (upstream's cacher sends
bookmarks on a busy watch too)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from prometheus_client import CollectorRegistry

from apiserver.clock.activity import Activity
from apiserver.endpoints.metrics import Metrics
from apiserver.endpoints.watches import Watches
from apiserver.storage.etcd import RangeResult, StorageEvent
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import RealClock
from kemu.machinery.kinds import kind_for_resource

pytestmark = pytest.mark.anyio


class _EmptyStore:
    async def current_revision(self) -> int:
        return 1

    async def range(self, prefix: str, **_: Any) -> RangeResult:
        return RangeResult([], 1, False)


def _put(revision: int) -> StorageEvent:
    pod = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name=f"p{revision}", namespace="ns"))
    return StorageEvent(
        "PUT", f"/registry/pods/ns/p{revision}", pod.SerializeToString(), None, revision
    )


class _Context:
    """A gRPC servicer context with no metadata (the watch reads none of the rest)."""

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return ()


async def _types_seen(*, bookmarks: bool, seconds: float, events: int) -> tuple[list[str], int]:
    """The event types a watch streamed while a writer changed a pod every 2 ms for at least
    `seconds` (wall time: the bookmarks' period) and at least `events` changes (however slowly
    a loaded host runs it), and how many changes it wrote."""
    cache = WatchCache(_EmptyStore(), kind_for_resource("pods"))  # type: ignore[arg-type]
    await cache._initialize()
    watches = Watches(
        _EmptyStore(),  # type: ignore[arg-type]
        {"pods": cache},
        Metrics(CollectorRegistry()),
        Activity(),
        RealClock(),
        bookmark_frequency=0.1,
    )
    req = api_pb2.WatchRequest(resource="pods", allow_watch_bookmarks=bookmarks)
    seen: list[str] = []
    stream = watches.stream(req, _Context())  # type: ignore[arg-type]

    written = 0

    async def busy_writer() -> None:
        nonlocal written
        deadline = anyio.current_time() + seconds
        while written < events or anyio.current_time() < deadline:
            # a change every 2 ms: a frame is buffered at every turn
            cache._apply([_put(written + 2)])
            written += 1
            await anyio.sleep(0.002)
        cache.end_watches()

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy_writer)
        async for data in stream:
            seen.extend(e.type for e in api_pb2.WatchResponse.FromString(data).events)
            await anyio.sleep(0.003)  # sending takes a while: the writer gets ahead
    return seen, written


async def test_a_busy_watch_gets_its_bookmarks_when_they_are_due() -> None:
    seen, written = await _types_seen(bookmarks=True, seconds=0.6, events=50)
    assert seen.count("ADDED") == written
    assert seen.count("BOOKMARK") >= 2  # every 0.1 s, though the stream never went idle


async def test_a_busy_watch_without_bookmarks_gets_every_event_and_no_bookmark() -> None:
    seen, written = await _types_seen(bookmarks=False, seconds=0.3, events=25)
    assert "BOOKMARK" not in seen
    assert seen.count("ADDED") == written
