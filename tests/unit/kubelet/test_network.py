"""The simulated pod network (kubelet.network): node IPs, and pod IPs from the node's podCIDR,
given once, freed when the pod stops, rebuilt after a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle
from kubelet.network import PodAddresses, default_node_ip, parse_node_ip
from kubelet.node_status import build_node, status_differs
from kubelet.options import build_parser, settings_from_args

from .helpers import Env, advance, running_workers, wait_running


def test_pod_ips_are_the_lowest_free_past_the_gateway() -> None:
    addresses = PodAddresses("n1")
    assert addresses.assign("a") == ""  # no pod CIDR yet
    assert addresses.set_pod_cidr("10.244.1.0/24")
    assert not addresses.set_pod_cidr("10.244.9.0/24")  # set once
    assert [addresses.assign(uid) for uid in "abc"] == ["10.244.1.2", "10.244.1.3", "10.244.1.4"]
    assert addresses.assign("a") == "10.244.1.2"
    addresses.release("b")
    assert addresses.assign("d") == "10.244.1.3"
    # A pod whose status shows a free IP in the range keeps it; otherwise the lowest free.
    assert addresses.assign("e", preferred="10.244.1.77") == "10.244.1.77"
    assert addresses.assign("f", preferred="10.244.1.77") == "10.244.1.5"
    assert addresses.assign("g", preferred="10.9.9.9") == "10.244.1.6"


def test_a_full_pod_cidr_gives_no_ip() -> None:
    addresses = PodAddresses("n1")
    addresses.set_pod_cidr("10.244.1.0/30")  # .0 network, .1 gateway, .3 broadcast
    assert addresses.assign("a") == "10.244.1.2"
    assert addresses.assign("b") == ""


def test_node_ips_default_from_the_name_and_follow_each_other_for_hollow_nodes() -> None:
    parser = build_parser()
    one = settings_from_args(parser.parse_args(["--node-name", "node-a"]), "v1.37.0")
    assert one.nodes[0].node_ip == str(default_node_ip("node-a"))
    again = settings_from_args(parser.parse_args(["--node-name", "node-a"]), "v1.37.0")
    assert again.nodes[0].node_ip == one.nodes[0].node_ip
    hollow = settings_from_args(
        parser.parse_args(["--nodes", "3", "--node-ip", "172.18.0.2"]), "v1.37.0"
    )
    assert [n.node_ip for n in hollow.nodes] == ["172.18.0.2", "172.18.0.3", "172.18.0.4"]
    for bad in ("10.0.0.1,fd00::1", "nope", "0.0.0.0"):
        with pytest.raises(ValueError, match="--node-ip"):
            settings_from_args(parser.parse_args(["--node-ip", bad]), "v1.37.0")
    assert str(parse_node_ip("fd00::1")) == "fd00::1"


def _pod(name: str, **annotations: str) -> types_pb2.Pod:
    b = make_pod(name).req(cpu="100m").node("n1")
    for key, value in annotations.items():
        b = b.annotation(key, value)
    return b.obj()


async def _ips(env: Env, *names: str) -> list[str]:
    return [(await env.pod(n)).status.pod_ip for n in names]


@pytest.mark.anyio
async def test_pods_get_distinct_ips_freed_when_they_end(tmp_path: Path) -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        env.node().node_ip = "172.18.0.2"
        env.workers.set_pod_cidr("n1", "10.244.1.0/24")
        await fake.create(_pod("a", **{"kubelet.kemu.io/run-duration": "2s"}))
        await fake.create(_pod("b"))
        await wait_running(env, "a")
        await wait_running(env, "b")
        assert sorted(await _ips(env, "a", "b")) == ["10.244.1.2", "10.244.1.3"]
        a_ip = (await env.pod("a")).status.pod_ip
        assert (await env.pod("b")).status.host_ip == "172.18.0.2"
        await advance(env.clock, 2.5)
        assert await env.phase("a") == "Succeeded"
        assert await _ips(env, "a") == [a_ip]  # a finished pod's status keeps its IP
        await fake.create(_pod("c"))
        await wait_running(env, "c")
        assert await _ips(env, "c") == [a_ip]  # ... which is free for the next pod
        b_ip = (await env.pod("b")).status.pod_ip
    # A restarted kubelet knows which IPs its running pods hold before it gives any new one.
    async with running_workers(fake=fake, clock=clock, root_dir=tmp_path) as env:
        env.workers.set_pod_cidr("n1", "10.244.1.0/24")
        await settle()
        await fake.create(_pod("d"))
        await wait_running(env, "d")
        assert await _ips(env, "b", "c") == [b_ip, a_ip]
        assert await _ips(env, "d") == ["10.244.1.4"]


@pytest.mark.anyio
async def test_a_pod_started_before_the_pod_cidr_gets_its_ip_once_it_comes() -> None:
    async with running_workers() as env:
        await env.fake.create(_pod("early"))
        await wait_running(env, "early")
        assert await _ips(env, "early") == [""]
        env.workers.set_pod_cidr("n1", "10.244.7.0/24")
        await advance(env.clock, 0.1)
        assert await _ips(env, "early") == ["10.244.7.2"]


def test_nodes_report_their_internal_ip_and_hostname() -> None:
    """pkg/kubelet/nodestatus/setters.go NodeAddress without a cloud provider."""
    parser = build_parser()
    (config,) = settings_from_args(
        parser.parse_args(["--node-name", "n1", "--node-ip", "172.18.0.9"]), "v1.37.0"
    ).nodes
    node = build_node(config, 0.0)
    assert [(a.type, a.address) for a in node.status.addresses] == [
        ("InternalIP", "172.18.0.9"),
        ("Hostname", "n1"),
    ]
    assert not status_differs(node, config)
    del node.status.addresses[:]
    assert status_differs(node, config)
