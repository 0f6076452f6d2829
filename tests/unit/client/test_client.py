"""The real Client against a tiny in-process gRPC server: errors come back as kemu's classes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import anyio
import grpc
import grpc.aio
import pytest

from kemu import wire
from kemu.api.v1 import api_pb2, api_pb2_grpc, types_pb2
from kemu.client.client import Client
from kemu.machinery import kinds
from kemu.machinery.errors import (
    ApiError,
    Cause,
    Conflict,
    Invalid,
    NotFound,
    TooManyRequests,
    Unavailable,
)
from kemu.testing.fake_time import wait_until

from .helpers import pod


async def _abort(context: Any, err: ApiError) -> None:
    code, details, md = wire.status_of(err)
    await context.abort(code, details, trailing_metadata=md)


class _Servicer(api_pb2_grpc.ApiServicer):
    def __init__(self) -> None:
        self.unavailable_gets = 0
        self.watch_open = 0
        self.watch_closed = anyio.Event()
        self.list_requests: list[api_pb2.ListRequest] = []
        self.refuse_patches = 0  # answer this many Patches 429 with Retry-After: 1
        self.patch_times: list[float] = []

    async def Get(self, request: api_pb2.GetRequest, context: Any) -> api_pb2.Object:
        if self.unavailable_gets:
            self.unavailable_gets -= 1
            await _abort(context, Unavailable("etcd is down"))
        if request.name == "slow":
            await anyio.sleep(10)
        if request.name != "a":
            await _abort(context, NotFound(f'pods "{request.name}" not found'))
        p = pod("a", request.namespace)
        p.metadata.resource_version = "7"
        return kinds.wrap(p)

    async def Update(self, request: api_pb2.UpdateRequest, context: Any) -> api_pb2.Object:
        await _abort(context, Conflict("the object has been modified"))
        raise AssertionError

    async def Create(self, request: api_pb2.CreateRequest, context: Any) -> api_pb2.Object:
        await _abort(
            context,
            Invalid.from_causes(
                "Pod",
                [Cause("spec.containers[0].name", "Required value"), Cause("metadata.name", "bad")],
            ),
        )
        raise AssertionError

    async def List(self, request: api_pb2.ListRequest, context: Any) -> api_pb2.ListResponse:
        self.list_requests.append(request)
        names = ["a", "b", "c"]
        start = names.index(getattr(request, "continue")) if getattr(request, "continue") else 0
        chunk = names[start : start + 2] if request.limit else names
        nxt = start + len(chunk)
        out = api_pb2.ListResponse(resource_version="42")
        for n in chunk:
            out.items.append(kinds.wrap(pod(n)))
        if nxt < len(names):
            setattr(out, "continue", names[nxt])
        return out

    async def Watch(
        self, request: api_pb2.WatchRequest, context: Any
    ) -> AsyncIterator[api_pb2.WatchResponse]:
        self.watch_open += 1
        try:
            yield api_pb2.WatchResponse(
                events=[api_pb2.WatchEvent(type="ADDED", object=kinds.wrap(pod("w")))]
            )
            await anyio.sleep(30)
        finally:
            self.watch_open -= 1
            self.watch_closed.set()

    async def Patch(self, request: api_pb2.PatchRequest, context: Any) -> api_pb2.Object:
        self.patch_times.append(anyio.current_time())
        if self.refuse_patches:
            self.refuse_patches -= 1
            await _abort(context, TooManyRequests.retry_after("Too many requests", 1))
        return kinds.wrap(pod(request.name, request.namespace))

    async def Delete(self, request: api_pb2.DeleteRequest, context: Any) -> api_pb2.Object:
        # A 429 without a hint (a PodDisruptionBudget refusing an eviction): not retried.
        await _abort(context, TooManyRequests("Cannot evict pod"))
        raise AssertionError

    async def Version(self, request: api_pb2.VersionRequest, context: Any) -> api_pb2.VersionInfo:
        return api_pb2.VersionInfo(server=api_pb2.ComponentVersion(emulated_version="1.37"))


@pytest.fixture
async def served() -> AsyncIterator[tuple[Client, _Servicer]]:
    server = grpc.aio.server()
    servicer = _Servicer()
    api_pb2_grpc.add_ApiServicer_to_server(servicer, server)  # type: ignore[no-untyped-call]
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = Client(f"127.0.0.1:{port}", timeout=5.0)
    try:
        yield client, servicer
    finally:
        await client.close()
        await server.stop(None)


@pytest.mark.anyio
async def test_errors_come_back_as_the_same_classes(served: tuple[Client, _Servicer]) -> None:
    client, _ = served
    with pytest.raises(NotFound, match='pods "missing" not found'):
        await client.get(types_pb2.Pod, "missing")
    with pytest.raises(Conflict):
        await client.update(pod("a"))
    with pytest.raises(Invalid) as info:
        await client.create(pod("a"))
    assert [c.field for c in info.value.causes] == ["spec.containers[0].name", "metadata.name"]


@pytest.mark.anyio
async def test_get_defaults_the_namespace_and_reads_retry_unavailable(
    served: tuple[Client, _Servicer],
) -> None:
    client, servicer = served
    servicer.unavailable_gets = 2
    got = await client.get(types_pb2.Pod, "a")
    assert (got.metadata.namespace, got.metadata.resource_version) == ("default", "7")
    assert servicer.unavailable_gets == 0
    assert (await client.wait_ready(timeout=2)).server.emulated_version == "1.37"


@pytest.mark.anyio
async def test_list_all_follows_continue_tokens(served: tuple[Client, _Servicer]) -> None:
    client, servicer = served
    result = await client.list_all(types_pb2.Pod)
    assert [p.metadata.name for p in result.items] == ["a", "b", "c"]
    assert result.resource_version == "42"
    assert [getattr(r, "continue") for r in servicer.list_requests] == ["", "c"]
    assert servicer.list_requests[0].limit == 500


@pytest.mark.anyio
async def test_leaving_a_watch_cancels_the_stream(served: tuple[Client, _Servicer]) -> None:
    client, servicer = served
    async with client.watch(types_pb2.Pod) as events:
        first = await events.__anext__()
        assert (first.type, first.object.metadata.name) == ("ADDED", "w")
        assert servicer.watch_open == 1
    with anyio.fail_after(2):
        await servicer.watch_closed.wait()
    await wait_until(lambda: servicer.watch_open == 0)


@pytest.mark.anyio
async def test_a_cancel_scope_interrupts_a_unary_call(served: tuple[Client, _Servicer]) -> None:
    client, _ = served
    with anyio.move_on_after(0.2) as scope:
        await client.get(types_pb2.Pod, "slow")
    assert scope.cancelled_caught


@pytest.mark.anyio
async def test_calls_wait_for_a_server_that_is_not_up_yet() -> None:
    first = grpc.aio.server()
    port = first.add_insecure_port("127.0.0.1:0")
    await first.start()
    await first.stop(None)  # the port is known and nothing listens on it now
    client = Client(f"127.0.0.1:{port}", timeout=5.0)
    server = grpc.aio.server()
    try:
        async with anyio.create_task_group() as tg:
            results: list[str] = []

            async def call() -> None:
                results.append((await client.version()).server.emulated_version)

            tg.start_soon(call)
            await anyio.sleep(0.3)
            assert results == []
            api_pb2_grpc.add_ApiServicer_to_server(_Servicer(), server)  # type: ignore[no-untyped-call]
            assert server.add_insecure_port(f"127.0.0.1:{port}") == port
            await server.start()
        assert results == ["1.37"]
    finally:
        await client.close()
        await server.stop(None)


@pytest.mark.anyio
async def test_a_one_attempt_view_shares_the_channel_and_fails_fast_on_a_gone_server(
    served: tuple[Client, _Servicer],
) -> None:
    client, _ = served
    view = client.one_attempt(0.5)
    assert (await view.version()).server.emulated_version == "1.37"
    assert view._ensure_channel() is client._ensure_channel()
    with pytest.raises(Conflict):  # errors come back as from the client itself
        await view.update(pod("a"))
    await view.close()  # a view does not close the channel it borrows
    assert (await client.version()).server.emulated_version == "1.37"
    with pytest.raises(ValueError, match="timeout"):
        client.one_attempt(0)


@pytest.mark.anyio
async def test_a_one_attempt_view_does_not_wait_for_a_server_that_is_not_up() -> None:
    first = grpc.aio.server()
    port = first.add_insecure_port("127.0.0.1:0")
    await first.start()
    await first.stop(None)  # nothing listens on the port now
    client = Client(f"127.0.0.1:{port}", timeout=5.0)
    try:
        view = client.one_attempt(3.0)
        start = anyio.current_time()
        with pytest.raises(Unavailable):
            await view.update(pod("a"))
        assert anyio.current_time() - start < 1.0  # refused at once, not after the timeout
        # The client itself still waits for the server.
        with anyio.move_on_after(0.3) as scope:
            await client.update(pod("a"))
        assert scope.cancelled_caught
    finally:
        await client.close()


@pytest.mark.anyio
async def test_a_write_refused_with_retry_after_is_sent_again_no_sooner(
    served: tuple[Client, _Servicer],
) -> None:
    client, servicer = served
    servicer.refuse_patches = 2
    patched = await client.patch(types_pb2.Pod, "a", {"metadata": {"labels": {"x": "1"}}})
    assert patched.metadata.name == "a"
    assert servicer.refuse_patches == 0 and len(servicer.patch_times) == 3
    gaps = [b - a for a, b in zip(servicer.patch_times, servicer.patch_times[1:], strict=False)]
    assert all(gap >= 0.95 for gap in gaps), gaps  # Retry-After: 1 is a floor


@pytest.mark.anyio
async def test_retries_of_too_many_requests_stop_within_the_timeout(
    served: tuple[Client, _Servicer],
) -> None:
    client, servicer = served
    servicer.refuse_patches = 100
    short = Client(client.server, timeout=1.5)
    try:
        start = anyio.current_time()
        with pytest.raises(TooManyRequests) as info:
            await short.patch(types_pb2.Pod, "a", {})
        assert info.value.retry_after_seconds == 1
        assert anyio.current_time() - start < 1.5
        assert len(servicer.patch_times) <= 2
    finally:
        await short.close()


@pytest.mark.anyio
async def test_too_many_requests_without_retry_after_is_raised_at_once(
    served: tuple[Client, _Servicer],
) -> None:
    client, _ = served
    start = anyio.current_time()
    with pytest.raises(TooManyRequests, match="Cannot evict") as info:
        await client.delete(types_pb2.Pod, "a")
    assert info.value.retry_after_seconds == 0
    assert anyio.current_time() - start < 0.5
