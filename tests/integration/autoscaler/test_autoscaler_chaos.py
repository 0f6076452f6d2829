"""Chaos for the cluster autoscaler on real processes: SIGKILLed during a scale-up (after the
cloud's IncreaseSize, before the new nodes register), restarted, it resumes without losing or
leaking an instance. The cloud provisions with a delay (--provision-delay 3s) so that the kill
lands in that window; a recorded history of the cloud's target size, its instances and the
registered Nodes is checked at the end."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace
from kemu.testing.ports import LOOPBACK
from kemu.testing.scenarios import Scenario
from tests.integration.autoscaler.autoscaler_env import GROUP, GROUP_LABEL, cloud_cluster

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 4
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cloud_cluster(
        tmp_path_factory.mktemp("autoscaler-chaos"), CONFIG, provision_delay="3s"
    ) as c:
        yield c


@dataclass(frozen=True)
class Sample:
    target: int
    instances: int
    nodes: int


async def test_autoscaler_killed_during_a_scale_up_resumes_without_losing_or_leaking(
    cluster: Cluster,
) -> None:
    api = Client(cluster.server)
    cloud = CloudProviderClient(f"{LOOPBACK}:{cluster.component('cloud').port}")
    history: list[Sample] = []

    async def sample() -> Sample:
        nodes = await api.list(types_pb2.Node, label_selector=GROUP_LABEL)
        return Sample(
            await cloud.target_size(GROUP), len(await cloud.nodes(GROUP)), len(nodes.items)
        )

    async def record() -> None:
        while True:
            history.append(await sample())
            await anyio.sleep(0.1)

    try:
        ns = await create_namespace(api, "chaos")
        async with anyio.create_task_group() as tg:
            tg.start_soon(record)
            # Two pods that need a node each: the autoscaler asks for two instances. It starts
            # once the scheduler has found both unschedulable, so that its first loop sees
            # both: a loop run between the two creates sees only the first and scales 0->1,
            # then 1->2 (upstream's behaviour too, but not the one scale-up that this test
            # kills the autoscaler inside).
            for name in ("a", "b"):
                await api.create(
                    make_pod(name)
                    .namespace(ns)
                    .req(cpu="1500m")
                    .node_selector({GROUP_LABEL: GROUP})
                    .obj()
                )
            pending = Scenario(cluster, api, ns)
            for name in ("a", "b"):
                await pending.wait_unschedulable(name)
            cloud_component = cluster.component("cloud")
            await anyio.to_thread.run_sync(lambda: cluster.start_autoscaler(cloud_component))

            async def increased() -> Sample:
                s = await sample()
                assert s.target == 2, s
                return s

            at_kill = await eventually(increased, timeout=20, interval=0.05)
            cluster.kill("autoscaler")
            # The kill landed inside the window: asked for, not registered yet.
            assert at_kill.nodes < 2, at_kill
            cluster.restart("autoscaler")

            async def running() -> list[str]:
                pods = (await api.list(types_pb2.Pod, ns)).items
                nodes = sorted(p.spec.node_name for p in pods if p.status.phase == "Running")
                assert len(nodes) == 2, nodes
                return nodes

            nodes = await eventually(running, timeout=45, interval=0.3)
            # A few more loops of the restarted autoscaler over the settled cluster.
            await anyio.sleep(3)
            end = await sample()
            tg.cancel_scope.cancel()
        assert end == Sample(target=2, instances=2, nodes=2), end
        assert len(set(nodes)) == 2
        assert all(n.startswith(f"{GROUP}-") for n in nodes), nodes
        # Never leaked (asked again for the upcoming nodes) nor lost (shrank) an instance.
        assert max(s.target for s in history) == 2, history
        assert max(s.instances for s in history) == 2, history
        targets = [s.target for s in history]
        assert targets == sorted(targets), targets
        log = cluster.logs()["autoscaler"]
        assert log.count("scale-up: node group pool-a 0->2") == 1
    finally:
        await cloud.close()
        await api.close()
