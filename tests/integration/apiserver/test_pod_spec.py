"""The core/v1 pod spec on real processes: an ordinary nginx manifest applied with kemuctl
round-trips field by field, runs on a kubelet, and hostPorts keep pods apart (NodePorts)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anyio
import pytest
import yaml

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace
from tests.integration.cli.test_kemuctl import EXAMPLES, kemuctl
from tests.unit.machinery.test_pod_spec import with_defaults

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

LABEL = "kemu.io/test"
NODES = ("ps1", "ps2")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("podspec")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        for node in NODES:
            c.start_kubelet(
                node,
                capacity={"cpu": "4", "memory": "8Gi", "pods": "110"},
                extra_args=["--node-labels", f"{LABEL}=podspec", "--pod-startup-delay", "100ms"],
            )
        yield c


async def test_nginx_manifest_round_trips_through_kemuctl_and_runs(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "nginx")
    manifest = yaml.safe_load((EXAMPLES / "nginx-pod.yaml").read_text())
    path = str(EXAMPLES / "nginx-pod.yaml")
    done = await anyio.to_thread.run_sync(lambda: kemuctl(cluster, "apply", "-n", ns, "-f", path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "pod/nginx created"

    async with Client(cluster.server, timeout=10.0) as c:

        async def running() -> types_pb2.Pod:
            pod = await c.get(types_pb2.Pod, "nginx", ns)
            assert pod.status.phase == "Running", pod.status
            return pod

        pod = await eventually(running, timeout=20)
    assert pod.spec.node_name in NODES

    got = await anyio.to_thread.run_sync(
        lambda: kemuctl(cluster, "get", "pod", "nginx", "-n", ns, "-o", "json")
    )
    spec = json.loads(got.stdout)["spec"]
    # The server's own fields: the node it runs on, what Priority admission resolved, and the
    # tolerations DefaultTolerationSeconds added.
    server_set = {"nodeName", "priority", "preemptionPolicy", "tolerations"}
    assert {k: v for k, v in spec.items() if k not in server_set} == with_defaults(manifest["spec"])
    assert spec["nodeName"] == pod.spec.node_name and spec["priority"] == 0
    assert {(t["key"], t["tolerationSeconds"]) for t in spec["tolerations"]} == {
        ("node.kubernetes.io/not-ready", 300),
        ("node.kubernetes.io/unreachable", 300),
    }

    again = await anyio.to_thread.run_sync(lambda: kemuctl(cluster, "apply", "-n", ns, "-f", path))
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == "pod/nginx unchanged"

    described = await anyio.to_thread.run_sync(
        lambda: kemuctl(cluster, "describe", "pod", "nginx", "-n", ns)
    )
    out = described.stdout
    assert "Command:" in out and "nginx" in out
    assert "Port:" in out and "80/TCP (http)" in out and "Host Port:" in out
    assert "POD_NAME:" in out and "(v1:metadata.name)" in out
    assert "Readiness:" in out and "http-get http://:http/healthz" in out
    assert "/var/cache/nginx from cache" in out


async def test_pods_with_the_same_host_port_never_share_a_node(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "hostport")

    def pod(name: str) -> types_pb2.Pod:
        return (
            make_pod(name).namespace(ns).port(9000, 9000).req(cpu="100m")
            .node_selector({LABEL: "podspec"}).obj()
        )  # fmt: skip

    async with Client(cluster.server, timeout=10.0) as c:
        for name in ("a", "b", "c"):
            await c.create(pod(name))

        async def placement() -> dict[str, str]:
            pods = (await c.list(types_pb2.Pod, ns)).items
            bound = {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}
            assert len(bound) == 2, bound
            return bound

        bound = await eventually(placement, timeout=20)
        assert sorted(bound.values()) == sorted(NODES)
        (waiting,) = {"a", "b", "c"} - set(bound)

        async def unschedulable() -> types_pb2.PodCondition:
            p = await c.get(types_pb2.Pod, waiting, ns)
            # next() without a default would raise StopIteration, which a coroutine turns into
            # a RuntimeError that `eventually` does not retry.
            cond = next((x for x in p.status.conditions if x.type == "PodScheduled"), None)
            assert cond is not None and cond.status == "False", p.status
            return cond

        cond = await eventually(unschedulable, timeout=20)
        assert "didn't have free ports for the requested pod ports" in cond.message

        # Deleting one holder frees its node's port: the waiting pod goes there (Pod/Delete
        # hint), never next to the other holder.
        victim = sorted(bound)[0]
        await c.delete(types_pb2.Pod, victim, ns, grace_period_seconds=0)

        async def rescheduled() -> str:
            p = await c.get(types_pb2.Pod, waiting, ns)
            assert p.spec.node_name, p.status
            return p.spec.node_name

        node = await eventually(rescheduled, timeout=30)
        assert node == bound[victim]
        assert node != bound[({"a", "b", "c"} - {victim, waiting}).pop()]
