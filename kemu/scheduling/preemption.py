"""Preemption (upstream pkg/scheduler/framework/preemption): make room for a pod that fits
nowhere by removing pods of lower priority (reference §3.5-§3.8).

`Evaluator.preempt` is the algorithm a PostFilter plugin runs; the plugin supplies the policy
through `PreemptionPolicy` (which pods may be victims, how many candidate nodes to try):

1. the latest copy of the pod, and whether it may preempt at all;
2. candidates: the nodes the cycle found Unschedulable (not UnschedulableAndUnresolvable),
   dry-run from a random offset (`DryRunPreemption`) until enough candidates are found, each
   with the victims its `select_victims_on_node` picks on a copy of the node and cycle state;
3. no candidate: Unschedulable with upstream's "0/N nodes are available" message and a result
   that clears the pod's nominated node; otherwise the best candidate
   (`pick_one_node_for_preemption`, upstream's exact criteria order);
4. the preemption itself: each victim gets the DisruptionTarget condition and a graceful
   DELETE (or, held at Permit, is rejected), a Preempted event; lower-priority pods nominated to
   the node lose their nomination. Synchronous in the cycle, or in a background task with
   SchedulerAsyncPreemption: then the preemptor is held out of activeQ
   (`is_pod_running_preemption`, asked by the plugin's PreEnqueue) until the deletions are
   issued.
5. the result nominates the pod to the chosen node; the cycle still reports it unschedulable.

Pure apart from the API calls it makes through the Handle's client; no gRPC here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import format_time, message_to_dict, timestamp
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.kinds import EVENT_NORMAL
from kemu.scheduling.interface import CycleState, FitError, Handle, NodeToStatus
from kemu.scheduling.status import SUCCESS, Code, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PodInfo, PostFilterResult, pod_key, pod_priority

logger = logging.getLogger(__name__)

DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
NOT_HELPFUL: Final = "Preemption is not helpful for scheduling"
# Shift that makes every priority non-negative in the sum criterion (math.MaxInt32 + 1).
_PRIORITY_SHIFT: Final = 2**31
# How often a DisruptionTarget patch is retried when the victim changed under it.
_CONDITION_PATCH_ATTEMPTS: Final = 5


@dataclass(frozen=True, slots=True)
class Victims:
    """The pods to remove from one node, most important first, and how many of them are
    protected by a PodDisruptionBudget that their removal would violate."""

    pods: tuple[types_pb2.Pod, ...]
    num_pdb_violations: int = 0


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node where preemption would make the pod fit."""

    name: str
    victims: Victims


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


class _PodLister(Protocol):
    def get(self, name: str, namespace: str = "") -> types_pb2.Pod | None: ...


class _PdbLister(Protocol):
    def list(self, namespace: str | None = None) -> Sequence[types_pb2.PodDisruptionBudget]: ...


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
    return (-pi.priority, pod_start_time_ns(pi.pod, now_ns))


def earliest_pod_start_time_ns(victims: Victims, now_ns: int) -> int:
    """The earliest start time among the victims of the highest priority."""
    top = max(pod_priority(p) for p in victims.pods)
    return min(pod_start_time_ns(p, now_ns) for p in victims.pods if pod_priority(p) == top)


def pick_one_node_for_preemption(nodes_to_victims: dict[str, Victims], now_ns: int) -> str:
    """upstream pickOneNodeForPreemption: each criterion keeps the nodes with the best score,
    until one node is left: fewest PDB violations, lowest highest-priority victim, smallest
    sum of (priority + 2^31), fewest victims, latest start of the earliest highest-priority
    victim; then the first remaining candidate. "" when there are none."""
    candidates = list(nodes_to_victims)
    if not candidates:
        return ""

    def pdb(node: str) -> int:
        return -nodes_to_victims[node].num_pdb_violations

    def highest_priority(node: str) -> int:
        return -pod_priority(nodes_to_victims[node].pods[0])

    def sum_priorities(node: str) -> int:
        return -sum(pod_priority(p) + _PRIORITY_SHIFT for p in nodes_to_victims[node].pods)

    def count(node: str) -> int:
        return -len(nodes_to_victims[node].pods)

    def latest_start(node: str) -> int:
        return earliest_pod_start_time_ns(nodes_to_victims[node], now_ns)

    for score in (pdb, highest_priority, sum_priorities, count, latest_start):
        scores = {node: score(node) for node in candidates}
        best = max(scores.values())
        candidates = [node for node in candidates if scores[node] == best]
        if len(candidates) == 1:
            return candidates[0]
    return candidates[0]


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
    """Runs preemption for one plugin (upstream preemption.Evaluator and Executor)."""

    def __init__(
        self,
        plugin_name: str,
        handle: Handle,
        policy: PreemptionPolicy,
        *,
        async_preemption: bool,
        pod_lister: _PodLister | None,
        pdb_lister: _PdbLister | None,
    ) -> None:
        self.plugin_name = plugin_name
        self.handle = handle
        self.policy = policy
        self.async_preemption = async_preemption
        self.pod_lister = pod_lister
        self.pdb_lister = pdb_lister
        # Preemptors whose asynchronous preemption is under way (uid), and for those waiting
        # for their last victim's deletion, that victim (namespace, name).
        self._preempting: set[str] = set()
        self._last_victim: dict[str, tuple[str, str]] = {}

    def _now_ns(self) -> int:
        return int(self.handle.clock.now() * 1e9)

    # ------------------------------------------------------------ the algorithm

    async def preempt(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """(None, Error) for a transient failure and (None, Unschedulable) when the pod may not
        preempt now: its nomination stays. (PostFilterResult(""), Unschedulable) when
        preemption cannot help: the nomination is cleared. (PostFilterResult(node), Success)
        once victims on `node` are being preempted."""
        if self.pod_lister is not None:
            latest = self.pod_lister.get(pod.metadata.name, pod.metadata.namespace)
            if latest is None:
                return None, as_error(f'pod "{pod_key(pod)}" not found')
            pod = latest

        nominated_status = statuses.get(pod.status.nominated_node_name)
        ok, msg = self.policy.pod_eligible_to_preempt_others(pod, nominated_status)
        if not ok:
            logger.debug("Pod %s is not eligible for preemption: %s", pod_key(pod), msg)
            return None, Status(Code.UNSCHEDULABLE, (msg,))

        lister = self.handle.snapshot_shared_lister().node_infos()
        all_nodes = lister.list()
        if not all_nodes:
            return None, as_error("no nodes available")
        candidates, dry_run_statuses, errors = self.find_candidates(state, pod, statuses)
        if not candidates:
            if errors:
                return None, errors[0]
            dry_run_statuses.absent = unresolvable(NOT_HELPFUL)
            fit = FitError(pod, len(all_nodes), dry_run_statuses)
            logger.info("No preemption candidate for %s; preemption is not helpful", pod_key(pod))
            return PostFilterResult(""), Status(Code.UNSCHEDULABLE, (str(fit),))

        best = self.select_candidate(candidates)
        if best is None:
            return None, Status(Code.UNSCHEDULABLE, ("no candidate node for preemption",))
        logger.info(
            "Preempting %d pod(s) on %s for %s",
            len(best.victims.pods),
            best.name,
            pod_key(pod),
        )
        if self.async_preemption:
            self.prepare_candidate_async(best, pod)
        else:
            status = await self.prepare_candidate(best, pod)
            if not status.is_success():
                return None, status
        return PostFilterResult(best.name), SUCCESS

    def find_candidates(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[list[Candidate], NodeToStatus, list[Status]]:
        """Dry-runs preemption on the nodes the cycle found Unschedulable."""
        lister = self.handle.snapshot_shared_lister().node_infos()
        potential = statuses.nodes_for_status_code(lister, Code.UNSCHEDULABLE)
        if not potential:
            logger.debug("Preemption will not help schedule %s on any node", pod_key(pod))
            return [], NodeToStatus(), []
        pdbs = self.pdb_lister.list() if self.pdb_lister is not None else []
        offset, num = self.policy.get_offset_and_num_candidates(len(potential))
        return self.dry_run_preemption(state, pod, potential, pdbs, offset, num)

    def dry_run_preemption(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        potential: Sequence[NodeInfo],
        pdbs: Sequence[types_pb2.PodDisruptionBudget],
        offset: int,
        num_candidates: int,
    ) -> tuple[list[Candidate], NodeToStatus, list[Status]]:
        """Candidates without PDB violations first; stops once it has `num_candidates` with at
        least one of those. Returns them, the status of each node that is not a candidate,
        and the Error statuses among those."""
        non_violating: list[Candidate] = []
        violating: list[Candidate] = []
        statuses = NodeToStatus()
        errors: list[Status] = []
        n = len(potential)
        for i in range(n):
            node = potential[(offset + i) % n].clone()
            victims, violations, status = self.policy.select_victims_on_node(
                state.clone(), pod, node, pdbs
            )
            if status.is_success() and victims:
                candidate = Candidate(node.name, Victims(tuple(victims), violations))
                if violations == 0:
                    non_violating.append(candidate)
                elif len(non_violating) + len(violating) < num_candidates:
                    violating.append(candidate)
                if non_violating and len(non_violating) + len(violating) >= num_candidates:
                    break
                continue
            if status.is_success():
                status = as_error(f'expected at least one victim pod on node "{node.name}"')
            if status.is_error():
                errors.append(status)
            statuses.set(node.name, status)
        return non_violating + violating, statuses, errors

    def select_candidate(self, candidates: Sequence[Candidate]) -> Candidate | None:
        if not candidates:
            return None
        if len(candidates) == 1:
            return candidates[0]
        by_node = {c.name: c.victims for c in candidates}
        name = pick_one_node_for_preemption(by_node, self._now_ns())
        return Candidate(name, by_node[name]) if name in by_node else candidates[0]

    # ------------------------------------------------------------ the preemption

    def _observe_victims(self, count: int) -> None:
        metrics = self.handle.metrics
        if metrics is not None:
            metrics.preemption_victims.observe(count)

    async def prepare_candidate(self, c: Candidate, preemptor: types_pb2.Pod) -> Status:
        """Preempts the victims (in parallel), then clears the nominations of lower-priority
        pods nominated to the node. An API error on a victim fails the preemption."""
        self._observe_victims(len(c.victims.pods))
        errors: list[BaseException] = []

        async def one(victim: types_pb2.Pod) -> None:
            try:
                await self.preempt_pod(c, preemptor, victim)
            except ApiError as e:
                errors.append(e)

        async with anyio.create_task_group() as tg:
            for victim in c.victims.pods:
                if victim.metadata.HasField("deletion_timestamp"):
                    logger.debug("Victim %s is already being deleted", pod_key(victim))
                    continue
                tg.start_soon(one, victim)
        if errors:
            return as_error(errors[0])
        await self._clear_lower_priority_nominations(preemptor, c.name)
        return SUCCESS

    def prepare_candidate_async(self, c: Candidate, preemptor: types_pb2.Pod) -> None:
        """Starts the preemption in a background task; the preemptor is held out of activeQ
        until every victim's deletion has been issued (or the task failed: then it is
        activated at once)."""
        victims = [v for v in c.victims.pods if not v.metadata.HasField("deletion_timestamp")]
        if not victims:
            return
        self._observe_victims(len(c.victims.pods))
        uid = preemptor.metadata.uid
        self._preempting.add(uid)

        async def run() -> None:
            start = time.perf_counter()
            result = "success"
            try:
                if not await self._clear_lower_priority_nominations(preemptor, c.name):
                    result = "error"
                errors: list[BaseException] = []

                async def one(victim: types_pb2.Pod) -> None:
                    try:
                        await self.preempt_pod(c, preemptor, victim)
                    except ApiError as e:
                        errors.append(e)

                # All victims but the last in parallel; the last one alone, so that PreEnqueue
                # can tell "its deletion was issued" from "still preempting".
                async with anyio.create_task_group() as tg:
                    for victim in victims[:-1]:
                        tg.start_soon(one, victim)
                if errors:
                    logger.error(
                        "Asynchronous preemption for %s failed: %s", pod_key(preemptor), errors[0]
                    )
                    result = "error"
                else:
                    last = victims[-1]
                    self._last_victim[uid] = (last.metadata.namespace, last.metadata.name)
                    await one(last)
                    if errors:
                        logger.error(
                            "Asynchronous preemption of the last victim for %s failed: %s",
                            pod_key(preemptor),
                            errors[0],
                        )
                        result = "error"
            finally:
                self._preempting.discard(uid)
                self._last_victim.pop(uid, None)
                metrics = self.handle.metrics
                if metrics is not None:
                    metrics.preemption_goroutines_duration.labels(result).observe(
                        time.perf_counter() - start
                    )
                    metrics.preemption_goroutines_execution.labels(result).inc()
                logger.info(
                    "Asynchronous preemption for %s on %s finished: %s",
                    pod_key(preemptor),
                    c.name,
                    result,
                )
            if result == "error":
                # It may otherwise wait in the unschedulable pool for an event that never comes.
                self.handle.activate([preemptor])

        self.handle.spawn(run, name=f"preempt for {pod_key(preemptor)}")

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the pod's asynchronous preemption has not yet issued every deletion."""
        if uid not in self._preempting:
            return False
        last = self._last_victim.get(uid)
        if last is None:
            return True
        if self.pod_lister is None:
            return True
        victim = self.pod_lister.get(last[1], last[0])
        return victim is not None and not victim.metadata.HasField("deletion_timestamp")

    async def preempt_pod(
        self, c: Candidate, preemptor: types_pb2.Pod, victim: types_pb2.Pod
    ) -> None:
        """Rejects a victim held at Permit; otherwise marks it DisruptionTarget and deletes it
        with its own grace period. A victim that is already gone is fine. Raises ApiError."""
        waiting = self.handle.get_waiting_pod(victim.metadata.uid)
        if waiting is not None:
            waiting.reject(self.plugin_name, "preempted")
            logger.info(
                "Preemptor %s rejected waiting pod %s on %s",
                pod_key(preemptor),
                pod_key(victim),
                c.name,
            )
        else:
            if not await self._add_disruption_target(preemptor, victim):
                logger.debug("Victim %s is already deleted", pod_key(victim))
                return
            try:
                await self.handle.client.delete(
                    types_pb2.Pod,
                    victim.metadata.name,
                    victim.metadata.namespace,
                    uid=victim.metadata.uid,
                )
            except NotFound:
                logger.debug("Victim %s is already deleted", pod_key(victim))
                return
            except Conflict:
                # The uid precondition failed: the victim is gone and a namesake took its place.
                logger.debug("Victim %s is already deleted (uid changed)", pod_key(victim))
                return
            logger.info(
                "Preemptor %s preempted %s on %s", pod_key(preemptor), pod_key(victim), c.name
            )
        self.handle.event_recorder.event(
            victim,
            EVENT_NORMAL,
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor.metadata.uid} on node {c.name}",
        )

    async def _add_disruption_target(self, preemptor: types_pb2.Pod, victim: types_pb2.Pod) -> bool:
        """Adds DisruptionTarget=True (PreemptionByScheduler) to the victim's status unless it
        has it already; a compare-and-swap on its resourceVersion so that conditions written
        meanwhile (the kubelet's) are kept. False when the victim no longer exists."""
        message = (
            f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod"
        )
        client = self.handle.client
        current = victim
        for _ in range(_CONDITION_PATCH_ATTEMPTS):
            conditions = _with_disruption_target(current, message, self.handle.clock.now())
            if conditions is None:
                return True
            patch = {
                "metadata": {"resourceVersion": current.metadata.resource_version},
                "status": {"conditions": conditions},
            }
            try:
                await client.patch(
                    types_pb2.Pod,
                    victim.metadata.name,
                    patch,
                    victim.metadata.namespace,
                    subresource="status",
                )
                return True
            except NotFound:
                return False
            except Conflict:
                try:
                    current = await client.get(
                        types_pb2.Pod, victim.metadata.name, victim.metadata.namespace
                    )
                except NotFound:
                    return False
                if current.metadata.uid != victim.metadata.uid:
                    return False
        raise Conflict(
            f"could not add the DisruptionTarget condition to {pod_key(victim)}: it kept changing"
        )

    async def _clear_lower_priority_nominations(self, preemptor: types_pb2.Pod, node: str) -> bool:
        """Pods of lower priority nominated to `node` may no longer fit there: their
        nomination is cleared so that they look elsewhere sooner. Equal priority keeps it.
        False if a PATCH failed (not fatal)."""
        nominator = self.handle.nominator()
        if nominator is None:
            return True
        priority = pod_priority(preemptor)
        ok = True
        for pi in nominator.nominated_pods_for_node(node):
            pod = pi.pod
            if pod_priority(pod) >= priority or not pod.status.nominated_node_name:
                continue
            try:
                await self.handle.client.patch(
                    types_pb2.Pod,
                    pod.metadata.name,
                    {"status": {"nominatedNodeName": None}},
                    pod.metadata.namespace,
                    subresource="status",
                )
                logger.info(
                    "Cleared the nomination of %s to %s (lower priority than %s)",
                    pod_key(pod),
                    node,
                    pod_key(preemptor),
                )
            except NotFound:
                continue
            except ApiError as e:
                logger.warning("Could not clear the nomination of %s: %s", pod_key(pod), e)
                ok = False
        return ok


def _with_disruption_target(
    pod: types_pb2.Pod, message: str, now: float
) -> list[dict[str, Any]] | None:
    """The pod's conditions with DisruptionTarget=True/PreemptionByScheduler set, or None when
    it is already so (upstream UpdatePodCondition)."""
    out: list[dict[str, Any]] = []
    found = False
    for c in pod.status.conditions:
        if c.type != DISRUPTION_TARGET:
            out.append(message_to_dict(c))
            continue
        found = True
        if c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER and c.message == message:
            return None
        cond = message_to_dict(c)
        if c.status != "True":
            cond["lastTransitionTime"] = format_time(timestamp(now))
        cond.update(status="True", reason=PREEMPTION_BY_SCHEDULER, message=message)
        out.append(cond)
    if not found:
        cond = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTION_BY_SCHEDULER,
            "message": message,
            "lastTransitionTime": format_time(timestamp(now)),
        }
        if pod.metadata.generation:
            cond["observedGeneration"] = pod.metadata.generation
        out.append(cond)
    return out
