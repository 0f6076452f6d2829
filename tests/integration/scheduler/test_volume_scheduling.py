"""The scheduler's volume plugins on real processes (etcd, apiserver, scheduler at 1.37 with its
default profile, and one at 1.22 whose default profile is named OLD_SCHEDULER, for the rules
that changed since; one kubelet per node, or bare Node objects): VolumeBinding's static volumes and WaitForFirstConsumer
provisioning with KEP-5278's nominatedNodeName while PreBind waits (S-NNE-6's shape with
VolumeBinding in place of SlowPreBind), VolumeZone's and NodeVolumeLimits' reasons.

No PersistentVolume controller runs here: where a claim must become bound, the test writes
what the PV controller (or an external provisioner) would, as upstream's volumescheduling
integration tests do (kemu.testing.storage: `complete_binding`, `provision_when_selected`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.machinery.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    CLAIM_LOST,
)
from kemu.testing import Cluster, storage
from kemu.testing.builders import PodBuilder
from kemu.testing.eventually import eventually
from kemu.testing.invariants import PodHistory, assert_invariants, record_pods
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT: Final = 30.0
ZONE: Final = "topology.kubernetes.io/zone"
HOSTNAME: Final = "kubernetes.io/hostname"
PROVISIONER: Final = "provisioner.kemu.test"
CSI_DRIVER: Final = "csi.kemu.test"


OLD_SCHEDULER: Final = "scheduler-1-22"
LOST_CLAIM: Final = 'persistentvolumeclaim "data" bound to non-existent persistentvolume "gone"'


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("volume-scheduling")
    old_config = root / "scheduler-1-22.yaml"
    old_config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"profiles:\n- schedulerName: {OLD_SCHEDULER}\n"
    )
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        c.start_scheduler(name="scheduler-1-22", config=str(old_config), emulated_version="1.22")
        yield c


def with_claims(b: PodBuilder, *claims: str) -> types_pb2.Pod:
    pod = b.obj()
    for i, name in enumerate(claims):
        pod.spec.volumes.add(name=f"v{i}").persistent_volume_claim.claim_name = name
    return pod


def nnn_changes(history: PodHistory, name: str) -> list[str]:
    """The pod's successive status.nominatedNodeName values, each change once ("" = none)."""
    out: list[str] = []
    for uid in history.uids_of(name):
        for v in history.versions[uid]:
            if v.type != DELETED and (not out or out[-1] != v.pod.status.nominated_node_name):
                out.append(v.pod.status.nominated_node_name)
    return out


async def failed_scheduling(s: Scenario, name: str, reason: str) -> types_pb2.Event:
    async def found() -> types_pb2.Event:
        events = [e for e in await s.events("FailedScheduling", name) if reason in e.message]
        assert events, f"no FailedScheduling event of {name} with {reason!r}"
        return events[0]

    event: types_pb2.Event = await s.eventually(found, timeout=TIMEOUT)
    return event


async def test_s_nne_1_volume_binding_prebind_shows_nnn(cluster: Cluster) -> None:
    """S-NNE-1 with VolumeBinding in place of SlowPreBind (KEP-5278). A pod with a
    WaitForFirstConsumer claim whose class has a provisioner: the scheduler
    selects a node (the claim's selected-node annotation), PreBindPreFlight says PreBind has
    work, so the pod shows nominatedNodeName = that node, unbound, while PreBind waits for the
    provisioner; once the claim is bound the pod binds there and the binding clears the NNN."""
    async with Scenario.open(cluster, "vol-nne") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        await s.create(with_claims(s.pod("test-pod"), "data"))

        async def waiting_in_pre_bind() -> types_pb2.Pod:
            c = await api.get(types_pb2.PersistentVolumeClaim, "data", s.ns)
            assert c.metadata.annotations.get(ANN_SELECTED_NODE) == node, "not selected"
            p = await s.get("test-pod")
            assert p.status.nominated_node_name == node, "no NNN"
            return p

        p = await eventually(waiting_in_pre_bind, timeout=TIMEOUT)
        assert not p.spec.node_name
        # The external provisioner (and the PV controller's bind).
        assert await storage.provision_when_selected(api, s.ns, "data", CSI_DRIVER) == node
        assert await s.wait_bound("test-pod", timeout=TIMEOUT) == node

        await history.sync(api, timeout=TIMEOUT)
        assert nnn_changes(history, "test-pod") == ["", node, ""]
        bound = await s.get("test-pod")
        assert bound.status.nominated_node_name == ""
        await assert_invariants(api, history, s.ns, clearing_gate_on=True)


async def test_s_nne_6_volume_binding_nnn_survives_scheduler_restart(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    """S-NNE-6 (TestPartialBindingFailureRetriedWithNNN) with VolumeBinding: two nodes of one
    pod each, a WaitForFirstConsumer class with a provisioner, two pods of equal priority that
    prefer node-0, each with its own claim. pod1 goes to node-0 and waits in PreBind for its
    volume (NNN node-0, the claim's selected node node-0); the scheduler dies there. The
    provisioner then provisions pod1's volume on node-0, pod2 is created and the scheduler
    restarted: pod2 (first in the restarted queue) goes to node-1, since pod1's NNN reserves
    node-0, and waits in PreBind for its own volume; pod1, its claim bound to a volume of node-0,
    binds there. Both NNNs are cleared by the bindings."""
    cl = kemu_cluster_factory()
    cl.start_etcd()
    cl.start_apiserver()
    cl.start_scheduler()
    async with Scenario.open(cl, "s-nne-6-vol") as s, record_pods(s.client, s.ns) as history:
        node0, node1 = await s.nodes("node-0", "node-1", cpu="1", memory="1Gi", pods="1")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)

        async def create(name: str, claim: str) -> None:
            await api.create(storage.claim(s.ns, claim, sc.metadata.name))
            b = s.pod(name).node_affinity_preferred(HOSTNAME, [node0], 100)
            await s.create(with_claims(b, claim))

        await create("test-pod1", "data1")

        async def in_pre_bind() -> bool:
            c = await api.get(types_pb2.PersistentVolumeClaim, "data1", s.ns)
            assert c.metadata.annotations.get(ANN_SELECTED_NODE) == node0
            p = await s.get("test-pod1")
            assert p.status.nominated_node_name == node0 and not p.spec.node_name
            return True

        await eventually(in_pre_bind, timeout=TIMEOUT)
        cl.kill("scheduler")
        assert await storage.provision_when_selected(api, s.ns, "data1", CSI_DRIVER) == node0
        # A name sorting before pod1's: the restarted scheduler queues pod2 first (as upstream's
        # test sorts it first), so without pod1's reservation pod2 would take node-0.
        await create("a-test-pod2", "data2")
        await anyio.to_thread.run_sync(cl.restart, "scheduler")
        assert await storage.provision_when_selected(api, s.ns, "data2", CSI_DRIVER) == node1
        assert await s.wait_bound("a-test-pod2", timeout=TIMEOUT) == node1
        assert await s.wait_bound("test-pod1", timeout=TIMEOUT) == node0
        await history.sync(api, timeout=TIMEOUT)
        assert nnn_changes(history, "test-pod1") == ["", node0, ""]
        assert nnn_changes(history, "a-test-pod2") == ["", node1, ""]
        await assert_invariants(api, history, s.ns, clearing_gate_on=True)


async def test_static_volume_node_affinity_steers_the_pod(cluster: Cluster) -> None:
    """A static volume reachable from node2 only: the pod's WaitForFirstConsumer claim can be
    bound there alone, so the pod goes to node2 (VolumeBinding's Filter), its PreBind writes
    the PV's claimRef and waits until the claim is bound. A second pod whose claim no volume
    serves (the class has no provisioner) stays pending with upstream's reason."""
    async with Scenario.open(cluster, "vol-static") as s:
        [_, node2] = await s.nodes("node1", "node2", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-local")
        await api.create(sc)
        pv = storage.volume(f"{s.ns}-pv", sc.metadata.name, node=node2)
        await storage.create_available(api, pv)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        await s.create(with_claims(s.pod("test-pod"), "data"))

        async def claimed() -> bool:
            got = await api.get(types_pb2.PersistentVolume, pv.metadata.name)
            assert got.spec.claim_ref.name == "data", "PV not claimed yet"
            assert got.metadata.annotations.get(ANN_BOUND_BY_CONTROLLER) == "yes"
            return True

        await eventually(claimed, timeout=TIMEOUT)
        # The PV controller's part of the binding.
        await storage.complete_binding(api, pv.metadata.name, s.ns, "data")
        assert await s.wait_bound("test-pod", timeout=TIMEOUT) == node2

        await api.create(storage.claim(s.ns, "none", sc.metadata.name))
        await s.create(with_claims(s.pod("pending"), "none"))
        await failed_scheduling(
            s, "pending", "node(s) didn't find available persistent volumes to bind"
        )
        assert not (await s.get("pending")).spec.node_name


async def test_a_claims_selected_node_is_tried_before_its_static_volumes(cluster: Cluster) -> None:
    """Issue #58 item 1.9 (binder.go FindPodVolumes' fast path): a claim whose provisioning
    chose a node that is gone refuses every node before a volume is matched, so the static
    volume on the one node stays free and the pod waits with upstream's reason (kemu bound the
    static volume before)."""
    async with Scenario.open(cluster, "vol-selected") as s:
        [node] = await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)
        pv = storage.volume(f"{s.ns}-pv", sc.metadata.name, node=node)
        await storage.create_available(api, pv)
        claim = storage.claim(s.ns, "data", sc.metadata.name)
        claim.metadata.annotations[ANN_SELECTED_NODE] = f"{s.ns}-gone"
        await api.create(claim)
        await s.create(with_claims(s.pod("test-pod"), "data"))
        await failed_scheduling(
            s, "test-pod", "1 node(s) didn't find available persistent volumes to bind"
        )
        got = await api.get(types_pb2.PersistentVolume, pv.metadata.name)
        assert not got.spec.claim_ref.name, "the static volume was claimed"
        assert not (await s.get("test-pod")).spec.node_name


async def test_volume_zone_reason(cluster: Cluster) -> None:
    """A bound volume in zone b, nodes in zone a: "node(s) had no available volume zone"."""
    async with Scenario.open(cluster, "vol-zone") as s:
        await s.nodes("node", labels={ZONE: "zone-a"}, cpu="4", memory="8Gi", pods="32")
        api = s.client
        # Immediate, not WaitForFirstConsumer: the pod's add may reach the scheduler before the
        # claim's binding does, and a WaitForFirstConsumer claim it sees unbound is one that
        # VolumeZone skips and VolumeBinding binds anywhere (the pod then ran in zone a). An
        # unbound Immediate claim is refused until its update requeues the pod.
        sc = storage.storage_class(f"{s.ns}-zonal", wait_for_first_consumer=False)
        await api.create(sc)
        pv = storage.volume(f"{s.ns}-pv", sc.metadata.name, labels={ZONE: "zone-b"})
        await storage.create_available(api, pv)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        await storage.complete_binding(api, pv.metadata.name, s.ns, "data")
        await s.create(with_claims(s.pod("test-pod"), "data"))
        await failed_scheduling(s, "test-pod", "node(s) had no available volume zone")


async def test_node_volume_limits_reason(cluster: Cluster) -> None:
    """The node's CSINode allows one volume of the driver; a pod using one runs there; a
    second pod with another volume of that driver: "node(s) exceed max volume count"."""
    async with Scenario.open(cluster, "vol-limits") as s:
        [node] = await s.nodes("node", cpu="4", memory="8Gi", pods="32")
        api = s.client
        csi_node = types_pb2.CSINode()
        csi_node.metadata.name = node
        driver = csi_node.spec.drivers.add(name=CSI_DRIVER, node_id=node)
        driver.allocatable.count = 1
        await api.create(csi_node)
        sc = storage.storage_class(f"{s.ns}-csi", CSI_DRIVER)
        await api.create(sc)
        for name in ("a", "b"):
            pv = storage.volume(f"{s.ns}-{name}", sc.metadata.name, driver=CSI_DRIVER)
            await storage.create_available(api, pv)
            await api.create(storage.claim(s.ns, name, sc.metadata.name))
            await storage.complete_binding(api, pv.metadata.name, s.ns, name)
        await s.create(with_claims(s.pod("first"), "a"))
        assert await s.wait_bound("first", timeout=TIMEOUT) == node
        await s.create(with_claims(s.pod("second"), "b"))
        await failed_scheduling(s, "second", "node(s) exceed max volume count")


@pytest.mark.parametrize(
    ("scheduler", "reason"),
    [("default-scheduler", LOST_CLAIM), (OLD_SCHEDULER, '"gone"')],
    ids=["1.37", "1.22"],
)
async def test_a_lost_claim_is_refused_at_pre_filter_from_1_23(
    cluster: Cluster, scheduler: str, reason: str
) -> None:
    """A claim whose volume is gone (phase Lost, as the PV controller leaves it): VolumeBinding's
    PreFilter refuses the pod at once, naming the claim and the volume (kubernetes#105245, 1.23);
    at 1.22 another plugin refuses it for the missing volume (kemu's VolumeZone: its PreFilter
    at every version), never with that message."""
    async with Scenario.open(cluster, "vol-lost") as s:
        await s.bare_node("node", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-wffc")
        await api.create(sc)
        c = storage.claim(s.ns, "data", sc.metadata.name)
        c.spec.volume_name = "gone"
        c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
        await api.create(c)
        await api.patch(
            types_pb2.PersistentVolumeClaim,
            "data",
            {"status": {"phase": CLAIM_LOST}},
            s.ns,
            subresource="status",
        )
        await s.create(with_claims(s.pod("test-pod").scheduler_name(scheduler), "data"))
        event = await failed_scheduling(s, "test-pod", reason)
        if reason != LOST_CLAIM:
            assert LOST_CLAIM not in event.message, event.message


async def test_a_pod_deleted_while_prebind_waits_stops_waiting(cluster: Cluster) -> None:
    """VolumeBinding's PreBind waits (bindTimeoutSeconds, 600 s) for a claim no provisioner
    serves; the pod is deleted: the wait ends at its next poll, "pod does not exist any more"
    (upstream binder.go checkBindings), and the binding cycle fails."""
    async with Scenario.open(cluster, "vol-deleted") as s:
        node = await s.bare_node("node", cpu="4", memory="8Gi", pods="32")
        api = s.client
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        await s.create(with_claims(s.pod("test-pod"), "data"))

        async def pre_bind_waits() -> bool:
            claim = await api.get(types_pb2.PersistentVolumeClaim, "data", s.ns)
            assert claim.metadata.annotations.get(ANN_SELECTED_NODE) == node, "not selected"
            return True

        await eventually(pre_bind_waits, timeout=TIMEOUT)
        await api.delete(types_pb2.Pod, "test-pod", s.ns)
        await s.wait_logged(
            "scheduler", 'pod does not exist any more: pod "test-pod" not found', TIMEOUT
        )
