"""Gang on a real kemu cluster (kemu's pytest plugin starts it): two of a gang of three stay
pending with the gang's reason, the third brings all three in together; and the cluster
autoscaler, given the same configuration, adds no node for an incomplete gang and adds them
once it is complete."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable

import pytest

from kemu.api.v1.types_pb2 import Event, Node, Pod
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster

pytestmark = pytest.mark.anyio

CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled: [{name: Gang}]
  pluginConfig:
  - name: Gang
    args: {permitWaitingTime: 30}
"""
GROUPS = """\
nodeGroups:
- name: pool
  minSize: 0
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "10"}
"""


def member(i: int) -> Pod:
    pod = make_pod(f"train-{i}").req(cpu="1500m").obj()
    pod.metadata.labels["scheduling.example.com/gang"] = "train"
    pod.metadata.labels["scheduling.example.com/gang-size"] = "3"
    return pod


# The count a member was turned away with: 1 for the first one when nothing brought it back to
# the queue after the second one came (the scheduler has no event for another pod's creation).
INCOMPLETE = re.compile(r"gang train: [12] of 3 pods exist")


def unschedulable_for_the_gang(client: Client, name: str) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        pod = await client.get(Pod, name, "default")
        assert not pod.spec.node_name, f"{name} bound to {pod.spec.node_name}"
        scheduled = [c for c in pod.status.conditions if c.type == "PodScheduled"]
        assert scheduled and scheduled[0].status == "False", scheduled
        assert INCOMPLETE.search(scheduled[0].message), scheduled[0].message
        return True

    return check


def all_bound(client: Client) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        pods = (await client.list(Pod, "default")).items
        unbound = [p.metadata.name for p in pods if not p.spec.node_name]
        assert len(pods) == 3 and not unbound, unbound
        return True

    return check


@pytest.mark.kemu(nodes=3, scheduler_config=CONFIG)
async def test_a_gang_is_scheduled_all_or_none(kemu_cluster: Cluster) -> None:
    async with Client(kemu_cluster.server) as client:
        for i in range(2):
            await client.create(member(i))
        for i in range(2):
            await eventually(unschedulable_for_the_gang(client, f"train-{i}"), timeout=30)
        await client.create(member(2))
        await eventually(all_bound(client), timeout=30)
        nodes = {p.spec.node_name for p in (await client.list(Pod, "default")).items}
        assert len(nodes) == 3  # 1.5 CPU each: one per node


@pytest.mark.kemu(nodes=0, scheduler_config=CONFIG)
async def test_the_autoscaler_adds_nodes_for_a_complete_gang_only(kemu_cluster: Cluster) -> None:
    config = kemu_cluster.root / "gang-scheduler.yaml"
    config.write_text(CONFIG)
    cloud = kemu_cluster.start_cloud(GROUPS)
    kemu_cluster.start_autoscaler(cloud, extra_args=["--scheduler-config-file", str(config)])
    provider = CloudProviderClient(f"127.0.0.1:{cloud.port}")
    async with Client(kemu_cluster.server) as client:
        for i in range(2):
            await client.create(member(i))

        async def told_why() -> bool:
            events = (await client.list(Event, "default")).items
            why = [e.message for e in events if e.reason == "NotTriggerScaleUp"]
            assert any(INCOMPLETE.search(m) for m in why), why
            return True

        # The autoscaler's loops saw the two pods and found that a new node would not help.
        await eventually(told_why, timeout=30)
        assert await provider.target_size("pool") == 0
        assert (await client.list(Node)).items == []

        await client.create(member(2))
        await eventually(all_bound(client), timeout=60)
        assert await provider.target_size("pool") == 3
    await provider.close()
