"""Node-group templates carry their DaemonSet pods (upstream cluster-autoscaler
TemplateNodeInfoFromNodeGroupTemplate with forceDaemonSets), on real processes: etcd, the
apiserver, the scheduler, the controller-manager (whose DaemonSet controller runs the daemon
pods on the new nodes), the cloud with pool-a (2 cpu, min 0, max 3) and the autoscaler, on the
virtual clock at rate max. A DaemonSet asking 500m runs on every pool-a node: two 800m pods,
which one bare template would hold, need two nodes, and a pod of 1800m, which fits the bare
template but not beside the daemon, triggers no scale-up."""

from __future__ import annotations

import functools
import math
from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.builders import make_daemon_set
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    GROUP,
    GROUP_LABEL,
    Autoscalers,
    cloud_cluster,
    group_nodes,
    open_clients,
    pod_events,
    two_more_loops,
    unschedulable,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cloud_cluster(
        tmp_path_factory.mktemp("autoscaler-templates"), CONFIG, clock=ClockMode.VIRTUAL
    ) as c:
        yield c


@pytest.fixture(scope="module")
def autoscaler(cluster: Cluster) -> str:
    return Autoscalers(cluster).use("1.37")


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as c:
        yield c


@pytest.fixture
async def ns(clients: tuple[Client, CloudProviderClient]) -> AsyncIterator[str]:
    """A namespace with the 500m DaemonSet `agent` on pool-a's nodes, deleted at the end."""
    api, _ = clients
    ns = await create_namespace(api, "templates")
    agent = make_daemon_set("agent").namespace(ns).req(cpu="500m")
    await api.create(agent.node_selector({GROUP_LABEL: GROUP}).obj())
    yield ns
    await api.delete(types_pb2.DaemonSet, "agent", ns)


async def test_a_pod_that_fits_the_template_only_without_its_daemon_pods_triggers_no_scale_up(
    cluster: Cluster,
    autoscaler: str,
    clients: tuple[Client, CloudProviderClient],
    ns: str,
) -> None:
    api, cloud = clients
    await api.create(make_pod("big").namespace(ns).req(cpu="1800m").obj())
    await eventually(lambda: unschedulable(api, ns, "big"), timeout=10, interval=0.2)

    async def told_why() -> str:
        msg = (await pod_events(api, ns, "NotTriggerScaleUp")).get("big", "")
        assert msg == "pod didn't trigger scale-up: 1 Insufficient cpu", msg
        return msg

    await eventually(told_why, timeout=15, interval=0.2)
    await two_more_loops(cluster, autoscaler)
    assert await cloud.target_size(GROUP) == 0
    assert await pod_events(api, ns, "TriggeredScaleUp") == {}
    await api.delete(types_pb2.Pod, "big", ns, grace_period_seconds=0)


async def test_the_estimate_packs_pods_beside_the_daemon_pods_of_each_new_node(
    cluster: Cluster,
    autoscaler: str,
    clients: tuple[Client, CloudProviderClient],
    ns: str,
) -> None:
    api, cloud = clients
    # Both pods unschedulable before the autoscaler's next loop: created while the clock
    # holds (at rate max a loop could run between the two and see one pod: 0->1, then 1->2).
    await api.set_clock_rate(0)
    try:
        await api.advance_clock(0)  # (a loop under way when the clock stopped is done)
        for name in ("a", "b"):
            await api.create(make_pod(name).namespace(ns).req(cpu="800m").obj())
        for name in ("a", "b"):
            await eventually(
                functools.partial(unschedulable, api, ns, name), timeout=10, interval=0.2
            )
    finally:
        await api.set_clock_rate(math.inf)

    async def triggered() -> dict[str, str]:
        events = await pod_events(api, ns, "TriggeredScaleUp")
        assert set(events) == {"a", "b"}, events
        return events

    events = await eventually(triggered, timeout=15, interval=0.2)
    # 500m + 800m + 800m is more than a node's 2 cpu: one new node per pod.
    assert set(events.values()) == {"pod triggered scale-up: [{pool-a 0->2 (max: 3)}]"}

    async def all_running() -> dict[str, str]:
        pods = (await api.list(types_pb2.Pod, ns)).items
        running = {p.metadata.name: p.spec.node_name for p in pods if p.status.phase == "Running"}
        assert len(running) == 4, running  # a, b and the two agents
        return running

    running = await eventually(all_running, timeout=45, interval=0.3)
    nodes = {n.metadata.name for n in await group_nodes(api, GROUP, 2)}
    assert running["a"] != running["b"] and {running["a"], running["b"]} == nodes
    assert await cloud.target_size(GROUP) == 2
