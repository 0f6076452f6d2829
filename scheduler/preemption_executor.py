"""The preemption executor (upstream pkg/scheduler/framework/preemption/executor.go): the API
writes that carry out a preemption the library's dry run chose (pkg/scheduler/framework/preemption/preemption.go prepareCandidate). The dry run
and the policy are kemu.scheduling.preemption and the DefaultPreemption plugin; they reach this
through the framework Handle (`Handle.preemption_executor()`, a
kemu.scheduling.interface.PreemptionExecutor), one executor per framework, built by
`scheduler.app` with the scheduler's client, pod lister and metrics.

For each victim not already being deleted: a victim held at Permit is rejected (before 1.36:
Unschedulable, to the unschedulable pool) or preempted (1.36+, kubernetes#135719: an Error, to
backoff); from 1.36 a victim in PreBind has its binding cycle cancelled (kubernetes#135502,
kemu.scheduling.pods_in_pre_bind), and goes to backoff too. Those stay in the API, unbound,
and their Preempted event ends "(in kube-scheduler memory)." (1.36+). Any other victim gets
the DisruptionTarget condition (a compare-and-swap on its resourceVersion, retried, keeping the
conditions others wrote; only with PodDisruptionConditions, whose alpha 1.25 is off by default;
reason PreemptionByKubeScheduler before 1.27, PreemptionByScheduler since: version rule
`preemption_by_scheduler`) and a graceful DELETE with a uid precondition; a Preempted event
each.
Pods of strictly lower priority nominated to the node lose their nomination. Synchronous in the
cycle, or with SchedulerAsyncPreemption in a background task of the scheduler's task group
(`Handle.spawn`): the preemptor is then held at PreEnqueue (`is_pod_running_preemption`) until
the scheduler's pod informer has seen the last victim's deletion (deletionTimestamp or gone), as
upstream's `lastVictimsPendingPreemption`, and activated again if the task fails.

Two guards upstream leaves to its informer's speed (issue #16, seen in PreemptionBasic/1000Nodes):
- The hold outlives the task: upstream lets the pod in once the last DELETE has returned, even
  if its informer has not yet delivered the deletions. Let in then (any other pod's deletion
  moves it), it fails on its node again, and the victims, not yet seen terminating, are
  preempted a second time. Here a finished task's preemptor stays held until the informer has
  seen its last victim's deletion; that victim's DELETED event then moves it.
- A last victim the informer had already seen gone when it was registered (deleted by another
  writer while the cycle's snapshot still held it) leaves no event to move the preemptor: the
  executor activates it when the task ends, rather than leaving it to the 5-minute flush.

A last victim preempted in memory moves the preemptor with its own binding cycle's failure
(an AssignedPodDelete once the victim is forgotten). Upstream's preemption goroutine could
still hold the preemptor at PreEnqueue when that event came, leaving it in the unschedulable
pool (kubernetes#140082; #140054 then activates the preemptor after an in-memory preemption).
Here the in-memory path has no await between the cancellation (or the Permit outcome) and the
end of the task, which drops the hold; the victim's binding cycle, a task of its own, only runs
after that, so its event always finds the preemptor free. No activation is added: an
activated preemptor could run before the victim is forgotten, find it still on the node and
delete it through the API.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from typing import Final

import anyio

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.client.pod_status import condition_change, patch_pod_status
from kemu.component.clock_steps import StepOrder
from kemu.component.featuregate import POD_OBSERVED_GENERATION_TRACKING
from kemu.component.version_rules import VersionRules
from kemu.component.virtual_clock import take_step
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL
from kemu.scheduling.interface import Handle, PreemptionExecutor
from kemu.scheduling.nominator import PodLister
from kemu.scheduling.preemption import (
    Candidate,
    Victims,
    lower_priority_nominated_pods,
    preemption_disruption_reason,
    victims_to_delete,
)
from kemu.scheduling.status import SUCCESS, Status, as_error
from scheduler.api_dispatcher import APIDispatcher, CallSkipped, PodStatusPatchCall
from scheduler.metrics import SchedulerMetrics

logger = logging.getLogger(__name__)

# How often a DisruptionTarget patch is retried when the victim changed under it.
_CONDITION_PATCH_ATTEMPTS: Final = 5


class Executor(PreemptionExecutor):
    """One framework's preemption executor. `handle` is that framework (waiting pods,
    nominator, Activate, background tasks, clock, event recorder); `pod_lister` is the
    scheduler's pod informer, which tells when the last victim's deletion is visible."""

    def __init__(
        self,
        handle: Handle,
        *,
        client: ApiClient,
        pod_lister: PodLister | None = None,
        metrics: SchedulerMetrics | None = None,
        rules: VersionRules | None = None,
        api_dispatcher: APIDispatcher | None = None,
    ) -> None:
        self.handle = handle
        self.client = client
        # SchedulerAsyncAPICalls: the lower-priority nominations cleared through it
        # (upstream clearNominatedNodeName with the APICacher); None with the gate off.
        self.api_dispatcher = api_dispatcher
        self.pod_lister = pod_lister
        self.metrics = metrics
        # The version's rules (the handle's version when not given): which victims are
        # preempted in memory, and how their Preempted event reads.
        self._rules = rules if rules is not None else VersionRules.at(handle.gates.version)
        self._in_memory_event = (
            self._rules.preempt_pre_bind_in_memory or self._rules.preempted_waiting_pod_backs_off
        )
        # The reason of the victims' DisruptionTarget at this version (None: no condition).
        self._reason = preemption_disruption_reason(handle.gates)
        # Preemptors whose asynchronous preemption task is running (uid), and for those whose
        # last victim's deletion the informer has not yet shown, that victim (namespace, name,
        # uid): kept after the task ends until the informer shows it.
        self._preempting: set[str] = set()
        self._last_victim: dict[str, tuple[str, str, str]] = {}

    def _observe_victims(self, count: int) -> None:
        if self.metrics is not None:
            self.metrics.preemption_victims.observe(count)

    async def prepare_candidate(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod
    ) -> Status:
        """Preempts the victims (in parallel), then clears the nominations of lower-priority
        pods nominated to the node. An API error on a victim fails the preemption."""
        self._observe_victims(len(candidate.victims.pods))
        errors: list[BaseException] = []

        async def one(victim: types_pb2.Pod) -> None:
            try:
                await self.preempt_pod(plugin, candidate, preemptor, victim)
            except ApiError as e:
                errors.append(e)

        async with anyio.create_task_group() as tg:
            for victim in candidate.victims.pods:
                if victim.metadata.HasField("deletion_timestamp"):
                    logger.debug("Victim %s is already being deleted", object_key(victim))
                    continue
                tg.start_soon(one, victim)
        if errors:
            return as_error(errors[0])
        await self._clear_lower_priority_nominations(preemptor, candidate.name)
        return SUCCESS

    async def prepare_pod_group_preemption(
        self,
        plugin: str,
        victims: Sequence[types_pb2.Pod],
        preemptor: types_pb2.Pod,
        nodes: AbstractSet[str],
    ) -> Status:
        """Workload-aware preemption (upstream Executor.actuatePodGroupPreemption): each
        victim preempted as `prepare_candidate` does (in parallel; an API error fails it),
        then the lower-priority nominations to the group's nodes cleared. Synchronous even
        with SchedulerAsyncPreemption (not modelled: the group's members go back to the queue
        nominated and wait for the victims' deletions there)."""
        errors: list[BaseException] = []

        async def one(victim: types_pb2.Pod) -> None:
            try:
                candidate = Candidate(victim.spec.node_name, Victims((victim,)))
                await self.preempt_pod(plugin, candidate, preemptor, victim)
            except ApiError as e:
                errors.append(e)

        async with anyio.create_task_group() as tg:
            for victim in victims_to_delete(victims):
                tg.start_soon(one, victim)
        if errors:
            return as_error(errors[0])
        for node in sorted(nodes):
            await self._clear_lower_priority_nominations(preemptor, node)
        return SUCCESS

    def prepare_candidate_async(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod
    ) -> None:
        """Starts the preemption in a background task; the preemptor is held out of activeQ
        until the informer shows the last victim's deletion (or the task failed, or that
        victim was preempted in memory, at Permit or in PreBind: then the hold ends with the
        task; after a failure the preemptor is activated at once)."""
        victims = victims_to_delete(candidate.victims.pods)
        if not victims:
            return
        self._observe_victims(len(candidate.victims.pods))
        self._forget_seen_victims()
        uid = preemptor.metadata.uid
        self._preempting.add(uid)
        self._last_victim.pop(uid, None)
        already_gone = False
        last_leaves = False  # the last victim is deleted, not preempted in memory

        async def run() -> None:
            nonlocal already_gone, last_leaves
            start = time.perf_counter()
            result = "success"
            try:
                if not await self._clear_lower_priority_nominations(preemptor, candidate.name):
                    result = "error"
                errors: list[BaseException] = []

                async def one(victim: types_pb2.Pod) -> bool:
                    try:
                        return await self.preempt_pod(plugin, candidate, preemptor, victim)
                    except ApiError as e:
                        errors.append(e)
                        return False

                # All victims but the last in parallel; the last one alone, so that PreEnqueue
                # can tell "its deletion was issued" from "still preempting".
                async with anyio.create_task_group() as tg:
                    for victim in victims[:-1]:
                        tg.start_soon(one, victim)
                if errors:
                    logger.error(
                        "Asynchronous preemption for %s failed: %s",
                        object_key(preemptor),
                        errors[0],
                    )
                    result = "error"
                else:
                    if len(victims) > 1:
                        # (in virtual time a step: the reactions to the others' deletions,
                        # their watch events in this queue included, come first;
                        # kemu.component.clock_steps)
                        await take_step(self.handle.clock, StepOrder.ASYNC_PREEMPTION)
                    last = victims[-1]
                    key = (last.metadata.namespace, last.metadata.name, last.metadata.uid)
                    self._last_victim[uid] = key
                    already_gone = self._seen_gone(key)
                    last_leaves = await one(last)
                    if errors:
                        logger.error(
                            "Asynchronous preemption of the last victim for %s failed: %s",
                            object_key(preemptor),
                            errors[0],
                        )
                        result = "error"
            finally:
                self._preempting.discard(uid)
                last_key = self._last_victim.get(uid)
                if (
                    result == "error"
                    or not last_leaves
                    or last_key is None
                    or self._deletion_seen(last_key)
                ):
                    self._last_victim.pop(uid, None)
                metrics = self.metrics
                if metrics is not None:
                    metrics.preemption_goroutines_duration.labels(result).observe(
                        time.perf_counter() - start
                    )
                    metrics.preemption_goroutines_execution.labels(result).inc()
                logger.info(
                    "Asynchronous preemption for %s on %s finished: %s",
                    object_key(preemptor),
                    candidate.name,
                    result,
                )
            if result == "error" or already_gone:
                # It may otherwise wait in the unschedulable pool for an event that never comes.
                self.handle.activate([preemptor])

        self.handle.spawn(run, name=f"preempt for {object_key(preemptor)}")

    def is_pod_running_preemption(self, uid: str) -> bool:
        """Whether the pod's asynchronous preemption is under way: its task is deleting the
        victims before the last, or the informer has not yet shown the last one's deletion
        (even after the task ended)."""
        last = self._last_victim.get(uid)
        if last is None:
            return uid in self._preempting
        if not self._deletion_seen(last):
            return True
        if uid not in self._preempting:
            del self._last_victim[uid]
        return False

    def _deletion_seen(self, victim: tuple[str, str, str]) -> bool:
        """The informer shows the victim (namespace, name, uid) deleting or gone. Without an
        informer, never (the hold then ends with the task)."""
        if self.pod_lister is None:
            return False
        if self._seen_gone(victim):
            return True
        current = self.pod_lister.get(victim[1], victim[0])
        return current is not None and current.metadata.HasField("deletion_timestamp")

    def _seen_gone(self, victim: tuple[str, str, str]) -> bool:
        """The informer no longer holds the victim (absent, or a namesake in its place)."""
        if self.pod_lister is None:
            return False
        current = self.pod_lister.get(victim[1], victim[0])
        return current is None or current.metadata.uid != victim[2]

    def _forget_seen_victims(self) -> None:
        """Drops the holds of finished tasks whose last victim's deletion is now seen (their
        preemptors may never ask again: bound elsewhere, or deleted)."""
        for uid, victim in list(self._last_victim.items()):
            if uid not in self._preempting and self._deletion_seen(victim):
                del self._last_victim[uid]

    async def preempt_pod(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod, victim: types_pb2.Pod
    ) -> bool:
        """Preempts one victim (upstream Executor.PreemptPod). In memory when it can: a victim
        held at Permit is rejected (before 1.36) or preempted (1.36+, it backs off with an
        Error; `preempt` refuses once it has an outcome), a victim in PreBind (1.36+) has its
        binding cycle cancelled; then it stays in the API, unbound, and False is returned,
        with no await on the way (see `prepare_candidate_async`). Otherwise it is marked
        DisruptionTarget and deleted with its own grace period (True, also for a victim that
        is already gone). Raises ApiError."""
        if self._preempted_in_memory(plugin, candidate, preemptor, victim):
            suffix = " (in kube-scheduler memory)." if self._in_memory_event else ""
            self._preempted_event(candidate, preemptor, victim, suffix)
            return False
        if not await self._add_disruption_target(preemptor, victim):
            logger.debug("Victim %s is already deleted", object_key(victim))
            return True
        try:
            await self.client.delete(
                types_pb2.Pod,
                victim.metadata.name,
                victim.metadata.namespace,
                uid=victim.metadata.uid,
            )
        except NotFound:
            logger.debug("Victim %s is already deleted", object_key(victim))
            return True
        except Conflict:
            # The uid precondition failed: the victim is gone and a namesake took its place.
            logger.debug("Victim %s is already deleted (uid changed)", object_key(victim))
            return True
        logger.info(
            "Preemptor %s preempted %s on %s",
            object_key(preemptor),
            object_key(victim),
            candidate.name,
        )
        self._preempted_event(candidate, preemptor, victim, "")
        return True

    def _preempted_in_memory(
        self, plugin: str, candidate: Candidate, preemptor: types_pb2.Pod, victim: types_pb2.Pod
    ) -> bool:
        """The victim preempted without an API call: held at Permit, or (1.36+) in PreBind."""
        uid = victim.metadata.uid
        waiting = self.handle.get_waiting_pod(uid)
        if waiting is not None:
            if not self._rules.preempted_waiting_pod_backs_off:
                waiting.reject(plugin, "preempted")
            elif not waiting.preempt(plugin, "preempted"):
                return False
            logger.info(
                "Preemptor %s preempted waiting pod %s on %s",
                object_key(preemptor),
                object_key(victim),
                candidate.name,
            )
            return True
        if not self._rules.preempt_pre_bind_in_memory:
            return False
        in_pre_bind = self.handle.get_pod_in_pre_bind(uid)
        if in_pre_bind is None:
            return False
        if not in_pre_bind.cancel_pod(f"preempted by {plugin}"):
            logger.debug("Victim %s is past PreBind: preempted through the API", object_key(victim))
            return False
        logger.info(
            "Preemptor %s cancelled the binding of %s in PreBind on %s",
            object_key(preemptor),
            object_key(victim),
            candidate.name,
        )
        return True

    def _preempted_event(
        self, candidate: Candidate, preemptor: types_pb2.Pod, victim: types_pb2.Pod, suffix: str
    ) -> None:
        self.handle.event_recorder.event(
            victim,
            EVENT_NORMAL,
            "Preempted",
            "Preempting",
            f"Preempted by pod {preemptor.metadata.uid} on node {candidate.name}{suffix}",
            related=preemptor,
        )

    async def _add_disruption_target(self, preemptor: types_pb2.Pod, victim: types_pb2.Pod) -> bool:
        """Adds DisruptionTarget=True (PreemptionByScheduler; PreemptionByKubeScheduler before
        1.27) to the victim's status unless it has it already (upstream UpdatePodCondition,
        observedGeneration as PodObservedGenerationTracking says); a compare-and-swap on its
        resourceVersion so that conditions written meanwhile (the kubelet's) are kept. False
        when the victim no longer exists. With PodDisruptionConditions off, nothing is written
        (True: the DELETE decides whether it still exists)."""
        if self._reason is None:
            return True
        message = (
            f"{preemptor.spec.scheduler_name}: preempting to accommodate a higher priority pod"
        )
        change = condition_change(
            DISRUPTION_TARGET,
            "True",
            self._reason,
            message,
            now=self.handle.clock.now(),
            tracking=self.handle.gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
        )
        return await patch_pod_status(
            self.client, victim, change, attempts=_CONDITION_PATCH_ATTEMPTS
        )

    async def _clear_lower_priority_nominations(self, preemptor: types_pb2.Pod, node: str) -> bool:
        """Pods of lower priority nominated to `node` may no longer fit there: their
        nomination is cleared so that they look elsewhere sooner. Equal priority keeps it.
        False if a PATCH failed (not fatal)."""
        ok = True
        for pod in lower_priority_nominated_pods(self.handle.nominator(), preemptor, node):
            if self.api_dispatcher is not None:
                call = PodStatusPatchCall(
                    pod, None, "", "", now=self.handle.clock.now(), tracking=False
                )
                with contextlib.suppress(CallSkipped):
                    self.api_dispatcher.add(call)
                continue
            try:
                await self.client.patch(
                    types_pb2.Pod,
                    pod.metadata.name,
                    {"status": {"nominatedNodeName": None}},
                    pod.metadata.namespace,
                    subresource="status",
                )
                logger.info(
                    "Cleared the nomination of %s to %s (lower priority than %s)",
                    object_key(pod),
                    node,
                    object_key(preemptor),
                )
            except NotFound:
                continue
            except ApiError as e:
                logger.warning("Could not clear the nomination of %s: %s", object_key(pod), e)
                ok = False
        return ok
