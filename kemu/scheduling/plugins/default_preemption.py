"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods (upstream
plugins/defaultpreemption, pkg/scheduler/framework/preemption/preemption.go Evaluator.Preempt to prepareCandidate).

The dry run is kemu.scheduling.preemption.Evaluator; this plugin is its policy:
- a pod may preempt unless its preemptionPolicy is Never, or its nominated node (still
  feasible in principle, i.e. not UnschedulableAndUnresolvable) holds a lower-priority pod that
  the scheduler's preemption is already terminating (it waits for that room instead). Which
  terminating pods count is upstream's by version (kubernetes#114623, version rule
  `preemption_by_scheduler`): from 1.27 with PodDisruptionConditions on, those with
  DisruptionTarget=True/PreemptionByScheduler; before 1.27, or with the gate off, any
  terminating lower-priority pod;
- victims on a node are its pods of strictly lower priority: all are removed, the pod must
  then fit (with the equal-or-higher-priority pods nominated to the node counted, RunFilterPluginsWithNominatedPods), and
  victims are reprieved one by one in importance order, PDB-protected ones first;
- the dry run tries max(10% of the potential nodes, 100) candidates (pluginConfig
  minCandidateNodesPercentage / minCandidateNodesAbsolute) from a random offset.
The chosen candidate goes to the Handle's PreemptionExecutor (the scheduler's API writes);
without one (a simulation) PostFilter still returns the node it would nominate and writes
nothing. With SchedulerAsyncPreemption the executor deletes the victims in a background task and
this plugin holds the preemptor at PreEnqueue ("waiting for the preemption for this pod to be
finished") until the executor says the deletions are issued. Metrics:
scheduler_preemption_attempts_total on every PostFilter call (the executor observes
scheduler_preemption_victims).

PodGroupPostFilter (`pod_group_post_filter`, KEP-5710 workload-aware preemption, called by the
scheduler's pod-group cycle): the group's eligibility (preemptionPolicy Never with
PodGroupPreemptionPolicy; a member nominated to a node where a lower-priority pod is being
preempted), then kemu.scheduling.pod_group_preemption's victim units and selection, then the
executor's `prepare_pod_group_preemption`. With workload-aware preemption on and PodGroups in
the cluster a single pod's victims come in the same units (`_select_units`).
"""

from __future__ import annotations

import contextlib
import logging
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Final, Protocol, runtime_checkable

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    POD_DISRUPTION_CONDITIONS,
    POD_GROUP_PREEMPTION_POLICY,
    SCHEDULER_ASYNC_PREEMPTION,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
)
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.labels import selector_from_label_selector
from kemu.scheduling.composite_pod_groups import WorkloadForest
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    SCHEDULER_POD_FIELD_SELECTOR,
    CycleState,
    EnqueueExtensions,
    FilterFn,
    Handle,
    NodeToStatus,
    ObjectLister,
    Plugin,
    PluginArgs,
    PostFilterPlugin,
    PreEnqueuePlugin,
)
from kemu.scheduling.plugins import (
    node_affinity,
    node_name,
    node_resources_fit,
    node_unschedulable,
    taint_toleration,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.pod_group_preemption import (
    PodGroupFits,
    PodGroupPreemption,
    VictimUnit,
    pod_group_priority,
    select_pod_group_victims,
    victim_units,
    workload_aware_preemption_enabled,
)
from kemu.scheduling.pod_group_preemption import importance as unit_importance
from kemu.scheduling.pod_group_state import GroupMembership, MembershipField
from kemu.scheduling.preemption import (
    Evaluator,
    importance_key,
    pod_terminating_by_preemption,
)
from kemu.scheduling.status import SUCCESS, Code, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult, pod_priority

logger = logging.getLogger(__name__)

NAME: Final = "DefaultPreemption"

DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE: Final = 10
DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE: Final = 100

# Entries of DefaultPreemption's per-node cache of what the lower-priority pods request before
# it is emptied (nodes that left the cluster are not removed one by one).
_KEPT_MAX: Final = 100_000
# Victims kept per node and priority (one entry per distinct request and nominated sums).
_VICTIMS_KEPT_MAX: Final = 64

NO_VICTIMS: Final = "No preemption victims found for incoming pod"
WAITING_FOR_PREEMPTION: Final = "waiting for the preemption for this pod to be finished"
# A pod-group member's own PostFilter (upstream DefaultPreemption.PostFilter, 1.36 and 1.37):
# with workload-aware preemption on, the group's PodGroupPostFilter preempts for it instead.
MEMBER_NOT_ELIGIBLE_WAP: Final = "preemption: not eligible due to workload aware preemption enabled"
# 1.36 with TopologyAwareWorkloadScheduling: a member of a PodGroup with scheduling
# constraints (each placement would preempt again), or of a PodGroup not found.
MEMBER_NOT_ELIGIBLE_PLACEMENT: Final = (
    "preemption: not eligible due to placement-based pod group scheduling limitation"
)
MEMBER_POD_GROUP_NOT_FOUND: Final = "preemption: pod group for pod not found"
_PLACEMENT_CHECK_UNTIL: Final = Version(1, 37)  # 1.37's PostFilter has no placement check


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[types_pb2.PodDisruptionBudget]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """Splits `pods` (order kept) into those whose removal would violate a PDB and the others.

    Each PDB's disruptionsAllowed is spent, pod by pod, by the pods it selects (in its
    namespace, non-empty selector); a pod already in the PDB's disruptedPods was counted by
    the apiserver and spends nothing. A pod that drives some budget below zero violates."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    selectors = []
    for pdb in pdbs:
        sel = pdb.spec.selector
        empty = not sel.match_labels and not sel.match_expressions
        selectors.append(None if empty else selector_from_label_selector(sel))
    violating: list[PodInfo] = []
    non_violating: list[PodInfo] = []
    for pi in pods:
        pod = pi.pod
        violated = False
        if pod.metadata.labels:
            for i, pdb in enumerate(pdbs):
                selector = selectors[i]
                if pdb.metadata.namespace != pod.metadata.namespace or selector is None:
                    continue
                if not selector.matches(pod.metadata.labels):
                    continue
                if pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else non_violating).append(pi)
    return violating, non_violating


def _terminating(pod: types_pb2.Pod) -> bool:
    return pod.metadata.HasField("deletion_timestamp")


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    """min(num_nodes, max(num_nodes * percentage / 100, absolute))."""
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


class DefaultPreemption(PostFilterPlugin, PreEnqueuePlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        *,
        min_candidate_nodes_percentage: int = DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE,
        min_candidate_nodes_absolute: int = DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE,
        rng: random.Random | None = None,
        resource_shortcuts: bool = True,
    ) -> None:
        self._handle = handle
        self._percentage = min_candidate_nodes_percentage
        self._absolute = min_candidate_nodes_absolute
        self._rng = rng or random.Random()
        # The dry run's resource shortcuts (cannot_fit_on_node, reprieve without Filter where
        # NodeResourcesFit's arithmetic decides); False: upstream's steps only (the reference
        # the shortcuts are compared with).
        self.resource_shortcuts = resource_shortcuts
        # The walk under way (see walk()), and per node what its pods of lower priority than
        # a preemptor's are and leave (_Lower), kept while the node and the priority stay.
        self._walk: _Walk | None = None
        self._kept: dict[str, _Lower] = {}
        # The handle as a _PlanHandle when it is one (asked once: the check is slow).
        self._plan_handle = handle if isinstance(handle, _PlanHandle) else None
        self.async_preemption = handle.gates.enabled(SCHEDULER_ASYNC_PREEMPTION)
        # Whether only pods terminating with the scheduler's DisruptionTarget make a preemptor
        # wait (else any terminating lower-priority pod on its nominated node does).
        self._wait_for_victims_only = VersionRules.at(
            handle.gates.version
        ).preemption_by_scheduler and handle.gates.enabled(POD_DISRUPTION_CONDITIONS)
        pod_lister = pdb_lister = None
        factory = handle.informer_factory()
        if factory is not None:
            pod_lister = factory.informer(
                types_pb2.Pod, field_selector=SCHEDULER_POD_FIELD_SELECTOR
            ).lister
            pdb_lister = factory.informer(types_pb2.PodDisruptionBudget).lister
        # Workload-aware preemption (KEP-5710): which group a victim is in, and its PodGroup
        # (disruptionMode, priority).
        self._membership = GroupMembership.of(handle.gates)
        self._pod_groups: ObjectLister[types_pb2.PodGroup] | None = None
        if factory is not None and self._membership.field is MembershipField.SCHEDULING_GROUP:
            self._pod_groups = factory.informer(types_pb2.PodGroup).lister
        self._pdb_lister = pdb_lister
        self._units_enabled = workload_aware_preemption_enabled(handle.gates)
        self._placement_check = handle.gates.version < _PLACEMENT_CHECK_UNTIL and (
            handle.gates.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING)
        )
        self.evaluator = Evaluator(
            NAME,
            handle,
            self,
            async_preemption=self.async_preemption,
            pod_lister=pod_lister,
            pdb_lister=pdb_lister,
        )

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ extension points

    async def post_filter(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        try:
            refusal = self.pod_group_member_refusal(pod)
            if refusal is not None:
                return None, refusal
            result, status = await self.evaluator.preempt(state, pod, statuses)
        finally:
            metrics = self._handle.metrics
            if metrics is not None:
                metrics.preemption_attempts.inc()
        if status.reasons:
            status = Status(status.code, (f"preemption: {status.message()}",), "", status.error)
        return result, status

    def pod_group_member_refusal(self, pod: types_pb2.Pod) -> Status | None:
        """Why a pod-group member (`spec.schedulingGroup`, 1.36+; a deferred resize is none,
        KEP-5836) does not preempt alone (upstream DefaultPreemption.PostFilter's first
        checks): at 1.36 with TopologyAwareWorkloadScheduling, its PodGroup not found or
        with scheduling constraints; then, with workload-aware preemption on (1.36
        WorkloadAwarePreemption, 1.37 GenericWorkload), always. None: it preempts as any
        pod (1.36 without WorkloadAwarePreemption: inside the group cycle too)."""
        if self._membership.field is not MembershipField.SCHEDULING_GROUP:
            return None
        key = self._membership.key(pod)
        if key is None:
            return None
        if self._placement_check:
            pg = self._pod_groups.get(key.name, key.namespace) if self._pod_groups else None
            if pg is None:
                return Status(Code.UNSCHEDULABLE, (MEMBER_POD_GROUP_NOT_FOUND,))
            if pg.spec.HasField("scheduling_constraints"):
                return Status(Code.UNSCHEDULABLE, (MEMBER_NOT_ELIGIBLE_PLACEMENT,))
        if self._units_enabled:
            return Status(Code.UNSCHEDULABLE, (MEMBER_NOT_ELIGIBLE_WAP,))
        return None

    async def pod_group_post_filter(
        self,
        pg: types_pb2.PodGroup | None,
        members: Sequence[types_pb2.Pod],
        fits: PodGroupFits,
        *,
        removable: Callable[[PodInfo], bool] = lambda pi: True,
    ) -> tuple[PodGroupPreemption | None, Status]:
        """Workload-aware preemption for a group that does not fit (upstream
        DefaultPreemption.PodGroupPostFilter, PodGroupEvaluator.Preempt): whether the group
        may preempt, its victims (kemu.scheduling.pod_group_preemption; `fits` runs the
        group's algorithm with some pods gone, `removable` says which pods it can take
        away), then the victims preempted through the Handle's executor. Its statuses'
        messages start with `pod group preemption: `."""
        result, status = await self._pod_group_preempt(pg, members, fits, removable)
        if status.reasons:
            status = Status(
                status.code, (f"pod group preemption: {status.message()}",), "", status.error
            )
        return result, status

    async def _pod_group_preempt(
        self,
        pg: types_pb2.PodGroup | None,
        members: Sequence[types_pb2.Pod],
        fits: PodGroupFits,
        removable: Callable[[PodInfo], bool],
    ) -> tuple[PodGroupPreemption | None, Status]:
        if not members:
            return None, Status(Code.UNSCHEDULABLE, ("no pods to schedule",))
        priority = pod_group_priority(pg, min(pod_priority(p) for p in members))
        ok, message = self._pod_group_eligible(pg, members, priority)
        if not ok:
            return None, Status(Code.UNSCHEDULABLE, (message,))
        nodes = self._handle.snapshot_shared_lister().node_infos().list()
        now_ns = int(self._handle.clock.now() * 1e9)
        units = victim_units(
            nodes,
            self._membership,
            self._pod_groups,
            now_ns,
            below=priority,
            skip=lambda pi: not removable(pi),
            forest=self._forest(),
        )
        pdbs = self._pdb_lister.list() if self._pdb_lister is not None else []
        chosen, status = select_pod_group_victims(units, pdbs, fits)
        if chosen is None:
            return None, status
        victims = chosen.pods()
        executor = self._handle.preemption_executor()
        if executor is None:
            return chosen, SUCCESS  # a simulation: nothing is written
        logger.info(
            "Preempting %d pod(s) (%d victim(s)) for pod group %s/%s",
            len(victims),
            len(chosen.victims),
            members[0].metadata.namespace,
            pg.metadata.name if pg is not None else "",
        )
        status = await executor.prepare_pod_group_preemption(
            NAME, victims, members[0], frozenset(chosen.assignments.values())
        )
        if not status.is_success():
            return None, status
        return chosen, SUCCESS

    def _pod_group_eligible(
        self, pg: types_pb2.PodGroup | None, members: Sequence[types_pb2.Pod], priority: int
    ) -> tuple[bool, str]:
        """upstream podGroupEligibleToPreemptOthers: not with preemptionPolicy Never
        (PodGroupPreemptionPolicy), nor while a member's nominated node still holds a
        lower-priority pod the scheduler's preemption is terminating."""
        if (
            pg is not None
            and self._handle.gates.enabled(POD_GROUP_PREEMPTION_POLICY)
            and pg.spec.preemption_policy == "Never"
        ):
            return False, "not eligible due to preemptionPolicy=Never."
        lister = self._handle.snapshot_shared_lister().node_infos()
        terminating = pod_terminating_by_preemption if self._wait_for_victims_only else _terminating
        for pod in members:
            nominated = pod.status.nominated_node_name
            node = lister.get(nominated) if nominated else None
            if node is None:
                continue
            for pi in node.pods:
                if pi.priority < priority and terminating(pi.pod):
                    return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        if not self.async_preemption:
            return SUCCESS
        executor = self._handle.preemption_executor()
        if executor is not None and executor.is_pod_running_preemption(pod.metadata.uid):
            return unresolvable(WAITING_FOR_PREEMPTION)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.async_preemption:
            # PreEnqueue never gates a pod then; nothing to wait for.
            return []
        # A preemptor gated by PreEnqueue must be looked at again when a victim goes; the
        # plugins that rejected it in the cycle decide whether to requeue it, so this hint
        # itself always says Skip.
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.ASSIGNED_POD, ActionType.DELETE),
                self._skip,
            )
        ]

    @staticmethod
    def _skip(pod: types_pb2.Pod, old: object, new: object) -> QueueingHint:
        return QueueingHint.SKIP

    # ------------------------------------------------------------ the policy

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        offset = self._rng.randrange(num_nodes) if num_nodes > 0 else 0
        return offset, calculate_num_candidates(num_nodes, self._percentage, self._absolute)

    def pod_eligible_to_preempt_others(
        self, pod: types_pb2.Pod, nominated_node_status: Status
    ) -> tuple[bool, str]:
        if pod.spec.preemption_policy == "Never":
            return False, "not eligible due to preemptionPolicy=Never."
        nominated = pod.status.nominated_node_name
        if nominated:
            # The nominated node can no longer take the pod whatever is removed: look elsewhere.
            if nominated_node_status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return True, ""
            node = self._handle.snapshot_shared_lister().node_infos().get(nominated)
            if node is not None:
                priority = pod_priority(pod)
                terminating = (
                    pod_terminating_by_preemption if self._wait_for_victims_only else _terminating
                )
                for pi in node.pods:
                    if pi.priority < priority and terminating(pi.pod):
                        return False, "not eligible due to a terminating pod on the nominated node."
        return True, ""

    @contextlib.contextmanager
    def walk(self, state: CycleState, pod: types_pb2.Pod) -> Iterator[None]:
        """One dry-run walk for `pod` over the cycle's `state`: what stays the same while it
        runs (nothing changes the snapshot, the nominator or the PDBs during it) is computed
        once for every node it tries: the pod's priority, NodeResourcesFit's PreFilter state,
        the nominated pods counted on each node."""
        previous = self._walk
        self._walk = self._new_walk(state, pod)
        try:
            yield
        finally:
            self._walk = previous

    def _new_walk(self, state: CycleState, pod: types_pb2.Pod) -> _Walk:
        fit = None
        if self.resource_shortcuts:
            handle = self._plan_handle
            if handle is not None:
                handle.filter_plan(state)  # (the batch path may not have computed it)
            fit = _simple_fit_state(state)
        others = None if fit is None else self._node_only_filters(state)
        priority = pod_priority(pod)
        units = self._victim_units(priority, pod.metadata.uid)
        if units is not None:
            fit = others = None  # (the shortcuts read each pod's own priority)
        return _Walk(pod, priority, pod.metadata.uid, fit, {}, others, units=units)

    def _forest(self) -> WorkloadForest | None:
        """The CompositePodGroup trees the scheduler observes (KEP-6012), if any."""
        states = self._handle.pod_group_states()
        return states.forest if states is not None else None

    def _victim_units(self, priority: int, uid: str) -> dict[str, VictimUnit] | None:
        """With workload-aware preemption on and PodGroups in the cluster, the victim unit of
        each pod of lower priority than `priority` (by uid; kemu.scheduling.pod_group_preemption:
        a disruptionMode All group's pods go together, a pod's priority is its PodGroup's when
        that sets one); None otherwise (each pod alone at its own priority)."""
        if not self._units_enabled or self._pod_groups is None or not self._pod_groups.list():
            return None
        nodes = self._handle.snapshot_shared_lister().node_infos().list()
        now_ns = int(self._handle.clock.now() * 1e9)
        units = victim_units(
            nodes,
            self._membership,
            self._pod_groups,
            now_ns,
            below=priority,
            skip=lambda pi: pi.uid == uid,
            forest=self._forest(),
        )
        return {pi.uid: unit for unit in units for pi in unit.pods}

    def _node_only_filters(self, state: CycleState) -> list[FilterFn] | None:
        """The cycle's Filter plugins other than NodeResourcesFit when the pod's Filter on a
        node depends on the node's pods only through NodeResourcesFit's arithmetic: every
        other Filter plugin that runs reads the node object alone (_NODE_ONLY_FILTERS) and no
        PreFilter extension runs (so AddPod/RemovePod change nothing a Filter reads, and
        cannot fail). Then select_victim_infos_on_node may find the victims by that
        arithmetic (_select_by_arithmetic). None otherwise."""
        handle = self._plan_handle
        if handle is None or handle.runs_pre_filter_extensions(state):
            return None
        plan = state.filter_plan or []
        others: list[FilterFn] = []
        for name, fn in plan:
            owner = handle.plugin(name)
            if name == node_resources_fit.NAME and isinstance(owner, node_resources_fit.Fit):
                continue
            if type(owner) not in _NODE_ONLY_FILTERS:
                return None
            others.append(fn)
        return others

    def _walk_for(self, state: CycleState, pod: types_pb2.Pod) -> _Walk:
        """The current walk's, or (a direct call outside a walk) one for this call only."""
        w = self._walk
        if w is not None and w.pod is pod:
            return w
        return self._new_walk(state, pod)

    def cannot_fit_on_node(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> bool:
        """NodeResourcesFit's test on the node as select_victims_on_node first filters it: every
        pod it may preempt gone (see _fit_fails). What the node's pods of lower priority
        request is kept per node while the node's generation, the priority and the pod stay
        the same (later walks ask again for the same nodes)."""
        w = self._walk_for(state, pod)
        fit = w.fit
        if fit is None or w.units is not None:
            return False
        e = self._without_lower(w, node)
        if self._fit_fails(w, fit, node, e.cpu, e.memory, e.ephemeral, e.count):
            return True
        w.fits = node  # select_victim_infos_on_node, next, need not ask again
        return False

    def _without_lower(self, w: _Walk, node: NodeInfo) -> _Lower:
        """The pods of `node` of lower priority than the walk's pod, other than the pod
        itself, and what the node holds without them (_Lower), kept per node while its
        generation and the priority stay the same (the pod itself is on the node only for
        a resize's preemption: then computed for this call alone)."""
        priority, uid = w.priority, w.uid
        e = self._kept.get(node.name)
        if e is None or e.generation != node.generation or e.priority != priority:
            used = node.requested
            cpu, memory, ephemeral = used.milli_cpu, used.memory, used.ephemeral_storage
            lower = tuple(pi for pi in node.pods if pi.priority < priority)
            for pi in lower:
                r = pi.requests
                cpu -= r.milli_cpu
                memory -= r.memory
                ephemeral -= r.ephemeral_storage
            e = _Lower(
                node.generation,
                priority,
                lower,
                frozenset(pi.uid for pi in lower),
                cpu,
                memory,
                ephemeral,
                len(node.pods) - len(lower),
            )
            if len(self._kept) >= _KEPT_MAX:
                self._kept.clear()
            self._kept[node.name] = e
        if uid in e.uids:
            # Not kept: the same node without that one pod among those it lists.
            e = _Lower.without(e, uid)
        return e

    def _nominated(self, w: _Walk, node: NodeInfo) -> tuple[int, int, int, int]:
        """What the pods nominated to `node` with at least the pod's priority (not the pod
        itself) request, and how many they are: run_filter_plugins_with_nominated_pods's
        first run counts them."""
        sums = w.nominated.get(node.name)
        if sums is None:
            cpu = memory = ephemeral = count = 0
            nominator = self._handle.nominator()
            if nominator is not None and node.node is not None:
                for pi in nominator.nominated_pods_for_node(node.name):
                    if pi.priority < w.priority or pi.uid == w.uid:
                        continue
                    r = pi.requests
                    cpu += r.milli_cpu
                    memory += r.memory
                    ephemeral += r.ephemeral_storage
                    count += 1
            sums = w.nominated[node.name] = (cpu, memory, ephemeral, count)
        return sums

    def _fit_fails(
        self,
        w: _Walk,
        fit: node_resources_fit.PreFilterState,
        node: NodeInfo,
        cpu: int,
        memory: int,
        ephemeral: int,
        count: int,
    ) -> bool:
        """Whether NodeResourcesFit rejects the pod (fits_request) on `node` holding `count` pods
        that request `cpu`, `memory` and `ephemeral`, with the pods of at least the pod's
        priority nominated to the node added, as run_filter_plugins_with_nominated_pods's
        first run does. Then that Filter run fails, whichever plugin rejects the pod first (or
        errs): nothing in the dry run depends on which, only on its not being a success."""
        n_cpu, n_memory, n_ephemeral, n_count = self._nominated(w, node)
        alloc = node.allocatable
        if count + n_count + 1 > alloc.allowed_pod_number:
            return True
        return (
            (fit.milli_cpu > 0 and fit.milli_cpu > alloc.milli_cpu - cpu - n_cpu)
            or (fit.memory > 0 and fit.memory > alloc.memory - memory - n_memory)
            or (
                fit.ephemeral_storage > 0
                and fit.ephemeral_storage > alloc.ephemeral_storage - ephemeral - n_ephemeral
            )
        )

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[list[types_pb2.Pod], int, Status]:
        """See the module docstring; `node` and `state` are copies this may change."""
        victims, violations, status = self._select(state, pod, node, pdbs, copy=False)
        return [pi.pod for pi in victims], violations, status

    def select_victim_infos_on_node(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[Sequence[PodInfo], int, Status]:
        """select_victims_on_node on the snapshot's `node` and the cycle's `state`, both left
        unchanged: where the Filter depends on the node's pods only through NodeResourcesFit's
        arithmetic, no copy is made (_select_by_arithmetic); otherwise the copy of the node is
        made already without the pods it may preempt (NodeInfo.clone_without) rather than
        cloned whole and emptied one pod at a time, and the state is cloned. The victims as
        their PodInfos."""
        return self._select(state, pod, node, pdbs, copy=True)

    def _select(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        *,
        copy: bool,
    ) -> tuple[Sequence[PodInfo], int, Status]:
        fh = self._handle
        w = self._walk_for(state, pod)
        priority, uid = w.priority, w.uid
        # A running pod preempting for its Deferred resize (KEP-5836) is on this node itself;
        # its equal priority already keeps it out, the uid says so explicitly. Its cached copy
        # stays on the node: NodeResourcesFit counts only what the resize adds to it.
        if w.units is not None:
            return self._select_units(w.units, state, pod, node, pdbs, copy=copy)
        if copy and w.others is not None and w.fit is not None:
            found = self._select_by_arithmetic(w, w.fit, w.others, state, pod, node, pdbs)
            if found is not None:
                return found
        potential = [pi for pi in node.pods if pi.priority < priority and pi.uid != uid]
        if not potential:
            return [], 0, unresolvable(NO_VICTIMS)
        state, node, status = self._remove_all(state, pod, node, potential, copy=copy)
        if not status.is_success():
            return [], 0, status
        status = fh.run_filter_plugins_with_nominated_pods(state, pod, node)
        if not status.is_success():
            # Even with every lower-priority pod gone the pod does not fit here.
            return [], 0, status

        now_ns = int(fh.clock.now() * 1e9)
        potential.sort(key=lambda pi: importance_key(pi, now_ns))
        if pdbs:
            violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        else:
            violating, non_violating = [], potential
        victims: list[PodInfo] = []

        fit = w.fit

        def reprieve(pi: PodInfo) -> bool:
            """Puts `pi` back; keeps it if the pod still fits, else it is a victim."""
            if fit is not None:
                # Not upstream's steps, its outcome: where NodeResourcesFit alone rejects the
                # pod beside `pi`, the Filter run fails; upstream adds `pi` (AddPod), filters
                # and removes it again (RemovePod), which leaves the copies as they were.
                used, r = node.requested, pi.requests
                if self._fit_fails(
                    w,
                    fit,
                    node,
                    used.milli_cpu + r.milli_cpu,
                    used.memory + r.memory,
                    used.ephemeral_storage + r.ephemeral_storage,
                    len(node.pods) + 1,
                ):
                    victims.append(pi)
                    return False
            node.add_pod_info(pi)
            s = fh.run_pre_filter_extension_add_pod(state, pod, pi, node)
            if not s.is_success():
                raise _ExtensionError(s)
            if fh.run_filter_plugins_with_nominated_pods(state, pod, node).is_success():
                return True
            s = self._remove(state, pod, pi, node)
            if not s.is_success():
                raise _ExtensionError(s)
            victims.append(pi)
            return False

        violations = 0
        try:
            for pi in violating:
                if not reprieve(pi):
                    violations += 1
            for pi in non_violating:
                reprieve(pi)
        except _ExtensionError as e:
            return [], 0, e.status
        if violating and non_violating:
            victims.sort(key=lambda pi: importance_key(pi, now_ns))
        return victims, violations, SUCCESS

    def _select_units(
        self,
        units: dict[str, VictimUnit],
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        *,
        copy: bool,
    ) -> tuple[Sequence[PodInfo], int, Status]:
        """_select with workload-aware preemption's victim units (upstream's DomainVictims
        seen by a single pod's preemption, isPreemptionAllowedAcrossAllVictimNodes): the
        units with a pod on `node` are the potential victims, each at its unit's priority;
        the unit's pods on this node leave and come back together in the reprieve, and a
        unit that stays a victim takes its pods on every other node with it (a
        disruptionMode All group). The victims as their PodInfos, unit by unit, most
        important unit first."""
        fh = self._handle
        touching: dict[int, VictimUnit] = {}
        for pi in node.pods:
            unit = units.get(pi.uid)
            if unit is not None:
                touching.setdefault(id(unit), unit)
        if not touching:
            return [], 0, unresolvable(NO_VICTIMS)
        local = {
            id(u): [pi for pi in u.pods if pi.pod.spec.node_name == node.name]
            for u in touching.values()
        }
        leaving = [pi for pis in local.values() for pi in pis]
        state, node, status = self._remove_all(state, pod, node, leaving, copy=copy)
        if not status.is_success():
            return [], 0, status
        # A unit's pods on other nodes go through the PreFilter extensions only (upstream:
        # only the main node's NodeInfo changes).
        lister = fh.snapshot_shared_lister().node_infos()
        remote: dict[int, list[tuple[PodInfo, NodeInfo]]] = {}
        for key, unit in touching.items():
            pairs = []
            for pi in unit.pods:
                where = pi.pod.spec.node_name
                other = lister.get(where) if where != node.name else None
                if other is not None:
                    pairs.append((pi, other))
            remote[key] = pairs
            for pi, other in pairs:
                status = fh.run_pre_filter_extension_remove_pod(state, pod, pi, other)
                if not status.is_success():
                    return [], 0, status
        status = fh.run_filter_plugins_with_nominated_pods(state, pod, node)
        if not status.is_success():
            return [], 0, status
        ordered = sorted(touching.values(), key=unit_importance)
        violating_uids: set[str] = set()
        if pdbs:
            all_pods = [pi for u in ordered for pi in u.pods]
            violating_pods, _ = filter_pods_with_pdb_violation(all_pods, pdbs)
            violating_uids = {pi.uid for pi in violating_pods}
        violating = [u for u in ordered if any(pi.uid in violating_uids for pi in u.pods)]
        non_violating = [u for u in ordered if not any(pi.uid in violating_uids for pi in u.pods)]
        victims: list[VictimUnit] = []
        violations = 0
        for group, violates in ((violating, True), (non_violating, False)):
            for unit in group:
                back = local[id(unit)]
                for pi in back:
                    node.add_pod_info(pi)
                    s = fh.run_pre_filter_extension_add_pod(state, pod, pi, node)
                    if not s.is_success():
                        return [], 0, s
                for pi, other in remote[id(unit)]:
                    s = fh.run_pre_filter_extension_add_pod(state, pod, pi, other)
                    if not s.is_success():
                        return [], 0, s
                if fh.run_filter_plugins_with_nominated_pods(state, pod, node).is_success():
                    continue  # reprieved
                for pi in back:
                    s = self._remove(state, pod, pi, node)
                    if not s.is_success():
                        return [], 0, s
                for pi, other in remote[id(unit)]:
                    s = fh.run_pre_filter_extension_remove_pod(state, pod, pi, other)
                    if not s.is_success():
                        return [], 0, s
                victims.append(unit)
                violations += violates
        victims.sort(key=unit_importance)
        return [pi for unit in victims for pi in unit.pods], violations, SUCCESS

    def _select_by_arithmetic(
        self,
        w: _Walk,
        fit: node_resources_fit.PreFilterState,
        others: list[FilterFn],
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[Sequence[PodInfo], int, Status] | None:
        """_select's outcome without its copies, when the walk's Filter depends on the node's
        pods only through NodeResourcesFit's arithmetic (_node_only_filters): the other
        plugins' verdict is the same on every copy of the node (they read the node object),
        so each Filter run of the steps (every victim removed, then each reprieve: the node
        with the nominated pods that count added, then without them) succeeds exactly when
        they accept the node and NodeResourcesFit's arithmetic (_fit_fails, which with the
        nominated pods added also decides the run without them) passes. None when there is
        no pod to preempt, the pod does not fit with every victim gone or another plugin
        rejects the node: the steps then give the exact Status.

        Without PDBs the victims depend only on the node's lower-priority pods in importance
        order (kept in _Lower when none of them lacks a start time: the order then does not
        depend on the clock), the pod's requests and the nominated pods' sums on the node:
        they are kept by those (later preemptors of the same priority revisit the node)."""
        e = self._without_lower(w, node)
        if not e.lower:
            return None
        cpu, memory, ephemeral, count = e.cpu, e.memory, e.ephemeral, e.count
        if w.fits is not node and self._fit_fails(w, fit, node, cpu, memory, ephemeral, count):
            return None
        for fn in others:
            try:
                if fn(state, pod, node).code is not Code.SUCCESS:
                    return None
            except Exception:
                return None  # the steps report it as the runtime does
        nominated = self._nominated(w, node)
        key = (fit.milli_cpu, fit.memory, fit.ephemeral_storage, *nominated)
        if not pdbs:
            kept = e.victims.get(key)
            if kept is not None:
                return kept, 0, SUCCESS  # the same tuple: the dry run reuses its Candidate
        now_ns = int(self._handle.clock.now() * 1e9)
        ordered = e.ordered
        if ordered is None:
            potential = sorted(e.lower, key=lambda pi: importance_key(pi, now_ns))
            if all(pi.start_time_ns() is not None for pi in potential):
                e.ordered = tuple(potential)
        else:
            potential = list(ordered)
        if pdbs:
            violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
        else:
            violating, non_violating = [], potential
        # _fit_fails for each reprieve, its per-node terms computed once: a victim put back
        # stays when the node then still holds at most `max_count` pods and, for each
        # resource the pod requests, at most what leaves room for it.
        n_cpu, n_memory, n_ephemeral, n_count = nominated
        alloc = node.allocatable
        max_count = alloc.allowed_pod_number - n_count - 1
        big = 1 << 62  # no limit for a resource the pod does not request
        max_cpu = alloc.milli_cpu - n_cpu - fit.milli_cpu if fit.milli_cpu > 0 else big
        max_memory = alloc.memory - n_memory - fit.memory if fit.memory > 0 else big
        max_ephemeral = (
            alloc.ephemeral_storage - n_ephemeral - fit.ephemeral_storage
            if fit.ephemeral_storage > 0
            else big
        )
        victims: list[PodInfo] = []
        violations = 0
        for group, violates in ((violating, True), (non_violating, False)):
            for pi in group:
                r = pi.requests
                c, m, ep = cpu + r.milli_cpu, memory + r.memory, ephemeral + r.ephemeral_storage
                if count < max_count and c <= max_cpu and m <= max_memory and ep <= max_ephemeral:
                    cpu, memory, ephemeral, count = c, m, ep, count + 1  # reprieved: it stays
                else:
                    victims.append(pi)
                    violations += violates
        if violating and non_violating:
            victims.sort(key=lambda pi: importance_key(pi, now_ns))
        if not pdbs and e.ordered is not None:
            if len(e.victims) >= _VICTIMS_KEPT_MAX:
                e.victims.clear()
            kept = e.victims[key] = tuple(victims)
            return kept, violations, SUCCESS
        return victims, violations, SUCCESS

    def _remove_all(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        leaving: Sequence[PodInfo],
        *,
        copy: bool,
    ) -> tuple[CycleState, NodeInfo, Status]:
        """The dry run's first step: every pod of `leaving` taken out of `node`. With `copy`,
        on copies of the cycle's state and the node (the snapshot's node and the cycle's state
        stay as they are), the PreFilter extensions told once all are gone rather than after
        each removal (they read the node's name and labels, which removals do not change);
        else in place, one by one. The state and node to go on with, and the first failure."""
        fh = self._handle
        if copy:
            state = state.clone()
            node = node.clone_without(leaving)
            for pi in leaving:
                status = fh.run_pre_filter_extension_remove_pod(state, pod, pi, node)
                if not status.is_success():
                    return state, node, status
            return state, node, SUCCESS
        for pi in leaving:
            status = self._remove(state, pod, pi, node)
            if not status.is_success():
                return state, node, status
        return state, node, SUCCESS

    def _remove(self, state: CycleState, pod: types_pb2.Pod, pi: PodInfo, node: NodeInfo) -> Status:
        if not node.remove_pod(pi.pod):
            return as_error(f"pod {pi.key} not found on node {node.name}")
        return self._handle.run_pre_filter_extension_remove_pod(state, pod, pi, node)


def _simple_fit_state(state: CycleState) -> node_resources_fit.PreFilterState | None:
    """NodeResourcesFit's PreFilter state when its Filter runs in this cycle and its test
    is the plain comparison (the pod is not bound, KEP-5836, and requests no scalar
    resource), so that the dry run may compute it; else None."""
    plan = state.filter_plan
    if plan is None or not any(name == node_resources_fit.NAME for name, _ in plan):
        return None
    s = state.read(node_resources_fit.PRE_FILTER_STATE_KEY)
    if not isinstance(s, node_resources_fit.PreFilterState) or s.assigned_node or s.scalars:
        return None
    return s


@dataclass(slots=True)
class _Walk:
    """What DefaultPreemption computes once per dry-run walk (see DefaultPreemption.walk):
    the pod, its priority and uid, NodeResourcesFit's PreFilter state when the dry run may
    do that plugin's arithmetic itself (_simple_fit_state), and per node what the nominated
    pods that count there request (cpu, memory, ephemeral storage, pods)."""

    pod: types_pb2.Pod
    priority: int
    uid: str
    fit: node_resources_fit.PreFilterState | None
    nominated: dict[str, tuple[int, int, int, int]]
    # The other Filter plugins when the victims may be found by NodeResourcesFit's
    # arithmetic (DefaultPreemption._node_only_filters), else None.
    others: list[FilterFn] | None = None
    # The node cannot_fit_on_node last found room on (nothing changes during a walk).
    fits: NodeInfo | None = None
    # Workload-aware preemption's victim unit of each potential victim (by uid), when the
    # cluster has PodGroups (DefaultPreemption._victim_units); None: each pod alone.
    units: dict[str, VictimUnit] | None = None


@dataclass(slots=True)
class _Lower:
    """A node's pods of lower priority than `priority` (node order), their uids, what the
    node holds without them (cpu, memory, ephemeral storage, pods), for the node at
    `generation`; once computed, the same pods in importance order (when each has a start
    time) and, per (the pod's cpu, memory and ephemeral storage requests, the nominated
    pods' sums on the node), the victims chosen without PDBs."""

    generation: int
    priority: int
    lower: tuple[PodInfo, ...]
    uids: frozenset[str]
    cpu: int
    memory: int
    ephemeral: int
    count: int
    ordered: tuple[PodInfo, ...] | None = None
    victims: dict[tuple[int, ...], tuple[PodInfo, ...]] = field(default_factory=dict)

    @staticmethod
    def without(e: _Lower, uid: str) -> _Lower:
        """`e` without the pod `uid` among `lower` (counted as staying on the node)."""
        out = _Lower(
            e.generation, e.priority, (), frozenset(), e.cpu, e.memory, e.ephemeral, e.count
        )
        lower: list[PodInfo] = []
        for pi in e.lower:
            if pi.uid == uid:
                r = pi.requests
                out.cpu += r.milli_cpu
                out.memory += r.memory
                out.ephemeral += r.ephemeral_storage
                out.count += 1
            else:
                lower.append(pi)
        out.lower = tuple(lower)
        out.uids = frozenset(pi.uid for pi in lower)
        return out


@runtime_checkable
class _PlanHandle(Protocol):
    """A Handle that gives a cycle's Filter plan and says whether PreFilter extensions run in
    it (the runtime's Framework)."""

    def filter_plan(self, state: CycleState) -> list[tuple[str, FilterFn]]: ...

    def runs_pre_filter_extensions(self, state: CycleState) -> bool: ...

    def plugin(self, name: str) -> Plugin | None: ...


# The Filter plugins whose verdict on a node reads the node object (name, labels, taints,
# unschedulable) and the pod, never the node's pods: removing or adding pods on a copy of the
# node does not change it.
_NODE_ONLY_FILTERS: Final[frozenset[type]] = frozenset(
    {
        node_affinity.NodeAffinity,
        node_name.NodeName,
        node_unschedulable.NodeUnschedulable,
        taint_toleration.TaintToleration,
    }
)


class _ExtensionError(Exception):
    def __init__(self, status: Status) -> None:
        super().__init__(status.message())
        self.status = status


def _int_arg(args: PluginArgs, key: str, default: int) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{NAME} args: {key}: expected an integer, got {value!r}")
    return value


def new(args: PluginArgs, handle: Handle) -> DefaultPreemption:
    check_arg_keys(args, ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"), NAME)
    percentage = _int_arg(
        args, "minCandidateNodesPercentage", DEFAULT_MIN_CANDIDATE_NODES_PERCENTAGE
    )
    absolute = _int_arg(args, "minCandidateNodesAbsolute", DEFAULT_MIN_CANDIDATE_NODES_ABSOLUTE)
    if not 0 <= percentage <= 100:
        raise ValueError(
            f"{NAME} args: minCandidateNodesPercentage: {percentage} is not in the range [0, 100]"
        )
    if absolute < 0:
        raise ValueError(
            f"{NAME} args: minCandidateNodesAbsolute: {absolute} is not in the range [0, inf)"
        )
    if percentage == 0 and absolute == 0:
        raise ValueError(
            f"{NAME} args: minCandidateNodesPercentage and minCandidateNodesAbsolute "
            "cannot both be zero"
        )
    return DefaultPreemption(
        handle,
        min_candidate_nodes_percentage=percentage,
        min_candidate_nodes_absolute=absolute,
        rng=handle.rng,
    )
