"""Workload-aware preemption's victim units and selection (kemu/scheduling/pod_group_preemption.py):
S-PG-8's unit rule, the reprieve order, PDB-violating victims first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GENERIC_WORKLOAD, FeatureGates
from kemu.component.version import Version
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey, WorkloadForest
from kemu.scheduling.interface import ObjectLister
from kemu.scheduling.pod_group_preemption import (
    NO_VICTIMS,
    PodGroupFits,
    VictimUnit,
    importance,
    select_pod_group_victims,
    victim_units,
)
from kemu.scheduling.pod_group_state import GroupMembership, PodGroupKey
from kemu.scheduling.status import SUCCESS, Code, Status
from kemu.scheduling.types import NodeInfo, PodInfo
from kemu.testing.builders import make_node
from tests.unit.scheduling.preemption_builders import NOW_NS, pdb, pod

MEMBERSHIP = GroupMembership.of(FeatureGates.for_version(Version(1, 37), {GENERIC_WORKLOAD: True}))


class Groups(ObjectLister[types_pb2.PodGroup]):
    def __init__(self, *groups: types_pb2.PodGroup) -> None:
        self.groups = {g.metadata.name: g for g in groups}

    def get(self, name: str, namespace: str = "") -> types_pb2.PodGroup | None:
        return self.groups.get(name)

    def list(self, namespace: str | None = None) -> list[types_pb2.PodGroup]:
        return list(self.groups.values())


def group(name: str, *, priority: int | None = None, all_: bool = False) -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = name, "default"
    if priority is not None:
        pg.spec.priority = priority
    if all_:
        pg.spec.disruption_mode.all.SetInParent()
    else:
        pg.spec.disruption_mode.single.SetInParent()
    return pg


def member(
    name: str, group_name: str, priority: int, node: str, started: float = 0
) -> types_pb2.Pod:
    p = pod(name, priority, node=node, started=started or None)
    p.spec.scheduling_group.pod_group_name = group_name
    return p


def nodes(*pods_by_node: tuple[str, Sequence[types_pb2.Pod]]) -> list[NodeInfo]:
    out = []
    for name, pods in pods_by_node:
        ni = NodeInfo(make_node(name).obj())
        for p in pods:
            ni.add_pod(p)
        out.append(ni)
    return out


def names(unit: VictimUnit) -> list[str]:
    return sorted(pi.pod.metadata.name for pi in unit.pods)


def test_s_pg_8_an_all_group_is_one_victim_across_nodes_at_its_pod_group_priority() -> None:
    groups = Groups(group("gang", priority=5, all_=True), group("single", priority=7))
    infos = nodes(
        ("n1", [member("g1", "gang", 100, "n1"), member("s1", "single", 100, "n1")]),
        ("n2", [member("g2", "gang", 100, "n2"), pod("loose", 3, node="n2")]),
    )
    units = victim_units(infos, MEMBERSHIP, groups, NOW_NS, below=10)
    by_name = {tuple(names(u)): u for u in units}
    assert set(by_name) == {("g1", "g2"), ("s1",), ("loose",)}
    gang = by_name[("g1", "g2")]
    assert gang.group == PodGroupKey("default", "gang")
    assert gang.priority == 5  # the PodGroup's, not the pods' 100
    assert gang.nodes == {"n1", "n2"}
    assert by_name[("s1",)].priority == 7 and by_name[("s1",)].group is None
    assert by_name[("loose",)].priority == 3


def test_units_of_the_preemptors_priority_or_higher_are_no_victims() -> None:
    groups = Groups(group("gang", priority=10, all_=True))
    infos = nodes(("n1", [member("g1", "gang", 1, "n1"), pod("p", 10, node="n1")]))
    assert victim_units(infos, MEMBERSHIP, groups, NOW_NS, below=10) == []


def test_an_all_group_with_a_pod_that_cannot_be_taken_out_is_left_whole() -> None:
    groups = Groups(group("gang", priority=1, all_=True))
    infos = nodes(("n1", [member("g1", "gang", 1, "n1")]), ("n2", [member("g2", "gang", 1, "n2")]))
    units = victim_units(
        infos, MEMBERSHIP, groups, NOW_NS, below=10, skip=lambda pi: pi.pod.metadata.name == "g2"
    )
    assert units == []


def test_importance_higher_priority_then_group_then_larger_then_older() -> None:
    def unit(n: int, priority: int, grouped: bool, start: int) -> VictimUnit:
        pis = tuple(PodInfo(pod(f"p{i}", priority)) for i in range(n))
        key = PodGroupKey("default", f"g{n}{start}") if grouped else None
        return VictimUnit(pis, priority, key, start)

    single_old = unit(1, 1, False, 1)
    single_new = unit(1, 1, False, 2)
    small_group = unit(2, 1, True, 0)
    large_group = unit(3, 1, True, 5)
    high = unit(1, 2, False, 9)
    ordered = sorted([single_new, small_group, single_old, high, large_group], key=importance)
    assert ordered == [high, large_group, small_group, single_old, single_new]


def capacity_fits(free: int, need: int) -> tuple[list[frozenset[str]], PodGroupFits]:
    """A fake group algorithm: the group fits when the removed pods free `need - free` pods'
    room (each pod is one slot); every call is recorded."""
    calls: list[frozenset[str]] = []

    def fits(removed: frozenset[str]) -> tuple[Mapping[str, str], Status]:
        calls.append(removed)
        if free + len(removed) >= need:
            return {"m": "n1"}, SUCCESS
        return {}, Status(Code.UNSCHEDULABLE, ("does not fit",))

    return calls, fits


def single(name: str, priority: int, started: int = 0) -> VictimUnit:
    return VictimUnit((PodInfo(pod(name, priority, node="n1")),), priority, None, started)


def test_victims_are_reprieved_most_important_first_while_the_group_fits() -> None:
    a, b, c = single("a", 3), single("b", 2), single("c", 1)
    calls, fits = capacity_fits(free=0, need=2)
    chosen, status = select_pod_group_victims([c, a, b], [], fits)
    assert status.is_success() and chosen is not None
    # a (most important) is reprieved; then b and c are both needed.
    assert [names(u) for u in chosen.victims] == [["b"], ["c"]]
    assert chosen.assignments == {"m": "n1"}
    assert len(calls) == 4  # all removed, then one try per unit


def test_pdb_violating_victims_are_reprieved_first() -> None:
    a = single("a", 3)
    b = VictimUnit((PodInfo(pod("b", 1, node="n1", labels={"app": "db"})),), 1, None, 0)
    _, fits = capacity_fits(free=0, need=1)
    budget = pdb("db", 0, app="db")
    chosen, status = select_pod_group_victims([a, b], [budget], fits)
    assert status.is_success() and chosen is not None
    # b, though less important, violates the budget: tried first, and kept.
    assert [names(u) for u in chosen.victims] == [["a"]]
    assert chosen.pdb_violations == 0


def test_no_potential_victims_and_no_fit_even_with_all_gone() -> None:
    chosen, status = select_pod_group_victims([], [], lambda removed: ({}, SUCCESS))
    assert chosen is None
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE and status.message() == NO_VICTIMS
    _, fits = capacity_fits(free=0, need=5)
    chosen, status = select_pod_group_victims([single("a", 1)], [], fits)
    assert chosen is None and status.message() == "does not fit"


def test_a_cpg_tree_with_disruption_all_is_one_victim_at_its_root_priority() -> None:
    """KEP-6012: the highest ancestor with disruptionMode All makes the unit (upstream
    getHighestAllAncestor); every pod's priority is its tree's root's (getPodPriority); a CPG
    unit ranks before a PodGroup unit of the same priority (victimRank)."""
    forest = WorkloadForest(enabled=True)
    root = types_pb2.CompositePodGroup()
    root.metadata.name, root.metadata.namespace = "root", "default"
    root.spec.priority = 4
    root.spec.disruption_mode.all.SetInParent()
    forest.add_composite_pod_group(root)
    for name in ("a", "b"):
        pg = group(name, priority=4, all_=(name == "a"))
        pg.spec.parent_composite_pod_group_name = "root"
        forest.add_pod_group(pg)
    loner = group("loner", priority=4, all_=True)
    forest.add_pod_group(loner)
    infos = nodes(
        ("n1", [member("a1", "a", 4, "n1"), member("b1", "b", 4, "n1")]),
        ("n2", [member("a2", "a", 4, "n2"), member("l1", "loner", 4, "n2")]),
    )
    units = victim_units(infos, MEMBERSHIP, None, NOW_NS, below=10, forest=forest)
    by_name = {tuple(names(u)): u for u in units}
    assert set(by_name) == {("a1", "a2", "b1"), ("l1",)}
    tree = by_name[("a1", "a2", "b1")]
    assert tree.group == CompositePodGroupKey("default", "root") and tree.priority == 4
    assert tree.nodes == {"n1", "n2"}
    assert sorted(units, key=importance)[0] is tree
