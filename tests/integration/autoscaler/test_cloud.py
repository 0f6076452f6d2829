"""The emulated cloud (`python -m cloud`) on real processes: its instances are real kubelets
whose Nodes run pods; deleting an instance takes its Node and pods; a SIGKILLed cloud comes
back with the same instances; injected failures show in the instances' states. Each with a
kubelet process per instance and with one hollow kubelet per node group
(`--kubelet-processes`). On the
virtual clock at rate max (`rate_max`): the pod GC's quarantine of the deleted instance's pod
passes as soon as the cluster is idle, and only if the restarted cloud's clock session
squares with what the apiserver counted (a session's calls are counted by its identity, one
per process)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.errors import Invalid, NotFound
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import GROUP_LABEL, cloud_cluster, open_clients

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

RUNNING = cloud_pb2.InstanceStatus.instanceRunning
CREATING = cloud_pb2.InstanceStatus.instanceCreating

CONFIG = """
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    labels: {disk: ssd}
    kubeletArgs: ["--pod-startup-delay", "0s"]
- name: stuck
  maxSize: 3
  template:
    capacity: {cpu: "1", memory: 1Gi}
  failures: {neverReady: 1}
- name: stockout
  maxSize: 2
  template:
    capacity: {cpu: "1", memory: 1Gi}
  failures: {outOfCapacity: true}
"""


@pytest.fixture(scope="module", params=["instance", "node-group"])
def cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    with cloud_cluster(
        tmp_path_factory.mktemp("cloud"),
        CONFIG,
        controllermanager_args=["--pod-gc-quarantine", "1s", "--pod-gc-check-period", "500ms"],
        cloud_args=["--kubelet-processes", request.param],
        clock=ClockMode.VIRTUAL,
    ) as c:
        yield c


def kubelet_pids(cluster: Cluster) -> dict[str, int]:
    """The pid of each instance's kubelet process, as the cloud's state file records it."""
    state = json.loads((cluster.root / "cloud" / "state.json").read_text())
    return {inst["name"]: inst["pid"] for inst in state["instances"] if inst["pid"]}


def kubelet_processes(cluster: Cluster) -> str:
    argv = cluster.component("cloud").argv
    return argv[argv.index("--kubelet-processes") + 1]


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as c:
        yield c


async def states(cloud: CloudProviderClient, group: str) -> dict[str, cloud_pb2.InstanceStatus]:
    return {i.id: i.status for i in await cloud.nodes(group)}


async def ready_group_nodes(api: Client, group: str) -> dict[str, types_pb2.Node]:
    nodes = (await api.list_all(types_pb2.Node, label_selector=f"{GROUP_LABEL}={group}")).items
    return {
        n.metadata.name: n
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
    }


async def test_cloud_lifecycle_scale_up_restart_delete(
    cluster: Cluster, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    groups = {g.id: (g.min_size, g.max_size) for g in await cloud.node_groups()}
    assert groups == {"pool-a": (0, 3), "stuck": (0, 3), "stockout": (0, 2)}
    template = await cloud.template_node("pool-a")
    assert template.metadata.labels[GROUP_LABEL] == "pool-a"
    assert dict(template.status.capacity) == {"cpu": "2", "memory": "4Gi", "pods": "20"}

    # Scale up: two Ready Nodes with the group label and providerID, running a pod.
    await cloud.increase_size("pool-a", 2)
    assert await cloud.target_size("pool-a") == 2
    nodes = await eventually(lambda: ready_count(api, "pool-a", 2), timeout=20, interval=0.2)
    assert {n.spec.provider_id for n in nodes.values()} == {
        f"kemu://pool-a/{name}" for name in nodes
    }
    assert all(n.metadata.labels["disk"] == "ssd" for n in nodes.values())
    for name, node in nodes.items():
        assert await cloud.node_group_for_node(node.spec.provider_id, name) == "pool-a"
    pids = {kubelet_pids(cluster)[name] for name in nodes}
    assert len(pids) == (1 if kubelet_processes(cluster) == "node-group" else 2)
    assert await cloud.node_group_for_node("kemu://other/x", "x") == ""

    async def all_running() -> bool:
        return all(s.instance_state == RUNNING for s in (await states(cloud, "pool-a")).values())

    await eventually(all_running, timeout=10)

    ns = await create_namespace(api, "cloud")
    await api.create(
        make_pod("web").namespace(ns).req(cpu="500m").node_selector({GROUP_LABEL: "pool-a"}).obj()
    )

    async def pod_running() -> types_pb2.Pod:
        pod = await api.get(types_pb2.Pod, "web", ns)
        assert pod.status.phase == "Running", pod.status.phase
        return pod

    pod = await eventually(pod_running, timeout=15, interval=0.2)
    assert pod.spec.node_name in nodes

    # A SIGKILL and a restart of the cloud: the same instances, no new one, Nodes kept.
    before = await states(cloud, "pool-a")
    uids = {name: n.metadata.uid for name, n in nodes.items()}
    cluster.kill("cloud")
    cluster.restart("cloud")
    assert await cloud.target_size("pool-a") == 2
    assert set(await states(cloud, "pool-a")) == set(before)
    await eventually(all_running, timeout=20, interval=0.2)
    after = await ready_group_nodes(api, "pool-a")
    assert {name: n.metadata.uid for name, n in after.items()} == uids
    assert (await api.get(types_pb2.Pod, "web", ns)).status.phase == "Running"

    # Deleting the pod's instance: its Node goes, then its pod (the pod GC).
    victim = pod.spec.node_name
    await cloud.delete_nodes("pool-a", [(f"kemu://pool-a/{victim}", victim)])
    assert await cloud.target_size("pool-a") == 1
    assert f"kemu://pool-a/{victim}" not in await states(cloud, "pool-a")

    async def node_gone() -> bool:
        try:
            await api.get(types_pb2.Node, victim)
        except NotFound:
            return True
        return False

    await eventually(node_gone, timeout=10)

    async def pod_gone() -> bool:
        try:
            await api.get(types_pb2.Pod, "web", ns)
        except NotFound:
            return True
        return False

    await eventually(pod_gone, timeout=15, interval=0.2)

    # Past maxSize, and unknown groups, are errors naming what is wrong.
    with pytest.raises(Invalid, match="max 3"):
        await cloud.increase_size("pool-a", 3)
    with pytest.raises(NotFound, match="nope"):
        await cloud.target_size("nope")


async def ready_count(api: Client, group: str, count: int) -> dict[str, types_pb2.Node]:
    nodes = await ready_group_nodes(api, group)
    assert len(nodes) == count, f"{len(nodes)} ready node(s) in {group}, want {count}"
    return nodes


async def test_injected_failures_show_in_instance_states(
    clients: tuple[Client, CloudProviderClient],
) -> None:
    api, cloud = clients
    # outOfCapacity: the instance fails at once with an OutOfResources error, no Node.
    await cloud.increase_size("stockout", 1)
    (status,) = (await states(cloud, "stockout")).values()
    assert status.instance_state == CREATING
    assert status.error_info.error_code == "OUT_OF_CAPACITY"
    assert status.error_info.instance_error_class == 1
    (failed,) = await states(cloud, "stockout")
    await cloud.delete_nodes("stockout", [(failed, "")])
    assert await cloud.target_size("stockout") == 0

    # neverReady 1: the first instance never comes up, the second does.
    await cloud.increase_size("stuck", 1)
    await cloud.increase_size("stuck", 1)

    # (the cloud's state reads its own informer's Node, which may follow the API's by a
    # moment: RUNNING once it has seen the Node Ready)
    async def stuck_states() -> dict[str, cloud_pb2.InstanceStatus]:
        await ready_count(api, "stuck", 1)
        got = await states(cloud, "stuck")
        assert got["kemu://stuck/stuck-1"].instance_state == RUNNING, got
        return got

    got = await eventually(stuck_states, timeout=20)
    assert got["kemu://stuck/stuck-0"].instance_state == CREATING
    assert got["kemu://stuck/stuck-0"].error_info.error_code == ""
    assert "stuck-0" not in await ready_group_nodes(api, "stuck")
    # DecreaseTargetSize drops the instance that never registered, and only that one.
    with pytest.raises(Invalid, match="attempt to delete existing nodes"):
        await cloud.decrease_target_size("stuck", -2)
    await cloud.decrease_target_size("stuck", -1)
    assert set(await states(cloud, "stuck")) == {"kemu://stuck/stuck-1"}
