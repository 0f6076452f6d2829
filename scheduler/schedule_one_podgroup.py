"""The pod-group scheduling cycle (1.36+, GenericWorkload): upstream
pkg/scheduler/schedule_one_podgroup.go at 1.36 (commit 008b3652959c) and, for 1.37's
PlacementFeasible-driven algorithm, pkg/scheduler/algorithm_podgroup.go (commit 1ff291df4b4d).

`schedule_one_pod_group` is what `Scheduler.schedule_one` runs for a pod in a group:
- `pod_group_info_for_pod`: the popped pod's group's other unscheduled members are taken out of
  the queue (PopSpecificPod; one the queue does not hold is skipped), and all are ordered by
  priority (higher first), then by their first attempt (older first);
- `framework_for_pod_group`: the members must share one schedulerName (else each fails with
  `all pods in a single pod group should have the same .spec.schedulerName set, got: ...`);
  `skip_pod_group_pod_schedule` drops members being deleted or already assumed;
- `pod_group_scheduling_default_algorithm`: the members are tried in order against the cache,
  each assumed (and reserved) before the next so that the next sees it. At 1.36 each one's
  Permit is asked (a Wait parks nothing: the cycle marks the CycleState) and the group is
  schedulable once a member's Permit says Success (GangScheduling: minCount reached); at 1.37
  (no Permit in GangScheduling) PlacementFeasible runs before the first member and after
  each: Unschedulable stops the cycle, Wait goes on, Success is the group's outcome; a group
  that succeeds without any member placed is Unschedulable `no pods were schedulable`. A
  member that does not fit is rejected and the others go on; an error ends the cycle
  (`failed to schedule other pod from a pod group: ...`). Every assumption is undone at the
  end: it was a simulation;
- `submit_pod_group_algorithm_result`: on success every placed member is assumed, reserved
  and permitted again for real and goes to its binding cycle (GangScheduling's Permit, 1.36,
  holds the first ones until the last arrives, each with its nominatedNodeName set, KEP-5278);
  on failure every member goes back to the queue with its own rejection, or, if it fit, the
  group's (Unschedulable with its Permit's message at 1.36, the PlacementFeasible message at
  1.37), its nominatedNodeName cleared; on an error, with the error. The PodGroup's condition
  (1.36 `PodGroupScheduled`, 1.37 `PodGroupInitiallyScheduled`) is written through the status
  subresource (True/Scheduled, False/Unschedulable, False/SchedulerError; a True never goes
  back to False), and the attempt is counted (`scheduler_podgroup_*`).

Workload-aware preemption (KEP-5710; 1.36 gate WorkloadAwarePreemption, 1.37 GenericWorkload):
`run_workload_aware_preemption`, when the group's result is rejected, as upstream's
runWorkloadAwarePreemption (schedule_one_podgroup.go at 1.36): no DefaultPreemption in the
profile, or a PodGroup with topology constraints, refuse with upstream's messages; otherwise its
PodGroupPostFilter (kemu.scheduling.pod_group_preemption for the victims) gets a feasibility
function that runs this algorithm again with some pods taken out of the cache for the run (and
put back: upstream's snapshot backup and restore; assumed pods are never taken out) and without
the decision record. On success the result waits on preemption: every member goes back to the
queue with `pod group is waiting for preemption to complete`, those the last feasible run placed
nominated there (ModeOverride), the others' nominations cleared; the attempt's result is
`waiting_on_preemption`. An error replaces the group's status, any other outcome is appended to
its reasons. During the algorithm an assumed member's nomination is taken out of the nominator
(as the pod-by-pod assume does; put back when it is forgotten) so that a nominated group's next
members do not count it twice.

Topology-aware placements (KEP-5732, TopologyAwareWorkloadScheduling): `pod_group_scheduling_
algorithm` runs the default algorithm once per placement (kemu.scheduling.placement: the
PlacementGenerate and PlacementScore plugins, the placement assumed in the snapshot) and keeps
the best feasible placement's result; none feasible: `0/N placements are available, first
placement status: ...`.

At 1.36 a member that fits nowhere runs the profile's PostFilter (upstream schedulingAlgorithm
inside podGroupPodSchedulingAlgorithm): the algorithm is written as steps (a generator) that
yield each such member (`MemberPostFilter`) and are sent back what PostFilter said. The cycle's
own run (`with_post_filters`, upstream runAllPostFilters) runs the plugins; every other run
(placements, workload-aware preemption's simulations: `without_post_filters`, upstream
runWithoutPostFilters) answers "no PostFilter" (upstream 1.36 also runs them inside the
placements of the cycle's own run; kemu does not yet). 1.37 runs no member's PostFilter
anywhere (upstream algorithm_podgroup.go: preemption is the group's), so its own run,
placements and CompositePodGroup trees are alike: a member's FitError has no PostFilter
message. A member
PostFilter nominated requires preemption: it is assumed on the nominated node (so that the next
members see it) and the group, complete otherwise, waits on preemption (`pod group is waiting
for preemption to complete`; every member nominated where it was assumed). DefaultPreemption
refuses members when workload-aware preemption is on (`pod_group_member_refusal`).

1.37: `qpi` is the queue's entity for the group (scheduler.queue.pod_group_entity) with all its
members; the attempt ends with `add_attempted_pod_group_if_needed` (upstream
AddAttemptedPodGroupIfNeeded), whatever its outcome.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import TOPOLOGY_AWARE_WORKLOAD_SCHEDULING
from kemu.component.version import Version
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict
from kemu.machinery.keys import object_key
from kemu.scheduling.interface import (
    CycleState,
    FitError,
    ObjectLister,
    Placement,
    PodGroupAssignments,
    ProposedAssignment,
    QueuedPodInfo,
)
from kemu.scheduling.placement import (
    NOMINATED_PLACEMENT_FIRST_SINCE,
    best_placement,
    nominated_placement,
    run_placement_generate_plugins,
    run_placement_score_plugins,
    schedule_in_placements,
)
from kemu.scheduling.plugins.default_preemption import NAME as DEFAULT_PREEMPTION
from kemu.scheduling.plugins.default_preemption import DefaultPreemption
from kemu.scheduling.plugins.gang_scheduling import NAME as GANG_SCHEDULING
from kemu.scheduling.plugins.gang_scheduling import GangScheduling, PlacementProgress
from kemu.scheduling.pod_group_preemption import (
    PodGroupPreemption,
    workload_aware_preemption_enabled,
)
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import SUCCESS, Code, Status, as_error
from kemu.scheduling.types import PodInfo, PostFilterResult
from scheduler.cycle_observer import NO_OBSERVER, POD_GROUP
from scheduler.metrics import PodGroupMetrics
from scheduler.queue.pod_group_entity import QueuedPodGroupInfo

if TYPE_CHECKING:
    from scheduler.schedule_one import FrameworkLike, Scheduler

logger = logging.getLogger(__name__)

ERR_POD_GROUP_UNSCHEDULABLE: Final = "pod group is unschedulable"
WAITING_FOR_PREEMPTION: Final = "pod group is waiting for preemption to complete"
WAITING_ON_PREEMPTION: Final = "waiting_on_preemption"  # the attempts metric's result
NO_POD_GROUP_POST_FILTER: Final = (
    "default preemption plugin is not registered, workload aware preemption is disabled"
)
# A PodGroup with topology constraints: 1.36's scheduler says so before the plugin runs; the
# newest (1.37) plugin's own check words it so
# (pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go PodGroupPostFilter).
TOPOLOGY_NOT_SUPPORTED: Final = (
    "workload aware preemption is not supported for pod groups with scheduling constraints"
)
TOPOLOGY_NOT_SUPPORTED_137: Final = "pod group preemption: not supported with topology constraints"
NO_PODS_SCHEDULABLE: Final = "no pods were schedulable"
POD_GROUP_SCHEDULED: Final = "PodGroupScheduled"  # 1.36
POD_GROUP_INITIALLY_SCHEDULED: Final = "PodGroupInitiallyScheduled"  # 1.37
REASON_SCHEDULED: Final = "Scheduled"
REASON_UNSCHEDULABLE: Final = "Unschedulable"
REASON_SCHEDULER_ERROR: Final = "SchedulerError"
_PLACEMENT_FEASIBLE_ALGORITHM_SINCE: Final = Version(1, 37)
# 1.37 runs no member's PostFilter in the pod-group algorithm (upstream algorithm_podgroup.go:
# podScheduler.SchedulePod "does not run single-pod PostFilter (preemption) on failure,
# because gang preemption and feasibility decisions are handled at the pod group level");
# 1.36's cycle runs it (schedule_one_podgroup.go runAllPostFilters).
_MEMBER_POST_FILTER_BEFORE: Final = Version(1, 37)


@dataclass
class PodGroupInfo:
    """The group being scheduled and its members in the cycle's order (upstream
    QueuedPodGroupInfo)."""

    key: PodGroupKey
    queued_pod_infos: list[QueuedPodInfo]


@dataclass
class AlgorithmResult:
    """One member's try (upstream algorithmResult): the node it is assumed on, its status,
    and its Permit's (1.36) or the PlacementFeasible status after it (1.37). A member that
    fits nowhere but for which PostFilter nominated a node (`requires_preemption`) keeps its
    FitError status and is assumed on the nominated node all the same; `nominating` is what
    its PostFilter said (clear by default: no PostFilter ran)."""

    qpi: QueuedPodInfo
    state: CycleState
    node: str = ""
    status: Status = SUCCESS
    permit_status: Status = SUCCESS
    fit: FitError | None = None
    requires_preemption: bool = False
    nominating: PostFilterResult | None = field(default_factory=lambda: PostFilterResult(""))

    @property
    def fits(self) -> bool:
        """Placed without preemption (upstream podResult.status.IsSuccess())."""
        return bool(self.node) and not self.requires_preemption


@dataclass(frozen=True)
class MemberPostFilter:
    """A member no node fits, for the cycle's PostFilter plugins (upstream
    schedulingAlgorithm's RunPostFilterPlugins, inside the pod-group cycle): what the
    algorithm's steps yield; they are sent back the PostFilterResult."""

    state: CycleState
    pod: types_pb2.Pod
    fit: FitError


# The algorithm as steps: it yields each member that needs PostFilter and is sent back what
# PostFilter said (upstream's runAllPostFilters), or is run without (runWithoutPostFilters).
AlgorithmSteps = Generator[MemberPostFilter, PostFilterResult | None, "PodGroupAlgorithmResult"]


@dataclass
class PodGroupAlgorithmResult:
    pod_results: list[AlgorithmResult] = field(default_factory=list)
    status: Status = field(
        default_factory=lambda: Status(Code.UNSCHEDULABLE, (ERR_POD_GROUP_UNSCHEDULABLE,))
    )
    # Workload-aware preemption made room (upstream waitingOnPreemption): the members go
    # back to the queue, those in `nominations` (uid -> node) nominated there.
    waiting_on_preemption: bool = False
    nominations: Mapping[str, str] = field(default_factory=dict)

    def proposed(self) -> tuple[ProposedAssignment, ...]:
        """The members placed, with their nodes (upstream makeProposedAssignments)."""
        return tuple(ProposedAssignment(r.qpi.pod, r.node) for r in self.pod_results if r.node)


def without_post_filters(steps: AlgorithmSteps) -> PodGroupAlgorithmResult:
    """Runs the steps with no PostFilter (upstream runWithoutPostFilters; also kemu's runs
    inside placements and CompositePodGroup trees): a member that fits nowhere is rejected,
    its nomination cleared."""
    try:
        next(steps)
        while True:
            steps.send(PostFilterResult(""))
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


async def with_post_filters(
    sched: Scheduler, fwk: FrameworkLike, steps: AlgorithmSteps
) -> PodGroupAlgorithmResult:
    """Runs the steps with the profile's PostFilter plugins for each member that fits
    nowhere (upstream runAllPostFilters: schedulingAlgorithm's PostFilter, its message
    appended to the member's FitError)."""
    try:
        request = next(steps)
        while True:
            nominating: PostFilterResult | None = PostFilterResult("")
            if fwk.has_post_filter_plugins():
                nominating, status = await fwk.run_post_filter_plugins(
                    request.state, request.pod, request.fit.statuses
                )
                request.fit.post_filter_msg = status.message()
                if status.code is Code.ERROR:
                    logger.error("PostFilter for %s failed: %s", object_key(request.pod), status)
            request = steps.send(nominating)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]


def condition_type(version: Version) -> str:
    return (
        POD_GROUP_INITIALLY_SCHEDULED
        if version >= _PLACEMENT_FEASIBLE_ALGORITHM_SINCE
        else POD_GROUP_SCHEDULED
    )


# ---------------------------------------------------------------- entry


async def schedule_one_pod_group(
    sched: Scheduler,
    qpi: QueuedPodInfo,
    key: PodGroupKey,
    *,
    metrics: PodGroupMetrics | None,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> None:
    """upstream scheduleOnePodGroup (with podGroupInfoForPod at 1.36). At 1.37 `qpi` is the
    group's queue entity (scheduler.queue.pod_group_entity) with its members, and the group
    goes back to the queue when its attempt is over (AddAttemptedPodGroupIfNeeded)."""
    info = pod_group_info_for_pod(sched, qpi, key)
    status: Status = SUCCESS
    try:
        status = await _schedule_pod_group(
            sched, info, metrics=metrics, pod_group_lister=pod_group_lister
        )
    finally:
        if isinstance(qpi, QueuedPodGroupInfo):
            sched.queue.add_attempted_pod_group_if_needed(qpi, status)


async def _schedule_pod_group(
    sched: Scheduler,
    info: PodGroupInfo,
    *,
    metrics: PodGroupMetrics | None,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> Status:
    """The group's attempt; its status (SUCCESS when nothing was left to schedule)."""
    key = info.key
    fwk, error = framework_for_pod_group(sched, info)
    if fwk is None:
        for member in info.queued_pod_infos:
            member_fwk = sched.profiles.get(member.pod.spec.scheduler_name)
            if member_fwk is None:
                sched.queue.done(member.pod.metadata.uid)
                continue
            start = sched.clock.monotonic()
            await sched.handle_scheduling_failure(
                member_fwk, member, as_error(error), PostFilterResult(""), start
            )
        return as_error(error)
    skip_pod_group_pod_schedule(sched, fwk, info)
    if not info.queued_pod_infos:
        return SUCCESS
    logger.debug("Attempting to schedule pod group %s", key)
    sched.cycles += 1
    return await pod_group_cycle(
        sched, fwk, info, metrics=metrics, pod_group_lister=pod_group_lister
    )


def pod_group_info_for_pod(sched: Scheduler, qpi: QueuedPodInfo, key: PodGroupKey) -> PodGroupInfo:
    """The popped pod and the group's other unscheduled members, out of the queue, in order;
    at 1.37 the popped group's members (all in flight already)."""
    if isinstance(qpi, QueuedPodGroupInfo):
        return PodGroupInfo(key, ordered_members(sched, list(qpi)))
    return pod_group_info(sched, key, qpi)


def pod_group_info(sched: Scheduler, key: PodGroupKey, first: QueuedPodInfo | None) -> PodGroupInfo:
    """`first` (the popped pod, if it is in this group) and the group's other unscheduled
    members, taken out of the queue (PopSpecificPod), ordered by priority then first attempt."""
    members = [first] if first is not None else []
    skip = first.pod.metadata.uid if first is not None else ""
    assert sched.pod_groups is not None
    state = sched.pod_groups.get(key)
    if state is not None:
        for pod in state.unscheduled_pods():
            if pod.metadata.uid == skip:
                continue
            other = sched.queue.pop_specific_pod(pod)
            if other is None:
                logger.debug(
                    "Pod %s available in pod group state not available in scheduling queue",
                    object_key(pod),
                )
                continue
            members.append(other)
    return PodGroupInfo(key, ordered_members(sched, members))


def ordered_members(sched: Scheduler, members: list[QueuedPodInfo]) -> list[QueuedPodInfo]:
    """The cycle's order: priority (higher first), then first attempt (older first)."""
    now = sched.clock.monotonic()
    return sorted(
        members,
        key=lambda m: (
            -m.pod_info.priority,
            m.initial_attempt_timestamp if m.initial_attempt_timestamp is not None else now,
        ),
    )


def framework_for_pod_group(
    sched: Scheduler, info: PodGroupInfo
) -> tuple[FrameworkLike | None, str]:
    name = ""
    for member in info.queued_pod_infos:
        other = member.pod.spec.scheduler_name
        if not name:
            name = other
        elif other != name:
            return None, (
                "all pods in a single pod group should have the same .spec.schedulerName "
                f'set, got: "{other}" and "{name}"'
            )
    fwk = sched.profiles.get(name)
    if fwk is None:
        return None, f'profile not found for scheduler name "{name}"'
    return fwk, ""


def skip_pod_group_pod_schedule(sched: Scheduler, fwk: FrameworkLike, info: PodGroupInfo) -> None:
    kept = []
    for member in info.queued_pod_infos:
        if sched.skip_pod_schedule(fwk, member.pod):
            sched.queue.done(member.pod.metadata.uid)
            continue
        kept.append(member)
    info.queued_pod_infos = kept


# ---------------------------------------------------------------- the cycle


async def pod_group_cycle(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    *,
    metrics: PodGroupMetrics | None,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> Status:
    """The group's cycle; its outcome's status."""
    start = sched.clock.monotonic()
    if sched.gates.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        result = pod_group_scheduling_placement_algorithm(sched, fwk, info, metrics=metrics)
    elif sched.gates.version >= _MEMBER_POST_FILTER_BEFORE:
        result = pod_group_scheduling_default_algorithm(sched, fwk, info)
    else:
        steps = pod_group_scheduling_default_algorithm_steps(sched, fwk, info)
        result = await with_post_filters(sched, fwk, steps)
    if metrics is not None:
        metrics.algorithm(fwk.profile_name(), sched.clock.monotonic() - start)
    if result.status.is_rejected() and workload_aware_preemption_enabled(sched.gates):
        # (upstream: Unschedulable; its algorithm turns PlacementFeasible's
        # UnschedulableAndUnresolvable into Unschedulable, kemu's keeps the code)
        await run_workload_aware_preemption(
            sched, fwk, info, result, metrics=metrics, pod_group_lister=pod_group_lister
        )
    await submit_pod_group_algorithm_result(
        sched, fwk, info, result, start, metrics=metrics, pod_group_lister=pod_group_lister
    )
    return result.status


def _gang_plugin(fwk: FrameworkLike) -> GangScheduling | None:
    plugin = fwk.plugin(GANG_SCHEDULING)
    return plugin if isinstance(plugin, GangScheduling) else None


def pod_group_scheduling_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    *,
    metrics: PodGroupMetrics | None = None,
) -> PodGroupAlgorithmResult:
    """upstream podGroupSchedulingAlgorithm without PostFilter (runWithoutPostFilters): with
    TopologyAwareWorkloadScheduling the placement algorithm (kemu.scheduling.placement)
    around the default one, otherwise the default one over the whole cluster. The cycle's
    own run (pod_group_cycle) runs the members' PostFilter outside placements."""
    if sched.gates.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING):
        return pod_group_scheduling_placement_algorithm(sched, fwk, info, metrics=metrics)
    return pod_group_scheduling_default_algorithm(sched, fwk, info)


def pod_group_scheduling_placement_algorithm(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    *,
    metrics: PodGroupMetrics | None = None,
) -> PodGroupAlgorithmResult:
    """upstream podGroupSchedulingPlacementAlgorithm (kemu.scheduling.placement has the
    steps): the placements generated over the snapshot's nodes, the default algorithm run in
    each, the best feasible one's result returned (its assumptions undone, as always)."""
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    state = CycleState()
    version = sched.gates.version
    placements, status = run_placement_generate_plugins(
        fwk.placement_generate_plugins(),
        state,
        info.key,
        sched.snapshot.nodes_in_placement(),  # (upstream ListNodesInPlacement)
        version,
    )
    if not status.is_success():
        return PodGroupAlgorithmResult(status=status)
    profile = fwk.profile_name()
    if metrics is not None:
        metrics.generated_placements(profile, len(placements))
    nominated = None
    if version >= NOMINATED_PLACEMENT_FIRST_SINCE:
        nodes = frozenset(
            m.pod.status.nominated_node_name
            for m in info.queued_pod_infos
            if m.pod.status.nominated_node_name
        )
        nominated = nominated_placement(placements, nodes)

    def score(candidates: list[PodGroupAssignments]) -> tuple[Placement | None, Status]:
        totals, status = run_placement_score_plugins(
            fwk.placement_score_plugins(), state, info.key, candidates
        )
        if not status.is_success():
            return None, status
        return best_placement(candidates, totals, fwk.rng), SUCCESS

    def evaluate() -> PodGroupAlgorithmResult:
        start = sched.clock.monotonic()
        run = pod_group_scheduling_default_algorithm(sched, fwk, info)
        # (an Error is no feasibility verdict: not counted, as upstream's evaluatePlacement)
        if metrics is not None and run.status.code is not Code.ERROR:
            seconds = sched.clock.monotonic() - start
            metrics.placement_evaluation(run.status.is_success(), profile, seconds)
        return run

    outcome = schedule_in_placements(
        placements, sched.snapshot, evaluate, score, nominated=nominated
    )
    result = outcome.run if outcome.run is not None else PodGroupAlgorithmResult()
    result.status = outcome.status
    if outcome.placement is not None and outcome.status.is_success():
        logger.debug("Pod group %s goes to placement %r", info.key, outcome.placement.name)
    return result


def pod_group_scheduling_default_algorithm(
    sched: Scheduler, fwk: FrameworkLike, info: PodGroupInfo
) -> PodGroupAlgorithmResult:
    """The default algorithm without PostFilter (see pod_group_scheduling_default_algorithm_steps)."""
    return without_post_filters(pod_group_scheduling_default_algorithm_steps(sched, fwk, info))


def pod_group_scheduling_default_algorithm_steps(
    sched: Scheduler, fwk: FrameworkLike, info: PodGroupInfo
) -> AlgorithmSteps:
    """See the module docstring: every member tried in order, each assumed for the next (a
    member PostFilter nominated, on its nominated node: the group then waits on
    preemption); every assumption undone before returning."""
    result = PodGroupAlgorithmResult()
    placement_feasible = sched.gates.version >= _PLACEMENT_FEASIBLE_ALGORITHM_SINCE
    gang = _gang_plugin(fwk)
    assert sched.pod_groups is not None
    group_state = sched.pod_groups.get(info.key)
    reverts: list[tuple[CycleState, types_pb2.Pod, str]] = []
    requires_preemption = any_scheduled = False

    def progress(remaining: int) -> PlacementProgress:
        scheduled = group_state.scheduled_pods_count() if group_state is not None else 0
        return PlacementProgress(remaining=remaining, scheduled=scheduled)

    def feasible(remaining: int) -> Status:
        if gang is None:
            return SUCCESS
        return gang.placement_feasible(info.key, progress(remaining))

    def waiting() -> None:
        # upstream: any member that needs preemption makes the feasible group wait for it.
        result.status = Status(Code.UNSCHEDULABLE, (WAITING_FOR_PREEMPTION,))
        result.waiting_on_preemption = True

    try:
        remaining = len(info.queued_pod_infos)
        if placement_feasible:
            status = feasible(remaining)
            if status.code is not Code.SUCCESS and status.code is not Code.WAIT:
                result.status = status
                return result
        for member in info.queued_pod_infos:
            pod_result = yield from pod_group_pod_scheduling_algorithm(sched, fwk, info, member)
            result.pod_results.append(pod_result)
            remaining -= 1
            if pod_result.node:
                reverts.append((pod_result.state, member.pod, pod_result.node))
            elif not pod_result.status.is_rejected():
                result.status = as_error(
                    "failed to schedule other pod from a pod group: "
                    f"{pod_result.status.message() or pod_result.status}"
                )
                result.waiting_on_preemption = False
                result.nominations = {}
                return result
            requires_preemption = requires_preemption or pod_result.requires_preemption
            any_scheduled = any_scheduled or pod_result.fits
            if placement_feasible:
                status = feasible(remaining)
                pod_result.permit_status = status
                if status.code is Code.UNSCHEDULABLE or status.is_rejected():
                    result.status = status
                    return result
                if status.code is Code.ERROR:
                    result.status = status
                    return result
                if status.is_success():
                    result.status = SUCCESS
            elif pod_result.node and pod_result.permit_status.is_success():
                # A member's Permit says the group is complete.
                if requires_preemption:
                    waiting()
                else:
                    result.status = SUCCESS
        if placement_feasible and result.status.is_success():
            if requires_preemption:
                waiting()
            elif not any_scheduled:
                result.status = Status(Code.UNSCHEDULABLE, (NO_PODS_SCHEDULABLE,))
        if result.waiting_on_preemption:
            # Each member goes back nominated where it was assumed (ModeOverride).
            result.nominations = {
                r.qpi.pod.metadata.uid: r.node for r in result.pod_results if r.node
            }
        return result
    finally:
        for state, pod, node in reversed(reverts):
            _unreserve_and_forget(sched, fwk, state, pod, node)


def pod_group_pod_scheduling_algorithm(
    sched: Scheduler, fwk: FrameworkLike, info: PodGroupInfo, member: QueuedPodInfo
) -> Generator[MemberPostFilter, PostFilterResult | None, AlgorithmResult]:
    """One member: its node (Filter, Score; when none fits, PostFilter may nominate one, on
    which it is then assumed: it requires preemption), then assumed and reserved so that
    the next member sees it, then (1.36) its Permit; a rejected Permit undoes it."""
    from scheduler.schedule_one import SchedulingError

    pod = member.pod
    state = sched.new_cycle_state(member.pod_info)
    state.pod_group_scheduling_cycle = info.key
    out = AlgorithmResult(member, state)
    # (the decision record: one attempt per member and group cycle)
    sched.observer.cycle_started(pod, profile=fwk.profile_name(), cycle=POD_GROUP)
    try:
        scheduled = sched.schedule_pod(fwk, state, pod)
    except FitError as fit:
        nominating = yield MemberPostFilter(state, pod, fit)
        sched.observer.unschedulable(pod, fit, nominating)
        out.fit = fit
        out.status = Status(Code.UNSCHEDULABLE, (str(fit),))
        out.nominating = nominating
        if nominating is None or not nominating.nominated_node_name:
            return out
        # upstream: handled as a member that fits, on its nominated node, so that the next
        # members see it there.
        node = nominating.nominated_node_name
        out.requires_preemption = True
    except SchedulingError as e:
        out.status = e.status
        return out
    else:
        node = scheduled.suggested_host
        sched.observer.scheduled(
            pod,
            node=node,
            nodes=sched.snapshot.num_nodes(),
            evaluated=scheduled.evaluated_nodes,
            feasible=scheduled.feasible_nodes,
        )
    assumed = _assume(sched, pod, node)
    status = fwk.run_reserve_plugins_reserve(state, assumed, node)
    if not status.is_success():
        _unreserve_and_forget(sched, fwk, state, pod, node)
        out.status, out.requires_preemption = status, False
        out.nominating = PostFilterResult("")
        return out
    if sched.gates.version < _PLACEMENT_FEASIBLE_ALGORITHM_SINCE:
        permit = fwk.run_permit_plugins(state, assumed, node)
        if not permit.is_success() and not permit.is_wait():
            _unreserve_and_forget(sched, fwk, state, pod, node)
            out.status, out.requires_preemption = permit, False
            out.nominating = PostFilterResult("")
            return out
        out.permit_status = permit
    out.node = node
    return out


def _assume(sched: Scheduler, pod: types_pb2.Pod, node: str) -> types_pb2.Pod:
    assumed = types_pb2.Pod()
    assumed.CopyFrom(pod)
    assumed.spec.node_name = node
    sched.cache.assume_pod(assumed)
    sched.assume_in_pod_group(assumed)
    # An assumed member no longer reserves its nominated node through the nominator (as
    # the pod-by-pod assume): the next members would count it twice.
    sched.queue.delete_nominated_pod_if_exists(pod)
    return assumed


def _unreserve_and_forget(
    sched: Scheduler, fwk: FrameworkLike, state: CycleState, pod: types_pb2.Pod, node: str
) -> None:
    assumed = types_pb2.Pod()
    assumed.CopyFrom(pod)
    assumed.spec.node_name = node
    fwk.run_reserve_plugins_unreserve(state, assumed, node)
    sched.cache.forget_pod(assumed)
    sched.forget_in_pod_group(assumed)
    if pod.status.nominated_node_name:
        sched.queue.add_nominated_pod(sched.cache.pod_info(pod), None)


# ---------------------------------------------------------------- workload-aware preemption


async def run_workload_aware_preemption(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    result: PodGroupAlgorithmResult,
    *,
    metrics: PodGroupMetrics | None,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> None:
    """upstream runWorkloadAwarePreemption and what scheduleOnePodGroup does with its
    outcome: DefaultPreemption's PodGroupPostFilter with a feasibility function that runs the
    group's algorithm again with some pods taken out of the cache for the run (the
    simulation's backup and restore of the snapshot). Success: `result` waits on preemption
    (its members nominated); an error replaces the group's status; any other outcome is
    appended to its reasons."""
    preemption, status = await _pod_group_post_filter(
        sched, fwk, info, pod_group_lister, metrics=metrics
    )
    if metrics is not None:
        victims = len(preemption.pods()) if preemption is not None else 0
        metrics.workload_preemption(status.code_name(), victims)
    if preemption is not None and status.is_success():
        result.waiting_on_preemption = True
        result.nominations = preemption.assignments
        result.status = Status(Code.UNSCHEDULABLE, (WAITING_FOR_PREEMPTION,))
    elif status.code is Code.ERROR:
        result.status = status
    else:
        reason = status.message()
        if reason:
            result.status = Status(
                result.status.code, (*result.status.reasons, reason), result.status.plugin
            )


async def _pod_group_post_filter(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
    *,
    metrics: PodGroupMetrics | None,
) -> tuple[PodGroupPreemption | None, Status]:
    pg = (
        pod_group_lister.get(info.key.name, info.key.namespace)
        if pod_group_lister is not None
        else None
    )
    if pg is None and isinstance(fwk.plugin(DEFAULT_PREEMPTION), DefaultPreemption):
        return None, as_error(f'failed to get pod group object: PodGroup "{info.key}" not found')

    def run() -> tuple[Mapping[str, str], Status]:
        result = pod_group_scheduling_algorithm(sched, fwk, info, metrics=metrics)
        return {r.qpi.pod.metadata.uid: r.node for r in result.pod_results if r.node}, result.status

    members = [m.pod for m in info.queued_pod_infos]
    return await group_post_filter(sched, fwk, pg, members, run)


async def group_post_filter(
    sched: Scheduler,
    fwk: FrameworkLike,
    pg: types_pb2.PodGroup | None,
    members: list[types_pb2.Pod],
    run: Callable[[], tuple[Mapping[str, str], Status]],
) -> tuple[PodGroupPreemption | None, Status]:
    """DefaultPreemption's PodGroupPostFilter for `members` (a group, or a CompositePodGroup
    tree's, `pg` giving its priority and policy), `run` being the group's algorithm (its
    members' nodes and its status): the feasibility function runs it with some pods taken out
    of the cache for the run and put back."""
    plugin = fwk.plugin(DEFAULT_PREEMPTION)
    if not isinstance(plugin, DefaultPreemption):
        return None, Status(Code.UNSCHEDULABLE, (NO_POD_GROUP_POST_FILTER,))
    if pg is not None and pg.spec.scheduling_constraints.topology:
        newest = sched.gates.version >= _PLACEMENT_FEASIBLE_ALGORITHM_SINCE
        message = TOPOLOGY_NOT_SUPPORTED_137 if newest else TOPOLOGY_NOT_SUPPORTED
        return None, Status(Code.UNSCHEDULABLE, (message,))
    # The snapshot as the cache has it (the algorithm's members forgotten), the pods it holds
    # by uid (what the feasibility function takes out of the cache).
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    by_uid = {pi.uid: pi.pod for node in sched.snapshot.node_infos().list() for pi in node.pods}

    def removable(pi: PodInfo) -> bool:
        # An assumed pod (its binding under way) is not taken out: the cache cannot hold it
        # back as it was.
        return sched.cache.get_pod(pi.pod) is not None and not sched.cache.is_assumed_pod(pi.pod)

    def fits(removed: frozenset[str]) -> tuple[Mapping[str, str], Status]:
        taken: list[types_pb2.Pod] = []
        observer = sched.observer
        sched.observer = NO_OBSERVER  # (simulations are no attempts in the decision record)
        try:
            for uid in removed:
                cached = sched.cache.get_pod(by_uid[uid])
                if cached is not None:
                    sched.cache.remove_pod(cached)
                    taken.append(cached)
            return run()
        finally:
            for cached in taken:
                sched.cache.add_pod(cached)
            sched.observer = observer

    try:
        return await plugin.pod_group_post_filter(pg, members, fits, removable=removable)
    finally:
        # The snapshot as the cache has it again (the last simulation's nodes otherwise).
        sched.cache.update_snapshot(sched.snapshot)


# ---------------------------------------------------------------- the outcome


async def submit_pod_group_algorithm_result(
    sched: Scheduler,
    fwk: FrameworkLike,
    info: PodGroupInfo,
    result: PodGroupAlgorithmResult,
    start: float,
    *,
    metrics: PodGroupMetrics | None,
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> None:
    group_status = result.status
    outcome = (
        "scheduled"
        if group_status.is_success()
        else WAITING_ON_PREEMPTION
        if result.waiting_on_preemption
        else "unschedulable"
        if group_status.is_rejected()
        else "error"
    )
    group = str(info.key)
    for member in info.queued_pod_infos:
        sched.observer.pod_group_decided(
            member.pod,
            group=group,
            members=len(info.queued_pod_infos),
            result=outcome,
            message=group_status.message(),
            nominated=result.nominations.get(member.pod.metadata.uid, "")
            if result.waiting_on_preemption
            else None,
        )
    scheduled = unschedulable = 0
    for i, member in enumerate(info.queued_pod_infos):
        pod_result = result.pod_results[i] if i < len(result.pod_results) else None
        clear = PostFilterResult("")
        if group_status.code is Code.ERROR:
            own = pod_result.status if pod_result and pod_result.status.code is Code.ERROR else None
            await sched.handle_scheduling_failure(fwk, member, own or group_status, clear, start)
            continue
        if (
            result.waiting_on_preemption
            and pod_result is not None
            and pod_result.requires_preemption
        ):
            # Its own PostFilter nominated a node: back with its FitError, nominated there.
            assert pod_result.fit is not None
            await sched.handle_scheduling_failure(
                fwk,
                member,
                pod_result.status,
                pod_result.nominating,
                start,
                _fit_plugins(pod_result.fit),
            )
            unschedulable += 1
            continue
        if result.waiting_on_preemption:
            # Back to the queue, nominated where the group goes once the victims are gone
            # (ModeOverride); a member without a place has its nomination cleared.
            node = result.nominations.get(member.pod.metadata.uid, "")
            await sched.handle_scheduling_failure(
                fwk, member, group_status, PostFilterResult(node), start
            )
            unschedulable += 1
            continue
        if pod_result is not None and pod_result.node:
            # (placed, or assumed on the node its PostFilter nominated: 1.36 then rejects it
            # with its Permit's message, its nomination cleared)
            if group_status.is_success() and pod_result.fits:
                state = sched.new_cycle_state(member.pod_info)
                if await sched.prepare_for_binding_cycle(
                    fwk, state, member, pod_result.node, start
                ):
                    scheduled += 1
                else:
                    unschedulable += 1
                continue
            message = pod_result.permit_status.message() or group_status.message()
            status = Status(Code.UNSCHEDULABLE, (message or ERR_POD_GROUP_UNSCHEDULABLE,))
            await sched.handle_scheduling_failure(fwk, member, status, clear, start)
            unschedulable += 1
            continue
        if pod_result is not None and pod_result.fit is not None:
            await sched.handle_scheduling_failure(
                fwk,
                member,
                pod_result.status,
                pod_result.nominating,
                start,
                _fit_plugins(pod_result.fit),
            )
        else:
            status = pod_result.status if pod_result is not None else group_status
            plugins = {status.plugin} if status.is_rejected() and status.plugin else set()
            await sched.handle_scheduling_failure(fwk, member, status, clear, start, plugins)
        unschedulable += 1

    seconds = sched.clock.monotonic() - start
    profile = fwk.profile_name()
    if group_status.is_success():
        condition = ("True", REASON_SCHEDULED, group_status.message())
        logger.info(
            "Successfully scheduled pod group %s (scheduled %d, unschedulable %d)",
            info.key,
            scheduled,
            unschedulable,
        )
    elif group_status.is_rejected():
        condition = ("False", REASON_UNSCHEDULABLE, group_status.message())
        logger.info("Unable to schedule pod group %s: %s", info.key, group_status.message())
    else:
        condition = ("False", REASON_SCHEDULER_ERROR, group_status.message())
        logger.error("Error scheduling pod group %s: %s", info.key, group_status.message())
    if metrics is not None:
        metrics.attempt(outcome, profile, seconds)
    await update_pod_group_condition(sched, info.key, condition, pod_group_lister)


def _fit_plugins(fit: FitError) -> set[str]:
    plugins = {st.plugin for _, st in fit.statuses.items() if st.plugin}
    if fit.statuses.absent.plugin:
        plugins.add(fit.statuses.absent.plugin)
    return fit.unschedulable_plugins or plugins


async def update_pod_group_condition(
    sched: Scheduler,
    key: PodGroupKey,
    condition: tuple[str, str, str],
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None,
) -> None:
    """upstream updatePodGroupCondition (see patch_group_condition)."""
    if pod_group_lister is None:
        return
    pg = pod_group_lister.get(key.name, key.namespace)
    if pg is None:
        logger.warning("Failed to get PodGroup %s for status update: not found", key)
        return
    await patch_group_condition(sched, pg, condition_type(sched.gates.version), condition)


async def patch_group_condition(
    sched: Scheduler,
    group: types_pb2.PodGroup | types_pb2.CompositePodGroup,
    type_: str,
    condition: tuple[str, str, str],
) -> None:
    """The condition (with the object's generation) set through the status subresource of a
    PodGroup or a CompositePodGroup; a True is never turned back to False; nothing is
    written when nothing changes. The patch is pinned to the resourceVersion of the object it
    was computed from: the informer's copy may not show yet a True the previous cycle wrote
    (a tree's next cycle follows within milliseconds), and a Conflict reads the object again
    and decides on that, so a stale copy never overwrites a True."""
    kind = type(group)
    name, namespace = group.metadata.name, group.metadata.namespace
    for _ in range(_CONDITION_ATTEMPTS):
        patch = _condition_patch(sched, group, type_, condition)
        if patch is None:
            return
        try:
            await sched.client.patch(kind, name, patch, namespace, subresource="status")
            return
        except Conflict:
            try:
                group = await sched.client.get(kind, name, namespace)
            except ApiError as e:
                logger.warning("Failed to read %s %s/%s: %s", kind.__name__, namespace, name, e)
                return
        except ApiError as e:
            logger.warning(
                "Failed to update %s %s/%s status: %s", kind.__name__, namespace, name, e
            )
            return
    logger.warning("Failed to update %s %s/%s status: conflicts", kind.__name__, namespace, name)


_CONDITION_ATTEMPTS: Final = 3


def _condition_patch(
    sched: Scheduler,
    group: types_pb2.PodGroup | types_pb2.CompositePodGroup,
    type_: str,
    condition: tuple[str, str, str],
) -> dict[str, object] | None:
    """The merge patch of `group`'s conditions with `condition` set, pinned to its
    resourceVersion; None when nothing is to be written."""
    value, reason, message = condition
    conditions: list[types_pb2.Condition] = []
    for c in group.status.conditions:
        copied = types_pb2.Condition()
        copied.CopyFrom(c)
        conditions.append(copied)
    existing = next((c for c in conditions if c.type == type_), None)
    if existing is not None and existing.status == "True" and value != "True":
        return None
    generation = group.metadata.generation
    if existing is None:
        existing = types_pb2.Condition(type=type_)
        conditions.append(existing)
        existing.last_transition_time.CopyFrom(timestamp(sched.clock.now()))
    elif (existing.status, existing.reason, existing.message, existing.observed_generation) == (
        value,
        reason,
        message,
        generation,
    ):
        return None
    elif existing.status != value:
        existing.last_transition_time.CopyFrom(timestamp(sched.clock.now()))
    existing.status, existing.reason, existing.message = value, reason, message
    existing.observed_generation = generation
    return {
        "metadata": {"resourceVersion": group.metadata.resource_version},
        "status": {
            "conditions": [
                {
                    "type": c.type,
                    "status": c.status,
                    "observedGeneration": c.observed_generation,
                    "lastTransitionTime": c.last_transition_time.ToJsonString(),
                    "reason": c.reason,
                    "message": c.message,
                }
                for c in conditions
            ]
        },
    }
