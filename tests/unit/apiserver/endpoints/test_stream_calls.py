"""The Calls stream's draining (apiserver/endpoints/stream_calls.py, kemu/client/call_stream.py):
a stopping apiserver answers the calls under way, and the calls it has not started go to the
next apiserver, writes included, as gRPC sends again the unary calls a draining server refuses."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import grpc
import grpc.aio
import pytest

from apiserver.endpoints.calls import as_is
from apiserver.endpoints.stream_calls import UNPACED_CALLS, CallStreams, Method, _Replies
from kemu.api.v1 import api_pb2
from kemu.client.call_stream import CallStream
from kemu.client.endpoints import LB_POLICY, channel_target

pytestmark = pytest.mark.anyio


class _Server:
    """A gRPC server with only the Calls stream, its methods Slow (answers once `release` is
    set) and Echo; what it served, by method."""

    def __init__(self, tag: str, max_calls: int = 1000) -> None:
        self.tag = tag
        self.release = asyncio.Event()
        self.served: list[str] = []
        self.slow_started = asyncio.Event()
        self.slow_cancelled = asyncio.Event()
        self.streams = CallStreams(
            {"Slow": Method(self._behaviour("Slow", self._slow), as_is), "Echo": self._echo()},
            max_calls,
        )
        self.server = grpc.aio.server()
        self.server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    "kemu.api.v1.Api",
                    {
                        "Calls": grpc.stream_stream_rpc_method_handler(
                            self.streams.serve, response_serializer=as_is
                        )
                    },
                ),
            )
        )
        self.port = self.server.add_insecure_port("127.0.0.1:0")

    def _behaviour(
        self, name: str, fn: Callable[[bytes], Awaitable[bytes]]
    ) -> Callable[[bytes, Any], Awaitable[bytes]]:
        async def behaviour(data: bytes, _context: Any) -> bytes:
            self.served.append(name)
            return await fn(data)

        return behaviour

    async def _slow(self, data: bytes) -> bytes:
        self.slow_started.set()
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            self.slow_cancelled.set()
            raise
        return self.tag.encode() + data

    def _echo(self) -> Method:
        async def echo(data: bytes) -> bytes:
            return self.tag.encode() + data

        return Method(self._behaviour("Echo", echo), as_is)


@asynccontextmanager
async def _servers(*tags: str, max_calls: int = 1000) -> AsyncIterator[list[_Server]]:
    servers = [_Server(tag, max_calls) for tag in tags]
    for s in servers:
        await s.server.start()
    try:
        yield servers
    finally:
        for s in servers:
            s.release.set()
            await s.server.stop(None)


async def test_a_draining_stream_answers_its_calls_and_the_next_go_to_another_server() -> None:
    async with _servers("one:", "two:") as (one, two):
        target = channel_target((f"127.0.0.1:{one.port}", f"127.0.0.1:{two.port}"))
        async with grpc.aio.insecure_channel(target, options=[LB_POLICY]) as channel:
            calls = CallStream(channel)
            try:
                assert await calls.call("Echo", b"a", (), 5.0) == b"one:a"  # (pick_first)
                slow = asyncio.ensure_future(calls.call("Slow", b"s", (), 5.0))
                async with asyncio.timeout(5):
                    await one.slow_started.wait()
                one.streams.drain()
                stopping = asyncio.ensure_future(one.server.stop(5.0))
                # Not started by the draining server: sent again, to the other.
                assert await calls.call("Echo", b"b", (), 5.0) == b"two:b"
                one.release.set()
                assert await slow == b"one:s"  # (answered before the stream ended)
                await stopping
                assert one.served == ["Echo", "Slow"]
                assert two.served == ["Echo"]
            finally:
                await calls.close()


async def test_a_call_past_its_deadline_is_deadline_exceeded_and_cancelled_on_the_server() -> None:
    async with _servers("one:") as (one,):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{one.port}") as channel:
            calls = CallStream(channel)
            try:
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await calls.call("Slow", b"s", (), 0.2)
                assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                async with asyncio.timeout(5):
                    await one.slow_cancelled.wait()
                # The stream still serves the next call.
                assert await calls.call("Echo", b"e", (), 5.0) == b"one:e"
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await calls.call("Nope", b"", (), 5.0)
                assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED
            finally:
                await calls.close()


async def test_past_its_bound_a_stream_reads_no_more_calls_until_one_ends() -> None:
    async with _servers("one:", max_calls=1) as (one,):
        async with grpc.aio.insecure_channel(f"127.0.0.1:{one.port}") as channel:
            calls = CallStream(channel)
            try:
                slow = asyncio.ensure_future(calls.call("Slow", b"s", (), 5.0))
                async with asyncio.timeout(5):
                    await one.slow_started.wait()
                # Not read while the slow call is under way: its deadline passes unserved.
                with pytest.raises(grpc.aio.AioRpcError) as raised:
                    await calls.call("Echo", b"late", (), 0.3)
                assert raised.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
                assert one.served == ["Slow"]
                one.release.set()
                assert await slow == b"one:s"
                assert await calls.call("Echo", b"e", (), 5.0) == b"one:e"
            finally:
                await calls.close()


async def test_a_message_of_many_frames_starts_its_calls_one_per_turn_of_the_event_loop() -> None:
    """Past UNPACED_CALLS under way, the frames of one message are started one per turn of the
    loop, as grpc.aio's server accepts unary calls, so the tasks already waiting (a watch's
    sender) run between them: a task that yields each turn sees the calls started part way,
    not all at once."""
    started: list[int] = []
    n_calls = UNPACED_CALLS * 3

    async def mark(data: bytes, _context: Any) -> bytes:
        started.append(int(data))
        return data

    streams = CallStreams({"Mark": Method(mark, as_is)})
    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                "kemu.api.v1.Api",
                {
                    "Calls": grpc.stream_stream_rpc_method_handler(
                        streams.serve, response_serializer=as_is
                    )
                },
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    seen: set[int] = set()
    stop = asyncio.Event()

    async def watcher() -> None:
        while not stop.is_set():
            seen.add(len(started))
            await asyncio.sleep(0)

    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            calls = CallStream(channel)
            try:
                await calls.call("Mark", b"0", (), 5.0)  # (the stream is open)
                task = asyncio.ensure_future(watcher())
                # (written together: one message of many frames)
                await asyncio.gather(
                    *(calls.call("Mark", b"%d" % i, (), 5.0) for i in range(1, n_calls + 1))
                )
                stop.set()
                await task
            finally:
                await calls.close()
    finally:
        await server.stop(None)
    assert sorted(started) == list(range(n_calls + 1))
    # Some turns saw a message's calls part way started, past the first UNPACED_CALLS.
    assert len(seen & set(range(UNPACED_CALLS + 2, n_calls + 1))) >= 10, sorted(seen)


async def test_a_write_left_by_its_cancelled_caller_that_fails_is_not_an_unretrieved_error() -> (
    None
):
    """A SIGTERM's drain cancels a stream whose answers are being written; the shielded write
    then fails as the stream ends (grpc's ExecuteBatchError): that is retrieved, not printed by
    asyncio as "Task exception was never retrieved" (a CI run's shutdown test saw it)."""
    loop = asyncio.get_running_loop()
    unretrieved: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx))
    started, fail = asyncio.Event(), asyncio.Event()

    class _Ending:
        async def write(self, _message: bytes) -> None:
            started.set()
            await fail.wait()
            raise RuntimeError("execute_batch failed: the stream ended")

    replies = _Replies(_Ending())  # type: ignore[arg-type]
    sender = asyncio.create_task(replies.send(api_pb2.ReplyFrame(id=1)))
    await started.wait()
    sender.cancel()
    with pytest.raises(asyncio.CancelledError):
        await sender
    fail.set()
    for _ in range(3):
        await asyncio.sleep(0)
    del sender
    gc.collect()
    loop.set_exception_handler(None)
    assert unretrieved == []
