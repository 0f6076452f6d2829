"""Pod workers: the state machine of every pod bound to this process's node(s), from its arrival
to its removal (upstream's pod_workers.go: UpdatePod, and SyncPod / SyncTerminatingPod /
SyncTerminatedPod).

Informer events and timers both end in `sync_pod(uid)` (PodSyncer), which is level-based: it looks at the
pod as the API has it now and at what the kubelet knows of it (`PodRuntime`), moves the pod's
state forward (runtime.PodState) and its resize (kubelet.allocation), writes the status that
state implies if the API differs (kubelet.status_manager), deletes a finished pod that was
deleted, and sets a timer for its next deadline. A work queue (kemu.client.workqueue)
serializes syncs per pod; a fixed set of worker tasks serves every pod of every node, so a
hollow kubelet with thousands of pods runs no task per pod.

A pod is admitted (kubelet.admission) in the informer handler, synchronously, so that two pods
arriving together are decided one after the other against the same allocation (upstream's
HandlePodAdditions).

Deferred resizes are retried (kubelet.allocation, kubelet.resize_retry) when pods are added or
removed, a pod terminates, a resize is actuated, a pod is updated, and on upstream's timer (30 s
after start, then `resize_retry_period` after the node's last retry).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable
from typing import Final

import anyio
from anyio.abc import TaskStatus
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.dra_slice_file import NO_DRIVERS, DraDrivers
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import revision_of
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.pod_strategy import TERMINAL_PHASES, spec_grace_seconds
from kemu.machinery.resourceclaim import uses_claims
from kubelet.admission import admit_pod
from kubelet.allocation import (
    AllocationManager,
    AllocationOptions,
    held_by_others,
)
from kubelet.container_events import killing_events, started_events
from kubelet.dra_manager import (
    PREPARE_RETRY_PERIOD,
    ClaimsInUseCollector,
    DraManager,
    PrepareError,
)
from kubelet.pod_manager import NodePods
from kubelet.preemption import (
    PREEMPT_MESSAGE,
    PREEMPT_REASON,
    Candidate,
    CriticalPodAdmissionHandler,
)
from kubelet.resize_retry import (
    TRIGGER_POD_RESIZED,
    TRIGGER_POD_TERMINATED,
    TRIGGER_POD_UPDATED,
    TRIGGER_PODS_ADDED,
    TRIGGER_PODS_REMOVED,
)
from kubelet.runtime import (
    DEFAULT_GRACE_PERIOD,
    EPSILON,
    EXIT_KILLED,
    EXIT_OK,
    RUN_DURATION_ANNOTATION,
    PodRuntime,
    PodState,
    annotation_exit_code,
    annotation_seconds,
    annotation_shutdown,
)
from kubelet.settings import PodWorkerOptions
from kubelet.status_manager import StatusManager, StatusOptions

logger = logging.getLogger(__name__)

_RETRY_BASE_DELAY: Final = 0.5
_RETRY_MAX_DELAY: Final = 30.0


class PodSyncer:
    """One pod's sync (upstream's podSyncer, which the Kubelet implements in kubelet.go:
    SyncPod, SyncTerminatingPod, SyncTerminatedPod), and its removal once the API no longer
    has it. Shares the workers' map of pods to nodes, allocation and status managers and
    queue (for the pod's next deadline)."""

    def __init__(
        self,
        client: ApiClient,
        clock: Clock,
        *,
        node_of: dict[str, NodePods],
        allocation: AllocationManager,
        status: StatusManager,
        queue: WorkQueue,
        shutdown_duration: float | None,
        dra: DraManager,
        recorder: EventRecorder | None,
        client_of: Callable[[str], ApiClient] | None = None,
    ) -> None:
        """`client_of`: a node's client (a hollow process's node deletes its pods as its
        node's user: NodeRestriction lets a node delete only pods bound to it)."""
        self._client_of = client_of or (lambda _node: client)
        self._recorder = recorder
        self._dra = dra
        self._clock = clock
        self._node_of = node_of
        self._allocation = allocation
        self._status = status
        self._queue = queue
        self._shutdown_duration = shutdown_duration

    async def sync_pod(self, uid: str) -> None:
        """One level-based turn of a pod's worker: removes a pod the API no longer has, and
        otherwise syncs an admitted pod as its state asks."""
        node = self._node_of.get(uid)
        if node is None:
            return  # not (or no longer) a pod of this process's nodes
        pod, rt = node.api_pods.get(uid), node.runtimes.get(uid)
        if pod is None:
            self._remove_pod(node, uid, rt)
        elif rt is not None:  # None: it finished before we knew it, nothing to do
            now = self._clock.now()
            self._update_runtime(node, pod, rt, now)
            if rt.state == PodState.PREPARING and rt.prepared_at is None:
                await self._prepare_resources(node, pod, rt, now)
            if rt.active:
                await self._sync_active_pod(node, pod, rt, now)
            else:
                await self._sync_terminated_pod(node, pod, rt)

    def _remove_pod(self, node: NodePods, uid: str, rt: PodRuntime | None) -> None:
        """The pod is gone from the API: the kubelet forgets it and frees what it held."""
        self._node_of.pop(uid, None)
        if rt is None:
            return
        if rt.active and rt.prepared_at is not None:
            self._dra.unprepare_resources(rt.key)
        del node.runtimes[uid]
        node.deferred.discard(uid)
        node.addresses.release(uid)
        if rt.state != PodState.REJECTED:
            node.save()
        logger.info("node %s: pod %s is gone (was %s)", node.name, rt.key, rt.state)

    def _update_runtime(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime, now: float
    ) -> None:
        """Moves the pod's state and resize forward to `now`, checkpoints what changed, and
        retries the node's Deferred resizes if this pod freed room."""
        was_active, was_state = rt.active, rt.state
        changed = advance(pod, rt, now, shutdown_duration=self._shutdown_duration)
        self._record_container_events(pod, was_state, rt.state)
        actuated = self._allocation.actuate(pod, rt, now)
        changed = self._allocation.handle_resize(node, pod, rt, now) or changed
        changed = sync_pod_ip(node, pod, rt) or changed
        if changed or actuated:
            node.save()
        if was_active and not rt.active:
            if rt.prepared_at is not None:
                self._dra.unprepare_resources(rt.key)
            self._allocation.retry(node, TRIGGER_POD_TERMINATED)
        elif actuated:
            self._allocation.retry(node, TRIGGER_POD_RESIZED)

    def _record_container_events(
        self, pod: types_pb2.Pod, before: PodState, after: PodState
    ) -> None:
        """Pulled, Created and Started when the containers start; Killing when a running
        pod's containers get SIGTERM (kubelet.container_events)."""
        if self._recorder is None or before == after:
            return
        if after in (PodState.RUNNING, PodState.SUCCEEDED) and before in (
            PodState.PREPARING,
            PodState.STARTING,
        ):
            events = started_events(pod)
        elif before == PodState.RUNNING and after in (PodState.TERMINATING, PodState.TERMINATED):
            events = killing_events(pod)
        else:
            return
        for e in events:
            self._recorder.event(pod, e.event_type, e.reason, "", e.message)

    async def _prepare_resources(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime, now: float
    ) -> None:
        """PrepareDynamicResources before the sandbox: the claims' NodePrepareResources
        begins now (kubelet.dra_manager); while the claims are not ready the pod waits and
        is synced again later (or at a change of one of its claims)."""
        try:
            prepared = await self._dra.prepare_resources(pod)
        except PrepareError as e:
            logger.info("pod %s: waiting for its ResourceClaims: %s", rt.key, e)
            self._queue.add_after(rt.uid, PREPARE_RETRY_PERIOD)
            return
        rt.prepared_at = now + prepared.delay
        rt.prepared_claims = prepared.claims
        node.save()
        self._update_runtime(node, pod, rt, now)

    async def _sync_active_pod(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime, now: float
    ) -> None:
        """SyncPod and SyncTerminatingPod: reports a running pod's status, and comes back at
        the pod's next deadline (started, run out, resized, stopped)."""
        written: types_pb2.Pod | None = pod
        if self._status.reports(rt):
            written = await self._status.write(node, pod, rt)
        deadline = rt.next_deadline()
        # A pod gone from the API (written None) waits for its DELETED event instead.
        if written is not None and deadline is not None:
            self._queue.add_after(rt.uid, deadline - now)

    async def _sync_terminated_pod(
        self, node: NodePods, pod: types_pb2.Pod, rt: PodRuntime
    ) -> None:
        """SyncTerminatedPod: reports how the pod ended, then removes it from the API if it
        was deleted (grace 0: its containers are stopped)."""
        written: types_pb2.Pod | None = pod
        if self._status.reports(rt):
            written = await self._status.write(node, pod, rt)
        if written is not None and written.metadata.HasField("deletion_timestamp"):
            await self._delete(node, rt)

    async def _delete(self, node: NodePods, rt: PodRuntime) -> None:
        try:
            await self._client_of(node.name).delete(
                types_pb2.Pod, rt.name, rt.namespace, grace_period_seconds=0, uid=rt.uid
            )
            logger.info("pod %s: deleted after termination", rt.key)
        except (NotFound, Conflict):
            pass  # already gone (or a new pod took the name)


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
        dra_drivers: DraDrivers = NO_DRIVERS,
        client_of: Callable[[str], ApiClient] | None = None,
    ) -> None:
        """`dra_drivers`: the simulated DRA drivers of the nodes (--dra-slice-file).
        `client_of`: a node's client for its pods' status writes, deletions and claim reads
        (a hollow process's node calls as its node's user); None: `client`."""
        self._client = client
        self._clock = clock
        self.options = options or PodWorkerOptions()
        self._recorder = recorder
        self.nodes: dict[str, NodePods] = {n.name: n for n in nodes}
        self._node_of: dict[str, NodePods] = {}
        self.queue = WorkQueue(
            clock, name="pod workers", base_delay=_RETRY_BASE_DELAY, max_delay=_RETRY_MAX_DELAY
        )
        self.allocation_manager = AllocationManager(
            self.nodes,
            clock=clock,
            enqueue=self.queue.add,
            options=AllocationOptions(
                enabled=self.options.in_place_resize,
                actuation_delay=self.options.resize_actuation_delay,
                retry_period=self.options.resize_retry_period,
                counting=self.options.counting,
            ),
            recorder=recorder,
            registry=registry,
            # KEP-5836: with its gate on, a Deferred resize waits for the scheduler's
            # preemption, and the kubelet preempts for none (upstream's
            # CriticalPodAdmissionHandler returns the failures for a resize).
            on_failure=None
            if self.options.scheduler_preempts_for_resizes
            else self._admission_handler,
        )
        self.status_manager = StatusManager(
            client,
            clock=clock,
            options=StatusOptions(
                observed_generation=self.options.observed_generation,
                report_resources=self.options.report_resources,
                host_ips=self.options.host_ips,
                disruption_conditions=self.options.disruption_conditions,
            ),
            client_of=client_of,
        )
        self._syncer = PodSyncer(
            client,
            clock,
            node_of=self._node_of,
            allocation=self.allocation_manager,
            status=self.status_manager,
            queue=self.queue,
            shutdown_duration=self.options.shutdown_duration,
            dra=DraManager(
                client, dra_drivers, recorder=recorder, registry=registry, client_of=client_of
            ),
            recorder=recorder,
            client_of=client_of,
        )
        if registry is not None:
            registry.register(
                ClaimsInUseCollector(
                    lambda: (rt for n in self.nodes.values() for rt in n.runtimes.values())
                )
            )
        self._started = False
        self.syncs = 0

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
            self.allocation_manager.restore(node)

    def set_pod_cidr(self, node_name: str, pod_cidr: str) -> None:
        """The node's spec.podCIDR (feed it from a node informer): once it is known, the
        node's running pods that have no IP get one (kubelet.network)."""
        node = self.nodes.get(node_name)
        if node is None or not node.addresses.set_pod_cidr(pod_cidr):
            return
        if self._started:
            for uid, rt in node.runtimes.items():
                if rt.active and not rt.pod_ip:
                    self.queue.add(uid)

    def claim_changed(self, claim: types_pb2.ResourceClaim) -> None:
        """A ResourceClaim changed (feed it from a claim informer): the pods of these nodes
        it is reserved for, waiting for it, are synced again."""
        if not self._started:
            return
        for ref in claim.status.reserved_for:
            rt = self.runtime(ref.uid)
            if rt is not None and rt.state == PodState.PREPARING:
                self.queue.add(ref.uid)

    def runtime(self, uid: str) -> PodRuntime | None:
        node = self._node_of.get(uid)
        return None if node is None else node.runtimes.get(uid)

    # ------------------------------------------------------------ informer events (UpdatePod)

    def on_pod(self, pod: types_pb2.Pod) -> None:
        node = self.nodes.get(pod.spec.node_name)
        if node is None:
            return
        uid = pod.metadata.uid
        known = node.api_pods.get(uid)
        if known is not None and revision_of(known) > revision_of(pod):
            return  # we already hold a newer version (the answer to our own write)
        node.api_pods[uid] = pod
        self._node_of[uid] = node
        if not self._started:
            return  # admitted once the informer has synced: see run()
        if uid not in node.runtimes:
            self._add_pod(node, pod)  # admitted at its spec: no resize of its own to retry
        elif known is not None and differs_semantically(known, pod):
            self.allocation_manager.retry(node, TRIGGER_POD_UPDATED)
        self.queue.add(uid)

    def on_pod_delete(self, pod: types_pb2.Pod) -> None:
        """HandlePodRemoves: the pod leaves the pod manager, so it no longer counts against
        the node's other pods (`held_by_others`), and the Deferred resizes are retried at once
        (upstream's RetryPendingResizes(pods_removed), in pkg/kubelet/kubelet.go), before any
        pod's worker can decide a resize against the freed room. Its worker then forgets it."""
        node = self.nodes.get(pod.spec.node_name)
        if node is None:
            return
        uid = pod.metadata.uid
        if node.api_pods.pop(uid, None) is None or not self._started:
            return
        rt = node.runtimes.get(uid)
        if rt is None:
            return
        self._node_of[uid] = node
        self.queue.add(uid)
        if rt.active:
            self.allocation_manager.retry(node, TRIGGER_PODS_REMOVED)

    def _add_pod(self, node: NodePods, pod: types_pb2.Pod) -> None:
        """HandlePodAdditions for one pod: admits it (or not) and records the outcome."""
        if pod.status.phase in TERMINAL_PHASES:
            return  # finished before we knew it: nothing runs, nothing to free
        rt = admit_pod(
            pod,
            held_by_others(node, pod.metadata.uid),
            node.allocatable,
            now=self._clock.now(),
            startup_delay=self.options.startup_delay,
            on_failure=self._admission_handler(node),
            counting=self.options.counting,
        )
        if rt.state == PodState.STARTING and uses_claims(pod):
            rt.state = PodState.PREPARING  # its sandbox waits for its claims (DRA)
        node.runtimes[rt.uid] = rt
        if rt.state == PodState.REJECTED:
            logger.info(
                "node %s: rejected pod %s: %s: %s", node.name, rt.key, rt.reason, rt.message
            )
            if self._recorder is not None:
                self._recorder.event(pod, EVENT_WARNING, rt.reason, "", rt.message)
        elif rt.state in (PodState.PREPARING, PodState.STARTING):
            node.save()
            logger.debug("node %s: admitted pod %s", node.name, rt.key)

    def _admission_handler(self, node: NodePods) -> CriticalPodAdmissionHandler:
        """The node's admission failure handler: the critical-pod preemption."""
        return CriticalPodAdmissionHandler(
            lambda: active_candidates(node), lambda victim: self._preempt(node, victim)
        )

    def _preempt(self, node: NodePods, victim: types_pb2.Pod) -> float:
        """Kills `victim` for a critical pod (upstream killPodFunc with the Preempting
        status): its containers get its grace period; returns when they will have
        stopped."""
        rt = node.runtimes[victim.metadata.uid]
        now = self._clock.now()
        logger.info("node %s: preempting pod %s for a critical pod", node.name, rt.key)
        if self._recorder is not None:
            self._recorder.event(victim, EVENT_WARNING, PREEMPT_REASON, "", PREEMPT_MESSAGE)
        rt.reason, rt.message = PREEMPT_REASON, PREEMPT_MESSAGE
        begin_termination(
            victim,
            rt,
            now,
            grace=spec_grace_seconds(victim),
            shutdown_duration=self.options.shutdown_duration,
        )
        node.save()
        self.queue.add(rt.uid)
        return rt.stop_at() if rt.state == PodState.TERMINATING else now

    # ------------------------------------------------------------ workers

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Syncs pods until cancelled. Start it once the pod informer has synced: restored pods
        the API no longer has are forgotten first, then the pods seen so far are admitted
        oldest first (upstream's HandlePodAdditions order), so that a stale checkpoint never
        counts against a new pod."""
        for node in self.nodes.values():
            self._start_node(node)
        self._started = True
        for uid in list(self._node_of):
            self.queue.add(uid)
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self.queue.run)
                tg.start_soon(self.allocation_manager.run, name="resize retry")
                for i in range(self.options.workers):
                    tg.start_soon(self._worker, name=f"pod worker {i}")
                task_status.started()
        finally:
            self.queue.shut_down()

    def _start_node(self, node: NodePods) -> None:
        """A node's pods once its API pods are known: restored ones the API no longer has are
        forgotten, then the new ones admitted oldest first."""
        self._forget_gone_restored_pods(node)
        new = [p for uid, p in node.api_pods.items() if uid not in node.runtimes]
        new.sort(key=lambda p: (p.metadata.creation_timestamp.ToNanoseconds(), p.metadata.name))
        self._adopt_pod_ips(node)
        for pod in new:
            self._add_pod(node, pod)
        # HandlePodAdditions retries when the pods it adds have resizes pending: after a
        # restart, the restored ones.
        if node.deferred:
            self.allocation_manager.retry(node, TRIGGER_PODS_ADDED)

    # ------------------------------------------------------------ nodes at run time

    def add_node(self, node: NodePods, pods: Iterable[types_pb2.Pod]) -> None:
        """Starts syncing the pods of a node a hollow kubelet runs from now on (its parent's
        `add`, kubelet.node_control): `pods` are the API's pods bound to it, listed after
        the pod informer began keeping them. What `restore` and `run` do for the nodes of the
        start; call it once the workers run."""
        if not self._started:
            raise RuntimeError("add_node: the pod workers are not running yet")
        if node.name in self.nodes:
            raise ValueError(f"node {node.name} is already running")
        self.nodes[node.name] = node
        for rt in node.restore():
            self._node_of[rt.uid] = node
        self.allocation_manager.restore(node)
        for pod in pods:
            node.api_pods[pod.metadata.uid] = pod
            self._node_of[pod.metadata.uid] = node
        self._start_node(node)
        self.allocation_manager.add_node(node.name)
        for uid in {*node.runtimes, *node.api_pods}:
            self.queue.add(uid)

    def remove_node(self, name: str) -> None:
        """Stops syncing the pods of node `name` (its parent's `remove`): they are forgotten,
        not stopped, as when an instance's machine goes away; its checkpoint stays."""
        node = self.nodes.pop(name, None)
        if node is None:
            return
        for uid in {*node.runtimes, *node.api_pods}:
            if self._node_of.get(uid) is node:
                del self._node_of[uid]
        self.allocation_manager.remove_node(name)

    @staticmethod
    def _adopt_pod_ips(node: NodePods) -> None:
        """Restored pods whose record has no IP keep the one their status shows (a pod's IP
        never changes while it runs), before any pod is given a new one."""
        for uid, rt in node.runtimes.items():
            pod = node.api_pods.get(uid)
            if pod is None or not rt.active or rt.pod_ip or pod.spec.host_network:
                continue
            ip = pod.status.pod_ip
            if ip and not node.addresses.in_use(ip):
                rt.pod_ip = ip
                node.addresses.occupy(uid, ip)

    def _forget_gone_restored_pods(self, node: NodePods) -> None:
        gone = [uid for uid in node.runtimes if uid not in node.api_pods]
        for uid in gone:
            rt = node.runtimes.pop(uid)
            node.addresses.release(uid)
            self._node_of.pop(uid, None)
            logger.info("node %s: restored pod %s is gone (was %s)", node.name, rt.key, rt.state)
        if gone:
            node.save()

    async def _worker(self) -> None:
        while (uid := await self.queue.get()) is not None:
            try:
                await self.sync_pod(uid)
                self.queue.forget(uid)
            except ApiError as e:
                delay = self.queue.add_rate_limited(uid)
                rt = self.runtime(uid)
                logger.warning(
                    "syncing pod %s failed (%s: %s), retrying in %.1fs",
                    rt.key if rt is not None else uid,
                    e.reason,
                    e,
                    delay,
                )
            except Exception:
                logger.exception("syncing pod %s failed", uid)
            finally:
                self.queue.done(uid)

    async def sync_pod(self, uid: str) -> None:
        """One level-based turn of a pod's worker (see PodSyncer.sync_pod)."""
        self.syncs += 1
        await self._syncer.sync_pod(uid)


def active_candidates(node: NodePods) -> list[Candidate]:
    """The node's active pods the API still has, with what each holds (upstream
    GetActivePods, for the critical-pod preemption), in admission order."""
    api = node.api_pods
    return [
        Candidate(api[rt.uid], rt.held())
        for rt in node.runtimes.values()
        if rt.active and rt.uid in api
    ]


def sync_pod_ip(node: NodePods, pod: types_pb2.Pod, rt: PodRuntime) -> bool:
    """An active pod on the pod network holds an IP from the node's pod CIDR, given when its
    sandbox is created (admission) or, on a node that had no pod CIDR then, once it has one;
    a pod that stopped frees it (its record and status keep it). True if rt changed."""
    if not rt.active:
        node.addresses.release(rt.uid)
        return False
    if rt.pod_ip or pod.spec.host_network:
        return False
    rt.pod_ip = node.addresses.assign(rt.uid, preferred=pod.status.pod_ip)
    return bool(rt.pod_ip)


def differs_semantically(old: types_pb2.Pod, new: types_pb2.Pod) -> bool:
    """Whether a pod event is an update for HandlePodUpdates (upstream's pod config
    checkAndUpdatePod): its spec, labels, annotations or deletion changed. A status-only
    change (the kubelet's own writes, the scheduler's conditions) is a reconcile, which
    retries no resize."""
    o, n = old.metadata, new.metadata
    return (
        old.spec != new.spec
        or o.labels != n.labels
        or o.annotations != n.annotations
        or o.deletion_timestamp != n.deletion_timestamp
        or o.deletion_grace_period_seconds != n.deletion_grace_period_seconds
    )


# ---------------------------------------------------------------- the state transitions


def advance(
    pod: types_pb2.Pod, rt: PodRuntime, now: float, *, shutdown_duration: float | None
) -> bool:
    """Moves rt's state forward to `now`, taking every transition that is due (the simulated
    containers' timings: kubelet.runtime); True if it changed. `shutdown_duration`: how long
    the containers take to exit on SIGTERM unless the pod's annotation says (None: they wait
    for the kill)."""
    changed = False
    if pod.metadata.HasField("deletion_timestamp") and rt.active:
        changed = _terminate(pod, rt, now, shutdown_duration)
    if rt.state == PodState.TERMINATING and now + EPSILON >= rt.stop_at():
        stop = rt.stop_at()
        clean = rt.shutdown_at is not None and rt.shutdown_at <= (
            rt.kill_at if rt.kill_at is not None else math.inf
        )
        rt.exit_code = EXIT_OK if clean else EXIT_KILLED
        rt.finished_at = min(stop, now)
        rt.state = PodState.TERMINATED
        changed = True
    if (
        rt.state == PodState.PREPARING
        and rt.prepared_at is not None
        and now + EPSILON >= rt.prepared_at
    ):
        # The sandbox and containers are created once the claims are prepared: the start-up
        # delay counts from then.
        rt.start_at = rt.prepared_at + (rt.start_at - rt.admitted_at)
        rt.state = PodState.STARTING
        changed = True
    if rt.state == PodState.STARTING and now + EPSILON >= rt.start_at:
        rt.state = PodState.RUNNING
        rt.started_at = now
        run = annotation_seconds(pod, RUN_DURATION_ANNOTATION)
        rt.run_until = None if run is None else now + run
        changed = True
    if rt.state == PodState.RUNNING and rt.run_until is not None and now + EPSILON >= rt.run_until:
        rt.state = PodState.SUCCEEDED
        rt.exit_code = annotation_exit_code(pod)
        rt.finished_at = now
        changed = True
    return changed


def _terminate(
    pod: types_pb2.Pod, rt: PodRuntime, now: float, shutdown_duration: float | None
) -> bool:
    """The pod was deleted: its termination begins with the deletion's grace period."""
    meta = pod.metadata
    grace = (
        meta.deletion_grace_period_seconds
        if meta.HasField("deletion_grace_period_seconds")
        else DEFAULT_GRACE_PERIOD
    )
    return begin_termination(pod, rt, now, grace=grace, shutdown_duration=shutdown_duration)


def begin_termination(
    pod: types_pb2.Pod,
    rt: PodRuntime,
    now: float,
    *,
    grace: int,
    shutdown_duration: float | None,
) -> bool:
    """The pod is to stop (deleted, or preempted by the kubelet): a pod still starting never
    runs, a running one's containers get SIGTERM and a kill deadline `grace` seconds away,
    and a later stop with a shorter grace period brings a terminating pod's deadline
    forward. True if rt changed."""
    if rt.state in (PodState.PREPARING, PodState.STARTING):
        rt.state = PodState.TERMINATED
        rt.finished_at = now
        return True
    if rt.state == PodState.RUNNING:
        shutdown = annotation_shutdown(pod, shutdown_duration)
        rt.state = PodState.TERMINATING
        rt.shutdown_at = None if shutdown is None else now + shutdown
        rt.kill_at = now + grace
        logger.info(
            "pod %s: terminating (grace period %ds, shutdown %s)",
            rt.key,
            grace,
            "none" if shutdown is None else f"{shutdown:g}s",
        )
        return True
    if rt.kill_at is None or now + grace < rt.kill_at - EPSILON:
        rt.kill_at = now + grace
        return True
    return False
