"""Off loopback (issue #60 item 4): a cluster whose kubelets live on hosts of their own.

Three network namespaces on a bridge (kemu.testing.netns), each with an address of its own;
the apiserver in the root namespace on the bridge's address only (gRPC and REST, TLS with the
cluster's CA, its serving certificate naming that address), under `--authorization-mode
Node,RBAC` with NodeRestriction, as kubeadm runs it; a scheduler in the root namespace. Two
kubelets, each in its namespace with its own client certificate and kubeconfig (the
apiserver's address in it), `--node-ip` its namespace's address and its metrics and health
endpoint served there over TLS (a serving certificate for that address, as the
kubelet-serving signer issues): both join (Ready, a Lease), the Node's InternalIP is the
namespace's address, and a pod the scheduler places on each runs there with that hostIP
(S-SEC-OFFLOOPBACK-1). A third kubelet in the third namespace, with the first node's
certificate and kubeconfig and a --node-name of its own, is refused: NodeRestriction refuses
its Node's creation and the Node authorizer the reading of a Node another made for it; it
never becomes Ready, its Lease never exists, and its log names the refusals
(S-SEC-OFFLOOPBACK-2).

It needs root and iproute2 (`ip netns`): elsewhere it skips, saying why.
"""

from __future__ import annotations

import functools
import shutil
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import kubeconfig
from kemu.machinery.errors import NotFound
from kemu.machinery.pki import (
    COMPONENTS,
    ClusterPki,
    kubelet_user,
    write_cluster_pki,
    write_kubelet_serving,
)
from kemu.machinery.user import UserInfo
from kemu.testing.builders import make_node, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.netns import Host, HostNetwork, unavailable_reason
from kemu.testing.ports import LOOPBACK, free_port

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODES = ("ol-n1", "ol-n2")
IMPOSTOR = "ol-n3"
TIMEOUT = 60.0
KUBECTL = shutil.which("kubectl")
ROOT = UserInfo("root", ("system:masters",))
"""The test's administrator (kubeadm's kubernetes-admin is bound by kubeadm, not the
apiserver's bootstrap policy)."""


@dataclass(frozen=True)
class OffLoopback:
    cluster: Cluster
    pki: ClusterPki
    network: HostNetwork
    grpc_port: int

    def host(self, node: str) -> Host:
        return self.network.hosts[[*NODES, IMPOSTOR].index(node)]

    def client(self, name: str) -> Client:
        config = kubeconfig.load(self.pki.kubeconfig(name))
        return Client(config.grpc_server, tls=config.tls, timeout=10)


@pytest.fixture(scope="module")
def network() -> Iterator[HostNetwork]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(f"a cluster off loopback needs network namespaces: {reason}")
    with HostNetwork(3) as net:
        yield net


@pytest.fixture(scope="module")
def off_loopback(
    network: HostNetwork, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OffLoopback]:
    with Cluster(tmp_path_factory.mktemp("off-loopback")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        address = network.gateway
        port, rest_port = free_port(address), free_port(address)
        users = {
            **COMPONENTS,
            "root": ROOT,
            **{f"kubelet-{n}": kubelet_user(n) for n in NODES},
        }
        pki = write_cluster_pki(
            c.root / "pki",
            rest_url=f"https://{address}:{rest_port}",
            grpc_server=f"{address}:{port}",
            users=users,
            host=address,
        )
        args = ["--etcd-servers", c.etcd_servers, "--bind-address", address]
        args += ["--port", str(port), "--rest-port", str(rest_port), *pki.apiserver_args()]
        args += ["--authorization-mode", "Node,RBAC"]
        args += ["--enable-admission-plugins", "NodeRestriction"]
        args += ["--disable-admission-plugins", "ServiceAccount"]  # (no controller-manager)
        c.start_component("apiserver", "apiserver", args, port=port)
        secured = OffLoopback(c, pki, network, port)
        for node in NODES:
            _start_kubelet(secured, node, credentials=node)
        yield secured


async def _start_scheduler(s: OffLoopback) -> None:
    """The scheduler, in the root namespace, with its certificate (system:kube-scheduler: the
    bootstrap policy's roles are all it needs)."""
    start = functools.partial(
        s.cluster.start_component,
        "scheduler",
        "scheduler",
        ["--kubeconfig", str(s.pki.kubeconfig("scheduler"))],
    )
    await anyio.to_thread.run_sync(start)


def _start_kubelet(s: OffLoopback, node: str, *, credentials: str, wait: bool = True) -> None:
    """A kubelet for `node` in its host, with the kubeconfig of kubelet-`credentials`."""
    host = s.host(node)
    write_kubelet_serving(s.pki, node, [host.address])
    s.cluster.start_component(
        "kubelet",
        f"kubelet-{node}",
        [
            "--kubeconfig", str(s.pki.kubeconfig(f"kubelet-{credentials}")),
            "--node-name", node,
            "--node-ip", host.address,
            "--capacity", "cpu=4,memory=8Gi,pods=110",
            "--root-dir", str(s.cluster.root / f"kubelet-{node}"),
            *s.pki.kubelet_serving_args(node),
        ],
        host=host,
        metrics_ca=s.pki.ca_file,
        wait=wait,
    )  # fmt: skip


def _ready(node: types_pb2.Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


async def test_s_sec_offloopback_1_kubelets_in_network_namespaces_join_over_tls(
    off_loopback: OffLoopback,
) -> None:
    s = off_loopback
    await _start_scheduler(s)
    async with s.client("root") as admin:
        for node in NODES:
            builder = make_pod(f"on-{node}").namespace("default").req(cpu="100m")
            await admin.create(builder.node_selector({"kubernetes.io/hostname": node}).obj())

        async def joined_and_running() -> bool:
            for node in NODES:
                got = await admin.get(types_pb2.Node, node)
                assert _ready(got), (node, list(got.status.conditions))
                lease = await admin.get(types_pb2.Lease, node, "kube-node-lease")
                assert lease.spec.holder_identity == node
                pod = await admin.get(types_pb2.Pod, f"on-{node}", "default")
                assert pod.spec.node_name == node, (node, pod.spec.node_name)
                assert pod.status.phase == "Running", (node, pod.status.phase)
            return True

        await eventually(joined_and_running, timeout=TIMEOUT)
        for node in NODES:
            got = await admin.get(types_pb2.Node, node)
            addresses = [(a.type, a.address) for a in got.status.addresses]
            assert addresses[0] == ("InternalIP", s.host(node).address), addresses
            pod = await admin.get(types_pb2.Pod, f"on-{node}", "default")
            assert pod.status.host_ip == s.host(node).address
    # the kubelets' endpoints answer on their hosts' addresses over TLS (verified by the CA),
    # and the apiserver is on the bridge's address alone: nothing of it on loopback
    for node in NODES:
        kubelet = s.cluster.component(f"kubelet-{node}")
        assert (
            kubelet.healthz_url == f"https://{s.host(node).address}:{kubelet.metrics_port}/healthz"
        )
        assert kubelet.get(kubelet.healthz_url) == (200, b"ok")
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((LOOPBACK, s.grpc_port), timeout=5).close()
    if KUBECTL is not None:  # the REST edge, for the real kubectl, on the bridge's address
        command = [
            KUBECTL,
            "get",
            "nodes",
            "-o",
            "jsonpath={.items[*].status.addresses[0].address}",
        ]
        env = {
            "KUBECONFIG": str(s.pki.kubeconfig("root")),
            "KUBECACHEDIR": str(s.cluster.root / "kube-cache"),
        }
        run = functools.partial(
            subprocess.run, command, env=env, capture_output=True, text=True, timeout=30
        )
        out = await anyio.to_thread.run_sync(run)
        assert out.returncode == 0, out.stderr
        assert sorted(out.stdout.split()) == sorted(s.host(n).address for n in NODES)


async def test_s_sec_offloopback_2_a_kubelet_with_another_nodes_certificate_is_refused(
    off_loopback: OffLoopback,
) -> None:
    s = off_loopback
    # ol-n3's kubelet with ol-n1's certificate: its user is system:node:ol-n1
    _start_kubelet(s, IMPOSTOR, credentials=NODES[0], wait=False)
    name = f"kubelet-{IMPOSTOR}"
    # NodeRestriction refuses its Node's creation, the Node authorizer its reading
    created = (
        f'registration failed (Forbidden: nodes "{IMPOSTOR}" is forbidden: node "{NODES[0]}" '
        f'is not allowed to modify node "{IMPOSTOR}")'
    )
    read = f"node '{NODES[0]}' cannot read '{IMPOSTOR}', only its own Node object"

    def refusals() -> int:
        return s.cluster.logs()[name].count(created)

    async def refused() -> bool:
        assert s.cluster.processes[name].running  # refused, retrying: not crashed
        log = s.cluster.logs()[name]
        return created in log and read in log

    await eventually(refused, timeout=TIMEOUT)
    async with s.client("root") as root:
        with pytest.raises(NotFound):
            await root.get(types_pb2.Node, IMPOSTOR)
        # a Node an administrator makes for it: the kubelet still may not write it
        await root.create(make_node(IMPOSTOR).obj())
        before = refusals()

        async def refused_twice_more() -> bool:
            assert s.cluster.processes[name].running
            return refusals() >= before + 2

        await eventually(refused_twice_more, timeout=TIMEOUT)
        node = await root.get(types_pb2.Node, IMPOSTOR)
        assert not _ready(node), list(node.status.conditions)
        assert not node.status.addresses  # no status of the kubelet's was written
        with pytest.raises(NotFound):
            await root.get(types_pb2.Lease, IMPOSTOR, "kube-node-lease")
        # the node whose certificate it holds is untouched by it
        theirs = await root.get(types_pb2.Node, NODES[0])
        assert _ready(theirs)
        assert theirs.status.addresses[0].address == s.host(NODES[0]).address
