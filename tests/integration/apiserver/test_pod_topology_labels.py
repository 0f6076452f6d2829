"""The PodTopologyLabels admission plugin on real processes (issue #58 item 1; KEP-4742,
upstream plugin/pkg/admission/podtopologylabels and the binding storage's label copy): from
1.35 a pod the scheduler binds, and a pod created bound, carry their node's
topology.kubernetes.io/zone and region labels, overwriting their own; at 1.34 (the gate alpha,
off) an apiserver on the same etcd binds without them. S-API-PTL-1, S-API-PTL-2."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.well_known_labels import LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE
from kemu.testing.builders import make_node, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace
from kemu.testing.ports import LOOPBACK

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

APISERVER_1_34 = "apiserver-1-34"
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("topology-labels")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver()
        c.start_apiserver(name=APISERVER_1_34, emulated_version="1.34")
        c.start_scheduler()
        yield c


def zoned_node(name: str) -> types_pb2.Node:
    node = (
        make_node(name)
        .capacity(cpu="4", memory="8Gi", pods="10")
        .labels({LABEL_TOPOLOGY_ZONE: "zone-a", LABEL_TOPOLOGY_REGION: "region-1"})
        .obj()
    )
    node.metadata.labels["rack"] = "r1"  # not a topology label: never copied
    return node


async def test_s_api_ptl_1_a_bound_pod_carries_its_nodes_zone_and_region(
    cluster: Cluster,
) -> None:
    node = unique_name("zoned")
    async with Client(cluster.server, timeout=10.0) as client:
        ns = await create_namespace(client, "ptl")
        await client.create(zoned_node(node))
        # bound by the scheduler (pods/binding): its own zone label is overwritten
        scheduled = make_pod("scheduled").namespace(ns).label("app", "web").obj()
        scheduled.metadata.labels[LABEL_TOPOLOGY_ZONE] = "mine"
        scheduled.spec.node_selector["rack"] = "r1"
        await client.create(scheduled)

        async def bound() -> types_pb2.Pod:
            pod = await client.get(types_pb2.Pod, "scheduled", ns)
            assert pod.spec.node_name == node, "not bound yet"
            return pod

        pod = await eventually(bound, timeout=TIMEOUT)
        assert dict(pod.metadata.labels) == {
            "app": "web",
            LABEL_TOPOLOGY_ZONE: "zone-a",
            LABEL_TOPOLOGY_REGION: "region-1",
        }
        # created bound (spec.nodeName): the labels are in the create response
        direct = make_pod("direct").namespace(ns).obj()
        direct.spec.node_name = node
        made = await client.create(direct)
        assert made.metadata.labels[LABEL_TOPOLOGY_ZONE] == "zone-a"
        assert made.metadata.labels[LABEL_TOPOLOGY_REGION] == "region-1"
        # a node that does not exist gives no labels
        ghost = make_pod("ghost").namespace(ns).obj()
        ghost.spec.node_name = unique_name("no-such-node")
        assert LABEL_TOPOLOGY_ZONE not in (await client.create(ghost)).metadata.labels


async def test_s_api_ptl_2_at_1_34_the_gate_is_off_and_a_binding_adds_no_label(
    cluster: Cluster,
) -> None:
    node = unique_name("zoned-134")
    server = f"{LOOPBACK}:{cluster.component(APISERVER_1_34).port}"
    async with Client(server, timeout=10.0) as client:
        ns = await create_namespace(client, "ptl-134")
        await client.create(zoned_node(node))
        pod = make_pod("held").namespace(ns).obj()
        pod.spec.scheduler_name = "no-such-scheduler"  # the test binds it
        await client.create(pod)
        await client.bind(ns, "held", node)
        bound = await client.get(types_pb2.Pod, "held", ns)
        assert bound.spec.node_name == node
        assert LABEL_TOPOLOGY_ZONE not in bound.metadata.labels
