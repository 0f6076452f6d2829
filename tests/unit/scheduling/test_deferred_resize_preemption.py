"""KEP-5836's cycle and preemption dry run, by hand, on the scenario shapes of reference §8.3
(S-RPE-1..5) and the KEP's over-preemption example (S-RPE-9): a default-profile Framework with
resize preemption on, over a Snapshot where the deferred pod is on its node at
max(desired, allocated, actual), as the cache counts it. No scheduler process: the cycle is
PreFilter + Filter over every node, PostFilter is the Evaluator without an executor (it reports
the node it would nominate and the victims), Permit is the framework's."""

from __future__ import annotations

import anyio

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins import default_preemption, deferred_pod_scheduling
from kemu.scheduling.plugins.default_preemption import DefaultPreemption
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.preemption import Evaluation
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import Code, Status, unresolvable
from kemu.scheduling.types import PostFilterResult
from kemu.testing.builders import make_node
from tests.unit.scheduling.deferred_builders import preemptor, resize_gates, running

LOW, HIGH = 0, 1000


class Cluster:
    def __init__(self, *, on: bool = True) -> None:
        registry = in_tree_registry()
        self.fwk = Framework(
            default_profile(registry),
            registry,
            clock=FakeClock(),
            gates=resize_gates(on),
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


def rpe_cluster(*disabled_by: str) -> Cluster:
    c = Cluster()
    c.node("node1", "300m", "300", *disabled_by)
    return c


def test_s_rpe_1_one_lower_priority_victim_makes_room() -> None:
    c = rpe_cluster()
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


def test_s_rpe_2_two_victims_when_the_resize_alone_fills_the_node() -> None:
    c = rpe_cluster()
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


def test_s_rpe_9_alpha_accounting_preempts_every_deferred_low_pod() -> None:
    # X = 1000m. Node 2X. Pod1 high: desired X, allocated/actual X/2. Pods 2-4 low: desired 2X,
    # allocated/actual X/2, all Deferred. Every low counts at 2X: reprieving any gives 3X.
    c = Cluster()
    c.node("node1", "2000m", "1Gi")
    pod1 = preemptor("pod1", cpu="1000m", actual_cpu="500m", priority=HIGH)
    lows = [preemptor(f"pod{i}", cpu="2000m", actual_cpu="500m", priority=LOW) for i in (2, 3, 4)]
    c.pods += [pod1, *lows]
    assert victim_names(c.preempt(pod1)) == ["pod2", "pod3", "pod4"]


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
