"""A client given several apiserver addresses: parsing of --server, the gRPC target, and
failover to the next server (reads, new calls and watches) when the one in use goes away."""

from __future__ import annotations

import importlib
import random
from collections.abc import AsyncIterator
from typing import Any

import anyio
import grpc
import grpc.aio
import pytest

from kemu.api.v1 import api_pb2, api_pb2_grpc, types_pb2
from kemu.client.client import Client
from kemu.client.endpoints import (
    ServerAddressError,
    ServerOrder,
    apiserver_connection,
    channel_target,
    ordered_servers,
    parse_servers,
)
from kemu.machinery import kinds
from kemu.machinery.errors import Unavailable

from .helpers import pod


def test_parse_servers_keeps_order_and_drops_repeats() -> None:
    assert parse_servers("127.0.0.1:1,127.0.0.1:2, 127.0.0.1:1") == ("127.0.0.1:1", "127.0.0.1:2")
    assert parse_servers("[::1]:6443,h:1") == ("[::1]:6443", "h:1")


@pytest.mark.parametrize("bad", ["a:1,", "a:1,,b:2", "a:1,b", "a:1,b:x", "a:1,:2", "a:1,b:0"])
def test_parse_servers_names_the_flag_on_bad_input(bad: str) -> None:
    with pytest.raises(ServerAddressError, match="--server"):
        parse_servers(bad)


@pytest.mark.parametrize(
    "component", ["scheduler", "kubelet", "controllermanager", "cloud", "autoscaler"]
)
def test_every_components_server_flag_is_checked_by_argparse(
    component: str, capsys: pytest.CaptureFixture[str]
) -> None:
    parser = importlib.import_module(f"{component}.options").build_parser()
    server = next(a for a in parser._actions if "--server" in a.option_strings)
    assert server.metavar == "HOST:PORT[,HOST:PORT...]"
    assert server.type is not None
    assert server.type("127.0.0.1:1, 127.0.0.1:2,127.0.0.1:1") == "127.0.0.1:1,127.0.0.1:2"
    for bad, message in [
        ("127.0.0.1:1,,127.0.0.1:2", "empty address"),
        ("127.0.0.1:1,nope", "'nope' is not HOST:PORT"),
        ("127.0.0.1:1,[::1]:2", "mixes IPv4 and IPv6"),
    ]:
        with pytest.raises(SystemExit) as exit_:
            parser.parse_args(["--server", bad])
        assert exit_.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith(f"{component}: error: argument --server: "), err
        assert message in err
        assert err.count("\n") == 1 and "Traceback" not in err


_REQUIRED = {
    "cloud": ["--config", "c.yaml", "--state-dir", "d"],
    "autoscaler": ["--cloud-provider-address", "127.0.0.1:9"],
}


@pytest.mark.parametrize(
    "component", ["scheduler", "kubelet", "controllermanager", "cloud", "autoscaler"]
)
def test_server_order_shuffled_spreads_processes_over_the_list(
    component: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Upstream's L4 balancer spreads connections: processes given the same list start on
    different apiservers; `listed`, the default, keeps the order."""
    parser = importlib.import_module(f"{component}.options").build_parser()
    required = _REQUIRED.get(component, [])
    three = "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3"
    assert apiserver_connection(parser.parse_args([*required, "--server", three]))[0] == three
    args = parser.parse_args([*required, "--server", three, "--server-order", "shuffled"])
    assert args.server_order is ServerOrder.SHUFFLED
    firsts = set()
    for _ in range(60):  # P(one address never first in 60 draws) = 3 * (2/3)^60, ~1e-10
        server, _tls = apiserver_connection(args)
        assert sorted(parse_servers(server)) == sorted(parse_servers(three))
        firsts.add(parse_servers(server)[0])
    assert firsts == set(parse_servers(three))
    with pytest.raises(SystemExit):
        parser.parse_args([*required, "--server", three, "--server-order", "round-robin"])
    err = capsys.readouterr().err
    assert err == (
        f"{component}: error: argument --server-order: 'round-robin' is not one of "
        "listed, shuffled\n"
    )


def test_ordered_servers_leaves_one_address_and_keeps_a_seeded_shuffle() -> None:
    assert ordered_servers("h:1", ServerOrder.SHUFFLED) == "h:1"
    two = "127.0.0.1:1,127.0.0.1:2"
    seeded = {ordered_servers(two, ServerOrder.SHUFFLED, random.Random(s)) for s in range(20)}
    assert seeded == {two, "127.0.0.1:2,127.0.0.1:1"}
    assert ordered_servers(two, ServerOrder.LISTED, random.Random(1)) == two


def test_channel_target_is_the_address_itself_for_one_server() -> None:
    assert channel_target(("myhost:6443",)) == "myhost:6443"


def test_channel_target_lists_every_address_resolved() -> None:
    assert channel_target(("127.0.0.1:1", "localhost:2")) == "ipv4:127.0.0.1:1,127.0.0.1:2"
    assert channel_target(("[::1]:1", "[::1]:2")) == "ipv6:[::1]:1,[::1]:2"
    with pytest.raises(ServerAddressError, match="mixes IPv4 and IPv6"):
        channel_target(("127.0.0.1:1", "[::1]:2"))


def test_a_bad_list_fails_when_the_client_is_made() -> None:
    with pytest.raises(ServerAddressError, match="--server"):
        Client("127.0.0.1:1,nope")
    assert Client("127.0.0.1:1").servers == ("127.0.0.1:1",)


class _Named(api_pb2_grpc.ApiServicer):
    """Answers Version with its name and streams one event per watch, then holds it open."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def Version(self, request: api_pb2.VersionRequest, context: Any) -> api_pb2.VersionInfo:
        return api_pb2.VersionInfo(server=api_pb2.ComponentVersion(emulated_version=self.name))

    async def Watch(
        self, request: api_pb2.WatchRequest, context: Any
    ) -> AsyncIterator[api_pb2.WatchResponse]:
        yield api_pb2.WatchResponse(
            events=[api_pb2.WatchEvent(type="ADDED", object=kinds.wrap(pod(self.name)))]
        )
        await anyio.sleep(60)


async def _serve(name: str, port: int = 0) -> tuple[grpc.aio.Server, int]:
    server = grpc.aio.server()
    api_pb2_grpc.add_ApiServicer_to_server(_Named(name), server)  # type: ignore[no-untyped-call]
    bound = server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    return server, bound


async def _answered_by(client: Client) -> str:
    return (await client.version()).server.emulated_version


@pytest.mark.anyio
async def test_calls_and_watches_fail_over_to_the_next_server_and_back() -> None:
    a, port_a = await _serve("a")
    b, port_b = await _serve("b")
    client = Client(f"127.0.0.1:{port_a},127.0.0.1:{port_b}", timeout=5.0)
    try:
        assert await _answered_by(client) == "a"  # the first address that answers
        async with client.watch(types_pb2.Pod) as events:
            first = await events.__anext__()
            assert first.object.metadata.name == "a"
            await a.stop(None)  # apiserver a goes away with the watch open
            with anyio.fail_after(5), pytest.raises(Unavailable):
                await events.__anext__()
        with anyio.fail_after(5):
            assert await _answered_by(client) == "b"
        async with client.watch(types_pb2.Pod) as events:  # the informer's resumed watch
            with anyio.fail_after(5):
                assert (await events.__anext__()).object.metadata.name == "b"
        # a comes back (same port) and b goes away: the client goes back to a.
        a, _ = await _serve("a", port_a)
        await b.stop(None)
        with anyio.fail_after(5):
            assert await _answered_by(client) == "a"
    finally:
        await client.close()
        await a.stop(None)
        await b.stop(None)


@pytest.mark.anyio
async def test_a_client_with_several_servers_waits_when_none_is_up_yet() -> None:
    a, port_a = await _serve("a")
    b, port_b = await _serve("b")
    await a.stop(None)
    await b.stop(None)  # both ports known, nothing listens
    client = Client(f"127.0.0.1:{port_a},127.0.0.1:{port_b}", timeout=5.0)
    results: list[str] = []
    try:
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await _answered_by(client))

            tg.start_soon(call)
            await anyio.sleep(0.3)
            assert results == []
            b, _ = await _serve("b", port_b)
        assert results == ["b"]
    finally:
        await client.close()
        await b.stop(None)
