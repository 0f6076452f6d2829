"""The autoscaler's scale-up with volumes (issue #34) on real processes: etcd, the apiserver,
the scheduler, the controller-manager (the PersistentVolume controller and the simulated CSI
provisioner), the cloud with two groups whose templates carry a zone label (zone-a, zone-b;
min 0, max 2) and the autoscaler, on the virtual clock at rate max.

Upstream's predicate checker runs VolumeBinding's Filter on each group's template node: a
pending pod's WaitForFirstConsumer claim is provisionable there only where the class's
allowedTopologies match the template's labels (the binder's checkVolumeProvisions). The pod
whose class allows zone-b only grows zone-b, never zone-a, and then binds on the new node with
its volume provisioned in that zone."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod, storage
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    Autoscalers,
    cloud_cluster,
    group_nodes,
    open_clients,
    pod_events,
    recorded_pod_events,
    two_more_loops,
    unschedulable,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ZONE = "topology.kubernetes.io/zone"
SIMULATED_PROVISIONER = "kemu.io/simulated"
CONFIG = f"""
nodeGroups:
- name: zone-a
  minSize: 0
  maxSize: 2
  template:
    capacity: {{cpu: "2", memory: 4Gi, pods: "20"}}
    labels: {{{ZONE}: zone-a}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
- name: zone-b
  minSize: 0
  maxSize: 2
  template:
    capacity: {{cpu: "2", memory: 4Gi, pods: "20"}}
    labels: {{{ZONE}: zone-b}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cloud_cluster(
        tmp_path_factory.mktemp("autoscaler-volumes"), CONFIG, clock=ClockMode.VIRTUAL
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


def zonal_class(name: str, zone: str) -> types_pb2.StorageClass:
    """A WaitForFirstConsumer class of the simulated provisioner that reaches `zone` only,
    its volumes pinned by zone."""
    sc = storage.storage_class(name, SIMULATED_PROVISIONER)
    sc.parameters["topologyKey"] = ZONE
    term = sc.allowed_topologies.add()
    term.match_label_expressions.add(key=ZONE, values=[zone])
    return sc


async def test_a_wait_for_first_consumer_claim_grows_the_group_of_its_zone(
    cluster: Cluster, autoscaler: str, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    ns = await create_namespace(api, "zonal-claim")
    sc = zonal_class(f"{ns}-zone-b", "zone-b")
    await api.create(sc)
    await api.create(storage.claim(ns, "data", sc.metadata.name))
    pod = make_pod("p").namespace(ns).req(cpu="1500m").obj()
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "data"
    await api.create(pod)

    async def running() -> str:
        got = await api.get(types_pb2.Pod, "p", ns)
        assert got.status.phase == "Running", got.status
        return got.spec.node_name

    node = await eventually(running, timeout=30, interval=0.2)
    (new,) = await group_nodes(api, "zone-b", 1)
    assert node == new.metadata.name
    assert await cloud.target_size("zone-a") == 0
    events = await recorded_pod_events(api, ns, "TriggeredScaleUp", ["p"])
    assert events == {"p": "pod triggered scale-up: [{zone-b 0->1 (max: 2)}]"}, events
    claim = await api.get(types_pb2.PersistentVolumeClaim, "data", ns)
    assert claim.status.phase == "Bound"
    pv = await api.get(types_pb2.PersistentVolume, claim.spec.volume_name)
    (term,) = pv.spec.node_affinity.required.node_selector_terms
    assert [(e.key, list(e.values)) for e in term.match_expressions] == [(ZONE, ["zone-b"])]
    await two_more_loops(cluster, autoscaler)
    assert [await cloud.target_size(g) for g in ("zone-a", "zone-b")] == [0, 1]
    await api.delete(types_pb2.Pod, "p", ns, grace_period_seconds=0)


async def test_a_claim_no_template_can_provision_grows_no_group(
    cluster: Cluster, autoscaler: str, clients: tuple[Client, CloudProviderClient]
) -> None:
    """The class reaches zone-c, which no template has: the pod says why, nothing grows."""
    api, cloud = clients
    ns = await create_namespace(api, "nowhere-claim")
    sc = zonal_class(f"{ns}-zone-c", "zone-c")
    await api.create(sc)
    await api.create(storage.claim(ns, "data", sc.metadata.name))
    pod = make_pod("p").namespace(ns).req(cpu="100m").obj()
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "data"
    await api.create(pod)
    await eventually(lambda: unschedulable(api, ns, "p"), timeout=10, interval=0.2)

    async def told_why() -> str:
        msg = (await pod_events(api, ns, "NotTriggerScaleUp")).get("p", "")
        assert msg == (
            "pod didn't trigger scale-up: 2 node(s) didn't find available persistent volumes "
            "to bind"
        ), msg
        return msg

    await eventually(told_why, timeout=15, interval=0.2)
    sizes = {g: await cloud.target_size(g) for g in ("zone-a", "zone-b")}
    await two_more_loops(cluster, autoscaler)
    assert {g: await cloud.target_size(g) for g in ("zone-a", "zone-b")} == sizes
    assert await pod_events(api, ns, "TriggeredScaleUp") == {}
    await api.delete(types_pb2.Pod, "p", ns, grace_period_seconds=0)
