"""The pod-group cycle of a CompositePodGroup tree (KEP-6012, gate CompositePodGroup, alpha
1.37): upstream pkg/scheduler/schedule_one_podgroup.go (scheduleOnePodGroup, podGroupCycle,
completeCompositePodGroupAlgorithmResult, submitCompositePodGroupResult, validatePodGroup) and
pkg/scheduler/algorithm_podgroup.go (RunRootSchedulingAlgorithm,
podGroupSchedulingRecursiveAlgorithm, compositePodGroupSchedulingDefaultAlgorithm) at master.

A member of a PodGroup with a parent CompositePodGroup (CPG) is scheduled with its whole tree
(kemu.scheduling.composite_pod_groups), from the root CPG:
- every leaf PodGroup's unscheduled members: at 1.37 the popped tree entity's (the queue
  holds the tree as one entity keyed by its root, scheduler.queue.pod_group_entity; the
  entity goes back to the queue as one when the attempt ends), else taken out of the queue
  (the popped pod with its group's); each group's in the usual order;
- the tree is checked (upstream validatePodGroup): every pod has the same schedulerName (`all
  pods in a pod group hierarchy should have the same .spec.schedulerName set, got: "a" ("p1")
  and "b" ("p0")`), every group and pod the root's priority (`all pod groups in a hierarchy
  should have the same priority as the root pod group's priority, got ...`, `all pods in a pod
  group hierarchy should have the same priority as the root pod group's priority, got ...`),
  the same preemptionPolicy (the root group's with PodGroupPreemptionPolicy, else the first
  pod's);
  a failure sends every member back with the error and the groups' conditions
  SchedulerError;
- the algorithm recurses from the root: a leaf runs the pod group's algorithm
  (scheduler.schedule_one_podgroup) and, when it succeeds, its placed members stay assumed so
  that the next groups see them (upstream assumeSubtreeWithRevert); a CPG asks
  PlacementFeasible (GangScheduling's, against minGroupCount over its children) before its
  first child and after each, stopping at Unschedulable, going on at Wait, and fails (undoing
  its children's assumptions) unless it ends in Success; a child's error ends it (`composite
  pod group evaluation failed due to child error: ...`). A root that succeeds with no pod
  placed is Unschedulable `no pods were schedulable`; every assumption is undone at the end;
- a CPG's failure is its descendants' (upstream completeCompositePodGroupAlgorithmResultMap):
  a child that succeeded, or was never tried, takes its parent's status;
- an Unschedulable root runs workload-aware preemption for the whole tree as one preemptor
  (DefaultPreemption's PodGroupPostFilter, the tree's algorithm as the feasibility function);
  success sends every member back nominated (`pod group is waiting for preemption to
  complete`);
- each leaf's members go to binding or back to the queue as a PodGroup's do, its condition
  `PodGroupInitiallyScheduled` written; each CPG gets `CompositePodGroupInitiallyScheduled`
  True/Scheduled, False/Unschedulable or False/SchedulerError (never True back to False); the
  attempt is counted once, `type="compositepodgroup"`.

Placements (TopologyAwareWorkloadScheduling, which CompositePodGroup needs; upstream
compositePodGroupSchedulingPlacementAlgorithm): a CPG's PlacementGenerate plugins split the
enclosing placement (every node at the root) by its own topology constraint
(`CompositePodGroupKey` for the plugins); its subtree runs in each placement and is undone; no
feasible one is `0/N placements are available, first placement status: ...`; several are
scored (PlacementScore over the proposed members of its successful leaves) and the best one's
results are kept, its leaves' members assumed again. A leaf runs the group's placement
algorithm within its parent's placement, and the parent's placement is restored after.

Not modelled: the nominated-placement fast path is skipped for a tree's leaves only in that
they take whatever the group's algorithm does.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    POD_GROUP_PREEMPTION_POLICY,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
)
from kemu.scheduling.composite_pod_groups import (
    CompositePodGroupKey,
    GroupKey,
    GroupKind,
    GroupNode,
    WorkloadForest,
)
from kemu.scheduling.interface import (
    CycleState,
    Placement,
    PodGroupAssignments,
    ProposedAssignment,
)
from kemu.scheduling.placement import (
    best_placement,
    run_placement_generate_plugins,
    run_placement_score_plugins,
    schedule_in_placements,
)
from kemu.scheduling.plugins.gang_scheduling import NAME as GANG_SCHEDULING
from kemu.scheduling.plugins.gang_scheduling import (
    GangScheduling,
    PlacementProgress,
    waiting_for_tree_quorum,
)
from kemu.scheduling.pod_group_preemption import workload_aware_preemption_enabled
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import SUCCESS, Code, Status, as_error, unresolvable
from kemu.scheduling.types import PostFilterResult
from scheduler.metrics import COMPOSITE_POD_GROUP_TYPE, PodGroupMetrics
from scheduler.schedule_one_podgroup import (
    NO_PODS_SCHEDULABLE,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    WAITING_FOR_PREEMPTION,
    WAITING_ON_PREEMPTION,
    PodGroupAlgorithmResult,
    PodGroupInfo,
    _assume,
    _unreserve_and_forget,
    condition_type,
    group_post_filter,
    ordered_members,
    patch_group_condition,
    pod_group_info,
    pod_group_scheduling_algorithm,
    skip_pod_group_pod_schedule,
    submit_pod_group_algorithm_result,
)

if TYPE_CHECKING:
    from kemu.scheduling.interface import QueuedPodInfo
    from scheduler.queue.pod_group_entity import QueuedPodGroupInfo
    from scheduler.schedule_one import FrameworkLike, Scheduler

logger = logging.getLogger(__name__)

COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED: Final = "CompositePodGroupInitiallyScheduled"
CHILD_ERROR: Final = "composite pod group evaluation failed due to child error: "
PREEMPT_LOWER: Final = "PreemptLowerPriority"


@dataclass
class TreeInfo:
    """The tree being scheduled (upstream QueuedPodGroupInfo of a CPG root): its shape and
    each leaf's members in the cycle's order."""

    root: GroupNode
    leaves: dict[PodGroupKey, PodGroupInfo]
    # The cycle's metrics (the leaves' placement metrics are recorded as a PodGroup's).
    metrics: PodGroupMetrics | None = None

    def members(self) -> list[QueuedPodInfo]:
        return [m for info in self.leaves.values() for m in info.queued_pod_infos]


@dataclass
class TreeResult:
    """Every group's result (upstream map[EntityKey]*PodGroupScheduledResult); a CPG's has no
    pod results. `reverts` undo the assumptions that survive the run (successful leaves')."""

    groups: dict[GroupKey, PodGroupAlgorithmResult] = field(default_factory=dict)
    reverts: list[tuple[CycleState, types_pb2.Pod, str]] = field(default_factory=list)

    def root_status(self, root: GroupNode) -> Status:
        return self.groups[root.key].status

    def assignments(self) -> dict[str, str]:
        return {
            r.qpi.pod.metadata.uid: r.node
            for result in self.groups.values()
            for r in result.pod_results
            if r.node
        }


# ---------------------------------------------------------------- entry


def in_composite_tree(sched: Scheduler, key: PodGroupKey) -> bool:
    """Whether the PodGroup has a parent CompositePodGroup (the gate on)."""
    forest = _forest(sched)
    return forest is not None and forest.in_tree(key)


def composite_root(sched: Scheduler, key: PodGroupKey) -> GroupKey | None:
    """The root CPG of the group's tree; None when it cannot be resolved yet."""
    forest = _forest(sched)
    if forest is None:
        return None
    root = forest.root_of(GroupKey.pod_group(key.namespace, key.name))
    if root is None or root.kind is not GroupKind.COMPOSITE_POD_GROUP:
        return None
    return root


def _forest(sched: Scheduler) -> WorkloadForest | None:
    groups = sched.pod_groups
    forest = groups.forest if groups is not None else None
    return forest if forest is not None and forest.enabled else None


async def schedule_one_composite_pod_group(
    sched: Scheduler,
    qpi: QueuedPodInfo,
    key: PodGroupKey,
    root: GroupKey | None,
    *,
    metrics: PodGroupMetrics | None,
) -> None:
    """upstream scheduleOnePodGroup for a CPG root."""
    forest = _forest(sched)
    fwk = sched.profiles.get(qpi.pod.spec.scheduler_name)
    tree = forest.tree(root) if forest is not None and root is not None else None
    leaf_keys = [leaf.key.pod_group_key() for leaf in tree.leaves()] if tree is not None else []
    if tree is None or fwk is None or key not in leaf_keys:
        # (PreEnqueue holds a member until its tree resolves; it changed meanwhile)
        if fwk is None:
            sched.queue.done(qpi.pod.metadata.uid)
            return
        parent = forest.parent_of(GroupKey.pod_group(key.namespace, key.name)) if forest else None
        status = unresolvable(waiting_for_tree_quorum(parent.name if parent else key.name))
        status = status.with_plugin(GANG_SCHEDULING)
        start = sched.clock.monotonic()
        await sched.handle_scheduling_failure(
            fwk, qpi, status, PostFilterResult(""), start, {GANG_SCHEDULING}
        )
        return
    info = TreeInfo(tree, {}, metrics)
    for leaf_key in leaf_keys:
        info.leaves[leaf_key] = pod_group_info(sched, leaf_key, qpi if leaf_key == key else None)
    await _schedule_tree(sched, fwk, info, metrics)


async def schedule_one_composite_pod_group_entity(
    sched: Scheduler, entity: QueuedPodGroupInfo, *, metrics: PodGroupMetrics | None
) -> None:
    """upstream scheduleOnePodGroup for a popped CompositePodGroup tree (1.37: the queue holds
    the tree as one entity keyed by its root, upstream getRootLookupInfo, with the members of
    all its leaves, getLeafPodGroups): the tree's cycle on its members, then the entity back
    to the queue as one (AddAttemptedPodGroupIfNeeded with the root's status)."""
    status: Status = SUCCESS
    try:
        status = await _schedule_tree_entity(sched, entity, metrics)
    finally:
        sched.queue.add_attempted_pod_group_if_needed(entity, status)


async def _schedule_tree_entity(
    sched: Scheduler, entity: QueuedPodGroupInfo, metrics: PodGroupMetrics | None
) -> Status:
    forest = _forest(sched)
    root = GroupKey.composite(entity.group.namespace, entity.group.name)
    tree = forest.tree(root) if forest is not None else None
    members = list(entity)
    fwk = sched.profiles.get(members[0].pod.spec.scheduler_name) if members else None
    by_leaf: dict[PodGroupKey, list[QueuedPodInfo]] = {}
    if tree is not None:
        by_leaf = {leaf.key.pod_group_key(): [] for leaf in tree.leaves()}
    strays: list[QueuedPodInfo] = []
    assert sched.pod_groups is not None
    for member in members:
        group = sched.pod_groups.membership.key(member.pod)
        if group is not None and group in by_leaf:
            by_leaf[group].append(member)
        else:
            strays.append(member)
    # Members whose PodGroup left the tree (or a tree gone): back to the queue, where their
    # group's entity is resolved again (PreEnqueue holds them until the tree resolves).
    stray_status = unresolvable(waiting_for_tree_quorum(root.name)).with_plugin(GANG_SCHEDULING)
    for stray in strays if fwk is not None and tree is not None else members:
        stray_fwk = sched.profiles.get(stray.pod.spec.scheduler_name)
        if stray_fwk is None:
            sched.queue.done(stray.pod.metadata.uid)
            continue
        await sched.handle_scheduling_failure(
            stray_fwk,
            stray,
            stray_status,
            PostFilterResult(""),
            sched.clock.monotonic(),
            {GANG_SCHEDULING},
        )
    if fwk is None or tree is None:
        return stray_status
    info = TreeInfo(tree, {}, metrics)
    for leaf_key, leaf_members in by_leaf.items():
        info.leaves[leaf_key] = PodGroupInfo(leaf_key, ordered_members(sched, leaf_members))
    return await _schedule_tree(sched, fwk, info, metrics)


async def _schedule_tree(
    sched: Scheduler, fwk: FrameworkLike, info: TreeInfo, metrics: PodGroupMetrics | None
) -> Status:
    """The tree's attempt once its members are gathered; the root's status (SUCCESS when
    nothing was left to schedule)."""
    start = sched.clock.monotonic()
    error = validate_tree(sched, info)
    if error:
        status = as_error(error)
        await _fail_before_scheduling(sched, info, status, start)
        return status
    for leaf_info in info.leaves.values():
        skip_pod_group_pod_schedule(sched, fwk, leaf_info)
    if not info.members():
        return SUCCESS
    logger.debug("Attempting to schedule composite pod group %s", info.root.key)
    sched.cycles += 1
    return await composite_pod_group_cycle(sched, fwk, info, start, metrics=metrics)


def validate_tree(sched: Scheduler, info: TreeInfo) -> str:
    """upstream validatePodGroup: the error, or "" (see the module docstring). With
    PodGroupPreemptionPolicy every group and pod has the root's preemptionPolicy; without it
    every pod has the first one's."""
    members = info.members()
    if not members:
        return ""
    first = members[0].pod
    name, first_name = first.spec.scheduler_name, first.metadata.name
    root_priority = _group_priority(info.root)
    by_groups = sched.gates.enabled(POD_GROUP_PREEMPTION_POLICY)
    root_policy = _group_policy(info.root) if by_groups else _pod_policy(first)
    for node in info.root.walk():
        priority = _group_priority(node)
        if priority != root_priority:
            return (
                "all pod groups in a hierarchy should have the same priority as the root pod "
                f'group\'s priority, got {priority} ("{node.key}") and {root_priority} '
                f'("{info.root.key}")'
            )
        if by_groups and _group_policy(node) != root_policy:
            return (
                "all pod groups in a hierarchy should have the same preemption policy as the "
                f"root pod group's preemption policy, got {_group_policy(node)} "
                f'("{node.key}") and {root_policy} ("{info.root.key}")'
            )
    for member in members:
        pod = member.pod
        if pod.spec.scheduler_name != name:
            return (
                "all pods in a pod group hierarchy should have the same .spec.schedulerName "
                f'set, got: "{pod.spec.scheduler_name}" ("{pod.metadata.name}") and "{name}" '
                f'("{first_name}")'
            )
        if member.pod_info.priority != root_priority:
            return (
                "all pods in a pod group hierarchy should have the same priority as the root "
                f'pod group\'s priority, got {member.pod_info.priority} ("{pod.metadata.name}") '
                f'and {root_priority} ("{info.root.key}")'
            )
        policy = _pod_policy(pod)
        if policy != root_policy:
            if by_groups:
                return (
                    "all pods in a pod group hierarchy should have the same preemption policy "
                    f"as the root pod group's preemption policy, got {policy} "
                    f'("{pod.metadata.name}") and {root_policy} ("{info.root.key}")'
                )
            return (
                "all pods in a pod group hierarchy should have the same preemption policy, "
                f'got {policy} ("{pod.metadata.name}") and {root_policy} ("{first_name}")'
            )
    if sched.profiles.get(name) is None:
        return f'profile not found for scheduler name "{name}"'
    return ""


def _pod_policy(pod: types_pb2.Pod) -> str:
    """upstream util.PodPreemptionPolicy: PreemptLowerPriority when unset."""
    return pod.spec.preemption_policy if pod.spec.HasField("preemption_policy") else PREEMPT_LOWER


def _group_policy(node: GroupNode) -> str:
    obj = node.composite if node.composite is not None else node.pod_group
    assert obj is not None
    spec = obj.spec
    return spec.preemption_policy if spec.HasField("preemption_policy") else PREEMPT_LOWER


def _group_priority(node: GroupNode) -> int:
    obj = node.composite if node.composite is not None else node.pod_group
    assert obj is not None
    return obj.spec.priority if obj.spec.HasField("priority") else 0


async def _fail_before_scheduling(
    sched: Scheduler, info: TreeInfo, status: Status, start: float
) -> None:
    """upstream handlePodGroupFailureBeforeScheduling: every member back with the error, each
    group's condition SchedulerError."""
    for member in info.members():
        member_fwk = sched.profiles.get(member.pod.spec.scheduler_name)
        if member_fwk is None:
            sched.queue.done(member.pod.metadata.uid)
            continue
        await sched.handle_scheduling_failure(
            member_fwk, member, status, PostFilterResult(""), start
        )
    condition = ("False", REASON_SCHEDULER_ERROR, status.message())
    await _write_conditions(sched, info.root, lambda _node: condition)


# ---------------------------------------------------------------- the cycle


async def composite_pod_group_cycle(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    start: float,
    *,
    metrics: PodGroupMetrics | None,
) -> Status:
    """upstream podGroupCycle for a CPG root; the root's status."""
    result = run_root_algorithm(sched, fwk, info)
    complete_tree_result(info.root, result, SUCCESS)
    if metrics is not None:
        seconds = sched.clock.monotonic() - start
        metrics.algorithm(fwk.profile_name(), seconds, COMPOSITE_POD_GROUP_TYPE)
    root_status = result.root_status(info.root)
    if root_status.is_rejected() and workload_aware_preemption_enabled(sched.gates):
        await _tree_preemption(sched, fwk, info, result, metrics)
    await _submit(sched, fwk, info, result, start, metrics)
    return result.root_status(info.root)


def run_root_algorithm(sched: Scheduler, fwk: FrameworkLike, info: TreeInfo) -> TreeResult:
    """upstream RunRootSchedulingAlgorithm: the tree's algorithm, every assumption undone
    before returning."""
    result = TreeResult()
    # The cycle's snapshot (upstream's UpdateSnapshot at the start of scheduleOnePodGroup;
    # again for each of workload-aware preemption's trials, the cache changed).
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    try:
        status, any_scheduled = _node_algorithm(sched, fwk, info, info.root, result, result.reverts)
        if status.is_success() and not any_scheduled:
            result.groups[info.root.key].status = Status(Code.UNSCHEDULABLE, (NO_PODS_SCHEDULABLE,))
        return result
    finally:
        for state, pod, node in reversed(result.reverts):
            _unreserve_and_forget(sched, fwk, state, pod, node)
        result.reverts.clear()


def _node_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    node: GroupNode,
    result: TreeResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
) -> tuple[Status, bool]:
    """upstream podGroupSchedulingRecursiveAlgorithm: the group's status and whether it placed
    a pod; a successful group's assumptions are appended to `reverts`."""
    if node.pod_group is not None:
        leaf = info.leaves[node.key.pod_group_key()]
        return _leaf_algorithm(sched, fwk, leaf, node, result, reverts, info.metrics)
    return _composite_algorithm(sched, fwk, info, node, result, reverts)


def _leaf_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    leaf: PodGroupInfo,
    node: GroupNode,
    result: TreeResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
    metrics: PodGroupMetrics | None,
) -> tuple[Status, bool]:
    if not leaf.queued_pod_infos:
        # Nothing of this group to place (its members scheduled, or none yet): its
        # PlacementFeasible alone says whether it counts for its parent (upstream
        # podGroupSchedulingDefaultAlgorithm's first check, Wait being Unschedulable).
        result.groups[node.key] = PodGroupAlgorithmResult(
            status=_empty_leaf_status(sched, fwk, leaf)
        )
        return result.groups[node.key].status, False
    run = pod_group_scheduling_algorithm(sched, fwk, leaf, metrics=metrics)
    if run.status.reasons == (NO_PODS_SCHEDULABLE,) and not any(r.node for r in run.pod_results):
        # (kemu's group algorithm says so for a standalone group; in a tree only the root
        # does, upstream RunRootSchedulingAlgorithm: a complete group with nothing new to
        # place is a success for its parent)
        run.status = SUCCESS
    result.groups[node.key] = run
    if not run.status.is_success():
        return run.status, False
    status = _assume_placed(sched, fwk, run, reverts)
    if not status.is_success():
        run.status = status
        return status, False
    return run.status, any(r.node for r in run.pod_results)


def _assume_placed(
    sched: Scheduler,
    fwk: FrameworkLike,
    run: PodGroupAlgorithmResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
) -> Status:
    """The group's algorithm undid its assumptions; its placed members are assumed (and
    reserved) again so that the next groups see them (upstream assumeSubtreeWithRevert)."""
    for pod_result in run.pod_results:
        if not pod_result.node:
            continue
        assumed = _assume(sched, pod_result.qpi.pod, pod_result.node)
        status = fwk.run_reserve_plugins_reserve(pod_result.state, assumed, pod_result.node)
        reverts.append((pod_result.state, pod_result.qpi.pod, pod_result.node))
        if not status.is_success():
            return as_error(f"failed to assume the subtree: {status.message()}")
    return SUCCESS


def _empty_leaf_status(sched: Scheduler, fwk: FrameworkLike, leaf: PodGroupInfo) -> Status:
    gang = fwk.plugin(GANG_SCHEDULING)
    if not isinstance(gang, GangScheduling):
        return SUCCESS
    assert sched.pod_groups is not None
    state = sched.pod_groups.get(leaf.key)
    scheduled = state.scheduled_pods_count() if state is not None else 0
    status = gang.placement_feasible(leaf.key, PlacementProgress(0, scheduled))
    if status.code is Code.WAIT:
        return Status(Code.UNSCHEDULABLE, status.reasons, status.plugin)
    return status


@dataclass
class _SubtreeRun:
    """One placement's run of a CPG's subtree (its groups' results, its assumptions undone)."""

    node: GroupNode
    status: Status
    tree: TreeResult
    any_scheduled: bool

    def successful_leaves(self) -> list[PodGroupAlgorithmResult]:
        """upstream successfulLeafResults: the leaves whose every ancestor succeeded."""
        out: list[PodGroupAlgorithmResult] = []

        def walk(node: GroupNode) -> None:
            group = self.tree.groups.get(node.key)
            if group is None or not group.status.is_success():
                return
            if node.pod_group is not None:
                out.append(group)
            for child in node.children:
                walk(child)

        walk(self.node)
        return out

    def proposed(self) -> tuple[ProposedAssignment, ...]:
        return tuple(p for leaf in self.successful_leaves() for p in leaf.proposed())


def _composite_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    node: GroupNode,
    result: TreeResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
) -> tuple[Status, bool]:
    """upstream compositePodGroupSchedulingAlgorithm: with TopologyAwareWorkloadScheduling
    (which CompositePodGroup needs) the CPG's placements, each running its children."""
    if not sched.gates.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        return _composite_default_algorithm(sched, fwk, info, node, result, reverts)
    return _composite_placement_algorithm(sched, fwk, info, node, result, reverts)


def _composite_placement_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    node: GroupNode,
    result: TreeResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
) -> tuple[Status, bool]:
    """upstream compositePodGroupSchedulingPlacementAlgorithm (kemu.scheduling.placement for
    the steps): the CPG's placements within the enclosing one, its subtree run in each (and
    undone), the best feasible one's results kept and its leaves' members assumed again."""
    key = CompositePodGroupKey(node.key.namespace, node.key.name)
    state = CycleState()
    placements, status = run_placement_generate_plugins(
        fwk.placement_generate_plugins(),
        state,
        key,
        sched.snapshot.nodes_in_placement(),
        sched.gates.version,
    )
    if not status.is_success():
        result.groups[node.key] = PodGroupAlgorithmResult(status=status)
        return status, False

    def evaluate() -> _SubtreeRun:
        sub = TreeResult()
        status, any_scheduled = _composite_default_algorithm(
            sched, fwk, info, node, sub, sub.reverts
        )
        for state_, pod, node_name in reversed(sub.reverts):
            _unreserve_and_forget(sched, fwk, state_, pod, node_name)
        sub.reverts.clear()
        return _SubtreeRun(node, status, sub, any_scheduled)

    def score(candidates: list[PodGroupAssignments]) -> tuple[Placement | None, Status]:
        totals, status = run_placement_score_plugins(
            fwk.placement_score_plugins(), state, key, candidates
        )
        if not status.is_success():
            return None, status
        return best_placement(candidates, totals, fwk.rng), SUCCESS

    outcome = schedule_in_placements(placements, sched.snapshot, evaluate, score)
    run = outcome.run
    if run is not None:
        result.groups.update(run.tree.groups)
    group = result.groups.setdefault(node.key, PodGroupAlgorithmResult())
    group.status = outcome.status
    if not outcome.status.is_success() or run is None:
        return outcome.status, False
    for leaf in run.successful_leaves():
        status = _assume_placed(sched, fwk, leaf, reverts)
        if not status.is_success():
            group.status = status
            return status, False
    return SUCCESS, run.any_scheduled


def _composite_default_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    node: GroupNode,
    result: TreeResult,
    reverts: list[tuple[CycleState, types_pb2.Pod, str]],
) -> tuple[Status, bool]:
    """upstream compositePodGroupSchedulingDefaultAlgorithm."""
    assert node.composite is not None
    own: list[tuple[CycleState, types_pb2.Pod, str]] = []
    group = PodGroupAlgorithmResult()
    result.groups[node.key] = group
    gang = fwk.plugin(GANG_SCHEDULING)
    cpg = node.composite

    def feasible(remaining: int, scheduled: int) -> tuple[bool, Status]:
        """upstream podGroupPotentiallyFeasible."""
        if not isinstance(gang, GangScheduling):
            return True, SUCCESS
        status = gang.composite_placement_feasible(cpg, PlacementProgress(remaining, scheduled))
        if status.code is Code.ERROR:
            return False, as_error(f"failed to evaluate placement feasibility: {status.message()}")
        if status.code is Code.WAIT:
            return True, Status(Code.UNSCHEDULABLE, status.reasons, status.plugin)
        return not status.is_rejected(), status

    remaining, scheduled = len(node.children), 0
    proceed, status = feasible(remaining, scheduled)
    any_scheduled = False
    if proceed:
        for child in node.children:
            child_status, child_any = _node_algorithm(sched, fwk, info, child, result, own)
            if child_status.code is Code.ERROR:
                status = as_error(CHILD_ERROR + child_status.message())
                break
            any_scheduled = any_scheduled or child_any
            remaining -= 1
            if child_status.is_success():
                scheduled += 1
            proceed, status = feasible(remaining, scheduled)
            if not proceed:
                break
    group.status = status
    if status.is_success():
        reverts.extend(own)
        return status, any_scheduled
    for state, pod, node_name in reversed(own):
        _unreserve_and_forget(sched, fwk, state, pod, node_name)
    return status, False


def complete_tree_result(node: GroupNode, result: TreeResult, parent: Status) -> None:
    """upstream completeCompositePodGroupAlgorithmResultMap: a parent's failure is its
    children's."""
    group = result.groups.get(node.key)
    if group is None:
        group = result.groups[node.key] = PodGroupAlgorithmResult(status=parent)
    elif (not parent.is_success() and group.status.is_success()) or (
        parent.code is Code.ERROR and group.status.code is not Code.ERROR
    ):
        group.status = parent
        for pod_result in group.pod_results:
            pod_result.permit_status = SUCCESS  # (the members take the parent's message)
    for child in node.children:
        complete_tree_result(child, result, group.status)


# ---------------------------------------------------------------- preemption


async def _tree_preemption(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    result: TreeResult,
    metrics: PodGroupMetrics | None,
) -> None:
    """Workload-aware preemption with the whole tree as one preemptor (upstream podGroupCycle
    with a CPG root, applyPodGroupPostFilterResult)."""
    leaves = [leaf.pod_group for leaf in info.root.leaves() if leaf.pod_group is not None]

    def run() -> tuple[Mapping[str, str], Status]:
        trial = run_root_algorithm(sched, fwk, info)
        return trial.assignments(), trial.root_status(info.root)

    members = [m.pod for m in info.members()]
    preemption, status = await group_post_filter(
        sched, fwk, leaves[0] if leaves else None, members, run
    )
    if metrics is not None:
        victims = len(preemption.pods()) if preemption is not None else 0
        metrics.workload_preemption(status.code_name(), victims)
    for group in result.groups.values():
        if preemption is not None and status.is_success():
            group.waiting_on_preemption = True
            group.nominations = preemption.assignments
            group.status = Status(Code.UNSCHEDULABLE, (WAITING_FOR_PREEMPTION,))
        elif status.code is Code.ERROR:
            group.status = status
        elif status.message():
            group.status = Status(
                group.status.code, (*group.status.reasons, status.message()), group.status.plugin
            )


# ---------------------------------------------------------------- the outcome


async def _submit(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: TreeInfo,
    result: TreeResult,
    start: float,
    metrics: PodGroupMetrics | None,
) -> None:
    """upstream submitPodGroupAlgorithmResult for a CPG root: each leaf as a PodGroup (its
    members, its condition), each CPG's condition, the attempt counted once."""
    for node in info.root.walk():
        group = result.groups[node.key]
        if node.pod_group is None:
            continue
        leaf = info.leaves[node.key.pod_group_key()]
        await submit_pod_group_algorithm_result(
            sched, fwk, leaf, group, start, metrics=None, pod_group_lister=sched.pod_group_lister
        )

    def condition(node: GroupNode) -> tuple[str, str, str]:
        status = result.groups[node.key].status
        if status.is_success():
            return ("True", REASON_SCHEDULED, status.message())
        if status.is_rejected():
            return ("False", REASON_UNSCHEDULABLE, status.message())
        return ("False", REASON_SCHEDULER_ERROR, status.message())

    await _write_conditions(sched, info.root, condition, composites_only=True)
    root = result.groups[info.root.key]
    outcome = (
        "scheduled"
        if root.status.is_success()
        else WAITING_ON_PREEMPTION
        if root.waiting_on_preemption
        else "unschedulable"
        if root.status.is_rejected()
        else "error"
    )
    if root.status.is_success():
        logger.info("Successfully scheduled composite pod group %s", info.root.key)
    else:
        logger.info(
            "Unable to schedule composite pod group %s: %s", info.root.key, root.status.message()
        )
    if metrics is not None:
        seconds = sched.clock.monotonic() - start
        metrics.attempt(outcome, fwk.profile_name(), seconds, COMPOSITE_POD_GROUP_TYPE)


async def _write_conditions(
    sched: Scheduler,
    root: GroupNode,
    condition: Callable[[GroupNode], tuple[str, str, str]],
    *,
    composites_only: bool = False,
) -> None:
    """Each group's condition under `root` (`condition(node)` gives it): CPGs'
    CompositePodGroupInitiallyScheduled, PodGroups' PodGroupInitiallyScheduled."""
    for node in root.walk():
        if node.composite is not None:
            await patch_group_condition(
                sched, node.composite, COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED, condition(node)
            )
        elif node.pod_group is not None and not composites_only:
            await patch_group_condition(
                sched, node.pod_group, condition_type(sched.gates.version), condition(node)
            )


__all__ = [
    "COMPOSITE_POD_GROUP_INITIALLY_SCHEDULED",
    "composite_root",
    "in_composite_tree",
    "schedule_one_composite_pod_group",
    "schedule_one_composite_pod_group_entity",
]
