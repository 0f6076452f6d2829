"""CompositePodGroup trees (KEP-6012): the workload forest
(kemu/scheduling/composite_pod_groups.py) and GangScheduling's tree quorum and
PlacementFeasible for a CompositePodGroup (kemu/scheduling/plugins/gang_scheduling.py)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    COMPOSITE_POD_GROUP,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)
from kemu.component.version import Version
from kemu.scheduling.composite_pod_groups import GroupKey, WorkloadForest, min_group_count
from kemu.scheduling.plugins import gang_scheduling
from kemu.scheduling.plugins.gang_scheduling import PlacementProgress
from kemu.scheduling.pod_group_state import GroupMembership, PodGroupKey, PodGroupStates
from kemu.scheduling.status import Code
from kemu.testing.builders import make_gang_pod_group, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory


def _cpg(
    name: str, min_groups: int | None, parent: str | None = None
) -> types_pb2.CompositePodGroup:
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, "default"
    if min_groups is None:
        cpg.spec.scheduling_policy.basic.SetInParent()
    else:
        cpg.spec.scheduling_policy.gang.min_group_count = min_groups
    if parent is not None:
        cpg.spec.parent_composite_pod_group_name = parent
    return cpg


def _pg(name: str, min_count: int, parent: str | None) -> types_pb2.PodGroup:
    pg = make_gang_pod_group(name, min_count)
    if parent is not None:
        pg.spec.parent_composite_pod_group_name = parent
    return pg


def _forest(*objs: types_pb2.PodGroup | types_pb2.CompositePodGroup) -> WorkloadForest:
    forest = WorkloadForest(enabled=True)
    for obj in objs:
        if isinstance(obj, types_pb2.PodGroup):
            forest.add_pod_group(obj)
        else:
            forest.add_composite_pod_group(obj)
    return forest


def test_root_and_tree_of_a_two_level_forest() -> None:
    forest = _forest(
        _pg("b", 1, "mid"), _pg("a", 2, "mid"), _cpg("mid", 2, "root"), _cpg("root", 1, None)
    )
    root = forest.root_of(GroupKey.pod_group("default", "a"))
    assert root == GroupKey.composite("default", "root")
    tree = forest.tree(root)
    assert tree is not None
    assert [n.key.name for n in tree.walk()] == ["root", "mid", "a", "b"]
    assert [leaf.key.name for leaf in tree.leaves()] == ["a", "b"]
    assert forest.same_tree(
        GroupKey.pod_group("default", "b"), GroupKey.composite("default", "mid")
    )


def test_a_missing_parent_or_a_cycle_has_no_root() -> None:
    forest = _forest(_pg("a", 1, "nope"), _cpg("x", 1, "y"), _cpg("y", 1, "x"), _pg("c", 1, "x"))
    assert forest.root_of(GroupKey.pod_group("default", "a")) is None
    assert forest.root_of(GroupKey.pod_group("default", "c")) is None
    # The parent arrives later: the child was linked already (upstream workloadForest).
    forest.add_composite_pod_group(_cpg("nope", 1, None))
    assert forest.root_of(GroupKey.pod_group("default", "a")) == GroupKey.composite(
        "default", "nope"
    )


def test_gate_off_links_nothing() -> None:
    forest = WorkloadForest(enabled=False)
    forest.add_pod_group(_pg("a", 1, "root"))
    forest.add_composite_pod_group(_cpg("root", 1, None))
    assert not forest.in_tree(PodGroupKey("default", "a"))
    assert forest.root_of(GroupKey.pod_group("default", "a")) == GroupKey.pod_group("default", "a")


def test_ready_count_follows_the_hierarchy_tracker() -> None:
    forest = _forest(_pg("a", 2, "root"), _pg("b", 1, "root"), _cpg("root", 2, None))
    pods = {"a": 1, "b": 1}
    root = GroupKey.composite("default", "root")
    assert forest.ready_count(root, lambda k: pods.get(k.name, 0)) == 1
    pods["a"] = 2
    assert forest.ready_count(root, lambda k: pods.get(k.name, 0)) == 2
    assert min_group_count(_cpg("basic", None)) == 1


def _gates() -> FeatureGates:
    return FeatureGates.for_version(
        Version(1, 37),
        {
            GENERIC_WORKLOAD: True,
            TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: True,
            COMPOSITE_POD_GROUP: True,
        },
    )


def test_pre_enqueue_holds_a_tree_until_its_root_quorum() -> None:
    pg1, pg2, root = _pg("pg1", 2, "cpg"), _pg("pg2", 2, "cpg"), _cpg("cpg", 2, None)
    handle = FakeHandle(informers=FakeInformerFactory(pod_groups=[pg1, pg2]))
    handle.fake_gates = _gates()
    forest = _forest(pg1, pg2)
    states = PodGroupStates(GroupMembership.of(handle.fake_gates), handle.fake_clock, forest)
    handle.pod_groups = states
    plugin = gang_scheduling.new({}, handle)
    pods = [make_pod(f"p{i}").uid(f"p{i}").pod_group(f"pg{1 + i // 2}").obj() for i in range(4)]
    for pod in pods:
        states.add_pod(pod)
    # The root CPG is not known yet: held, naming the parent.
    held = plugin.pre_enqueue(pods[0])
    assert held.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert held.message() == 'waiting for composite pod group "cpg" tree to meet quorum'
    forest.add_composite_pod_group(root)
    assert plugin.pre_enqueue(pods[0]).is_success()
    states.delete_pod(pods[3])  # pg2 below its minCount: one ready child of two
    assert plugin.pre_enqueue(pods[0]).message() == (
        'waiting for composite pod group "cpg" tree to meet quorum'
    )
    # PlacementFeasible for the CPG counts its children against minGroupCount.
    feasible = plugin.composite_placement_feasible(root, PlacementProgress(1, 0))
    assert feasible.code is Code.UNSCHEDULABLE
    assert feasible.message() == "minCount (2) cannot be satisfied: 0 scheduled, 1 remaining"
    waiting = plugin.composite_placement_feasible(root, PlacementProgress(1, 1))
    assert waiting.code is Code.WAIT
    assert waiting.message() == "minCount (2) is not yet satisfied: 1 scheduled, 1 remaining"
    assert plugin.composite_placement_feasible(root, PlacementProgress(0, 2)).is_success()
