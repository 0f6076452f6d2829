"""Watches, the one watch path of both edges (`open_watch`), and the gRPC edge's watch stream
(`stream`): the watch cache's frames, serialized once and shared by every watcher, batched into
WatchResponses, with upstream's periodic bookmarks (k8s.io/apiserver/pkg/storage/cacher:
cacheWatcher, bookmarkFrequency) and the watch-list protocol (sendInitialEvents)."""

from __future__ import annotations

import math
import time
from collections.abc import AsyncGenerator, Mapping
from typing import Final

import anyio
import grpc
from anyio.streams.memory import MemoryObjectReceiveStream

from apiserver.clock.activity import Activity
from apiserver.endpoints.calls import Context, abort, metadata_value
from apiserver.endpoints.inflight import watch_initialized
from apiserver.endpoints.lists import parse_rv
from apiserver.endpoints.metrics import Metrics
from apiserver.settings import DEFAULT_BOOKMARK_FREQUENCY
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache, Watcher
from kemu import wire
from kemu.api.v1 import api_pb2
from kemu.component.clock import Clock
from kemu.component.virtual_clock import move_on_after
from kemu.machinery.errors import ApiError, Cause, Invalid
from kemu.machinery.kinds import Kind, kind_for_resource
from kemu.machinery.selection import RequestFilter
from kemu.machinery.virtual_time import APISERVER_KEY, CLOCK_IDENTITY_KEY

_WATCH_BATCH: Final = 500  # events per WatchResponse at most
_WATCH_BUSY: Final = 0.02  # a watch that sent less than this ago is busy...
_WATCH_LINGER: Final = 0.005  # ...and waits this long to batch events
BOOKMARK_SLACK: Final = 1.0
"""How late a periodic bookmark may go: upstream's cacher (storage/cacher/cacher.go) keeps its
watchers' bookmark times in one-second buckets (watcherBookmarkTimeBuckets) and dispatches a
bucket when its about-a-second timer (wait.Jitter(time.Second, 0.25)) fires. On the virtual
clock it is the timer's slack: the event-driven clock serves many watches' bookmarks with one
jump rather than a jump each."""


class Watches:
    def __init__(
        self,
        store: EtcdStore,
        caches: Mapping[str, WatchCache],
        metrics: Metrics,
        activity: Activity,
        clock: Clock,
        bookmark_frequency: float = DEFAULT_BOOKMARK_FREQUENCY,
    ) -> None:
        self._store = store
        self._caches = caches
        self._metrics = metrics
        self._activity = activity
        self._clock = clock
        self.bookmark_frequency = bookmark_frequency

    async def stream(
        self, req: api_pb2.WatchRequest, context: Context[bytes]
    ) -> AsyncGenerator[bytes, None]:
        """The gRPC edge's watch: WatchResponse bytes, the initial events in batches, then the
        events as they come (batched when the stream is busy) and the periodic bookmarks."""
        try:
            cache, initial, receive, watcher = await self.open_watch(req)
        except ApiError as e:
            self._metrics.requests.labels(
                "watch",
                req.resource,
                wire.STATUS_CODES.get(e.reason, grpc.StatusCode.INTERNAL).name,
            ).inc()
            await abort(context, e)
            return
        self._metrics.requests.labels("watch", req.resource, "OK").inc()
        sent = self._metrics.watch_events.labels(req.resource)
        bookmarks = req.allow_watch_bookmarks
        identity = metadata_value(context, CLOCK_IDENTITY_KEY)
        watcher.client = identity
        activity = self._activity
        if identity:
            # (which apiserver sends these events: a component counts them per incarnation)
            await context.send_initial_metadata(((APISERVER_KEY, activity.incarnation),))
        try:
            for i in range(0, len(initial), _WATCH_BATCH):
                chunk = initial[i : i + _WATCH_BATCH]
                activity.sent_events(identity, len(chunk))
                yield b"".join(chunk)
                sent.inc(len(chunk))
            watch_initialized()  # (priority and fairness releases the watch's seats)
            last_send = 0.0
            next_bookmark = self._clock.monotonic() + self.bookmark_frequency
            async with receive:
                while True:
                    frame = None
                    async with move_on_after(
                        self._clock,
                        max(next_bookmark - self._clock.monotonic(), 0) if bookmarks else math.inf,
                        slack=BOOKMARK_SLACK,
                    ):
                        try:
                            frame = await receive.receive()
                        except anyio.EndOfStream:
                            return
                    if frame is None:
                        # Nothing is buffered: upstream's periodic bookmark.
                        activity.sent_events(identity, 1)
                        yield cache.bookmark(watcher)
                        next_bookmark = self._clock.monotonic() + self.bookmark_frequency
                        continue
                    # (events taken from the buffer are being sent until handed over)
                    with activity.sending_events(identity) as batch_sent:
                        # A busy stream lingers a moment so that one message carries several
                        # events: per-message cost, not per-event cost, bounds fan-out (wall
                        # time: a transport matter).
                        if time.monotonic() - last_send < _WATCH_BUSY:
                            await anyio.sleep(_WATCH_LINGER)
                        batch = [frame]
                        while len(batch) < _WATCH_BATCH:
                            try:
                                batch.append(receive.receive_nowait())
                            except (anyio.WouldBlock, anyio.EndOfStream):
                                break
                        batch_sent.count = len(batch)
                    yield b"".join(batch)
                    last_send = time.monotonic()
                    sent.inc(len(batch))
        finally:
            cache.stop(watcher)

    async def open_watch(
        self, req: api_pb2.WatchRequest
    ) -> tuple[WatchCache, list[bytes], MemoryObjectReceiveStream[bytes], Watcher]:
        """Registers a watcher (the one watch path of both edges): its cache, the initial
        frames, the stream of later frames, and the handle to `cache.stop` when done."""
        kind = kind_for_resource(req.resource)
        flt = RequestFilter(req.resource, req.label_selector, req.field_selector)
        cache = self._caches[kind.resource]
        return (cache, *await self._start_watch(req, kind, cache, flt))

    async def _start_watch(
        self, req: api_pb2.WatchRequest, kind: Kind, cache: WatchCache, flt: RequestFilter
    ) -> tuple[list[bytes], MemoryObjectReceiveStream[bytes], Watcher]:
        """Registers the watcher: the legacy protocol (resourceVersion "", "0" or N) or, with
        sendInitialEvents, the watch-list protocol (upstream ValidateListOptions and the
        cacher's waitUntilWatchCacheFreshAndForceAllEvents)."""
        namespace = req.namespace if kind.namespaced else ""
        selection = None if flt.empty else flt
        rv = req.resource_version
        match = req.resource_version_match
        if req.HasField("send_initial_events"):
            causes = []
            if match != "NotOlderThan":
                causes.append(
                    Cause(
                        "resourceVersionMatch",
                        "Forbidden: sendInitialEvents requires setting resourceVersionMatch to "
                        "NotOlderThan",
                    )
                )
            if not req.allow_watch_bookmarks:
                causes.append(
                    Cause(
                        "allowWatchBookmarks",
                        "Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                    )
                )
            if causes:
                raise Invalid.from_causes("ListOptions.meta.k8s.io", causes)
            if rv == "":  # a consistent start: what etcd has now
                revision = await self._store.current_revision()
            else:
                revision = parse_rv(rv)
            await cache.wait_fresh(revision)
            if req.send_initial_events:
                initial, receive, watcher = cache.watch(
                    namespace=namespace, filter=selection, resource_version=None
                )
                initial.append(cache.bookmark_frame(watcher.after, initial_events_end=True))
                return initial, receive, watcher
            return cache.watch(
                namespace=namespace, filter=selection, resource_version=max(revision, 1)
            )
        if match:
            raise Invalid.from_causes(
                "ListOptions.meta.k8s.io",
                [
                    Cause(
                        "resourceVersionMatch",
                        "Forbidden: resourceVersionMatch is forbidden for watch unless "
                        "sendInitialEvents is provided",
                    )
                ],
            )
        since = None if rv in ("", "0") else parse_rv(rv)
        if since is not None and cache.ready:
            await cache.wait_fresh(since)  # a future resourceVersion: Timeout after 3 s
        return cache.watch(namespace=namespace, filter=selection, resource_version=since)
