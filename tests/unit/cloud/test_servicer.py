"""The CloudProvider API over the FakeClient and fake kubelet processes: a real grpc.aio server
in-process and kemu.client.cloudprovider's client."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from cloud.config import NodeGroupConfig, parse_config
from cloud.kubelets import KubeletLaunch, kubelet_argv
from cloud.provider import Cloud
from cloud.servicer import CloudProviderServicer
from cloud.state import StateStore
from kemu.api.cloud.v1 import cloud_pb2, cloud_pb2_grpc
from kemu.api.v1 import types_pb2
from kemu.client.cloudprovider import CloudProviderClient
from kemu.client.fake import FakeClient
from kemu.machinery.errors import InternalError, Invalid, NotFound
from kemu.testing import make_node

pytestmark = pytest.mark.anyio

CONFIG = parse_config(
    """
nodeGroups:
- name: pool-a
  minSize: 1
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi}
    labels: {disk: ssd}
    taints: [{key: dedicated, value: batch, effect: NoSchedule}]
  failures: {neverReady: 1}
- name: full
  maxSize: 2
  template: {capacity: {cpu: "1", memory: 1Gi}}
  failures: {outOfCapacity: true}
  resourceSlices:
  - spec: {driver: gpu.example.com, devices: [{name: gpu-0}]}
"""
)
LAUNCH = KubeletLaunch(
    server="127.0.0.1:6443", instances_dir=Path("/state/instances"), log_dir=Path("/state/logs")
)
RUNNING = cloud_pb2.InstanceStatus.instanceRunning
CREATING = cloud_pb2.InstanceStatus.instanceCreating


class FakeKubelets:
    def __init__(self) -> None:
        self.argv: dict[str, list[str]] = {}
        self.stopped: list[str] = []

    def running(self, name: str) -> bool:
        return name in self.argv

    def kill_leftover(self, pid: int, name: str, group: str) -> None:
        pass

    def start(self, group: NodeGroupConfig, name: str, provider_id: str) -> int:
        self.argv[name] = kubelet_argv(LAUNCH, group, name, provider_id)
        return 1000 + len(self.argv)

    def exited(self) -> list[tuple[str, int]]:
        return []

    async def stop(self, name: str) -> None:
        self.argv.pop(name, None)
        self.stopped.append(name)

    async def stop_all(self) -> None:
        self.argv.clear()


class Nodes:
    """A lister over a dict, standing in for the Node informer."""

    def __init__(self) -> None:
        self.nodes: dict[str, types_pb2.Node] = {}

    def get(self, name: str, namespace: str = "") -> types_pb2.Node | None:
        return self.nodes.get(name)

    def list(self, namespace: str | None = None) -> list[types_pb2.Node]:
        return list(self.nodes.values())


class Env:
    def __init__(self, tmp_path: Path) -> None:
        self.store = StateStore(tmp_path)
        self.kubelets = FakeKubelets()
        self.nodes = Nodes()
        self.api = FakeClient()
        self.cloud = self.new_cloud()

    def new_cloud(self) -> Cloud:
        return Cloud(CONFIG, self.store, self.kubelets, self.api, self.nodes)

    async def register(self, name: str) -> None:
        """Plays the instance's kubelet: a Ready Node with its providerID."""
        node = make_node(name).obj()
        node.spec.provider_id = f"kemu://pool-a/{name}"
        node.metadata.labels["kemu.io/node-group"] = "pool-a"
        node.status.conditions.add(type="Ready", status="True")
        self.nodes.nodes[name] = await self.api.create(node)


@pytest.fixture
async def env(tmp_path: Path) -> AsyncIterator[tuple[Env, CloudProviderClient]]:
    e = Env(tmp_path)
    server = grpc.aio.server()
    cloud_pb2_grpc.add_CloudProviderServicer_to_server(  # type: ignore[no-untyped-call]
        CloudProviderServicer(e.cloud), server
    )
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    client = CloudProviderClient(f"127.0.0.1:{port}", timeout=5)
    try:
        yield e, client
    finally:
        await client.close()
        await server.stop(None)


async def test_groups_template_and_unknown_group(env: tuple[Env, CloudProviderClient]) -> None:
    _, c = env
    assert [(g.id, g.min_size, g.max_size) for g in await c.node_groups()] == [
        ("pool-a", 1, 3),
        ("full", 0, 2),
    ]
    node = await c.template_node("pool-a")
    assert node.metadata.labels["kemu.io/node-group"] == "pool-a"
    assert node.metadata.labels["disk"] == "ssd"
    assert [t.key for t in node.spec.taints] == ["dedicated"]
    assert (await c.template("pool-a")).resource_slices == ()
    # S-CA-DRA-1: the template node's ResourceSlices, its pool named after it.
    (gpu,) = (await c.template("full")).resource_slices
    assert (gpu.spec.driver, gpu.spec.node_name, gpu.spec.pool.name) == (
        "gpu.example.com",
        "template-full",
        "template-full",
    )
    with pytest.raises(NotFound, match="nope"):
        await c.target_size("nope")
    with pytest.raises(InternalError, match="UNIMPLEMENTED"):
        await c._call(
            "NodeGroupGetOptions",
            cloud_pb2.NodeGroupAutoscalingOptionsRequest(id="pool-a"),
            cloud_pb2.NodeGroupAutoscalingOptionsResponse,
        )


async def test_increase_starts_kubelets_except_injected_never_ready(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await c.increase_size("pool-a", 2)
    assert await c.target_size("pool-a") == 2
    # neverReady 1: pool-a-0 gets no kubelet; pool-a-1 does, with the group's flags.
    assert list(e.kubelets.argv) == ["pool-a-1"]
    argv = e.kubelets.argv["pool-a-1"]
    for flag, value in [
        ("--node-name", "pool-a-1"),
        ("--provider-id", "kemu://pool-a/pool-a-1"),
        ("--register-with-taints", "dedicated=batch:NoSchedule"),
    ]:
        assert argv[argv.index(flag) + 1] == value
    assert "kemu.io/node-group=pool-a" in argv[argv.index("--node-labels") + 1]
    await e.register("pool-a-1")
    got = {i.id: i.status.instance_state for i in await c.nodes("pool-a")}
    assert got == {"kemu://pool-a/pool-a-0": CREATING, "kemu://pool-a/pool-a-1": RUNNING}
    assert await c.node_group_for_node("kemu://pool-a/pool-a-1", "pool-a-1") == "pool-a"
    assert await c.node_group_for_node("kemu://pool-a/ghost", "ghost") == ""
    with pytest.raises(Invalid, match="desired 4, max 3") as exc:
        await c.increase_size("pool-a", 2)
    assert exc.value.causes[0].field == "delta"
    with pytest.raises(Invalid, match="must be positive"):
        await c.increase_size("pool-a", 0)


async def test_instances_of_a_group_with_external_nodes_run_no_kubelet(tmp_path: Path) -> None:
    config = parse_config(
        "nodeGroups: [{name: pool-a, maxSize: 2, externalNodes: true, "
        "template: {capacity: {cpu: '1', memory: 1Gi}}}]"
    )
    kubelets, nodes, api = FakeKubelets(), Nodes(), FakeClient()
    cloud = Cloud(config, StateStore(tmp_path), kubelets, api, nodes)
    assert await cloud.increase_size("pool-a", 2) == ["pool-a-0", "pool-a-1"]
    assert kubelets.argv == {}
    # Whoever makes the load registers the Node: the instance is then running.
    node = make_node("pool-a-0").obj()
    node.spec.provider_id = "kemu://pool-a/pool-a-0"
    node.status.conditions.add(type="Ready", status="True")
    nodes.nodes["pool-a-0"] = await api.create(node)
    await cloud.reconcile()
    assert kubelets.argv == {}
    assert [(i.name, i.state) for i in cloud.instances("pool-a")] == [
        ("pool-a-0", "running"),
        ("pool-a-1", "creating"),
    ]


async def test_out_of_capacity_instances_carry_the_error(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await c.increase_size("full", 1)
    (inst,) = await c.nodes("full")
    assert inst.status.instance_state == CREATING
    assert inst.status.error_info.error_code == "OUT_OF_CAPACITY"
    assert inst.status.error_info.instance_error_class == 1
    assert e.kubelets.argv == {}
    # Turned off at run time (kemu's knob), the next instance starts.
    await c.set_failures("full")
    await c.increase_size("full", 1)
    assert list(e.kubelets.argv) == ["full-1"]


async def test_delete_nodes_stops_the_kubelet_and_deletes_the_node(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await c.set_failures("pool-a")
    await c.increase_size("pool-a", 2)
    await e.register("pool-a-0")
    await e.register("pool-a-1")
    with pytest.raises(Invalid, match="does not belong to node group full"):
        await c.delete_nodes("full", [("kemu://pool-a/pool-a-0", "pool-a-0")])
    with pytest.raises(Invalid, match="min size reached"):
        await c.delete_nodes(
            "pool-a",
            [("kemu://pool-a/pool-a-0", "pool-a-0"), ("kemu://pool-a/pool-a-1", "pool-a-1")],
        )
    await c.delete_nodes("pool-a", [("kemu://pool-a/pool-a-0", "pool-a-0")])
    assert e.kubelets.stopped == ["pool-a-0"]
    assert await c.target_size("pool-a") == 1
    with pytest.raises(NotFound):
        await e.api.get(types_pb2.Node, "pool-a-0")
    assert [i.id for i in await c.nodes("pool-a")] == ["kemu://pool-a/pool-a-1"]


async def test_decrease_target_size_drops_only_unregistered_instances(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await c.increase_size("pool-a", 3)
    await e.register("pool-a-1")
    with pytest.raises(Invalid, match="attempt to delete existing nodes"):
        await c.decrease_target_size("pool-a", -3)
    await c.decrease_target_size("pool-a", -2)
    assert [i.id for i in await c.nodes("pool-a")] == ["kemu://pool-a/pool-a-1"]


async def test_a_restarted_cloud_keeps_its_instances_and_names(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await c.increase_size("pool-a", 2)
    await e.register("pool-a-1")
    again = e.new_cloud()
    await again.start()
    assert again.target_size("pool-a") == 2
    assert [v.name for v in again.instances("pool-a")] == ["pool-a-0", "pool-a-1"]
    # The injected neverReady was used up before the restart: pool-a-0 still never starts,
    # and the next instance gets a new name.
    assert again.state.groups["pool-a"].never_ready == 0
    assert await again.increase_size("pool-a", 1) == ["pool-a-2"]


async def test_the_node_of_an_instance_the_cloud_lacks_is_deleted(
    env: tuple[Env, CloudProviderClient],
) -> None:
    e, c = env
    await e.register("pool-a-9")  # a Node whose instance is gone (deleted while we were down)
    await c.refresh()
    with pytest.raises(NotFound):
        await e.api.get(types_pb2.Node, "pool-a-9")


async def test_a_group_below_its_min_size_gets_the_missing_instances_at_start(
    tmp_path: Path,
) -> None:
    config = parse_config(
        "nodeGroups: [{name: pool-a, minSize: 2, maxSize: 3, "
        "template: {capacity: {cpu: '1', memory: 1Gi}}}]"
    )
    kubelets, store = FakeKubelets(), StateStore(tmp_path)
    cloud = Cloud(config, store, kubelets, FakeClient(), Nodes())
    await cloud.start()
    assert cloud.target_size("pool-a") == 2
    assert sorted(kubelets.argv) == ["pool-a-0", "pool-a-1"]
    # Restarted with its instances: none more.
    again = Cloud(config, store, kubelets, FakeClient(), Nodes())
    await again.start()
    assert [v.name for v in again.instances("pool-a")] == ["pool-a-0", "pool-a-1"]
