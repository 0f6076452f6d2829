"""The client's side of the Api's Calls stream (issue #59 item 1; docs/research/streams.md): the
unary calls of one channel multiplexed on one long-lived bidirectional stream.

A call is a CallFrame (an id, the method, the request's bytes, the metadata the unary call would
carry, its timeout); its answer a ReplyFrame with the same id: the response's bytes, or the
status the unary call would have ended with, raised here as the same grpc.aio.AioRpcError so
that kemu.client.client handles both paths alike. Frames written while a write is under way
leave together in the next (a combining writer, on each side: no task of its own), so calls
made together cost one message each way.

The stream is opened on the first call and again after it ends: a stream that breaks (the
apiserver restarts, the connection drops) fails the calls waiting on it with its status
(UNAVAILABLE), as a broken connection fails unary calls in flight, and the next call opens
another. A call cancelled by its caller sends a cancel frame; one past its deadline fails with
DEADLINE_EXCEEDED here and is ended by the server's own bound of the same timeout.
"""

from __future__ import annotations

import asyncio
import enum
import functools
from collections.abc import Sequence
from typing import Final

import grpc
import grpc.aio

from kemu import wire
from kemu.api.v1 import api_pb2

METHOD: Final = "/kemu.api.v1.Api/Calls"

_CODES: Final = {code.value[0]: code for code in grpc.StatusCode}


class Transport(enum.Enum):
    """How a Client carries its unary calls."""

    UNARY = "unary"
    """One gRPC call each (the fallback, and what other gRPC clients use)."""
    STREAM = "stream"
    """Frames on the channel's Calls stream (this module)."""


def _error(
    code: grpc.StatusCode, details: str, trailing: Sequence[tuple[str, str]] = ()
) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(
        code, grpc.aio.Metadata(), grpc.aio.Metadata(*trailing), details, None
    )


class _Unprocessed(Exception):
    """A call the server did not start (its draining stream said so, or ended cleanly before
    reading it): sent again on a new stream, write or not, as gRPC sends again the calls a
    draining server refused (transparent retry)."""


def _serialize(data: bytes) -> bytes:
    return data


class _Stream:
    """One incarnation of the stream: its gRPC call, the calls waiting for an answer on it, and
    the frames not written yet."""

    def __init__(self, call: grpc.aio.StreamStreamCall[bytes, api_pb2.ReplyFrames]) -> None:
        self.call = call
        self.waiting: dict[int, asyncio.Future[api_pb2.ReplyFrame]] = {}
        self._pending: list[api_pb2.CallFrame] = []
        self._lock = asyncio.Lock()
        self.draining = False
        """The server answered a call unprocessed: it answers the calls under way on this
        stream, and new calls go to another."""
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def open(self) -> bool:
        return not self.draining and not self.call.done() and not self.reader.done()

    async def send(self, frame: api_pb2.CallFrame) -> None:
        self._pending.append(frame)
        await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            if not self._pending:
                return  # (an earlier writer took it)
            batch, self._pending = self._pending, []
            # (shielded: the batch holds other calls' frames, which a cancelled caller's
            # write must not lose)
            await asyncio.shield(
                self.call.write(api_pb2.CallFrames(frames=batch).SerializeToString())
            )

    def cancel_call(self, call_id: int) -> None:
        """Tells the server that call `call_id` is given up on (best effort: written with the
        next frames, or by a flush of its own)."""
        if self.waiting.pop(call_id, None) is None or not self.open:
            return
        self._pending.append(api_pb2.CallFrame(id=call_id, cancel=True))
        task = asyncio.get_running_loop().create_task(self.flush())
        task.add_done_callback(_ignore_result)

    async def _read(self) -> None:
        error: Exception
        try:
            while True:
                message = await self.call.read()
                if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                    # The server ended the stream cleanly: it answered every call it read
                    # (it drains: apiserver/endpoints/stream_calls.py), so the others were not.
                    self._fail(_Unprocessed())
                    return
                assert isinstance(message, api_pb2.ReplyFrames)
                for reply in message.replies:
                    future = self.waiting.pop(reply.id, None)
                    if future is not None and not future.done():
                        future.set_result(reply)
        except grpc.aio.AioRpcError as e:
            error = e
        except asyncio.CancelledError:
            error = _error(grpc.StatusCode.CANCELLED, "the client closed the Calls stream")
            self._fail(error)
            raise
        self._fail(error)

    def _fail(self, error: Exception) -> None:
        waiting, self.waiting = self.waiting, {}
        for future in waiting.values():
            if not future.done():
                future.set_exception(error)

    async def close(self) -> None:
        self.call.cancel()
        self.reader.cancel()
        await asyncio.gather(self.reader, return_exceptions=True)


def _forget(streams: set[_Stream], stream: _Stream, _reader: asyncio.Task[None]) -> None:
    streams.discard(stream)


def _ignore_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # (retrieved: a write to a broken stream fails its calls anyway)


class CallStream:
    """The Calls stream of one channel, opened on demand."""

    def __init__(self, channel: grpc.aio.Channel) -> None:
        self._method = channel.stream_stream(
            METHOD,
            request_serializer=_serialize,
            response_deserializer=api_pb2.ReplyFrames.FromString,
        )
        self._stream: _Stream | None = None
        self._draining: set[_Stream] = set()
        """Streams that answer their calls under way before they end."""
        self._last_id = 0

    def _current(self) -> _Stream:
        stream = self._stream
        if stream is None or not stream.open:
            if stream is not None and not stream.reader.done():
                self._draining.add(stream)
                stream.reader.add_done_callback(functools.partial(_forget, self._draining, stream))
            # (waits for the server to be ready, as the unary calls that use it do)
            call = self._method(None, wait_for_ready=True)
            stream = self._stream = _Stream(call)
        return stream

    async def call(
        self,
        method: str,
        payload: bytes,
        metadata: Sequence[tuple[str, str]],
        timeout: float,  # noqa: ASYNC109 (sent to the server, which bounds the call by it)
    ) -> bytes:
        """The response's bytes of `method` (an Api method's short name) called with
        `payload`; raises the AioRpcError the unary call would have."""
        frame = api_pb2.CallFrame(
            method=method,
            payload=payload,
            metadata=[api_pb2.Metadatum(key=k, value=v) for k, v in metadata],
            timeout_seconds=timeout,
        )
        try:
            async with asyncio.timeout(timeout):
                while True:
                    try:
                        reply = await self._attempt(frame)
                    except _Unprocessed:
                        continue  # (on the next stream)
                    break
        except TimeoutError:
            raise _error(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded") from None
        if reply.code:
            raise _error(
                _CODES.get(reply.code, grpc.StatusCode.UNKNOWN),
                reply.details,
                [(m.key, m.value) for m in reply.trailing],
            )
        return reply.payload

    async def _attempt(self, frame: api_pb2.CallFrame) -> api_pb2.ReplyFrame:
        """`frame` sent on the current stream, and its answer; raises _Unprocessed when the
        server did not start it."""
        stream = self._current()
        self._last_id += 1
        frame.id = call_id = self._last_id
        future: asyncio.Future[api_pb2.ReplyFrame] = asyncio.get_running_loop().create_future()
        stream.waiting[call_id] = future
        try:
            await stream.send(frame)
            reply = await future
        except asyncio.CancelledError:  # (its caller's, or the deadline's)
            stream.cancel_call(call_id)
            raise
        except grpc.aio.AioRpcError:
            stream.waiting.pop(call_id, None)
            raise
        if reply.code and any(m.key == wire.UNPROCESSED_KEY for m in reply.trailing):
            stream.draining = True
            raise _Unprocessed()
        return reply

    async def close(self) -> None:
        streams = [*self._draining, *([self._stream] if self._stream is not None else [])]
        self._stream = None
        self._draining.clear()
        for stream in streams:
            await stream.close()
