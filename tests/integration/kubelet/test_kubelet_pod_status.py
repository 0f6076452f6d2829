"""What the kubelet reports of a pod and of its node, as upstream's generateAPIPodStatus and
NodeAddress setter, on real processes: etcd, apiserver, the controller-manager's node IPAM
controller and kubelets; no scheduler (every pod is created with spec.nodeName)."""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterator
from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.cluster import DEFAULT_CLUSTER_CIDR
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODE_IPS = {"n1": "172.18.0.2", "n2": "172.18.0.3"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("kubelet-pod-status")
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver()
        c.start_controllermanager(extra_args=["--controllers", "nodeipam"])
        for node, ip in NODE_IPS.items():
            c.start_kubelet(node, extra_args=["--node-ip", ip, "--pod-startup-delay", "100ms"])
        yield c


async def _pod_cidr(c: Client, node: str) -> str:
    got = await c.get(types_pb2.Node, node)
    assert got.spec.pod_cidr, f"{node} has no podCIDR yet"
    return got.spec.pod_cidr


async def _wait_pod_cidr(c: Client, node: str) -> str:
    return await eventually(functools.partial(_pod_cidr, c, node), timeout=20)


async def _running(c: Client, ns: str, name: str) -> types_pb2.Pod:
    pod = await c.get(types_pb2.Pod, name, ns)
    assert pod.status.phase == "Running", pod.status
    return pod


async def _run_pods(c: Client, ns: str, *pods: types_pb2.Pod) -> list[types_pb2.Pod]:
    for pod in pods:
        pod.metadata.namespace = ns
        await c.create(pod)
    return [
        await eventually(functools.partial(_running, c, ns, p.metadata.name), timeout=20)
        for p in pods
    ]


async def test_generate_api_pod_status_pod_scheduled_true_on_a_pod_created_with_node_name(
    cluster: Cluster,
) -> None:
    """No scheduler ever saw the pod; the kubelet that runs it reports PodScheduled=True."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "scheduled")
        (pod,) = await _run_pods(c, ns, make_pod("direct").node("n1").obj())
        scheduled = next(x for x in pod.status.conditions if x.type == "PodScheduled")
        assert (scheduled.status, scheduled.reason) == ("True", "")
        assert scheduled.HasField("last_transition_time")


async def test_node_ipam_gives_each_node_a_distinct_pod_cidr_of_the_cluster_cidr(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, timeout=10.0) as c:
        cidrs = [await _wait_pod_cidr(c, n) for n in sorted(NODE_IPS)]
        assert len(set(cidrs)) == len(cidrs)
        cluster_cidr = ipaddress.ip_network(DEFAULT_CLUSTER_CIDR)
        for node, cidr in zip(sorted(NODE_IPS), cidrs, strict=True):
            network = ipaddress.ip_network(cidr)
            assert network.prefixlen == 24 and network.subnet_of(cluster_cidr)  # type: ignore[arg-type]
            got = await c.get(types_pb2.Node, node)
            assert list(got.spec.pod_cidrs) == [cidr]


async def test_node_address_setter_reports_internal_ip_and_hostname(cluster: Cluster) -> None:
    async with Client(cluster.server, timeout=10.0) as c:
        for node, ip in NODE_IPS.items():
            got = await c.get(types_pb2.Node, node)
            assert [(a.type, a.address) for a in got.status.addresses] == [
                ("InternalIP", ip),
                ("Hostname", node),
            ]


async def test_generate_api_pod_status_pod_ips_from_the_node_pod_cidr_and_host_ips(
    cluster: Cluster,
) -> None:
    """Each pod's IP is in its node's podCIDR, no two pods share one, and hostIP is the
    node's InternalIP; podIPs/hostIPs carry the same address."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "ips")
        cidrs = {n: await _wait_pod_cidr(c, n) for n in NODE_IPS}
        pods = await _run_pods(
            c,
            ns,
            *(make_pod(f"a{i}").node("n1").obj() for i in range(3)),
            *(make_pod(f"b{i}").node("n2").obj() for i in range(2)),
        )
        ips = [p.status.pod_ip for p in pods]
        assert len(set(ips)) == len(ips), ips
        for pod in pods:
            node = pod.spec.node_name
            status = pod.status
            assert ipaddress.ip_address(status.pod_ip) in ipaddress.ip_network(cidrs[node])
            assert [i.ip for i in status.pod_ips] == [status.pod_ip]
            assert status.host_ip == NODE_IPS[node]
            assert [i.ip for i in status.host_ips] == [NODE_IPS[node]]


async def test_generate_api_pod_status_host_network_pod_gets_the_node_ip(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "hostnet")
        pod = make_pod("host").node("n2").obj()
        pod.spec.host_network = True
        (running,) = await _run_pods(c, ns, pod)
        assert running.status.pod_ip == running.status.host_ip == NODE_IPS["n2"]
        assert [i.ip for i in running.status.pod_ips] == [NODE_IPS["n2"]]


async def test_pod_ips_survive_a_kubelet_kill_and_are_not_handed_out_again(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "restart")
        before = await _run_pods(c, ns, *(make_pod(f"r{i}").node("n1").obj() for i in range(2)))
        cluster.kill("kubelet-n1")
        cluster.restart("kubelet-n1")
        (new,) = await _run_pods(c, ns, make_pod("after").node("n1").obj())
        kept = [await _running(c, ns, p.metadata.name) for p in before]
        assert [p.status.pod_ip for p in kept] == [p.status.pod_ip for p in before]
        assert new.status.pod_ip not in {p.status.pod_ip for p in before}


async def test_node_ipam_restarted_controller_manager_hands_no_range_twice(
    cluster: Cluster,
) -> None:
    """A controller-manager SIGKILLed and started again rebuilds the ranges in use from the
    nodes before it gives a new node one."""
    async with Client(cluster.server, timeout=10.0) as c:
        taken = {await _wait_pod_cidr(c, n) for n in NODE_IPS}
        cluster.kill("controllermanager")
        cluster.start_kubelet("n3", extra_args=["--node-ip", "172.18.0.4"])
        cluster.restart("controllermanager")
        cidr = await _wait_pod_cidr(c, "n3")
        assert cidr not in taken


async def test_pod_host_ips_before_1_29_the_status_has_host_ip_only(tmp_path: Path) -> None:
    """PodHostIPs (KEP-2681) is off by default before 1.29: the kubelet reports hostIP only,
    and the apiserver drops hostIPs from status writes (dropDisabledPodStatusFields)."""
    with Cluster(tmp_path) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(emulated_version="1.28")
        c.start_kubelet("old", emulated_version="1.28", extra_args=["--node-ip", "172.18.0.9"])
        async with Client(c.server, timeout=10.0) as client:
            ns = await create_namespace(client, "old")
            (pod,) = await _run_pods(client, ns, make_pod("p").node("old").obj())
            assert pod.status.host_ip == "172.18.0.9"
            assert not pod.status.host_ips
