"""The typed async gRPC client of the kemu Api service: the only client-side gRPC user.

Every call waits for the channel to be ready (`wait_for_ready`), so a component started
before the apiserver, or talking to one that restarts, waits up to `timeout` instead of
failing. Reads (get, list, version) are also retried with backoff while the server answers
Unavailable. Every call, read or write, is retried while the server refuses it with
TooManyRequests and a retry-after hint (the apiserver's in-flight limit), waiting at least the
hint each time, within `timeout` (client-go's handling of 429 + Retry-After, rest/request.go).
Every failure is raised as a kemu.machinery.errors.ApiError, never a grpc error.

Cancellation: an anyio cancel scope cannot interrupt an awaited grpc.aio unary call by itself
(grpc raises a fresh CancelledError that the scope does not recognise); `_attempt` re-enters the
scope through a checkpoint before re-raising, so `move_on_after` around client calls works.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import math
import random
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Final, TypeAlias, TypeVar, cast

import anyio
import anyio.lowlevel
import grpc
import grpc.aio
from google.protobuf.message import Message

from kemu import wire
from kemu.api.v1 import api_pb2, clock_pb2, types_pb2
from kemu.client import fencing
from kemu.client.backoff import Backoff
from kemu.client.call_stream import CallStream, StreamUnsupported, Transport
from kemu.client.credentials import TokenSource
from kemu.client.endpoints import (
    LB_POLICY,
    SEPARATOR,
    channel_target,
    parse_servers,
    split_host_port,
)
from kemu.client.flowcontrol import ClientLimits, Throttle
from kemu.client.interface import (
    DEFAULT_NAMESPACE,
    ApiClient,
)
from kemu.client.interface import (
    ListResult as ListResult,
)
from kemu.client.interface import (
    M as M,
)
from kemu.client.interface import (
    WatchEvent as WatchEvent,
)
from kemu.client.pager import list_pages
from kemu.client.tls import channel_credentials
from kemu.component.client_connection import ClientConnection
from kemu.component.latency import CallDelay
from kemu.machinery import kinds
from kemu.machinery.errors import (
    ApiError,
    Fenced,
    InternalError,
    Timeout,
    TooManyRequests,
    Unauthorized,
    Unavailable,
    error_for_reason,
)
from kemu.machinery.kubeconfig import ClientTLS
from kemu.machinery.user import UserInfo, bearer
from kemu.machinery.virtual_time import APISERVER_KEY, CLOCK_CALL_KEY, CLOCK_IDENTITY_KEY

__all__ = ["Client", "ListResult", "M", "Transport", "WatchEvent"]

logger = logging.getLogger(__name__)

_MiB: Final = 1024 * 1024
_SERVICE: Final = "/kemu.api.v1.Api/"
_CLOCK_SERVICE: Final = "/kemu.api.v1.Clock/"
"""The cluster clock's own service (proto/kemu/api/v1/clock.proto), served beside the Api: a
method name that starts with "/" is a full path."""

# The server's default ping policy (grpc core: 5 minutes between pings when it sends no data,
# then GOAWAY after a few strikes) would tear down a quiet watch if we pinged more often.
_CHANNEL_OPTIONS: Final[list[tuple[str, str | int]]] = [
    ("grpc.max_receive_message_length", 16 * _MiB),
    ("grpc.max_send_message_length", 16 * _MiB),
    ("grpc.keepalive_time_ms", 300_000),
    ("grpc.keepalive_timeout_ms", 20_000),
    ("grpc.keepalive_permit_without_calls", 0),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 2_000),
]

_WRITES: Final = frozenset(
    (
        "Create",
        "Update",
        "UpdateStatus",
        "UpdateBatch",
        "Patch",
        "Delete",
        "Bind",
        "Resize",
        "Evict",
    )
)
_VERBS: Final = {
    "Create": "POST",
    "Bind": "POST",
    "Evict": "POST",
    "CreateToken": "POST",
    "Update": "PUT",
    "UpdateStatus": "PUT",
    "UpdateBatch": "PUT",
    "Resize": "PUT",
    "Patch": "PATCH",
    "Delete": "DELETE",
}
"""The HTTP verb of each Api method upstream's REST call uses (GET for the others): the
rate limiter metric's `verb` label."""
_EOF: Final[object] = grpc.aio.EOF  # type: ignore[attr-defined]
_RETRY_INITIAL: Final = 0.05
_RETRY_MAX: Final = 2.0
_ADVANCE_TIMEOUT: Final = 24 * 3600.0  # wall seconds an AdvanceClock may take at most
_BURST_TTL: Final = 60.0  # wall seconds a driver's burst holds the cluster's steps at most

BatchResults: TypeAlias = list[M | ApiError]
"""update_batch's outcome: per item, the object written or the error of its update."""
Req = TypeVar("Req", bound=Message)
Resp = TypeVar("Resp", bound=Message)


def _kind_of(cls: type[Message]) -> kinds.Kind:
    return kinds.kind_of(cls())


def _namespace(kind: kinds.Kind, namespace: str) -> str:
    if not kind.namespaced:
        return ""
    return namespace or DEFAULT_NAMESPACE


def _unwrap(envelope: api_pb2.Object, cls: type[M]) -> M:
    if envelope.WhichOneof("kind") is None:
        return cls()
    obj = kinds.unwrap(envelope)
    if not isinstance(obj, cls):
        raise ApiError(
            f"the server returned a {obj.DESCRIPTOR.name}, expected a {cls.DESCRIPTOR.name}"
        )
    return obj


def _wrap(obj: Message) -> api_pb2.Object:
    """The envelope of `obj` (a copy), with the default namespace filled in."""
    envelope = kinds.wrap(obj)
    kind = kinds.kind_of(obj)
    inner = kinds.unwrap(envelope)
    meta: types_pb2.ObjectMeta = inner.metadata  # type: ignore[attr-defined]
    if kind.namespaced and not meta.namespace:
        meta.namespace = DEFAULT_NAMESPACE
    return envelope


def _trailing(e: grpc.aio.AioRpcError) -> list[tuple[str, str | bytes]]:
    return cast(list[tuple[str, str | bytes]], list(e.trailing_metadata() or ()))


def _error(e: grpc.aio.AioRpcError) -> ApiError:
    return wire.error_from_status(e.code(), e.details(), _trailing(e))


def _request_text(method: str, request: Message) -> str:
    """A call as the throttling log line names it: the method and, where the request says,
    the resource (upstream's names the request's URL)."""
    fields = request.DESCRIPTOR.fields_by_name
    resource = getattr(request, "resource", "") if "resource" in fields else ""
    return f"{method} {resource}" if resource else method


def _apiserver_of(metadata: Iterable[tuple[str, str | bytes]] | None) -> str:
    """The apiserver incarnation a stream's initial metadata names ("" for none)."""
    for key, value in metadata or ():
        if key == APISERVER_KEY:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return ""


class _WatchStream(AsyncIterator[WatchEvent[M]]):
    """The events of one Watch call, decoded; ends when the server closes the stream."""

    def __init__(
        self,
        call: grpc.aio.UnaryStreamCall[api_pb2.WatchRequest, api_pb2.WatchResponse],
        kind: type[M],
        counted: Client | None = None,
    ) -> None:
        """`counted`: the client whose events_received counts this stream's events (under
        the incarnation of the apiserver that sends them: its initial metadata says)."""
        self._call = call
        self._kind = kind
        self._counted = counted
        self._apiserver: str | None = None
        self._closed = False
        self._pending: collections.deque[api_pb2.WatchEvent] = collections.deque()

    def __aiter__(self) -> _WatchStream[M]:
        return self

    async def __anext__(self) -> WatchEvent[M]:
        while not self._pending:
            await self._read_batch()
        event = self._pending.popleft()
        return WatchEvent(event.type, _unwrap(event.object, self._kind))

    async def _read_batch(self) -> None:
        if self._closed:
            raise StopAsyncIteration
        try:
            msg = await self._call.read()
        except grpc.aio.AioRpcError as e:
            if self._closed or (e.code() == grpc.StatusCode.CANCELLED and self._call.cancelled()):
                raise StopAsyncIteration from None
            raise _error(e) from None
        except asyncio.CancelledError:
            await anyio.lowlevel.checkpoint()
            raise
        if msg is _EOF:
            self._closed = True
            raise StopAsyncIteration
        events = cast(api_pb2.WatchResponse, msg).events
        if self._counted is not None:
            if self._apiserver is None:  # (the headers came with the first message)
                self._apiserver = _apiserver_of(await self._call.initial_metadata())
            received = self._counted.events_received
            received[self._apiserver] = received.get(self._apiserver, 0) + len(events)
        self._pending.extend(events)

    def close(self) -> None:
        self._closed = True
        self._call.cancel()


def sibling_of(client: ApiClient, connection: ClientConnection | None = None) -> ApiClient:
    """`client.sibling(connection)` for a Client; any other ApiClient (a fake) is its own."""
    return client.sibling(connection) if isinstance(client, Client) else client


def unthrottled_of(client: ApiClient) -> ApiClient:
    """`client.unthrottled()` for a Client; any other ApiClient (a fake) is its own."""
    return client.unthrottled() if isinstance(client, Client) else client


def as_user_of(client: ApiClient, user: UserInfo) -> ApiClient:
    """`client.as_user(user)` for a Client; any other ApiClient (a fake) is its own."""
    return client.as_user(user) if isinstance(client, Client) else client


class Client:
    """An ApiClient over one gRPC channel; create it inside the event loop that uses it.

    `server` is HOST:PORT, or several separated by commas (apiservers of one cluster): the
    client then talks to one of them and fails over to the next when it goes away
    (kemu.client.endpoints)."""

    def __init__(
        self,
        server: str = "127.0.0.1:6443",
        *,
        timeout: float = 30.0,
        user_agent: str = "kemu",
        wait_for_server: bool = True,
        limits: ClientLimits | None = None,
        latency: CallDelay | None = None,
        user: UserInfo | None = None,
        transport: Transport = Transport.STREAM,
        tls: ClientTLS | None = None,
        credentials: TokenSource | None = None,
    ) -> None:
        """`wait_for_server=False` makes calls fail at once with Unavailable when nothing
        answers at `server` (for a user at a terminal) instead of waiting and retrying (for
        components, whose dependencies may start after them). `limits`: the component's
        client-side rate limits (kemu.client.flowcontrol, from its flags or configuration):
        every unary call and every retry waits for a token of this client's bucket (its
        `throttle`; `sibling()` makes another client with a bucket of its own); None, for a
        test's or a driver's client, is no limit. `latency`: what every call waits before it
        is sent, after its token (kemu.component.latency; None: nothing). A malformed list of
        several addresses raises ServerAddressError (a ValueError) naming --server. `user`: the
        user every call and watch claims (kemu.machinery.user: a kubelet's node; None: the
        apiserver names the user from `user_agent`). `transport`: how the Api's unary calls
        travel (kemu.client.call_stream: frames on the channel's one Calls stream, the
        default, as client-go's requests share one HTTP/2 connection; or one gRPC call each:
        docs/research/streams.md); the clock's calls, the
        watches and a `one_attempt` view's calls are unary either way, and a server without
        the stream gets unary calls. With `wait_for_server=False` the stream is opened
        without waiting for the server, so a call fails at once when nothing answers, as a
        unary call would. `tls`: the CA and client certificate of a kubeconfig
        (kemu.machinery.kubeconfig): the channel is TLS (None: plaintext, a bare cluster on
        loopback). `credentials`: a bearer token sent with every call and watch
        (kemu.client.credentials: a controller's ServiceAccount; None: the connection's
        certificate, or the user agent, names the caller)."""
        self.server = server
        self.credentials = credentials
        self.tls = tls
        self.transport = transport
        self._call_stream: CallStream | None = None
        self._latency = latency
        self.servers = parse_servers(server) if SEPARATOR in server else (server,)
        self.timeout = timeout
        self.wait_for_server = wait_for_server
        self._user_agent = user_agent
        self.user = user
        self._user_metadata = user.metadata() if user is not None else ()
        self.limits = limits
        self.throttle: Throttle | None = limits.new() if limits is not None else None
        self._channel: grpc.aio.Channel | None = None
        self._methods: dict[str, grpc.aio.UnaryUnaryMultiCallable[Message, Message]] = {}
        self._watch_method: (
            grpc.aio.UnaryStreamMultiCallable[api_pb2.WatchRequest, api_pb2.WatchResponse] | None
        ) = None
        self._base: Client | None = None
        self.clock_identity = ""
        """Set by a clock session (kemu.client.clock): calls and watches made from then on
        carry it, and their events are counted in `events_received`, for the event-driven
        clock."""
        self.events_received: dict[str, int] = {}
        """Watch events received on tagged watches, per apiserver incarnation."""
        self.requests_in_flight = 0
        """Calls being made (retries and their backoff included)."""
        self.requests_sent = 0
        """Calls made tagged with `clock_identity` (attempts: a retry is another), each with
        its number (CLOCK_CALL_KEY): the apiserver counts those it received, for the
        event-driven clock."""
        self.waiting_for_tokens = 0
        """Calls waiting for a token of their client-side rate limiter (this client's and its
        siblings'): not in flight, each a timer of the clock (kemu.client.clock)."""
        self.requests_abandoned = 0
        """Of `requests_sent`, those given up on before the apiserver answered (cancelled by
        their caller, or ended by the transport): it may never have received them."""

    @property
    def latency_waits(self) -> int:
        """Calls waiting their latency now (not in flight yet: kemu.component.latency)."""
        root = self._base or self
        return root._latency.waiting if root._latency is not None else 0

    def one_attempt(self, timeout: float) -> Client:
        """A view of this client, over the same channel, whose calls fail fast: one attempt
        that does not wait for the server to be ready (Unavailable at once when it refuses
        or is draining), bounded by `timeout` seconds. For a best-effort call on the way out
        (the lease release on stop) where client-go's fails at once on a refused connection.
        Closing the view does not close the channel."""
        if not timeout > 0:
            raise ValueError(f"one_attempt: timeout {timeout} must be > 0")
        view = Client(
            self.server,
            timeout=timeout,
            user_agent=self._user_agent,
            wait_for_server=False,
            user=self.user,
            credentials=self.credentials,
        )
        view._base = self._base or self
        view.throttle = self.throttle
        return view

    def unthrottled(self) -> Client:
        """Another client over the same channel with no rate limiter (upstream's kubelet
        heartbeat client: QPS -1)."""
        view = Client(
            self.server,
            timeout=self.timeout,
            user_agent=self._user_agent,
            wait_for_server=self.wait_for_server,
            user=self.user,
            credentials=self.credentials,
        )
        view._base = self._base or self
        return view

    def sibling(self, connection: ClientConnection | None = None) -> Client:
        """Another client over the same channel with a rate limiter of its own from the same
        limits (upstream: another clientset from the component's rest.Config, sharing its
        transport: the scheduler's event client, a leader election's client), or from
        `connection` (another rest.Config's qps and burst; a client with no limits stays
        without). Closing it does not close the channel."""
        limits = self.limits
        if limits is not None and connection is not None:
            limits = limits.with_connection(connection)
        view = Client(
            self.server,
            timeout=self.timeout,
            user_agent=self._user_agent,
            wait_for_server=self.wait_for_server,
            limits=limits,
            user=self.user,
            credentials=self.credentials,
        )
        view._base = self._base or self
        return view

    def as_user(self, user: UserInfo) -> Client:
        """This client (its channel and rate limiter) claiming `user` (a hollow kubelet's
        node: upstream's kubemark gives each hollow node a client of its own). Closing it does
        not close the channel."""
        view = Client(
            self.server,
            timeout=self.timeout,
            user_agent=self._user_agent,
            wait_for_server=self.wait_for_server,
            user=user,
            credentials=self.credentials,
        )
        view._base = self._base or self
        view.limits = self.limits
        view.throttle = self.throttle
        return view

    def with_credentials(self, credentials: TokenSource) -> Client:
        """Another client over the same channel, with a rate limiter of its own (as
        `sibling`), whose calls and watches present `credentials`' token (upstream: a
        controller's clientset from the ServiceAccount client builder). Closing it does not
        close the channel."""
        view = self.sibling()
        view.credentials = credentials
        return view

    async def _credential_metadata(self) -> tuple[tuple[str, str], ...]:
        return (bearer(await self.credentials.token()),) if self.credentials is not None else ()

    # ------------------------------------------------------------ channel

    def _ensure_channel(self) -> grpc.aio.Channel:
        if self._base is not None:
            return self._base._ensure_channel()
        # Created lazily: a grpc.aio channel belongs to the running event loop.
        if self._channel is None:
            options = [*_CHANNEL_OPTIONS, ("grpc.primary_user_agent", self._user_agent)]
            if len(self.servers) > 1:
                options.append(LB_POLICY)
                if self.tls is not None:
                    # verified as the first server's host: an ipv4:A,B target names none
                    options.append(
                        ("grpc.ssl_target_name_override", split_host_port(self.servers[0])[0])
                    )
            target = channel_target(self.servers)
            if self.tls is None:
                self._channel = grpc.aio.insecure_channel(target, options=options)
            else:
                credentials = channel_credentials(self.tls)
                self._channel = grpc.aio.secure_channel(target, credentials, options=options)
        return self._channel

    def _unary(
        self, name: str, response: type[Resp]
    ) -> grpc.aio.UnaryUnaryMultiCallable[Message, Resp]:
        if self._base is not None:
            return self._base._unary(name, response)
        method = self._methods.get(name)
        if method is None:
            method = self._ensure_channel().unary_unary(
                name if name.startswith("/") else _SERVICE + name,
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=response.FromString,
            )
            self._methods[name] = method
        return cast(grpc.aio.UnaryUnaryMultiCallable[Message, Resp], method)

    def _ensure_call_stream(self) -> CallStream:
        if self._call_stream is None:
            self._call_stream = CallStream(
                self._ensure_channel(), wait_for_ready=self.wait_for_server
            )
        return self._call_stream

    async def close(self) -> None:
        if self._base is not None:
            return  # a view: the channel is its base's
        if self._call_stream is not None:
            stream, self._call_stream = self._call_stream, None
            await stream.close()
        if self._channel is not None:
            channel, self._channel = self._channel, None
            self._methods.clear()
            self._watch_method = None
            await channel.close(None)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        with anyio.CancelScope(shield=True):
            await self.close()

    # ------------------------------------------------------------ calls

    async def _attempt(
        self, name: str, request: Message, response: type[Resp], seconds: float
    ) -> Resp:
        """One attempt, bounded by `seconds` (gRPC's deadline: an anyio scope cannot
        interrupt the call), waiting for the server to be reachable. A write made as leader
        carries the term's fencing token (kemu.client.fencing)."""
        fence = fencing.current() if name in _WRITES else None
        metadata = fence.token.metadata() if fence is not None else ()
        metadata = (*metadata, *self._user_metadata, *(await self._credential_metadata()))
        root = self._base or self
        tagged = bool(root.clock_identity)
        if tagged:
            # (the apiserver counts them per identity, for the event-driven clock)
            root.requests_sent += 1
            metadata = (
                *metadata,
                (CLOCK_IDENTITY_KEY, root.clock_identity),
                (CLOCK_CALL_KEY, str(root.requests_sent)),
            )
        if (
            root.transport is Transport.STREAM
            and self.wait_for_server == root.wait_for_server
            and name[0] != "/"
        ):
            # (a one_attempt view of a waiting client is unary: the root's stream waits for
            # the server, the view must not)
            stream = root._ensure_call_stream()
            if not stream.unsupported:
                try:
                    data = await stream.call(name, request.SerializeToString(), metadata, seconds)
                except grpc.aio.AioRpcError as e:
                    raise self._failed(e, tagged, fence) from None
                except StreamUnsupported:
                    logger.info("%s does not serve the Calls stream: unary calls", self.server)
                except asyncio.CancelledError:
                    if tagged:
                        root.requests_abandoned += 1
                    await anyio.lowlevel.checkpoint()
                    raise
                else:
                    return response.FromString(data)
        call = self._unary(name, response)(
            request,
            timeout=seconds,
            wait_for_ready=self.wait_for_server,
            metadata=metadata or None,
        )
        try:
            return await call
        except grpc.aio.AioRpcError as e:
            raise self._failed(e, tagged, fence) from None
        except asyncio.CancelledError:
            if tagged:
                root.requests_abandoned += 1
            call.cancel()
            await anyio.lowlevel.checkpoint()
            raise

    def _failed(
        self, e: grpc.aio.AioRpcError, tagged: bool, fence: fencing.Fence | None
    ) -> ApiError:
        """The error of an attempt that failed with `e` (its fence told when it was refused);
        counted abandoned when `tagged` and no server answered it."""
        root = self._base or self
        if tagged and not wire.answered(_trailing(e)):
            root.requests_abandoned += 1
        err = _error(e)
        if fence is not None and isinstance(err, Fenced):
            fence.refused(err)
        if self.credentials is not None and isinstance(err, Unauthorized):
            self.credentials.reset()
        return err

    async def _call(
        self,
        name: str,
        request: Message,
        response: type[Resp],
        retry_on: tuple[type[ApiError], ...] = (),
    ) -> Resp:
        """One request within `timeout`: attempted again after a TooManyRequests that says
        when to retry (the apiserver's in-flight limit: nothing of the request was processed,
        so a write is safe to repeat, as client-go's checkWait), waiting at least that long,
        and after the errors in `retry_on`, with backoff. With a throttle, the first attempt
        and each retry first wait for a token (client-go's tryThrottle and withRetry.Before;
        the first before `timeout` starts, as upstream's, so that a throttled call does not
        time out before it is made); a call waiting for a token is not in flight."""
        root = self._base or self
        throttled = self.throttle is not None and not name.startswith("/")
        if throttled:
            await self._wait_for_token(name, request)
        if root._latency is not None and not name.startswith(_CLOCK_SERVICE):
            # (a timer of the clock, before the call counts as in flight: see kemu.component.latency)
            await root._latency.wait()
        root.requests_in_flight += 1
        try:
            return await self._retrying(name, request, response, retry_on, throttled)
        finally:
            root.requests_in_flight -= 1

    async def _wait_for_token(self, name: str, request: Message, retry_info: str = "") -> None:
        assert self.throttle is not None
        root = self._base or self
        root.waiting_for_tokens += 1
        try:
            await self.throttle.wait(
                _VERBS.get(name, "GET"), _request_text(name, request), retry_info
            )
        finally:
            root.waiting_for_tokens -= 1

    async def _retrying(
        self,
        name: str,
        request: Message,
        response: type[Resp],
        retry_on: tuple[type[ApiError], ...],
        throttled: bool,
    ) -> Resp:
        deadline = anyio.current_time() + self.timeout
        backoff = Backoff(_RETRY_INITIAL, _RETRY_MAX, jitter=0.5)
        retries = 0
        while True:
            try:
                return await self._attempt(
                    name, request, response, max(deadline - anyio.current_time(), 0.001)
                )
            except TooManyRequests as e:
                if not e.retry_after_seconds:
                    raise
                # Retry-After is a floor; the jitter spreads the clients refused together.
                delay = max(float(e.retry_after_seconds), backoff.next()) * (
                    1 + random.random() / 4
                )
                if anyio.current_time() + delay >= deadline:
                    raise
                logger.debug("%s: too many requests, retrying in %.2fs", name, delay)
            except retry_on as e:
                delay = backoff.next()
                if not self.wait_for_server or anyio.current_time() + delay >= deadline:
                    raise
                logger.debug("%s: server unavailable (%s), retrying in %.2fs", name, e, delay)
            await anyio.sleep(delay)
            retries += 1
            if throttled:
                root = self._base or self
                root.requests_in_flight -= 1  # (waiting on a timer of the clock: see _call)
                try:
                    await self._wait_for_token(
                        name, request, f"retries: {retries}, retry-after: {delay:.3g}s"
                    )
                finally:
                    root.requests_in_flight += 1

    async def _read(self, name: str, request: Message, response: type[Resp]) -> Resp:
        """A call that is safe to repeat: also retried while the server is Unavailable."""
        return await self._call(name, request, response, (Unavailable,))

    async def wait_ready(self, timeout: float | None = None) -> api_pb2.VersionInfo:  # noqa: ASYNC109
        deadline = None if timeout is None else anyio.current_time() + timeout
        backoff = Backoff(_RETRY_INITIAL, _RETRY_MAX, jitter=0.5)
        while True:
            try:
                return await self._call("Version", api_pb2.VersionRequest(), api_pb2.VersionInfo)
            except (Unavailable, Timeout) as e:
                delay = backoff.next()
                if deadline is not None and anyio.current_time() + delay >= deadline:
                    raise Timeout(f"the server at {self.server} is not ready: {e}") from None
                logger.info("waiting for the server at %s: %s", self.server, e)
                await anyio.sleep(delay)

    async def version(self) -> api_pb2.VersionInfo:
        return await self._read("Version", api_pb2.VersionRequest(), api_pb2.VersionInfo)

    async def create(self, obj: M) -> M:
        req = api_pb2.CreateRequest(object=_wrap(obj))
        out = await self._call("Create", req, api_pb2.Object)
        return _unwrap(out, type(obj))

    async def get(self, kind: type[M], name: str, namespace: str = "") -> M:
        k = _kind_of(kind)
        req = api_pb2.GetRequest(resource=k.resource, namespace=_namespace(k, namespace), name=name)
        out = await self._read("Get", req, api_pb2.Object)
        return _unwrap(out, kind)

    async def list(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
        limit: int = 0,
        continue_: str = "",
    ) -> ListResult[M]:
        k = _kind_of(kind)
        req = api_pb2.ListRequest(
            resource=k.resource,
            namespace=namespace if k.namespaced else "",
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
            limit=limit,
            **{"continue": continue_},
        )
        out = await self._read("List", req, api_pb2.ListResponse)
        return ListResult(
            [_unwrap(item, kind) for item in out.items],
            out.resource_version,
            getattr(out, "continue"),
        )

    async def list_all(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        resource_version_match: str = "",
    ) -> ListResult[M]:
        return await list_pages(
            self,
            kind,
            namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            resource_version_match=resource_version_match,
        )

    def watch(
        self,
        kind: type[M],
        namespace: str = "",
        *,
        resource_version: str = "",
        label_selector: str = "",
        field_selector: str = "",
        allow_watch_bookmarks: bool = False,
        send_initial_events: bool | None = None,
        resource_version_match: str = "",
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[M]]]:
        k = _kind_of(kind)
        req = api_pb2.WatchRequest(
            resource=k.resource,
            namespace=namespace if k.namespaced else "",
            label_selector=label_selector,
            field_selector=field_selector,
            resource_version=resource_version,
            allow_watch_bookmarks=allow_watch_bookmarks,
            resource_version_match=resource_version_match,
        )
        if send_initial_events is not None:
            req.send_initial_events = send_initial_events
        return self._watch(req, kind)

    @asynccontextmanager
    async def _watch(
        self, req: api_pb2.WatchRequest, kind: type[M]
    ) -> AsyncIterator[AsyncIterator[WatchEvent[M]]]:
        method = self._watch_method
        if method is None:
            method = self._ensure_channel().unary_stream(
                _SERVICE + "Watch",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=api_pb2.WatchResponse.FromString,
            )
            self._watch_method = method
        # No deadline: a watch lives as long as its reader wants it.
        root = self._base or self
        identity = root.clock_identity
        metadata = ((CLOCK_IDENTITY_KEY, identity),) if identity else ()
        metadata = (*metadata, *self._user_metadata, *(await self._credential_metadata()))
        call = method(req, wait_for_ready=self.wait_for_server, metadata=metadata or None)
        stream = _WatchStream(call, kind, root if identity else None)
        try:
            yield stream
        finally:
            stream.close()

    # ------------------------------------------------------------ the cluster clock

    async def clock_status(self) -> clock_pb2.ClockStatus:
        """The cluster clock: its mode, time and, in virtual time, segment and timers."""
        return await self._read(
            _CLOCK_SERVICE + "GetClock", clock_pb2.ClockRequest(), clock_pb2.ClockStatus
        )

    async def set_clock_rate(self, rate: float) -> clock_pb2.ClockStatus:
        """Sets how fast virtual time flows (0 holds it, math.inf is rate max: the
        event-driven clock); BadRequest in real time."""
        request = (
            clock_pb2.SetClockRateRequest(max=True)
            if rate == math.inf
            else clock_pb2.SetClockRateRequest(rate=rate)
        )
        return await self._call(_CLOCK_SERVICE + "SetClockRate", request, clock_pb2.ClockStatus)

    async def advance_clock(
        self,
        seconds: float,
        timeout: float = _ADVANCE_TIMEOUT,  # noqa: ASYNC109
    ) -> clock_pb2.ClockStatus:
        """Runs the cluster as at rate max until `seconds` of virtual time have passed and
        the work due then is done, then holds the clock; one attempt (a retry would advance
        again), bounded by `timeout` wall seconds."""
        return await self._attempt(
            _CLOCK_SERVICE + "AdvanceClock",
            clock_pb2.AdvanceClockRequest(seconds=seconds),
            clock_pb2.ClockStatus,
            timeout,
        )

    async def expect_clock_session(self, token: str, ttl: float) -> clock_pb2.ClockStatus:
        """Clock.ExpectClockSession: work no clock session shows (a component being started
        that will report `token`, or a driver's burst) holds the event-driven clock and the
        cluster's steps until a session reporting `token` answers idle or `ttl` wall
        seconds pass; `ttl` 0 withdraws it."""
        return await self._call(
            _CLOCK_SERVICE + "ExpectClockSession",
            clock_pb2.ExpectClockSessionRequest(boot_token=token, ttl_seconds=ttl),
            clock_pb2.ClockStatus,
        )

    @asynccontextmanager
    async def clock_burst(self, ttl: float = _BURST_TTL) -> AsyncIterator[None]:
        """A driver's writes at one held virtual instant as one burst (docs/virtual-time.md,
        the order rule): until the block ends (or `ttl` wall seconds pass) the cluster takes
        no step (a scheduling cycle, a binding cycle's look) and the clock does not jump, so
        the reactions to every write of the block are in before the next scheduling cycle
        and the queue takes the pods in its order (priority, then the order written),
        however long the driver takes between its writes. Held as an announced boot no
        session will report, withdrawn at the end."""
        token = f"burst-{random.getrandbits(64):016x}"
        await self.expect_clock_session(token, ttl)
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self.expect_clock_session(token, 0)

    async def clock_session(
        self, reports: AsyncIterator[clock_pb2.ClockReport]
    ) -> AsyncIterator[clock_pb2.ClockUpdate]:
        """A component's clock session (kemu.client.clock): the segments and probes the
        apiserver streams while `reports` (the component's timers, its answers to probes)
        flow to it. Ends with the stream; errors as ApiError."""
        method = self._ensure_channel().stream_stream(
            _CLOCK_SERVICE + "ClockSession",
            request_serializer=lambda m: m.SerializeToString(),
            response_deserializer=clock_pb2.ClockUpdate.FromString,
        )
        call = method(reports, wait_for_ready=self.wait_for_server)  # (no deadline)
        try:
            async for segment in call:
                yield segment
        except grpc.aio.AioRpcError as e:
            raise _error(e) from None
        finally:
            call.cancel()

    async def update(self, obj: M) -> M:
        out = await self._call("Update", api_pb2.UpdateRequest(object=_wrap(obj)), api_pb2.Object)
        return _unwrap(out, type(obj))

    async def update_batch(self, objs: Sequence[M]) -> BatchResults[M]:
        """Several updates in one call (kemu's UpdateBatch; a hollow kubelet's node Leases
        due at one instant): each item is its own Update on the server, and its result here
        is the object written or the error that Update would have raised. The call as a whole
        raises only what refuses all of it (the in-flight limit, an apiserver without
        UpdateBatch: Unimplemented is an InternalError)."""
        req = api_pb2.UpdateBatchRequest(
            items=[api_pb2.UpdateRequest(object=_wrap(o)) for o in objs]
        )
        out = await self._call("UpdateBatch", req, api_pb2.UpdateBatchResponse)
        if len(out.results) != len(objs):
            raise InternalError(f"UpdateBatch: {len(out.results)} results for {len(objs)} items")
        results: BatchResults[M] = []
        for obj, result in zip(objs, out.results, strict=True):
            if result.HasField("error"):
                results.append(error_for_reason(result.error.reason, result.error.message))
            else:
                results.append(_unwrap(result.object, type(obj)))
        return results

    async def update_status(self, obj: M) -> M:
        req = api_pb2.UpdateRequest(object=_wrap(obj))
        out = await self._call("UpdateStatus", req, api_pb2.Object)
        return _unwrap(out, type(obj))

    async def patch(
        self,
        kind: type[M],
        name: str,
        patch: Mapping[str, object] | str,
        namespace: str = "",
        *,
        subresource: str = "",
    ) -> M:
        k = _kind_of(kind)
        body = patch if isinstance(patch, str) else json.dumps(dict(patch))
        req = api_pb2.PatchRequest(
            resource=k.resource,
            namespace=_namespace(k, namespace),
            name=name,
            patch=body,
            subresource=subresource,
        )
        out = await self._call("Patch", req, api_pb2.Object)
        return _unwrap(out, kind)

    async def delete(
        self,
        kind: type[M],
        name: str,
        namespace: str = "",
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        orphan_dependents: bool | None = None,
    ) -> M:
        k = _kind_of(kind)
        req = api_pb2.DeleteRequest(
            resource=k.resource, namespace=_namespace(k, namespace), name=name
        )
        if grace_period_seconds is not None:
            req.grace_period_seconds = grace_period_seconds
        if uid is not None:
            req.preconditions.uid = uid
        if resource_version is not None:
            req.preconditions.resource_version = resource_version
        if propagation_policy is not None:
            req.propagation_policy = propagation_policy
        if orphan_dependents is not None:
            req.orphan_dependents = orphan_dependents
        out = await self._call("Delete", req, api_pb2.Object)
        return _unwrap(out, kind)

    # ---- custom resources (issue #57 item 3): named by resource (plural.group), as a
    # CustomObject is any CRD's

    async def list_custom(
        self, resource: str, namespace: str = ""
    ) -> tuple[types_pb2.CustomObject, ...]:
        return tuple((await self.list_all_custom(resource, namespace)).items)

    async def list_all_custom(
        self, resource: str, namespace: str = ""
    ) -> ListResult[types_pb2.CustomObject]:
        items: list[types_pb2.CustomObject] = []
        token = ""
        while True:
            req = api_pb2.ListRequest(
                resource=resource, namespace=namespace, limit=500, **{"continue": token}
            )
            out = await self._read("List", req, api_pb2.ListResponse)
            items += [_unwrap(item, types_pb2.CustomObject) for item in out.items]
            token = getattr(out, "continue")
            if not token:
                return ListResult(items, out.resource_version, "")

    def watch_custom(
        self,
        resource: str,
        namespace: str = "",
        *,
        resource_version: str = "",
        allow_watch_bookmarks: bool = False,
    ) -> AbstractAsyncContextManager[AsyncIterator[WatchEvent[types_pb2.CustomObject]]]:
        req = api_pb2.WatchRequest(
            resource=resource,
            namespace=namespace,
            resource_version=resource_version,
            allow_watch_bookmarks=allow_watch_bookmarks,
        )
        return self._watch(req, types_pb2.CustomObject)

    async def get_custom(
        self, resource: str, name: str, namespace: str = ""
    ) -> types_pb2.CustomObject:
        req = api_pb2.GetRequest(resource=resource, namespace=namespace, name=name)
        out = await self._read("Get", req, api_pb2.Object)
        return _unwrap(out, types_pb2.CustomObject)

    async def patch_custom(
        self, resource: str, name: str, patch: Mapping[str, object], namespace: str = ""
    ) -> types_pb2.CustomObject:
        req = api_pb2.PatchRequest(
            resource=resource, namespace=namespace, name=name, patch=json.dumps(dict(patch))
        )
        out = await self._call("Patch", req, api_pb2.Object)
        return _unwrap(out, types_pb2.CustomObject)

    async def delete_custom(
        self,
        resource: str,
        name: str,
        namespace: str,
        *,
        uid: str,
        propagation_policy: str,
        resource_version: str | None = None,
    ) -> None:
        req = api_pb2.DeleteRequest(
            resource=resource, namespace=namespace, name=name, propagation_policy=propagation_policy
        )
        req.preconditions.uid = uid
        if resource_version is not None:
            req.preconditions.resource_version = resource_version
        await self._call("Delete", req, api_pb2.Object)

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        annotations: Mapping[str, str] | None = None,
        uid: str = "",
        resource_version: str = "",
    ) -> None:
        """pods/binding. `uid` and `resource_version`, when given, are preconditions: the
        binding fails (Conflict) unless the stored pod still has them."""
        req = api_pb2.Binding(
            metadata=types_pb2.ObjectMeta(
                namespace=namespace or DEFAULT_NAMESPACE,
                name=name,
                uid=uid,
                resource_version=resource_version,
                annotations=dict(annotations or {}),
            ),
            target=types_pb2.ObjectReference(kind="Node", name=node_name),
        )
        await self._call("Bind", req, api_pb2.Status)

    async def resize(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        out = await self._call("Resize", api_pb2.UpdateRequest(object=_wrap(pod)), api_pb2.Object)
        return _unwrap(out, types_pb2.Pod)

    async def evict(
        self,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        propagation_policy: str | None = None,
        dry_run: bool = False,
    ) -> None:
        req = api_pb2.Eviction(
            metadata=types_pb2.ObjectMeta(namespace=namespace or DEFAULT_NAMESPACE, name=name)
        )
        if grace_period_seconds is not None:
            req.grace_period_seconds = grace_period_seconds
        if uid is not None:
            req.preconditions.uid = uid
        if resource_version is not None:
            req.preconditions.resource_version = resource_version
        if propagation_policy is not None:
            req.propagation_policy = propagation_policy
        if dry_run:
            req.dry_run.append("All")
        await self._call("Evict", req, api_pb2.Status)

    async def create_token(self, request: api_pb2.TokenRequest) -> api_pb2.TokenRequest:
        """serviceaccounts/token for the ServiceAccount `request.metadata` names (kubectl
        create token's TokenRequest): the request answered, its status the token. Not
        retried: each attempt would mint another token (a create)."""
        return await self._call("CreateToken", request, api_pb2.TokenRequest)
