"""Kubernetes Events from components (client-go's record.EventRecorder, simplified).

`event()` never blocks and never fails: it queues the event, and `run()` writes the queue to
the apiserver. Repeats of the same event (same object, type, reason and message) update the
existing Event's count and lastTimestamp instead of creating another, as upstream's
correlator does. A full queue drops events (logged): events are best effort upstream too.

Writes go out concurrently, as upstream's events.k8s.io broadcaster writes each event from a
goroutine of its own (client-go tools/events/event_broadcaster.go recordToSink): `writers`
writers, each object's events always through the same one, so that one object's events are
written in the order they happened and its repeats are counted on the Event written first.
One writer at a time could not keep up with a scheduler binding a few hundred pods a second:
its queue filled and most Scheduled events were dropped.

Which API upstream's component records through decides the Event's source fields (`EventApi`):
core/v1's record.EventRecorder (the kubelet, the controllers, cluster-autoscaler) writes
`source` {component, host} and copies it to reportingComponent/reportingInstance (client-go
tools/record/event.go makeEvent); events.k8s.io/v1's (client-go tools/events: kube-scheduler)
writes reportingController and reportingInstance "<controller>-<hostname>" and no
deprecatedSource, so its core/v1 view has an empty `source` (kubectl describe's From then shows
reportingController, `get events -o wide` "default-scheduler, default-scheduler-<host>").

A core/v1 recorder lets each source (component and host) record at most SPAM_BURST events about
one object, then one more every 1/SPAM_QPS seconds, as upstream's EventCorrelator does with its
EventSourceObjectSpamFilter (client-go tools/record/events_cache.go: a token bucket per source
and object, burst 25, one token every 5 minutes): a component that reports the same pods on
every loop (cluster-autoscaler's NotTriggerScaleUp each scan) neither fills the queue, dropping
its other events, nor writes a PATCH a pod a loop. (Upstream filters in the broadcaster's sink
goroutine, behind a queue that such events leave at once; the filter here, before the queue,
keeps the same events.) events.k8s.io/v1's recorder (client-go tools/events) has no such
filter.

`for_component(name)` gives a recorder that reports as another component through
the same queue and writers: the scheduler's profiles each report as their schedulerName, as
upstream's per-profile recorders do. An event may name a `related` object (upstream's
events.k8s.io `related`, e.g. the preemptor of a Preempted event).
"""

from __future__ import annotations

import enum
import itertools
import logging
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock, RealClock
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.kinds import kind_of

logger = logging.getLogger(__name__)

_CACHE_SIZE: Final = 4096
SPAM_BURST: Final = 25
"""Events one source may record about one object at once (client-go defaultSpamBurst)."""
SPAM_QPS: Final = 1.0 / 300.0
"""Then one more every 5 minutes (defaultSpamQPS)."""
_NAME_ATTEMPTS: Final = 8
DEFAULT_WRITERS: Final = 32
_WRITER_BUFFER: Final = 16  # a writer's own queue: a slow one holds up the main queue's next


class EventApi(enum.Enum):
    """The API upstream's component records its events through (see the module docstring)."""

    CORE_V1 = "v1"
    EVENTS_V1 = "events.k8s.io/v1"


@dataclass(frozen=True)
class _Pending:
    involved: types_pb2.ObjectReference
    related: types_pb2.ObjectReference | None
    event_type: str
    reason: str
    action: str
    message: str
    when: float
    component: str
    instance: str
    serial: int  # this recorder's count of events, in the order they were recorded


def object_reference(obj: Message) -> types_pb2.ObjectReference:
    k = kind_of(obj)
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    return types_pb2.ObjectReference(
        kind=k.kind,
        namespace=meta.namespace,
        name=meta.name,
        uid=meta.uid,
        api_version=k.api_version,
        resource_version=meta.resource_version,
    )


class EventRecorder:
    def __init__(
        self,
        client: ApiClient,
        component: str,
        *,
        api: EventApi = EventApi.CORE_V1,
        host: str = "",
        clock: Clock | None = None,
        buffer: int = 1000,
        writers: int = DEFAULT_WRITERS,
    ) -> None:
        """`host`: core/v1's source.host (the kubelet's node name; upstream's controllers
        leave it empty); for events.k8s.io/v1 the hostname of reportingInstance."""
        if writers < 1:
            raise ValueError(f"writers must be at least 1, not {writers}")
        self._client = client
        self._component = component
        self._api = api
        self._host = host
        self._instance = self.instance_of(component)
        self._clock = clock or RealClock()
        self._send, self._receive = anyio.create_memory_object_stream[_Pending](buffer)
        # (uid, component, type, reason, message) -> (namespace, event name, count)
        self._seen: OrderedDict[tuple[str, str, str, str, str], tuple[str, str, int]] = (
            OrderedDict()
        )
        self.dropped = 0
        self._spam = _SpamFilter() if api is EventApi.CORE_V1 else None
        self._seq = itertools.count()
        self._writers = writers

    @property
    def skipped(self) -> int:
        """Events the spam filter kept out of the queue."""
        return self._spam.skipped if self._spam is not None else 0

    def instance_of(self, component: str) -> str:
        """The reportingInstance of `component`'s events through this recorder."""
        if self._api is EventApi.EVENTS_V1:
            return f"{component}-{self._host}"
        return self._host

    def for_component(self, component: str) -> NamedEventRecorder:
        """A recorder reporting as `component` through this one's writers."""
        return NamedEventRecorder(self, component, self.instance_of(component))

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None:
        self._enqueue(
            obj, event_type, reason, action, message, related, self._component, self._instance
        )

    def _enqueue(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        related: Message | None,
        component: str,
        instance: str,
    ) -> None:
        involved = object_reference(obj)
        now = self._clock.now()
        if self._spam is not None and not self._spam.allow(
            (component, instance, involved.kind, involved.namespace, involved.name, involved.uid),
            now,
        ):
            return
        pending = _Pending(
            involved,
            object_reference(related) if related is not None else None,
            event_type,
            reason,
            action,
            message,
            now,
            component,
            instance,
            next(self._seq),
        )
        try:
            self._send.send_nowait(pending)
        except anyio.WouldBlock:
            self.dropped += 1
            logger.warning(
                "dropping event %s for %s/%s: the queue is full",
                reason,
                pending.involved.namespace,
                pending.involved.name,
            )

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Writes the queue with `writers` writers until cancelled: each event goes to the
        writer of its object (a stable hash of its uid, or of its namespace/name)."""
        shards = [
            anyio.create_memory_object_stream[_Pending](_WRITER_BUFFER)
            for _ in range(self._writers)
        ]
        async with anyio.create_task_group() as tg:
            for _, receive in shards:
                tg.start_soon(self._writer, receive)
            task_status.started()
            async for pending in self._receive:
                involved = pending.involved
                owner = involved.uid or f"{involved.namespace}/{involved.name}"
                send, _ = shards[zlib.crc32(owner.encode()) % len(shards)]
                await send.send(pending)
            for send, _ in shards:
                await send.aclose()

    async def _writer(self, receive: MemoryObjectReceiveStream[_Pending]) -> None:
        async with receive:
            async for pending in receive:
                try:
                    await self._write(pending)
                except ApiError as e:
                    logger.warning(
                        "could not write event %s for %s/%s: %s",
                        pending.reason,
                        pending.involved.namespace,
                        pending.involved.name,
                        e,
                    )

    async def _write(self, p: _Pending) -> None:
        key = (p.involved.uid, p.component, p.event_type, p.reason, p.message)
        known = self._seen.get(key)
        if known is not None:
            namespace, name, count = known
            try:
                await self._client.patch(
                    types_pb2.Event,
                    name,
                    {
                        "count": count + 1,
                        "lastTimestamp": _iso(p.when),
                    },
                    namespace,
                )
                self._seen[key] = (namespace, name, count + 1)
                self._seen.move_to_end(key)
                return
            except NotFound:
                del self._seen[key]
        namespace = p.involved.namespace or "default"
        ev = types_pb2.Event(
            involved_object=p.involved,
            reason=p.reason,
            message=p.message,
            type=p.event_type,
            count=1,
            action=p.action,
            reporting_component=p.component,
            reporting_instance=p.instance,
        )
        if p.related is not None:
            ev.related.CopyFrom(p.related)
        ev.metadata.namespace = namespace
        if self._api is EventApi.CORE_V1:
            ev.source.component = p.component
            ev.source.host = self._host
        ev.first_timestamp.CopyFrom(timestamp(p.when))
        ev.last_timestamp.CopyFrom(timestamp(p.when))
        for attempt in range(_NAME_ATTEMPTS):
            # <object>.<hex nanoseconds> as upstream, made unique within this recorder by the
            # event's serial; two recorders (two controllers of one process) may still meet on
            # one object at one instant of a held virtual clock: the next name is tried.
            stamp = int(p.when * 1e9) + p.serial * _NAME_ATTEMPTS + attempt
            ev.metadata.name = f"{p.involved.name}.{stamp:x}"
            try:
                created = await self._client.create(ev)
                break
            except AlreadyExists:
                if attempt == _NAME_ATTEMPTS - 1:
                    raise
        self._seen[key] = (namespace, created.metadata.name, 1)
        if len(self._seen) > _CACHE_SIZE:
            self._seen.popitem(last=False)


class _SpamFilter:
    """A token bucket per source and object (the spam key of client-go's
    EventSourceObjectSpamFilter: source component and host, the object's kind, namespace,
    name and uid), the least recently used dropped past _CACHE_SIZE keys (its LRU cache)."""

    def __init__(self) -> None:
        self._buckets: OrderedDict[tuple[str, ...], tuple[float, float]] = OrderedDict()
        self.skipped = 0

    def allow(self, key: tuple[str, ...], now: float) -> bool:
        tokens, last = self._buckets.get(key, (float(SPAM_BURST), now))
        tokens = min(float(SPAM_BURST), tokens + max(now - last, 0.0) * SPAM_QPS)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else tokens, now)
        self._buckets.move_to_end(key)
        if len(self._buckets) > _CACHE_SIZE:
            self._buckets.popitem(last=False)
        if not allowed:
            self.skipped += 1
        return allowed


def _iso(seconds: float) -> str:
    return format_time(timestamp(seconds))


class NamedEventRecorder:
    """An EventRecorder's view that reports as another component (`for_component`)."""

    def __init__(self, parent: EventRecorder, component: str, instance: str) -> None:
        self._parent = parent
        self.component = component
        self.instance = instance

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None:
        self._parent._enqueue(
            obj, event_type, reason, action, message, related, self.component, self.instance
        )
