"""Preemption's dry run as a library: the Evaluator (kemu.scheduling.preemption) and its
DefaultPreemption policy, against upstream's pod priority (component-helpers corev1 PodPriority), RunFilterPluginsWithNominatedPods (pkg/scheduler/framework/runtime/framework.go), the nominator (pkg/scheduler/backend/queue/nominator.go), handleSchedulingFailure and DefaultPreemption (pkg/scheduler/framework/preemption/preemption.go) and scenarios S-PRE-12, -13, -16,
-17, -18.

Everything runs on what a simulation has: a default-profile Framework with its plugins over a
bare Snapshot built from objects, a Nominator, a FakeClock; no client, no queue, no informers
and no preemption executor (the API writes are tests/unit/scheduler/test_preemption_executor.py).
The plugin tests' FakeHandle is used where only new()'s argument checking and the
gate-dependent registration are looked at.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any, TypeVar

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.scheduling.events import ActionType, ClusterEvent, EventResource, QueueingHint
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.plugins import default_preemption
from kemu.scheduling.plugins.default_preemption import (
    NO_VICTIMS,
    DefaultPreemption,
    calculate_num_candidates,
    filter_pods_with_pdb_violation,
)
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.preemption import (
    CRITERIA,
    ONLY_CANDIDATE,
    PREEMPTION_BY_SCHEDULER,
    Candidate,
    Evaluator,
    NodePick,
    Victims,
    importance_key,
    lower_priority_nominated_pods,
    more_important_pod,
    pick_one_node_for_preemption,
    pod_terminating_by_preemption,
    violated_budgets,
)
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, unresolvable, unschedulable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle
from tests.unit.scheduling.preemption_builders import (
    NOW,
    NOW_NS,
    gates,
    mark_terminating,
    names,
    pdb,
    pod,
)

T = TypeVar("T")

# ---------------------------------------------------------------- the harness


class Sim:
    """A default-profile Framework over a Snapshot of the objects added so far, with a
    Nominator: nothing a scheduler process adds (no client, queue, informers or executor)."""

    def __init__(
        self, *, async_preemption: bool = False, feature_gates: FeatureGates | None = None
    ) -> None:
        self.clock = FakeClock()
        self.nominator = Nominator()
        registry = in_tree_registry()
        self.fwk = Framework(
            default_profile(registry),
            registry,
            options=FrameworkOptions(
                clock=self.clock, gates=feature_gates or gates(async_preemption=async_preemption)
            ),
            nominator=self.nominator,
        )
        self._nodes: dict[str, types_pb2.Node] = {}
        self._pods: dict[str, types_pb2.Pod] = {}
        self.snapshot = Snapshot()

    @property
    def plugin(self) -> DefaultPreemption:
        plugin = self.fwk.plugin(default_preemption.NAME)
        assert isinstance(plugin, DefaultPreemption)
        return plugin

    def node(self, name: str, cpu: str, memory: str = "64Gi", pods: str = "32") -> None:
        self._nodes[name] = make_node(name).capacity(cpu=cpu, memory=memory, pods=pods).obj()

    def add(
        self, p: types_pb2.Pod, *, terminating: bool = False, by_preemption: bool = True
    ) -> types_pb2.Pod:
        """Adds `p` (a uid if it has none); a bound pod counts on its node, being deleted
        gracefully if asked (a deletionTimestamp, and the DisruptionTarget condition when
        `by_preemption`)."""
        stored = types_pb2.Pod()
        stored.CopyFrom(p)
        if not stored.metadata.uid:
            stored.metadata.uid = f"uid-{stored.metadata.name}"
        if terminating:
            mark_terminating(stored, by_preemption=by_preemption)
        self._pods[stored.metadata.name] = stored
        return stored

    def nominate(self, p: types_pb2.Pod) -> None:
        """What the queue does for a pod with status.nominatedNodeName."""
        self.nominator.add_nominated_pod(PodInfo(p), None)

    def refresh(self) -> None:
        self.snapshot = Snapshot.from_objects(self._pods.values(), self._nodes.values())
        self.fwk.set_snapshot(self.snapshot)

    def node_info(self, name: str) -> NodeInfo:
        self.refresh()
        ni = self.snapshot.node_infos().get(name)
        assert ni is not None
        return ni

    def cycle(self, p: types_pb2.Pod) -> tuple[CycleState, NodeToStatus]:
        """The Filter half of a scheduling cycle (PreFilter, then every node through the
        two-pass filter, as the scheduler records rejections), which must find no node: its
        CycleState and the nodes' statuses."""
        self.refresh()
        state = CycleState()
        statuses = NodeToStatus()
        nodes = self.snapshot.list()
        _, status, _ = self.fwk.run_pre_filter_plugins(state, p, nodes)
        if not status.is_success():
            assert status.is_rejected(), status
            statuses.absent = status
            statuses.pre_filter_rejected = True
            return state, statuses
        for ni in nodes:
            status = self.fwk.run_filter_plugins_with_nominated_pods(state, p, ni)
            assert not status.is_success(), f"{p.metadata.name} fits on {ni.name}"
            statuses.set(ni.name, status)
        return state, statuses


def victims(*priorities: int, pdb: int = 0, started: float | None = None) -> Victims:
    return Victims(tuple(pod(f"v{i}", p, started=started) for i, p in enumerate(priorities)), pdb)


# ---------------------------------------------------------------- pickOneNodeForPreemption / S-PRE-13


@pytest.mark.parametrize(
    ("a", "b", "chosen"),
    [
        pytest.param(victims(1, pdb=1), victims(100, 100), "B", id="1-fewest-pdb-violations"),
        pytest.param(victims(5), victims(3, 3), "B", id="2-lowest-highest-priority"),
        pytest.param(victims(3, 1), victims(3, 2), "A", id="3-smallest-priority-sum"),
        pytest.param(
            victims(0, -(2**31)), victims(0), "B", id="4-equal-shifted-sums-fewer-victims"
        ),
        pytest.param(
            victims(-10, -10), victims(-10), "B", id="3-shift-makes-negative-priorities-count"
        ),
        pytest.param(
            victims(3, started=NOW - 3600),
            victims(3, started=NOW - 3300),
            "B",
            id="5-latest-earliest-start",
        ),
    ],
)
def test_s_pre_13_pick_one_node_for_preemption(
    a: Victims, b: Victims, chosen: str, request: pytest.FixtureRequest
) -> None:
    # The decision record names the criterion that decided: the id's number, upstream's order.
    criterion = CRITERIA[int(request.node.callspec.id[0]) - 1]
    assert pick_one_node_for_preemption({"A": a, "B": b}, NOW_NS) == NodePick(chosen, criterion)
    assert pick_one_node_for_preemption({"B": b, "A": a}, NOW_NS) == NodePick(chosen, criterion)


def test_s_pre_13_full_tie_takes_the_first_candidate() -> None:
    same = victims(3, 1, started=NOW - 60)
    first = "firstCandidate"
    assert pick_one_node_for_preemption({"B": same, "A": same, "C": same}, NOW_NS) == NodePick(
        "B", first
    )
    assert pick_one_node_for_preemption({"C": same, "A": same}, NOW_NS) == NodePick("C", first)
    assert pick_one_node_for_preemption({"B": same}, NOW_NS) == NodePick("B", ONLY_CANDIDATE)


def test_violated_budgets_names_the_budgets_each_victim_breaks() -> None:
    a = pod("a", 1, labels={"app": "web"})
    b = pod("b", 1, labels={"app": "web"})
    c = pod("c", 1, labels={"app": "db"})
    budgets = [
        pdb("web", 1, app="web"),  # two victims spend 2 of 1 allowed: broken
        pdb("db", 1, app="db"),  # one of one: kept
        pdb("everything", 0),  # an empty selector selects nothing
        pdb("web-disrupted", 1, disrupted=("a",), app="web"),  # a already counted: b alone
        pdb("elsewhere", 0, namespace="other", app="web"),
    ]
    assert violated_budgets([a, b, c], budgets) == (("default/web",), ("default/web",), ())
    assert violated_budgets([c], [pdb("db", 0, app="db")]) == (("default/db",),)


def test_lower_priority_nominated_pods_are_those_preemption_clears() -> None:
    nominator = Nominator()
    for name, priority in [("low", 1), ("equal", 5), ("high", 9)]:
        p = pod(name, priority)
        p.status.nominated_node_name = "n1"
        nominator.add_nominated_pod(PodInfo(p), "n1")
    preemptor = pod("preemptor", 5)
    assert names(lower_priority_nominated_pods(nominator, preemptor, "n1")) == ["low"]
    assert lower_priority_nominated_pods(nominator, preemptor, "n2") == []
    assert lower_priority_nominated_pods(None, preemptor, "n1") == []


def test_pick_one_node_with_no_candidates_is_empty() -> None:
    assert pick_one_node_for_preemption({}, NOW_NS) == NodePick("", "")


def test_pick_one_node_start_time_of_victims_without_one_is_now() -> None:
    # A's victim has not started (counts as now): its earliest start is the latest.
    a = victims(3)
    b = victims(3, started=NOW - 1)
    assert pick_one_node_for_preemption({"B": b, "A": a}, NOW_NS).node == "A"


# ---------------------------------------------------------------- MoreImportantPod importance


def test_more_important_pod_is_higher_priority_whatever_the_start_time() -> None:
    old_low = pod("old", 1, started=NOW - 1000)
    new_high = pod("new", 2, started=NOW - 1)
    assert more_important_pod(new_high, old_low, NOW_NS)
    assert not more_important_pod(old_low, new_high, NOW_NS)


def test_more_important_pod_on_equal_priority_is_the_one_started_earlier() -> None:
    earlier = pod("earlier", 5, started=NOW - 100)
    later = pod("later", 5, started=NOW - 10)
    assert more_important_pod(earlier, later, NOW_NS)
    assert not more_important_pod(later, earlier, NOW_NS)
    assert not more_important_pod(earlier, earlier, NOW_NS)


def test_a_pod_without_start_time_counts_as_now_least_important_among_equals() -> None:
    unstarted = pod("unstarted", 5)
    started = pod("started", 5, started=NOW - 1)
    assert more_important_pod(started, unstarted, NOW_NS)
    assert not more_important_pod(unstarted, started, NOW_NS)
    # ...but its priority still comes first.
    assert more_important_pod(pod("high", 6), started, NOW_NS)


def test_importance_key_sorts_most_important_first() -> None:
    pods = [
        pod("unstarted", 1),
        pod("t2", 1, started=NOW - 50),
        pod("t1", 1, started=NOW - 100),
        pod("prio2", 2),
        pod("negative", -5, started=NOW - 1000),
    ]
    ordered = sorted(pods, key=lambda p: importance_key(PodInfo(p), NOW_NS))
    assert names(ordered) == ["prio2", "t1", "t2", "unstarted", "negative"]


def test_start_time_criterion_looks_only_at_the_highest_priority_victims() -> None:
    # Tied on the first four criteria; A's oldest victim is of the lower priority, so it
    # does not count: A's earliest top-priority start is 300 s ago, B's 250 s ago.
    a = Victims(
        (
            pod("a", 5, started=NOW - 300),
            pod("b", 5, started=NOW - 200),
            pod("c", 1, started=NOW - 10_000),
        )
    )
    b = Victims(
        (
            pod("x", 5, started=NOW - 250),
            pod("y", 5, started=NOW - 250),
            pod("z", 1, started=NOW - 20_000),
        )
    )
    pick = pick_one_node_for_preemption({"A": a, "B": b}, NOW_NS)
    assert pick == NodePick("B", "latestStartTime")


# ---------------------------------------------------------------- SelectVictimsOnNode PDB split


def infos(*pods: types_pb2.Pod) -> list[PodInfo]:
    return [PodInfo(p) for p in pods]


def split(
    pods: list[PodInfo], pdbs: list[types_pb2.PodDisruptionBudget]
) -> tuple[list[str], list[str]]:
    violating, non_violating = filter_pods_with_pdb_violation(pods, pdbs)
    return names(pi.pod for pi in violating), names(pi.pod for pi in non_violating)


def web(name: str, **labels: str) -> types_pb2.Pod:
    return pod(name, 1, labels={"app": "web", **labels})


def test_pdb_budget_is_spent_pod_by_pod_in_order() -> None:
    pods = infos(web("w1"), web("w2"), pod("other", 1, labels={"app": "db"}), web("w3"))
    assert split(pods, [pdb("p", 1, app="web")]) == (["w2", "w3"], ["w1", "other"])
    assert split(pods, [pdb("p", 0, app="web")]) == (["w1", "w2", "w3"], ["other"])
    assert split(pods, [pdb("p", 3, app="web")]) == ([], ["w1", "w2", "other", "w3"])


def test_pdb_disrupted_pods_do_not_spend_the_budget() -> None:
    pods = infos(web("w1"), web("w2"), web("w3"))
    # w1 was already counted by the apiserver: w2 takes the one disruption left.
    assert split(pods, [pdb("p", 1, disrupted=("w1",), app="web")]) == (["w3"], ["w1", "w2"])


def test_pdb_of_another_namespace_or_with_an_empty_selector_is_ignored() -> None:
    pods = infos(web("w1"), web("w2"))
    assert split(pods, [pdb("p", 0, namespace="other", app="web")]) == ([], ["w1", "w2"])
    assert split(pods, [pdb("p", 0)]) == ([], ["w1", "w2"])


def test_pod_without_labels_never_violates() -> None:
    assert split(infos(pod("bare", 1)), [pdb("p", 0, app="web")]) == ([], ["bare"])


def test_a_pod_violates_if_any_of_its_pdbs_runs_out() -> None:
    pods = infos(web("w1", tier="a"), web("w2", tier="b"))
    pdbs = [pdb("roomy", 5, app="web"), pdb("tight", 0, tier="b")]
    assert split(pods, pdbs) == (["w2"], ["w1"])


# ---------------------------------------------------------------- calculate_num_candidates, new()


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "expected"),
    [
        (0, 10, 100, 0),
        (10, 10, 100, 10),  # small clusters: all potential nodes
        (100, 10, 100, 100),
        (150, 10, 100, 100),
        (1000, 10, 100, 100),
        (1001, 10, 100, 100),  # 100.1% rounds down
        (5000, 10, 100, 500),
        (50, 0, 5, 5),
        (200, 50, 0, 100),
        (3, 100, 1, 3),
    ],
)
def test_calculate_num_candidates(
    nodes: int, percentage: int, absolute: int, expected: int
) -> None:
    assert calculate_num_candidates(nodes, percentage, absolute) == expected


def test_new_accepts_valid_args_and_uses_them() -> None:
    plugin = default_preemption.new(
        {"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 0}, FakeHandle()
    )
    assert plugin.get_offset_and_num_candidates(200)[1] == 100
    assert default_preemption.new({}, FakeHandle()).get_offset_and_num_candidates(500)[1] == 100


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ({"minCandidateNodesPercentage": 101}, "minCandidateNodesPercentage"),
        ({"minCandidateNodesPercentage": -1}, "minCandidateNodesPercentage"),
        ({"minCandidateNodesAbsolute": -1}, "minCandidateNodesAbsolute"),
        (
            {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0},
            "minCandidateNodesPercentage and minCandidateNodesAbsolute cannot both be zero",
        ),
        ({"minCandidateNodesPercentage": "10"}, "minCandidateNodesPercentage: expected an int"),
        ({"minCandidateNodesAbsolute": 1.5}, "minCandidateNodesAbsolute: expected an integer"),
        ({"minCandidateNodesAbsolute": True}, "minCandidateNodesAbsolute: expected an integer"),
        ({"minCandidateNodes": 1}, 'unknown field "minCandidateNodes"'),
    ],
)
def test_new_rejects_bad_args_naming_the_field(args: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        default_preemption.new(args, FakeHandle())


def test_offset_is_random_within_the_potential_nodes() -> None:
    plugin = default_preemption.new({}, FakeHandle())
    offsets = {plugin.get_offset_and_num_candidates(7)[0] for _ in range(200)}
    assert offsets == set(range(7))


# ---------------------------------------------------------------- SelectVictimsOnNode victims on one node


def test_s_pre_12_victims_are_picked_greedily_by_importance() -> None:
    c = Sim()
    c.node("n1", cpu="5")
    c.add(pod("a", 1, node="n1", started=NOW - 100))
    c.add(pod("b", 1, node="n1", started=NOW - 50))
    c.add(pod("c", 2, "2", node="n1"))
    c.add(pod("d", 9, node="n1"))
    preemptor = c.add(pod("p", 5, "3"))
    state, statuses = c.cycle(preemptor)
    assert statuses.get("n1").code == Code.UNSCHEDULABLE

    found, violations, status = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), []
    )
    assert status.is_success()
    assert (names(found), violations) == (["c", "b"], 0)


def test_select_victims_leaves_the_snapshot_node_alone() -> None:
    c = Sim()
    c.node("n1", cpu="2")
    c.add(pod("low", 1, "2", node="n1"))
    preemptor = c.add(pod("p", 5, "2"))
    state, _ = c.cycle(preemptor)
    original = c.node_info("n1")
    found, _, _ = c.plugin.select_victims_on_node(state.clone(), preemptor, original.clone(), [])
    assert names(found) == ["low"]
    assert names(pi.pod for pi in original.pods) == ["low"]


def test_only_strictly_lower_priority_pods_are_victims() -> None:
    c = Sim()
    c.node("n1", cpu="2")
    c.add(pod("equal", 5, "2", node="n1"))
    preemptor = c.add(pod("p", 5, "2"))
    state, _ = c.cycle(preemptor)
    found, _, status = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), []
    )
    assert found == []
    assert status == unresolvable(NO_VICTIMS)


def test_node_that_does_not_fit_without_lower_priority_pods_is_useless() -> None:
    c = Sim()
    c.node("n1", cpu="4")
    c.add(pod("low", 1, "1", node="n1"))
    c.add(pod("high", 9, "3", node="n1"))
    preemptor = c.add(pod("p", 5, "2"))
    state, _ = c.cycle(preemptor)
    found, _, status = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), []
    )
    assert found == []
    assert status.code == Code.UNSCHEDULABLE
    assert status.plugin == "NodeResourcesFit"


def test_s_pre_16a_pdb_pods_reprieved_before_mid_priority() -> None:
    c = Sim()
    c.node("n1", cpu="500m", memory="500")
    for name in ("low-pod1", "low-pod2"):
        p = make_pod(name).priority(100).req(cpu="100m", memory="100")
        c.add(p.labels(foo="bar").node("n1").obj())
    c.add(make_pod("mid-pod3").priority(200).req(cpu="100m", memory="100").node("n1").obj())
    preemptor = c.add(make_pod("p").priority(300).req(cpu="300m", memory="200").obj())
    budget = pdb("pdb", 0, foo="bar")
    state, _ = c.cycle(preemptor)
    found, violations, status = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), [budget]
    )
    assert status.is_success()
    assert (names(found), violations) == (["mid-pod3"], 0)

    # Without the PDB the most important pod is reprieved first; one low pod goes.
    found, violations, _ = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), []
    )
    assert (names(found), violations) == (["low-pod2"], 0)


def test_pdb_violating_victims_are_counted_and_victims_sorted_by_importance() -> None:
    c = Sim()
    c.node("n1", cpu="3")
    c.add(pod("guarded", 1, node="n1", started=NOW - 100, labels={"app": "web"}))
    c.add(pod("free-old", 1, node="n1", started=NOW - 200))
    c.add(pod("free-mid", 2, node="n1"))
    preemptor = c.add(pod("p", 5, "3"))
    state, _ = c.cycle(preemptor)
    found, violations, status = c.plugin.select_victims_on_node(
        state.clone(), preemptor, c.node_info("n1").clone(), [pdb("pdb", 0, app="web")]
    )
    assert status.is_success()
    # All three must go; the guarded one is counted, and the list is by importance.
    assert (names(found), violations) == (["free-mid", "free-old", "guarded"], 1)


# ---------------------------------------------------------------- RunFilterPluginsWithNominatedPods / S-PRE-18


def nominated_pods_scenario(c: Sim, h1_priority: int) -> list[str]:
    c.node("n1", cpu="4")
    c.add(pod("l1", 1, "2", node="n1", started=NOW - 100))
    c.add(pod("l2", 1, "2", node="n1", started=NOW - 50))
    h1 = make_pod("h1").priority(h1_priority).req(cpu="2").nominated("n1").obj()
    h1 = c.add(h1)
    h2 = c.add(pod("h2", 100, "2"))
    c.nominate(h1)
    state, _ = c.cycle(h2)
    found, _, status = c.plugin.select_victims_on_node(
        state.clone(), h2, c.node_info("n1").clone(), []
    )
    assert status.is_success()
    return names(found)


def test_s_pre_18_higher_priority_nominated_pod_needs_room_too() -> None:
    c = Sim()
    # h1 (200) reserves 2 cpu: h2 (100) fits only once both low pods are gone.
    assert nominated_pods_scenario(c, 200) == ["l1", "l2"]


def test_s_pre_18_equal_priority_nominated_pod_needs_room_too() -> None:
    c = Sim()
    assert nominated_pods_scenario(c, 100) == ["l1", "l2"]


def test_s_pre_18_lower_priority_nomination_is_ignored() -> None:
    c = Sim()
    assert nominated_pods_scenario(c, 50) == ["l2"]


def test_s_pre_18_a_nominated_pod_that_leaves_no_room_makes_the_node_useless() -> None:
    c = Sim()
    c.node("n1", cpu="4")
    c.add(pod("l1", 1, "4", node="n1"))
    h1 = c.add(make_pod("h1").priority(200).req(cpu="3").nominated("n1").obj())
    h2 = c.add(pod("h2", 100, "2"))
    c.nominate(h1)
    state, _ = c.cycle(h2)
    found, _, status = c.plugin.select_victims_on_node(
        state.clone(), h2, c.node_info("n1").clone(), []
    )
    assert found == []
    assert status.code == Code.UNSCHEDULABLE


# ---------------------------------------------------------------- Evaluator.Preempt eligibility / S-PRE-17


def test_preemption_policy_never_is_not_eligible() -> None:
    c = Sim()
    p = make_pod("p").priority(10).preemption_policy("Never").obj()
    assert c.plugin.pod_eligible_to_preempt_others(p, SUCCESS) == (
        False,
        "not eligible due to preemptionPolicy=Never.",
    )


def terminating_on_nominated_node(
    c: Sim, *, by_preemption: bool = True, priority: int = 1
) -> types_pb2.Pod:
    c.node("n1", cpu="2")
    c.add(pod("victim", priority, "2", node="n1"), terminating=True, by_preemption=by_preemption)
    c.refresh()
    return make_pod("p").priority(10).nominated("n1").obj()


def test_s_pre_17_terminating_victim_on_the_nominated_node_blocks_preemption() -> None:
    c = Sim()
    p = terminating_on_nominated_node(c)
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("Insufficient cpu")) == (
        False,
        "not eligible due to a terminating pod on the nominated node.",
    )


def test_s_pre_17_pod_deleted_for_another_reason_does_not_block() -> None:
    c = Sim()
    p = terminating_on_nominated_node(c, by_preemption=False)
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


def test_terminating_pod_of_equal_priority_does_not_block() -> None:
    c = Sim()
    p = terminating_on_nominated_node(c, priority=10)
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


@pytest.mark.parametrize(
    ("minor", "overrides", "blocks"),
    [
        (25, {}, True),
        (26, {}, True),
        (26, {"PodDisruptionConditions": False}, True),
        (27, {}, False),
        (27, {"PodDisruptionConditions": False}, True),
        (30, {"PodDisruptionConditions": False}, True),
        (31, {}, False),
        (34, {}, False),
    ],
)
def test_which_terminating_pods_block_by_version(
    minor: int, overrides: dict[str, bool], blocks: bool
) -> None:
    """kubernetes#114623 (1.27): before it any terminating lower-priority pod on the nominated
    node makes the preemptor wait; after it only one terminating by preemption
    (DisruptionTarget=True/PreemptionByScheduler), unless PodDisruptionConditions is off."""
    c = Sim(feature_gates=FeatureGates.for_version(Version(1, minor), overrides))
    p = terminating_on_nominated_node(c, by_preemption=False)
    want = (False, "not eligible due to a terminating pod on the nominated node.")
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (
        want if blocks else (True, "")
    )
    # A pod terminating with the condition blocks at every version.
    c = Sim(feature_gates=FeatureGates.for_version(Version(1, minor), overrides))
    p = terminating_on_nominated_node(c)
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == want


def test_s_pre_17_unresolvable_nominated_node_is_eligible() -> None:
    c = Sim()
    p = terminating_on_nominated_node(c)
    status = unresolvable("node(s) had untolerated taint")
    assert c.plugin.pod_eligible_to_preempt_others(p, status) == (True, "")


def test_nominated_node_missing_from_the_snapshot_is_eligible() -> None:
    c = Sim()
    terminating_on_nominated_node(c)
    p = make_pod("p").priority(10).nominated("gone").obj()
    assert c.plugin.pod_eligible_to_preempt_others(p, unschedulable("x")) == (True, "")


# ---------------------------------------------------------------- Evaluator.Preempt dry run


def dry_run_cluster(c: Sim, guarded: set[int], n: int = 4) -> types_pb2.Pod:
    """Nodes n0..n{n-1}, each full with one low pod; those in `guarded` are PDB-protected;
    an extra node "z" holds only a high-priority pod (never a candidate)."""
    for i in range(n):
        c.node(f"n{i}", cpu="1")
        labels = {"app": "guarded"} if i in guarded else {"app": f"free{i}"}
        c.add(pod(f"low{i}", 1, node=f"n{i}", labels=labels))
    c.node("z", cpu="1")
    c.add(pod("high", 100, node="z"))
    return c.add(pod("p", 10))


def potential(c: Sim, *nodes: str) -> list[NodeInfo]:
    c.refresh()
    out = []
    for name in nodes:
        ni = c.snapshot.node_infos().get(name)
        assert ni is not None
        out.append(ni)
    return out


GUARD = [pdb("guard", 0, app="guarded")]


def test_dry_run_stops_at_num_candidates_once_one_does_not_violate() -> None:
    c = Sim()
    p = dry_run_cluster(c, guarded={0, 1})
    state, _ = c.cycle(p)
    nodes = potential(c, "n0", "n1", "n2", "n3", "z")
    found, statuses, errors = c.plugin.evaluator.dry_run_preemption(state, p, nodes, GUARD, 0, 2)
    # n0, n1 violate (2 = num, but none is clean yet), n2 is clean: stop before n3 and z.
    assert [(x.name, x.victims.num_pdb_violations) for x in found] == [
        ("n2", 0),
        ("n0", 1),
        ("n1", 1),
    ]
    assert (len(statuses), errors) == (0, [])


def test_dry_run_with_only_violating_candidates_scans_every_node() -> None:
    c = Sim()
    p = dry_run_cluster(c, guarded={0, 1, 2, 3})
    state, _ = c.cycle(p)
    nodes = potential(c, "n0", "n1", "n2", "n3", "z")
    found, statuses, errors = c.plugin.evaluator.dry_run_preemption(state, p, nodes, GUARD, 0, 2)
    assert [x.name for x in found] == ["n0", "n1"]
    # The scan went on to the last node, looking for one without violations.
    assert [(name, s.message()) for name, s in statuses.items()] == [("z", NO_VICTIMS)]
    assert errors == []


@pytest.mark.parametrize(
    ("offset", "num", "expected"),
    [(0, 1, ["n0"]), (2, 1, ["n2"]), (3, 2, ["n3", "n0"]), (1, 4, ["n1", "n2", "n3", "n0"])],
)
def test_dry_run_starts_at_the_offset_and_wraps(offset: int, num: int, expected: list[str]) -> None:
    c = Sim()
    p = dry_run_cluster(c, guarded=set())
    state, _ = c.cycle(p)
    nodes = potential(c, "n0", "n1", "n2", "n3")
    found, _, _ = c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], offset, num)
    assert [x.name for x in found] == expected
    assert [names(x.victims.pods) for x in found] == [[f"low{n[1]}"] for n in expected]


def test_dry_run_a_node_where_the_pod_fits_without_victims_is_an_error() -> None:
    c = Sim()
    c.node("n0", cpu="4")
    c.add(pod("low", 1, node="n0"))
    p = c.add(pod("p", 10))
    nodes = potential(c, "n0")
    state = CycleState()
    _, pre_status, _ = c.fwk.run_pre_filter_plugins(state, p, nodes)
    assert pre_status.is_success()
    found, statuses, errors = c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], 0, 1)
    message = 'expected at least one victim pod on node "n0"'
    assert found == []
    assert statuses.get("n0").code == Code.ERROR
    assert statuses.get("n0").message() == message
    assert [e.message() for e in errors] == [message]


def test_dry_run_runs_on_copies_of_the_state_and_nodes() -> None:
    c = Sim()
    p = dry_run_cluster(c, guarded=set(), n=2)
    state, _ = c.cycle(p)
    nodes = potential(c, "n0", "n1")
    c.plugin.evaluator.dry_run_preemption(state, p, nodes, [], 0, 2)
    assert [names(pi.pod for pi in ni.pods) for ni in nodes] == [["low0"], ["low1"]]
    assert c.fwk.run_filter_plugins(state, p, nodes[0]).code == Code.UNSCHEDULABLE


@pytest.mark.parametrize(
    ("deleting", "condition", "expected"),
    [
        (True, ("True", PREEMPTION_BY_SCHEDULER), True),
        (True, ("True", "DeletionByTaintManager"), False),
        (True, ("False", PREEMPTION_BY_SCHEDULER), False),
        (True, None, False),
        (False, ("True", PREEMPTION_BY_SCHEDULER), False),
    ],
)
def test_pod_terminating_by_preemption(
    deleting: bool, condition: tuple[str, str] | None, expected: bool
) -> None:
    p = pod("p", 1)
    if deleting:
        p.metadata.deletion_timestamp.FromSeconds(NOW)
    if condition is not None:
        p.status.conditions.add(type=DISRUPTION_TARGET, status=condition[0], reason=condition[1])
    assert pod_terminating_by_preemption(p) is expected


def test_events_to_register_depends_on_the_async_gate() -> None:
    sync_handle = FakeHandle()
    sync_handle.fake_gates = gates(async_preemption=False)
    assert default_preemption.new({}, sync_handle).events_to_register() == []

    async_handle = FakeHandle()
    async_handle.fake_gates = gates(async_preemption=True)
    (registered,) = default_preemption.new({}, async_handle).events_to_register()
    assert registered.event == ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE)
    assert registered.hint is not None
    assert registered.hint(pod("p", 1), pod("v", 0), None) == QueueingHint.SKIP


# ---------------------------------------------------------------- Evaluator odds and ends


def test_select_candidate_returns_a_single_candidate_as_is() -> None:
    c = Sim()
    only = Candidate("x", victims(5))
    assert c.plugin.evaluator.select_candidate([only]) is only
    assert c.plugin.evaluator.select_candidate([]) is None
    best = c.plugin.evaluator.select_candidate(
        [Candidate("a", victims(5)), Candidate("b", victims(3, 3))]
    )
    assert best is not None and best.name == "b"


# ---------------------------------------------------------------- as a simulation uses it


def full_nodes() -> tuple[list[types_pb2.Node], list[types_pb2.Pod]]:
    """Two full nodes: "a" holds two low pods of 2 cpu, "b" a low pod of 3 cpu next to a
    high-priority one of 1 cpu. A 3-cpu pod of priority 100 needs both of a's pods gone, or
    b's low one, which a PDB guards."""
    nodes = [make_node(n).capacity(cpu="4", memory="64Gi", pods="32").obj() for n in ("a", "b")]
    pods = [
        pod("a-low-1", 1, "2", node="a", started=NOW - 100),
        pod("a-low-2", 1, "2", node="a", started=NOW - 50),
        pod("b-low", 1, "3", node="b", labels={"app": "guarded"}),
        pod("b-high", 200, "1", node="b"),
    ]
    return nodes, pods


def filter_statuses(fwk: Framework, state: CycleState, p: types_pb2.Pod) -> NodeToStatus:
    """PreFilter and Filter over every node of the framework's snapshot; none may fit."""
    nodes = fwk.snapshot_shared_lister().node_infos().list()
    _, status, _ = fwk.run_pre_filter_plugins(state, p, nodes)
    assert status.is_success()
    statuses = NodeToStatus()
    for ni in nodes:
        status = fwk.run_filter_plugins_with_nominated_pods(state, p, ni)
        assert status.code == Code.UNSCHEDULABLE
        statuses.set(ni.name, status)
    return statuses


def test_dry_run_on_a_bare_snapshot_picks_a_node_and_its_victims() -> None:
    nodes, pods = full_nodes()
    snapshot = Snapshot.from_objects(pods, nodes)
    registry = in_tree_registry()
    fwk = Framework(default_profile(registry), registry, snapshot=snapshot)
    plugin = fwk.plugin(default_preemption.NAME)
    assert isinstance(plugin, DefaultPreemption)
    evaluator = Evaluator(default_preemption.NAME, fwk, plugin)
    preemptor = pod("p", 100, "3")
    state = CycleState()
    statuses = filter_statuses(fwk, state, preemptor)

    evaluation = evaluator.evaluate(state, preemptor, statuses, [])

    # b: one victim (smaller shifted sum of priorities) beats a's two.
    assert evaluation.result == PostFilterResult("b")
    assert evaluation.status == SUCCESS
    assert evaluation.candidate is not None
    assert evaluation.candidate.name == "b"
    assert names(evaluation.candidate.victims.pods) == ["b-low"]
    assert evaluation.candidate.victims.num_pdb_violations == 0
    # Only copies were changed.
    assert [names(pi.pod for pi in ni.pods) for ni in snapshot.list()] == [
        ["a-low-1", "a-low-2"],
        ["b-low", "b-high"],
    ]


def test_dry_run_on_a_bare_snapshot_takes_the_pdbs_it_is_given() -> None:
    nodes, pods = full_nodes()
    snapshot = Snapshot.from_objects(pods, nodes)
    registry = in_tree_registry()
    fwk = Framework(default_profile(registry), registry, snapshot=snapshot)
    plugin = fwk.plugin(default_preemption.NAME)
    assert isinstance(plugin, DefaultPreemption)
    preemptor = pod("p", 100, "3")
    state = CycleState()
    statuses = filter_statuses(fwk, state, preemptor)
    guard = [pdb("guard", 0, app="guarded")]

    evaluation = plugin.evaluator.evaluate(state, preemptor, statuses, guard)

    # Fewest PDB violations comes first: a's two unguarded victims now beat b's guarded one.
    assert evaluation.candidate is not None
    assert evaluation.candidate.name == "a"
    assert names(evaluation.candidate.victims.pods) == ["a-low-1", "a-low-2"]
    assert evaluation.candidate.victims.num_pdb_violations == 0


def test_post_filter_without_an_executor_nominates_and_writes_nothing() -> None:
    c = Sim(async_preemption=True)
    nodes, pods = full_nodes()
    for n in nodes:
        c.node(n.metadata.name, cpu="4")
    for p in pods:
        c.add(p)
    preemptor = c.add(pod("p", 100, "3"))
    state, statuses = c.cycle(preemptor)

    result, status = anyio_run(c.fwk.run_post_filter_plugins(state, preemptor, statuses))

    assert (result, status) == (PostFilterResult("b"), SUCCESS)
    assert names(pi.pod for pi in c.node_info("b").pods) == ["b-low", "b-high"]
    # Nothing runs in the background, so nothing holds the pod at PreEnqueue.
    assert c.plugin.pre_enqueue(preemptor) == SUCCESS
    assert c.fwk.run_pre_enqueue_plugins(preemptor) == SUCCESS


def anyio_run(coro: Coroutine[Any, Any, T]) -> T:
    """Runs a PostFilter (async, as upstream's extension point) from a synchronous test."""

    async def main() -> T:
        return await coro

    return anyio.run(main)
