"""Namespaces, Services and ConfigMaps on real processes: the system namespaces at start-up,
NamespaceLifecycle admission, immortal namespaces, and the namespace controller emptying a
terminating namespace (pods on a real kubelet, a PDB, a ConfigMap, a Service) before the
namespace goes."""

from __future__ import annotations

import functools
from collections.abc import Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import convert, kinds
from kemu.machinery.errors import Forbidden, Invalid, NotFound
from kemu.machinery.namespaces import SYSTEM_NAMESPACES
from kemu.testing import Cluster, eventually, make_node, make_pdb, make_pod
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SHUTDOWN = "kubelet.kemu.io/shutdown-duration"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("namespaces")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        c.start_scheduler()
        c.start_kubelet("ns-node", extra_args=["--pod-startup-delay", "100ms"])
        yield c


def _service(ns: str, name: str, spec: dict[str, object]) -> types_pb2.Service:
    svc = convert.from_dict(
        kinds.BY_KIND["Service"], {"metadata": {"name": name, "namespace": ns}, "spec": spec}
    )
    assert isinstance(svc, types_pb2.Service)
    return svc


def _config_map(ns: str, name: str, **body: object) -> types_pb2.ConfigMap:
    cm = convert.from_dict(
        kinds.BY_KIND["ConfigMap"], {"metadata": {"name": name, "namespace": ns}, **body}
    )
    assert isinstance(cm, types_pb2.ConfigMap)
    return cm


async def test_system_namespaces_exist_active_with_their_finalizer_and_name_label(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        listed = {ns.metadata.name: ns for ns in (await c.list(types_pb2.Namespace)).items}
        for name in SYSTEM_NAMESPACES:
            ns = listed[name]
            assert ns.status.phase == "Active"
            assert list(ns.spec.finalizers) == ["kubernetes"]
            assert ns.metadata.labels["kubernetes.io/metadata.name"] == name
        # The kubelet's node lease lives in kube-node-lease, as upstream.
        lease = await c.get(types_pb2.Lease, "ns-node", "kube-node-lease")
        assert lease.spec.holder_identity == "ns-node"


async def test_creating_in_a_missing_namespace_is_not_found_with_upstreams_message(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        with pytest.raises(NotFound) as err:
            await c.create(make_pod("p").namespace("no-such-namespace").obj())
        assert str(err.value) == 'namespaces "no-such-namespace" not found'
        with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
            await c.create(_config_map("nowhere", "cfg"))
        # A namespace created just now is usable at once (the apiserver looks it up live).
        ns = await create_namespace(c, "fresh")
        await c.create(make_pod("p").namespace(ns).obj())


async def test_immortal_namespaces_refuse_deletion(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        for name in ("default", "kube-system", "kube-public"):
            with pytest.raises(Forbidden) as err:
                await c.delete(types_pb2.Namespace, name)
            assert str(err.value) == (
                f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
            ns = await c.get(types_pb2.Namespace, name)
            assert ns.status.phase == "Active" and not ns.metadata.HasField("deletion_timestamp")


async def test_namespace_deletion_leaves_nothing_behind(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "doomed")
        for name in ("a", "b"):
            await c.create(
                make_pod(name)
                .namespace(ns)
                .labels(app="web")
                .req(cpu="100m")
                .grace(4)
                .annotation(SHUTDOWN, "1s")
                .obj()
            )
        await c.create(make_pdb("pdb").namespace(ns).selector(app="web").min_available(1).obj())
        await c.create(_config_map(ns, "cfg", data={"k": "v"}))
        await c.create(_service(ns, "web", {"selector": {"app": "web"}, "ports": [{"port": 80}]}))

        async def running() -> bool:
            pods = (await c.list(types_pb2.Pod, ns)).items
            return [p.status.phase for p in pods] == ["Running", "Running"]

        await eventually(running, timeout=20)
        deleted = await c.delete(types_pb2.Namespace, ns)
        assert deleted.status.phase == "Terminating"
        assert deleted.metadata.HasField("deletion_timestamp")
        with pytest.raises(Forbidden) as err:
            await c.create(make_pod("late").namespace(ns).obj())
        assert str(err.value) == (
            f'pods "late" is forbidden: unable to create new content in namespace {ns} '
            "because it is being terminated"
        )

        async def namespace_gone() -> bool:
            try:
                await c.get(types_pb2.Namespace, ns)
            except NotFound:
                return True
            return False

        await eventually(namespace_gone, timeout=30)
        for kind in kinds.KINDS:
            if kind.namespaced:
                assert (await c.list(kind.message, ns)).items == [], kind.kind


async def test_service_and_config_map_round_trip_with_upstream_defaults(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "svc")
        svc = await c.create(
            _service(ns, "web", {"selector": {"app": "web"}, "ports": [{"port": 80}]})
        )
        spec = svc.spec
        assert spec.type == "ClusterIP" and spec.session_affinity == "None"
        assert spec.ports[0].protocol == "TCP" and spec.ports[0].target_port.int_val == 80
        cluster_ip = spec.cluster_ip
        assert cluster_ip.startswith("10.") and list(spec.cluster_ips) == [cluster_ip]
        node_port = await c.create(
            _service(ns, "np", {"type": "NodePort", "ports": [{"port": 443, "name": "https"}]})
        )
        assert 30000 <= node_port.spec.ports[0].node_port <= 32767
        assert node_port.spec.external_traffic_policy == "Cluster"
        # An update that leaves the cluster IP out keeps it; one that changes it is refused.
        svc.spec.ClearField("cluster_ip")
        svc.spec.ClearField("cluster_ips")
        svc.spec.selector["tier"] = "front"
        updated = await c.update(svc)
        assert updated.spec.cluster_ip == cluster_ip
        assert dict(updated.spec.selector) == {"app": "web", "tier": "front"}
        with pytest.raises(Invalid, match="spec.ports\\[0\\].port"):
            await c.create(_service(ns, "bad", {"ports": [{"port": 0}]}))
        with pytest.raises(Invalid, match="metadata.name"):
            await c.create(_service(ns, "1st", {"ports": [{"port": 80}]}))
        listed = await c.list(types_pb2.Service, ns, label_selector="")
        assert sorted(s.metadata.name for s in listed.items) == ["np", "web"]

        cm = await c.create(_config_map(ns, "cfg", data={"a.b": "1"}, binaryData={"bin": "aGk="}))
        got = await c.get(types_pb2.ConfigMap, "cfg", ns)
        assert dict(got.data) == {"a.b": "1"} and got.binary_data["bin"] == b"hi"
        assert convert.to_dict(got)["binaryData"] == {"bin": "aGk="}
        assert cm.metadata.uid == got.metadata.uid
        with pytest.raises(Invalid, match=r"data\[a b\]"):
            await c.create(_config_map(ns, "bad", data={"a b": "x"}))


async def test_affinity_namespace_selector_places_a_pod_by_namespace_labels(cluster):
    """A required pod affinity whose namespaceSelector picks the namespace labelled
    team=<a> puts the pod next to the db pod of that namespace, not the one of team=<b>."""
    group = unique_name("nsaff")
    team_a, team_b = unique_name("team-a"), unique_name("team-b")
    async with Client(cluster.server, timeout=10.0) as c:
        ns_a = await create_namespace(c, "aff-a", labels={"team": team_a})
        ns_b = await create_namespace(c, "aff-b", labels={"team": team_b})
        ns_web = await create_namespace(c, "aff-web")
        nodes = [f"{group}-a", f"{group}-b"]
        for name in nodes:
            await c.create(
                make_node(name)
                .capacity(cpu="4", memory="8Gi", pods="110")
                .labels(group=group)
                .obj()
            )
        for ns, name in ((ns_a, nodes[0]), (ns_b, nodes[1])):
            await c.create(
                make_pod("db")
                .namespace(ns)
                .labels(app="db")
                .node_selector({"kubernetes.io/hostname": name})
                .obj()
            )
        for ns in (ns_a, ns_b):
            await eventually(functools.partial(_bound, c, ns, "db"), timeout=20)
        web = make_pod("web").namespace(ns_web).node_selector({"group": group}).obj()
        term = web.spec.affinity.pod_affinity.required_during_scheduling_ignored_during_execution
        t = term.add(topology_key="kubernetes.io/hostname")
        t.label_selector.match_labels["app"] = "db"
        t.namespace_selector.match_labels["team"] = team_a
        await c.create(web)
        assert (
            await eventually(functools.partial(_bound, c, ns_web, "web"), timeout=20) == (nodes[0])
        )


async def _bound(c: Client, ns: str, name: str) -> str:
    pod = await c.get(types_pb2.Pod, name, ns)
    return pod.spec.node_name
