"""A hollow kubelet whose nodes its parent adds and removes (`python -m kubelet --node-control
stdin`, the cloud's `--kubelet-processes node-group`) on real processes: an added node registers
with its providerID and runs the pods bound to it, including a pod bound before the node was
added (listed at the add); a removed node is answered `removed NAME` once stopped and its Lease
is no longer renewed while the other node's is; the process's identity rides on its first
node's Lease, then on the next node added once that one is removed; the end of stdin stops
the process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.identity import COMPONENT_LABEL
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LEASE_SECONDS = 2  # renewed every 0.5 s


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("node-control")) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


@pytest.fixture
def kubelet(cluster: Cluster, tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    with (tmp_path / "kubelet.log").open("wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable, "-m", "kubelet",
                "--server", cluster.server,
                "--node-control", "stdin",
                "--capacity", "cpu=2,memory=4Gi,pods=10",
                "--node-labels", "pool=control",
                "--root-dir", str(tmp_path / "root"),
                "--metrics-port", "0",
                "--pod-startup-delay", "0s",
                "--node-lease-duration-seconds", str(LEASE_SECONDS),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
        )  # fmt: skip
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            assert pipe is not None
            pipe.close()


def send(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode() + b"\n")
    proc.stdin.flush()


async def answer(proc: subprocess.Popen[bytes]) -> str:
    assert proc.stdout is not None
    with anyio.fail_after(10):
        line = await anyio.to_thread.run_sync(proc.stdout.readline, abandon_on_cancel=True)
    return line.decode().strip()


async def running(api: Client, name: str, ns: str) -> types_pb2.Pod:
    pod = await api.get(types_pb2.Pod, name, ns)
    assert pod.status.phase == "Running", pod.status.phase
    return pod


async def test_nodes_added_and_removed_at_run_time(
    cluster: Cluster, kubelet: subprocess.Popen[bytes]
) -> None:
    async with Client(cluster.server) as api:
        ns = await create_namespace(api, "control")
        # A pod bound to a node that does not run yet: found when the node is added.
        await api.create(make_pod("early").namespace(ns).node("g-1").obj())
        send(kubelet, "add g-0 kemu://g/g-0")
        send(kubelet, "add g-1 -")
        send(kubelet, "not a command")  # logged and skipped

        async def registered() -> dict[str, types_pb2.Node]:
            nodes = {n.metadata.name: n for n in (await api.list_all(types_pb2.Node)).items}
            assert set(nodes) == {"g-0", "g-1"}, set(nodes)
            return nodes

        nodes = await eventually(registered, timeout=20)
        assert nodes["g-0"].spec.provider_id == "kemu://g/g-0"
        assert nodes["g-1"].spec.provider_id == ""
        assert {n.metadata.labels["pool"] for n in nodes.values()} == {"control"}
        assert nodes["g-0"].status.addresses[0].address != nodes["g-1"].status.addresses[0].address
        await eventually(lambda: running(api, "early", ns), timeout=20)
        await api.create(make_pod("late").namespace(ns).node("g-0").obj())
        await eventually(lambda: running(api, "late", ns), timeout=20)

        send(kubelet, "remove g-0")
        assert await answer(kubelet) == "removed g-0"
        send(kubelet, "remove nope")  # not running: answered all the same
        assert await answer(kubelet) == "removed nope"

        # Over three renew intervals, g-1's Lease is renewed and g-0's is not.
        async def renew_times() -> dict[str, int]:
            leases = await api.list_all(types_pb2.Lease, "kube-node-lease")
            return {
                lease.metadata.name: lease.spec.renew_time.ToNanoseconds() for lease in leases.items
            }

        before = await renew_times()
        await anyio.sleep(3 * LEASE_SECONDS / 4)
        after = await renew_times()
        assert after["g-0"] == before["g-0"]
        assert after["g-1"] > before["g-1"]

        # The process's identity (the Version RPC's) rode on the Lease of g-0, its first node;
        # with g-0 gone, the next node added carries it.
        send(kubelet, "add g-2 -")

        async def stamped() -> set[str]:
            leases = await api.list_all(types_pb2.Lease, "kube-node-lease")
            names = {
                lease.metadata.name
                for lease in leases.items
                if lease.metadata.labels.get(COMPONENT_LABEL) == "kubelet"
            }
            assert "g-2" in names, names
            info = await api.version()
            listed = {c.identity for c in info.components if c.component == "kubelet"}
            assert "g-2" in listed, listed
            return names

        assert await eventually(stamped, timeout=20) == {"g-0", "g-2"}

        # The end of stdin: the process stops by itself, cleanly.
        assert kubelet.stdin is not None
        kubelet.stdin.close()
        with anyio.fail_after(15):
            code = await anyio.to_thread.run_sync(kubelet.wait)
        assert code == 0
