"""Preemption's dry run (upstream pkg/scheduler/framework/preemption, the Evaluator without its
Executor): which node to nominate a pod to, and which lower-priority pods would have to go
there, computed over the cycle's snapshot (pkg/scheduler/framework/preemption/preemption.go Evaluator.Preempt, SelectVictimsOnNode, pickOneNodeForPreemption). Pure: no API writes.

`Evaluator.evaluate` is upstream Preempt up to choosing the candidate; the policy (which pods
may be victims, how many candidate nodes to try) comes from a PostFilter plugin through
`PreemptionPolicy`:

1. whether the pod may preempt at all (`pod_eligible_to_preempt_others`);
2. candidates: the nodes the cycle found Unschedulable (not UnschedulableAndUnresolvable),
   dry-run from a random offset (`dry_run_preemption`) until enough candidates are found, each
   with the victims its `select_victims_on_node` picks on a copy of the node and cycle state;
3. no candidate: Unschedulable with upstream's "0/N nodes are available" message and a result
   that clears the pod's nominated node; otherwise the best candidate
   (`pick_one_node_for_preemption`, upstream's exact criteria order).

It needs only a Handle (a `kemu.scheduling.runtime.Framework` over a snapshot), the pod, the
cycle's node statuses and the PDBs: a simulation (the autoscaler, resize preemption) calls it
without a scheduler. `Evaluator.preempt` is what a PostFilter plugin runs in the scheduler: the
latest copy of the pod and the PDBs from the informers, `evaluate`, then the chosen candidate
handed to the Handle's `PreemptionExecutor` (the scheduler process's API writes, synchronous or
SchedulerAsyncPreemption's background task). Without an executor (a simulation) nothing is
written and the result still nominates the chosen node: what the scheduler would do.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Final, Protocol

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import POD_DISRUPTION_CONDITIONS, FeatureGates
from kemu.component.version_rules import VersionRules
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.keys import object_key
from kemu.machinery.labels import selector_from_label_selector
from kemu.scheduling.interface import (
    CycleState,
    FitError,
    Handle,
    NodeToStatus,
    ObjectLister,
    PodNominator,
)
from kemu.scheduling.nominator import PodLister
from kemu.scheduling.status import SUCCESS, Code, Status, as_error, unresolvable
from kemu.scheduling.types import (
    NodeInfo,
    PodInfo,
    PostFilterResult,
    PreemptionDetail,
    pod_priority,
)

logger = logging.getLogger(__name__)

# The condition the executor puts on a victim before deleting it; eligibility reads it back
# (a pod terminating for this reason is room being made for a preemptor).
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
# Its name before kubernetes#114623 (1.25 and 1.26; version rule `preemption_by_scheduler`).
PREEMPTION_BY_KUBE_SCHEDULER: Final = "PreemptionByKubeScheduler"


def preemption_disruption_reason(gates: FeatureGates) -> str | None:
    """The reason of the DisruptionTarget condition a scheduler with `gates` puts on its
    victims: None without PodDisruptionConditions (no condition), PreemptionByKubeScheduler
    before 1.27, PreemptionByScheduler since."""
    if not gates.enabled(POD_DISRUPTION_CONDITIONS):
        return None
    if VersionRules.at(gates.version).preemption_by_scheduler:
        return PREEMPTION_BY_SCHEDULER
    return PREEMPTION_BY_KUBE_SCHEDULER


NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
# Nodes whose last Candidate the dry run keeps (Evaluator._candidates) before it is emptied.
_CANDIDATES_KEPT_MAX: Final = 100_000
# Shift that makes every priority non-negative in the sum criterion (math.MaxInt32 + 1).
_PRIORITY_SHIFT: Final = 2**31


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods to remove from one node, most important first, and how many of them are
    protected by a PodDisruptionBudget that their removal would violate."""

    pods: tuple[types_pb2.Pod, ...]
    num_pdb_violations: int = 0
    # The same pods' PodInfos when the dry run has them (priority and start time read once);
    # empty otherwise.
    infos: tuple[PodInfo, ...] = field(default=(), compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where preemption would make the pod fit."""

    name: str
    victims: Victims


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The dry run's answer for one pod. `candidate` is the node and victims chosen, None when
    the pod may not preempt or preemption cannot help; `result` and `status` are what PostFilter
    reports once that candidate is being prepared: (None, Error) for a transient failure,
    (None, Unschedulable) when the pod may not preempt now (its nomination stays),
    (PostFilterResult(""), Unschedulable) when preemption cannot help (the nomination is
    cleared), (PostFilterResult(node), Success) with a candidate."""

    result: PostFilterResult | None
    status: Status
    candidate: Candidate | None = None


class PreemptionPolicy(Protocol):
    """What a preemption plugin decides (upstream preemption.Interface)."""

    def get_offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        """Where the dry run starts among the potential nodes, and how many candidates it
        looks for."""
        ...

    def pod_eligible_to_preempt_others(
        self, pod: types_pb2.Pod, nominated_node_status: Status
    ) -> tuple[bool, str]:
        """Whether `pod` may preempt now, else why not."""
        ...

    def select_victims_on_node(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[list[types_pb2.Pod], int, Status]:
        """The victims on `node` (a copy, as is `state`), the number of PDB-violating ones,
        and Success; or why the node cannot be made to fit."""
        ...

    def select_victim_infos_on_node(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[Sequence[PodInfo], int, Status]:
        """select_victims_on_node with the victims' PodInfos, on the snapshot's `node` itself
        and the cycle's `state`, which it must not change (it works on its own copies, made
        only when it needs them). A tuple it returns again for the node (the same object)
        means the same victims: the dry run then reuses its Candidate."""
        ...

    def walk(self, state: CycleState, pod: types_pb2.Pod) -> AbstractContextManager[None]:
        """Entered around each walk of the dry run over the nodes (nothing changes the
        snapshot or the nominator during it): the policy may compute once what its per-node
        calls for this pod and cycle `state` share."""
        ...

    def cannot_fit_on_node(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> bool:
        """A cheap test on `node` itself (not a copy; nothing may change): True only when
        `select_victims_on_node` is certain not to find victims there (the pod would not fit
        even with every pod it may preempt gone); False when unsure. Not upstream: the dry
        run skips those nodes, which upstream would have found to be no candidate anyway."""
        ...


# ---------------------------------------------------------------- ordering helpers


def pod_start_time_ns(pod: types_pb2.Pod, now_ns: int) -> int:
    """status.startTime in nanoseconds, or `now_ns` for a pod that has not started."""
    if pod.status.HasField("start_time"):
        return int(pod.status.start_time.ToNanoseconds())
    return now_ns


def more_important_pod(a: types_pb2.Pod, b: types_pb2.Pod, now_ns: int) -> bool:
    """Higher priority first; on equal priority the pod that started earlier (upstream
    util.MoreImportantPod)."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    return pod_start_time_ns(a, now_ns) < pod_start_time_ns(b, now_ns)


def importance_key(pi: PodInfo, now_ns: int) -> tuple[int, int]:
    """A sort key putting the more important pod (more_important_pod) first."""
    started = pi.start_time_ns()
    return (-pi.priority, now_ns if started is None else started)


ONLY_CANDIDATE: Final = "onlyCandidate"
CRITERIA: Final = (
    "fewestPDBViolations",
    "lowestHighestPriorityVictim",
    "lowestPrioritySum",
    "fewestVictims",
    "latestStartTime",
    "firstCandidate",
)
"""pick_one_node_for_preemption's criteria in upstream's order, as the decision record names
them (upstream's comments in pickOneNodeForPreemption say them in words)."""


@dataclass(frozen=True, slots=True)
class NodePick:
    """The node pick_one_node_for_preemption chose ("" when there were no candidates) and
    which criterion left it as the only node (kemu's decision record): one of CRITERIA,
    ONLY_CANDIDATE for a single candidate, "" for none."""

    node: str
    criterion: str


def pick_one_node_for_preemption(nodes_to_victims: dict[str, Victims], now_ns: int) -> NodePick:
    """upstream pickOneNodeForPreemption: each criterion keeps the nodes with the best score,
    until one node is left: fewest PDB violations, lowest highest-priority victim, smallest
    sum of (priority + 2^31), fewest victims, latest start of the earliest highest-priority
    victim; then the first remaining candidate.

    Keeping the best of each criterion in turn is keeping the nodes whose scores, as a tuple
    in that order, are the greatest: the first such node is the answer. The first four scores
    are compared at once; the start times are read only for the nodes tied on them. The
    criterion that decided comes from the same scores: the one after the longest prefix of
    the winner's scores that another node shares."""
    if len(nodes_to_victims) <= 1:
        only = next(iter(nodes_to_victims), "")
        return NodePick(only, ONLY_CANDIDATE if only else "")
    # Each victim's priority, read once (from the PodInfos when the dry run kept them).
    priorities: dict[str, list[int]] = {}
    keys: list[tuple[int, int, int, int]] = []
    best: tuple[int, int, int, int] | None = None
    tied: list[str] = []
    shift = _PRIORITY_SHIFT
    for node, victims in nodes_to_victims.items():
        infos = victims.infos
        if len(infos) == len(victims.pods):
            prios = [pi.priority for pi in infos]
        else:
            prios = [pod_priority(p) for p in victims.pods]
        priorities[node] = prios
        n = len(prios)
        key = (-victims.num_pdb_violations, -prios[0], -(sum(prios) + n * shift), -n)
        keys.append(key)
        if best is None or key > best:
            best, tied = key, [node]
        elif key == best:
            tied.append(node)
    assert best is not None  # two nodes or more
    if len(tied) == 1:
        shared = max(_shared_prefix(key, best) for key in keys if key != best)
        return NodePick(tied[0], CRITERIA[shared])

    def latest_start(node: str) -> int:
        victims = nodes_to_victims[node]
        prios = priorities[node]
        top = max(prios)
        infos = victims.infos
        earliest: int | None = None
        if len(infos) == len(victims.pods):
            for pi, q in zip(infos, prios, strict=True):
                if q == top:
                    t = pi.start_time_ns()
                    t = now_ns if t is None else t
                    if earliest is None or t < earliest:
                        earliest = t
        else:
            for p, q in zip(victims.pods, prios, strict=True):
                if q == top:
                    t = pod_start_time_ns(p, now_ns)
                    if earliest is None or t < earliest:
                        earliest = t
        assert earliest is not None  # `top` is one of them
        return earliest

    starts = [latest_start(node) for node in tied]
    latest = max(starts)
    # the first of the nodes with the greatest score, as upstream's loop keeps it
    chosen = tied[starts.index(latest)]
    criterion = "latestStartTime" if starts.count(latest) == 1 else "firstCandidate"
    return NodePick(chosen, criterion)


def _shared_prefix(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """How many leading scores `a` and `b` have in common."""
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        if x != y:
            return i
    return len(a)


def violated_budgets(
    victims: Sequence[types_pb2.Pod], pdbs: Sequence[types_pb2.PodDisruptionBudget]
) -> tuple[tuple[str, ...], ...]:
    """Per victim, the PodDisruptionBudgets (namespace/name) that select it and whose
    disruptionsAllowed removing all of `victims` would take below zero (a pod already in a
    budget's disruptedPods spends nothing of it, as filterPodsWithPDBViolation counts)."""
    names: list[list[str]] = [[] for _ in victims]
    for pdb in pdbs:
        sel = pdb.spec.selector
        if not sel.match_labels and not sel.match_expressions:
            continue
        selector = selector_from_label_selector(sel)
        spending = [
            j
            for j, pod in enumerate(victims)
            if pod.metadata.namespace == pdb.metadata.namespace
            and pod.metadata.name not in pdb.status.disrupted_pods
            and selector.matches(pod.metadata.labels)
        ]
        if len(spending) > pdb.status.disruptions_allowed:
            for j in spending:
                names[j].append(object_key(pdb))
    return tuple(tuple(n) for n in names)


def victims_to_delete(victims: Sequence[types_pb2.Pod]) -> list[types_pb2.Pod]:
    """The victims whose deletion has not started: the asynchronous preparation sends no
    second deletion, and does nothing (nominations included) when none is left (upstream
    prepareCandidateAsync)."""
    return [v for v in victims if not v.metadata.HasField("deletion_timestamp")]


def lower_priority_nominated_pods(
    nominator: PodNominator | None, preemptor: types_pb2.Pod, node: str
) -> list[types_pb2.Pod]:
    """The pods nominated to `node` with a lower priority than `preemptor`: they may no longer
    fit there once it runs, so preemption clears their nomination (upstream prepareCandidate,
    getLowerPriorityNominatedPods). Equal priority keeps it."""
    if nominator is None:
        return []
    priority = pod_priority(preemptor)
    return [
        pi.pod
        for pi in nominator.nominated_pods_for_node(node)
        if pod_priority(pi.pod) < priority and pi.pod.status.nominated_node_name
    ]


def pod_terminating_by_preemption(pod: types_pb2.Pod) -> bool:
    """Being deleted, and the scheduler's preemption is why (DisruptionTarget=True with reason
    PreemptionByScheduler)."""
    if not pod.metadata.HasField("deletion_timestamp"):
        return False
    for c in pod.status.conditions:
        if c.type == DISRUPTION_TARGET:
            return c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER
    return False


# ---------------------------------------------------------------- the evaluator


class Evaluator:
    """Preemption's dry run for one plugin (upstream preemption.Evaluator), and `preempt`, which
    runs it and hands the chosen candidate to the Handle's executor. See the module docstring.

    `pod_lister` and `pdb_lister` are the scheduler's informers (None in simulations: the pod
    is taken as given and there are no PDBs)."""

    def __init__(
        self,
        plugin_name: str,
        handle: Handle,
        policy: PreemptionPolicy,
        *,
        async_preemption: bool = False,
        pod_lister: PodLister | None = None,
        pdb_lister: ObjectLister[types_pb2.PodDisruptionBudget] | None = None,
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        self.async_preemption = async_preemption
        self.pod_lister = pod_lister
        self.pdb_lister = pdb_lister
        # Per node, the last victims tuple the policy returned and the Candidate made of it:
        # the same tuple again (a policy's kept answer) is the same, immutable, Candidate.
        self._candidates: dict[str, tuple[tuple[PodInfo, ...], int, Candidate]] = {}

    def _now_ns(self) -> int:
        return int(self.handle.clock.now() * 1e9)

    # ------------------------------------------------------------ in the scheduler

    async def preempt(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """upstream Preempt: `evaluate` on the latest copy of the pod, then the candidate's
        preparation by the executor (see Evaluation for what the result means). An executor's
        failure in synchronous mode is (None, Error): the nomination stays."""
        if self.pod_lister is not None:
            latest = self.pod_lister.get(pod.metadata.name, pod.metadata.namespace)
            if latest is None:
                return None, as_error(f'pod "{object_key(pod)}" not found')
            pod = latest
        pdbs = self.pdb_lister.list() if self.pdb_lister is not None else []
        evaluation = self.evaluate(state, pod, statuses, pdbs)
        best = evaluation.candidate
        if best is None:
            return evaluation.result, evaluation.status
        executor = self.handle.preemption_executor()
        if executor is None:
            # A simulation: report the node the scheduler would nominate, remove nothing.
            logger.debug(
                "No preemption executor: %s would preempt %d pod(s) on %s",
                object_key(pod),
                len(best.victims.pods),
                best.name,
            )
            return evaluation.result, evaluation.status
        logger.info(
            "Preempting %d pod(s) on %s for %s",
            len(best.victims.pods),
            best.name,
            object_key(pod),
        )
        # The nominations the preparation clears, for the decision record: none when the
        # asynchronous one has no victim left to delete (it then does nothing at all).
        clears = not self.async_preemption or bool(victims_to_delete(best.victims.pods))
        cleared = lower_priority_nominated_pods(self.handle.nominator(), pod, best.name)
        if self.async_preemption:
            executor.prepare_candidate_async(self.plugin_name, best, pod)
        else:
            status = await executor.prepare_candidate(self.plugin_name, best, pod)
            if not status.is_success():
                return None, status
        result = evaluation.result
        if result is not None and result.detail is not None and clears and cleared:
            detail = replace(
                result.detail, cleared_nominations=tuple(object_key(p) for p in cleared)
            )
            result = replace(result, detail=detail)
        return result, evaluation.status

    # ------------------------------------------------------------ the dry run

    def evaluate(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        statuses: NodeToStatus,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> Evaluation:
        """Whether `pod` may preempt, and where, over the handle's snapshot: `statuses` are the
        cycle's (PreFilter and Filter) rejections, `state` its CycleState (cloned, never
        changed). No side effects."""
        nominated_status = statuses.get(pod.status.nominated_node_name)
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            logger.debug("Pod %s is not eligible for preemption: %s", object_key(pod), msg)
            return Evaluation(None, Status(Code.UNSCHEDULABLE, (msg,)))

        all_nodes = self.handle.snapshot_shared_lister().node_infos().list()
        if not all_nodes:
            return Evaluation(None, as_error("no nodes available"))
        candidates, dry_run_statuses, errors = self.find_candidates(state, pod, statuses, pdbs)
        if not candidates:
            if errors:
                return Evaluation(None, errors[0])
            dry_run_statuses.absent = unresolvable(NOT_HELPFUL)
            fit = FitError(pod, len(all_nodes), dry_run_statuses)
            logger.info(
                "No preemption candidate for %s; preemption is not helpful", object_key(pod)
            )
            return Evaluation(PostFilterResult(""), Status(Code.UNSCHEDULABLE, (str(fit),)))

        selected = self._select(candidates)
        if selected is None:
            return Evaluation(
                None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
            )
        best, criterion = selected
        victims = best.victims.pods
        detail = PreemptionDetail(len(candidates), criterion, violated_budgets(victims, pdbs))
        result = PostFilterResult(
            best.name, victims, pdb_violations=best.victims.num_pdb_violations, detail=detail
        )
        return Evaluation(result, SUCCESS, best)

    def find_candidates(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        statuses: NodeToStatus,
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
    ) -> tuple[list[Candidate], NodeToStatus, list[Status]]:
        """Dry-runs preemption on the nodes the cycle found Unschedulable, with the policy's
        pre-screen: when candidates are found, the statuses leave out the nodes it ruled out
        (the caller reads them only when there are none)."""
        lister = self.handle.snapshot_shared_lister().node_infos()
        potential = statuses.nodes_for_status_code(lister, Code.UNSCHEDULABLE)
        if not potential:
            logger.debug("Preemption will not help schedule %s on any node", object_key(pod))
            return [], NodeToStatus(), []
        offset, num = self.policy.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num, pre_screen=True)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        offset: int,
        num_candidates: int,
        *,
        pre_screen: bool = False,
    ) -> tuple[list[Candidate], NodeToStatus, list[Status]]:
        """Candidates without PDB violations first; stops once it has `num_candidates` with at
        least one of those. Returns them, the status of each node that is not a candidate,
        and the Error statuses among those. With `pre_screen`, the nodes the policy's
        `cannot_fit_on_node` rules out are not dry-run: the same candidates, but when there
        are some the statuses leave those nodes out."""
        with self.policy.walk(state, pod):
            candidates, statuses, errors, skipped = self._dry_run(
                state, pod, potential, pdbs, offset, num_candidates, pre_screen
            )
            if candidates or not skipped:
                return candidates, statuses, errors
            # No candidate: the nodes the pre-screen ruled out need their exact statuses (the
            # message and the first error depend on them): the walk upstream makes.
            candidates, statuses, errors, _ = self._dry_run(
                state, pod, potential, pdbs, offset, num_candidates, False
            )
            return candidates, statuses, errors

    def _dry_run(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        offset: int,
        num_candidates: int,
        pre_screen: bool,
    ) -> tuple[list[Candidate], NodeToStatus, list[Status], int]:
        """One walk from `offset`. With `pre_screen`, the nodes the policy rules out cheaply
        (`cannot_fit_on_node`) are skipped: they can be no candidate, so the candidates found
        and where the walk stops are the same; only their statuses are missing (the last
        value counts them), which matters only when no candidate is found."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[Status] = []
        skipped = 0
        n = len(potential)
        cannot_fit = self.policy.cannot_fit_on_node
        select = self.policy.select_victim_infos_on_node
        made_by_node = self._candidates
        made_for = made_by_node.get
        for i in range(n):
            original = potential[(offset + i) % n]
            if pre_screen and cannot_fit(state, pod, original):
                skipped += 1
                continue
            victims, violations, status = select(state, pod, original, pdbs)
            if status.is_success() and victims:
                made = made_for(original.name)
                if made is not None and made[0] is victims and made[1] == violations:
                    candidate = made[2]
                else:
                    infos = victims if type(victims) is tuple else tuple(victims)
                    candidate = Candidate(
                        original.name, Victims(tuple(pi.pod for pi in infos), violations, infos)
                    )
                    if type(victims) is tuple:
                        if len(made_by_node) >= _CANDIDATES_KEPT_MAX:
                            made_by_node.clear()
                        made_by_node[original.name] = (infos, violations, candidate)
                if violations == 0:
                    non_violating.append(candidate)
                elif len(non_violating) + len(violating) < num_candidates:
                    violating.append(candidate)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.is_success():
                status = as_error(f'expected at least one victim pod on node "{original.name}"')
            if status.is_error():
                errors.append(status)
            statuses.set(original.name, status)
        return non_violating + violating, statuses, errors, skipped

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        """upstream SelectCandidate: the candidate pick_one_node_for_preemption chooses."""
        selected = self._select(candidates)
        return selected[0] if selected is not None else None

    def _select(self, candidates: Sequence[Candidate]) -> tuple[Candidate, str] | None:
        """The chosen candidate and the criterion that chose it (NodePick.criterion)."""
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0], ONLY_CANDIDATE
        by_node = {c.name: c.victims for c in candidates}
        pick = pick_one_node_for_preemption(by_node, self._now_ns())
        if pick.node not in by_node:
            return candidates[0], CRITERIA[-1]
        return Candidate(pick.node, by_node[pick.node]), pick.criterion
