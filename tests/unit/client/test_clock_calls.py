"""How a client in a clock session counts its calls for the event-driven clock
(kemu.client.client, apiserver/clock/activity.py): every attempt is numbered, and one given up
on before the server answered (cancelled by its caller, ended by the transport) is counted as
abandoned, since the apiserver may never have received it; one the server answered is not."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from apiserver.clock.activity import Activity
from kemu import wire
from kemu.api.v1 import api_pb2
from kemu.client.client import Client, Transport
from kemu.machinery.errors import NotFound
from kemu.machinery.virtual_time import calls_square, clock_caller
from kemu.testing.fake_time import wait_until
from kemu.testing.ports import free_port
from tests.unit.version_server import version_server

pytestmark = pytest.mark.anyio

# Both transports count alike (docs/research/streams.md).
_TRANSPORTS = pytest.mark.parametrize("transport", list(Transport), ids=lambda t: t.value)


@asynccontextmanager
async def _server(activity: Activity, *, found: bool) -> AsyncIterator[str]:
    """A gRPC server whose Version is counted as the apiserver counts calls; it answers, or
    (`found` False) fails with a NotFound written as the apiserver writes errors."""

    async def version(request: api_pb2.VersionRequest, context: Any) -> api_pb2.VersionInfo:
        with activity.request(*clock_caller(context.invocation_metadata() or ())):
            if found:
                return api_pb2.VersionInfo()
            code, details, md = wire.status_of(NotFound("no such thing"))
            context.set_trailing_metadata(md)
            await context.abort(code, details)
            raise AssertionError("unreachable: abort raises")

    async with version_server(version) as address:
        yield address


@_TRANSPORTS
@pytest.mark.parametrize("found", [True, False], ids=["answered", "refused with an error"])
async def test_a_call_the_server_answered_is_numbered_and_not_abandoned(
    found: bool, transport: Transport
) -> None:
    activity = Activity()
    async with (
        _server(activity, found=found) as address,
        Client(address, transport=transport) as client,
    ):
        client.clock_identity = "kubelet-1"
        for _ in range(2):
            try:
                await client.version()
            except NotFound:
                assert not found
        assert (client.requests_sent, client.requests_abandoned) == (2, 0)
        assert activity.calls.count["kubelet-1"] == 2 and activity.calls.last["kubelet-1"] == 2
        assert activity.calls.first["kubelet-1"] == 1
        assert calls_square(
            2, 0, 2, activity.calls.first["kubelet-1"], activity.calls.last["kubelet-1"]
        )


@_TRANSPORTS
async def test_a_call_cancelled_before_it_reached_the_server_is_abandoned(
    transport: Transport,
) -> None:
    # (no server listens: the call waits for one, as a call made while the channel connects)
    async with Client(f"127.0.0.1:{free_port()}", transport=transport) as client:
        client.clock_identity = "kubelet-1"
        async with anyio.create_task_group() as tg:
            tg.start_soon(client.version)
            await wait_until(lambda: client.requests_sent == 1, within=5)
            tg.cancel_scope.cancel()
        assert client.requests_abandoned == 1
        # the apiserver received nothing of it, and the counts square all the same
        assert calls_square(client.requests_sent, client.requests_abandoned, 0, 0, 0)


@_TRANSPORTS
async def test_a_call_ended_by_its_deadline_is_abandoned(transport: Transport) -> None:
    async with Client(f"127.0.0.1:{free_port()}", timeout=0.2, transport=transport) as client:
        client.clock_identity = "kubelet-1"
        with pytest.raises(Exception):  # noqa: B017 (which error the deadline gives is not the point)
            await client.version()
        assert client.requests_sent >= 1
        assert client.requests_abandoned == client.requests_sent
