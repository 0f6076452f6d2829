"""The apiserver's in-flight limit, both edges: upstream's max-in-flight filter, used when
`--enable-priority-and-fairness=false` (apiserver/flowcontrol otherwise, as upstream's default);
and what both filters read of a request (RequestInfo) and offer the edges (Limiter).

`--max-requests-inflight` (default 400) bounds the read-only requests being served at once and
`--max-mutating-requests-inflight` (default 200) the mutating ones; 0 lifts a bound (upstream's
WithMaxInFlightLimit, k8s.io/apiserver/pkg/server/filters/maxinflight.go). A request past its
bound is not queued: it is answered at once with 429 TooManyRequests and a retry-after of 1 s
(REST: the `Retry-After` header; gRPC: RESOURCE_EXHAUSTED with `retry-after` in the trailing
metadata), so the client backs off and tries again; nothing of it was processed.

Not counted, as upstream:
- long-running requests (watches: upstream's LongRunningRequestCheck);
- health probes (/healthz, /livez, /readyz): the `probes` FlowSchema of upstream's API
  Priority and Fairness bootstrap configuration puts them at the `exempt` priority level;
- leader election and node heartbeats: get, create and update of Leases in kube-system and
  kube-node-lease. Upstream's max-in-flight filter exempts only system:masters; APF (which
  replaced it by default) serves Leases at the `leader-election` and `system` priority levels
  (apis/flowcontrol/bootstrap/default.go: system-leader-election, system-nodes), so a flood
  of ordinary requests cannot starve a leader's renewal; this filter, which matches no
  users, exempts the requests those FlowSchemas carry.

One limiter serves both edges: the gRPC methods are wrapped here (`limit_unary`, and
`limit_stream` for Watch), the REST edge calls `Limiter.admit` with the RequestInfo it resolves
from the URL. A watch tells the limiter when its initial events are handed over
(`watch_initialized`, upstream's apf_context.go WatchInitialized): priority and fairness holds
its seats until then.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Final, Literal, Protocol, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message
from prometheus_client import CollectorRegistry, Counter, Gauge

from apiserver.endpoints import identity
from apiserver.endpoints.identity import ANONYMOUS, UserInfo
from kemu import wire
from kemu.api.v1 import api_pb2
from kemu.machinery.errors import TooManyRequests
from kemu.machinery.kinds import BY_FIELD, BY_RESOURCE

_Req = TypeVar("_Req", bound=Message)
_Resp = TypeVar("_Resp")

RETRY_AFTER_SECONDS: Final = 1  # upstream's retryAfter constant
MESSAGE: Final = "Too many requests, please try again later."

RequestKind = Literal["readOnly", "mutating"]  # upstream's request_kind label values
READ_ONLY: Final[RequestKind] = "readOnly"
MUTATING: Final[RequestKind] = "mutating"

NON_MUTATING_VERBS: Final = frozenset({"get", "list", "watch"})
LONG_RUNNING_VERBS: Final = frozenset({"watch"})
HEALTH_PATHS: Final = ("/healthz", "/livez", "/readyz")
LEASE_NAMESPACES: Final = frozenset({"kube-system", "kube-node-lease"})
_LEASE_VERBS: Final = frozenset({"get", "create", "update"})


@dataclass(frozen=True)
class RequestInfo:
    """What the filters need to know of a request (a part of upstream's RequestInfo): its
    verb (get, list, watch, create, update, patch, delete, deletecollection), the resource
    (its API group and subresource) and namespace it names, or the path of a non-resource
    request ("" resource); and its user, for priority and fairness's FlowSchemas."""

    verb: str
    resource: str = ""
    namespace: str = ""
    path: str = ""
    api_group: str = ""
    subresource: str = ""
    user: UserInfo = ANONYMOUS
    send_initial_events: bool = False
    """A watch that starts with the list's objects (the watch-list protocol)."""
    name: str = ""
    """The object a request names ("" for a collection; a create names none, a subresource's
    create its parent: upstream's RequestInfo.Name), which authorization reads. A list or
    watch whose field selector is `metadata.name=<name>` names it too (RequestInfoFactory)."""
    field_selector: str = ""
    """A list's or watch's field selector (the Node authorizer's spec.nodeName=<node>)."""

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)

    @property
    def resource_and_subresource(self) -> str:
        """ "pods" or "pods/status", as a FlowSchema's resourceRules name them."""
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource

    @property
    def long_running(self) -> bool:
        return self.verb in LONG_RUNNING_VERBS

    @property
    def exempt(self) -> bool:
        """Health probes, and the Lease traffic of leader election and node heartbeats."""
        if not self.resource:
            return any(self.path == p or self.path.startswith(p + "/") for p in HEALTH_PATHS)
        return (
            self.resource == "leases"
            and self.namespace in LEASE_NAMESPACES
            and self.verb in _LEASE_VERBS
        )

    @property
    def kind(self) -> RequestKind:
        return READ_ONLY if self.verb in NON_MUTATING_VERBS else MUTATING


_WATCH_INIT: contextvars.ContextVar[Callable[[], None] | None] = contextvars.ContextVar(
    "kemu_watch_init_signal", default=None
)


@contextlib.contextmanager
def watch_init_signal(signal: Callable[[], None]) -> Iterator[None]:
    """While a watch is served: `signal` is what `watch_initialized` calls (upstream's
    apf_context.go WithInitializationSignal)."""
    token = _WATCH_INIT.set(signal)
    try:
        yield
    finally:
        _WATCH_INIT.reset(token)


def watch_initialized() -> None:
    """The watch being served has handed over its initial events (upstream's cacher calls
    WatchInitialized as its watcher starts processing new events): the limiter releases its
    seats. Nothing when no limiter waits for it."""
    signal = _WATCH_INIT.get()
    if signal is not None:
        signal()


class InflightMetrics:
    """upstream's apiserver_current_inflight_requests (here the number now; upstream reports
    the largest in the last second) and apiserver_dropped_requests_total."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.current = Gauge(
            "apiserver_current_inflight_requests",
            "Number of requests of this kind being served now under the in-flight limit.",
            ["request_kind"],
            registry=registry,
        )
        self.dropped = Counter(
            "apiserver_dropped_requests_total",
            "Number of requests rejected with 'Try again later' (429) by the in-flight limit.",
            ["request_kind"],
            registry=registry,
        )


class Limiter(Protocol):
    """What both edges put each request through: the max-in-flight filter (MaxInflight) or,
    when `--enable-priority-and-fairness` (upstream's default), priority and fairness
    (apiserver/flowcontrol/apf_filter.py)."""

    @property
    def limited(self) -> bool:
        """False: nothing is ever refused (the edges skip the filter)."""
        ...

    def admit(self, info: RequestInfo) -> contextlib.AbstractAsyncContextManager[None]:
        """Held while `info`'s request is served; raises TooManyRequests (with a
        retry-after) when it is refused."""
        ...


class MaxInflight:
    """Counts the requests being served per kind and refuses those past the limit."""

    def __init__(
        self,
        max_requests_inflight: int,
        max_mutating_requests_inflight: int,
        metrics: InflightMetrics,
    ) -> None:
        for flag, value in (
            ("--max-requests-inflight", max_requests_inflight),
            ("--max-mutating-requests-inflight", max_mutating_requests_inflight),
        ):
            if value < 0:
                raise ValueError(f"{flag}: {value} must be >= 0 (0: no limit)")
        self._limits: dict[RequestKind, int] = {
            READ_ONLY: max_requests_inflight,
            MUTATING: max_mutating_requests_inflight,
        }
        self._inflight: dict[RequestKind, int] = {READ_ONLY: 0, MUTATING: 0}
        self._dropped = {kind: metrics.dropped.labels(kind) for kind in (READ_ONLY, MUTATING)}
        for kind in (READ_ONLY, MUTATING):
            metrics.current.labels(kind).set_function(functools.partial(self.inflight, kind))

    @property
    def limited(self) -> bool:
        return any(self._limits.values())

    def inflight(self, kind: RequestKind) -> int:
        return self._inflight[kind]

    def admit(self, info: RequestInfo) -> contextlib.AbstractAsyncContextManager[None]:
        return _AsyncSlot(self.acquire(info))

    def acquire(self, info: RequestInfo) -> contextlib.AbstractContextManager[None]:
        """A slot for `info`, to hold while the request is served; raises TooManyRequests
        (retry after 1 s) when its kind is at the limit. Long-running and exempt requests,
        and a kind without a limit, take no slot."""
        if info.long_running or info.exempt:
            return contextlib.nullcontext()
        kind = info.kind
        limit = self._limits[kind]
        if not limit:
            return contextlib.nullcontext()
        if self._inflight[kind] >= limit:
            self._dropped[kind].inc()
            raise TooManyRequests.retry_after(MESSAGE, RETRY_AFTER_SECONDS)
        self._inflight[kind] += 1
        return _Slot(self._inflight, kind)


class _Slot(contextlib.AbstractContextManager[None]):
    """A taken slot, given back on exit (a class: cheaper than a generator per request)."""

    __slots__ = ("_counts", "_kind")

    def __init__(self, counts: dict[RequestKind, int], kind: RequestKind) -> None:
        self._counts = counts
        self._kind = kind

    def __exit__(self, *exc: object) -> None:
        self._counts[self._kind] -= 1


class _AsyncSlot(contextlib.AbstractAsyncContextManager[None]):
    __slots__ = ("_slot",)

    def __init__(self, slot: contextlib.AbstractContextManager[None]) -> None:
        self._slot = slot

    async def __aexit__(self, *exc: object) -> None:
        self._slot.__exit__(None, None, None)


# ---------------------------------------------------------------------- the gRPC edge

# The unary methods of the Api and Clock services: the verb each is (pods/binding and
# pods/eviction are creates of their subresource, as upstream); Version is the non-resource
# GET /version, the Clock's methods the non-resource path /clock.
_GRPC_VERBS: Final[dict[str, str]] = {
    "Get": "get",
    "List": "list",
    "Version": "get",
    "Create": "create",
    "Update": "update",
    "UpdateStatus": "update",
    "UpdateBatch": "update",
    "Patch": "patch",
    "Delete": "delete",
    "Bind": "create",
    "Resize": "update",
    "Evict": "create",
    "CreateToken": "create",
    "Watch": "watch",
    "GetClock": "get",
    "SetClockRate": "update",
    "AdvanceClock": "update",
    "ExpectClockSession": "update",
}


_GRPC_SUBRESOURCES: Final = {
    "UpdateStatus": "status",
    "Bind": "binding",
    "Resize": "resize",
    "Evict": "eviction",
    "CreateToken": "token",
}

_CLOCK_METHODS: Final = frozenset(
    {"GetClock", "SetClockRate", "AdvanceClock", "ExpectClockSession"}
)


def selected_name(field_selector: str) -> str:
    """The name a list's or watch's field selector pins (`metadata.name=<name>`, or `==`), as
    upstream's RequestInfoFactory reads it into RequestInfo.Name; "" otherwise."""
    for term in field_selector.split(","):
        key, sep, value = term.partition("==")
        if not sep:
            key, sep, value = term.partition("=")
        if sep and key.strip() == "metadata.name" and not key.endswith("!"):
            return value.strip()
    return ""


def grpc_request_info(method: str, request: Message, user: UserInfo = ANONYMOUS) -> RequestInfo:
    """The RequestInfo of a decoded request to `method` (its short name) of the Api or the
    Clock service, made by `user`. A request for one object of a namespaced kind without a
    namespace is in "default", as the registry serves it."""
    info = _grpc_request_info(method, request, user)
    if info.namespace or info.verb in ("list", "watch") or not info.resource:
        return info
    kind = BY_RESOURCE.get(info.resource)
    if kind is None or not kind.namespaced:
        return info
    return dataclasses.replace(info, namespace="default")


def _grpc_request_info(method: str, request: Message, user: UserInfo) -> RequestInfo:
    verb = _GRPC_VERBS.get(method, "")
    if method == "Version":
        return RequestInfo(verb, path="/version", user=user)
    if method in _CLOCK_METHODS:  # kemu's cluster clock: a non-resource path
        return RequestInfo(verb, path="/clock", user=user)
    subresource = _GRPC_SUBRESOURCES.get(method, "")
    if isinstance(request, api_pb2.UpdateBatchRequest):
        # (classified as its items when they are all one resource in one namespace, e.g. a
        # hollow kubelet's node Leases; otherwise as an update of no resource)
        # (names aside: each item is authorized by its own name, apiserver/endpoints/servicer.py)
        infos = {
            dataclasses.replace(grpc_request_info("Update", item, user), name="")
            for item in request.items
        }
        return infos.pop() if len(infos) == 1 else RequestInfo(verb, user=user)
    if isinstance(request, api_pb2.CreateRequest | api_pb2.UpdateRequest):
        which = request.object.WhichOneof("kind") or ""
        kind = BY_FIELD.get(which)
        if kind is None:
            return RequestInfo(verb, which, user=user)
        meta = getattr(request.object, which).metadata
        name = meta.name if isinstance(request, api_pb2.UpdateRequest) else ""
        return RequestInfo(
            verb, kind.resource, meta.namespace, "", kind.group, subresource, user, name=name
        )
    if isinstance(request, api_pb2.WatchRequest | api_pb2.ListRequest):
        kind = BY_RESOURCE.get(request.resource)
        group = kind.group if kind is not None else ""
        initial = (
            isinstance(request, api_pb2.WatchRequest)
            and request.HasField("send_initial_events")
            and request.send_initial_events
        )
        selector = request.field_selector
        return RequestInfo(
            verb,
            request.resource,
            request.namespace,
            "",
            group,
            "",
            user,
            initial,
            name=selected_name(selector),
            field_selector=selector,
        )
    if isinstance(request, api_pb2.GetRequest | api_pb2.PatchRequest | api_pb2.DeleteRequest):
        kind = BY_RESOURCE.get(request.resource)
        group = kind.group if kind is not None else ""
        sub = request.subresource if isinstance(request, api_pb2.PatchRequest) else ""
        return RequestInfo(
            verb, request.resource, request.namespace, "", group, sub, user, name=request.name
        )
    namespace = name = ""
    if isinstance(request, api_pb2.TokenRequest):  # (serviceaccounts/token: a create)
        namespace, name = request.metadata.namespace or "default", request.metadata.name
        return RequestInfo(verb, "serviceaccounts", namespace, "", "", subresource, user, name=name)
    if isinstance(request, api_pb2.Binding | api_pb2.Eviction):
        namespace, name = request.metadata.namespace, request.metadata.name
    return RequestInfo(verb or "create", "pods", namespace, "", "", subresource, user, name=name)


def limit_unary(
    method: str,
    behaviour: Callable[[_Req, grpc.aio.ServicerContext[bytes, _Resp]], Awaitable[_Resp]],
    limiter: Limiter,
    refused: Callable[[grpc.aio.ServicerContext[bytes, _Resp]], None] = lambda _context: None,
) -> Callable[[_Req, grpc.aio.ServicerContext[bytes, _Resp]], Awaitable[_Resp]]:
    """The unary method `method` (its decoded behaviour) behind `limiter`; the behaviour
    itself when nothing is limited. The streams are long-running: Watch goes through
    `limit_stream`, ClockSession (kemu's clock) through nothing. `refused` is told of each
    call refused (the event-driven clock counts it as received: its caller counts it as
    made)."""
    if not limiter.limited:
        return behaviour

    async def limited(request: _Req, context: grpc.aio.ServicerContext[bytes, _Resp]) -> _Resp:
        info = grpc_request_info(method, request, identity.of_grpc(context))
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(limiter.admit(info))
            except TooManyRequests as e:
                refused(context)
                await wire.abort(context, e)
                raise  # (abort raises)
            return await behaviour(request, context)

    return limited


def limit_stream(
    method: str,
    behaviour: Callable[[bytes, grpc.aio.ServicerContext[bytes, _Resp]], AsyncIterator[_Resp]],
    decode: Callable[[bytes], Message],
    limiter: Limiter,
) -> Callable[[bytes, grpc.aio.ServicerContext[bytes, _Resp]], AsyncIterator[_Resp]]:
    """The server stream `method` (Watch) behind `limiter`: classified, queued or refused
    (RESOURCE_EXHAUSTED) as a unary call, its seats held until the stream calls
    `watch_initialized` (or ends); `decode` reads the request for its RequestInfo. The
    behaviour itself when nothing is limited."""
    if not limiter.limited:
        return behaviour

    async def limited(
        data: bytes, context: grpc.aio.ServicerContext[bytes, _Resp]
    ) -> AsyncGenerator[_Resp, None]:
        try:
            request = decode(data)
        except DecodeError:  # (the behaviour answers a malformed request itself)
            request = api_pb2.WatchRequest()
        info = grpc_request_info(method, request, identity.of_grpc(context))
        async with contextlib.AsyncExitStack() as stack:
            try:
                await stack.enter_async_context(limiter.admit(info))
            except TooManyRequests as e:
                await wire.abort(context, e)
                raise  # (abort raises)
            async with contextlib.aclosing(behaviour(data, context)) as it:  # type: ignore[type-var]
                async for item in it:
                    yield item

    return limited
