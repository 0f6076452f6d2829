"""S-CA-5 (issue #55): the cluster autoscaler and a gang (KEP-4671), on real processes (etcd,
the apiserver, the scheduler and the controller-manager with GenericWorkload at 1.37, the
cloud with pool-a min 0 max 3 of 2-cpu nodes, the autoscaler) on the virtual clock at rate max.

Upstream's cluster-autoscaler has no PodGroup lister (kubernetes/autoscaler#9570: it "pretends
that PodGroups don't exist"); it acts on pods the scheduler marked PodScheduled=False/
Unschedulable. Members of an incomplete gang are held at PreEnqueue and get no such condition,
so they trigger no scale-up: the autoscaler never scales up for a partial gang. Once the gang
is complete and fits nowhere, the pod-group cycle marks every member Unschedulable and the
autoscaler scales up for them as for any pods; the gang then binds together on the new nodes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.component.featuregate import GENERIC_WORKLOAD
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.builders import make_gang_pod_group
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    GROUP,
    Autoscalers,
    cloud_cluster,
    open_clients,
    two_more_loops,
    unschedulable,
)
from tests.integration.autoscaler.autoscaler_env import pod_events as events

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
        tmp_path_factory.mktemp("autoscaler-gangs"),
        CONFIG,
        clock=ClockMode.VIRTUAL,
        feature_gates={GENERIC_WORKLOAD: True},
        runtime_config={"scheduling.k8s.io/v1beta1": "true"},
    ) as c:
        yield c


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as c:
        yield c


def member(ns: str, name: str) -> types_pb2.Pod:
    # 1500m: one member a node, so the gang needs three new nodes.
    return make_pod(name).namespace(ns).req(cpu="1500m", memory="100Mi").pod_group("trainer").obj()


async def test_s_ca_5_no_scale_up_for_a_partial_gang_then_one_for_the_whole(
    cluster: Cluster, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscaler = Autoscalers(cluster).use("1.37")
    ns = await create_namespace(api, "gang")
    await api.create(make_gang_pod_group("trainer", 3, ns))
    for name in ("a", "b"):
        await api.create(member(ns, name))
    await two_more_loops(cluster, autoscaler)
    await two_more_loops(cluster, autoscaler)
    # Held at PreEnqueue: no PodScheduled condition, nothing for the autoscaler.
    for name in ("a", "b"):
        pod = await api.get(types_pb2.Pod, name, ns)
        assert get_pod_condition(pod.status, "PodScheduled") is None, pod.status
    assert await cloud.target_size(GROUP) == 0
    assert await events(api, ns, "TriggeredScaleUp") == {}

    await api.create(member(ns, "c"))
    for name in ("a", "b", "c"):

        async def marked(name: str = name) -> types_pb2.Pod:
            return await unschedulable(api, ns, name)

        await eventually(marked, timeout=30)

    async def scaled_for_all() -> bool:
        assert await cloud.target_size(GROUP) == 3
        return True

    await eventually(scaled_for_all, timeout=60, interval=0.2)

    async def bound_apart() -> set[str]:
        pods = [await api.get(types_pb2.Pod, n, ns) for n in ("a", "b", "c")]
        nodes = {p.spec.node_name for p in pods}
        assert "" not in nodes and len(nodes) == 3, nodes
        return nodes

    await eventually(bound_apart, timeout=90, interval=0.5)
    group = await api.get(types_pb2.PodGroup, "trainer", ns)
    assert [(c.type, c.status) for c in group.status.conditions] == [
        ("PodGroupInitiallyScheduled", "True")
    ]
