"""KEP-5732's placements: kemu/scheduling/placement.py (generation, scoring, the algorithm's
choice) and its plugins TopologyPlacementGenerator, PodGroupPodsCount and NodeResourcesFit's
ScorePlacement (upstream topologyaware/topology_placement.go,
podgrouppodscount/podgroup_pods_count.go, schedule_one_podgroup.go)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GENERIC_WORKLOAD, FeatureGates
from kemu.component.version import Version
from kemu.scheduling.emulation import node_pool_placement
from kemu.scheduling.interface import (
    CycleState,
    Placement,
    PodGroupAssignments,
    ProposedAssignment,
)
from kemu.scheduling.placement import (
    AT_MOST_ONE_GENERATOR,
    best_placement,
    nominated_placement,
    run_placement_generate_plugins,
    run_placement_score_plugins,
    schedule_in_placements,
)
from kemu.scheduling.plugins import node_resources_fit, pod_group_pods_count, topology_placement
from kemu.scheduling.pod_group_state import GroupMembership, PodGroupKey, PodGroupStates
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, Status
from kemu.scheduling.types import NodeInfo
from kemu.testing.builders import make_gang_pod_group, make_node, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory

KEY = PodGroupKey("default", "pg")
RACK = "example.com/rack"


def _nodes(*specs: tuple[str, str | None]) -> list[NodeInfo]:
    out = []
    for name, rack in specs:
        b = make_node(name).capacity(cpu="4", memory="8Gi", pods="10")
        if rack is not None:
            b = b.label(RACK, rack)
        out.append(NodeInfo(b.obj()))
    return out


def _pod_group(topology: str | None) -> types_pb2.PodGroup:
    pg = make_gang_pod_group("pg", 2)
    if topology is not None:
        pg.spec.scheduling_constraints.topology.add(key=topology)
    return pg


def _handle(nodes: list[NodeInfo], pg: types_pb2.PodGroup) -> FakeHandle:
    handle = FakeHandle(nodes=nodes, informers=FakeInformerFactory(pod_groups=[pg]))
    handle.fake_gates = FeatureGates.for_version(Version(1, 37), {GENERIC_WORKLOAD: True})
    handle.pod_groups = PodGroupStates(GroupMembership.of(handle.fake_gates), handle.fake_clock)
    return handle


def _generate(
    handle: FakeHandle, nodes: list[NodeInfo]
) -> tuple[list[tuple[str, list[str]]], Status]:
    plugin = topology_placement.new({}, handle)
    placements, status = plugin.generate_placements(CycleState(), KEY, Placement("", tuple(nodes)))
    return [(p.name, [n.name for n in p.nodes]) for p in placements], status


def test_topology_placement_one_placement_per_domain_of_the_key() -> None:
    nodes = _nodes(("n1", "rack-b"), ("n2", "rack-a"), ("n3", "rack-b"), ("n4", None))
    placements, status = _generate(_handle(nodes, _pod_group(RACK)), nodes)
    assert status.is_success()
    # Nodes without the label are in no placement; kemu orders them by domain.
    assert placements == [("rack-a", ["n2"]), ("rack-b", ["n1", "n3"])]


def test_topology_placement_without_constraints_is_the_parent() -> None:
    nodes = _nodes(("n1", "rack-a"), ("n2", None))
    placements, status = _generate(_handle(nodes, _pod_group(None)), nodes)
    assert status.is_success() and placements == [("", ["n1", "n2"])]


def test_topology_placement_scheduled_members_pin_their_domain() -> None:
    nodes = _nodes(("n1", "rack-a"), ("n2", "rack-b"), ("n3", "rack-b"))
    handle = _handle(nodes, _pod_group(RACK))
    assert handle.pod_groups is not None
    bound = make_pod("m0").uid("m0").pod_group("pg").node("n3").obj()
    handle.pod_groups.add_pod(bound)
    placements, status = _generate(handle, nodes)
    assert status.is_success() and placements == [("rack-b", ["n2", "n3"])]
    # An assumed member counts with its node too; one in another domain is an error.
    other = make_pod("m1").uid("m1").pod_group("pg").obj()
    handle.pod_groups.add_pod(other)
    assumed = make_pod("m1").uid("m1").pod_group("pg").node("n1").obj()
    handle.pod_groups.assume_pod(assumed)
    _, status = _generate(handle, nodes)
    assert status.code is Code.ERROR
    assert status.message() == (
        "cannot determine domain for already scheduled pods: more than 1 domain found for pod "
        "group: rack-a, rack-b"
    )


@dataclass
class _Gen:
    placements: list[list[str]]
    NAME: str = "Gen"

    def name(self) -> str:
        return self.NAME

    def generate_placements(
        self, state: CycleState, group: PodGroupKey, parent: Placement
    ) -> tuple[list[Placement], Status]:
        by_name = {n.name: n for n in parent.nodes}
        return [
            Placement("+".join(p), tuple(by_name[n] for n in p)) for p in self.placements
        ], SUCCESS


def test_generate_runs_the_parent_alone_without_plugins_and_merges_at_1_37() -> None:
    nodes = _nodes(("n1", None), ("n2", None), ("n3", None))
    placements, status = run_placement_generate_plugins(
        [], CycleState(), KEY, nodes, Version(1, 36)
    )
    assert status.is_success() and [len(p.nodes) for p in placements] == [3]
    a = _Gen([["n1", "n2"], ["n3"]])
    b = _Gen([["n2", "n3"]])
    _, status = run_placement_generate_plugins([a, b], CycleState(), KEY, nodes, Version(1, 36))
    assert status.code is Code.ERROR and status.message() == AT_MOST_ONE_GENERATOR
    placements, status = run_placement_generate_plugins(
        [a, b], CycleState(), KEY, nodes, Version(1, 37)
    )
    # The non-empty intersections of the plugins' placements.
    assert status.is_success()
    assert [[n.name for n in p.nodes] for p in placements] == [["n2"], ["n3"]]


def test_pod_group_pods_count_scores_scheduled_plus_proposed_normalized() -> None:
    nodes = _nodes(("n1", "a"), ("n2", "b"))
    handle = _handle(nodes, _pod_group(RACK))
    assert handle.pod_groups is not None
    handle.pod_groups.add_pod(make_pod("s").uid("s").pod_group("pg").node("n1").obj())
    plugin = pod_group_pods_count.new({}, handle)
    pod = make_pod("p").obj()
    one = PodGroupAssignments(Placement("a", (nodes[0],)), (ProposedAssignment(pod, "n1"),))
    three = PodGroupAssignments(
        Placement("b", (nodes[1],)), tuple(ProposedAssignment(pod, "n2") for _ in range(3))
    )
    totals, status = run_placement_score_plugins([(plugin, 2)], CycleState(), KEY, [one, three])
    # (1+1) and (1+3) members, normalized against 4, times the weight 2.
    assert status.is_success() and totals == [100, 200]


def test_node_resources_fit_scores_placements_most_allocated() -> None:
    nodes = _nodes(("n1", "a"), ("n2", "b"))
    busy = make_pod("busy").req(cpu="2", memory="4Gi").node("n2").obj()
    nodes[1].add_pod(busy)
    fit = node_resources_fit.new({}, FakeHandle())
    pod = make_pod("p").req(cpu="1", memory="2Gi").obj()
    empty = PodGroupAssignments(Placement("a", (nodes[0],)), (ProposedAssignment(pod, "n1"),))
    fuller = PodGroupAssignments(Placement("b", (nodes[1],)), (ProposedAssignment(pod, "n2"),))
    a, _ = fit.score_placement(CycleState(), KEY, empty)
    b, _ = fit.score_placement(CycleState(), KEY, fuller)
    assert (a, b) == (25, 75)  # bin-packing: the fuller placement wins


@dataclass
class _Run:
    status: Status
    members: tuple[ProposedAssignment, ...] = ()

    def proposed(self) -> tuple[ProposedAssignment, ...]:
        return self.members


@dataclass
class _Evaluator:
    snapshot: Snapshot
    fits: dict[frozenset[str], bool]
    seen: list[list[str]] = field(default_factory=list)

    def __call__(self) -> _Run:
        names = [n.name for n in self.snapshot.nodes_in_placement()]
        self.seen.append(names)
        if self.fits.get(frozenset(names)):
            pod = make_pod("p").obj()
            return _Run(SUCCESS, (ProposedAssignment(pod, names[0]),))
        return _Run(Status(Code.UNSCHEDULABLE, ("pod group is unschedulable",)))


def _snapshot_and_placements() -> tuple[Snapshot, list[Placement]]:
    objs = [make_node(f"n{i}").label(RACK, f"r{i % 2}").obj() for i in range(4)]
    snapshot = Snapshot.from_objects([], objs)
    by = {n.name: n for n in snapshot.list()}
    r0 = Placement("r0", (by["n0"], by["n2"]))
    r1 = Placement("r1", (by["n1"], by["n3"]))
    return snapshot, [r0, r1]


def test_no_feasible_placement_reports_the_first() -> None:
    snapshot, placements = _snapshot_and_placements()
    evaluate = _Evaluator(snapshot, {})
    outcome = schedule_in_placements(
        placements, snapshot, evaluate, lambda c: (None, Status(Code.ERROR))
    )
    assert evaluate.seen == [["n0", "n2"], ["n1", "n3"]]
    assert outcome.status.code is Code.UNSCHEDULABLE
    assert outcome.status.message() == (
        "0/2 placements are available, first placement status: pod group is unschedulable"
    )
    assert snapshot.num_nodes() == 4 and len(snapshot.nodes_in_placement()) == 4


def test_one_feasible_placement_is_taken_several_are_scored() -> None:
    snapshot, placements = _snapshot_and_placements()
    only_r1 = _Evaluator(snapshot, {frozenset({"n1", "n3"}): True})
    outcome = schedule_in_placements(
        placements, snapshot, only_r1, lambda c: (None, Status(Code.ERROR))
    )
    assert outcome.status.is_success() and outcome.placement is placements[1]
    both = _Evaluator(snapshot, {frozenset({"n0", "n2"}): True, frozenset({"n1", "n3"}): True})
    scored: list[list[str]] = []

    def score(candidates: list[PodGroupAssignments]) -> tuple[Placement | None, Status]:
        scored.append([c.placement.name for c in candidates])
        return candidates[0].placement, SUCCESS

    outcome = schedule_in_placements(placements, snapshot, both, score)
    assert scored == [["r0", "r1"]] and outcome.placement is placements[0]


def test_the_nominated_placement_goes_first_and_alone_when_it_fits() -> None:
    snapshot, placements = _snapshot_and_placements()
    nominated = nominated_placement(placements, frozenset({"n3"}))
    assert nominated is placements[1]
    assert nominated_placement(placements, frozenset({"n0", "n3"})) is None
    both = _Evaluator(snapshot, {frozenset({"n0", "n2"}): True, frozenset({"n1", "n3"}): True})
    outcome = schedule_in_placements(
        placements, snapshot, both, lambda c: (None, Status(Code.ERROR)), nominated=nominated
    )
    assert both.seen == [["n1", "n3"]] and outcome.placement is nominated


def test_best_placement_breaks_ties_at_random() -> None:
    _, placements = _snapshot_and_placements()
    candidates = [PodGroupAssignments(p, ()) for p in placements]
    assert best_placement(candidates, [10, 20], random.Random(0)) is placements[1]
    picks = {best_placement(candidates, [5, 5], random.Random(s)).name for s in range(20)}
    assert picks == {"r0", "r1"}


def test_node_pool_placement_keeps_the_pools_nodes() -> None:
    objs = [make_node("n1").label("pool", "a").obj(), make_node("n2").label("pool", "b").obj()]
    parent = Placement("", tuple(NodeInfo(n) for n in objs))
    plugin = node_pool_placement.new({}, FakeHandle())
    placements, status = plugin.generate_placements(CycleState(), KEY, parent)
    assert status.is_success()
    assert [(p.name, [n.name for n in p.nodes]) for p in placements] == [("pool-a", ["n1"])]
    none = node_pool_placement.new({"pool": "c"}, FakeHandle())
    _, status = none.generate_placements(CycleState(), KEY, parent)
    assert status.code is Code.UNSCHEDULABLE and status.message() == "no nodes in pool c"


def test_the_snapshots_assumed_placement() -> None:
    snapshot, placements = _snapshot_and_placements()
    snapshot.assume_placement(placements[0].node_names())
    assert [n.name for n in snapshot.nodes_in_placement()] == ["n0", "n2"]
    assert snapshot.in_placement("n2") and not snapshot.in_placement("n1")
    assert snapshot.num_nodes() == 4  # list() keeps every node
    # Every node is no restriction (the parent placement of a group without constraints).
    snapshot.assume_placement(frozenset(n.name for n in snapshot.list()))
    assert snapshot.nodes_in_placement() is snapshot.list()
    snapshot.forget_placement()
    assert snapshot.nodes_in_placement() is snapshot.list()


def test_a_nested_algorithm_puts_the_enclosing_placement_back() -> None:
    snapshot, placements = _snapshot_and_placements()
    outer = frozenset({"n0", "n1", "n2"})
    snapshot.assume_placement(outer)
    evaluate = _Evaluator(snapshot, {})
    schedule_in_placements(placements, snapshot, evaluate, lambda c: (None, Status(Code.ERROR)))
    assert snapshot.assumed_placement() == outer
