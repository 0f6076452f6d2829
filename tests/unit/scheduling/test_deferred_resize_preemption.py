"""KEP-5836's cycle and preemption dry run, by hand, on the scenario shapes of upstream's test/integration/scheduler/preemption/deferred_resize_preemption_test.go
(S-RPE-1..5) and the KEP's over-preemption example (S-RPE-9): a default-profile Framework with
resize preemption on, over a Snapshot where the deferred pod is on its node at
max(desired, allocated, actual), as the cache counts it. No scheduler process: the cycle is
PreFilter + Filter over every node, PostFilter is the Evaluator without an executor (it reports
the node it would nominate and the victims), Permit is the framework's. `kubelet_like`: the
profile sets NodeResourcesFit's kemuKubeletLikeResizeAccounting (not upstream: kemu's emulation
of the accounting the KEP plans for beta)."""

from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins import default_preemption, deferred_pod_scheduling
from kemu.scheduling.plugins import node_resources_fit as fit
from kemu.scheduling.plugins.default_preemption import DefaultPreemption
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.preemption import Evaluation
from kemu.scheduling.profile import build_profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import Code, Status, unresolvable
from kemu.scheduling.types import PostFilterResult
from kemu.testing.builders import make_node
from tests.unit.scheduling.deferred_builders import preemptor, resize_gates, running

LOW, HIGH = 0, 1000


class Cluster:
    def __init__(self, *, on: bool = True, kubelet_like: bool = False) -> None:
        registry = in_tree_registry()
        config: dict[str, object] = {}
        if kubelet_like:
            args = {fit.KUBELET_LIKE_RESIZE_ACCOUNTING: True}
            config["pluginConfig"] = [{"name": fit.NAME, "args": args}]
        profile = build_profile(
            config, "profiles[0]", registry, default_name=True, default_percentage=0
        )
        self.fwk = Framework(
            profile,
            registry,
            options=FrameworkOptions(clock=FakeClock(), gates=resize_gates(on)),
            nominator=Nominator(),
        )
        self.nodes: list[types_pb2.Node] = []
        self.pods: list[types_pb2.Pod] = []

    def node(self, name: str, cpu: str, memory: str, *disabled_by: str) -> None:
        b = make_node(name).capacity(cpu=cpu, memory=memory, pods="10")
        if disabled_by:
            b = b.disable_resize_preemption(*disabled_by)
        self.nodes.append(b.obj())

    def cycle(self, pod: types_pb2.Pod) -> tuple[CycleState, NodeToStatus, list[str]]:
        """PreFilter and Filter over every node allowed by PreFilter: the state, the rejected
        nodes' statuses, the nodes that fit."""
        snapshot = Snapshot.from_objects(self.pods, self.nodes)
        self.fwk.set_snapshot(snapshot)
        state, statuses = CycleState(), NodeToStatus()
        nodes = snapshot.node_infos().list()
        result, status, _ = self.fwk.run_pre_filter_plugins(state, pod, nodes)
        assert status.is_success(), status
        fit: list[str] = []
        for ni in nodes:
            if result is not None and result.node_names is not None:
                if ni.name not in result.node_names:
                    statuses.set(ni.name, deferred_rejection())
                    continue
            st = self.fwk.run_filter_plugins_with_nominated_pods(state, pod, ni)
            if st.is_success():
                fit.append(ni.name)
            else:
                statuses.set(ni.name, st)
        return state, statuses, fit

    def preempt(self, pod: types_pb2.Pod) -> Evaluation:
        state, statuses, fit = self.cycle(pod)
        assert not fit, f"{pod.metadata.name} fits on {fit}"
        plugin = self.fwk.plugin(default_preemption.NAME)
        assert isinstance(plugin, DefaultPreemption)
        return plugin.evaluator.evaluate(state, pod, statuses, [])


def deferred_rejection() -> Status:
    """What the scheduler records for the nodes PreFilter left out."""
    return unresolvable("node(s) didn't satisfy plugin(s) [NodeName]")


def victim_names(ev: Evaluation) -> list[str]:
    assert ev.candidate is not None, ev.status
    return sorted(p.metadata.name for p in ev.candidate.victims.pods)


def rpe_cluster(*disabled_by: str, kubelet_like: bool = False) -> Cluster:
    c = Cluster(kubelet_like=kubelet_like)
    c.node("node1", "300m", "300", *disabled_by)
    return c


@pytest.mark.parametrize("kubelet_like", [False, True], ids=["alpha", "kubelet-like"])
def test_s_rpe_1_one_lower_priority_victim_makes_room(kubelet_like: bool) -> None:
    # The victim holds what it asks (no status: its spec): both accountings agree.
    c = rpe_cluster(kubelet_like=kubelet_like)
    me = preemptor()
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    _, statuses, _ = c.cycle(me)
    st = statuses.get("node1")
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, ("Insufficient cpu",))
    ev = c.preempt(me)
    assert victim_names(ev) == ["victim-1"]
    assert ev.candidate is not None and ev.candidate.name == "node1"


def test_s_rpe_1_the_deferred_pod_is_never_its_own_victim_even_at_a_higher_priority() -> None:
    # Its cached copy stays on the node through the dry run and is counted once.
    c = rpe_cluster()
    me = preemptor()
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    ev = c.preempt(me)
    assert "preemptor" not in victim_names(ev)


@pytest.mark.parametrize("kubelet_like", [False, True], ids=["alpha", "kubelet-like"])
def test_s_rpe_2_two_victims_when_the_resize_alone_fills_the_node(kubelet_like: bool) -> None:
    c = rpe_cluster(kubelet_like=kubelet_like)
    me = preemptor()
    c.pods += [
        running("victim-1", "node1", cpu="100m", memory="50", priority=LOW),
        running("victim-2", "node1", cpu="100m", memory="50", priority=LOW),
        me,
    ]
    assert victim_names(c.preempt(me)) == ["victim-1", "victim-2"]


def test_s_rpe_3_preemption_policy_never_preempts_nothing() -> None:
    c = rpe_cluster()
    me = preemptor()
    me.spec.preemption_policy = "Never"
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    ev = c.preempt(me)
    assert ev.candidate is None and ev.result is None  # no NNN change either
    assert ev.status.code is Code.UNSCHEDULABLE


def test_s_rpe_4_a_resize_that_fits_passes_filter_and_is_parked_at_permit() -> None:
    c = rpe_cluster()
    me = preemptor()
    c.pods.append(me)
    _, _, fit = c.cycle(me)
    assert fit == ["node1"]
    st = c.fwk.run_permit_plugins(CycleState(), me, "node1")
    assert (st.code, st.plugin, st.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        deferred_pod_scheduling.NAME,
        (deferred_pod_scheduling.WAITING_FOR_KUBELET,),
    )


def test_s_rpe_5_a_node_that_disables_resize_preemption_has_no_candidates() -> None:
    c = rpe_cluster("test-operator")
    me = preemptor()
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    _, statuses, _ = c.cycle(me)
    st = statuses.get("node1")
    # DeferredPodScheduling filters before NodeResourcesFit: the node is unresolvable.
    assert (st.code, st.plugin) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        deferred_pod_scheduling.NAME,
    )
    ev = c.preempt(me)
    assert ev.candidate is None


def test_victims_are_searched_on_the_pods_own_node_only() -> None:
    # node2 is empty and has room; a deferred pod cannot move there, nor preempt there.
    c = rpe_cluster()
    c.node("node2", "1", "1Gi")
    me = preemptor()
    c.pods += [
        running("victim-1", "node1", cpu="200m", priority=LOW),
        running("far-away", "node2", cpu="200m", priority=LOW),
        me,
    ]
    _, statuses, fit = c.cycle(me)
    assert fit == [] and statuses.get("node2").code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert victim_names(c.preempt(me)) == ["victim-1"]


def test_plugins_irrelevant_to_resources_do_not_stop_the_pods_own_node() -> None:
    # Cordoned and tainted: new pods stay off, the running pod's resize still preempts.
    c = Cluster()
    node = (
        make_node("node1")
        .capacity(cpu="300m", memory="300", pods="10")
        .taint("dedicated", "x", "NoSchedule")
        .unschedulable()
        .obj()
    )
    c.nodes.append(node)
    me = preemptor()
    me.spec.node_selector["zone"] = "nowhere"
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    assert victim_names(c.preempt(me)) == ["victim-1"]


def s_rpe_9(c: Cluster) -> types_pb2.Pod:
    """X = 1000m. Node 2X. Pod1 high: desired X, allocated/actual X/2. Pods 2-4 low: desired
    2X, allocated/actual X/2, all Deferred, started in that order (pod2 the most important of
    them, reprieved first). Returns pod1."""
    c.node("node1", "2000m", "1Gi")
    pod1 = preemptor("pod1", cpu="1000m", actual_cpu="500m", priority=HIGH)
    lows = [preemptor(f"pod{i}", cpu="2000m", actual_cpu="500m", priority=LOW) for i in (2, 3, 4)]
    for i, p in enumerate([pod1, *lows]):
        p.status.start_time.FromSeconds(1000 + i)
    # pod4 listed first: the reprieve order comes from the start times, not the node's list.
    c.pods += [lows[2], pod1, lows[0], lows[1]]
    return pod1


def test_s_rpe_9_alpha_accounting_preempts_every_deferred_low_pod() -> None:
    # Every low counts at 2X: with all three gone X fits, reprieving any gives 3X > 2X.
    c = Cluster()
    pod1 = s_rpe_9(c)
    assert victim_names(c.preempt(pod1)) == ["pod2", "pod3", "pod4"]


def test_s_rpe_9_kubelet_like_accounting_preempts_only_pod_4() -> None:
    # The lows count at what they hold, X/2: X + 1.5X > 2X does not fit; with all three gone
    # X fits; reprieving pod2 (1.5X) and pod3 (2X) fits, pod4 (2.5X) does not.
    c = Cluster(kubelet_like=True)
    pod1 = s_rpe_9(c)
    _, statuses, _ = c.cycle(pod1)
    st = statuses.get("node1")
    assert (st.code, st.reasons) == (Code.UNSCHEDULABLE, ("Insufficient cpu",))
    ev = c.preempt(pod1)
    assert victim_names(ev) == ["pod4"]
    assert ev.candidate is not None and ev.candidate.name == "node1"


def test_s_rpe_9_kubelet_like_accounting_for_a_low_pod_finds_no_victims() -> None:
    # pod2's own cycle: X/2 + X/2 + X/2 held by the others + its 2X > 2X, nothing lower.
    c = Cluster(kubelet_like=True)
    s_rpe_9(c)
    pod2 = next(p for p in c.pods if p.metadata.name == "pod2")
    ev = c.preempt(pod2)
    assert ev.candidate is None


def test_the_profiles_plugin_config_turns_kubelet_like_accounting_on() -> None:
    c = Cluster(kubelet_like=True)
    plugin = c.fwk.plugin(fit.NAME)
    assert isinstance(plugin, fit.Fit) and plugin.kubelet_like_resize_accounting
    plugin = Cluster().fwk.plugin(fit.NAME)
    assert isinstance(plugin, fit.Fit) and not plugin.kubelet_like_resize_accounting


def test_with_the_gate_off_a_deferred_pod_is_an_ordinary_bound_pod() -> None:
    # NodeName still pins it, nothing Skips, NodeResourcesFit counts it twice, Permit passes.
    c = Cluster(on=False)
    c.node("node1", "1", "1Gi")
    me = preemptor()
    c.pods.append(me)
    _, _, fit = c.cycle(me)
    assert fit == ["node1"]
    assert c.fwk.run_permit_plugins(CycleState(), me, "node1").is_success()


def test_post_filter_without_an_executor_reports_the_pods_own_node() -> None:
    c = rpe_cluster()
    me = preemptor()
    c.pods += [running("victim-1", "node1", cpu="200m", priority=LOW), me]
    state, statuses, _ = c.cycle(me)

    async def post_filter() -> tuple[PostFilterResult | None, Status]:
        return await c.fwk.run_post_filter_plugins(state, me, statuses)

    result, status = anyio.run(post_filter)
    # The scheduler ignores this nomination for a deferred pod (scheduler/schedule_one.py).
    assert result == PostFilterResult("node1") and status.code is Code.SUCCESS
