"""What every call of the gRPC edge goes through, whichever service it is of (the Api, the
cluster clock): request metrics, the event-driven clock's count of work in flight, the fencing
token of a leader's write, the user admission sees (apiserver/admission/request_user.py), error
translation (kemu.wire), and the in-flight limit.

Handlers are registered by hand rather than through the generated servicer base: requests
arrive as bytes, authenticated before anything reads them (`Calls.authenticated`, as
upstream's chain authenticates before a handler decodes a body), then decoded by wire.unary
(one that does not decode is INVALID_ARGUMENT, not gRPC's UNKNOWN), and some answers leave as
bytes built once (the watch cache's frames, a created object's envelope).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar
from typing import Any, Final, TypeAlias, TypeVar

import grpc
from google.protobuf.message import DecodeError, Message

from apiserver.admission import request_user
from apiserver.authorization.modes import Authorization
from apiserver.clock.activity import Activity
from apiserver.endpoints import identity
from apiserver.endpoints.filters.authorization import authorize
from apiserver.endpoints.inflight import Limiter, RequestInfo, grpc_request_info, limit_unary
from apiserver.endpoints.metrics import Metrics
from apiserver.endpoints.stream_calls import Method
from apiserver.registry import fencing, field_managers
from kemu import wire
from kemu.machinery.errors import ApiError, InternalError
from kemu.machinery.fencing import ENFORCE_KEY, TOKEN_KEY, FencingToken
from kemu.machinery.virtual_time import clock_caller

logger = logging.getLogger(__name__)

_Req = TypeVar("_Req", bound=Message)
_R = TypeVar("_R")

Context: TypeAlias = grpc.aio.ServicerContext[bytes, _R]
"""The context of a call whose request arrives as bytes and whose answer is an `_R` (bytes
built by the edge, or a message the handler's serializer encodes)."""


def metadata_value(context: grpc.aio.ServicerContext[bytes, _R], key: str) -> str:
    for k, value in context.invocation_metadata() or ():
        if k == key:
            return value if isinstance(value, str) else value.decode(errors="replace")
    return ""


def fencing_token(metadata: Iterable[tuple[str, str | bytes]]) -> FencingToken | None:
    """The fencing token a leader's write carries in its metadata (BadRequest if malformed)."""
    token = enforce = ""
    for key, value in metadata:
        if key == TOKEN_KEY:
            token = value if isinstance(value, str) else value.decode(errors="replace")
        elif key == ENFORCE_KEY:
            enforce = value if isinstance(value, str) else value.decode(errors="replace")
    return FencingToken.from_request(token, enforce)


def _user_agent(metadata: Iterable[tuple[str, str | bytes]]) -> str:
    """The caller's user agent: kemu.client sends its component's upstream name first."""
    for key, value in metadata:
        if key == "user-agent":
            return value if isinstance(value, str) else value.decode(errors="replace")
    return ""


async def abort(context: grpc.aio.ServicerContext[bytes, _R], err: ApiError) -> None:
    """Ends the call with `err` as its status (its reason in the trailing metadata)."""
    code, details, md = wire.status_of(err)
    context.set_trailing_metadata(md)
    await context.abort(code, details)


class Calls:
    """Serves one call: counted, fenced, measured, its errors translated."""

    def __init__(
        self, metrics: Metrics, activity: Activity, authorization: Authorization | None = None
    ) -> None:
        """`authorization`: what --authorization-mode built (None: AlwaysAllow, nothing
        asked)."""
        self.metrics = metrics
        self.activity = activity
        self.authorization = authorization

    async def serve(
        self,
        verb: str,
        resource: str,
        context: Context[_R],
        call: Callable[[], Awaitable[_R]],
    ) -> _R:
        start = time.perf_counter()
        code = grpc.StatusCode.OK
        try:
            # (the clock's own calls, AdvanceClock waiting for time, are not the cluster's work)
            # (the metadata read once: gRPC builds it anew on each read)
            metadata = context.invocation_metadata() or ()
            counted = self.activity.request(*clock_caller(metadata), in_flight=resource != "clock")
            manager = field_managers.from_grpc_user_agent(_user_agent(metadata))
            with (
                fencing.serving(fencing_token(metadata)),
                field_managers.serving(manager),
                request_user.serving(
                    identity.of_metadata(metadata, identity.of_certificate(context))
                ),
                counted,
            ):
                return await call()
        except ApiError as e:
            code = wire.status_of(e)[0]
            await abort(context, e)
            raise  # unreachable: abort raises
        except grpc.aio.AbortError:
            raise
        except Exception as e:
            logger.exception("%s %s failed", verb, resource)
            code = grpc.StatusCode.INTERNAL
            await abort(context, InternalError(f"internal error: {e}"))
            raise
        finally:
            self.metrics.observe(verb, resource or "", code.name, time.perf_counter() - start)

    def refused(self, context: grpc.aio.ServicerContext[bytes, _R]) -> None:
        """A call the in-flight limit refused. (A component in a clock session counted the call
        as made: were it not counted as received, the event-driven clock would wait for it for
        ever.)"""
        self.activity.refused(*clock_caller(context.invocation_metadata() or ()))

    def method(
        self,
        name: str,
        behaviour: Callable[[_Req, Context[_R]], Awaitable[_R]],
        request_type: type[_Req],
        serialize: Callable[[_R], bytes],
        limiter: Limiter | None,
    ) -> Method:
        """The unary method `name` over its request's bytes: decoded, behind `limiter` (the
        in-flight limit, which reads the decoded request: a Lease write is exempt); what both
        its gRPC handler and the Calls stream (stream_calls.py) serve."""
        fn = self.authorized(name, behaviour)
        if limiter is not None:
            fn = limit_unary(name, fn, limiter, refused=self.refused)
        return Method(self.authenticated(wire.unary(fn, request_type)), serialize)

    def authenticated(
        self, behaviour: Callable[[bytes, Context[_R]], Awaitable[_R]]
    ) -> Callable[[bytes, Context[_R]], Awaitable[_R]]:
        """`behaviour` (over the request's bytes) behind authentication, before anything
        reads the request, as upstream's chain authenticates before its handler decodes a
        body (DefaultBuildHandlerChain: WithAuthentication runs before priority and fairness
        and WithAuthorization): a credential no authenticator accepts (or none, with
        --anonymous-auth=false) ends the call UNAUTHENTICATED whatever its bytes, counted as
        a refused call for the event-driven clock. The requester found is the call's
        (`requester`)."""

        async def authenticated(data: bytes, context: Context[_R]) -> _R:
            try:
                found = identity.requester_of_grpc(context)
            except ApiError as e:
                self.refused(context)
                await abort(context, e)
                raise  # (abort raises)
            token = _REQUESTER.set(found)
            try:
                return await behaviour(data, context)
            finally:
                _REQUESTER.reset(token)

        return authenticated

    def authorized(
        self, name: str, behaviour: Callable[[_Req, Context[_R]], Awaitable[_R]]
    ) -> Callable[[_Req, Context[_R]], Awaitable[_R]]:
        """The unary method `name` behind the authorizer (the behaviour itself when every
        request is allowed): a refusal ends the call with its Status (PERMISSION_DENIED for
        Forbidden), counted as a refused call for the event-driven clock."""
        authorization = self.authorization
        if authorization is None or authorization.always_allow or name in _AUTHORIZED_BY_ITEM:
            return behaviour

        async def authorized(request: _Req, context: Context[_R]) -> _R:
            info = grpc_request_info(name, request)
            try:
                found = requester(context)  # (Unauthorized: 401)
                info = dataclasses.replace(info, user=found.user)
                authorize(authorization, found, info)
            except ApiError as e:
                self.refused(context)
                code = wire.status_of(e)[0]
                self.metrics.observe(*_metric_labels(name, info), code.name, 0.0)
                await abort(context, e)
                raise  # (abort raises)
            return await behaviour(request, context)

        return authorized

    def unary(
        self,
        name: str,
        behaviour: Callable[[_Req, Context[_R]], Awaitable[_R]],
        request_type: type[_Req],
        serialize: Callable[[_R], bytes],
        limiter: Limiter | None,
    ) -> grpc.RpcMethodHandler[bytes, _R]:
        """The gRPC handler of the unary method `name` (see `method`)."""
        return handler_of(self.method(name, behaviour, request_type, serialize, limiter))


_SUBRESOURCE_METHODS: Final = frozenset({"Bind", "Evict", "Resize", "CreateToken"})
_AUTHORIZED_BY_ITEM: Final = frozenset({"UpdateBatch"})
"""Methods whose items are authorized one by one as their own calls would be (servicer.py):
the call itself is authenticated only."""


def _metric_labels(method: str, info: RequestInfo) -> tuple[str, str]:
    """The verb and resource labels `Calls.serve` gives a call of `method` (a refused call
    is counted as the served ones are: apiserver_request_total counts 403s too)."""
    if info.path == "/version":
        return "get", "version"
    if info.path == "/clock":
        return info.verb, "clock"
    if method == "UpdateStatus":
        return "update_status", info.resource
    if method in _SUBRESOURCE_METHODS:
        return info.verb, f"{info.resource}/{info.subresource}"
    return info.verb, info.resource


_REQUESTER: ContextVar[identity.Requester | None] = ContextVar("requester", default=None)
"""The requester `Calls.authenticated` (`authenticated_stream`) found for the call under way."""


def requester(context: Context[_R]) -> identity.Requester:
    """The call's requester: the one its authentication found, else found now (Unauthorized
    for a credential no authenticator accepts)."""
    found = _REQUESTER.get()
    return found if found is not None else identity.requester_of_grpc(context)


def authenticated_stream(
    behaviour: Callable[[bytes, Context[_R]], AsyncIterator[_R]],
) -> Callable[[bytes, Context[_R]], Awaitable[None]]:
    """The server stream (Watch) behind authentication, before anything reads its request,
    as `Calls.authenticated` (a watch is no call the event-driven clock counts: a refused one
    is not counted either, as `authorized_stream`'s); the handler gRPC runs.

    It writes each item itself rather than being a generator gRPC iterates: a call cancelled
    while a write waits on a client that does not read (a frozen process; the server's
    drain) leaves a generator suspended at its `yield`, which gRPC drops and the event
    loop's finalizer closes later in a task of its own, where the watch's context variables
    cannot be reset ("created in a different Context", never retrieved) and priority and
    fairness's seats wait for it. A write cancelled here closes the chain in the call's own
    task, at once."""

    async def authenticated(data: bytes, context: Context[_R]) -> None:
        try:
            found = identity.requester_of_grpc(context)
        except ApiError as e:
            await abort(context, e)
            raise  # (abort raises)
        _REQUESTER.set(found)  # (the call's own task: gone with it)
        async with contextlib.aclosing(behaviour(data, context)) as it:  # type: ignore[type-var]
            async for item in it:
                await context.write(item)

    return authenticated


def authorized_stream(
    calls: Calls,
    name: str,
    behaviour: Callable[[bytes, Context[_R]], AsyncIterator[_R]],
    decode: Callable[[bytes], Message],
) -> Callable[[bytes, Context[_R]], AsyncIterator[_R]]:
    """The server stream `name` (Watch) behind authentication and the authorizer, as
    `Calls.authorized`; `decode`
    reads the request for its attributes (one that does not decode is left to the
    behaviour, which refuses it)."""
    authorization = calls.authorization

    async def authorized(data: bytes, context: Context[_R]) -> AsyncGenerator[_R, None]:
        try:
            request = decode(data)
        except DecodeError:
            request = None
        if request is not None:
            try:
                found = requester(context)  # (Unauthorized: 401)
                if authorization is not None and not authorization.always_allow:
                    info = grpc_request_info(name, request, found.user)
                    authorize(authorization, found, info)
            except ApiError as e:
                await abort(context, e)
                raise  # (abort raises)
        async with contextlib.aclosing(behaviour(data, context)) as it:  # type: ignore[type-var]
            async for item in it:
                yield item

    return authorized


def handler_of(method: Method) -> grpc.RpcMethodHandler[bytes, Any]:
    return grpc.unary_unary_rpc_method_handler(
        method.behaviour, response_serializer=method.serialize
    )


def serialize(msg: Message) -> bytes:
    return msg.SerializeToString()


def as_is(data: bytes) -> bytes:
    return data
