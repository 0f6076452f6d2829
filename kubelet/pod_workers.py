"""Pod workers: the life of every pod bound to this process's node(s), from admission to removal.

Informer events and timers both end in `sync_pod(uid)`, which is level-based: it looks at the
pod as the API has it now and at what the kubelet knows of it (`PodRuntime`), moves the pod's
state forward (runtime.PodState), writes the status that state implies if the API differs,
deletes a finished pod that was deleted, and sets a timer for its next deadline. A work queue
serializes syncs per pod; a fixed set of worker tasks serves every pod of every node, so a
hollow kubelet with thousands of pods runs no task per pod.

Admission happens in the informer handler, synchronously, so that two pods arriving together
are decided one after the other against the same allocation (upstream's HandlePodAdditions).

In-place resize (kubelet.allocation): a running pod whose spec asks for other resources than
its allocation is decided in its sync (accepted, Deferred or Infeasible); Deferred pods are
retried, in the retry list's order, when a pod is removed or terminates, a resize is actuated,
a pod is updated, and every `resize_retry_period`.

Status writes: the kubelet owns the phase, startTime, container statuses and the conditions
Initialized, Ready, ContainersReady and PodReadyToStartContainers; every other condition
(PodScheduled, DisruptionTarget, ...) is kept as the API has it, except the resize conditions
PodResizePending, PodResizeInProgress and (with its gate on) PodResizePreemptionDisabled, which
the kubelet owns too. Each write is an update_status of the whole status with the pod's
resourceVersion; on Conflict the pod is read again and the status rebuilt on it.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

import anyio
from anyio.abc import TaskStatus
from google.protobuf.timestamp_pb2 import Timestamp
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.resources import kubelet_pod_requests
from kubelet.admission import (
    ContainerAllocation,
    allocation_from_spec,
    fits,
    requests_of,
    used_by,
)
from kubelet.allocation import (
    DEFAULT_ACTUATION_DELAY,
    DEFAULT_RETRY_PERIOD,
    EVENT_RESIZE_DEFERRED,
    EVENT_RESIZE_INFEASIBLE,
    EVENT_RESIZE_STARTED,
    POD_RESIZE_IN_PROGRESS,
    POD_RESIZE_PENDING,
    POD_RESIZE_PREEMPTION_DISABLED,
    REASON_PREEMPTION_DISABLED_BY_NODE_POLICY,
    TRIGGER_PERIODIC,
    TRIGGER_POD_RESIZED,
    TRIGGER_POD_TERMINATED,
    TRIGGER_POD_UPDATED,
    TRIGGER_PODS_REMOVED,
    Pending,
    ResizeMetrics,
    decide,
    desired_allocation,
    retry_key,
)
from kubelet.checkpoint import Checkpoint
from kubelet.runtime import (
    EXIT_KILLED,
    EXIT_OK,
    RUN_DURATION_ANNOTATION,
    SHUTDOWN_DURATION_ANNOTATION,
    STARTUP_DELAY_ANNOTATION,
    PodRuntime,
    PodState,
    annotation_seconds,
)
from kubelet.workqueue import WorkQueue

logger = logging.getLogger(__name__)

DEFAULT_WORKERS: Final = 32
DEFAULT_GRACE_PERIOD: Final = 30
# Timers on the monotonic clock and deadlines on the wall clock may disagree by a hair.
_EPSILON: Final = 1e-3
_WRITE_ATTEMPTS: Final = 5
_RETRY_INITIAL: Final = 0.5
_RETRY_MAX: Final = 30.0

KUBELET_CONDITIONS: Final = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady")
"""The pod conditions the kubelet owns; it never touches the others."""

_TERMINAL_PHASES: Final = frozenset({"Succeeded", "Failed"})


@dataclass(frozen=True)
class PodWorkerOptions:
    startup_delay: float = 0.5
    """Seconds from admission to running containers, unless the pod's annotation says."""
    shutdown_duration: float | None = None
    """Seconds a container takes to exit on SIGTERM; None: it ignores SIGTERM (killed at the
    end of the grace period). The pod's annotation overrides it."""
    workers: int = DEFAULT_WORKERS
    in_place_resize: bool = True
    """Gate InPlacePodVerticalScaling: resize running pods when their spec changes."""
    per_container_max: bool = False
    """The emulated version's rule for a resizing pod's allocated and actual sizes (True before
    1.37: each container's larger one, summed; kemu.machinery.resources)."""
    resize_actuation_delay: float = DEFAULT_ACTUATION_DELAY
    """Seconds from accepting a resize to the containers running at the new size."""
    resize_retry_period: float = DEFAULT_RETRY_PERIOD
    """How often Deferred resizes are retried besides the event triggers."""
    resize_preemption_policy: bool = False
    """Gate InPlacePodVerticalScalingSchedulerPreemption: Deferred pods on a node whose
    spec.podPreemptionPolicy.disableResizePreemption is non-empty get the condition
    PodResizePreemptionDisabled (KEP-5836)."""


def _ts(seconds: float) -> Timestamp:
    ts = Timestamp()
    ts.FromMicroseconds(round(seconds * 1_000_000))
    return ts


def _rv(pod: types_pb2.Pod) -> int:
    try:
        return int(pod.metadata.resource_version or 0)
    except ValueError:
        return 0


class NodePods:
    """The pods of one node: what the API says (latest seen) and what the kubelet knows."""

    def __init__(
        self, name: str, allocatable: Mapping[str, int], checkpoint: Checkpoint | None = None
    ) -> None:
        self.name = name
        self.allocatable = dict(allocatable)
        self.checkpoint = checkpoint or Checkpoint(None, name)
        self.api_pods: dict[str, types_pb2.Pod] = {}
        self.runtimes: dict[str, PodRuntime] = {}
        self.deferred: set[str] = set()
        """Pods whose resize is Deferred: the retry list (kubelet.allocation)."""
        self.resize_preemption_disabled = False
        """The Node's spec.podPreemptionPolicy.disableResizePreemption is non-empty."""

    def restore(self) -> list[PodRuntime]:
        restored = self.checkpoint.load()
        for rt in restored:
            self.runtimes[rt.uid] = rt
            if rt.pending_reason == Pending.DEFERRED:
                self.deferred.add(rt.uid)
        if restored:
            logger.info(
                "node %s: restored %d pods from %s", self.name, len(restored), self.checkpoint.path
            )
        return restored

    def save(self) -> None:
        self.checkpoint.save(rt for rt in self.runtimes.values() if rt.state != PodState.REJECTED)

    def active(self) -> list[PodRuntime]:
        return [rt for rt in self.runtimes.values() if rt.active]

    def held_by_others(self, uid: str) -> list[dict[str, int]]:
        """The requests every other active pod holds: its allocation, or while a resize is
        actuated the larger of its allocated and actual sizes (kubelet_pod_requests, kept in
        its runtime)."""
        return [rt.held() for rt in self.runtimes.values() if rt.active and rt.uid != uid]

    def remember(self, pod: types_pb2.Pod) -> None:
        """Keeps `pod` as the latest API state unless a newer one is known, or it was deleted."""
        uid = pod.metadata.uid
        known = self.api_pods.get(uid)
        if known is not None and _rv(known) < _rv(pod):
            self.api_pods[uid] = pod


# ---------------------------------------------------------------- status


def _set_condition(
    status: types_pb2.PodStatus, type_: str, value: str, reason: str, now: float
) -> None:
    for c in status.conditions:
        if c.type == type_:
            if c.status != value:
                c.status = value
                c.last_transition_time.CopyFrom(_ts(now))
            c.reason = reason
            c.message = ""
            return
    status.conditions.add(type=type_, status=value, reason=reason).last_transition_time.CopyFrom(
        _ts(now)
    )


def _set_resize_condition(
    status: types_pb2.PodStatus,
    type_: str,
    reason: str,
    message: str,
    generation: int,
    since: float,
) -> None:
    for c in status.conditions:
        if c.type == type_:
            break
    else:
        c = status.conditions.add(type=type_)
        c.last_transition_time.CopyFrom(_ts(since))
    if c.status != "True":
        c.status = "True"
        c.last_transition_time.CopyFrom(_ts(since))
    c.reason = reason
    c.message = message
    c.observed_generation = generation


def _resize_conditions(
    status: types_pb2.PodStatus, rt: PodRuntime, now: float, preemption_disabled_on: str | None
) -> None:
    """PodResizePending and PodResizeInProgress as rt says; PodResizePreemptionDisabled too
    unless `preemption_disabled_on` is None (the gate is off: left alone)."""
    if rt.pending_reason:
        _set_resize_condition(
            status,
            POD_RESIZE_PENDING,
            rt.pending_reason,
            rt.pending_message,
            rt.pending_generation,
            rt.pending_since if rt.pending_since is not None else now,
        )
    else:
        _drop_conditions(status, (POD_RESIZE_PENDING,))
    if rt.actual is not None:
        _set_resize_condition(status, POD_RESIZE_IN_PROGRESS, "", "", rt.resize_generation, now)
    else:
        _drop_conditions(status, (POD_RESIZE_IN_PROGRESS,))
    if preemption_disabled_on is None:
        return
    if preemption_disabled_on and rt.pending_reason == Pending.DEFERRED:
        _set_resize_condition(
            status,
            POD_RESIZE_PREEMPTION_DISABLED,
            REASON_PREEMPTION_DISABLED_BY_NODE_POLICY,
            f"Preemption for in-place pod resize is disabled on node "
            f"'{preemption_disabled_on}' by preemption policy.",
            rt.pending_generation,
            now,
        )
    else:
        _drop_conditions(status, (POD_RESIZE_PREEMPTION_DISABLED,))


def _drop_conditions(status: types_pb2.PodStatus, types: Iterable[str]) -> None:
    drop = set(types)
    keep = [c for c in status.conditions if c.type not in drop]
    if len(keep) != len(status.conditions):
        del status.conditions[:]
        status.conditions.extend(keep)


def _container_status(
    c: types_pb2.Container,
    rt: PodRuntime,
    *,
    running: bool,
    exit_code: int | None,
    finished_at: float | None,
) -> types_pb2.ContainerStatus:
    cs = types_pb2.ContainerStatus(name=c.name, image=c.image, restart_count=0)
    started_at = rt.started_at if rt.started_at is not None else rt.start_at
    if running:
        cs.state.running.started_at.CopyFrom(_ts(started_at))
        cs.ready = True
        cs.started = True
    else:
        term = cs.state.terminated
        term.exit_code = exit_code if exit_code is not None else EXIT_OK
        term.reason = "Completed" if term.exit_code == EXIT_OK else "Error"
        term.started_at.CopyFrom(_ts(started_at))
        term.finished_at.CopyFrom(_ts(finished_at if finished_at is not None else started_at))
        cs.ready = False
        cs.started = False
    alloc = rt.allocation.get(c.name) or ContainerAllocation(
        dict(c.resources.requests), dict(c.resources.limits)
    )
    cs.allocated_resources.update(alloc.requests)
    # Actual resources: always reported for a container that ran (the apiserver refuses a
    # resize of a running pod whose kubelet does not report them).
    actual = alloc if rt.actual is None else rt.actual.get(c.name, alloc)
    cs.resources.SetInParent()
    cs.resources.requests.update(actual.requests)
    cs.resources.limits.update(actual.limits)
    return cs


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


def build_status(
    pod: types_pb2.Pod, rt: PodRuntime, now: float, *, preemption_disabled_on: str | None = None
) -> types_pb2.PodStatus:
    """The status the pod should have in state `rt.state`, built on its current status.
    `preemption_disabled_on`: see _resize_conditions."""
    status = types_pb2.PodStatus()
    status.CopyFrom(pod.status)
    if not status.qos_class:
        status.qos_class = compute_qos_class(pod)
    if rt.state == PodState.REJECTED:
        status.phase = "Failed"
        status.reason = rt.reason
        status.message = f"Pod was rejected: {rt.message}"
        _drop_conditions(status, KUBELET_CONDITIONS)
        return status
    status.start_time.CopyFrom(_ts(rt.admitted_at))
    status.reason = ""
    status.message = ""
    running = rt.state in (PodState.RUNNING, PodState.TERMINATING)
    exit_code = rt.exit_code
    if running:
        status.phase = "Running"
        ready, reason = "True", ""
    else:
        status.phase = "Succeeded" if exit_code in (None, EXIT_OK) else "Failed"
        ready, reason = "False", "PodCompleted"
    _set_condition(status, "PodReadyToStartContainers", "True" if running else "False", "", now)
    _set_condition(status, "Initialized", "True", reason, now)
    _set_condition(status, "Ready", ready, reason, now)
    _set_condition(status, "ContainersReady", ready, reason, now)
    _resize_conditions(status, rt, now, preemption_disabled_on)
    del status.container_statuses[:]
    for c in pod.spec.containers:
        status.container_statuses.append(
            _container_status(
                c, rt, running=running, exit_code=exit_code, finished_at=rt.finished_at
            )
        )
    del status.init_container_statuses[:]
    for ic in pod.spec.init_containers:
        sidecar = ic.HasField("restart_policy") and ic.restart_policy == "Always"
        if sidecar:
            cs = _container_status(
                ic, rt, running=running, exit_code=exit_code, finished_at=rt.finished_at
            )
        else:  # ran to completion before the app containers started
            cs = _container_status(
                ic, rt, running=False, exit_code=EXIT_OK, finished_at=rt.started_at
            )
        status.init_container_statuses.append(cs)
    return status


# ---------------------------------------------------------------- the workers


class PodWorkers:
    """Every pod of the nodes in `nodes`; feed it with `handler()` on a pod informer."""

    def __init__(
        self,
        client: ApiClient,
        nodes: Iterable[NodePods],
        *,
        clock: Clock,
        options: PodWorkerOptions | None = None,
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or PodWorkerOptions()
        self._recorder = recorder
        self.nodes: dict[str, NodePods] = {n.name: n for n in nodes}
        self._node_of: dict[str, NodePods] = {}
        self.queue = WorkQueue(clock)
        self._failures: dict[str, int] = {}
        self._started = False
        self.syncs = 0
        self.deferred_resizes_accepted: dict[str, int] = {}
        """Deferred resizes a retry accepted, by retry trigger (upstream's
        kubelet_pod_deferred_resize_accepted_total)."""
        self._metrics = (
            None
            if registry is None
            else ResizeMetrics(
                registry, pending=self._count_pending, in_progress=self._count_in_progress
            )
        )

    def handler(self) -> FuncHandler[types_pb2.Pod]:
        return FuncHandler(
            on_add=self.on_pod,
            on_update=lambda _old, new: self.on_pod(new),
            on_delete=self.on_pod_delete,
        )

    def restore(self) -> None:
        """Loads every node's checkpoint; call before the informer starts."""
        for node in self.nodes.values():
            for rt in node.restore():
                self._node_of[rt.uid] = node

    def _count_pending(self, reason: str) -> int:
        return sum(
            rt.pending_reason == reason for n in self.nodes.values() for rt in n.runtimes.values()
        )

    def _count_in_progress(self) -> int:
        return sum(rt.actual is not None for n in self.nodes.values() for rt in n.runtimes.values())

    def set_resize_preemption_disabled(self, node_name: str, disabled: bool) -> None:
        """The node's spec.podPreemptionPolicy.disableResizePreemption is (or is no longer)
        non-empty: feed it from a node informer."""
        node = self.nodes.get(node_name)
        if node is None or node.resize_preemption_disabled == disabled:
            return
        node.resize_preemption_disabled = disabled
        if self._started and self.options.resize_preemption_policy:
            for uid in node.deferred:
                self.queue.add(uid)

    def runtime(self, uid: str) -> PodRuntime | None:
        node = self._node_of.get(uid)
        return None if node is None else node.runtimes.get(uid)

    # ------------------------------------------------------------ informer events

    def on_pod(self, pod: types_pb2.Pod) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None:
            return
        uid = pod.metadata.uid
        known = node.api_pods.get(uid)
        if known is not None and _rv(known) > _rv(pod):
            return  # we already hold a newer version (the answer to our own write)
        node.api_pods[uid] = pod
        self._node_of[uid] = node
        if not self._started:
            return  # admitted once the informer has synced: see run()
        if uid not in node.runtimes:
            self._admit(node, pod)
        elif known is not None:
            self._retry_resizes(node, TRIGGER_POD_UPDATED)
        self.queue.add(uid)

    def on_pod_delete(self, pod: types_pb2.Pod) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None:
            return
        uid = pod.metadata.uid
        node.api_pods.pop(uid, None)
        if uid in node.runtimes:
            self._node_of[uid] = node
            self.queue.add(uid)

    def _admit(self, node: NodePods, pod: types_pb2.Pod) -> None:
        if pod.status.phase in _TERMINAL_PHASES:
            return  # finished before we knew it: nothing runs, nothing to free
        now = self._clock.now()
        meta = pod.metadata
        rt = PodRuntime(meta.uid, meta.namespace, meta.name, PodState.STARTING, admitted_at=now)
        if meta.HasField("deletion_timestamp"):
            # Being deleted before it ever ran here: nothing to start or stop.
            rt.state = PodState.TERMINATED
            rt.finished_at = now
            node.runtimes[rt.uid] = rt
            return
        requests = kubelet_pod_requests(pod)
        # Resized pods count at their new allocation (or their actual size, if larger): a pod
        # bound into room a resize took is rejected (KEP-1287's kubelet-side race).
        used, count = used_by(node.held_by_others(meta.uid))
        result = fits(requests, used, count, node.allocatable)
        if not result.admit:
            rt.state = PodState.REJECTED
            rt.reason, rt.message = result.reason, result.message
            node.runtimes[rt.uid] = rt
            logger.info(
                "node %s: rejected pod %s: %s: %s", node.name, rt.key, rt.reason, rt.message
            )
            if self._recorder is not None:
                self._recorder.event(pod, EVENT_WARNING, result.reason, "", result.message)
            return
        delay = annotation_seconds(pod, STARTUP_DELAY_ANNOTATION)
        rt.allocation = allocation_from_spec(pod)
        rt.requests = requests
        rt.start_at = now + (self.options.startup_delay if delay is None else delay)
        node.runtimes[rt.uid] = rt
        node.save()
        logger.debug("node %s: admitted pod %s", node.name, rt.key)

    # ------------------------------------------------------------ workers

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Syncs pods until cancelled. Start it once the pod informer has synced: restored pods
        the API no longer has are forgotten first, then the pods seen so far are admitted
        oldest first (upstream's HandlePodAdditions order), so that a stale checkpoint never
        counts against a new pod."""
        for node in self.nodes.values():
            gone = [uid for uid in node.runtimes if uid not in node.api_pods]
            for uid in gone:
                rt = node.runtimes.pop(uid)
                self._node_of.pop(uid, None)
                logger.info(
                    "node %s: restored pod %s is gone (was %s)", node.name, rt.key, rt.state
                )
            if gone:
                node.save()
            new = [p for uid, p in node.api_pods.items() if uid not in node.runtimes]
            new.sort(key=lambda p: (p.metadata.creation_timestamp.ToNanoseconds(), p.metadata.name))
            for pod in new:
                self._admit(node, pod)
        self._started = True
        for uid in list(self._node_of):
            self.queue.add(uid)
        async with anyio.create_task_group() as tg:
            await tg.start(self.queue.run_timers)
            if self.options.in_place_resize:
                tg.start_soon(self._periodic_resize_retry, name="resize retry")
            for i in range(self.options.workers):
                tg.start_soon(self._worker, name=f"pod worker {i}")
            task_status.started()

    async def _worker(self) -> None:
        while True:
            uid = await self.queue.get()
            try:
                await self.sync_pod(uid)
                self._failures.pop(uid, None)
            except ApiError as e:
                failures = self._failures.get(uid, 0) + 1
                self._failures[uid] = failures
                delay = min(_RETRY_MAX, _RETRY_INITIAL * 2 ** (failures - 1))
                rt = self.runtime(uid)
                logger.warning(
                    "syncing pod %s failed (%s: %s), retrying in %.1fs",
                    rt.key if rt is not None else uid,
                    e.reason,
                    e,
                    delay,
                )
                self.queue.add_after(uid, delay)
            except Exception:
                logger.exception("syncing pod %s failed", uid)
            finally:
                self.queue.done(uid)

    async def sync_pod(self, uid: str) -> None:
        self.syncs += 1
        node = self._node_of.get(uid)
        if node is None:
            return
        rt = node.runtimes.get(uid)
        pod = node.api_pods.get(uid)
        if pod is None:
            self._node_of.pop(uid, None)
            if rt is not None:
                del node.runtimes[uid]
                node.deferred.discard(uid)
                if rt.state != PodState.REJECTED:
                    node.save()
                logger.info("node %s: pod %s is gone (was %s)", node.name, rt.key, rt.state)
                if rt.active:
                    self._retry_resizes(node, TRIGGER_PODS_REMOVED)
            return
        if rt is None:
            return
        now = self._clock.now()
        was_active = rt.active
        changed = self._advance(pod, rt, now)
        actuated = self._actuate(rt, now)
        if self.options.in_place_resize and self._resize(node, pod, rt, now):
            changed = True
        if changed or actuated:
            node.save()
        if was_active and not rt.active:
            self._retry_resizes(node, TRIGGER_POD_TERMINATED)
        elif actuated:
            self._retry_resizes(node, TRIGGER_POD_RESIZED)
        if self._reports_status(rt):
            written = await self._write_status(node, pod, rt)
            if written is None:
                return  # the pod is gone; its DELETED event finishes the work
            pod = written
        if rt.state in (
            PodState.TERMINATED,
            PodState.SUCCEEDED,
            PodState.REJECTED,
        ) and pod.metadata.HasField("deletion_timestamp"):
            await self._delete(pod, rt)
            return
        deadline = rt.next_deadline()
        if deadline is not None:
            self.queue.add_after(uid, deadline - now)

    def _advance(self, pod: types_pb2.Pod, rt: PodRuntime, now: float) -> bool:
        """Moves rt's state forward to `now`; True if it changed."""
        changed = False
        meta = pod.metadata
        if meta.HasField("deletion_timestamp") and rt.active:
            grace = (
                meta.deletion_grace_period_seconds
                if meta.HasField("deletion_grace_period_seconds")
                else DEFAULT_GRACE_PERIOD
            )
            if rt.state == PodState.STARTING:
                rt.state = PodState.TERMINATED
                rt.finished_at = now
                return True
            if rt.state == PodState.RUNNING:
                shutdown = annotation_seconds(pod, SHUTDOWN_DURATION_ANNOTATION)
                if shutdown is None:
                    shutdown = self.options.shutdown_duration
                rt.state = PodState.TERMINATING
                rt.shutdown_at = None if shutdown is None else now + shutdown
                rt.kill_at = now + grace
                changed = True
                logger.info(
                    "pod %s: terminating (grace period %ds, shutdown %s)",
                    rt.key,
                    grace,
                    "none" if shutdown is None else f"{shutdown:g}s",
                )
            elif rt.kill_at is None or now + grace < rt.kill_at - _EPSILON:
                # A later delete with a shorter grace period brings the deadline forward.
                rt.kill_at = now + grace
                changed = True
        if rt.state == PodState.TERMINATING and now + _EPSILON >= rt.stop_at():
            stop = rt.stop_at()
            clean = rt.shutdown_at is not None and rt.shutdown_at <= (
                rt.kill_at if rt.kill_at is not None else math.inf
            )
            rt.exit_code = EXIT_OK if clean else EXIT_KILLED
            rt.finished_at = min(stop, now)
            rt.state = PodState.TERMINATED
            return True
        if rt.state == PodState.STARTING and now + _EPSILON >= rt.start_at:
            rt.state = PodState.RUNNING
            rt.started_at = now
            run = annotation_seconds(pod, RUN_DURATION_ANNOTATION)
            rt.run_until = None if run is None else now + run
            changed = True
        if (
            rt.state == PodState.RUNNING
            and rt.run_until is not None
            and now + _EPSILON >= rt.run_until
        ):
            rt.state = PodState.SUCCEEDED
            rt.exit_code = EXIT_OK
            rt.finished_at = now
            changed = True
        return changed

    # ------------------------------------------------------------ in-place resize

    @staticmethod
    def _actuate(rt: PodRuntime, now: float) -> bool:
        """Finishes a resize whose actuation delay is over (or whose pod stopped running)."""
        if rt.actual is None:
            return False
        if rt.state == PodState.RUNNING and (
            rt.actuate_at is not None and now + _EPSILON < rt.actuate_at
        ):
            return False
        rt.actual = None
        rt.held_requests = None
        rt.actuate_at = None
        logger.info("pod %s: resized to its allocation", rt.key)
        return True

    def _resize(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime, now: float, trigger: str = ""
    ) -> bool:
        """Decides the resize the pod's spec asks for, if any (KEP-1287's
        handlePodResourcesResize); True if rt changed."""
        if rt.state != PodState.RUNNING or pod.metadata.HasField("deletion_timestamp"):
            return self._clear_pending(node, rt)
        desired = desired_allocation(pod)
        if desired == rt.allocation:
            return self._clear_pending(node, rt)
        generation = pod.metadata.generation
        wanted = kubelet_pod_requests(pod)  # at the desired allocation: the spec
        # The pod itself counts at the larger of desired and what it holds now (its allocated
        # and actual sizes, by the emulated version's rule).
        decision = decide(wanted, rt.held(), node.held_by_others(rt.uid), node.allocatable)
        if decision.pending is None:
            was_deferred = rt.pending_reason == Pending.DEFERRED
            self._clear_pending(node, rt)
            if rt.actual is None:
                rt.actual = rt.allocation
            if self._metrics is not None:
                self._metrics.resize_accepted(rt.allocation, desired)
            rt.allocation, rt.requests = desired, wanted
            rt.resize_generation = generation
            if rt.actual == rt.allocation:  # resized back before it was actuated
                rt.actual = rt.held_requests = rt.actuate_at = None
            else:
                rt.held_requests = kubelet_pod_requests(
                    pod,
                    requests_of(rt.allocation),
                    requests_of(rt.actual),
                    per_container_max=self.options.per_container_max,
                )
                rt.actuate_at = now + self.options.resize_actuation_delay
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
                    _resize_started_message(pod, desired, generation),
                )
            return True
        reason, message = str(decision.pending), decision.message
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
                    if decision.pending == Pending.DEFERRED
                    else EVENT_RESIZE_INFEASIBLE
                )
                self._recorder.event(pod, EVENT_WARNING, event, "", message)
        if not rt.pending_reason:
            rt.pending_since = now
        if (
            self._metrics is not None
            and decision.pending == Pending.INFEASIBLE
            and rt.pending_reason != Pending.INFEASIBLE
        ):
            self._metrics.infeasible.labels("insufficient_node_allocatable").inc()
        rt.pending_reason, rt.pending_message, rt.pending_generation = reason, message, generation
        if decision.pending == Pending.DEFERRED:
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

    def _retry_resizes(self, node: NodePods, trigger: str) -> None:
        """Walks the whole retry list in its order, each pod decided against the allocations
        the ones before it got; queues a status write for every pod that changed."""
        if not self.options.in_place_resize or not node.deferred:
            return
        candidates: list[tuple[tuple[bool, int, bool, float], str]] = []
        for uid in list(node.deferred):
            pod, rt = node.api_pods.get(uid), node.runtimes.get(uid)
            if pod is None or rt is None:
                node.deferred.discard(uid)
                continue
            candidates.append((retry_key(pod, rt.requests, rt.pending_since), uid))
        candidates.sort()
        now = self._clock.now()
        changed = False
        for _key, uid in candidates:
            pod, rt = node.api_pods[uid], node.runtimes[uid]
            if self._resize(node, pod, rt, now, trigger):
                changed = True
                self.queue.add(uid)
        if changed:
            node.save()

    async def _periodic_resize_retry(self) -> None:
        while True:
            await self._clock.sleep(self.options.resize_retry_period)
            for node in self.nodes.values():
                self._retry_resizes(node, TRIGGER_PERIODIC)

    @staticmethod
    def _reports_status(rt: PodRuntime) -> bool:
        if rt.state in (PodState.RUNNING, PodState.SUCCEEDED, PodState.REJECTED):
            return True
        # A terminated pod whose containers ran reports how they ended, just before it goes.
        return rt.state == PodState.TERMINATED and rt.started_at is not None

    async def _write_status(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime
    ) -> types_pb2.Pod | None:
        """Makes the API's status match rt; the pod as written, or None if it is gone."""
        disabled_on: str | None = None
        if self.options.resize_preemption_policy:
            disabled_on = node.name if node.resize_preemption_disabled else ""
        for _ in range(_WRITE_ATTEMPTS):
            status = build_status(pod, rt, self._clock.now(), preemption_disabled_on=disabled_on)
            if status == pod.status:
                return pod
            new = types_pb2.Pod()
            new.CopyFrom(pod)
            new.status.CopyFrom(status)
            try:
                written = await self._client.update_status(new)
            except NotFound:
                return None
            except Conflict:
                try:
                    pod = await self._client.get(types_pb2.Pod, rt.name, rt.namespace)
                except NotFound:
                    return None
                if pod.metadata.uid != rt.uid:
                    return None
                continue
            node.remember(written)
            return written
        raise Conflict(f"pod {rt.key}: status kept changing under {_WRITE_ATTEMPTS} writes")

    async def _delete(self, pod: types_pb2.Pod, rt: PodRuntime) -> None:
        try:
            await self._client.delete(
                types_pb2.Pod, rt.name, rt.namespace, grace_period_seconds=0, uid=rt.uid
            )
            logger.info("pod %s: deleted after termination", rt.key)
        except (NotFound, Conflict):
            pass  # already gone (or a new pod took the name)
