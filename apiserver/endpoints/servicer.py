"""The gRPC edge of the apiserver: the Api service, error translation and request metrics.

Handlers are registered by hand rather than through the generated servicer base so that List
and Watch can answer with bytes built by the watch cache (serialized once, shared by every
watcher) instead of re-encoding messages per client.
"""

from __future__ import annotations

import base64
import builtins
import functools
import json
import logging
import math
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Any, Final, TypeVar

import anyio
import grpc
from anyio.streams.memory import MemoryObjectReceiveStream
from google.protobuf.message import DecodeError, Message
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from apiserver.clock.activity import Activity
from apiserver.clock.cluster_clock import ClusterClock
from apiserver.endpoints.inflight import MaxInflight, limit_unary
from apiserver.registry import fencing
from apiserver.registry.registry import Registry
from apiserver.storage import encoding
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache, Watcher
from kemu import wire
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import FeatureGates
from kemu.component.virtual_clock import move_on_after
from kemu.machinery import jsonutil
from kemu.machinery.errors import ApiError, BadRequest, Cause, InternalError, Invalid
from kemu.machinery.fencing import ENFORCE_KEY, TOKEN_KEY, FencingToken
from kemu.machinery.kinds import Kind, kind_for_resource, kind_of, unwrap
from kemu.machinery.selection import RequestFilter
from kemu.machinery.subresources import STATUS
from kemu.machinery.virtual_time import (
    APISERVER_KEY,
    CLOCK_IDENTITY_KEY,
    REAL_TIME_CLOCK,
    ClockMode,
    clock_caller,
)

logger = logging.getLogger(__name__)

SERVICE: Final = "kemu.api.v1.Api"
_WATCH_BATCH: Final = 500  # events per WatchResponse at most
_WATCH_BUSY: Final = 0.02  # a watch that sent less than this ago is busy...
_WATCH_LINGER: Final = 0.005  # ...and waits this long to batch events
COMPONENT_LABEL: Final = "kemu.io/component"
DEFAULT_BOOKMARK_FREQUENCY: Final = 60.0  # upstream cacher's bookmarkFrequency (1 min)
_UINT64_MAX: Final = 2**64 - 1
_INT64_MAX: Final = 2**63 - 1
_R = TypeVar("_R")


def _metadata(context: grpc.aio.ServicerContext[Any, Any], key: str) -> str:
    for k, value in context.invocation_metadata() or ():
        if k == key:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return ""


def _clock_caller(context: grpc.aio.ServicerContext[Any, Any]) -> tuple[str, int]:
    """The clock session identity a call is tagged with ("" for none) and its call number."""
    return clock_caller(context.invocation_metadata() or ())


def _fencing_token(metadata: Iterable[tuple[str, str | bytes]]) -> FencingToken | None:
    """The fencing token a leader's write carries in its metadata (BadRequest if malformed)."""
    token = enforce = ""
    for key, value in metadata:
        if key == TOKEN_KEY:
            token = value if isinstance(value, str) else value.decode(errors="replace")
        elif key == ENFORCE_KEY:
            enforce = value if isinstance(value, str) else value.decode(errors="replace")
    return FencingToken.from_request(token, enforce)


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "apiserver_request_total",
            "Counter of apiserver requests broken out by verb, resource and gRPC code.",
            ["verb", "resource", "code"],
            registry=registry,
        )
        self.duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb and resource.",
            ["verb", "resource"],
            buckets=(
                0.0005,
                0.001,
                0.0025,
                0.005,
                0.01,
                0.025,
                0.05,
                0.1,
                0.25,
                0.5,
                1,
                2.5,
                5,
                10,
                30,
                60,
            ),
            registry=registry,
        )
        self.watchers = Gauge(
            "apiserver_registered_watchers",
            "Number of currently registered watchers for a given resource.",
            ["resource"],
            registry=registry,
        )
        self.watch_events = Counter(
            "apiserver_watch_events_total",
            "Number of events sent in watch clients.",
            ["resource"],
            registry=registry,
        )

        # labels() takes a lock and builds a key on every call: keep the children.
        self._request_children: dict[tuple[str, str, str], Any] = {}
        self._duration_children: dict[tuple[str, str], Any] = {}

    def observe(self, verb: str, resource: str, code: str, seconds: float) -> None:
        counter = self._request_children.get((verb, resource, code))
        if counter is None:
            counter = self._request_children[(verb, resource, code)] = self.requests.labels(
                verb, resource, code
            )
        counter.inc()
        histogram = self._duration_children.get((verb, resource))
        if histogram is None:
            histogram = self._duration_children[(verb, resource)] = self.duration.labels(
                verb, resource
            )
        histogram.observe(seconds)

    def watchers_changed(self, resource: str, count: int) -> None:
        self.watchers.labels(resource).set(count)


class ApiService:
    def __init__(
        self,
        registry: Registry,
        store: EtcdStore,
        caches: dict[str, WatchCache],
        gates: FeatureGates,
        metrics: Metrics,
        version: Callable[[], api_pb2.ComponentVersion],
        *,
        clock: Clock | None = None,
        bookmark_frequency: float = DEFAULT_BOOKMARK_FREQUENCY,
        cluster_clock: ClusterClock | None = None,
    ) -> None:
        self._cluster_clock = cluster_clock
        self._activity = cluster_clock.activity if cluster_clock is not None else Activity()
        self._bookmark_frequency = bookmark_frequency
        self._registry = registry
        self._store = store
        self._caches = caches
        self._gates = gates
        self._metrics = metrics
        self._version = version
        self._clock = clock or RealClock()
        self._now = self._clock.now

    @property
    def activity(self) -> Activity:
        return self._activity

    @property
    def bookmark_frequency(self) -> float:
        return self._bookmark_frequency

    def server_version(self) -> api_pb2.ComponentVersion:
        return self._version()

    # ------------------------------------------------------------ plumbing

    async def _serve(
        self,
        verb: str,
        resource: str,
        context: grpc.aio.ServicerContext[Any, Any],
        call: Callable[[], Awaitable[_R]],
    ) -> _R:
        start = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            # (the clock's own calls, AdvanceClock waiting for time, are not the cluster's work)
            # (the metadata read once: gRPC builds it anew on each read)
            metadata = context.invocation_metadata() or ()
            counted = self._activity.request(*clock_caller(metadata), in_flight=resource != "clock")
            with fencing.serving(_fencing_token(metadata)), counted:
                return await call()
        except ApiError as e:
            code, details, md = wire.status_of(e)
            context.set_trailing_metadata(md)
            await context.abort(code, details)
            raise  # unreachable: abort raises
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            logger.exception("%s %s failed", verb, resource)
            code, details, md = wire.status_of(InternalError(f"internal error: {e}"))
            context.set_trailing_metadata(md)
            await context.abort(code, details)
            raise
        finally:
            self._metrics.observe(verb, resource or "", code.name, time.perf_counter() - start)

    def _refused(self, context: grpc.aio.ServicerContext[Any, Any]) -> None:
        # (a component in a clock session counted the call as made: were it not counted as
        # received, the event-driven clock would wait for it for ever)
        self._activity.refused(*_clock_caller(context))

    @staticmethod
    def _resource_of(envelope: api_pb2.Object) -> str:
        which = envelope.WhichOneof("kind")
        return kind_of(getattr(envelope, which)).resource if which else ""

    @staticmethod
    def _wrap(obj: Message) -> bytes:
        """The Object envelope of `obj` as bytes: the bytes of an Object holding it, without
        copying it into one (see encoding)."""
        return encoding.envelope(_field_number(kind_of(obj)), obj.SerializeToString())

    # ------------------------------------------------------------ verbs

    async def create(self, req: api_pb2.CreateRequest, context: Any) -> bytes:
        async def call() -> bytes:
            # The request was decoded for this call alone: the registry may take it over.
            return (await self._registry.create_owned(unwrap(req.object)))[1]

        return await self._serve("create", self._resource_of(req.object), context, call)

    async def get(self, req: api_pb2.GetRequest, context: Any) -> bytes:
        async def call() -> bytes:
            kind = kind_for_resource(req.resource)
            if not req.name:
                raise BadRequest("name is required")
            namespace = (req.namespace or "default") if kind.namespaced else ""
            return await self._registry.get_bytes(kind, namespace, req.name)

        return await self._serve("get", req.resource, context, call)

    async def list(self, req: api_pb2.ListRequest, context: Any) -> bytes:
        async def call() -> bytes:
            return await self.list_bytes(req)

        return await self._serve("list", req.resource, context, call)

    async def update(self, req: api_pb2.UpdateRequest, context: Any) -> bytes:
        async def call() -> bytes:
            return self._wrap(await self._registry.update(unwrap(req.object)))

        return await self._serve("update", self._resource_of(req.object), context, call)

    async def update_status(self, req: api_pb2.UpdateRequest, context: Any) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.update(unwrap(req.object), subresource=STATUS.name)
            return self._wrap(obj)

        return await self._serve("update_status", self._resource_of(req.object), context, call)

    async def patch(self, req: api_pb2.PatchRequest, context: Any) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.patch(
                req.resource, req.namespace, req.name, req.patch, req.subresource
            )
            return self._wrap(obj)

        return await self._serve("patch", req.resource, context, call)

    async def delete(self, req: api_pb2.DeleteRequest, context: Any) -> bytes:
        async def call() -> bytes:
            obj = await self._registry.delete(
                req.resource,
                req.namespace,
                req.name,
                grace_period=req.grace_period_seconds
                if req.HasField("grace_period_seconds")
                else None,
                uid=req.preconditions.uid if req.preconditions.HasField("uid") else None,
                resource_version=(
                    req.preconditions.resource_version
                    if req.preconditions.HasField("resource_version")
                    else None
                ),
                propagation_policy=(
                    req.propagation_policy if req.HasField("propagation_policy") else None
                ),
                orphan_dependents=(
                    req.orphan_dependents if req.HasField("orphan_dependents") else None
                ),
            )
            return self._wrap(obj)

        return await self._serve("delete", req.resource, context, call)

    async def bind(self, req: api_pb2.Binding, context: Any) -> api_pb2.Status:
        async def call() -> api_pb2.Status:
            await self._registry.bind(req)
            return api_pb2.Status(status="Success", code=201)

        return await self._serve("create", "pods/binding", context, call)

    async def resize(self, req: api_pb2.UpdateRequest, context: Any) -> bytes:
        async def call() -> bytes:
            pod = unwrap(req.object)
            if not isinstance(pod, types_pb2.Pod):
                raise BadRequest("pods/resize takes a Pod")
            return self._wrap(await self._registry.resize(pod))

        return await self._serve("update", "pods/resize", context, call)

    async def evict(self, req: api_pb2.Eviction, context: Any) -> api_pb2.Status:
        async def call() -> api_pb2.Status:
            await self._registry.evict(req)
            return api_pb2.Status(status="Success", code=201)

        return await self._serve("create", "pods/eviction", context, call)

    async def version(self, req: api_pb2.VersionRequest, context: Any) -> api_pb2.VersionInfo:
        async def call() -> api_pb2.VersionInfo:
            info = api_pb2.VersionInfo(server=self._version())
            info.components.extend(self._components())
            return info

        return await self._serve("get", "version", context, call)

    # ------------------------------------------------------------ the cluster clock

    async def get_clock(self, req: api_pb2.ClockRequest, context: Any) -> api_pb2.ClockStatus:
        async def call() -> api_pb2.ClockStatus:
            if self._cluster_clock is None:
                return api_pb2.ClockStatus(mode=ClockMode.REAL.value, now=self._now())
            return self._cluster_clock.status()

        return await self._serve("get", "clock", context, call)

    async def set_clock_rate(
        self, req: api_pb2.SetClockRateRequest, context: Any
    ) -> api_pb2.ClockStatus:
        async def call() -> api_pb2.ClockStatus:
            await self._virtual_clock().set_rate(math.inf if req.max else req.rate)
            return self._virtual_clock().status()

        return await self._serve("update", "clock", context, call)

    async def advance_clock(
        self, req: api_pb2.AdvanceClockRequest, context: Any
    ) -> api_pb2.ClockStatus:
        async def call() -> api_pb2.ClockStatus:
            await self._virtual_clock().advance(req.seconds)
            return self._virtual_clock().status()

        return await self._serve("update", "clock", context, call)

    async def expect_clock_session(
        self, req: api_pb2.ExpectClockSessionRequest, context: Any
    ) -> api_pb2.ClockStatus:
        async def call() -> api_pb2.ClockStatus:
            self._virtual_clock().expect(req.boot_token, req.ttl_seconds)
            return self._virtual_clock().status()

        return await self._serve("update", "clock", context, call)

    def _virtual_clock(self) -> ClusterClock:
        if self._cluster_clock is None:
            raise BadRequest(REAL_TIME_CLOCK)
        return self._cluster_clock

    async def clock_session(
        self, requests: AsyncIterator[bytes], context: grpc.aio.ServicerContext[Any, Any]
    ) -> None:
        """A component's clock session (a stream of ClockReport in, ClockSegment out)."""

        async def reports() -> AsyncIterator[api_pb2.ClockReport]:
            async for data in requests:
                try:
                    yield api_pb2.ClockReport.FromString(data)
                except DecodeError:
                    raise BadRequest("a ClockReport that does not decode") from None

        async def send(update: api_pb2.ClockUpdate) -> None:
            await context.write(update.SerializeToString())

        try:
            await self._virtual_clock().session(reports(), send)
        except ApiError as e:
            code, details, md = wire.status_of(e)
            context.set_trailing_metadata(md)
            await context.abort(code, details)

    def _components(self) -> builtins.list[api_pb2.ComponentVersion]:
        """Components that hold a live identity lease (see kemu.client.identity)."""
        out = []
        now = self._now()
        for co in self._caches["leases"].objects():
            lease = co.obj
            assert isinstance(lease, types_pb2.Lease)
            component = lease.metadata.labels.get(COMPONENT_LABEL)
            if not component:
                continue
            duration = lease.spec.lease_duration_seconds or 0
            if lease.spec.renew_time.ToNanoseconds() / 1e9 + duration < now:
                continue
            ann = lease.metadata.annotations
            cv = api_pb2.ComponentVersion(
                component=component,
                identity=lease.spec.holder_identity,
                emulated_version=ann.get("kemu.io/emulated-version", ""),
                binary_version=ann.get("kemu.io/binary-version", ""),
            )
            try:
                for g in json.loads(ann.get("kemu.io/feature-gates", "[]")):
                    cv.feature_gates.add(
                        name=str(g["name"]),
                        enabled=bool(g["enabled"]),
                        stage=str(g.get("stage", "")),
                        locked=bool(g.get("locked", False)),
                    )
            except (ValueError, KeyError, TypeError):
                logger.warning("identity lease %s has malformed feature gates", lease.metadata.name)
            out.append(cv)
        out.sort(key=lambda c: (c.component, c.identity))
        return out

    # ------------------------------------------------------------ list

    async def list_bytes(self, req: api_pb2.ListRequest) -> bytes:
        """A List's response bytes (ListResponse): the one list path of both edges."""
        kind = kind_for_resource(req.resource)
        flt = RequestFilter(req.resource, req.label_selector, req.field_selector)
        namespace = req.namespace if kind.namespaced else ""
        cache = self._caches[kind.resource]
        rv = req.resource_version
        if req.limit < 0:
            raise BadRequest("limit must be greater than or equal to 0")
        if req.resource_version_match not in ("", "NotOlderThan", "Exact"):
            raise BadRequest(f'unknown resourceVersionMatch "{req.resource_version_match}"')
        if getattr(req, "continue"):
            return await self._list_etcd(kind, namespace, flt, req, 0)
        if rv:
            revision = _parse_rv(rv)
            if req.resource_version_match == "Exact":
                return await self._list_etcd(kind, namespace, flt, req, revision)
            # NotOlderThan: from the cache once it has the revision; a revision etcd has
            # but this resource's cache has not seen (a quiet resource) reads etcd; one etcd
            # has not reached either is waited for, then Timeout "Too large resource version"
            # (upstream's cacher)
            if cache.ready and await cache.wait_fresh(revision):
                return self._list_cache(cache, namespace, flt)
        elif req.resource_version_match:
            raise BadRequest("resourceVersionMatch is forbidden unless resourceVersion is provided")
        return await self._list_etcd(kind, namespace, flt, req, 0)

    @staticmethod
    def _list_cache(cache: WatchCache, namespace: str, flt: RequestFilter) -> bytes:
        prefix = f"{cache.prefix}{namespace}/" if namespace else cache.prefix
        items = sorted(
            (
                co
                for co in cache.objects()
                if co.key.startswith(prefix) and (flt.empty or flt.matches(co.obj))
            ),
            key=lambda co: co.key,
        )
        return encoding.list_response([co.envelope for co in items], cache.revision)

    async def _list_etcd(
        self,
        kind: Kind,
        namespace: str,
        flt: RequestFilter,
        req: api_pb2.ListRequest,
        revision: int,
    ) -> bytes:
        prefix = f"/registry/{kind.resource}/" + (f"{namespace}/" if namespace else "")
        token = getattr(req, "continue")
        start_after = ""
        if token:
            revision, start_after = _decode_continue(token, prefix)
        field = api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number
        limit = int(req.limit)
        out: builtins.list[bytes] = []
        read_at = revision
        while True:
            chunk = max(limit - len(out), 0) if limit else 1000
            page = await self._store.range(
                prefix,
                revision=read_at,
                limit=max(chunk, 1) if limit else 1000,
                start_after=start_after,
            )
            read_at = page.revision if read_at == 0 else read_at
            for kv in page.kvs:
                data = encoding.with_resource_version(kv.value, kv.mod_revision)
                if not flt.empty and not flt.matches(kind.message.FromString(data)):
                    continue
                out.append(encoding.envelope(field, data))
            if page.kvs:
                start_after = page.kvs[-1].key
            if not page.more:
                return encoding.list_response(out, read_at)
            if limit and len(out) >= limit:
                return encoding.list_response(out, read_at, _encode_continue(read_at, start_after))

    # ------------------------------------------------------------ watch

    async def watch(self, req: api_pb2.WatchRequest, context: Any) -> AsyncGenerator[bytes, None]:
        try:
            cache, initial, receive, watcher = await self.open_watch(req)
        except ApiError as e:
            self._metrics.requests.labels(
                "watch",
                req.resource,
                wire.STATUS_CODES.get(e.reason, grpc.StatusCode.INTERNAL).name,
            ).inc()
            code, details, md = wire.status_of(e)
            context.set_trailing_metadata(md)
            await context.abort(code, details)
            return
        self._metrics.requests.labels("watch", req.resource, "OK").inc()
        sent = self._metrics.watch_events.labels(req.resource)
        bookmarks = req.allow_watch_bookmarks
        identity = _metadata(context, CLOCK_IDENTITY_KEY)
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
            last_send = 0.0
            next_bookmark = self._clock.monotonic() + self._bookmark_frequency
            async with receive:
                while True:
                    frame = None
                    async with move_on_after(
                        self._clock,
                        max(next_bookmark - self._clock.monotonic(), 0) if bookmarks else math.inf,
                    ):
                        try:
                            frame = await receive.receive()
                        except anyio.EndOfStream:
                            return
                    if frame is None:
                        # Nothing is buffered: upstream's periodic bookmark.
                        activity.sent_events(identity, 1)
                        yield cache.bookmark(watcher)
                        next_bookmark = self._clock.monotonic() + self._bookmark_frequency
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
    ) -> tuple[WatchCache, builtins.list[bytes], MemoryObjectReceiveStream[bytes], Watcher]:
        """Registers a watcher (the one watch path of both edges): its cache, the initial
        frames, the stream of later frames, and the handle to `cache.stop` when done."""
        kind = kind_for_resource(req.resource)
        flt = RequestFilter(req.resource, req.label_selector, req.field_selector)
        cache = self._caches[kind.resource]
        return (cache, *await self._start_watch(req, kind, cache, flt))

    async def _start_watch(
        self, req: api_pb2.WatchRequest, kind: Kind, cache: WatchCache, flt: RequestFilter
    ) -> tuple[builtins.list[bytes], MemoryObjectReceiveStream[bytes], Watcher]:
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
                revision = _parse_rv(rv)
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
        since = None if rv in ("", "0") else _parse_rv(rv)
        if since is not None and cache.ready:
            await cache.wait_fresh(since)  # a future resourceVersion: Timeout after 3 s
        return cache.watch(namespace=namespace, filter=selection, resource_version=since)

    # ------------------------------------------------------------ registration

    def handler(self, limiter: MaxInflight | None = None) -> grpc.GenericRpcHandler[Any, Any]:
        """The Api service's handlers; every unary method behind `limiter` (the in-flight
        limit, which reads the decoded request: a Lease write is exempt)."""

        # Requests arrive as bytes and are decoded by wire.unary: one that does not decode
        # is INVALID_ARGUMENT, not gRPC's UNKNOWN.
        def unary(
            name: str, fn: Any, req_cls: type[Message], resp_ser: Callable[[Any], bytes]
        ) -> grpc.RpcMethodHandler[Any, Any]:
            if limiter is not None:
                fn = limit_unary(name, fn, limiter, refused=self._refused)
            return grpc.unary_unary_rpc_method_handler(
                wire.unary(fn, req_cls), response_serializer=resp_ser
            )

        ser = _serialize
        raw = _identity
        methods: dict[str, tuple[Any, type[Message], Callable[[Any], bytes]]] = {
            "Create": (self.create, api_pb2.CreateRequest, raw),
            "Get": (self.get, api_pb2.GetRequest, raw),
            "List": (self.list, api_pb2.ListRequest, raw),
            "Update": (self.update, api_pb2.UpdateRequest, raw),
            "UpdateStatus": (self.update_status, api_pb2.UpdateRequest, raw),
            "Patch": (self.patch, api_pb2.PatchRequest, raw),
            "Delete": (self.delete, api_pb2.DeleteRequest, raw),
            "Bind": (self.bind, api_pb2.Binding, ser),
            "Resize": (self.resize, api_pb2.UpdateRequest, raw),
            "Evict": (self.evict, api_pb2.Eviction, ser),
            "Version": (self.version, api_pb2.VersionRequest, ser),
            "GetClock": (self.get_clock, api_pb2.ClockRequest, ser),
            "SetClockRate": (self.set_clock_rate, api_pb2.SetClockRateRequest, ser),
            "AdvanceClock": (self.advance_clock, api_pb2.AdvanceClockRequest, ser),
            "ExpectClockSession": (
                self.expect_clock_session,
                api_pb2.ExpectClockSessionRequest,
                ser,
            ),
        }
        handlers = {name: unary(name, *method) for name, method in methods.items()}
        # A watch is long-running: never counted by the in-flight limit.
        handlers["Watch"] = grpc.unary_stream_rpc_method_handler(
            wire.unary_stream(self.watch, api_pb2.WatchRequest), response_serializer=raw
        )
        # A clock session lasts as long as its component: never counted either.
        handlers["ClockSession"] = grpc.stream_stream_rpc_method_handler(
            self.clock_session, response_serializer=raw
        )
        return grpc.method_handlers_generic_handler(SERVICE, handlers)


@functools.cache
def _field_number(kind: Kind) -> int:
    return int(api_pb2.Object.DESCRIPTOR.fields_by_name[kind.field].number)


def _serialize(msg: Message) -> bytes:
    return msg.SerializeToString()


def _identity(data: bytes) -> bytes:
    return data


def _parse_rv(rv: str) -> int:
    """A resourceVersion as upstream's APIObjectVersioner.ParseResourceVersion reads it: an
    unsigned 64-bit integer (strconv.ParseUint), anything else BadRequest at once (a number
    beyond uint64 is not "too large a resourceVersion" to wait for)."""
    shown = rv if len(rv) <= 64 else rv[:64] + "..."
    if not rv.isascii() or not rv.isdigit():
        raise BadRequest(f'invalid resourceVersion "{shown}": must be an unsigned integer')
    if len(rv) > 20 or int(rv) > _UINT64_MAX:
        raise BadRequest(f'invalid resourceVersion "{shown}": value out of range')
    return int(rv)


def _encode_continue(revision: int, key: str) -> str:
    raw = json.dumps({"rv": revision, "start": key}).encode()
    return base64.urlsafe_b64encode(raw).decode()


def _decode_continue(token: str, prefix: str) -> tuple[int, str]:
    try:
        data = jsonutil.loads(base64.urlsafe_b64decode(token.encode()), "the continue key")
        revision, key = int(data["rv"]), str(data["start"])
    except (ValueError, KeyError, TypeError, BadRequest):
        raise BadRequest("continue key is not valid") from None
    if not 0 < revision <= _INT64_MAX:  # (etcd revisions are positive int64s)
        raise BadRequest("continue key is not valid: incorrect encoded start resourceVersion")
    if not key.startswith(prefix):
        raise BadRequest("continue key is not valid for this request")
    return revision, key
