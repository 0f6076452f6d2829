"""The Api's unary methods on one long-lived stream (`Api/Calls`, issue #59 item 1; the design
and its measurements: docs/research/streams.md).

A client writes CallFrames (each call: an id, the method's short name, the request's bytes, the
call's metadata, its timeout) and reads ReplyFrames (the id, the response's bytes or the gRPC
status the unary call would have ended with). Each call is served by the very behaviour its
unary method is (`Calls.unary`'s: decoded by kemu.wire, behind the in-flight limit, counted for
the event-driven clock, fenced, measured by Calls.serve) with a `FrameContext` in place of
gRPC's ServicerContext: what a behaviour reads of its context (the metadata, the deadline) and
how it ends a call (abort) are the same, so both paths give the same answers and errors.

Calls on one stream are served concurrently, as unary calls on one channel are; a call's
deadline bounds its task; a cancel frame cancels it; the stream's end (the client's
half-close) waits for the calls under way; its cancellation cancels them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn

import grpc
from grpc.aio import ServicerContext

from kemu import wire
from kemu.api.v1 import api_pb2

logger = logging.getLogger(__name__)

_EOF: Final[object] = grpc.aio.EOF  # type: ignore[attr-defined]

MAX_CALLS_PER_STREAM: Final = 1000
"""Calls one stream serves at once; past it the stream reads no more frames until one ends, and
HTTP/2's flow control holds its client back: what MAX_CONCURRENT_STREAMS does to a
connection's unary calls (upstream's HTTP2MaxStreamsPerConnection, 1000 in
k8s.io/apiserver/pkg/server/options/recommended.go for apiservers reached through one
multiplexed connection)."""

UNPACED_CALLS: Final = 32
"""Calls under way on a stream up to which a message's frames start together (the batching the
stream is for: its answers leave together too); past it they start one per turn of the event
loop. Starting every frame one per turn cost the stream 0.15-0.2 ms of apiserver CPU a create
at 16 in flight (bench streams, load 13-16), half its saving; bench watch_delivery's 256 in
flight needed the pacing (docs/research/streams.md)."""

Behaviour = Callable[[bytes, ServicerContext[bytes, Any]], Awaitable[Any]]
"""A unary method's behaviour over its request's bytes (kemu.wire.unary's)."""


@dataclass(frozen=True)
class Method:
    """A unary method as the stream serves it: its behaviour, and how its answer is encoded."""

    behaviour: Behaviour
    serialize: Callable[[Any], bytes]


class FrameAbort(grpc.aio.AbortError):
    """A call on the stream ended by its behaviour with a status (`FrameContext.abort`): an
    AbortError, so that what lets gRPC's own abort through (Calls.serve) lets this through."""

    def __init__(self, code: grpc.StatusCode, details: str) -> None:
        super().__init__(code, details)
        self.code = code
        self.details = details


@dataclass(frozen=True)
class StreamPeer:
    """What every call of one stream shares, read from the stream's own context when it
    opens: its metadata (the user agent), the peer's address and the TLS auth context (the
    client certificate a call's user comes from: apiserver/endpoints/identity.py)."""

    metadata: tuple[tuple[str, str], ...]
    address: str
    auth: dict[str, Iterable[bytes]]


class FrameContext(ServicerContext[bytes, Any]):
    """The context of one call on the stream: its metadata is the frame's after the stream's
    own (the user agent gRPC sent when the stream was opened), its peer and auth context the
    stream's; `abort` raises FrameAbort, its trailing metadata kept for the reply frame."""

    def __init__(
        self,
        metadata: tuple[tuple[str, str], ...],
        deadline: float | None,
        peer: StreamPeer,
    ) -> None:
        self._metadata = metadata
        self._deadline = deadline
        self._peer = peer
        self.trailing: tuple[tuple[str, str], ...] = ()

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return self._metadata

    def set_trailing_metadata(self, trailing_metadata: Sequence[tuple[str, str]]) -> None:  # type: ignore[override]
        self.trailing = tuple(trailing_metadata)

    async def abort(
        self,
        code: grpc.StatusCode,
        details: str = "",
        trailing_metadata: Any = (),
    ) -> NoReturn:
        if trailing_metadata:
            self.trailing = tuple((k, _text(v)) for k, v in trailing_metadata)
        raise FrameAbort(code, details)

    async def abort_with_status(self, status: Any) -> NoReturn:
        raise NotImplementedError("a call on the stream ends by abort")

    def time_remaining(self) -> float:
        """As gRPC's: seconds to the call's deadline, infinite for none."""
        if self._deadline is None:
            return float("inf")
        return max(self._deadline - time.monotonic(), 0.0)

    def peer(self) -> str:
        return self._peer.address

    # What no Api behaviour uses: a unary call's context has no messages to read or write.
    async def read(self) -> NoReturn:
        raise NotImplementedError("a call on the stream is unary")

    async def write(self, message: Any) -> NoReturn:
        raise NotImplementedError("a call on the stream is unary")

    async def send_initial_metadata(self, initial_metadata: Any) -> None:
        return None

    def trailing_metadata(self) -> tuple[tuple[str, str], ...]:  # type: ignore[override]
        return self.trailing

    def set_code(self, code: grpc.StatusCode) -> None:
        raise NotImplementedError("a call on the stream ends by abort")

    def set_details(self, details: str) -> None:
        raise NotImplementedError("a call on the stream ends by abort")

    def code(self) -> grpc.StatusCode:
        raise NotImplementedError

    def details(self) -> str:
        raise NotImplementedError

    def set_compression(self, compression: grpc.Compression) -> None:
        return None

    def disable_next_message_compression(self) -> None:
        return None

    def peer_identities(self) -> Iterable[bytes] | None:
        return None

    def peer_identity_key(self) -> str | None:
        return None

    def auth_context(self) -> dict[str, Iterable[bytes]]:
        return self._peer.auth

    def add_done_callback(self, callback: Any) -> None:
        raise NotImplementedError

    def cancelled(self) -> bool:
        return False

    def done(self) -> bool:
        return False


class _Replies:
    """The stream's answers, written in order of completion: those that complete while a write
    is under way leave together in the next (a combining writer: no task of its own)."""

    def __init__(self, context: ServicerContext[bytes, bytes]) -> None:
        self._context = context
        self._pending: list[api_pb2.ReplyFrame] = []
        self._lock = asyncio.Lock()

    async def send(self, reply: api_pb2.ReplyFrame) -> None:
        self._pending.append(reply)
        async with self._lock:
            if not self._pending:
                return  # (an earlier writer took it)
            batch, self._pending = self._pending, []
            # (shielded: the batch holds other calls' answers, which a call cancelled while it
            # writes must not lose)
            write = asyncio.ensure_future(
                self._context.write(api_pb2.ReplyFrames(replies=batch).SerializeToString())
            )
            try:
                await asyncio.shield(write)
            except asyncio.CancelledError:
                # The write goes on without its caller: when the stream ends meanwhile (its
                # client went, or the apiserver drains) it fails, and that is said here
                # rather than left unretrieved for asyncio to print as a traceback.
                write.add_done_callback(_unwritten)
                raise


def _unwritten(write: asyncio.Future[None]) -> None:
    if not write.cancelled() and (error := write.exception()) is not None:
        logger.debug("answers not written, as their stream ended: %s", error)


def _text(value: str | bytes) -> str:
    return value if isinstance(value, str) else value.decode(errors="replace")


class _Open:
    """A stream being served: its calls under way, and whether it is draining."""

    __slots__ = ("calls", "draining", "ending", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.calls: dict[int, asyncio.Task[None]] = {}
        self.draining = False
        self.ending = False

    def end_if_idle(self) -> None:
        """A draining stream ends once its calls are answered (the frames it reads meanwhile
        are answered unprocessed)."""
        if self.draining and not self.calls and not self.ending:
            self.ending = True
            self.task.cancel()


class CallStreams:
    """Serves the Calls streams of the Api service's `methods` (its unary methods by name)."""

    def __init__(self, methods: dict[str, Method], max_calls: int = MAX_CALLS_PER_STREAM) -> None:
        self._methods = methods
        self._max_calls = max_calls
        self._open: set[_Open] = set()
        self._draining = False

    def drain(self) -> None:
        """The apiserver is stopping: each open stream answers the calls under way, answers
        those it reads from now on UNAVAILABLE and unprocessed (kemu.wire.UNPROCESSED_KEY),
        then ends cleanly (OK), so that its client sends the calls it has not had answered
        again on a stream to another apiserver. (A draining gRPC server refuses new calls with
        GOAWAY, and the client's gRPC sends the calls it refused again: upstream's apiserver
        does the same to the requests on a connection it closes.) A stream opened from now on
        drains at once."""
        self._draining = True
        for stream in list(self._open):
            stream.draining = True
            stream.end_if_idle()

    async def serve(self, _requests: object, context: ServicerContext[bytes, bytes]) -> None:
        """One stream, until the client half-closes it and its calls are answered, or until it
        has drained."""
        task = asyncio.current_task()
        assert task is not None
        stream = _Open(task)
        stream.draining = self._draining
        self._open.add(stream)
        try:
            await self._serve(stream, context)
        except asyncio.CancelledError:
            if not stream.ending:
                raise
            task.uncancel()  # (drained: the stream ends cleanly)
        finally:
            self._open.discard(stream)
            for call in stream.calls.values():
                call.cancel()

    async def _serve(self, stream: _Open, context: ServicerContext[bytes, bytes]) -> None:
        # Headers at once: the client writes its first frames once it has them, so that a
        # server without the stream (UNIMPLEMENTED, headers and status in one) is told apart
        # from one that broke (kemu/client/call_stream.py _Stream._write).
        await context.send_initial_metadata(())
        # The stream's own metadata (its user agent), which every call's follows.
        peer = StreamPeer(
            tuple(
                (k, _text(v)) for k, v in (context.invocation_metadata() or ()) if k == "user-agent"
            ),
            context.peer(),
            dict(context.auth_context()),
        )
        replies = _Replies(context)
        # Plain asyncio tasks, as gRPC serves each unary call in one (a first version with an
        # anyio task group and a scope per call measured no cheaper than unary calls).
        calls = stream.calls
        room = asyncio.Event()  # (set while fewer than max_calls are under way)
        room.set()

        async def one(frame: api_pb2.CallFrame) -> None:
            try:
                if stream.draining:
                    reply = _status(frame.id, *_UNPROCESSED)
                else:
                    reply = await self._answer(frame, peer)
                await replies.send(reply)
            except Exception as e:  # (the stream broke: its client fails the call itself)
                logger.debug("the answer to %s on a Calls stream was lost: %s", frame.method, e)
            finally:
                calls.pop(frame.id, None)
                if len(calls) < self._max_calls:
                    room.set()
                stream.end_if_idle()

        loop = asyncio.get_running_loop()
        while True:
            if len(calls) >= self._max_calls:
                room.clear()
                await room.wait()
            data = await context.read()
            if data is _EOF:
                break
            assert isinstance(data, bytes)
            for frame in api_pb2.CallFrames.FromString(data).frames:
                if frame.cancel:
                    call = calls.get(frame.id)
                    if call is not None:
                        call.cancel()
                    continue
                calls[frame.id] = loop.create_task(one(frame))
                if len(calls) > UNPACED_CALLS:
                    # Past it, one call started per turn of the event loop, as grpc.aio's
                    # server accepts unary calls (its main loop awaits each request_call:
                    # server.pyx.pxi _server_main_loop): a burst of frames does not put all
                    # its calls ahead of the tasks already waiting (the watches' senders),
                    # and an apiserver past its capacity keeps its backlog in the stream.
                    await asyncio.sleep(0)
        while calls:  # (the client half-closed: its calls under way are still answered)
            await asyncio.wait(list(calls.values()))

    async def _answer(
        self,
        frame: api_pb2.CallFrame,
        peer: StreamPeer,
    ) -> api_pb2.ReplyFrame:
        method = self._methods.get(frame.method)
        if method is None:
            return api_pb2.ReplyFrame(
                id=frame.id,
                code=grpc.StatusCode.UNIMPLEMENTED.value[0],
                details=f"Method not found: {frame.method}",
            )
        timeout = frame.timeout_seconds or None
        deadline = time.monotonic() + timeout if timeout is not None else None
        metadata = (*peer.metadata, *((m.key, m.value) for m in frame.metadata))
        context = FrameContext(metadata, deadline, peer)
        try:
            async with asyncio.timeout(timeout):
                response = await method.behaviour(frame.payload, context)
        except FrameAbort as e:
            return _status(frame.id, e.code, e.details, context.trailing)
        except TimeoutError:
            return _status(frame.id, grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded", ())
        except Exception as e:  # (Calls.serve turns a handler's into INTERNAL: a bug here)
            logger.exception("%s on a Calls stream failed", frame.method)
            return _status(frame.id, grpc.StatusCode.INTERNAL, f"internal error: {e}", ())
        return api_pb2.ReplyFrame(id=frame.id, payload=method.serialize(response))


_UNPROCESSED: Final = (
    grpc.StatusCode.UNAVAILABLE,
    "the apiserver is shutting down",
    ((wire.UNPROCESSED_KEY, "true"),),
)


def _status(
    call: int, code: grpc.StatusCode, details: str, trailing: Iterable[tuple[str, str]]
) -> api_pb2.ReplyFrame:
    return api_pb2.ReplyFrame(
        id=call,
        code=code.value[0],
        details=details,
        trailing=[api_pb2.Metadatum(key=k, value=v) for k, v in trailing],
    )
