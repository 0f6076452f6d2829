"""KEP-5836 end to end on real kubelets (KEP-5836, keps/sig-scheduling/5836-*): the kubelet defers a resize that does not
fit, the scheduler preempts lower-priority pods on the pod's own node, and the kubelet then
allocates and actuates the resize. The README's example (examples/resize-preemption.yaml) in
this shape: a 2-cpu node holding two low-priority 900m pods and a high-priority 100m pod that is
resized to 1 cpu. Then the other scenarios of upstream's test/integration/scheduler/preemption/deferred_resize_preemption_test.go whose end-to-end form means
something: S-RPE-2 (two victims), S-RPE-3 (preemptionPolicy Never), S-RPE-5 (the node's
policy), S-RPE-9 (the KEP's over-preemption, with Deferred low pods) and S-RPE-10 (a
competing resize takes the room), and S-RPE-6..8's handlers and hints on a third scheduler
process. The test only creates pods, patches nodes, issues pods/resize and restarts a scheduler;
the kubelet defers, retries and actuates.

Two scheduler processes share the cluster: "default-scheduler" with
InPlacePodVerticalScalingSchedulerPreemption on (and in the same process
"kubelet-like-scheduler", the same with NodeResourcesFit's kemuKubeletLikeResizeAccounting,
which is NOT upstream), "gate-off-scheduler" with it off (as by default at 1.37); a pod belongs
to one of them through spec.schedulerName. The apiserver and the
kubelets have the gate on too (the node policy field, the kubelet's policy condition). Every
scenario records its pods through a watch and ends with the invariant checks.

The cluster runs on the virtual clock at rate max (`rate_max`): the kubelet's resize retries,
the graceful terminations and the observation windows ("nothing is evicted") are spans of the
cluster's time, over as soon as the cluster has done its work and moved its clock that far.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster
from kemu.testing.invariants import (
    PodHistory,
    assert_invariants,
    check_invariants,
    record_nodes,
    record_pods,
)
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario, disruption_target
from tests.integration.scheduler.test_resize_preemption import Rpe, delete_all
from tests.integration.scheduler.test_resize_preemption import config as metrics_config

pytestmark = [pytest.mark.integration, pytest.mark.anyio, pytest.mark.usefixtures("rate_max")]

GATE_ON = {IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: True}
GATE_OFF_SCHEDULER = "gate-off-scheduler"
GATE_OFF_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {GATE_OFF_SCHEDULER}
"""
# Not upstream: a second profile of the gate-on process with NodeResourcesFit's
# kemuKubeletLikeResizeAccounting (README, KEP-5836), for S-RPE-9.
KUBELET_LIKE_SCHEDULER = "kubelet-like-scheduler"
GATE_ON_CONFIG = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: {KUBELET_LIKE_SCHEDULER}
  pluginConfig:
  - name: NodeResourcesFit
    args: {{kemuKubeletLikeResizeAccounting: true}}
"""
LOW, HIGH = 100, 1000
TIMEOUT = 60.0
# How long something that must not happen is watched for, once it became decidable (the pod
# observed Deferred: the scheduler has it, and has had this long to act on it).
OBSERVATION = 4.0
HINTS_RATE = 5.0  # the clock's rate in the hints scenarios (hints_scenario)
POLICY_OWNER = "test-operator"
# S-RPE-6, 7, 8 read what the scheduler does with a deferred pod from its /metrics (the
# kubelet-less module's technique: its Rpe, pending pods and failed attempts of a profile, a
# canary to prove the scheduler has seen a trigger). The gauge is per process, and the other
# scenarios leave Deferred pods queued in theirs, so these get a gate-on process of their own
# (profile hints-scheduler, and canary-hints-scheduler for the canaries).
HINTS_SCHEDULER = "hints-scheduler"
HINTS_PROCESS = "scheduler-hints"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("resize-preemption-e2e")
    gate_off_config = root / "gate-off.yaml"
    gate_off_config.write_text(GATE_OFF_CONFIG)
    gate_on_config = root / "gate-on.yaml"
    gate_on_config.write_text(GATE_ON_CONFIG)
    hints_config = root / "hints.yaml"
    hints_config.write_text(metrics_config(HINTS_SCHEDULER))
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(feature_gates=GATE_ON)
        c.start_scheduler(
            config=str(gate_on_config), feature_gates=GATE_ON, extra_args=["--seed", "1"]
        )
        c.start_scheduler(name="scheduler-gate-off", config=str(gate_off_config))
        c.start_scheduler(
            name=HINTS_PROCESS,
            config=str(hints_config),
            feature_gates=GATE_ON,
            extra_args=["--seed", "1"],
        )
        yield c


@asynccontextmanager
async def scenario(
    cluster: Cluster, prefix: str, *, gate_on: bool
) -> AsyncIterator[tuple[Scenario, PodHistory]]:
    """A Scenario whose pods and nodes are recorded from the start; the invariants,
    (9) with the scheduler's gate as `gate_on`, are checked on that history at the end."""
    async with Scenario.open(cluster, prefix) as s:
        selector = f"{SCENARIO_LABEL}={s.ns}"
        async with (
            record_nodes(s.client, selector) as nodes,
            record_pods(s.client, s.ns) as history,
        ):
            yield s, history
            await assert_invariants(
                s.client, history, s.ns, resize_preemption_gate_on=gate_on, nodes=nodes
            )


async def fill_node(s: Scenario, scheduler: str, *, kubelet_version: str | None = None) -> None:
    """The README example's node: cpu 2, batch-1 and batch-2 (low, 900m) and serving (high,
    100m), all Running there, all of `scheduler`'s profile. The kubelet emulates
    `kubelet_version` (default: the newest, with the gate on)."""
    gates = GATE_ON if kubelet_version is None else None  # the gate does not exist before 1.37
    await s.nodes(
        "n1",
        cpu="2",
        memory="4Gi",
        pods="20",
        feature_gates=gates,
        emulated_version=kubelet_version,
    )
    for name in ("batch-1", "batch-2"):
        await s.run(s.pod(name, priority=LOW, cpu="900m", memory="128Mi").scheduler_name(scheduler))
    await s.run(
        s.pod("serving", priority=HIGH, cpu="100m", memory="128Mi").scheduler_name(scheduler)
    )


async def resize_cpu(s: Scenario, name: str, cpu: str) -> None:
    pod = await s.get(name)
    pod.spec.containers[0].resources.requests["cpu"] = cpu
    await s.client.resize(pod)


def condition(pod: types_pb2.Pod, kind: str) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == kind), None)


def deferred(pod: types_pb2.Pod) -> bool:
    c = condition(pod, "PodResizePending")
    return c is not None and c.status == "True" and c.reason == "Deferred"


def allocated_cpu(pod: types_pb2.Pod) -> str:
    statuses = pod.status.container_statuses
    return statuses[0].allocated_resources.get("cpu", "") if statuses else ""


def actual_cpu(pod: types_pb2.Pod) -> str:
    statuses = pod.status.container_statuses
    return statuses[0].resources.requests.get("cpu", "") if statuses else ""


def preempted(pod: types_pb2.Pod) -> bool:
    c = disruption_target(pod)
    return c is not None and c.status == "True" and c.reason == "PreemptionByScheduler"


def versions(history: PodHistory, name: str) -> list[types_pb2.Pod]:
    return [v.pod for uid in history.uids_of(name) for v in history.versions[uid]]


@pytest.mark.parametrize(
    "kubelet_version",
    [None, pytest.param("1.34", marks=pytest.mark.skew, id="kubelet-1.34")],
)
async def test_s_rpe_1_e2e_a_deferred_resize_is_completed_by_preempting_one_low_pod(
    cluster, kubelet_version
):
    # With a 1.34 kubelet (skew: the scheduler reads the node's policy itself, the kubelet
    # knows nothing of KEP-5836 and just defers and retries) the story is the same.
    async with scenario(cluster, "rpe-e2e-on", gate_on=True) as (s, history):
        await fill_node(s, "default-scheduler", kubelet_version=kubelet_version)
        await resize_cpu(s, "serving", "1")

        async def resized() -> bool:
            pod = await s.get("serving")
            assert allocated_cpu(pod) == "1" and actual_cpu(pod) == "1", pod.status
            assert condition(pod, "PodResizePending") is None, pod.status
            assert condition(pod, "PodResizeInProgress") is None, pod.status
            return True

        await s.eventually(resized, timeout=TIMEOUT)
        await history.sync(s.client)
        serving = versions(history, "serving")
        # Deferred first (the kubelet could not fit it next to both batch pods) ...
        assert any(deferred(p) for p in serving), "the resize was never Deferred"
        # ... and from then on never nominated, never unscheduled (invariant 9, checked here
        # directly too).
        since = serving[next(i for i, p in enumerate(serving) if deferred(p)) :]
        assert all(not p.status.nominated_node_name for p in since)
        assert all(
            (c := condition(p, "PodScheduled")) is not None and c.status == "True" for p in since
        )
        # One batch pod was enough: 900m + 1 cpu fit in 2 cpu.
        victims = [
            n for n in ("batch-1", "batch-2") if any(preempted(p) for p in versions(history, n))
        ]
        assert len(victims) == 1, victims
        survivor = ({"batch-1", "batch-2"} - set(victims)).pop()
        assert (await s.get(survivor)).status.phase == "Running"
        preempted_events = await s.events("Preempted")
        events = {e.involved_object.name: e.message for e in preempted_events}
        assert victims[0] in events and "on node" in events[victims[0]], events
        # The invariant checker recognises this as a resize preemption: told that the gate was
        # off, it reports it (invariant 9), so the passing check at the end is not vacuous.
        violations = check_invariants(history.versions, preempted_events, clearing_gate_on=True)
        assert any("SchedulerPreemption off" in v for v in violations), violations


async def test_s_rpe_1_e2e_gate_off_the_resize_stays_deferred_and_nothing_is_evicted(cluster):
    async with scenario(cluster, "rpe-e2e-off", gate_on=False) as (s, history):
        await fill_node(s, GATE_OFF_SCHEDULER)
        await resize_cpu(s, "serving", "1")

        async def is_deferred() -> bool:
            return deferred(await s.get("serving"))

        await s.eventually(is_deferred, timeout=TIMEOUT)

        async def nothing_happens() -> None:
            pods = await s.pods()
            for name in ("batch-1", "batch-2"):
                assert not pods[name].metadata.HasField("deletion_timestamp"), name
            assert deferred(pods["serving"]) and allocated_cpu(pods["serving"]) == "100m"

        await s.holds(nothing_happens, seconds=5.0)
        await history.sync(s.client)
        for name in ("batch-1", "batch-2"):
            assert not any(preempted(p) for p in versions(history, name)), name
        assert not await s.events("Preempted")


# ---------------------------------------------------------------- S-RPE-2, 3, 5, 9 end to end


async def wait_deferred(s: Scenario, name: str) -> types_pb2.Pod:
    async def is_deferred() -> types_pb2.Pod:
        pod = await s.get(name)
        assert deferred(pod), f"{name}: {pod.status.conditions}"
        return pod

    result: types_pb2.Pod = await s.eventually(is_deferred, timeout=TIMEOUT)
    return result


async def wait_resized(s: Scenario, name: str, cpu: str) -> None:
    """Until the kubelet has allocated and actuated `cpu` for the pod, no resize condition
    left."""

    async def resized() -> bool:
        pod = await s.get(name)
        assert allocated_cpu(pod) == cpu and actual_cpu(pod) == cpu, pod.status
        assert condition(pod, "PodResizePending") is None, pod.status
        assert condition(pod, "PodResizeInProgress") is None, pod.status
        return True

    await s.eventually(resized, timeout=TIMEOUT)


def evicted(history: PodHistory, names: Iterable[str]) -> set[str]:
    """The pods among `names` that the scheduler preempted at some point of the history."""
    return {n for n in names if any(preempted(p) for p in versions(history, n))}


async def assert_nothing_evicted(
    s: Scenario, history: PodHistory, names: Iterable[str], pending: Mapping[str, str]
) -> None:
    """Over a bounded window, none of `names` is deleted and every pod of `pending` stays
    Deferred at its allocated cpu; then the same from the recorded history, and no Preempted
    event."""
    names = list(names)

    async def nothing_happens() -> None:
        pods = await s.pods()
        for name in names:
            assert not pods[name].metadata.HasField("deletion_timestamp"), name
        for name, cpu in pending.items():
            assert deferred(pods[name]) and allocated_cpu(pods[name]) == cpu, pods[name].status

    await s.holds(nothing_happens, seconds=OBSERVATION)
    await history.sync(s.client)
    assert not evicted(history, names), evicted(history, names)
    events = [e for e in await s.events("Preempted") if e.involved_object.name in names]
    assert not events, events


async def two_low_pods_and_serving(s: Scenario, scheduler: str, *, never: bool = False) -> None:
    """fill_node's node (cpu 2: batch-1 and batch-2 low 900m, serving high 100m), serving's
    preemptionPolicy Never if `never`."""
    await s.nodes("n1", cpu="2", memory="4Gi", pods="20", feature_gates=GATE_ON)
    for name in ("batch-1", "batch-2"):
        await s.run(s.pod(name, priority=LOW, cpu="900m", memory="128Mi").scheduler_name(scheduler))
    await s.run(
        s.pod("serving", priority=HIGH, never=never, cpu="100m", memory="128Mi").scheduler_name(
            scheduler
        )
    )


@pytest.mark.parametrize("gate_on", [True, False], ids=["gate-on", "gate-off"])
async def test_s_rpe_2_e2e_two_low_pods_are_evicted_for_one_resize(cluster, gate_on):
    """serving resized 100m → 1500m. The kubelet: 900m + 900m + 1500m > 2 cpu, Deferred. The
    scheduler counts serving at max(desired, allocated, actual) = 1500m: with both batch pods
    removed it fits, with either reprieved 1500m + 900m > 2 cpu does not, so both go; the
    kubelet then actuates the resize. Gate off: Deferred, nothing evicted."""
    scheduler = "default-scheduler" if gate_on else GATE_OFF_SCHEDULER
    async with scenario(cluster, "rpe2-e2e", gate_on=gate_on) as (s, history):
        await two_low_pods_and_serving(s, scheduler)
        await resize_cpu(s, "serving", "1500m")
        lows = ("batch-1", "batch-2")
        if not gate_on:
            await wait_deferred(s, "serving")
            await assert_nothing_evicted(s, history, lows, {"serving": "100m"})
            return
        await wait_resized(s, "serving", "1500m")
        await history.sync(s.client)
        assert any(deferred(p) for p in versions(history, "serving")), "never Deferred"
        assert evicted(history, lows) == set(lows)
        events = {e.involved_object.name for e in await s.events("Preempted")}
        assert events == set(lows), events


async def test_s_rpe_3_e2e_preemption_policy_never_stays_deferred(cluster):
    """As S-RPE-1 with serving's preemptionPolicy Never: the kubelet defers the resize, the
    scheduler (gate on) takes the pod but may not preempt for it: nothing is evicted, the
    resize stays Deferred. (Gate off the outcome is the same: S-RPE-1's gate-off test.)"""
    async with scenario(cluster, "rpe3-e2e", gate_on=True) as (s, history):
        await two_low_pods_and_serving(s, "default-scheduler", never=True)
        assert (await s.get("serving")).spec.preemption_policy == "Never"
        await resize_cpu(s, "serving", "1")
        await wait_deferred(s, "serving")
        await assert_nothing_evicted(s, history, ("batch-1", "batch-2"), {"serving": "100m"})


async def test_s_rpe_5_e2e_node_policy_disables_resize_preemption_with_no_pod_condition(
    cluster,
):
    """As S-RPE-1 on a node whose spec.podPreemptionPolicy.disableResizePreemption is
    [test-operator], set after its kubelet registered: nothing is evicted, the resize stays
    Deferred, and the kubelet (gate on) writes no PodResizePreemptionDisabled condition: the
    scheduler reads the node's policy itself (DeferredPodScheduling), KEP-5836's README lists
    the pod condition as a rejected alternative, and the merged kubelet (kubernetes#140000,
    pkg/kubelet/allocation/allocation_manager.go) writes only PodResizePending and
    PodResizeInProgress. The policy is written together with a label that batch-1 selects, so
    batch-1 being bound shows that the scheduler has seen the policy before serving's resize.
    "No condition" is read from every recorded version of serving, through the observation
    window that follows its Deferred status."""
    async with scenario(cluster, "rpe5-e2e", gate_on=True) as (s, history):
        (node,) = await s.nodes("n1", cpu="2", memory="4Gi", pods="20", feature_gates=GATE_ON)
        patched = await s.client.patch(
            types_pb2.Node,
            node,
            {
                "metadata": {"labels": {"rpe-policy": "disabled"}},
                "spec": {"podPreemptionPolicy": {"disableResizePreemption": [POLICY_OWNER]}},
            },
        )
        assert list(patched.spec.pod_preemption_policy.disable_resize_preemption) == [POLICY_OWNER]
        for name in ("batch-1", "batch-2"):
            await s.run(
                s.pod(name, priority=LOW, cpu="900m", memory="128Mi").node_selector(
                    {"rpe-policy": "disabled"}
                )
            )
        await s.run(s.pod("serving", priority=HIGH, cpu="100m", memory="128Mi"))
        await resize_cpu(s, "serving", "1")
        await wait_deferred(s, "serving")
        await assert_nothing_evicted(s, history, ("batch-1", "batch-2"), {"serving": "100m"})
        seen = versions(history, "serving")
        assert any(deferred(p) for p in seen), "serving's Deferred status was not recorded"
        with_condition = [
            p.metadata.resource_version
            for p in seen
            if condition(p, "PodResizePreemptionDisabled") is not None
        ]
        assert not with_condition, (
            f"serving got PodResizePreemptionDisabled at resourceVersions {with_condition}"
        )
        got = await s.client.get(types_pb2.Node, node)
        assert list(got.spec.pod_preemption_policy.disable_resize_preemption) == [POLICY_OWNER]


S_RPE_9_LOWS = ("pod-2", "pod-3", "pod-4")


async def over_preemption_node(s: Scenario, scheduler: str) -> None:
    """The KEP's example with X = 1 cpu on a real kubelet: node 2X; pod-1 (high) and pods 2,
    3, 4 (low) each holding X/2, which fills it. The lows are resized to 2X each (≤ the node,
    so not Infeasible): the kubelet defers each (1.5X held by the others + 2X > 2X). pod-1 is
    then resized to X: Deferred too (1.5X + X > 2X)."""
    await s.nodes("n1", cpu="2", memory="4Gi", pods="20", feature_gates=GATE_ON)
    for name in S_RPE_9_LOWS:
        await s.run(s.pod(name, priority=LOW, cpu="500m", memory="64Mi").scheduler_name(scheduler))
    await s.run(s.pod("pod-1", priority=HIGH, cpu="500m", memory="64Mi").scheduler_name(scheduler))
    for name in S_RPE_9_LOWS:
        await resize_cpu(s, name, "2")
    for name in S_RPE_9_LOWS:
        await wait_deferred(s, name)
    await resize_cpu(s, "pod-1", "1")


@pytest.mark.parametrize("gate_on", [True, False], ids=["gate-on", "gate-off"])
async def test_s_rpe_9_e2e_alpha_accounting_evicts_every_low_pod(cluster, gate_on):
    """The alpha scheduler counts the Deferred lows at their desired 2X each: reprieving any
    of them gives X + 2X > 2X, so all three are evicted where one would do (the kubelet
    actuates pod-1's resize as soon as the first is gone: 0.5X + 0.5X + X = 2X). Gate off:
    all four stay Deferred, nothing is evicted."""
    scheduler = "default-scheduler" if gate_on else GATE_OFF_SCHEDULER
    async with scenario(cluster, "rpe9-e2e", gate_on=gate_on) as (s, history):
        await over_preemption_node(s, scheduler)
        if not gate_on:
            await wait_deferred(s, "pod-1")
            pending = {name: "500m" for name in (*S_RPE_9_LOWS, "pod-1")}
            await assert_nothing_evicted(s, history, S_RPE_9_LOWS, pending)
            return
        await wait_resized(s, "pod-1", "1")
        for name in S_RPE_9_LOWS:
            await s.wait_gone(name, timeout=TIMEOUT)
        await history.sync(s.client)
        assert any(deferred(p) for p in versions(history, "pod-1")), "never Deferred"
        assert evicted(history, S_RPE_9_LOWS) == set(S_RPE_9_LOWS)
        events = {e.involved_object.name for e in await s.events("Preempted")}
        assert events == set(S_RPE_9_LOWS), events


async def test_s_rpe_9_e2e_kubelet_like_accounting_evicts_one_low_pod(cluster):
    """NOT upstream: the same on the kubelet-like-scheduler profile
    (kemuKubeletLikeResizeAccounting). The lows count at what they hold, X/2: X + 1.5X > 2X,
    so pod-1 preempts; two lows are reprieved (X + X/2 + X/2 = 2X), one is evicted. The
    kubelet then actuates pod-1's resize; the two other lows stay Running and Deferred (the
    node is full, and nothing on it is of lower priority), and nothing more is evicted."""
    async with scenario(cluster, "rpe9kl-e2e", gate_on=True) as (s, history):
        await over_preemption_node(s, KUBELET_LIKE_SCHEDULER)
        await wait_resized(s, "pod-1", "1")
        await history.sync(s.client)
        (victim,) = evicted(history, S_RPE_9_LOWS)
        await s.wait_gone(victim, timeout=TIMEOUT)
        survivors = [n for n in S_RPE_9_LOWS if n != victim]
        await assert_nothing_evicted(s, history, survivors, dict.fromkeys(survivors, "500m"))
        assert evicted(history, S_RPE_9_LOWS) == {victim}
        for name in survivors:
            assert (await s.get(name)).status.phase == "Running", name


async def test_s_rpe_10_e2e_a_competing_resize_takes_the_room(cluster):
    """The KEP's race on a real kubelet. Node 1 cpu: b (low, 300m, a 3 s shutdown), c (high,
    100m, preemptionPolicy Never, so that its own resize never preempts), d (150, 100m), a
    (medium, 300m). a is resized to 600m: Deferred (500m + 600m > 1 cpu); the scheduler evicts
    b only (d, more important than b, is reprieved: 600 + 100 + 100 ≤ 1000). While b
    terminates, c is resized to 400m; the kubelet gives c the room (it is more important: its
    retry order), so a does not fit (400 + 100 + 600 > 1000) and the scheduler, counting c at
    400m, evicts d too. Then a fits and is actuated. Without c's resize one victim would have
    done (600 + 100 + 100). a is retried at c's scale-up itself (NodeResourcesFit's
    UpdatePodScaleUp hint, as merged by kubernetes#140000), possibly while b still terminates:
    upstream's alpha does not hold a deferred pod back for its terminating victims (that check
    looks at the nominated node, which a deferred pod never has), so d may go before b is
    gone."""
    async with scenario(cluster, "rpe10-e2e", gate_on=True) as (s, history):
        await s.nodes("n1", cpu="1", memory="4Gi", pods="20", feature_gates=GATE_ON)
        await s.run(s.pod("b", priority=LOW, cpu="300m", memory="64Mi", shutdown="3s"))
        await s.run(s.pod("c", priority=HIGH, never=True, cpu="100m", memory="64Mi"))
        await s.run(s.pod("d", priority=150, cpu="100m", memory="64Mi"))
        await s.run(s.pod("a", priority=200, cpu="300m", memory="64Mi"))
        # The clock holds from a's resize until c's is issued: the deferral and b's eviction
        # are work, not timers, so they happen; b's 3 s shutdown waits (at rate max the clock
        # would jump past it as soon as the cluster is idle, before the test resizes c).
        await s.client.set_clock_rate(0)
        try:
            await resize_cpu(s, "a", "600m")

            async def b_evicted() -> bool:
                pod = await s.get("b")
                assert preempted(pod) and pod.metadata.HasField("deletion_timestamp"), pod.status
                return True

            await s.eventually(b_evicted, timeout=TIMEOUT)
            await resize_cpu(s, "c", "400m")
            # c's resize was issued while b was still there (terminating).
            assert "b" in await s.pods()
        finally:
            await s.client.set_clock_rate(math.inf)
        await wait_resized(s, "c", "400m")
        await wait_resized(s, "a", "600m")
        for name in ("b", "d"):
            await s.wait_gone(name, timeout=TIMEOUT)
        await history.sync(s.client)
        assert any(deferred(p) for p in versions(history, "a")), "a was never Deferred"
        assert evicted(history, ("b", "c", "d")) == {"b", "d"}
        events = {e.involved_object.name for e in await s.events("Preempted")}
        assert events == {"b", "d"}, events
        # One victim first, then, c having taken the room, another: b was evicted before c's
        # resize was issued, d only after.
        c_resized = min(
            v.seq
            for uid in history.uids_of("c")
            for v in history.versions[uid]
            if v.pod.spec.containers[0].resources.requests["cpu"] == "400m"
        )
        b_evicted_at, d_evicted = (
            min(
                v.seq
                for uid in history.uids_of(n)
                for v in history.versions[uid]
                if preempted(v.pod)
            )
            for n in ("b", "d")
        )
        assert b_evicted_at < c_resized < d_evicted, (b_evicted_at, c_resized, d_evicted)
        assert (await s.get("c")).status.phase == "Running"


# ---------------------------------------------------------------- S-RPE-6, 7, 8 end to end


@asynccontextmanager
async def hints_scenario(cluster: Cluster, prefix: str) -> AsyncIterator[Rpe]:
    """A scenario on the hints process: it starts once that process's queues are empty, has a
    bare canary node, ends with the invariant checks and deletes its pods (grace 0), so that
    the next one starts with empty queues again.

    It runs the clock at rate HINTS_RATE rather than max: its windows say a parked pod is not
    retried, which the queue's 5-minute flush of the unschedulable pool would do once that
    much virtual time had passed; at rate max the clock jumps from timer to timer while the
    test takes its steps, and on a loaded machine a scenario's steps spanned more than 5
    virtual minutes (CI AA: retried 8 -> 9). At HINTS_RATE a scenario spans HINTS_RATE times
    its wall time."""
    async with Scenario.open(cluster, prefix) as s:
        await s.client.set_clock_rate(HINTS_RATE)
        try:
            async with (
                record_pods(s.client, s.ns) as history,
                record_nodes(s.client, f"{SCENARIO_LABEL}={s.ns}") as nodes,
            ):
                r = Rpe(cluster, s, history, nodes, HINTS_SCHEDULER, HINTS_PROCESS)
                await r.wait_queue_empty()
                await r.node("canary", cpu="10m", memory="10", pods="100")
                yield r
                await assert_invariants(
                    s.client,
                    history,
                    s.ns,
                    resize_preemption_gate_on=True,
                    nodes=nodes,
                    externally_deleted=r.externally_deleted,
                    sync_timeout=TIMEOUT,
                )
        finally:
            with anyio.move_on_after(10, shield=True):
                await delete_all(s)
                await s.client.set_clock_rate(math.inf)


async def hints_setup(r: Rpe, *, priority: int = LOW) -> None:
    """Upstream's hint setup on real kubelets, both nodes 1 cpu: node1 with other-pod and
    other-2 (high, 300m each) and deferred-pod (`priority`, 300m); node2 with irrelevant-pod
    (high, 300m). All scheduled by the hints profile to their node and Running; no resize
    yet."""
    s = r.s
    await s.nodes("node1", "node2", cpu="1", memory="4Gi", pods="20", feature_gates=GATE_ON)
    pods = (
        ("other-pod", "node1", HIGH),
        ("other-2", "node1", HIGH),
        ("irrelevant-pod", "node2", HIGH),
        ("deferred-pod", "node1", priority),
    )
    for name, node, prio in pods:
        await s.run(
            s.pod(name, priority=prio, cpu="300m", memory="64Mi")
            .scheduler_name(HINTS_SCHEDULER)
            .node_selector({"kubernetes.io/hostname": s.node_name(node)})
        )
        assert (await s.get(name)).spec.node_name == s.node_name(node)


async def defer(r: Rpe) -> int:
    """S-RPE-8's enqueueing on a real kubelet: the running pod is not queued; resized to 800m
    (600m + 800m > 1 cpu) the kubelet defers it and the scheduler queues it, attempts it and
    parks it (nothing on node1 is of lower priority). Returns the failed attempts then."""
    before = await r.attempts()
    await r.caught_up()
    assert sum((await r.queued()).values()) == 0, await r.queued()
    assert await r.attempts() == before
    await resize_cpu(r.s, "deferred-pod", "800m")
    await wait_deferred(r.s, "deferred-pod")
    attempts = await r.wait_parked()
    assert attempts > before, (before, attempts)
    return attempts


async def test_s_rpe_6_8_e2e_deferred_pod_is_queued_retried_on_its_node_and_dequeued(cluster):
    """S-RPE-8 (enqueued when the kubelet defers it, dequeued when the kubelet clears the
    condition) and S-RPE-6's pod-deletion rows on real kubelets: deleting irrelevant-pod on
    node2 does not retry the parked pod; deleting other-pod on node1 does (still 300m + 800m >
    1 cpu: the kubelet keeps it Deferred, the scheduler parks it again); deleting other-2 lets
    the kubelet accept the resize, and the pod leaves the queue. Nothing is ever preempted
    (no lower-priority pod anywhere)."""
    async with hints_scenario(cluster, "rpe68-e2e") as r:
        await hints_setup(r)
        attempts = await defer(r)
        await r.force_delete("irrelevant-pod")
        await r.assert_not_retried(attempts)
        await r.force_delete("other-pod")
        await r.wait_retried(attempts)
        assert deferred(await r.s.get("deferred-pod"))
        await r.wait_parked()
        await r.force_delete("other-2")
        await wait_resized(r.s, "deferred-pod", "800m")
        await r.wait_queue_empty()
        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert not evicted(r.history, ("deferred-pod",))
        assert not await r.s.events("Preempted")


async def test_s_rpe_8_e2e_deleted_deferred_pod_leaves_the_queue(cluster):
    async with hints_scenario(cluster, "rpe8d-e2e") as r:
        await hints_setup(r)
        await defer(r)
        await r.force_delete("deferred-pod")
        await r.wait_queue_empty()
        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert not await r.s.events("Preempted")


async def test_s_rpe_7_e2e_re_enabling_the_node_policy_retries(cluster):
    """S-RPE-7 on a real kubelet: node1 (1 cpu) holds batch (low, 600m) and deferred-pod
    (high, 300m); its policy is disabled (patched after registration) before deferred-pod is
    resized to 800m. The kubelet defers it, the scheduler may not preempt: nothing happens
    over a window. Patching the policy away (re-enabled) retries the pod: batch is evicted
    and the kubelet actuates the resize; the pod then leaves the queue."""
    async with hints_scenario(cluster, "rpe7-e2e") as r:
        s = r.s
        (node,) = await s.nodes("node1", cpu="1", memory="4Gi", pods="20", feature_gates=GATE_ON)
        await s.client.patch(
            types_pb2.Node,
            node,
            {"spec": {"podPreemptionPolicy": {"disableResizePreemption": [POLICY_OWNER]}}},
        )
        for name, prio, cpu in (("batch", LOW, "600m"), ("deferred-pod", HIGH, "300m")):
            await s.run(
                s.pod(name, priority=prio, cpu=cpu, memory="64Mi").scheduler_name(HINTS_SCHEDULER)
            )
        await r.caught_up()  # the scheduler has seen the policy
        await resize_cpu(s, "deferred-pod", "800m")
        await wait_deferred(s, "deferred-pod")
        await r.caught_up()
        await assert_nothing_evicted(s, r.history, ("batch",), {"deferred-pod": "300m"})
        patched = await s.client.patch(
            types_pb2.Node, node, {"spec": {"podPreemptionPolicy": None}}
        )
        assert not patched.spec.pod_preemption_policy.disable_resize_preemption
        await wait_resized(s, "deferred-pod", "800m")
        await s.wait_gone("batch", timeout=TIMEOUT)
        await r.wait_queue_empty()
        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert evicted(r.history, ("batch",)) == {"batch"}


async def test_s_rpe_6_7_e2e_only_room_on_its_own_node_retries(cluster):
    """S-RPE-6's resize and label rows and S-RPE-7's policy rows on real kubelets, in one
    scenario, on deferred-pod parked at 800m (node1: 300m + 300m + 800m > 1 cpu, nothing of
    lower priority to preempt). Not retried: irrelevant-pod resized down on node2 (its kubelet
    actuates it), a label on other-pod, node2's policy disabled, node1's policy disabled and
    then re-enabled (the pod was rejected for room by NodeResourcesFit, not by the policy: only
    the plugins that rejected a pod have their hints asked, so re-enabling retries only a pod
    that the policy stopped, as in the S-RPE-7 test above). Retried, and parked again because
    the kubelet still defers: other-pod resized down to 100m on node1, the pod's own desired
    size lowered to 700m.
    S-RPE-6's node-allocatable row has no end-to-end form (a node's allocatable comes from its
    kubelet's flags, and a kubelet restarted bigger accepts the resize itself): the
    kubelet-less module covers that hint."""
    async with hints_scenario(cluster, "rpe67-e2e") as r:
        s = r.s
        await hints_setup(r)
        attempts = await defer(r)

        await resize_cpu(s, "irrelevant-pod", "100m")
        await wait_resized(s, "irrelevant-pod", "100m")
        await r.assert_not_retried(attempts)
        await s.client.patch(
            types_pb2.Pod, "other-pod", {"metadata": {"labels": {"updated-by-test": "true"}}}, s.ns
        )
        await r.assert_not_retried(attempts)
        await r.update_node("node2", disabled=True)
        await r.assert_not_retried(attempts)
        await r.update_node("node1", disabled=True)
        await r.assert_not_retried(attempts)
        await r.update_node("node1", disabled=False)
        await r.assert_not_retried(attempts)

        async def retried_and_parked_again(since: int) -> int:
            await r.wait_retried(since)
            await r.caught_up()
            now = await r.wait_parked()
            pod = await s.get("deferred-pod")
            assert deferred(pod) and allocated_cpu(pod) == "300m", pod.status
            return now

        await resize_cpu(s, "other-pod", "100m")
        await wait_resized(s, "other-pod", "100m")
        attempts = await retried_and_parked_again(attempts)
        await resize_cpu(s, "deferred-pod", "700m")
        await retried_and_parked_again(attempts)

        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert not evicted(r.history, ("other-pod", "other-2", "irrelevant-pod"))
        assert not await s.events("Preempted")


async def test_s_rpe_8_e2e_deferred_before_the_scheduler_starts_is_queued_at_start_up(cluster):
    """S-RPE-8's first row with a real kubelet: the hints scheduler is stopped, the kubelet
    defers deferred-pod's resize meanwhile, and the restarted scheduler queues the pod from its
    initial list (AddPod), attempts it and parks it (nothing of lower priority on node1)."""
    async with hints_scenario(cluster, "rpe8a-e2e") as r:
        s = r.s
        await hints_setup(r)
        await anyio.to_thread.run_sync(cluster.terminate, HINTS_PROCESS)
        try:
            await resize_cpu(s, "deferred-pod", "800m")
            await wait_deferred(s, "deferred-pod")
        finally:
            await anyio.to_thread.run_sync(cluster.restart, HINTS_PROCESS)
        assert await r.wait_parked() >= 1
        pod = await s.get("deferred-pod")
        assert deferred(pod) and allocated_cpu(pod) == "300m", pod.status
        await r.sync()
        r.assert_stays_assigned("deferred-pod")
        assert not await s.events("Preempted")
