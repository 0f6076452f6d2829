"""The cluster autoscaler on real processes (etcd, apiserver, scheduler, controller-manager,
the cloud with pool-a min 0 max 3, the autoscaler at --scan-interval 1s): S-CA-3 (expendable
pods trigger nothing) and S-CA-2 (a preemptor waiting for its victims, its nominatedNodeName
set on a node that exists, causes no scale-up), each at both versions of the autoscaler
(1.36, before kubernetes/autoscaler#9607, and 1.37); pending pods that fit
nowhere scaling pool-a up, ending Running on the new nodes, never above its max, and an
instance that never comes up deleted after --max-node-provision-time, its group backed off.
The cluster runs on the virtual clock at rate max (the `rate_max` fixture): the autoscaler's
timers take no wall time beyond the work they cause."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.ctl.manifests import parse
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.builders import make_priority_class
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    GROUP,
    GROUP_LABEL,
    SHUTDOWN_ANNOTATION,
    Autoscalers,
    cloud_cluster,
    open_clients,
    sample,
    two_more_loops,
    unschedulable,
)
from tests.integration.autoscaler.autoscaler_env import pod_events as events
from tests.integration.cli.test_kemuctl import kemuctl

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CONFIG = """
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
- name: stuck
  minSize: 0
  maxSize: 2
  template:
    capacity: {cpu: "1", memory: 1Gi, pods: "20"}
  failures: {neverReady: 1}
"""
PROVISION_TIME = "8s"
ASKED = re.compile(r"node group stuck: \+1 instance\(s\): (\S+)")
"""The cloud's log line of an instance of the group `stuck` asked for."""
EXAMPLE = Path(__file__).parents[3] / "examples" / "pending-pods.yaml"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cloud_cluster(tmp_path_factory.mktemp("autoscaler"), CONFIG, clock=ClockMode.VIRTUAL) as c:
        yield c


@pytest.fixture(scope="module")
def autoscalers(cluster: Cluster) -> Autoscalers:
    return Autoscalers(cluster, extra_args=["--max-node-provision-time", PROVISION_TIME])


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as c:
        yield c


@pytest.mark.parametrize("version", ["1.37", "1.36"])
async def test_s_ca_3_expendable_pods_trigger_no_scale_up(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """Both versions: an expendable pod is dropped before anything else (a scale-up, the
    unschedulable count)."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    ns = await create_namespace(api, f"ca3-{version.replace('.', '')}")
    await api.create(make_priority_class(f"{ns}-expendable", -20).obj())
    await api.create(
        make_pod("low").namespace(ns).req(cpu="1").priority_class(f"{ns}-expendable").obj()
    )
    await eventually(lambda: unschedulable(api, ns, "low"), timeout=10, interval=0.2)
    await two_more_loops(cluster, autoscaler)
    assert await cloud.target_size(GROUP) == 0
    assert await events(api, ns, "TriggeredScaleUp") == {}
    # Expendable pods are not counted as unschedulable either.
    assert sample(cluster, autoscaler, "cluster_autoscaler_unschedulable_pods_count", {}) == 0
    assert f"pod {ns}/low is expendable (priority -20 < cutoff -10)" in autoscalers.log()
    await api.delete(types_pb2.Pod, "low", ns, grace_period_seconds=0)


@pytest.mark.parametrize("version", ["1.36", "1.37"])
async def test_s_ca_2_preemptor_waiting_for_victims_causes_no_scale_up(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """Both versions: the preemptor is unschedulable and nominated to a node that exists."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    ns = await create_namespace(api, f"ca2-{version.replace('.', '')}")
    node = f"{ns}-n"
    cluster.start_kubelet(node, capacity={"cpu": "2", "memory": "4Gi", "pods": "20"})
    await api.create(make_priority_class(f"{ns}-high", 100).obj())
    # The victim takes its whole 10-minute grace period to terminate: the preemptor waits with
    # its nominatedNodeName set and PodScheduled=False/Unschedulable. (At rate max the clock
    # jumps whenever the cluster is idle, also between the test's polls: a 60 s period could
    # end before the test saw the wait.)
    await api.create(
        make_pod("victim")
        .namespace(ns)
        .req(cpu="1500m")
        .node_selector({"kubernetes.io/hostname": node})
        .annotation(SHUTDOWN_ANNOTATION, "600s")
        .grace(600)
        .obj()
    )

    async def victim_running() -> bool:
        return (await api.get(types_pb2.Pod, "victim", ns)).status.phase == "Running"

    await eventually(victim_running, timeout=15, interval=0.2)
    # The preemptor would fit a new pool-a node: only its nomination keeps it from a scale-up.
    await api.create(
        make_pod("preemptor").namespace(ns).req(cpu="1500m").priority_class(f"{ns}-high").obj()
    )

    async def waiting() -> types_pb2.Pod:
        pod = await unschedulable(api, ns, "preemptor")
        assert pod.status.nominated_node_name == node, pod.status.nominated_node_name
        victim = await api.get(types_pb2.Pod, "victim", ns)
        assert victim.metadata.HasField("deletion_timestamp")
        return pod

    await eventually(waiting, timeout=15, interval=0.2)
    await two_more_loops(cluster, autoscaler)
    await waiting()  # still waiting for its victim: the loops saw the S-CA-2 state
    assert await cloud.target_size(GROUP) == 0
    assert await events(api, ns, "TriggeredScaleUp") == {}
    assert sample(cluster, autoscaler, "cluster_autoscaler_scaled_up_nodes_total", {}) == 0
    log = cluster.logs()[autoscaler]
    assert f"pod {ns}/preemptor is nominated to node {node}: counted there" in log
    # The pods go, then the node, so that the next tests' pods cannot use it. (The other way
    # round, the preemptor, nominated to a node that is gone, made this version's
    # autoscaler scale pool-a up before its deletion, and the next tests found the node.)
    for name in ("victim", "preemptor"):
        await api.delete(types_pb2.Pod, name, ns, grace_period_seconds=0)
    cluster.terminate(f"kubelet-{node}")
    await api.delete(types_pb2.Node, node)


async def test_s_ca_3_the_room_of_an_expendable_pod_is_free_to_a_pending_pod(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """Upstream's RunOnce leaves expendable pods out of its cluster snapshot
    (FilterOutExpendablePods): a node full with an expendable pod has room, in simulation,
    for a pending pod, which the scheduler would place there by preempting it; so the pending
    pod triggers no scale-up. (Its scheduler does not run: nothing preempts meanwhile.)"""
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "ca3-room")
    node = f"{ns}-n"
    cluster.start_kubelet(node, capacity={"cpu": "2", "memory": "4Gi", "pods": "20"})
    await api.create(make_priority_class(f"{ns}-expendable", -20).obj())
    await api.create(
        make_pod("cheap")
        .namespace(ns)
        .req(cpu="1500m")
        .priority_class(f"{ns}-expendable")
        .node_selector({"kubernetes.io/hostname": node})
        .grace(0)
        .obj()
    )

    async def cheap_running() -> bool:
        return (await api.get(types_pb2.Pod, "cheap", ns)).status.phase == "Running"

    await eventually(cheap_running, timeout=15, interval=0.2)
    # A pending pod that fits the node only in the expendable pod's room (and a pool-a node).
    pending = make_pod("pending").namespace(ns).req(cpu="1500m").scheduler_name("elsewhere")
    created = await api.create(pending.obj())
    created.status.conditions.add(type="PodScheduled", status="False", reason="Unschedulable")
    await api.update_status(created)
    await two_more_loops(cluster, autoscaler)
    assert await cloud.target_size(GROUP) == 0
    assert await events(api, ns, "TriggeredScaleUp") == {}
    assert f"{ns}/pending -> {node}" in cluster.logs()[autoscaler]
    cluster.terminate(f"kubelet-{node}")
    await api.delete(types_pb2.Node, node)
    for name in ("cheap", "pending"):
        await api.delete(types_pb2.Pod, name, ns, grace_period_seconds=0)


async def test_a_pod_whose_pod_level_request_fits_no_template_triggers_no_scale_up(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """KEP-2837 in cluster-autoscaler's simulation (its scheduler framework counts pods with
    PodLevelResources, on from 1.34): a pod asking 3 cpu at pod level and 1 cpu in its
    container fits no pool-a node (2 cpu), so it triggers no scale-up and is told why. (Run
    before pool-a is scaled up by the test below.)"""
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "pod-level")
    # pool-a may still hold the node an earlier test scaled it up for (its scale-down takes
    # the unneeded time): this pod must add none.
    before = await cloud.target_size(GROUP)
    pod = make_pod("big").namespace(ns).req(cpu="1").pod_req(cpu="3")
    await api.create(pod.node_selector({GROUP_LABEL: GROUP}).obj())

    async def told_why() -> str:
        msg = (await events(api, ns, "NotTriggerScaleUp")).get("big", "")
        assert msg == (
            "pod didn't trigger scale-up: 1 Insufficient cpu, "
            "1 node(s) didn't match Pod's node affinity/selector"
        ), msg
        return msg

    await eventually(told_why, timeout=15, interval=0.2)
    await two_more_loops(cluster, autoscaler)
    assert await cloud.target_size(GROUP) <= before
    assert await events(api, ns, "TriggeredScaleUp") == {}
    await api.delete(types_pb2.Pod, "big", ns, grace_period_seconds=0)


async def test_pending_pods_scale_the_group_up_to_its_max_and_run_on_the_new_nodes(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "scaleup")
    # examples/pending-pods.yaml (README): one pod per 2-cpu node, and only pool-a's nodes
    # carry the label: 4 pods, max 3 nodes.
    manifests = parse(EXAMPLE.read_text(), str(EXAMPLE))
    names = [m.name for m in manifests]
    assert len(names) == 4
    for m in manifests:
        pod = m.obj
        assert isinstance(pod, types_pb2.Pod)
        assert dict(pod.spec.node_selector) == {GROUP_LABEL: GROUP}
        pod.metadata.namespace = ns
        await api.create(pod)
    sizes: list[int] = []

    async def three_running() -> dict[str, str]:
        sizes.append(await cloud.target_size(GROUP))
        pods = (await api.list(types_pb2.Pod, ns)).items
        running = {p.metadata.name: p.spec.node_name for p in pods if p.status.phase == "Running"}
        assert len(running) == 3, running
        return running

    running = await eventually(three_running, timeout=45, interval=0.3)
    assert max(sizes) <= 3
    nodes = {
        n.metadata.name: n
        for n in (await api.list_all(types_pb2.Node, label_selector=GROUP_LABEL)).items
    }
    assert set(running.values()) <= set(nodes)
    assert len(set(running.values())) == 3
    assert all(n.spec.provider_id.startswith(f"kemu://{GROUP}/") for n in nodes.values())
    (pending,) = set(names) - set(running)
    await unschedulable(api, ns, pending)
    await two_more_loops(cluster, autoscaler)
    assert await cloud.target_size(GROUP) == 3
    assert len(await cloud.nodes(GROUP)) == 3

    # The pods a scale-up was for carry TriggeredScaleUp; which pods then run on the new nodes
    # is the scheduler's choice (one may take a node added for another, and a pod created after
    # a loop may never be pending in one), so the events are checked against the 4 pods, not
    # against the 3 that run.
    async def some_triggered() -> dict[str, str]:
        got = await events(api, ns, "TriggeredScaleUp")
        assert got, got
        return got

    # (written after the scale-up, on the recorder's own rate-limited events client)
    triggered = await eventually(some_triggered, timeout=15, interval=0.2)
    assert set(triggered) <= set(names), triggered
    assert all(m.startswith("pod triggered scale-up: [{pool-a ") for m in triggered.values())

    async def told_why() -> str:
        msg = (await events(api, ns, "NotTriggerScaleUp")).get(pending, "")
        assert msg == (
            "pod didn't trigger scale-up: 1 max node group size reached, "
            "1 node(s) didn't match Pod's node affinity/selector"
        ), msg
        return msg

    await eventually(told_why, timeout=10, interval=0.2)
    assert sample(cluster, autoscaler, "cluster_autoscaler_scaled_up_nodes_total", {}) == 3
    assert sample(cluster, autoscaler, "cluster_autoscaler_failed_scale_ups_total", {}) == 0
    assert sample(cluster, autoscaler, "cluster_autoscaler_nodes_count", {"state": "ready"}) >= 3


def status_configmap(cluster: Cluster) -> tuple[dict[str, Any], dict[str, Any]]:
    """kube-system/cluster-autoscaler-status as a user reads it (`kemuctl get configmap -n
    kube-system cluster-autoscaler-status -o yaml`): the ConfigMap and its document."""
    done = kemuctl(
        cluster, "get", "configmap", "-n", "kube-system", "cluster-autoscaler-status", "-o", "yaml"
    )
    assert done.returncode == 0, done.stderr
    cm = yaml.safe_load(done.stdout)
    return cm, yaml.safe_load(cm["data"]["status"])


async def test_the_status_configmap_shows_the_groups_after_the_scale_up(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    autoscalers.use("1.37")

    def scaled_up() -> tuple[dict[str, Any], dict[str, Any]]:
        cm, doc = status_configmap(cluster)
        groups = {g["name"]: g for g in doc["nodeGroups"]}
        counts = groups[GROUP]["health"]["nodeCounts"]
        assert counts["registered"]["ready"] == 3, counts
        assert groups[GROUP]["scaleUp"]["status"] == "NoActivity", groups[GROUP]
        return cm, doc

    cm, doc = await eventually(scaled_up, timeout=20, interval=0.5)
    stamp = cm["metadata"]["annotations"]["cluster-autoscaler.kubernetes.io/last-updated"]
    assert stamp.endswith(" +0000 UTC"), stamp
    assert doc["time"] == stamp  # written together
    assert doc["autoscalerStatus"] == "Running"
    wide = doc["clusterWide"]
    assert wide["health"]["status"] == "Healthy"
    assert wide["health"]["nodeCounts"]["registered"]["ready"] >= 3
    assert wide["scaleUp"]["status"] == "NoActivity"
    assert wide["scaleDown"]["status"] == "NoCandidates"
    groups = {g["name"]: g for g in doc["nodeGroups"]}
    assert set(groups) == {GROUP, "stuck"}
    health = groups[GROUP]["health"]
    assert (health["status"], health["cloudProviderTarget"]) == ("Healthy", 3)
    assert (health["minSize"], health["maxSize"]) == (0, 3)
    assert health["nodeCounts"]["unregistered"] == 0
    assert groups["stuck"]["health"]["cloudProviderTarget"] == 0


async def test_an_instance_never_ready_is_deleted_and_its_group_backed_off(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "stuck")
    await api.create(
        make_pod("p").namespace(ns).req(cpu="500m").node_selector({GROUP_LABEL: "stuck"}).obj()
    )

    def asked() -> list[str]:
        # From the cloud's log, its recorded history: at rate max the never-ready instance
        # lives a fraction of a second of wall time, which a poll of the cloud can miss.
        return ASKED.findall(cluster.logs()["cloud"])

    async def first_asked() -> str:
        names = asked()
        assert names, "no instance asked for yet"
        return names[0]

    first = await eventually(first_asked, timeout=15, interval=0.2)

    async def deleted_and_backed_off() -> str:
        assert first not in [i.id for i in await cloud.nodes("stuck")]
        msg = (await events(api, ns, "NotTriggerScaleUp")).get("p", "")
        # pool-a is the other group: at its max after the module's scale-up test, else its
        # template does not match the pod's selector (this test alone)
        assert msg in {
            "pod didn't trigger scale-up: 1 in backoff after failed scale-up, 1 " + pool_a
            for pool_a in (
                "max node group size reached",
                "node(s) didn't match Pod's node affinity/selector",
            )
        }, msg
        return msg

    await eventually(deleted_and_backed_off, timeout=30, interval=0.3)
    assert (
        sample(
            cluster, autoscaler, "cluster_autoscaler_failed_scale_ups_total", {"reason": "timeout"}
        )
        == 1
    )
    # Backed off (5m of virtual time; two loops are 2s of it): no second instance asked for.
    await two_more_loops(cluster, autoscaler)
    assert asked() == [first]
    assert await cloud.target_size("stuck") == 0
    assert "deleting 1 failed instance(s)" in cluster.logs()[autoscaler]


async def test_no_status_configmap_with_write_status_configmap_false(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, _ = clients
    autoscaler = autoscalers.use("1.37", "--write-status-configmap=false")
    await api.delete(types_pb2.ConfigMap, "cluster-autoscaler-status", "kube-system")
    await two_more_loops(cluster, autoscaler)
    names = [c.metadata.name for c in (await api.list(types_pb2.ConfigMap, "kube-system")).items]
    assert "cluster-autoscaler-status" not in names
