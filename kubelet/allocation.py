"""In-place pod resize, the kubelet's half (KEP-1287; upstream pkg/kubelet/allocation).

A pod has three sizes: desired (its spec, changed through the pods/resize subresource),
allocated (what the kubelet admitted it with, checkpointed) and actual (what its containers run
with, status.containerStatuses[*].resources). When desired differs from allocated the kubelet
decides (`decide`):

* Infeasible: the desired cpu or memory request is more than the node's allocatable, so it can
  never fit: "Node didn't have enough capacity: memory, requested: X, capacity: Y";
* Deferred: it does not fit now next to every *other* active pod counted at what it holds, the
  larger of its allocated and actual requests (never at a pending desired size); the larger
  is taken per container before 1.37 and of the pod's sums from 1.37, as the emulated
  version's PodRequests (kemu.machinery.resources, `counting`);
* accepted: the allocation becomes the desired size, and the containers are resized after a
  simulated actuation delay.

Deferred pods wait in a retry list (NodePods.deferred), walked in `retry_key` order whenever
room may have appeared (pods added or removed, a pod terminated, a resize actuated, a pod
updated) and on upstream's timer (30 s after start, then 3 minutes after the last walk):
kubelet.resize_retry. `AllocationManager`, the resize half of upstream's allocation manager,
owns the decision, the retry list and its walk, and the end of a resize once actuated, which
restarts the containers whose resizePolicy says RestartContainer for a resource that changed
(upstream's computePodResizeAction). What the resize conditions of a pod should be
(`resize_conditions`) is decided here too; kubelet.status_manager writes them with the rest of
the status.

Resources are kemu's exact integers (milli-CPU, bytes); see kubelet.admission.
"""

from __future__ import annotations

import enum
import json
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import anyio
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.component.clock import Clock
from kemu.component.virtual_clock import move_on_after
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.resources import (
    DEFAULT_OPTIONS,
    PodResourcesOptions,
    kubelet_pod_requests,
    max_resources,
)
from kubelet.admission import (
    CPU,
    MEMORY,
    AdmissionError,
    AdmissionFailureHandler,
    InsufficientResource,
    allocation_from_spec,
    fit_failures,
    requests_of,
    used_by,
)
from kubelet.pod_manager import NodePods
from kubelet.resize_action import containers_to_restart
from kubelet.resize_metrics import ResizeMetrics
from kubelet.resize_retry import DEFAULT_RETRY_PERIOD, TRIGGER_PERIODIC, RetryTimer, retry_key
from kubelet.runtime import (
    EPSILON,
    ContainerAllocation,
    PodAllocation,
    PodRuntime,
    PodState,
    stop_exit_code,
)
from kubelet.settings import DEFAULT_ACTUATION_DELAY

logger = logging.getLogger(__name__)

POD_RESIZE_PENDING: Final = "PodResizePending"
POD_RESIZE_IN_PROGRESS: Final = "PodResizeInProgress"

EVENT_RESIZE_STARTED: Final = "ResizeStarted"
EVENT_RESIZE_DEFERRED: Final = "ResizeDeferred"
EVENT_RESIZE_INFEASIBLE: Final = "ResizeInfeasible"
EVENT_KILLING: Final = "Killing"


class Pending(enum.StrEnum):
    DEFERRED = "Deferred"
    INFEASIBLE = "Infeasible"


@dataclass(frozen=True)
class Decision:
    """None `pending`: the resize is accepted."""

    pending: Pending | None
    message: str = ""
    failures: tuple[InsufficientResource, ...] = ()
    """What a Deferred resize lacks (for an admission failure handler)."""


ACCEPTED: Final = Decision(None)


def desired_allocation(pod: types_pb2.Pod) -> PodAllocation:
    return allocation_from_spec(pod)


def held_by_others(node: NodePods, uid: str) -> list[dict[str, int]]:
    """The requests every other active pod of the node holds: its allocation, or while a
    resize is actuated the larger of its allocated and actual sizes (kubelet_pod_requests,
    kept in its runtime): what admission and the resize decision count next to a pod.

    A pod gone from the API (deleted with grace 0, its runtime not yet cleaned up by its
    worker) no longer counts, as upstream's HandlePodRemoves takes it out of the pod manager
    that GetActivePods reads before the next addition is admitted."""
    api = node.api_pods
    return [
        rt.held() for rt in node.runtimes.values() if rt.active and rt.uid != uid and rt.uid in api
    ]


def decide(
    desired: Mapping[str, int],
    own_held: Mapping[str, int] | None,
    others: Iterable[Mapping[str, int]],
    allocatable: Mapping[str, int],
) -> Decision:
    """The fit of a resize to `desired` requests, next to the other active pods' requests
    (what each holds: kemu.machinery.resources.kubelet_pod_requests of its allocated and
    actual sizes, by the emulated version's rule); the pod itself counts at the larger of
    desired and what it holds (`own_held`)."""
    for name in (MEMORY, CPU):  # memory is reported first, as upstream
        wanted = desired.get(name, 0)
        capacity = allocatable.get(name, 0)
        if wanted > capacity:
            return Decision(
                Pending.INFEASIBLE,
                f"Node didn't have enough capacity: {name}, requested: {wanted}, "
                f"capacity: {capacity}",
            )
    used, count = used_by(others)
    failures = fit_failures(max_resources(desired, own_held or {}), used, count, allocatable)
    if failures:
        return Decision(Pending.DEFERRED, failures[0].result().message, tuple(failures))
    return ACCEPTED


# ---------------------------------------------------------------- the resize conditions


@dataclass(frozen=True)
class ResizeCondition:
    """A resize condition a pod should have, with status True."""

    reason: str
    message: str
    observed_generation: int
    since: float
    """Its lastTransitionTime if it becomes True now."""


def resize_conditions(rt: PodRuntime, now: float) -> dict[str, ResizeCondition | None]:
    """The resize conditions the kubelet owns, in the order it writes them, each with what it
    should be (None: absent): PodResizePending and PodResizeInProgress as rt says.

    No PodResizePreemptionDisabled: KEP-5836's README lists that pod condition among the
    rejected alternatives ("Pod-Level Preemption Disabled Condition"), and the merged kubelet
    (kubernetes#140000; pkg/kubelet/allocation/allocation_manager.go handlePodResourcesResize)
    writes only PodResizePending and PodResizeInProgress. The scheduler reads the node's
    spec.podPreemptionPolicy itself (DeferredPodScheduling)."""
    return {
        POD_RESIZE_PENDING: ResizeCondition(
            rt.pending_reason,
            rt.pending_message,
            rt.pending_generation,
            rt.pending_since if rt.pending_since is not None else now,
        )
        if rt.pending_reason
        else None,
        POD_RESIZE_IN_PROGRESS: ResizeCondition("", "", rt.resize_generation, now)
        if rt.actual is not None
        else None,
    }


def _resize_started_message(
    pod: types_pb2.Pod, allocation: Mapping[str, ContainerAllocation], generation: int
) -> str:
    """Upstream's ResizeStarted message: the new resources of each container, as JSON."""
    containers = []
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        a = allocation.get(c.name)
        if a is None:
            continue
        resources: dict[str, dict[str, str]] = {}
        if a.limits:
            resources["limits"] = dict(sorted(a.limits.items()))
        if a.requests:
            resources["requests"] = dict(sorted(a.requests.items()))
        containers.append({"name": c.name, "resources": resources})
    body = json.dumps({"containers": containers, "generation": generation}, separators=(",", ":"))
    return f"Pod resize started: {body}"


# ---------------------------------------------------------------- the manager


@dataclass(frozen=True)
class AllocationOptions:
    """What the pod workers' options decide of in-place resize (kubelet.pod_workers)."""

    enabled: bool = True
    """Gate InPlacePodVerticalScaling; off: pods keep their admitted allocation."""
    actuation_delay: float = DEFAULT_ACTUATION_DELAY
    """--resize-actuation-delay."""
    retry_period: float = DEFAULT_RETRY_PERIOD
    """--resize-retry-period."""
    counting: PodResourcesOptions = DEFAULT_OPTIONS
    """The emulated version's rule for what a pod being resized holds
    (kemu.machinery.resources)."""


class AllocationManager:
    """In-place resize for every node of this process: decides the resize a running pod's spec
    asks for (upstream's handlePodResourcesResize), keeps the retry list of Deferred resizes
    and walks it when room may have appeared (RetryPendingResizes), and ends a resize once its
    actuation delay is over. `enqueue(uid)` asks for a sync (and so a status write) of a pod a
    retry changed. With `options.enabled` off (the InPlacePodVerticalScaling gate) pods keep
    their admitted allocation."""

    def __init__(
        self,
        nodes: Mapping[str, NodePods],
        *,
        clock: Clock,
        enqueue: Callable[[str], None],
        options: AllocationOptions = AllocationOptions(),
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
        on_failure: Callable[[NodePods], AdmissionFailureHandler] | None = None,
    ) -> None:
        """`on_failure`: the node's admission failure handler a resize that does not fit
        goes through, as upstream's canResizePod runs the admit handlers (the critical-pod
        preemption; None with KEP-5836's gate on, where the scheduler preempts instead)."""
        self._nodes = nodes
        self._on_failure = on_failure
        self._counting = options.counting
        self._clock = clock
        self._enqueue = enqueue
        self.enabled = options.enabled
        self._actuation_delay = options.actuation_delay
        self.timer = RetryTimer(period=options.retry_period)
        self._woken = anyio.Event()
        """Set when a node is added while `run` waits (its deadline may come first)."""
        self._recorder = recorder
        self.deferred_resizes_accepted: dict[str, int] = {}
        """Deferred resizes a retry accepted, by retry trigger (upstream's
        kubelet_pod_deferred_resize_accepted_total)."""
        self._metrics = (
            None
            if registry is None
            else ResizeMetrics(
                registry,
                pending=self._count_pending,
                reasons=list(Pending),
                in_progress=self._count_in_progress,
            )
        )

    def _count_pending(self, reason: str) -> int:
        return sum(
            rt.pending_reason == reason for n in self._nodes.values() for rt in n.runtimes.values()
        )

    def _count_in_progress(self) -> int:
        return sum(
            rt.actual is not None for n in self._nodes.values() for rt in n.runtimes.values()
        )

    @staticmethod
    def restore(node: NodePods) -> None:
        """Rebuilds the node's retry list from its restored runtimes."""
        node.deferred.update(
            uid for uid, rt in node.runtimes.items() if rt.pending_reason == Pending.DEFERRED
        )

    def actuate(self, pod: types_pb2.Pod, rt: PodRuntime, now: float) -> bool:
        """Finishes a resize whose actuation delay is over (or whose pod stopped running):
        the containers run at the allocation, and those whose resize policy asks for it were
        restarted (`containers_to_restart`)."""
        if rt.actual is None:
            return False
        if rt.state == PodState.RUNNING and (
            rt.actuate_at is not None and now + EPSILON < rt.actuate_at
        ):
            return False
        if rt.state == PodState.RUNNING:
            for name in containers_to_restart(pod, rt.actual, rt.allocation):
                rt.restart_container(name, now, stop_exit_code(pod))
                logger.info("pod %s: container %s restarted for its resize", rt.key, name)
                if self._recorder is not None:
                    self._recorder.event(
                        pod,
                        EVENT_NORMAL,
                        EVENT_KILLING,
                        "",
                        f"Container {name} resize requires restart",
                    )
        rt.actual = None
        rt.held_requests = None
        rt.actuate_at = None
        logger.info("pod %s: resized to its allocation", rt.key)
        return True

    def handle_resize(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime, now: float, trigger: str = ""
    ) -> bool:
        """Decides the resize the pod's spec asks for, if any; True if rt changed. `trigger`:
        the retry that asks (empty: the pod's own sync)."""
        if not self.enabled:
            return False
        if rt.state != PodState.RUNNING or pod.metadata.HasField("deletion_timestamp"):
            return self._clear_pending(node, rt)
        desired = desired_allocation(pod)
        if desired == rt.allocation:
            return self._clear_pending(node, rt)
        # At the desired allocation: the spec (its pod-level requests with the gate).
        wanted = kubelet_pod_requests(pod, opts=self._counting)
        # The pod itself counts at the larger of desired and what it holds now (its allocated
        # and actual sizes, by the emulated version's rule).
        decision = decide(wanted, rt.held(), held_by_others(node, rt.uid), node.allocatable)
        free_at = now
        if decision.pending == Pending.DEFERRED and self._on_failure is not None:
            try:
                made_room = self._on_failure(node)(pod, decision.failures)
            except AdmissionError as e:
                return self._pend(node, pod, rt, Pending.DEFERRED, e.message, now)
            if made_room is not None:
                decision, free_at = ACCEPTED, made_room
        if decision.pending is None:
            self._accept(node, pod, rt, desired, wanted, now, trigger, free_at)
            return True
        return self._pend(node, pod, rt, decision.pending, decision.message, now)

    def _accept(
        self,
        node: NodePods,
        pod: types_pb2.Pod,
        rt: PodRuntime,
        desired: PodAllocation,
        wanted: dict[str, int],
        now: float,
        trigger: str,
        free_at: float,
    ) -> None:
        """Accepts the resize; it is actuated after the actuation delay, and not before
        `free_at` (when the pods preempted for it have stopped)."""
        was_deferred = rt.pending_reason == Pending.DEFERRED
        self._clear_pending(node, rt)
        if rt.actual is None:
            rt.actual = rt.allocation
        if self._metrics is not None:
            self._metrics.resize_accepted(rt.allocation, desired)
        rt.allocation, rt.requests = desired, wanted
        rt.resize_generation = pod.metadata.generation
        if rt.actual == rt.allocation:  # resized back before it was actuated
            rt.actual = rt.held_requests = rt.actuate_at = None
        else:
            rt.held_requests = kubelet_pod_requests(
                pod,
                requests_of(rt.allocation),
                requests_of(rt.actual),
                opts=self._counting,
            )
            rt.actuate_at = max(now + self._actuation_delay, free_at)
        if was_deferred and trigger:
            self.deferred_resizes_accepted[trigger] = (
                self.deferred_resizes_accepted.get(trigger, 0) + 1
            )
            if self._metrics is not None:
                self._metrics.deferred_accepted.labels(trigger).inc()
        logger.info(
            "node %s: pod %s: resize accepted%s",
            node.name,
            rt.key,
            f" on retry ({trigger})" if trigger else "",
        )
        if self._recorder is not None:
            self._recorder.event(
                pod,
                EVENT_NORMAL,
                EVENT_RESIZE_STARTED,
                "",
                _resize_started_message(pod, desired, rt.resize_generation),
            )

    def _pend(
        self,
        node: NodePods,
        pod: types_pb2.Pod,
        rt: PodRuntime,
        pending: Pending,
        message: str,
        now: float,
    ) -> bool:
        """Marks the resize Deferred or Infeasible; True if that changed rt."""
        reason, generation = str(pending), pod.metadata.generation
        if (rt.pending_reason, rt.pending_message, rt.pending_generation) == (
            reason,
            message,
            generation,
        ):
            return False
        if (rt.pending_reason, rt.pending_message) != (reason, message):
            logger.info("node %s: pod %s: resize %s: %s", node.name, rt.key, reason, message)
            if self._recorder is not None:
                event = (
                    EVENT_RESIZE_DEFERRED
                    if pending == Pending.DEFERRED
                    else EVENT_RESIZE_INFEASIBLE
                )
                self._recorder.event(pod, EVENT_WARNING, event, "", message)
        if not rt.pending_reason:
            rt.pending_since = now
        if (
            self._metrics is not None
            and pending == Pending.INFEASIBLE
            and rt.pending_reason != Pending.INFEASIBLE
        ):
            self._metrics.infeasible.labels("insufficient_node_allocatable").inc()
        rt.pending_reason, rt.pending_message, rt.pending_generation = reason, message, generation
        if pending == Pending.DEFERRED:
            node.deferred.add(rt.uid)
        else:
            node.deferred.discard(rt.uid)
        return True

    @staticmethod
    def _clear_pending(node: NodePods, rt: PodRuntime) -> bool:
        node.deferred.discard(rt.uid)
        if not rt.pending_reason:
            return False
        rt.pending_reason = rt.pending_message = ""
        rt.pending_since = None
        rt.pending_generation = 0
        return True

    def retry(self, node: NodePods, trigger: str) -> None:
        """Walks the node's whole retry list in its order, each pod decided against the
        allocations the ones before it got; enqueues every pod that changed. Every walk, even
        of an empty list, re-arms the node's periodic retry (upstream's ticker reset)."""
        if not self.enabled:
            return
        self.timer.reset(node.name, self._clock.monotonic())
        if not node.deferred:
            return
        candidates: list[tuple[tuple[bool, int, bool, float], str]] = []
        for uid in list(node.deferred):
            pod, rt = node.api_pods.get(uid), node.runtimes.get(uid)
            if pod is None or rt is None:
                node.deferred.discard(uid)
                continue
            key = retry_key(pod, rt.requests, rt.pending_since, self._counting)
            candidates.append((key, uid))
        candidates.sort()
        now = self._clock.now()
        changed = False
        for _key, uid in candidates:
            pod, rt = node.api_pods[uid], node.runtimes[uid]
            if self.handle_resize(node, pod, rt, now, trigger):
                changed = True
                self._enqueue(uid)
        if changed:
            node.save()

    def add_node(self, name: str) -> None:
        """A node started at run time (a hollow kubelet's parent's `add`): its periodic retry
        is armed from now, as every node's is at start."""
        self.timer.start((name,), self._clock.monotonic())
        self._woken.set()

    def remove_node(self, name: str) -> None:
        self.timer.forget(name)

    async def run(self) -> None:
        """The periodic retry of every node (kubelet.resize_retry: 30 s after start, then
        `retry_period` after each node's last walk), until cancelled."""
        if not self.enabled:
            return
        self.timer.start(self._nodes, self._clock.monotonic())
        while True:
            deadline = self.timer.next_deadline()
            self._woken = anyio.Event()
            if deadline is None:
                await self._woken.wait()  # no node: until one is added
                continue
            remaining = deadline - self._clock.monotonic()
            if remaining > 0:
                async with move_on_after(self._clock, remaining):
                    await self._woken.wait()
            for name in self.timer.due(self._clock.monotonic()):
                node = self._nodes.get(name)
                if node is not None:
                    self.retry(node, TRIGGER_PERIODIC)
