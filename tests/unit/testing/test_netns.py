"""kemu.testing.netns: hosts of their own in network namespaces on a bridge (needs root and
iproute2; skipped elsewhere, saying why)."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys

import pytest

from kemu.testing.netns import HostNetwork, NetnsError, clean_leftovers, unavailable_reason

REASON = unavailable_reason()
pytestmark = pytest.mark.skipif(REASON is not None, reason=f"network namespaces: {REASON}")


def _netns() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


def _links() -> set[str]:
    out = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True, check=True)
    return {line.split(":")[1].strip().split("@")[0] for line in out.stdout.splitlines()}


def test_hosts_reach_the_gateway_from_their_own_addresses_and_are_removed() -> None:
    with HostNetwork(2) as net, socket.socket() as server:
        assert net.subnet is not None
        addresses = [h.address for h in net.hosts]
        assert len(set(addresses)) == 2
        assert all(ipaddress.ip_address(a) in net.subnet for a in addresses)
        assert net.gateway not in addresses
        server.bind((net.gateway, 0))
        server.listen(2)
        port = server.getsockname()[1]
        for host in net.hosts:
            code = (
                "import socket; s = socket.create_connection"
                f"(({net.gateway!r}, {port}), timeout=5); print(s.getsockname()[0])"
            )
            out = subprocess.run(
                host.argv([sys.executable, "-c", code]), capture_output=True, text=True, timeout=30
            )
            assert out.stdout.strip() == host.address, out.stderr
            server.accept()[0].close()
        made = {h.netns for h in net.hosts}
        assert made <= _netns()
        assert net.bridge in _links()
    assert not made & _netns()
    assert net.bridge not in _links()


def test_a_failed_test_body_still_removes_everything() -> None:
    with pytest.raises(RuntimeError, match="the test failed"), HostNetwork(1) as net:
        made = {h.netns for h in net.hosts}
        raise RuntimeError("the test failed")
    assert not made & _netns()
    assert net.bridge not in _links()


def test_networks_at_once_take_different_subnets() -> None:
    with HostNetwork(1) as a, HostNetwork(1) as b:
        assert a.subnet is not None and b.subnet is not None
        assert not a.subnet.overlaps(b.subnet)
        assert a.bridge != b.bridge
        assert a.hosts[0].netns != b.hosts[0].netns


def test_what_a_dead_run_left_is_cleaned_at_the_next_start() -> None:
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    pid = int(dead.stdout)
    netns, bridge = f"kemu-{pid}-0-0", f"kb{pid}x0"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    subprocess.run(["ip", "link", "add", bridge, "type", "bridge"], check=True)
    try:
        clean_leftovers()  # (another test process's may have been first: both are gone)
        assert netns not in _netns()
        assert bridge not in _links()
    finally:
        subprocess.run(["ip", "netns", "delete", netns], capture_output=True, check=False)
        subprocess.run(["ip", "link", "delete", bridge], capture_output=True, check=False)


def test_a_count_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="count: must be >= 1, not 0"):
        HostNetwork(0)


def test_an_ip_failure_names_the_command_and_leaves_nothing() -> None:
    mine = f"kemu-{os.getpid()}-"
    before = {n for n in _netns() if n.startswith(mine)}
    net = HostNetwork(1)
    net.bridge = "x" * 20  # longer than an interface name may be
    with pytest.raises(NetnsError, match=f"ip link add {'x' * 20} type bridge"):
        net.start()
    assert {n for n in _netns() if n.startswith(mine)} == before
