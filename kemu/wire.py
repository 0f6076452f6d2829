"""How kemu's errors travel over gRPC: shared by the servers' edges and kemu.client.

A server error becomes a gRPC status code plus trailing metadata carrying the typed reason
and, for Invalid, the field causes; the client rebuilds the same exception class from them.
Both are bounded (MAX_DETAILS_BYTES, MAX_CAUSES_CHARS) so that an error echoing a large input
never overflows the client's metadata limit (8 KiB by default), which would turn a clear
refusal into an opaque transport error.

A server's handlers take their request as bytes and decode it themselves (`unary`,
`unary_stream`, `service_handler`): a request that does not decode is INVALID_ARGUMENT naming
the message type, not the UNKNOWN gRPC answers when its own deserializer fails.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Iterable
from typing import Final, NoReturn, Protocol, TypeVar

import grpc
from google.protobuf import message_factory
from google.protobuf.descriptor import ServiceDescriptor
from google.protobuf.message import DecodeError, Message

from kemu.machinery.errors import (
    ApiError,
    BadRequest,
    Cause,
    InternalError,
    Subject,
    TooManyRequests,
    error_for_reason,
)

REASON_KEY: Final = "kemu-reason"
CAUSES_KEY: Final = "kemu-causes"
SUBJECT_KEY: Final = "kemu-details"
"""The Status's details (name, group, kind) as JSON, when the error names its object."""
# Seconds the client should wait before trying again: the REST edge's Retry-After header.
RETRY_AFTER_KEY: Final = "retry-after"
UNPROCESSED_KEY: Final = "kemu-unprocessed"
"""On a call's UNAVAILABLE answer: the server did not start it (a draining Calls stream's,
apiserver/endpoints/stream_calls.py), so it is safe to send again, write or not."""
MAX_DETAILS_BYTES: Final = 1024
"""The status message's UTF-8 bytes at most (percent-encoded on the wire: up to 3 KiB)."""
MAX_CAUSES_CHARS: Final = 2048
"""The causes' JSON (ASCII) at most; causes that do not fit are left out."""
_MAX_CAUSE_BYTES: Final = 256

_Req = TypeVar("_Req", bound=Message)
_Resp = TypeVar("_Resp")


class AbortContext(Protocol):
    """What `abort` needs of a call's context: any `grpc.aio.ServicerContext[Req, Resp]`."""

    def set_trailing_metadata(self, trailing_metadata: tuple[tuple[str, str], ...]) -> None: ...

    async def abort(self, code: grpc.StatusCode, details: str = "") -> NoReturn: ...


_Ctx = TypeVar("_Ctx", bound=AbortContext)

STATUS_CODES: Final[dict[str, grpc.StatusCode]] = {
    "NotFound": grpc.StatusCode.NOT_FOUND,
    "AlreadyExists": grpc.StatusCode.ALREADY_EXISTS,
    "Conflict": grpc.StatusCode.ABORTED,
    "Fenced": grpc.StatusCode.ABORTED,
    "Invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "BadRequest": grpc.StatusCode.INVALID_ARGUMENT,
    "Unauthorized": grpc.StatusCode.UNAUTHENTICATED,
    "Forbidden": grpc.StatusCode.PERMISSION_DENIED,
    "Gone": grpc.StatusCode.OUT_OF_RANGE,
    "Expired": grpc.StatusCode.OUT_OF_RANGE,
    "TooManyRequests": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "ServiceUnavailable": grpc.StatusCode.UNAVAILABLE,
    "InternalError": grpc.StatusCode.INTERNAL,
    "Timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
}

# Used when a status carries no kemu reason (raised by gRPC itself, not by the server).
_REASON_BY_CODE: Final[dict[grpc.StatusCode, str]] = {
    grpc.StatusCode.UNAVAILABLE: "ServiceUnavailable",
    grpc.StatusCode.DEADLINE_EXCEEDED: "Timeout",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.INVALID_ARGUMENT: "BadRequest",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "TooManyRequests",
    grpc.StatusCode.CANCELLED: "ServiceUnavailable",
    grpc.StatusCode.UNAUTHENTICATED: "Unauthorized",
}


def status_of(err: ApiError) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    """(code, details, trailing metadata) for a server-side error."""
    reason = err.wire_reason()
    code = STATUS_CODES.get(reason, grpc.StatusCode.INTERNAL)
    md: list[tuple[str, str]] = [(REASON_KEY, reason)]
    if err.causes:
        md.append((CAUSES_KEY, _causes_json(err.causes)))
    if isinstance(err, TooManyRequests) and err.retry_after_seconds > 0:
        md.append((RETRY_AFTER_KEY, str(err.retry_after_seconds)))
    if err.subject is not None:
        subject = err.subject
        details = {"name": subject.name, "group": subject.group, "kind": subject.kind}
        md.append((SUBJECT_KEY, bounded(json.dumps(details), MAX_CAUSES_CHARS)))
    return code, bounded(err.message, MAX_DETAILS_BYTES), tuple(md)


def bounded(text: str, limit: int) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, marked as cut."""
    data = text.encode("utf-8", "replace")
    if len(data) <= limit:
        return text
    suffix = f"... ({len(data)} bytes)"
    return data[: max(limit - len(suffix), 0)].decode("utf-8", "ignore") + suffix


def _causes_json(causes: list[Cause]) -> str:
    out: list[dict[str, str]] = []
    size = 2
    for c in causes:
        item = {
            "field": bounded(c.field, _MAX_CAUSE_BYTES),
            "message": bounded(c.message, _MAX_CAUSE_BYTES),
        }
        size += len(json.dumps(item)) + 2
        if size > MAX_CAUSES_CHARS:
            break
        out.append(item)
    return json.dumps(out)


async def abort(context: AbortContext, err: ApiError) -> NoReturn:
    """Ends the call with `err` as its status (code, bounded details, reason and causes)."""
    code, details, md = status_of(err)
    context.set_trailing_metadata(md)
    await context.abort(code, details)
    raise AssertionError("unreachable: abort raises")


async def _decode(request_type: type[_Req], data: bytes, context: AbortContext) -> _Req:
    try:
        return request_type.FromString(data)
    except DecodeError as e:
        name = request_type.DESCRIPTOR.full_name
        await abort(context, BadRequest(f"the request is not a valid {name}: {e}"))


def unary(
    fn: Callable[[_Req, _Ctx], Awaitable[_Resp]], request_type: type[_Req]
) -> Callable[[bytes, _Ctx], Awaitable[_Resp]]:
    """A unary behaviour over raw request bytes: decoded here, INVALID_ARGUMENT if they do not
    decode, else `fn`'s answer."""

    async def behaviour(data: bytes, context: _Ctx) -> _Resp:
        return await fn(await _decode(request_type, data, context), context)

    return behaviour


def unary_stream(
    fn: Callable[[_Req, _Ctx], AsyncGenerator[_Resp, None]], request_type: type[_Req]
) -> Callable[[bytes, _Ctx], AsyncIterator[_Resp]]:
    """As `unary`, for a server stream."""

    async def behaviour(data: bytes, context: _Ctx) -> AsyncIterator[_Resp]:
        # (aclosing: when gRPC closes this generator, `fn`'s is closed at once, so that its
        # cleanup runs now rather than whenever it is collected)
        async with contextlib.aclosing(
            fn(await _decode(request_type, data, context), context)
        ) as it:
            async for item in it:
                yield item

    return behaviour


def _serialize(msg: Message) -> bytes:
    return msg.SerializeToString()


def service_handler(
    descriptor: ServiceDescriptor, servicer: object
) -> grpc.GenericRpcHandler[bytes, Message]:
    """The handler of a service whose methods are all unary, each `servicer.<MethodName>`,
    decoding requests as `unary` does (the generated add_..._to_server does not)."""
    handlers = {
        m.name: grpc.unary_unary_rpc_method_handler(
            unary(getattr(servicer, m.name), message_factory.GetMessageClass(m.input_type)),
            response_serializer=_serialize,
        )
        for m in descriptor.methods
    }
    return grpc.method_handlers_generic_handler(descriptor.full_name, handlers)


def answered(metadata: Iterable[tuple[str, str | bytes]] | None) -> bool:
    """Whether a failed call's trailing metadata says a kemu server wrote its error (status_of
    sets the reason): it received the call. Otherwise the transport ended it (a deadline, a
    broken connection, a cancellation) and the server may never have had it."""
    return any(k == REASON_KEY for k, _ in (metadata or ()))


def error_from_status(
    code: grpc.StatusCode, details: str | None, metadata: Iterable[tuple[str, str | bytes]] | None
) -> ApiError:
    """Rebuilds the typed error from a gRPC status (client side)."""
    md = {k: v.decode() if isinstance(v, bytes) else v for k, v in (metadata or ())}
    reason = md.get(REASON_KEY) or _REASON_BY_CODE.get(code)
    message = details or code.name
    if reason is None:
        return InternalError(f"{code.name}: {message}")
    causes: list[Cause] = []
    raw = md.get(CAUSES_KEY)
    if raw:
        try:
            causes = [Cause(str(c["field"]), str(c["message"])) for c in json.loads(raw)]
        except (ValueError, KeyError, TypeError):
            causes = []
    err = error_for_reason(reason, message, causes, _seconds(md.get(RETRY_AFTER_KEY)))
    raw = md.get(SUBJECT_KEY)
    if raw:
        try:
            d = json.loads(raw)
            err.subject = Subject(str(d["name"]), str(d["group"]), str(d["kind"]))
        except (ValueError, KeyError, TypeError):
            pass
    return err


def _seconds(raw: str | None) -> int:
    """A retry-after hint in whole seconds; 0 (no hint) when absent or malformed."""
    try:
        return max(int(raw or 0), 0)
    except ValueError:
        return 0
