"""The autoscaler's scale-down on real processes (etcd, apiserver, scheduler, controller-manager,
the cloud with pool-a (min 0, max 4) and pool-min (min 1: its one node created by the
cloud at its start), the autoscaler at --scan-interval
0.5s, --scale-down-unneeded-time 2s, --scale-down-delay-after-add 6s): an underused node
drained (graceful termination on its kubelet) and deleted, its pod re-created elsewhere by its
ReplicaSet; empty nodes deleted in bulk; the blocking rules (PDB, safe-to-evict "false", a
bare pod, scale-down-disabled) and the min size; delay-after-add and the unneeded time
(S-CA-4); expendable pods (S-CA-3); local volumes and the safe-to-evict-local-volumes
annotation; a pod whose volume is pinned to its node (NoPlaceToMovePods); an unready node held to the utilization threshold; a pod terminating for too long
neither blocking its node nor counting in its utilization; a PDB allowing one
disruption that lets a node of two of its pods go; S-CA-1 (kubernetes/kubernetes#125491: a pod waiting in
PreBind, SlowPreBind standing in for volume provisioning) as a matrix of the scheduler's
NominatedNodeNameForExpectation × the autoscaler's version; S-CA-2's scale-down half (a
preemptor waiting for its victim counts on its node); and the autoscaler SIGKILLed in the
middle of a drain, or while the cloud is deleting a node it asked for (the restarted one keeps
that node's taint). Each scenario is checked against a recorded history of nodes and pods:
no node deleted while a pod is bound to it (or nominated to it, where the new behaviour
promises that), pool-a never above its max, pool-min never below its min.

The cluster runs on the virtual clock at rate max (issue #30): the autoscaler's timers, the
graceful terminations and the cloud's deletions take no wall time beyond the work they cause,
and a window in which nothing may happen is a span of the cluster's time (`elapse`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.node_conditions import is_node_ready
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod, storage
from kemu.testing.builders import (
    make_pdb,
    make_priority_class,
    make_replica_set,
    owner_reference,
)
from kemu.testing.cluster_time import cluster_now, elapse
from kemu.testing.invariants import (
    NodeHistory,
    PodHistory,
    node_deletions_under_pods,
    record_nodes,
    record_pods,
)
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    GROUP,
    GROUP_LABEL,
    SHUTDOWN_ANNOTATION,
    VERSIONS,
    Autoscalers,
    cloud_cluster,
    counted_on_nominated_node,
    events,
    group_nodes,
    nominate,
    open_clients,
    pod_events,
    recorded_pod_events,
    scales_up_for_nomination_to_a_gone_node,
    two_more_loops,
)
from tests.integration.cli.test_kemuctl import kemuctl

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

MIN_GROUP = "pool-min"
MAX = 4
PREBIND_DELAY = "scheduling.kemu.io/prebind-delay"
SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
SCALE_DOWN_DISABLED = "cluster-autoscaler.kubernetes.io/scale-down-disabled"
HOSTNAME = "kubernetes.io/hostname"
SIMULATED_PROVISIONER = "kemu.io/simulated"
TO_BE_DELETED = "ToBeDeletedByClusterAutoscaler"
DELETION_CANDIDATE = "DeletionCandidateOfClusterAutoscaler"
HOLD = "kemu.io/test-hold"
"""A finalizer no controller removes: the pod stays terminating until the test lifts it."""
DELETING_STATE = cloud_pb2.InstanceStatus.instanceDeleting
EXPENDABLE_CUTOFF = -10
"""--expendable-pods-priority-cutoff's default."""
UNNEEDED = 2.0
DELAY_AFTER_ADD = 6.0
VICTIM_GRACE = 600
RECHECK = 3.0
"""--unremovable-node-recheck-timeout: a blocked node is checked again 3 s later."""
CONFIG = f"""
nodeGroups:
- name: {GROUP}
  minSize: 0
  maxSize: {MAX}
  template:
    capacity: {{cpu: "2", memory: 4Gi, pods: "20"}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
- name: {MIN_GROUP}
  minSize: 1
  maxSize: 2
  template:
    capacity: {{cpu: "1", memory: 1Gi, pods: "20"}}
    labels: {{dedicated: min}}
    taints: [{{key: dedicated, value: min, effect: NoSchedule}}]
"""
# S-CA-1's schedulers: one profile each, SlowPreBind enabled, the gate on or off.
PREBIND_SCHEDULER = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {name}
  plugins:
    multiPoint:
      enabled:
      - name: SlowPreBind
"""


def autoscaler_args() -> list[str]:
    return [
        "--scale-down-unneeded-time", f"{UNNEEDED:g}s",
        "--scale-down-delay-after-add", f"{DELAY_AFTER_ADD:g}s",
        "--max-graceful-termination-sec", "5",
        "--unremovable-node-recheck-timeout", f"{RECHECK:g}s",
        # upstream's 5 s wait after the taint, shortened as the other times are; the unit
        # tests and the chaos profile keep the default.
        "--node-delete-delay-after-taint", "1s",
        "--record-decisions",
        "-v", "4",  # the unremovable nodes' reasons are logged at V(4) and V(1), as upstream
    ]  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("scale-down")
    with cloud_cluster(root, CONFIG, clock=ClockMode.VIRTUAL) as c:
        for gate in ("on", "off"):
            config = root / f"prebind-{gate}.yaml"
            config.write_text(PREBIND_SCHEDULER.format(name=f"prebind-nne-{gate}"))
            c.start_scheduler(
                name=f"scheduler-nne-{gate}",
                config=str(config),
                feature_gates={"NominatedNodeNameForExpectation": gate == "on"},
            )
        yield c


@pytest.fixture(scope="module")
def autoscalers(cluster: Cluster) -> Autoscalers:
    a = Autoscalers(cluster, scan_interval="0.5s", extra_args=autoscaler_args())
    a.use("1.37")
    return a


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as (api, cloud):
        yield api, cloud
        # Every test leaves pool-a empty: its nodes go once their pods are gone.
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)


async def pool_empty(api: Client) -> bool:
    await group_nodes(api, GROUP, 0)
    return True


async def delete_until_empty(api: Client, ns: str, *replica_sets: str) -> None:
    """Deletes the ReplicaSets and waits until pool-a is empty (their nodes gone after the
    unneeded time)."""
    for name in replica_sets:
        await api.delete(types_pb2.ReplicaSet, name, ns)
    await eventually(lambda: pool_empty(api), timeout=30, interval=0.3)


async def grow(
    api: Client, cloud: CloudProviderClient, n: int, group: str = GROUP, *, protect: bool = True
) -> list[str]:
    """`n` more nodes of `group`, through the cloud (as a scale-up would); their names once
    Ready. `protect`: each is annotated scale-down-disabled as soon as it registers (an empty
    node would otherwise go after the unneeded time); `unprotect` lifts it."""
    before = {x.metadata.name for x in await group_nodes(api, group)}
    await cloud.increase_size(group, n)
    annotated: set[str] = set()

    async def ready() -> list[str]:
        nodes = [x for x in await group_nodes(api, group) if x.metadata.name not in before]
        for x in nodes:
            if protect and x.metadata.name not in annotated:
                await api.patch(
                    types_pb2.Node,
                    x.metadata.name,
                    {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}},
                )
                annotated.add(x.metadata.name)
        assert len(nodes) == n and all(is_node_ready(x) for x in nodes), nodes
        return [x.metadata.name for x in nodes]

    # In virtual time the cloud starts its kubelets one at a time, each once the previous one
    # registered (cloud/provider.py: one boot order in every run): n process starts in a row.
    return await eventually(ready, timeout=10 + 10 * n, interval=0.05)


async def unprotect(api: Client, *names: str) -> None:
    for name in names:
        await api.patch(
            types_pb2.Node, name, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}}
        )


@asynccontextmanager
async def recorded(api: Client) -> AsyncIterator[tuple[NodeHistory, PodHistory]]:
    """Nodes and pods recorded while the block runs, synced with the API at its end."""
    async with record_nodes(api) as nodes, record_pods(api, "") as pods:
        yield nodes, pods
        await nodes.sync(api)
        await pods.sync(api)
        # sync() waits for the listed objects; the deletions of the others too.
        live_pods = {p.metadata.uid for p in (await api.list_all(types_pb2.Pod)).items}
        live_nodes = {n.metadata.uid for n in (await api.list_all(types_pb2.Node)).items}

        def complete() -> bool:
            for history, live in ((pods.versions, live_pods), (nodes.versions, live_nodes)):
                missing = [
                    uid
                    for uid, vs in history.items()
                    if vs[-1].type != "DELETED" and uid not in live
                ]
                assert not missing, missing
            return True

        await eventually(complete, timeout=10, interval=0.05)


def violations(nodes: NodeHistory, pods: PodHistory, *, nominated_counts: bool = True) -> list[str]:
    """The scale-down invariants over the recorded history, ordered by resourceVersion: no
    node deleted while a live, non-expendable pod is bound (or, `nominated_counts`, nominated)
    to it (expendable pods never block a scale-down, S-CA-3); pool-a never above its max; no
    pool-min node deleted."""
    out: list[str] = []
    node_events = sorted(
        ((v.resource_version or 0, v.type, v.node) for vs in nodes.versions.values() for v in vs),
        key=lambda t: t[0],
    )
    live: dict[str, types_pb2.Node] = {}
    for rv, kind, node in node_events:
        if kind != "DELETED":
            live[node.metadata.uid] = node
            in_group = [x for x in live.values() if x.metadata.labels.get(GROUP_LABEL) == GROUP]
            if len(in_group) > MAX:
                out.append(f"{GROUP} has {len(in_group)} nodes at rv {rv} (max {MAX})")
            continue
        live.pop(node.metadata.uid, None)
        if node.metadata.labels.get(GROUP_LABEL) == MIN_GROUP:
            out.append(f"{node.metadata.name} of {MIN_GROUP} (min 1) deleted at rv {rv}")
    return out + node_deletions_under_pods(
        nodes,
        pods,
        nominated=nominated_counts,
        counts=lambda pod: pod.spec.priority >= EXPENDABLE_CUTOFF,
    )


def rs(ns: str, name: str, cpu: str, *, grace: int = 1) -> types_pb2.ReplicaSet:
    obj = make_replica_set(name).namespace(ns).replicas(1).selector(app=name).obj()
    tmpl = obj.spec.template
    tmpl.spec.CopyFrom(
        make_pod("x").req(cpu=cpu).grace(grace).annotation(SHUTDOWN_ANNOTATION, "1s").obj().spec
    )
    tmpl.metadata.annotations[SHUTDOWN_ANNOTATION] = "1s"
    return obj


async def running_pods(api: Client, ns: str) -> dict[str, str]:
    pods = (await api.list(types_pb2.Pod, ns)).items
    return {
        p.metadata.name: p.spec.node_name
        for p in pods
        if p.status.phase == "Running" and not p.metadata.HasField("deletion_timestamp")
    }


async def test_an_underused_node_is_drained_and_deleted_and_its_pod_recreated_elsewhere(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "drain")
    async with recorded(api) as (nodes, pods):
        big_node, small_node = await place_big_and_small(api, cloud, ns)
        (old_pod,) = [
            p
            for p in (await api.list(types_pb2.Pod, ns)).items
            if p.metadata.name.startswith("small")
        ]

        # small_node (utilization 0.15) goes: its pod is evicted, terminates on its kubelet,
        # and is re-created on big_node by the ReplicaSet.
        async def moved() -> bool:
            names = {x.metadata.name for x in await group_nodes(api, GROUP)}
            assert names == {big_node}, names
            now = await running_pods(api, ns)
            assert sorted(now.values()) == [big_node, big_node], now
            return True

        await eventually(moved, timeout=25, interval=0.3)
        assert await cloud.target_size(GROUP) == 1
        evs = await events(api, ns, "ScaleDown")
        assert any(
            e.involved_object.name == old_pod.metadata.name
            and e.message == "deleting pod for node scale down"
            for e in evs
        ), evs
        node_events = [
            e.message
            for e in await events(api, "default", "ScaleDown")
            if e.involved_object.name == small_node
        ]
        assert "marked the node as toBeDeleted/unschedulable" in node_events
        assert "node removed by cluster autoscaler" in node_events
        # The pod ended gracefully: DisruptionTarget from the eviction, then deleted.
        versions = pods.versions[old_pod.metadata.uid]
        assert any(v.pod.metadata.HasField("deletion_timestamp") for v in versions)
        tainted = [
            v.node
            for v in nodes.by_name()[small_node]
            if any(t.key == TO_BE_DELETED for t in v.node.spec.taints)
        ]
        assert tainted and tainted[0].spec.taints[-1].effect == "NoSchedule"
        await delete_until_empty(api, ns, "big", "small")
    assert violations(nodes, pods) == []
    log = autoscalers.log()
    assert f"scale-down: removing node {small_node} (group {GROUP})" in log
    # The decision record (issue #32): the node's verdicts over time, changes only.
    autoscaler = cluster.component(autoscalers.current)
    history = [
        v["verdict"] for v in autoscaler.debug("decisions", {"node": small_node})["verdicts"]
    ]
    # Unneeded, then the deletion. (Whether a loop judged the node while it was annotated
    # depends on the loops' timing: the blocking test checks that verdict's record.)
    assert "DeletionStarted" in history, history
    assert "Unneeded" in history[: history.index("DeletionStarted")], history
    # (A loop between the deletion's start and the node's removal sees it being deleted:
    # upstream's CurrentlyBeingDeleted; CI Z's loaded machine ran one.)
    ended = history[:-1] if history[-1] == "CurrentlyBeingDeleted" else history
    assert ended[-2:] == ["Unneeded", "DeletionStarted"], history
    assert all(a != b for a, b in zip(history, history[1:], strict=False)), history
    loops = autoscaler.debug("decisions", {"loops": "1000"})["loops"]
    assert any(
        small_node in (loop["scaleDown"] or {}).get("deletionsStarted", []) for loop in loops
    )
    # kemuctl why tells it, the node gone.
    url = f"http://127.0.0.1:{autoscaler.metrics_port}"
    done = kemuctl(cluster, "why", f"node/{small_node}", "--autoscaler", url, "-o", "json")
    assert done.returncode == 0, done.stderr
    story = json.loads(done.stdout)
    assert story["gone"] and [v["verdict"] for v in story["verdicts"]] == history
    text = kemuctl(cluster, "why", f"node/{small_node}", "--autoscaler", url).stdout
    assert text.startswith(f"Node {small_node} (deleted)\n") and "DeletionStarted" in text


async def _one_running(api: Client, ns: str, prefix: str) -> str:
    running = {n: node for n, node in (await running_pods(api, ns)).items() if n.startswith(prefix)}
    assert len(running) == 1, running
    return next(iter(running.values()))


async def test_empty_nodes_are_deleted_in_bulk_and_min_size_is_kept(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscalers.use("1.37")
    async with recorded(api) as (nodes, pods):
        # pool-min's one instance was created by the cloud at its start (minSize 1).
        async def min_node_ready() -> str:
            (node,) = await group_nodes(api, MIN_GROUP, 1)
            assert is_node_ready(node)
            return node.metadata.name

        min_node = await eventually(min_node_ready, timeout=20, interval=0.2)
        assert min_node == f"{MIN_GROUP}-0"
        names = await grow(api, cloud, 3)
        await unprotect(api, *names)
        await eventually(lambda: pool_empty(api), timeout=15, interval=0.2)

        def min_kept() -> bool:
            log = autoscalers.log()
            return f"node {min_node} is not removable: NodeGroupMinSizeReached" in log

        await eventually(min_kept, timeout=10, interval=0.2)
        assert [x.metadata.name for x in await group_nodes(api, MIN_GROUP)] == [min_node]
    assert violations(nodes, pods) == []

    # Empty nodes go in bulk, without a drain; under load they may become unneeded in
    # different loops, so they may go in more than one bulk deletion. (The autoscaler logs a
    # deletion once the cloud has answered, which may be after the Node is gone.)
    def logged() -> bool:
        log = autoscalers.log()
        assert f"empty node(s) of group {GROUP}: " in log, log
        for name in names:
            assert f"scale-down: node {name} of group {GROUP} deleted (empty)" in log, name
        return True

    await eventually(logged, timeout=10, interval=0.1)
    # The soft taint marked them unneeded before they went.
    for name in names:
        assert any(
            any(t.key == DELETION_CANDIDATE for t in v.node.spec.taints)
            for v in nodes.by_name()[name]
        ), name


async def test_blocking_pods_and_the_disabled_annotation_keep_their_nodes(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "blockers")
    async with recorded(api) as (nodes, pods):
        names = await grow(api, cloud, 4)
        for n in names:
            await api.patch(
                types_pb2.Node, n, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}}
            )
        pdb_node, nse_node, bare_node, disabled_node = names
        # ReplicaSet pods (replicated) pinned to their nodes, and a bare pod.
        await api.create(pinned_rs(ns, "guarded", pdb_node))
        await api.create(pinned_rs(ns, "not-safe", nse_node, {SAFE_TO_EVICT: "false"}))
        await api.create(make_pod("bare").namespace(ns).req(cpu="100m").node(bare_node).obj())
        await api.create(
            make_pdb("guarded").namespace(ns).selector(app="guarded").min_available(1).obj()
        )
        await eventually(lambda: _all_running(api, ns, 3), timeout=15, interval=0.2)
        running = await running_pods(api, ns)
        guarded, not_safe = (
            next(p for p, node in running.items() if node == n) for n in (pdb_node, nse_node)
        )
        start = await cluster_now(api)
        for n in (pdb_node, nse_node, bare_node):
            await api.patch(
                types_pb2.Node, n, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}}
            )
        autoscaler = autoscalers.current
        expected = {
            pdb_node: f"BlockedByPod (not enough pod disruption budget to move {ns}/{guarded})",
            nse_node: f"BlockedByPod (pod annotated as not safe to evict present: {not_safe})",
            bare_node: f"BlockedByPod ({ns}/bare is not replicated)",
            disabled_node: "ScaleDownDisabledAnnotation",
        }

        def all_logged() -> bool:
            log = cluster.logs()[autoscaler]
            for node, why in expected.items():
                assert f"node {node} is not removable: {why}" in log, why
            return True

        await eventually(all_logged, timeout=10, interval=0.3)
        # The decision record (issue #32) keeps the verdict (written at the loop's end).
        component = cluster.component(autoscaler)

        def disabled_recorded() -> bool:
            verdicts = component.debug("decisions", {"node": disabled_node})["verdicts"]
            assert "ScaleDownDisabledAnnotation" in [v["verdict"] for v in verdicts], verdicts
            return True

        await eventually(disabled_recorded, timeout=10, interval=0.3)

        # Found unremovable, a node is not checked again for --unremovable-node-recheck-timeout.
        def rechecked_later() -> bool:
            return (
                f"node {bare_node} is not removable: RecentlyUnremovable (unremovable in the "
                f"last {RECHECK:g}s" in autoscalers.log()
            )

        await eventually(rechecked_later, timeout=5, interval=0.2)
        # Kept well past the unneeded time (a bounded window, checked from the history).
        await elapse(api, max(0.0, UNNEEDED + 2 - (await cluster_now(api) - start)))
        assert len(await group_nodes(api, GROUP)) == 4
        deleted = [
            v.node.metadata.name
            for vs in nodes.versions.values()
            for v in vs
            if v.type == "DELETED"
        ]
        assert not set(deleted) & set(names), deleted
        for rs_name in ("guarded", "not-safe"):
            await api.delete(types_pb2.ReplicaSet, rs_name, ns)
        await api.delete(types_pb2.Pod, "bare", ns, grace_period_seconds=0)
        await api.patch(
            types_pb2.Node,
            disabled_node,
            {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}},
        )
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
    assert violations(nodes, pods) == []


async def test_a_pdb_allowing_one_disruption_lets_a_node_of_two_of_its_pods_go(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """Upstream's pdb rule asks, for each pod, whether its PDBs allow a disruption; a node
    whose pods together need more than the budget is still removable, and its drain retries
    the eviction the PDB refuses until the budget allows it again. Two pods of a ReplicaSet
    (PDB minAvailable 1 of 2: one disruption) on one node: the node is drained (one pod
    evicted, the other once the first's replacement runs elsewhere) and deleted."""
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "pdb-pair")
    async with recorded(api) as (nodes, pods):
        target, other = await grow(api, cloud, 2)
        # steady (0.6) on the other node, the pair (0.3) on the target, by cordoning.
        await api.patch(types_pb2.Node, target, {"spec": {"unschedulable": True}})
        await api.create(rs(ns, "steady", "1200m"))
        assert await eventually(lambda: _one_running(api, ns, "steady"), timeout=15) == other
        await api.patch(types_pb2.Node, target, {"spec": {"unschedulable": False}})
        await api.patch(types_pb2.Node, other, {"spec": {"unschedulable": True}})
        pair = rs(ns, "pair", "300m")
        pair.spec.replicas = 2
        await api.create(pair)

        async def pair_on(node: str) -> bool:
            running = await running_pods(api, ns)
            on = [n for p, n in running.items() if p.startswith("pair")]
            assert on == [node, node], running
            return True

        await eventually(lambda: pair_on(target), timeout=15, interval=0.2)
        await api.patch(types_pb2.Node, other, {"spec": {"unschedulable": False}})
        await api.create(make_pdb("pair").namespace(ns).selector(app="pair").min_available(1).obj())

        async def one_disruption() -> bool:
            pdb = await api.get(types_pb2.PodDisruptionBudget, "pair", ns)
            assert pdb.status.disruptions_allowed == 1, pdb.status
            return True

        await eventually(one_disruption, timeout=15, interval=0.2)
        await unprotect(api, target, other)

        async def drained() -> bool:
            assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [other]
            await pair_on(other)
            return True

        await eventually(drained, timeout=60, interval=0.3)
        await delete_until_empty(api, ns, "steady", "pair")
    assert violations(nodes, pods) == []
    assert f"scale-down: removing node {target} (group {GROUP})" in autoscalers.log()


async def test_local_volumes_block_unless_listed_safe_to_evict(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """Upstream's localstorage rule: a pod with an emptyDir on disk blocks its node's removal
    ("pod with local storage present: NAME", the pod's name alone), unless the pod's
    cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes annotation lists the
    volume. The listed one's node is not blocked: its pod, pinned there, has no place to
    go (NoPlaceToMovePods), a reason that comes after the rules."""
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "local-volumes")
    async with recorded(api) as (nodes, pods):
        listed_node, unlisted_node = await grow(api, cloud, 2)
        for name, node, ann in (
            ("listed", listed_node, {SAFE_TO_EVICT_LOCAL_VOLUMES: "scratch"}),
            ("unlisted", unlisted_node, {}),
        ):
            obj = pinned_rs(ns, name, node, ann)
            obj.spec.template.spec.volumes.add(name="scratch").empty_dir.SetInParent()
            await api.create(obj)
        await eventually(lambda: _all_running(api, ns, 2), timeout=15, interval=0.2)
        running = await running_pods(api, ns)
        unlisted = next(p for p, node in running.items() if node == unlisted_node)
        await unprotect(api, listed_node, unlisted_node)
        expected = {
            listed_node: "NoPlaceToMovePods",
            unlisted_node: f"BlockedByPod (pod with local storage present: {unlisted})",
        }

        def logged() -> bool:
            log = autoscalers.log()
            for node, why in expected.items():
                assert f"node {node} is not removable: {why}" in log, why
            return True

        await eventually(logged, timeout=10, interval=0.2)
        await delete_until_empty(api, ns, "listed", "unlisted")
    assert violations(nodes, pods) == []


@pytest.mark.parametrize(("topology_key", "moves"), [(HOSTNAME, False), (GROUP_LABEL, True)])
async def test_a_pod_whose_volume_is_pinned_to_its_node_keeps_the_node(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    topology_key: str,
    moves: bool,
) -> None:
    """Upstream's drain simulation re-runs the scheduler's Filters on the other nodes,
    VolumeBinding's too: a pod whose claim is bound to a volume the simulated provisioner
    pinned to its node (topologyKey kubernetes.io/hostname) fits no other node, so its
    underused node is NoPlaceToMovePods (the log, the decision record, `kemuctl why`) and
    stays; the same pod with its volume pinned to the node group (topologyKey
    kemu.io/node-group) moves to the other node, and its node goes."""
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "pinned-volume")
    async with recorded(api) as (nodes, pods):
        first, second = await grow(api, cloud, 2)
        sc = storage.storage_class(f"{ns}-sc", SIMULATED_PROVISIONER)
        sc.parameters["topologyKey"] = topology_key
        await api.create(sc)
        await api.create(storage.claim(ns, "data", sc.metadata.name))
        obj = rs(ns, "data", "100m")
        obj.spec.template.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "data"
        await api.create(obj)
        await eventually(lambda: _all_running(api, ns, 1), timeout=15, interval=0.2)
        (home,) = (await running_pods(api, ns)).values()
        other = second if home == first else first
        claim = await api.get(types_pb2.PersistentVolumeClaim, "data", ns)
        pv = await api.get(types_pb2.PersistentVolume, claim.spec.volume_name)
        (term,) = pv.spec.node_affinity.required.node_selector_terms
        assert [(e.key, list(e.values)) for e in term.match_expressions] == [
            (topology_key, [home if topology_key == HOSTNAME else GROUP])
        ]
        await unprotect(api, home)
        if moves:

            async def moved() -> bool:
                assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [other]
                assert list((await running_pods(api, ns)).values()) == [other]
                return True

            await eventually(moved, timeout=30, interval=0.3)
        else:

            def blocked() -> bool:
                assert f"node {home} is not removable: NoPlaceToMovePods" in autoscalers.log()
                return True

            await eventually(blocked, timeout=10, interval=0.2)
            autoscaler = cluster.component(autoscalers.current)
            verdicts = autoscaler.debug("decisions", {"node": home})["verdicts"]
            assert "NoPlaceToMovePods" in [v["verdict"] for v in verdicts], verdicts
            url = f"http://127.0.0.1:{autoscaler.metrics_port}"
            why = kemuctl(cluster, "why", f"node/{home}", "--autoscaler", url)
            assert why.returncode == 0 and "NoPlaceToMovePods" in why.stdout, why
            names = sorted(x.metadata.name for x in await group_nodes(api, GROUP))
            assert names == sorted((home, other))
            assert f"removing node {home}" not in autoscalers.log()
        await unprotect(api, other)
        await delete_until_empty(api, ns, "data")
    assert violations(nodes, pods) == []


async def test_an_unready_node_is_held_to_the_utilization_threshold(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """Upstream's eligibility checks the utilization of every node, ready or not (readiness
    only picks --scale-down-unready-time over --scale-down-unneeded-time): a node whose
    kubelet stopped (SIGSTOP: its node goes Unknown) with a pod using 0.6 of its cpu is
    NotUnderutilized, as it would be ready."""
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "unready")
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        await api.create(rs(ns, "busy", "1200m"))
        await eventually(lambda: _all_running(api, ns, 1), timeout=15, interval=0.2)
        async with unready_kubelet(cluster, api, node):
            await unprotect(api, node)

            def held() -> bool:
                log = autoscalers.log().split(f"{node} is not removable: ScaleDownDisabled")[-1]
                return f"node {node} is not removable: NotUnderutilized (utilization 0.6" in log

            await eventually(held, timeout=10, interval=0.2)
        await eventually(lambda: _ready(api, node), timeout=30, interval=0.2)
        await delete_until_empty(api, ns, "busy")
    assert violations(nodes, pods) == []


async def test_a_pod_terminating_past_its_grace_period_and_30s_neither_blocks_nor_counts(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """Upstream's longterminating rule and utilization.Calculate: a pod deleted more than its
    grace period and 30 s ago (its kubelet stopped: SIGSTOP, the node goes Unknown, so
    nothing finishes it) is skipped by the drainability rules, bare as it is (else "is not
    replicated"), and left out of the node's utilization (else 0.6, NotUnderutilized): the
    unready node is unneeded and waits for --scale-down-unready-time."""
    api, cloud = clients
    autoscalers.use("1.37")
    ns = await create_namespace(api, "long-terminating")
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        stuck = make_pod("stuck").namespace(ns).req(cpu="1200m").grace(1).node(node).obj()
        await api.create(stuck)
        await eventually(lambda: _all_running(api, ns, 1), timeout=15, interval=0.2)
        async with unready_kubelet(cluster, api, node):
            await api.delete(types_pb2.Pod, "stuck", ns)
            await unprotect(api, node)

            def unneeded() -> bool:
                log = autoscalers.log().split(f"{node} is not removable: ScaleDownDisabled")[-1]
                return f"node {node} is not removable: NotUnreadyLongEnough" in log

            await eventually(unneeded, timeout=20, interval=0.2)
        await eventually(lambda: pool_empty(api), timeout=30, interval=0.3)
    assert violations(nodes, pods) == []


@asynccontextmanager
async def unready_kubelet(cluster: Cluster, api: Client, node: str) -> AsyncIterator[None]:
    """The block runs with `node`'s kubelet stopped (SIGSTOP) and the node no longer Ready
    (Unknown: its lease and status go stale); the kubelet goes on (SIGCONT) at the end."""
    pid = kubelet_pid(cluster, node)
    os.kill(pid, signal.SIGSTOP)
    try:

        async def unready() -> bool:
            assert not is_node_ready(await api.get(types_pb2.Node, node))
            return True

        await eventually(unready, timeout=30, interval=0.2)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


async def _ready(api: Client, node: str) -> bool:
    return is_node_ready(await api.get(types_pb2.Node, node))


def pinned_rs(
    ns: str, name: str, node: str, annotations: dict[str, str] | None = None
) -> types_pb2.ReplicaSet:
    """A ReplicaSet of one 100m pod (labelled app=`name`) that only `node` can run."""
    obj = make_replica_set(name).namespace(ns).replicas(1).selector(app=name).obj()
    tmpl = obj.spec.template
    tmpl.spec.CopyFrom(
        make_pod("x").req(cpu="100m").grace(0).node_selector({HOSTNAME: node}).obj().spec
    )
    tmpl.metadata.annotations.update(annotations or {})
    return obj


async def a_controller(api: Client, ns: str) -> types_pb2.OwnerReference:
    """A controller ownerReference to an object that exists (the garbage collector keeps the
    pod) and manages no pods: a ConfigMap."""
    cm = types_pb2.ConfigMap()
    cm.metadata.name = "owner"
    cm.metadata.namespace = ns
    return owner_reference(await api.create(cm), controller=True)


async def _all_running(api: Client, ns: str, n: int) -> bool:
    assert len(await running_pods(api, ns)) == n
    return True


@pytest.mark.parametrize("version", VERSIONS)
async def test_s_ca_4_delay_after_add_and_unneeded_time(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """The timing is the same at both versions."""
    api, cloud = clients
    autoscalers.use(version)
    ns = await create_namespace(api, f"ca4-{version.replace('.', '')}")
    async with recorded(api) as (nodes, pods):
        await api.create(make_pod("pending").namespace(ns).req(cpu="1500m").grace(0).obj())
        (node,) = await eventually(
            lambda: _nodes_with_running(api, ns, 1), timeout=25, interval=0.2
        )
        await recorded_pod_events(api, ns, "TriggeredScaleUp", ["pending"])
        (triggered,) = await events(api, ns, "TriggeredScaleUp")
        scaled_up_at = triggered.first_timestamp.seconds
        await api.delete(types_pb2.Pod, "pending", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=25, interval=0.3)
    assert violations(nodes, pods) == []
    versions = nodes.by_name()[node]
    candidate = [
        int(t.value) for v in versions for t in v.node.spec.taints if t.key == DELETION_CANDIDATE
    ]
    doomed = [int(t.value) for v in versions for t in v.node.spec.taints if t.key == TO_BE_DELETED]
    assert candidate and doomed
    # Unneeded (soft-tainted) at t0, removed no earlier than t0 + the unneeded time, and no
    # earlier than delay-after-add after the scale-up (second resolution: 1 s slack).
    assert doomed[0] - candidate[0] >= UNNEEDED - 1
    assert doomed[0] - scaled_up_at >= DELAY_AFTER_ADD - 1
    assert "scale-down in cooldown: scale-up" in autoscalers.log()


async def _nodes_with_running(api: Client, ns: str, n: int) -> list[str]:
    running = await running_pods(api, ns)
    assert len(running) == n, running
    return sorted(set(running.values()))


@pytest.mark.parametrize("version", VERSIONS[::-1])
async def test_s_ca_3_a_node_running_only_expendable_pods_is_scaled_down(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """Both versions: expendable pods never block a scale-down."""
    api, cloud = clients
    autoscalers.use(version)
    ns = await create_namespace(api, f"ca3-{version.replace('.', '')}")
    await api.create(make_priority_class(f"{ns}-expendable", -20).obj())
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        await api.patch(
            types_pb2.Node, node, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}}
        )
        await api.create(
            make_pod("low")
            .namespace(ns)
            .req(cpu="1500m")
            .priority_class(f"{ns}-expendable")
            .node(node)
            .grace(0)
            .obj()
        )
        await eventually(lambda: _all_running(api, ns, 1), timeout=15, interval=0.2)
        await api.patch(
            types_pb2.Node, node, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}}
        )
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
    # The expendable pod went with its node (collected after it), not drained first.
    assert f"scale-down: removing empty node {node}" in autoscalers.log()
    assert violations(nodes, pods) == []  # (an expendable pod does not count)


@pytest.mark.parametrize(
    ("version", "unschedulable"),
    [
        pytest.param(v, u, id=f"ca-{v}-{'preemptor' if u else 'binding'}")
        for v in VERSIONS
        for u in (True, False)
    ],
)
async def test_s_ca_4_a_nominated_pod_makes_its_node_non_empty(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
    unschedulable: bool,
) -> None:
    """A node with no pod bound to it, and one pod (200m: utilization 0.1) nominated to it:
    a preemptor waiting for its victims (unschedulable) or a pod in its binding cycle
    (KEP-5278: nominated, not unschedulable). Where the version counts the pod there
    (cluster-autoscaler), the node is not empty: the pod, bare, cannot be moved, so the node
    stays; otherwise it goes as empty after the unneeded time."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    counted = counted_on_nominated_node(version, unschedulable=unschedulable, expendable=False)
    ns = await create_namespace(
        api, f"ca4-nnn-{version.replace('.', '')}-{'u' if unschedulable else 'b'}"
    )
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        pod = make_pod("held").namespace(ns).req(cpu="200m").grace(0).obj()
        await nominate(api, pod, node, unschedulable=unschedulable)
        start = await cluster_now(api)
        await unprotect(api, node)
        if counted:
            # Counted there, the bare pod is one of the node's pods: it would have to move,
            # and the rules do not let it (upstream's replicated rule).
            def spared() -> bool:
                log = autoscalers.log().split(f"{node} is not removable: ScaleDownDisabled")[-1]
                return (
                    f"node {node} is not removable: BlockedByPod "
                    f"({ns}/held is not replicated)" in log
                )

            await eventually(spared, timeout=10, interval=0.2)
            await elapse(api, max(0.0, UNNEEDED + 2 - (await cluster_now(api) - start)))
            assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [node]
        else:
            await eventually(lambda: pool_empty(api), timeout=15, interval=0.2)
            assert f"scale-down: removing empty node {node}" in cluster.logs()[autoscaler]
        await api.delete(types_pb2.Pod, "held", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
    assert violations(nodes, pods, nominated_counts=False) == []
    found = violations(nodes, pods)
    if counted:
        assert found == []
    else:
        # The old behaviour breaks the new promise: the node went under its nominated pod.
        assert len(found) == 1 and found[0].startswith(f"Node {node} deleted"), found
        assert found[0].endswith("under nominated pod held"), found


@pytest.mark.parametrize("version", VERSIONS[::-1])
async def test_s_ca_3_an_expendable_pod_nominated_to_a_node(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """An expendable (priority -20) preemptor nominated to an otherwise empty node: the
    expendable filter drops it first at every version (from 1.37 too: #9607 counts the pods
    with a nominatedNodeName on their nodes after that filter), so the node goes."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    counted = counted_on_nominated_node(version, unschedulable=True, expendable=True)
    ns = await create_namespace(api, f"ca3-nnn-{version.replace('.', '')}")
    await api.create(make_priority_class(f"{ns}-expendable", -20).obj())
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        pod = (
            make_pod("low")
            .namespace(ns)
            .req(cpu="200m")
            .priority_class(f"{ns}-expendable")
            .grace(0)
            .obj()
        )
        await nominate(api, pod, node, unschedulable=True)
        start = await cluster_now(api)
        await unprotect(api, node)
        if counted:

            def spared() -> bool:
                return (
                    f"node {node} is not removable: BlockedByPod ({ns}/low is not replicated)"
                    in autoscalers.log()
                )

            await eventually(spared, timeout=10, interval=0.2)
            await elapse(api, max(0.0, UNNEEDED + 2 - (await cluster_now(api) - start)))
            assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [node]
        else:
            await eventually(lambda: pool_empty(api), timeout=15, interval=0.2)
            assert f"pod {ns}/low is expendable" in cluster.logs()[autoscaler]
        await api.delete(types_pb2.Pod, "low", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
    # An expendable pod never blocks a scale-down: no invariant holds the node for it.
    assert violations(nodes, pods) == []


@pytest.mark.parametrize("version", VERSIONS[::-1])
async def test_s_ca_4_a_terminating_pod_nominated_to_a_node(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """A preemptor nominated to an otherwise empty node and then deleted (a finalizer keeps
    it terminating): it will never bind, and no version counts it on its node (before #9607
    it is no unschedulable pod; from 1.37 #9607 filters pods being deleted out before it
    counts the nominated ones), so the node goes as empty."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    ns = await create_namespace(api, f"ca4-term-{version.replace('.', '')}")
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        pod = make_pod("leaving").namespace(ns).req(cpu="200m").grace(0).obj()
        pod.metadata.finalizers.append(HOLD)
        await nominate(api, pod, node, unschedulable=True)
        await api.delete(types_pb2.Pod, "leaving", ns)
        leaving = await api.get(types_pb2.Pod, "leaving", ns)
        assert leaving.metadata.HasField("deletion_timestamp")
        assert leaving.status.nominated_node_name == node
        await unprotect(api, node)
        await eventually(lambda: pool_empty(api), timeout=15, interval=0.2)
        assert f"scale-down: removing empty node {node}" in cluster.logs()[autoscaler]
        await api.patch(types_pb2.Pod, "leaving", {"metadata": {"finalizers": None}}, ns)
    assert violations(nodes, pods, nominated_counts=False) == []


@pytest.mark.parametrize(
    ("version", "gate"),
    [
        pytest.param(v, g, id=f"ca-{v}-nne-{g}")
        for v in ("1.37", "1.36")
        for g in (("on", "off") if v == "1.37" else ("off", "on"))
    ],
)
async def test_s_ca_1_the_node_under_a_pod_in_prebind(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
    gate: str,
) -> None:
    """kubernetes/kubernetes#125491: the pod sits in PreBind (SlowPreBind standing in for a
    volume being provisioned); its node is otherwise empty. Only a 1.37 autoscaler with the
    scheduler's NominatedNodeNameForExpectation on counts it there and keeps the node: the
    gate gives the pod its nominatedNodeName at binding start, and the pod is not
    unschedulable, which only #9607's autoscaler counts."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    kept = gate == "on" and counted_on_nominated_node(
        version, unschedulable=False, expendable=False
    )
    ns = await create_namespace(api, f"ca1-{version.replace('.', '')}-{gate}")
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        await api.patch(
            types_pb2.Node, node, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}}
        )
        await api.create(
            make_pod("slow")
            .namespace(ns)
            .req(cpu="1500m")
            .scheduler_name(f"prebind-nne-{gate}")
            .annotation(PREBIND_DELAY, "forever")
            .grace(0)
            .obj()
        )

        def in_prebind() -> bool:
            log = cluster.logs()[f"scheduler-nne-{gate}"]
            return f"PreBind of {ns}/slow on {node} waits until cancelled" in log

        await eventually(in_prebind, timeout=10, interval=0.1)
        pod = await api.get(types_pb2.Pod, "slow", ns)
        assert pod.status.nominated_node_name == (node if gate == "on" else "")
        start = await cluster_now(api)
        await api.patch(
            types_pb2.Node, node, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}}
        )
        if kept:
            # A bounded window well past the unneeded time; the history says it stayed.
            def counted() -> bool:
                log = cluster.logs()[autoscaler]
                after = log.split(f"{node} is not removable: ScaleDownDisabled")[-1]
                return f"node {node} is not removable: NotUnderutilized" in after

            await eventually(counted, timeout=10, interval=0.2)
            await elapse(api, max(0.0, UNNEEDED + 2 - (await cluster_now(api) - start)))
            assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [node]
        else:
            await eventually(lambda: pool_empty(api), timeout=10, interval=0.2)
            pod = await api.get(types_pb2.Pod, "slow", ns)
            assert not pod.spec.node_name
        await api.delete(types_pb2.Pod, "slow", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
    found = violations(nodes, pods)
    if kept:
        assert found == []
    else:
        # The old behaviour: the node went while the pod was on its way to it.
        assert f"scale-down: removing empty node {node}" in cluster.logs()[autoscaler]
        if gate == "on":
            assert any("under nominated pod slow" in v for v in found), found


async def place_big_and_small(
    api: Client, cloud: CloudProviderClient, ns: str, *, grace: int = 1
) -> tuple[str, str]:
    """Two new nodes: "big" (a 1200m pod, utilization 0.6) and "small" (a 300m pod that
    terminates in `grace` seconds); returns (big node, small node). Both are protected by
    scale-down-disabled while the pods land."""
    two = await grow(api, cloud, 2)
    for name in two:
        await api.patch(
            types_pb2.Node, name, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: "true"}}}
        )
    await api.create(rs(ns, "big", "1200m"))
    big_node = await eventually(lambda: _one_running(api, ns, "big"), timeout=15, interval=0.2)
    (small_node,) = set(two) - {big_node}
    small = rs(ns, "small", "300m", grace=grace)
    small.spec.template.metadata.annotations[SHUTDOWN_ANNOTATION] = f"{grace}s"
    # Cordoned while the small pod is placed, so that it lands on the other node.
    await api.patch(types_pb2.Node, big_node, {"spec": {"unschedulable": True}})
    await api.create(small)
    placed = await eventually(lambda: _one_running(api, ns, "small"), timeout=15, interval=0.2)
    assert placed == small_node
    await api.patch(types_pb2.Node, big_node, {"spec": {"unschedulable": False}})
    for name in two:
        await api.patch(
            types_pb2.Node, name, {"metadata": {"annotations": {SCALE_DOWN_DISABLED: None}}}
        )
    return big_node, small_node


async def test_chaos_autoscaler_killed_during_a_drain_resumes_cleanly(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "chaos")
    async with recorded(api) as (nodes, pods):
        # The small pod takes 4 s to terminate: the autoscaler is killed while waiting for it.
        big_node, small_node = await place_big_and_small(api, cloud, ns, grace=4)

        def draining() -> bool:
            return f"scale-down: draining node {small_node}" in cluster.logs()[autoscaler]

        await eventually(draining, timeout=15, interval=0.1)
        cluster.kill(autoscaler)
        cluster.restart(autoscaler)

        # The new autoscaler removes the leftover taint, finds small_node unneeded again
        # and deletes it: cloud and nodes agree, no taint is left.
        async def finished() -> bool:
            names = [x.metadata.name for x in await group_nodes(api, GROUP)]
            assert names == [big_node], names
            instances = await cloud.nodes(GROUP)
            assert [i.id.rsplit("/", 1)[-1] for i in instances] == [big_node]
            assert await cloud.target_size(GROUP) == 1
            (big,) = await group_nodes(api, GROUP)
            assert [t.key for t in big.spec.taints] == []
            assert sorted((await running_pods(api, ns)).values()) == [big_node, big_node]
            return True

        await eventually(finished, timeout=30, interval=0.3)
        await delete_until_empty(api, ns, "big", "small")
    assert violations(nodes, pods) == []
    assert (
        f"removing leftover taint {TO_BE_DELETED} from node {small_node}"
        in (cluster.logs()[autoscaler])
    )


@pytest.mark.parametrize("version", VERSIONS[::-1])
async def test_s_ca_2_a_preemptors_nominated_node_counts_as_used(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """The preemptor waits for its victim (terminating for 10 virtual minutes, far past the
    window, the clock running at max), nominated to the node: the
    autoscaler counts it there (utilization 0.3 + 0.75), so the node stays. Both versions
    count an unschedulable, non-expendable pod on the node it is nominated to (cluster-autoscaler)."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    assert counted_on_nominated_node(version, unschedulable=True, expendable=False)
    ns = await create_namespace(api, f"ca2-{version.replace('.', '')}")
    await api.create(make_priority_class(f"{ns}-high", 100).obj())
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        victim = (
            make_pod("victim")
            .namespace(ns)
            .req(cpu="600m")
            .node(node)
            .grace(VICTIM_GRACE)
            .annotation(SHUTDOWN_ANNOTATION, f"{VICTIM_GRACE}s")
            .obj()
        )
        victim.metadata.owner_references.append(await a_controller(api, ns))
        await api.create(victim)
        await eventually(lambda: _all_running(api, ns, 1), timeout=15, interval=0.2)
        await api.create(
            make_pod("preemptor")
            .namespace(ns)
            .req(cpu="1500m")
            .priority_class(f"{ns}-high")
            .node_selector({"kubernetes.io/hostname": node})
            .obj()
        )

        async def waiting() -> bool:
            pod = await api.get(types_pb2.Pod, "preemptor", ns)
            gone = await api.get(types_pb2.Pod, "victim", ns)
            return pod.status.nominated_node_name == node and gone.metadata.HasField(
                "deletion_timestamp"
            )

        await eventually(waiting, timeout=15, interval=0.2)
        start = await cluster_now(api)
        await unprotect(api, node)

        def spared() -> bool:
            log = cluster.logs()[autoscaler]
            return f"node {node} is not removable: NotUnderutilized (utilization 1.05 " in log

        await eventually(spared, timeout=10, interval=0.2)
        await elapse(api, max(0.0, UNNEEDED + 2 - (await cluster_now(api) - start)))
        assert [x.metadata.name for x in await group_nodes(api, GROUP)] == [node]
        # Still waiting: the window saw the S-CA-2 state.
        assert await waiting()
        await api.delete(types_pb2.Pod, "preemptor", ns, grace_period_seconds=0)
        await api.delete(types_pb2.Pod, "victim", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=30, interval=0.3)
    assert violations(nodes, pods) == []


@pytest.mark.parametrize("version", VERSIONS)
async def test_s_ca_2_a_pod_nominated_to_a_node_that_is_gone(
    cluster: Cluster,
    autoscalers: Autoscalers,
    clients: tuple[Client, CloudProviderClient],
    version: str,
) -> None:
    """An unschedulable pod nominated to a node that does not exist (any more): before #9607
    an ordinary unschedulable pod, it scales pool-a up; from 1.37 ("Pods with
    status.nominatedNodeName will not trigger scale up even if the target node does not
    exist") it does not."""
    api, cloud = clients
    autoscaler = autoscalers.use(version)
    ns = await create_namespace(api, f"ca2-gone-{version.replace('.', '')}")
    async with recorded(api) as (nodes, pods):
        pod = (
            make_pod("orphan")
            .namespace(ns)
            .req(cpu="500m")
            .node_selector({GROUP_LABEL: GROUP})
            .grace(0)
            .obj()
        )
        await nominate(api, pod, f"{ns}-gone", unschedulable=True)
        if scales_up_for_nomination_to_a_gone_node(version):

            async def scaled_up() -> str:
                (node,) = await group_nodes(api, GROUP, 1)
                assert "orphan" in await pod_events(api, ns, "TriggeredScaleUp")
                return node.metadata.name

            await eventually(scaled_up, timeout=20, interval=0.2)
        else:
            await two_more_loops(cluster, autoscaler)
            await two_more_loops(cluster, autoscaler)
            assert await cloud.target_size(GROUP) == 0
            assert await pod_events(api, ns, "TriggeredScaleUp") == {}
            assert (
                f"pod {ns}/orphan is nominated to node {ns}-gone, which is gone: no scale-up"
                in autoscalers.log()
            )
        await api.delete(types_pb2.Pod, "orphan", ns, grace_period_seconds=0)
        await eventually(lambda: pool_empty(api), timeout=25, interval=0.3)
    assert violations(nodes, pods) == []


def kubelet_pid(cluster: Cluster, node: str) -> int:
    """The pid of the kubelet the cluster's cloud runs for instance `node`, as its state file
    records it (a process of this cluster: other clusters on the machine have namesakes)."""
    state = json.loads((cluster.root / "cloud" / "state.json").read_text())
    (pid,) = [i["pid"] for i in state["instances"] if i["name"] == node]
    assert isinstance(pid, int) and pid > 0, state
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    assert b"kubelet" in argv and node.encode() in argv, argv
    return pid


async def test_chaos_a_restarted_autoscaler_keeps_the_taint_of_a_node_the_cloud_is_deleting(
    cluster: Cluster, autoscalers: Autoscalers, clients: tuple[Client, CloudProviderClient]
) -> None:
    """The chaos run's seed 3: the autoscaler asks the cloud to delete an empty node and is
    SIGKILLed; the cloud is still deleting the instance (its kubelet is stopped with SIGSTOP,
    so the cloud waits its 10 s before SIGKILL) when the restarted autoscaler's first loop
    runs. That loop must keep the node's ToBeDeleted taint: a pod that only fits that node
    stays pending instead of being bound to a node about to go."""
    api, cloud = clients
    autoscaler = autoscalers.use("1.37")
    ns = await create_namespace(api, "chaos-deleting")
    async with recorded(api) as (nodes, pods):
        (node,) = await grow(api, cloud, 1)
        pid = kubelet_pid(cluster, node)
        os.kill(pid, signal.SIGSTOP)
        try:
            await unprotect(api, node)

            def deleting() -> bool:
                log = cluster.logs()[autoscaler]
                return f"deleting 1 empty node(s) of group {GROUP}: {node}" in log

            await eventually(deleting, timeout=20, interval=0.05)

            async def instance_deleting() -> bool:
                (inst,) = [i for i in await cloud.nodes(GROUP) if i.id.endswith(f"/{node}")]
                assert inst.status.instance_state == DELETING_STATE
                return True

            # The log line comes before the cloud's call: the kill waits for the call's effect
            # (a kill between the two left nothing to delete under load).
            await eventually(instance_deleting, timeout=20, interval=0.05)
            cluster.kill(autoscaler)
            cluster.restart(autoscaler)
            # A pod that fits only that node (its hostname): bound there if the taint goes.
            await api.create(
                make_pod("late")
                .namespace(ns)
                .req(cpu="500m")
                .node_selector(**{HOSTNAME: node})
                .grace(0)
                .obj()
            )
            await eventually(
                lambda: (
                    f"node {node}: its instance is being deleted, its taints are kept"
                    in cluster.logs()[autoscaler]
                ),
                timeout=15,
                interval=0.1,
            )
        finally:
            # (Gone if the cloud had to SIGKILL it.)
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)
        await eventually(lambda: pool_empty(api), timeout=20, interval=0.3)
        late = await api.get(types_pb2.Pod, "late", ns)
        assert late.spec.node_name == ""
        await api.delete(types_pb2.Pod, "late", ns, grace_period_seconds=0)
    assert violations(nodes, pods) == []
    # The node had its taint in every version recorded after the autoscaler added it.
    (history,) = [vs for vs in nodes.versions.values() if vs[0].node.metadata.name == node]
    tainted = [any(t.key == TO_BE_DELETED for t in v.node.spec.taints) for v in history]
    first = tainted.index(True)
    assert all(tainted[first:]), tainted
    assert (
        f"removing leftover taint {TO_BE_DELETED} from node {node}"
        not in (cluster.logs()[autoscaler])
    )
