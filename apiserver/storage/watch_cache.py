"""The watch cache: one etcd watch per resource serving every gRPC watcher (upstream's cacher).

The cache holds the current objects of one resource and a bounded history of changes, fed by a
single etcd watch. The history is sized as upstream's watchCache sizes its event window: it
starts at 100 events; when it is full and its oldest event is younger than the event freshness
duration (75 s) its capacity doubles, up to 100 * 1024 events; when it is full and the newest
quarter of it reaches back beyond that duration its capacity halves, down to 100. So a burst
keeps up to ~100,000 events resumable for 75 s, and a quiet resource keeps little.

Every change is decoded once and, per event type, serialized once; the same bytes go to every
watcher whose filter matches. Each watcher has a bounded buffer: a watcher too slow to drain it
is closed (its client resumes from the last resourceVersion it saw, or relists), so a slow
client never blocks the cache or other watchers.

Watchers whose field selector requires one value of the kind's trigger field (a pod's
spec.nodeName, a node's metadata.name: upstream's TriggerFunc of the pod and node storage,
pkg/registry/core/{pod,node}/storage/storage.go) are kept by that value, as the upstream
cacher's valueWatchers: a change is tested against the watchers of the values its object had
before and after it and against the others, not against every kubelet's watch.

Filtering follows the upstream cacher: an object that starts matching a watcher's selectors is
sent as ADDED, one that stops matching as DELETED, otherwise MODIFIED.

At start-up the cache reads the resource at an older revision (when etcd still has it) and
replays the changes since, so that clients of an apiserver that was restarted resume their
watches from the resourceVersion they last saw instead of relisting.
"""

from __future__ import annotations

import bisect
import itertools
import logging
from collections import deque
from collections.abc import Callable, Container, Iterable
from dataclasses import dataclass, field
from typing import Final, Protocol

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from google.protobuf.message import Message

from apiserver.storage import encoding
from apiserver.storage.etcd import EtcdStore, Progress, StorageEvent
from kemu.api.v1 import api_pb2
from kemu.component.clock import Clock, RealClock
from kemu.machinery.errors import Cause, Expired, Gone, InternalError, Timeout, Unavailable
from kemu.machinery.fields import Getter, getter
from kemu.machinery.kinds import INITIAL_EVENTS_END_ANNOTATION, Kind

logger = logging.getLogger(__name__)

# The history's capacity bounds and freshness (upstream's cacher: defaultLowerBoundCapacity,
# defaultUpperBoundCapacity, eventFreshDuration = the default bookmark frequency + 15 s).
LOWER_BOUND_CAPACITY: Final = 100
UPPER_BOUND_CAPACITY: Final = 100 * 1024
EVENT_FRESH_DURATION: Final = 75.0
DEFAULT_WATCHER_BUFFER: Final = 10_000  # events buffered per watcher before it is closed
REPLAY_REVISIONS: Final = 20_000  # how far back a restarted cache replays
FRESHNESS_POLL: Final = 0.1
"""How often a wait for a resourceVersion checks with etcd whether a quiet resource is fresh."""
LATE_CHANGE_LOG: Final = (
    "watch cache for %s: etcd sent the change at revision %d after the cache had moved to %d "
    "(%d so far, logged every 1000th)"
)
"""Logged when a change comes at or below the revision the cache was at: a watcher that
resumed past it never gets it (the chaos harness counts such lines as violations)."""
FRESHNESS_TIMEOUT: Final = 3.0  # how long a request waits for a resourceVersion (upstream 3 s)
TRIGGER_FIELDS: Final = {("", "Pod"): "spec.nodeName", ("", "Node"): "metadata.name"}
"""The field by whose value a kind's watchers are kept (by (group, kind); upstream's storage
TriggerFunc: pod.NodeNameTriggerFunc, node.NameTriggerFunc)."""


def too_large_resource_version(requested: int, current: int) -> Timeout:
    """Upstream's TooLargeResourceVersionError as the API reports it: Timeout (504), a
    ResourceVersionTooLarge cause; clients retry."""
    return Timeout(
        f"Timeout: Too large resource version: {requested}, current: {current}",
        [Cause("", "Too large resource version")],
    )


class ObjectFilter(Protocol):
    def matches(self, obj: Message) -> bool: ...

    def exact(self, field: str) -> str | None:
        """The one value the filter lets `field` have, if it requires one."""
        ...


class CacheObserver(Protocol):
    """An in-process consumer of the cache's changes (the Node authorizer's graph: upstream
    feeds it from shared informers), told synchronously as the cache applies them."""

    def replaced(self, objects: Iterable[Message]) -> None:
        """The cache holds these objects now, and nothing else (it started or relisted)."""
        ...

    def changed(self, event_type: str, obj: Message, prev: Message | None) -> None:
        """ADDED, MODIFIED (with the previous state) or DELETED (the last state)."""
        ...


@dataclass(slots=True)
class CachedObject:
    """One object as served: decoded (resourceVersion set) and its Object envelope bytes,
    which hold the bytes etcd stores at [value_start, value_end) (none for a DELETED event's
    last state, re-encoded at the deletion's revision: value_end 0)."""

    key: str
    obj: Message
    revision: int
    envelope: bytes
    value_start: int = 0
    value_end: int = 0

    def stored_value(self) -> bytes | None:
        """The object's bytes as etcd holds them (resourceVersion empty), or None: what a
        write compares its own with, and a copy to mutate parses (cheaper than copying
        `obj`, which upb does by serializing it and parsing that)."""
        return self.envelope[self.value_start : self.value_end] if self.value_end else None


@dataclass(slots=True)
class CacheEvent:
    type: str  # ADDED, MODIFIED, DELETED (storage view, before per-watcher filtering)
    key: str
    cur: CachedObject  # the object after the change (its last state for DELETED)
    prev: CachedObject | None
    revision: int
    record_time: float = 0.0  # when the cache received it (the history's sizing)
    _frames: dict[str, bytes] = field(default_factory=dict)

    def frame(self, event_type: str) -> bytes:
        """The framed WatchEvent for `event_type`, serialized at most once per type."""
        data = self._frames.get(event_type)
        if data is None:
            data = encoding.watch_frame(event_type, self.cur.envelope)
            self._frames[event_type] = data
        return data


def _revision(ev: CacheEvent) -> int:
    return ev.revision


@dataclass(eq=False)
class Watcher:
    namespace: str
    filter: ObjectFilter | None
    after: int  # deliver only events with a higher revision
    send: MemoryObjectSendStream[bytes]
    closed: bool = False
    trigger: str | None = None
    """The value of the cache's trigger field this watcher's filter requires (then it is
    kept by it), or None."""
    client: str = ""
    """The clock session identity of the process that watches ("": untagged), for the
    event-driven clock (`buffered`)."""

    def _matches(self, co: CachedObject | None) -> bool:
        if co is None:
            return False
        # (the namespace is the key's second-last segment: /registry/pods/NS/NAME, a custom
        # resource's /registry/GROUP/PLURAL/NS/NAME)
        if self.namespace and co.key.rsplit("/", 2)[-2] != self.namespace:
            return False
        return self.filter is None or self.filter.matches(co.obj)

    def event_type(self, ev: CacheEvent) -> str | None:
        """What this watcher sees of `ev`, or None."""
        if ev.type == "DELETED":
            return "DELETED" if self._matches(ev.cur) else None
        cur = self._matches(ev.cur)
        prev = self._matches(ev.prev)
        if cur and prev:
            return "MODIFIED"
        if cur:
            return "ADDED"
        if prev:
            return "DELETED"
        return None

    def initial(self, co: CachedObject) -> bytes | None:
        return encoding.watch_frame("ADDED", co.envelope) if self._matches(co) else None


class WatchCache:
    def __init__(
        self,
        store: EtcdStore,
        kind: Kind,
        *,
        lower_bound_capacity: int = LOWER_BOUND_CAPACITY,
        upper_bound_capacity: int = UPPER_BOUND_CAPACITY,
        event_fresh_duration: float = EVENT_FRESH_DURATION,
        watcher_buffer: int = DEFAULT_WATCHER_BUFFER,
        on_watchers_changed: Callable[[str, int], None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        """The history's capacity stays within [lower_bound_capacity, upper_bound_capacity]
        (see the module's docstring); `clock` stamps the events' record times."""
        if lower_bound_capacity < 1:
            raise ValueError(f"lower_bound_capacity must be >= 1, not {lower_bound_capacity}")
        if upper_bound_capacity < lower_bound_capacity:
            raise ValueError(
                f"upper_bound_capacity ({upper_bound_capacity}) must be >= "
                f"lower_bound_capacity ({lower_bound_capacity})"
            )
        self._store = store
        self.kind = kind
        self.prefix = kind.storage_prefix
        self._field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        self._lower_bound_capacity = lower_bound_capacity
        self._upper_bound_capacity = upper_bound_capacity
        self._event_fresh_duration = event_fresh_duration
        self._clock = clock or RealClock()
        self.capacity = lower_bound_capacity
        """How many events the history holds at most now (it moves between the bounds)."""
        self._watcher_buffer = watcher_buffer
        self._on_watchers_changed = on_watchers_changed
        self._objects: dict[str, CachedObject] = {}
        self._history: deque[CacheEvent] = deque()
        # A watcher may resume from any revision >= _history_start.
        self._history_start = 0
        self.revision = 0
        # The revision of the last change etcd sent (self.revision may be ahead of it: a
        # progress notification, or etcd's word that nothing under the prefix changed since):
        # where a broken watch resumes, and below which a change is a repeat.
        self._event_revision = 0
        # Changes etcd sent at or below self.revision: none, unless a progress notification
        # came ahead of them (what EtcdStore.watch and _confirm_quiet rule out); applied, not
        # dropped, and logged, since a watcher that resumed past one never gets it.
        self._late_events = 0
        self._watchers: set[Watcher] = set()
        # The watchers by the trigger value their filter requires, and the rest.
        trigger = TRIGGER_FIELDS.get((kind.group, kind.kind)) if not kind.custom else None
        self._trigger_field = trigger
        self._trigger_value: Getter | None = getter(kind.resource, trigger) if trigger else None
        self._by_trigger: dict[str, set[Watcher]] = {}
        self._unindexed: set[Watcher] = set()
        self._observers: list[CacheObserver] = []
        self._watches_ended = False
        self._ready = anyio.Event()
        # Set (and dropped) when the revision moves; made only while someone waits for it
        # (wait_fresh), not for every batch of events.
        self._progress: anyio.Event | None = None
        # One freshness check of a quiet resource against etcd at a time (wait_fresh).
        self._confirming = anyio.Lock()

    # ------------------------------------------------------------ state

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    def observe(self, observer: CacheObserver) -> None:
        """Tells `observer` of every change from now on, and of the objects held now when
        the cache is ready (else once it is)."""
        self._observers.append(observer)
        if self.ready:
            observer.replaced(co.obj for co in self._objects.values())

    def _decode(self, key: str, value: bytes, revision: int) -> CachedObject:
        data = encoding.with_resource_version(value, revision)
        obj = self.kind.message.FromString(data)
        envelope = encoding.envelope(self._field, data)
        start = len(envelope) - len(data)  # (the envelope's tag and length come first)
        return CachedObject(key, obj, revision, envelope, start, start + len(value))

    async def wait_fresh(self, revision: int, timeout: float = FRESHNESS_TIMEOUT) -> bool:  # noqa: ASYNC109
        """Waits until the cache has reached `revision` (upstream's waitUntilFreshAndBlock): a
        resource that does not change is brought to etcd's revision once etcd shows that
        nothing under its prefix changed since the last change the watch sent
        (`_confirm_quiet`). True once fresh; after `timeout`, False if etcd has reached
        `revision` (a list then reads etcd; a watch may start, every later event reaches it in
        order), else Timeout "Too large resource version"."""
        with anyio.move_on_after(timeout):
            while not (self.ready and self.revision >= revision):
                if self.ready:
                    await self._confirm_quiet(revision)
                    if self.revision >= revision:
                        break
                with anyio.move_on_after(FRESHNESS_POLL):
                    if self._progress is None:
                        self._progress = anyio.Event()
                    await self._progress.wait()
            return True
        if revision <= await self._store.current_revision():
            return False
        raise too_large_resource_version(revision, self.revision)

    async def _confirm_quiet(self, revision: int) -> None:
        """Moves the cache to etcd's current revision if nothing under its prefix changed
        after the last change its watch sent: no key written since and as many keys as the
        cache holds. Every change up to etcd's revision is then applied, so a bookmark or a
        list at it hides nothing. (etcd's answer to a progress request would say so sooner,
        but before 3.5.8 it can come ahead of changes not sent yet: see EtcdStore.watch.)
        One check at a time; a waiter that finds the cache fresh after its turn asks nothing."""
        async with self._confirming:
            seen, held = self._event_revision, len(self._objects)
            if self.revision >= revision or seen == 0:  # fresh, or relisting after a Gone
                return
            try:
                writes = await self._store.writes_since(self.prefix, seen)
            except (Unavailable, InternalError) as e:
                logger.debug(
                    "watch cache for %s: freshness check failed: %s", self.kind.resource, e
                )
                return
            if writes.written_after == 0 and writes.keys == held:
                self._advance(writes.revision)

    def _advance(self, revision: int) -> None:
        """etcd has sent every change of this resource up to `revision`."""
        if revision > self.revision:
            self.revision = revision
            self._moved()

    def _moved(self) -> None:
        if self._progress is not None:
            self._progress.set()
            self._progress = None

    def bookmark_frame(self, revision: int, *, initial_events_end: bool = False) -> bytes:
        """A BOOKMARK event: an object of the kind with only metadata.resourceVersion (and
        the initial-events-end annotation that closes the initial events of a watch list)."""
        obj = self.kind.message()
        meta = obj.metadata  # type: ignore[attr-defined]
        meta.resource_version = str(revision)
        if initial_events_end:
            meta.annotations[INITIAL_EVENTS_END_ANNOTATION] = "true"
        return encoding.watch_frame(
            "BOOKMARK", encoding.envelope(self._field, obj.SerializeToString())
        )

    def bookmark(self, w: Watcher) -> bytes:
        """A periodic BOOKMARK for `w` while nothing is queued for it: every change up to the
        cache's revision has been sent to it (dispatch is synchronous), and every change up
        to the revision it started from was seen by its client before (a watch from a
        revision etcd has and this cache has not reached), so the later of the two."""
        return self.bookmark_frame(max(self.revision, w.after))

    def objects(self) -> Iterable[CachedObject]:
        return self._objects.values()

    def count(self) -> int:
        return len(self._objects)

    def get(self, key: str) -> CachedObject | None:
        return self._objects.get(key)

    # ------------------------------------------------------------ feeding

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Keeps the cache in step with etcd until cancelled."""
        started = False
        delay = 0.1
        while True:
            try:
                if not started or self.revision == 0:
                    await self._initialize()
                if not started:
                    started = True
                    task_status.started()
                async for batch in self._store.watch(self.prefix, self._event_revision + 1):
                    if isinstance(batch, Progress):
                        self._advance(batch.revision)
                    else:
                        self._apply(batch)
                    delay = 0.1
            except Gone as e:
                logger.warning(
                    "watch cache for %s fell behind compaction, relisting: %s",
                    self.kind.resource,
                    e,
                )
                self._reset()
            except (Unavailable, InternalError) as e:
                # Upstream's reflector lists and watches again after any error but "too old"
                # (client-go tools/cache/reflector.go, ListAndWatch under BackoffUntil): etcd
                # unreachable, and also a stream gRPC itself broke (INTERNAL "Internal error
                # from Core" while a member lost its leader, CI run of 8eb3744), must not end
                # the apiserver. Once it stops, etcd going away too (make run's Ctrl-C) is
                # expected.
                logger.log(
                    logging.DEBUG if self._watches_ended else logging.WARNING,
                    "watch cache for %s lost etcd (%s); retrying in %.1fs",
                    self.kind.resource,
                    e,
                    delay,
                )
                await anyio.sleep(delay)
                delay = min(delay * 2, 5.0)

    async def _initialize(self) -> None:
        current = await self._store.current_revision()
        start = max(1, current - REPLAY_REVISIONS)
        try:
            objects = await self._read_all(start)
        except Gone:
            start = current
            objects = await self._read_all(start)
        self._objects = objects
        for observer in self._observers:
            observer.replaced(co.obj for co in objects.values())
        self._history.clear()
        self._history_start = start
        self.revision = start
        self._event_revision = start
        self._ready.set()
        self._moved()
        logger.info(
            "watch cache for %s holds %d objects at revision %d (etcd at %d)",
            self.kind.resource,
            len(objects),
            start,
            current,
        )

    async def _read_all(self, revision: int) -> dict[str, CachedObject]:
        objects: dict[str, CachedObject] = {}
        after = ""
        while True:
            page = await self._store.range(
                self.prefix, revision=revision, limit=1000, start_after=after
            )
            for kv in page.kvs:
                objects[kv.key] = self._decode(kv.key, kv.value, kv.mod_revision)
            if not page.more or not page.kvs:
                return objects
            after = page.kvs[-1].key

    def compacted(self, revision: int) -> None:
        """etcd history up to `revision` is gone: watchers can no longer resume from before it
        (they get Gone and relist, as upstream's cache window)."""
        while self._history and self._history[0].revision <= revision:
            self._history.popleft()
        self._history_start = max(self._history_start, revision)

    def _reset(self) -> None:
        """Forgets everything; watchers are closed and relist."""
        for w in list(self._watchers):
            self._close(w)
        self._objects = {}
        self._history.clear()
        self.revision = 0
        self._event_revision = 0

    def _apply(self, batch: list[StorageEvent]) -> None:
        for sev in batch:
            if sev.revision <= self._event_revision:
                continue  # a repeat (a resumed watch)
            if sev.revision <= self.revision:
                self._late_events += 1
            if sev.revision <= self.revision and self._late_events % 1000 == 1:
                logger.warning(
                    LATE_CHANGE_LOG,
                    self.kind.resource,
                    sev.revision,
                    self.revision,
                    self._late_events,
                )
            self._event_revision = sev.revision
            prev = self._objects.get(sev.key)
            if sev.type == "PUT":
                assert sev.value is not None
                cur = self._decode(sev.key, sev.value, sev.revision)
                self._objects[sev.key] = cur
                ev = CacheEvent("MODIFIED" if prev else "ADDED", sev.key, cur, prev, sev.revision)
            else:
                if prev is None:
                    if sev.prev is None:
                        continue
                    prev = self._decode(sev.key, sev.prev, sev.revision)
                self._objects.pop(sev.key, None)
                # A DELETED event carries the last state at the deletion's revision.
                last = self._restamp(prev, sev.revision)
                ev = CacheEvent("DELETED", sev.key, last, prev, sev.revision)
            self.revision = max(self.revision, sev.revision)
            self._record(ev)
            self._dispatch(ev)
            for observer in self._observers:
                try:
                    observer.changed(ev.type, ev.cur.obj, ev.prev.obj if ev.prev else None)
                except Exception:  # a bug of the observer's: the cache and its watchers go on
                    logger.exception("watch cache for %s: an observer failed", self.kind.resource)
        self._moved()

    def _record(self, ev: CacheEvent) -> None:
        """Appends `ev` to the history, resizing it first and dropping its oldest event when
        full (upstream's updateCache and resizeCacheLocked)."""
        now = self._clock.monotonic()
        ev.record_time = now
        history = self._history
        if len(history) >= self.capacity:
            if now - history[0].record_time < self._event_fresh_duration:
                # Every event held is fresh: make room rather than forget one.
                self.capacity = min(self.capacity * 2, self._upper_bound_capacity)
            elif (
                now - history[(len(history) - self.capacity // 4) % len(history)].record_time
                > self._event_fresh_duration
            ):
                # Even the newest quarter is stale: halve (a quarter, not the oldest event,
                # so that the size does not flap; below 4 events, the oldest, as upstream's
                # ring index wraps).
                capacity = max(self.capacity // 2, self._lower_bound_capacity)
                if capacity < self.capacity:
                    self.capacity = capacity
                    while len(history) > capacity:
                        self._history_start = history.popleft().revision
        if len(history) >= self.capacity:
            self._history_start = history.popleft().revision
        history.append(ev)

    def _restamp(self, co: CachedObject, revision: int) -> CachedObject:
        obj = co.obj.__class__()
        obj.CopyFrom(co.obj)
        obj.metadata.resource_version = str(revision)  # type: ignore[attr-defined]
        return CachedObject(
            co.key, obj, revision, encoding.envelope(self._field, obj.SerializeToString())
        )

    def _recipients(self, ev: CacheEvent) -> list[Watcher]:
        """The watchers that may see `ev`: those kept by the trigger value its object had
        before or has after it, and every watcher not kept by one (upstream's
        cacher.dispatchEvent: valueWatchers of the event's trigger values, allWatchers)."""
        value_of = self._trigger_value
        if value_of is None or not self._by_trigger:
            return list(self._watchers)
        out = list(self._unindexed)
        cur = value_of(ev.cur.obj)
        out.extend(self._by_trigger.get(cur, ()))
        if ev.prev is not None:
            prev = value_of(ev.prev.obj)
            if prev != cur:
                out.extend(self._by_trigger.get(prev, ()))
        return out

    def _dispatch(self, ev: CacheEvent) -> None:
        for w in self._recipients(ev):
            if ev.revision <= w.after:
                continue
            t = w.event_type(ev)
            if t is None:
                continue
            try:
                w.send.send_nowait(ev.frame(t))
            except anyio.WouldBlock:
                logger.warning(
                    "closing a watch of %s that fell %d events behind",
                    self.kind.resource,
                    self._watcher_buffer,
                )
                self._close(w)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._close(w)

    # ------------------------------------------------------------ watchers

    def watch(
        self, *, namespace: str, filter: ObjectFilter | None, resource_version: int | None
    ) -> tuple[list[bytes], MemoryObjectReceiveStream[bytes], Watcher]:
        """Registers a watcher. Returns the events it must be sent first, then its stream.

        `resource_version` None means "the current state as ADDED events, then changes".
        Raises Expired (a Gone) when the requested revision is older than the retained
        history, with upstream's message (the second number: the oldest revision one may
        watch from).
        """
        if self._watches_ended:
            raise Unavailable("the apiserver is shutting down")
        if not self.ready:
            raise Unavailable(f"the watch cache for {self.kind.resource} is not ready yet")
        if resource_version is not None and resource_version < self._history_start:
            raise Expired(f"too old resource version: {resource_version} ({self._history_start})")
        send, receive = anyio.create_memory_object_stream[bytes](self._watcher_buffer)
        trigger = (
            filter.exact(self._trigger_field)
            if filter is not None and self._trigger_field is not None
            else None
        )
        initial: list[bytes] = []
        # Watchers are sent every change after the last one the cache received: a progress
        # notification may have moved self.revision ahead of changes still to come.
        if resource_version is None:
            w = Watcher(namespace, filter, self._event_revision, send, trigger=trigger)
            for co in self._objects.values():
                data = w.initial(co)
                if data is not None:
                    initial.append(data)
        else:
            w = Watcher(namespace, filter, resource_version, send, trigger=trigger)
            # The history is in revision order and may hold ~100,000 events: find the first
            # one to send rather than test them all.
            first = bisect.bisect_right(self._history, resource_version, key=_revision)
            for ev in itertools.islice(self._history, first, None):
                t = w.event_type(ev)
                if t is not None:
                    initial.append(ev.frame(t))
            w.after = max(resource_version, self._event_revision)
        self._watchers.add(w)
        if trigger is None:
            self._unindexed.add(w)
        else:
            self._by_trigger.setdefault(trigger, set()).add(w)
        self._notify()
        return initial, receive, w

    def stop(self, w: Watcher) -> None:
        self._close(w)

    def end_watches(self) -> None:
        """On shutdown: ends every watch (its stream closes once the frames already queued
        are sent) and refuses new ones (Unavailable), as upstream's apiserver ends its watches
        when it stops rather than waiting for the clients to close them."""
        self._watches_ended = True
        self.close_watches()

    def close_watches(self) -> int:
        """Ends every watch open now (each stream closes once the frames already queued are
        sent; its client watches again from its last resourceVersion); new watches are
        served. How many were ended."""
        watchers = list(self._watchers)
        for w in watchers:
            self._close(w)
        return len(watchers)

    def _close(self, w: Watcher) -> None:
        if w in self._watchers:
            self._watchers.discard(w)
            if w.trigger is None:
                self._unindexed.discard(w)
            else:
                kept = self._by_trigger[w.trigger]
                kept.discard(w)
                if not kept:
                    del self._by_trigger[w.trigger]
            self._notify()
        if not w.closed:
            w.closed = True
            w.send.close()

    def _notify(self) -> None:
        if self._on_watchers_changed is not None:
            self._on_watchers_changed(self.kind.resource, len(self._watchers))

    @property
    def watcher_count(self) -> int:
        return len(self._watchers)

    def buffered(self, frozen: Container[str] = ()) -> int:
        """Frames queued for watchers that their senders have not taken yet, but those of
        the clients in `frozen` (a process that stopped reading holds its sender at a write
        the transport cannot take: its frames wait for it, as time does not)."""
        return sum(
            w.send.statistics().current_buffer_used
            for w in self._watchers
            if not (w.client and w.client in frozen)
        )

    @property
    def event_revision(self) -> int:
        """The revision of the last change etcd sent to this cache."""
        return self._event_revision
