"""What every call of the gRPC edge goes through, whichever service it is of (the Api, the
cluster clock): request metrics, the event-driven clock's count of work in flight, the fencing
token of a leader's write, error translation (kemu.wire), and the in-flight limit.

Handlers are registered by hand rather than through the generated servicer base: requests
arrive as bytes (decoded by wire.unary: one that does not decode is INVALID_ARGUMENT, not
gRPC's UNKNOWN), and some answers leave as bytes built once (the watch cache's frames, a
created object's envelope).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeAlias, TypeVar

import grpc
from google.protobuf.message import Message

from apiserver.clock.activity import Activity
from apiserver.endpoints.inflight import Limiter, limit_unary
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

    def __init__(self, metrics: Metrics, activity: Activity) -> None:
        self.metrics = metrics
        self.activity = activity

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
            with fencing.serving(fencing_token(metadata)), field_managers.serving(manager), counted:
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
        fn = behaviour
        if limiter is not None:
            fn = limit_unary(name, behaviour, limiter, refused=self.refused)
        return Method(wire.unary(fn, request_type), serialize)

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


def handler_of(method: Method) -> grpc.RpcMethodHandler[bytes, Any]:
    return grpc.unary_unary_rpc_method_handler(
        method.behaviour, response_serializer=method.serialize
    )


def serialize(msg: Message) -> bytes:
    return msg.SerializeToString()


def as_is(data: bytes) -> bytes:
    return data
