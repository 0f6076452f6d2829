"""kemu.wire at a real in-process gRPC server: requests that do not decode are INVALID_ARGUMENT
(not gRPC's UNKNOWN), and an error that echoes a large input stays within the client's
metadata limit and comes back as the same class."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import anyio
import grpc
import grpc.aio
import pytest

from kemu import wire
from kemu.api.cloud.v1 import cloud_pb2
from kemu.client.client import Client
from kemu.machinery.errors import BadRequest, Cause, Invalid

pytestmark = pytest.mark.anyio


def metadata(e: grpc.aio.AioRpcError) -> dict[str, str]:
    md: Any = e.trailing_metadata() or ()
    return {str(k): v for k, v in md if isinstance(v, str)}


SERVICE = cloud_pb2.DESCRIPTOR.services_by_name["CloudProvider"]
TARGET_SIZE = "/kemu.api.cloud.v1.CloudProvider/NodeGroupTargetSize"


class _Servicer:
    """Every CloudProvider method: NodeGroupTargetSize answers, the others refuse with an
    error that echoes the (possibly huge) id."""

    def __getattr__(self, name: str) -> Any:
        async def refuse(request: Any, context: Any) -> Any:
            await wire.abort(context, BadRequest(f'no node group "{request.id}"'))

        return refuse

    async def NodeGroupTargetSize(
        self, request: cloud_pb2.NodeGroupTargetSizeRequest, context: Any
    ) -> cloud_pb2.NodeGroupTargetSizeResponse:
        if request.id != "ok":
            causes = [Cause(f"id[{i}]", request.id) for i in range(50)]
            await wire.abort(context, Invalid.from_causes("NodeGroup", causes))
        return cloud_pb2.NodeGroupTargetSizeResponse(target_size=3)


@pytest.fixture
async def channel() -> AsyncIterator[grpc.aio.Channel]:
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((wire.service_handler(SERVICE, _Servicer()),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            yield ch
    finally:
        await server.stop(None)


async def _call(channel: grpc.aio.Channel, body: bytes) -> bytes:
    return bytes(await channel.unary_unary(TARGET_SIZE, None, None)(body, timeout=5))


async def test_requests_that_decode_reach_the_servicer(channel: grpc.aio.Channel) -> None:
    data = await _call(channel, cloud_pb2.NodeGroupTargetSizeRequest(id="ok").SerializeToString())
    assert cloud_pb2.NodeGroupTargetSizeResponse.FromString(data).target_size == 3


@pytest.mark.parametrize(
    "body",
    [
        b"\x0a\x02x\xff",  # id: not UTF-8
        b"\x0a\x09abc",  # id: longer than the body
        b"\x0f\x00",  # wire type 7
        b"\x08" + b"\xff" * 11,  # a varint that never ends
    ],
)
async def test_requests_that_do_not_decode_are_invalid_argument_naming_the_type(
    channel: grpc.aio.Channel, body: bytes
) -> None:
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await _call(channel, body)
    assert e.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert "kemu.api.cloud.v1.NodeGroupTargetSizeRequest" in (e.value.details() or "")
    assert metadata(e.value)[wire.REASON_KEY] == "BadRequest"


async def test_an_error_echoing_a_huge_input_fits_the_clients_metadata(
    channel: grpc.aio.Channel,
) -> None:
    """Before #28 the details (and the causes) echoed all of it: the client, whose metadata
    limit is 8 KiB, saw an opaque INTERNAL instead of the refusal."""
    big = "é" * 100_000
    body = cloud_pb2.NodeGroupTargetSizeRequest(id=big).SerializeToString()
    with pytest.raises(grpc.aio.AioRpcError) as e:
        await _call(channel, body)
    assert e.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    details = e.value.details() or ""
    assert details.startswith("NodeGroup is invalid: id[0]: éé") and details.endswith("bytes)")
    assert len(details.encode()) <= wire.MAX_DETAILS_BYTES
    md = metadata(e.value)
    causes = json.loads(md[wire.CAUSES_KEY])
    assert 0 < len(causes) < 50 and len(md[wire.CAUSES_KEY]) <= wire.MAX_CAUSES_CHARS
    assert causes[0]["field"] == "id[0]"


def test_status_of_bounds_details_and_causes() -> None:
    err = Invalid.from_causes("Pod", [Cause("metadata.name", "x" * 10_000)] * 100)
    code, details, md = wire.status_of(err)
    assert code is grpc.StatusCode.INVALID_ARGUMENT
    assert len(details.encode()) <= wire.MAX_DETAILS_BYTES
    causes_json = dict(md)[wire.CAUSES_KEY]
    assert len(causes_json) <= wire.MAX_CAUSES_CHARS
    rebuilt = wire.error_from_status(code, details, md)
    assert isinstance(rebuilt, Invalid) and rebuilt.causes[0].field == "metadata.name"
    small = BadRequest("short")
    assert wire.status_of(small)[1] == "short"


async def test_the_client_sees_the_bounded_refusal_as_its_class() -> None:
    """kemu.client against an edge that refuses with a huge echo: BadRequest, not Internal."""
    server = grpc.aio.server()

    async def get(data: bytes, context: Any) -> bytes:
        await wire.abort(context, BadRequest("no such name: " + "x" * 50_000))

    handler = grpc.method_handlers_generic_handler(
        "kemu.api.v1.Api", {"Get": grpc.unary_unary_rpc_method_handler(get)}
    )
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        from kemu.api.v1 import types_pb2

        async with Client(f"127.0.0.1:{port}", timeout=5.0, wait_for_server=False) as client:
            with pytest.raises(BadRequest, match=r"^no such name: x+\.\.\. \(50014 bytes\)$"):
                await client.get(types_pb2.Pod, "p", "default")
    finally:
        await server.stop(None)


async def test_a_cancelled_stream_closes_the_servicers_generator_at_once() -> None:
    """wire.unary_stream wraps the servicer's generator: when the client goes, the inner one's
    cleanup (a watch unregistering its watcher) runs then, not when it is garbage collected."""
    closed = anyio.Event()

    async def stream(
        req: cloud_pb2.NodeGroupNodesRequest, context: Any
    ) -> AsyncGenerator[bytes, None]:
        try:
            while True:
                yield req.id.encode()
                await anyio.sleep(0.01)
        finally:
            closed.set()

    handler = grpc.method_handlers_generic_handler(
        "t.S",
        {
            "Stream": grpc.unary_stream_rpc_method_handler(
                wire.unary_stream(stream, cloud_pb2.NodeGroupNodesRequest)
            )
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as ch:
            call = ch.unary_stream("/t.S/Stream", None, None)(
                cloud_pb2.NodeGroupNodesRequest(id="g").SerializeToString()
            )
            async for message in call:
                assert message == b"g"
                break
            call.cancel()
            with anyio.fail_after(5):
                await closed.wait()
    finally:
        await server.stop(None)
