"""The node IPAM controller (RangeAllocator) against the fake client: distinct ranges of the
cluster CIDR, set once, rebuilt from the nodes after a restart, freed with their node."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import app
from controllermanager.cidrset import CIDRSet, CIDRSetFull
from controllermanager.config import ControllerConfigurations, NodeIpamOptions
from controllermanager.node_ipam import (
    NodeIpamController,
)
from controllermanager.options import build_parser, node_ipam_options_from_args
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.testing.builders import make_node
from kemu.testing.fake_time import settle, wait_until

OPTIONS = NodeIpamOptions(ipaddress.ip_network("10.244.0.0/22"), 24)


def test_cidr_set_hands_out_ranges_round_robin() -> None:
    cidrs = CIDRSet(ipaddress.ip_network("10.244.0.0/22"), 24)
    assert [str(cidrs.allocate_next()) for _ in range(3)] == [
        "10.244.0.0/24",
        "10.244.1.0/24",
        "10.244.2.0/24",
    ]
    cidrs.release(ipaddress.ip_network("10.244.0.0/24"))
    assert str(cidrs.allocate_next()) == "10.244.3.0/24"
    assert str(cidrs.allocate_next()) == "10.244.0.0/24"
    with pytest.raises(CIDRSetFull):
        cidrs.allocate_next()
    with pytest.raises(ValueError, match="not within"):
        cidrs.occupy(ipaddress.ip_network("10.9.0.0/24"))


def _args(*argv: str) -> NodeIpamOptions | None:
    return node_ipam_options_from_args(build_parser().parse_args(list(argv)))


def test_flags_as_upstream() -> None:
    assert _args() is None  # --allocate-node-cidrs defaults to false
    assert _args("--allocate-node-cidrs", "--cluster-cidr", "10.244.0.0/16") == NodeIpamOptions(
        ipaddress.ip_network("10.244.0.0/16"), 24
    )
    six = _args("--allocate-node-cidrs", "--cluster-cidr", "fd00:10::/56")
    assert six is not None and six.node_cidr_mask_size == 64
    with pytest.raises(ValueError, match="--cluster-cidr: required"):
        _args("--allocate-node-cidrs")
    with pytest.raises(ValueError, match="--node-cidr-mask-size"):
        _args(
            "--allocate-node-cidrs", "--cluster-cidr", "10.0.0.0/16", "--node-cidr-mask-size", "8"
        )
    assert "nodeipam" in app.CONTROLLERS
    without = app.configure_controllers(app.CONTROLLERS, ControllerConfigurations())
    assert "nodeipam" not in without


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[NodeIpamController]:
    informers = InformerFactory(fake, clock=clock)
    controller = NodeIpamController(fake, informers, clock, OPTIONS)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield controller
        tg.cancel_scope.cancel()


async def _cidrs(fake: FakeClient) -> dict[str, tuple[str, list[str]]]:
    nodes = await fake.list(types_pb2.Node)
    return {n.metadata.name: (n.spec.pod_cidr, list(n.spec.pod_cidrs)) for n in nodes.items}


@pytest.mark.anyio
async def test_nodes_get_distinct_ranges_and_a_restart_hands_none_twice() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    taken = make_node("old").obj()
    taken.spec.pod_cidr = "10.244.0.0/24"  # given by an earlier controller
    taken.spec.pod_cidrs.append("10.244.0.0/24")
    await fake.create(taken)
    await fake.create(make_node("a").obj())
    async with running(fake, clock):
        await fake.create(make_node("b").obj())

        async def both() -> bool:
            got = await _cidrs(fake)
            return bool(got["a"][0] and got["b"][0])

        await wait_until(both)
        got = await _cidrs(fake)
        assert got["old"] == ("10.244.0.0/24", ["10.244.0.0/24"])
        assert {got["a"][0], got["b"][0]} == {"10.244.1.0/24", "10.244.2.0/24"}
        assert all(cidr == [single] for single, cidr in got.values())
    # A new controller (restarted, or another leader) knows every range in use.
    await fake.create(make_node("c").obj())
    async with running(fake, clock) as controller:

        async def c_has_one() -> bool:
            return bool((await _cidrs(fake))["c"][0])

        await wait_until(c_has_one)
        assert (await _cidrs(fake))["c"][0] == "10.244.3.0/24"
        assert controller.cidrs.in_use() == 4
        # The cluster CIDR is full: a new node waits; a deleted node's range is free again.
        await fake.create(make_node("d").obj())
        await settle()
        assert (await _cidrs(fake))["d"] == ("", [])
        await fake.delete(types_pb2.Node, "a")
        await settle()
        assert controller.cidrs.in_use() == 3
        freed = got["a"][0]
        node_d = await fake.get(types_pb2.Node, "d")
        node_d.metadata.labels["touched"] = "yes"  # its next update tries again
        await fake.update(node_d)

        async def d_has_the_freed_one() -> bool:
            return (await _cidrs(fake))["d"][0] == freed

        await wait_until(d_has_the_freed_one)
