"""The client's side of the Api's Calls stream (issue #59 item 1; docs/research/streams.md): the
unary calls of one channel multiplexed on one long-lived bidirectional stream.

A call is a CallFrame (an id, the method, the request's bytes, the metadata the unary call would
carry, its timeout); its answer a ReplyFrame with the same id: the response's bytes, or the
status the unary call would have ended with, raised here as the same grpc.aio.AioRpcError so
that kemu.client.client handles both paths alike. Frames written while a write is under way
leave together in the next (a combining writer, on each side: no task of its own), so calls
made together cost one message each way.

The stream is opened on the first call and again after it ends: a stream that breaks (the
apiserver restarts, the connection drops) fails the calls it may have delivered with its status
(UNAVAILABLE), as a broken connection fails unary calls in flight, and sends those that never
left the client (not written yet, or whose write failed) again on the next stream within their
deadline, as gRPC's transparent retry sends again a unary call that was never sent. A call
cancelled by its caller sends a cancel frame; one past its deadline fails with DEADLINE_EXCEEDED
here and is ended by the server's own bound of the same timeout.
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

_LEAST_TIMEOUT: Final = 1e-3
"""The timeout a frame carries when its deadline has just passed (0 would be none)."""

_END_WAIT: Final = 1.0
"""How long closing a stream waits for the server to end it (the calls under way answered)."""

_CANCEL_WAIT: Final = 10.0
"""How long closing a stream that the server did not end waits, once it is cancelled, for
gRPC's core to end its pending read."""

_RESENT: Final = frozenset(
    (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.INTERNAL, grpc.StatusCode.OK)
)
"""The statuses of an ended stream whose unsent calls are sent again on the next: a broken
connection (UNAVAILABLE), a write gRPC's core failed on a stream it had ended (INTERNAL), a
clean end (a drained stream)."""


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


class StreamUnsupported(Exception):
    """The server does not serve the Calls stream (a gRPC server of the Api without it: an
    older kemu, a test's servicer): the call was not made, and the client makes it unary."""


def _serialize(data: bytes) -> bytes:
    return data


class _Stream:
    """One incarnation of the stream: its gRPC call, the calls waiting for an answer on it, and
    the frames not written yet."""

    def __init__(
        self,
        call: grpc.aio.StreamStreamCall[bytes, api_pb2.ReplyFrames],
        wait_for_ready: bool,
    ) -> None:
        self.call = call
        self._wait_for_ready = wait_for_ready
        self.waiting: dict[int, asyncio.Future[api_pb2.ReplyFrame]] = {}
        self._pending: list[api_pb2.CallFrame] = []
        self._deadlines: dict[int, float] = {}
        """The deadline of each call not written yet (the event loop's time): a frame carries
        the time left when it is written, whatever it waited for before."""
        self._writing: frozenset[int] = frozenset()
        """The ids of the frames being written: until the write ends, nobody knows whether
        they left."""
        self._write_failed = False
        self._broken: Exception | None = None
        """What the stream ended with, once the reader has seen it end: the error of the calls
        written on it and not answered."""
        self._lock = asyncio.Lock()
        self.draining = False
        """The server answered a call unprocessed, or a write failed: it answers the calls
        under way on this stream, and new calls go to another."""
        self.answered = False
        """The server has answered on this stream."""
        self._headers = False
        """The server's headers have come: it serves the stream."""
        self.reader = asyncio.get_running_loop().create_task(self._read())

    @property
    def open(self) -> bool:
        return not self.draining and not self.call.done() and not self.reader.done()

    async def send(self, frame: api_pb2.CallFrame, deadline: float) -> None:
        self._pending.append(frame)
        self._deadlines[frame.id] = deadline
        await self.flush()

    async def flush(self) -> None:
        async with self._lock:
            if not self._pending:
                return  # (an earlier writer took it)
            batch, self._pending = self._pending, []
            # (shielded: the batch holds other calls' frames, which a cancelled caller's
            # write must not lose)
            await asyncio.shield(self._write(batch))

    async def _write(self, batch: list[api_pb2.CallFrame]) -> None:
        """Writes `batch`. A write that fails (the stream ended meanwhile: the apiserver was
        killed or restarted, and gRPC's core fails the write, INTERNAL or with the stream's
        status) did not hand the message to the connection, so none of its frames reached the
        server: their calls are sent again on a new stream, as gRPC sends again a unary call
        that never left the client (its transparent retry). A write that succeeds may have
        reached the server: when the stream has broken meanwhile, its calls fail with the
        stream's status (UNAVAILABLE), as a unary call on a connection that broke after it
        was sent does."""
        self._writing = ids = frozenset(frame.id for frame in batch)
        deadlines = {i: self._deadlines.pop(i) for i in ids if i in self._deadlines}
        try:
            if not self._headers:
                # A server without the stream answers UNIMPLEMENTED with its headers, and a
                # write racing that answer would fail the call INTERNAL in gRPC's core,
                # which then reports INTERNAL as the call's status: the server's answer is
                # read first (kemu's sends its headers as the stream opens).
                await self.call.initial_metadata()
                self._headers = True
                # (a call given up on while the stream waited for the server is not sent, as
                # gRPC never sends a unary call whose deadline passed while it waited for ready)
                batch = [f for f in batch if f.cancel or f.id in self.waiting]
                if not batch:
                    return
            now = asyncio.get_running_loop().time()
            for frame in batch:
                if not frame.cancel:
                    frame.timeout_seconds = max(deadlines[frame.id] - now, _LEAST_TIMEOUT)
            await self.call.write(api_pb2.CallFrames(frames=batch).SerializeToString())
        except Exception:  # (grpc.aio.AioRpcError, or its usage errors on a finished call)
            self.draining = self._write_failed = True
            self._settle(ids, self._unsent(await self.call.code(), await self.call.details()))
        else:
            if self._broken is not None:  # (the reader saw the end while the write was under way)
                self._settle(ids, self._broken)
        finally:
            self._writing = frozenset()

    def _settle(self, ids: frozenset[int], error: Exception) -> None:
        for call_id in ids:
            future = self.waiting.pop(call_id, None)
            if future is not None and not future.done():
                future.set_exception(error)

    def _unsent(self, code: grpc.StatusCode, details: str) -> Exception:
        """The error of the calls that never left the client on this ended stream: sent again
        on the next stream (_Unprocessed), unless the stream's own status says that the next
        would end alike: a server without the stream (UNIMPLEMENTED, for the fallback to unary
        calls), one that refused it (its code), or no server at all for a stream that does not
        wait for one (kemuctl's: UNAVAILABLE at once, as its unary call fails)."""
        if code in _RESENT and (self.answered or self._wait_for_ready):
            return _Unprocessed()
        if code is grpc.StatusCode.OK:
            code = grpc.StatusCode.UNAVAILABLE
        return _error(code, details)

    def cancel_call(self, call_id: int) -> None:
        """Tells the server that call `call_id` is given up on (best effort: written with the
        next frames, or by a flush of its own)."""
        if self.waiting.pop(call_id, None) is None or not self.open:
            return
        self._pending.append(api_pb2.CallFrame(id=call_id, cancel=True))
        task = asyncio.get_running_loop().create_task(self.flush())
        task.add_done_callback(_ignore_result)

    async def _read(self) -> None:
        try:
            while True:
                message = await self.call.read()
                if message is grpc.aio.EOF:  # type: ignore[attr-defined]
                    # The server ended the stream cleanly: it answered every call it read
                    # (it drains: apiserver/endpoints/stream_calls.py), so the others were not.
                    self._fail(_Unprocessed(), _Unprocessed())
                    return
                assert isinstance(message, api_pb2.ReplyFrames)
                self.answered = True
                for reply in message.replies:
                    future = self.waiting.pop(reply.id, None)
                    if future is not None and not future.done():
                        future.set_result(reply)
        except grpc.aio.AioRpcError as e:
            error = e
            if e.code() is grpc.StatusCode.INTERNAL and (self._write_failed or self._writing):
                # gRPC's core failed a write on a stream whose connection had ended, and made
                # that the stream's status: the calls it may have delivered see the broken
                # connection, UNAVAILABLE, as unary calls on it do.
                error = _error(
                    grpc.StatusCode.UNAVAILABLE, f"the Calls stream broke ({e.details()})"
                )
            self._fail(error, self._unsent(e.code(), e.details() or ""))
        except asyncio.CancelledError:
            error = _error(grpc.StatusCode.CANCELLED, "the client closed the Calls stream")
            self._fail(error, error)
            raise

    def _fail(self, error: Exception, unsent: Exception) -> None:
        """The stream ended with `error`: the calls written on it fail with it (they may have
        reached the server), those not written yet with `unsent` (usually _Unprocessed: sent
        again on the next stream), and those being written once their write ends (_write)."""
        self._broken = error
        self.draining = True
        pending = {frame.id for frame in self._pending}
        self._pending = []
        self._deadlines.clear()
        waiting = self.waiting
        self.waiting = {i: waiting.pop(i) for i in self._writing if i in waiting}
        for call_id, future in waiting.items():
            if not future.done():
                future.set_exception(unsent if call_id in pending else error)

    async def close(self) -> None:
        """Ends the stream as a gRPC client ends a call it is done with: it half-closes it, and
        the server answers the calls it has read and ends it with a status. Every operation
        of the call has then completed in gRPC's core.

        A stream cancelled instead (the server did not end it within _END_WAIT: it is frozen
        or gone, or a call under way is slow) leaves operations that gRPC's core completes
        later: grpc.aio cancels the task that waits for the stream's status. One completed
        after the event loop has closed is handed to the closed loop by the next loop that
        polls gRPC's queue, which fails there with "Event loop is closed" (seen where each
        test runs its own loop: a user's suite with kemu's pytest plugin). Its read is waited
        for all the same, so that only the status is left to chance."""
        try:
            async with asyncio.timeout(_END_WAIT):
                if not self.call.done():
                    async with self._lock:  # (no write under way: half-closing follows it)
                        await self.call.done_writing()
                await asyncio.wait((self.reader,))
                await self.call.code()
            return
        except (TimeoutError, grpc.aio.AioRpcError, grpc.aio.UsageError):
            pass  # (a stream that broke meanwhile, or one the server has not ended)
        self.call.cancel()
        done, _ = await asyncio.wait((self.reader,), timeout=_CANCEL_WAIT)
        if not done:
            self.reader.cancel()
        await asyncio.gather(self.reader, return_exceptions=True)


def _forget(streams: set[_Stream], stream: _Stream, _reader: asyncio.Task[None]) -> None:
    streams.discard(stream)


def _ignore_result(task: asyncio.Task[None]) -> None:
    if not task.cancelled():
        task.exception()  # (retrieved: a write to a broken stream fails its calls anyway)


class CallStream:
    """The Calls stream of one channel, opened on demand."""

    def __init__(self, channel: grpc.aio.Channel, *, wait_for_ready: bool = True) -> None:
        """`wait_for_ready`: a stream is opened waiting for the server to be reachable (a
        component's), or failing at once with UNAVAILABLE when it is not (kemuctl's)."""
        self._wait_for_ready = wait_for_ready
        self._method = channel.stream_stream(
            METHOD,
            request_serializer=_serialize,
            response_deserializer=api_pb2.ReplyFrames.FromString,
        )
        self._stream: _Stream | None = None
        self._draining: set[_Stream] = set()
        """Streams that answer their calls under way before they end."""
        self._last_id = 0
        self.unsupported = False
        """The server answered the stream UNIMPLEMENTED: the channel's calls are unary."""

    def _current(self) -> _Stream:
        stream = self._stream
        if stream is None or not stream.open:
            if stream is not None and not stream.reader.done():
                self._draining.add(stream)
                stream.reader.add_done_callback(functools.partial(_forget, self._draining, stream))
            # (waits for the server to be ready, or not, as the unary calls that use it do)
            call = self._method(None, wait_for_ready=self._wait_for_ready)
            stream = self._stream = _Stream(call, self._wait_for_ready)
        return stream

    async def call(
        self,
        method: str,
        payload: bytes,
        metadata: Sequence[tuple[str, str]],
        timeout: float,  # noqa: ASYNC109 (sent to the server, which bounds the call by it)
    ) -> bytes:
        """The response's bytes of `method` (an Api method's short name) called with
        `payload`; raises the AioRpcError the unary call would have, or StreamUnsupported
        when the server does not serve the stream."""
        frame = api_pb2.CallFrame(
            method=method,
            payload=payload,
            metadata=[api_pb2.Metadatum(key=k, value=v) for k, v in metadata],
            timeout_seconds=timeout,
        )
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        try:
            async with asyncio.timeout_at(deadline):
                while True:
                    try:
                        reply = await self._attempt(frame, deadline)
                    except _Unprocessed:
                        continue  # (on the next stream, within the same deadline)
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

    async def _attempt(self, frame: api_pb2.CallFrame, deadline: float) -> api_pb2.ReplyFrame:
        """`frame` sent on the current stream, and its answer; raises _Unprocessed when the
        server did not start it."""
        stream = self._current()
        self._last_id += 1
        frame.id = call_id = self._last_id
        future: asyncio.Future[api_pb2.ReplyFrame] = asyncio.get_running_loop().create_future()
        stream.waiting[call_id] = future
        try:
            await stream.send(frame, deadline)
            reply = await future
        except asyncio.CancelledError:  # (its caller's, or the deadline's)
            stream.cancel_call(call_id)
            raise
        except grpc.aio.AioRpcError as e:
            stream.waiting.pop(call_id, None)
            if e.code() is grpc.StatusCode.UNIMPLEMENTED:
                # (the stream's own status: an unknown method in a frame is a reply's code)
                self.unsupported = True
                raise StreamUnsupported() from None
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
