"""The scenario pack: each scenario runs in its own namespace on its own kubelets (at the
cell's kubelet version) and returns the facts it observed (the keys of kemu.skew.expect's),
after checking the invariants on the history of its pods (a violation raises)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    POD_SCHEDULING_READINESS,
)
from kemu.machinery.errors import Invalid, NotFound
from kemu.machinery.podgroups import WORKLOAD_REF_LAST_MINOR
from kemu.skew.expect import Facts, clearing, disruption_reason, pod_groups_served
from kemu.skew.policy import Cell
from kemu.skew.upgrade import rolling_upgrade
from kemu.testing.builders import PodBuilder, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.invariants import PodHistory, assert_invariants, record_pods
from kemu.testing.scenarios import Scenario, disruption_target

BINDING_PROFILE: Final = "binding-scheduler"
PREBIND_DELAY: Final = "scheduling.kemu.io/prebind-delay"
TIMEOUT: Final = 30.0
SCHEDULER_CONFIG: Final = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: {BINDING_PROFILE}
  plugins:
    multiPoint: {{enabled: [{{name: SlowPreBind}}]}}
"""

NODE_GROUP: Final = "kemu.io/node-group"
CLOUD_CONFIG: Final = """\
nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 2
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


def _nnns(history: PodHistory, s: Scenario, name: str) -> list[str]:
    return [
        v.pod.status.nominated_node_name
        for uid in history.uids_of(name, s.ns)
        for v in history.versions[uid]
    ]


async def create_nominated(
    cluster: Cluster, cell: Cell, s: Scenario, pod: PodBuilder, node: str
) -> None:
    """Creates `pod` nominated to the scenario node `node` before its first scheduling cycle:
    held by a scheduling gate where the first apiserver has them (PodSchedulingReadiness),
    else (older apiservers drop the gates) created and nominated while the scheduler is
    stopped, as upstream's tests do."""
    if cell.feature_gates("apiserver").enabled(POD_SCHEDULING_READINESS):
        await s.create_nominated(pod, node)
        return
    cluster.terminate("scheduler")
    try:
        created = await s.create(pod)
        await s.nominate(created.metadata.name, node)
    finally:
        cluster.restart("scheduler")


async def binding_nnn(cluster: Cluster, cell: Cell) -> Facts:
    kubelet = str(cell.kubelet)
    async with Scenario.open(cluster, "skew-binding") as s, record_pods(s.client, s.ns) as history:
        [node] = await s.nodes("node", cpu="4", memory="4Gi", pods="32", emulated_version=kubelet)
        slow = s.pod("prebind-pod").scheduler_name(BINDING_PROFILE).annotation(PREBIND_DELAY, "1s")
        await s.create(slow)
        await create_nominated(cluster, cell, s, s.pod("nominated-pod"), "node")
        for name in ("prebind-pod", "nominated-pod"):
            await s.wait_bound(name, TIMEOUT)
        await history.sync(s.client, timeout=TIMEOUT)
        await assert_invariants(
            s.client,
            history,
            s.ns,
            clearing_gate_on=clearing(cell),
            disruption_reason=disruption_reason(cell),
        )
        return {
            "nnn_set_at_prebind": node in _nnns(history, s, "prebind-pod"),
            "prebind_pod_nnn_after_binding": (await s.get("prebind-pod")).status.nominated_node_name
            == node,
            "nominated_pod_nnn_after_binding": (
                await s.get("nominated-pod")
            ).status.nominated_node_name
            == node,
        }


async def preemption_nnn(cluster: Cluster, cell: Cell) -> Facts:
    kubelet = str(cell.kubelet)
    async with (
        Scenario.open(cluster, "skew-preemption") as s,
        record_pods(s.client, s.ns) as history,
    ):
        [node] = await s.nodes("node", cpu="1", memory="1Gi", pods="32", emulated_version=kubelet)
        await s.run(s.pod("victim", priority=100, cpu="800m", memory="100Mi"))
        await s.create(s.pod("preemptor", priority=300, cpu="500m", memory="100Mi"))
        bound = await s.wait_bound("preemptor", TIMEOUT)
        await history.sync(s.client, timeout=TIMEOUT)
        await assert_invariants(
            s.client,
            history,
            s.ns,
            clearing_gate_on=clearing(cell),
            disruption_reason=disruption_reason(cell),
        )
        victims = [v for uid in history.uids_of("victim", s.ns) for v in history.versions[uid]]
        deleted = any(
            v.type == DELETED or v.pod.metadata.HasField("deletion_timestamp") for v in victims
        )
        marks = {
            c.reason
            for v in victims
            if (c := disruption_target(v.pod)) is not None and c.status == "True"
        }
        reason = disruption_reason(cell)
        return {
            "preemptor_nominated": node in _nnns(history, s, "preemptor"),
            # Deleted with the condition the scheduler writes at its version (none before
            # PodDisruptionConditions, PreemptionByKubeScheduler before 1.27).
            "victim_preempted": deleted and marks == ({reason} if reason else set()),
            "preemptor_bound_to_node": bound == node,
            "preemptor_nnn_after_binding": (await s.get("preemptor")).status.nominated_node_name
            == node,
        }


async def prefer_nominated(cluster: Cluster, cell: Cell) -> Facts:
    kubelet = str(cell.kubelet)
    async with Scenario.open(cluster, "skew-pnn") as s, record_pods(s.client, s.ns) as history:
        await s.nodes(
            "node-a", "node-b", cpu="1", memory="1Gi", pods="32", emulated_version=kubelet
        )
        # node-a half full: scoring prefers node-b, the nominated node is node-a.
        await s.run(s.pod("filler", cpu="500m", memory="512Mi"), node="node-a")
        await create_nominated(cluster, cell, s, s.pod("pod", cpu="100m", memory="100Mi"), "node-a")
        bound = await s.wait_bound("pod", TIMEOUT)
        await history.sync(s.client, timeout=TIMEOUT)
        await assert_invariants(
            s.client,
            history,
            s.ns,
            clearing_gate_on=clearing(cell),
            disruption_reason=disruption_reason(cell),
        )
        return {"bound_to_nominated_node": bound == s.node_name("node-a")}


async def resize_old_kubelet(cluster: Cluster, cell: Cell) -> Facts:
    kubelet = str(cell.kubelet)
    async with Scenario.open(cluster, "skew-resize") as s:
        await s.nodes("node", cpu="2", memory="2Gi", pods="32", emulated_version=kubelet)
        await s.run(s.pod("pod", cpu="100m", memory="100Mi"))
        pod = await s.get("pod")
        pod.spec.containers[0].resources.requests["cpu"] = "200m"
        try:
            await s.client.resize(pod)
        except (Invalid, NotFound):  # refused, or no pods/resize at all (gate off)
            return {"resize_accepted": False, "resize_applied": False}

        async def applied() -> bool:
            statuses = (await s.get("pod")).status.container_statuses
            got = statuses[0].resources.requests.get("cpu", "") if statuses else ""
            assert got == "200m", f"container resources cpu {got!r}"
            return True

        try:
            await eventually(applied, timeout=10.0)
        except AssertionError:
            return {"resize_accepted": True, "resize_applied": False}
        return {"resize_accepted": True, "resize_applied": True}


AUTOSCALER_OBSERVATION: Final = 5.0
"""How long autoscaler-nnn watches for a scale-up that must not come (10 loops at 500ms)."""
RESIZE_OBSERVATION: Final = 4.0
"""How long resize-preemption watches for a preemption that must not come."""


def _deferred(pod: types_pb2.Pod) -> bool:
    return any(
        c.type == "PodResizePending" and c.status == "True" and c.reason == "Deferred"
        for c in pod.status.conditions
    )


async def resize_preemption(cluster: Cluster, cell: Cell) -> Facts:
    """KEP-5836 with the cell's kubelet (README example): cpu 2, two low pods of 900m and a
    high one of 100m resized to 1; the kubelet defers it; the scheduler preempts a low pod
    for it (reading the node's policy itself, whatever the kubelet knows), or not."""
    kubelet = str(cell.kubelet)
    async with Scenario.open(cluster, "skew-rpe") as s, record_pods(s.client, s.ns) as history:
        await s.nodes(
            "n1",
            cpu="2",
            memory="4Gi",
            pods="20",
            emulated_version=kubelet,
            feature_gates=cell.gates_of("kubelet") or None,
        )
        for name in ("batch-1", "batch-2"):
            await s.run(s.pod(name, priority=100, cpu="900m", memory="128Mi"))
        await s.run(s.pod("serving", priority=1000, cpu="100m", memory="128Mi"))
        pod = await s.get("serving")
        pod.spec.containers[0].resources.requests["cpu"] = "1"
        try:
            await s.client.resize(pod)
        except (Invalid, NotFound):
            return {"resize_deferred": False, "low_pod_preempted": False, "resized": False}

        async def deferred() -> bool:
            assert _deferred(await s.get("serving")), "not Deferred"
            return True

        try:
            await eventually(deferred, timeout=10.0)
        except AssertionError:
            return {"resize_deferred": False, "low_pod_preempted": False, "resized": False}

        async def no_preemption() -> None:
            pods = await s.pods()
            hit = [
                n
                for n, p in pods.items()
                if disruption_target(p) is not None or p.metadata.HasField("deletion_timestamp")
            ]
            assert not hit, f"preempted: {hit}"

        try:
            await s.holds(no_preemption, RESIZE_OBSERVATION)
            preempted = False
        except AssertionError:
            preempted = True

        async def resized() -> bool:
            statuses = (await s.get("serving")).status.container_statuses
            got = statuses[0].resources.requests.get("cpu", "") if statuses else ""
            assert got == "1", f"container resources cpu {got!r}"
            return True

        done = False
        if preempted:
            await eventually(resized, timeout=TIMEOUT)
            done = True
        await history.sync(s.client, timeout=TIMEOUT)
        await assert_invariants(
            s.client,
            history,
            s.ns,
            clearing_gate_on=clearing(cell),
            disruption_reason=disruption_reason(cell),
            resize_preemption_gate_on=cell.feature_gates("scheduler").enabled(
                IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
            ),
        )
        return {"resize_deferred": True, "low_pod_preempted": preempted, "resized": done}


async def autoscaler_nnn(cluster: Cluster, cell: Cell) -> Facts:
    """Two pending pods of a scheduler that does not run (so only the autoscaler acts on them),
    each needing a node of its own: "plain" first, which must trigger a scale-up (the
    autoscaler is looking), then "nominated", nominated to a node that does not exist: it
    triggers a second scale-up before 1.37, none from 1.37 (kubernetes/autoscaler#9607),
    watched for AUTOSCALER_OBSERVATION."""
    async with Scenario.open(cluster, "skew-ca") as s:

        async def pending(name: str, nnn: str = "") -> None:
            pod = make_pod(name).namespace(s.ns).req(cpu="1500m", memory="100Mi")
            await s.create(
                pod.scheduler_name("no-such-scheduler").node_selector({NODE_GROUP: "pool-a"})
            )
            status: dict[str, object] = {
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
                ]
            }
            if nnn:
                status["nominatedNodeName"] = nnn
            await s.client.patch(
                types_pb2.Pod, name, {"status": status}, s.ns, subresource="status"
            )

        async def triggered(name: str) -> bool:
            names = {e.involved_object.name for e in await s.events("TriggeredScaleUp")}
            assert name in names, f"no TriggeredScaleUp for {name}: {names}"
            return True

        await pending("plain")
        await eventually(lambda: triggered("plain"), timeout=TIMEOUT)
        await pending("nominated", s.node_name("gone"))
        try:
            await eventually(lambda: triggered("nominated"), timeout=AUTOSCALER_OBSERVATION)
            nominated_scaled = True
        except AssertionError:
            nominated_scaled = False
        return {
            "plain_pod_scales_up": True,
            "pod_nominated_to_gone_node_scales_up": nominated_scaled,
        }


GANG: Final = "gang"
GANG_SIZE: Final = 3
GANG_OBSERVATION: Final = 4.0
"""How long pod-groups watches two members of an incomplete gang for a binding."""


def _gang_member(s: Scenario, index: int, minor: int) -> types_pb2.Pod:
    """Member `index` of the gang, naming its group as the apiserver's version spells it:
    1.35's spec.workloadRef (the Workload's pod group), 1.36's spec.schedulingGroup."""
    pod = s.pod(f"{GANG}-{index}", cpu="100m", memory="64Mi").obj()
    if minor <= WORKLOAD_REF_LAST_MINOR:
        pod.spec.workload_ref.name = GANG
        pod.spec.workload_ref.pod_group = GANG
    else:
        pod.spec.scheduling_group.pod_group_name = GANG
    return pod


async def _create_gang_group(s: Scenario, minor: int) -> None:
    """The gang's group (minCount 3): at 1.35 a Workload's pod group, from 1.36 a PodGroup."""
    policy = types_pb2.PodGroupSchedulingPolicy()
    policy.gang.min_count = GANG_SIZE
    if minor <= WORKLOAD_REF_LAST_MINOR:
        workload = types_pb2.Workload()
        workload.metadata.name, workload.metadata.namespace = GANG, s.ns
        workload.spec.pod_group_templates.add(name=GANG, scheduling_policy=policy)
        await s.client.create(workload)
        return
    group = types_pb2.PodGroup()
    group.metadata.name, group.metadata.namespace = GANG, s.ns
    group.spec.scheduling_policy.CopyFrom(policy)
    await s.client.create(group)


async def pod_groups(cluster: Cluster, cell: Cell) -> Facts:
    """S-PG-1 across versions: a gang of 3 (minCount 3) whose third member comes last. Two
    members stay unbound while the third does not exist iff the cell's scheduler schedules
    groups and reads the reference the apiserver keeps; the three are bound once it exists."""
    minor = cell.apiservers[0].minor
    kubelet = str(cell.kubelet)
    served = pod_groups_served(cell)
    async with Scenario.open(cluster, "skew-pg") as s:
        await s.nodes("node", cpu="4", memory="4Gi", pods="32", emulated_version=kubelet)
        if served:
            await _create_gang_group(s, minor)
        for index in range(GANG_SIZE - 1):
            await s.create(_gang_member(s, index, minor))

        async def none_bound() -> None:
            bound = [n for n, p in (await s.pods()).items() if p.spec.node_name]
            assert not bound, f"bound before the gang was complete: {bound}"

        try:
            await s.holds(none_bound, GANG_OBSERVATION)
            held = True
        except AssertionError:
            held = False
        await s.create(_gang_member(s, GANG_SIZE - 1, minor))
        for index in range(GANG_SIZE):
            await s.wait_bound(f"{GANG}-{index}", TIMEOUT)
        return {"pod_groups_served": served, "partial_gang_held": held, "gang_bound": True}


SCENARIO_FUNCS: Final[Mapping[str, Callable[[Cluster, Cell], Awaitable[Facts]]]] = {
    "binding-nnn": binding_nnn,
    "preemption-nnn": preemption_nnn,
    "prefer-nominated": prefer_nominated,
    "resize-old-kubelet": resize_old_kubelet,
    "resize-preemption": resize_preemption,
    "autoscaler-nnn": autoscaler_nnn,
    "pod-groups": pod_groups,
    "rolling-upgrade": rolling_upgrade,
}
