"""The pod garbage collector (upstream pkg/controller/podgc): deletes the pods nobody else
will, every --pod-gc-check-period (upstream's fixed gcCheckPeriod, 20 s):

- gcTerminated: when more than --terminated-pod-gc-threshold pods (default 12500; 0 turns
  this off) have finished (phase Succeeded or Failed), the excess is deleted (grace 0),
  evicted pods (status.reason Evicted) first, then the oldest by creationTimestamp, then by
  name;
- gcTerminating: a pod being deleted (deletionTimestamp set) on a node that is not Ready and
  carries the taint node.kubernetes.io/out-of-service (any effect; an operator's word that the
  node is down for good, KEP-2268) is marked Failed and deleted with grace 0, since its kubelet
  will never finish it;
- gcOrphaned: the pods bound to a node that no longer exists, below;
- gcUnscheduledTerminating: a pod being deleted that is bound to no node is marked Failed and
  deleted with grace 0. The apiserver deletes an unbound pod in two writes, as upstream's
  store (the deletionTimestamp with grace 0, then the removal): an apiserver that dies between
  them leaves it terminating with no kubelet to finish it (found by the chaos harness's full
  profile, an apiserver SIGKILLed under a workload's DELETE).

A node name counts as missing from the moment the controller sees a pod bound to it while the
node informer has no such node (on a pod event, when the node is deleted, or on the periodic
check every GC_CHECK_PERIOD). Once it has been missing for the quarantine (upstream's
quarantineTime, 40 s; --pod-gc-quarantine here so that tests can shorten it), and a GET of the
node answers NotFound (the informer may lag behind a node that was just created), every pod
bound to it is deleted with grace period 0 and a uid precondition, terminating pods included.
A node that reappears ends the quarantine. The quarantine is per node name, as upstream's: a
pod bound to a node that has already been missing for a while goes with the others.

Before deleting a pod that has not ended, the controller writes what upstream's
markFailedAndDeletePodWithCondition writes when PodDisruptionConditions is on (beta, on by default,
from 1.26; unconditional from 1.34):
phase Failed and the condition DisruptionTarget=True, reason DeletionByPodGC, message
"PodGC: node no longer exists". Each deletion is logged and recorded as a Warning Event on the
pod (upstream only logs).

gcTerminating is not gated (upstream's NodeOutOfServiceVolumeDetach is GA since 1.28,
on by default since 1.26).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable
from typing import Final

from controllermanager.config import PodGCOptions
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import POD_NODE_NAME_INDEX, index_pods_by_node_name
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.component.featuregate import POD_DISRUPTION_CONDITIONS
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, Invalid, NotFound
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.pod_strategy import TERMINAL_PHASES

logger = logging.getLogger(__name__)

NAME: Final = "podgc"
EVENT_SOURCE: Final = "pod-garbage-collector"

OUT_OF_SERVICE_TAINT_KEY: Final = "node.kubernetes.io/out-of-service"
EVICTED_REASON: Final = "Evicted"

DELETION_BY_POD_GC: Final = "DeletionByPodGC"
NODE_GONE_MESSAGE: Final = "PodGC: node no longer exists"


def gc_order(pod: types_pb2.Pod) -> tuple[bool, int, str]:
    """upstream's byEvictionAndCreationTimestamp: evicted pods first, then the oldest."""
    return (
        pod.status.reason != EVICTED_REASON,
        pod.metadata.creation_timestamp.ToNanoseconds(),
        pod.metadata.name,
    )


def terminated_to_delete(pods: Iterable[types_pb2.Pod], threshold: int) -> list[types_pb2.Pod]:
    """gcTerminated's choice: the finished pods above `threshold`, in gc_order (none if the
    threshold is 0)."""
    if threshold <= 0:
        return []
    finished = [p for p in pods if p.status.phase in TERMINAL_PHASES]
    excess = len(finished) - threshold
    if excess <= 0:
        return []
    return sorted(finished, key=gc_order)[:excess]


def unscheduled_terminating(pods: Iterable[types_pb2.Pod]) -> list[types_pb2.Pod]:
    """The pods being deleted that are bound to no node (upstream gcUnscheduledTerminating)."""
    return [p for p in pods if p.metadata.HasField("deletion_timestamp") and not p.spec.node_name]


def out_of_service(node: types_pb2.Node | None) -> bool:
    """A node gcTerminating collects from: not Ready and tainted out-of-service."""
    if node is None:
        return False
    ready = any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
    return not ready and any(t.key == OUT_OF_SERVICE_TAINT_KEY for t in node.spec.taints)


def failed(pod: types_pb2.Pod) -> types_pb2.Pod:
    """A copy of `pod` with phase Failed."""
    new = types_pb2.Pod()
    new.CopyFrom(pod)
    new.status.phase = "Failed"
    return new


def failed_by_pod_gc(pod: types_pb2.Pod, now: float) -> types_pb2.Pod:
    """A copy of `pod` with phase Failed and DisruptionTarget=True/DeletionByPodGC."""
    new = types_pb2.Pod()
    new.CopyFrom(pod)
    new.status.phase = "Failed"
    cond = next((c for c in new.status.conditions if c.type == DISRUPTION_TARGET), None)
    if cond is None:
        cond = new.status.conditions.add(type=DISRUPTION_TARGET)
    if cond.status != "True" or not cond.HasField("last_transition_time"):
        cond.last_transition_time.CopyFrom(timestamp(now))
    cond.status = "True"
    cond.reason = DELETION_BY_POD_GC
    cond.message = NODE_GONE_MESSAGE
    return new


class PodGCController:
    """Deletes pods bound to nodes that do not exist; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: PodGCOptions | None = None,
        disruption_conditions: bool = True,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self.options = options or PodGCOptions()
        self._disruption_condition = disruption_conditions
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self.queue = WorkQueue(clock, name=NAME)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        index_pods_by_node_name(self._pods)
        self._missing_since: dict[str, float] = {}
        """Node name -> when (monotonic) the controller first saw pods bound to it missing."""
        self._pods.add_event_handler(FuncHandler(self._on_pod, lambda _old, new: self._on_pod(new)))
        self._nodes.add_event_handler(FuncHandler(self._on_node_add, None, self._on_node_delete))

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _note_missing(self, node_name: str) -> None:
        """Starts the quarantine of a missing node name (once)."""
        if node_name in self._missing_since:
            return
        self._missing_since[node_name] = self._clock.monotonic()
        logger.debug("node %s: has pods but does not exist, quarantined", node_name)
        self.queue.add_after(node_name, self.options.quarantine)

    def _on_pod(self, pod: types_pb2.Pod) -> None:
        node_name = pod.spec.node_name
        if node_name and self._nodes.lister.get(node_name) is None:
            self._note_missing(node_name)

    def _on_node_add(self, node: types_pb2.Node) -> None:
        self._missing_since.pop(node.metadata.name, None)

    def _on_node_delete(self, node: types_pb2.Node) -> None:
        name = node.metadata.name
        if self._pods.lister.by_index(POD_NODE_NAME_INDEX, name):
            self._note_missing(name)

    def check_all(self) -> None:
        """Quarantines every node name pods are bound to that does not exist (gcOrphaned's
        scan; events normally got there first)."""
        for pod in self._pods.lister.list():
            self._on_pod(pod)

    # ------------------------------------------------------------ sync

    async def sync(self, node_name: str) -> None:
        """Deletes the pods of `node_name` if it has been missing for the quarantine; raises an
        ApiError to be retried later."""
        if self._nodes.lister.get(node_name) is not None:
            self._missing_since.pop(node_name, None)
            return
        pods = self._pods.lister.by_index(POD_NODE_NAME_INDEX, node_name)
        if not pods:
            self._missing_since.pop(node_name, None)
            return
        now = self._clock.monotonic()
        since = self._missing_since.setdefault(node_name, now)
        remaining = since + self.options.quarantine - now
        if remaining > 0:
            self.queue.add_after(node_name, remaining)
            return
        try:
            await self._client.get(types_pb2.Node, node_name)
        except NotFound:
            pass
        else:
            logger.debug("node %s: exists although not in the informer yet", node_name)
            self._missing_since.pop(node_name, None)
            return
        for pod in pods:
            await self._delete_orphan(pod, node_name)
        self._missing_since.pop(node_name, None)

    async def _delete_orphan(self, pod: types_pb2.Pod, node_name: str) -> None:
        meta = pod.metadata
        logger.info(
            "found orphaned pod %s/%s assigned to node %s, deleting",
            meta.namespace,
            meta.name,
            node_name,
        )
        try:
            if self._disruption_condition and pod.status.phase not in TERMINAL_PHASES:
                try:
                    await self._client.update_status(failed_by_pod_gc(pod, self._clock.now()))
                except Invalid as e:  # the deletion matters, the condition is a courtesy
                    logger.warning(
                        "pod %s/%s: could not mark it Failed: %s", meta.namespace, meta.name, e
                    )
            await self._client.delete(
                types_pb2.Pod, meta.name, meta.namespace, grace_period_seconds=0, uid=meta.uid
            )
        except NotFound:
            return  # gone already
        except Conflict:
            if self._pods.lister.get(meta.name, meta.namespace) is None:
                return
            raise  # a changed pod (status) or another pod of that name: retried later
        self._recorder.event(
            pod,
            EVENT_WARNING,
            DELETION_BY_POD_GC,
            "Delete",
            f"{NODE_GONE_MESSAGE}: deleted the pod bound to node {node_name}",
        )

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "collecting the pods of node", logger)

    async def _periodic(self) -> None:
        while True:
            await self._clock.sleep(self.options.gc_check_period)
            await self.gc()

    async def gc(self) -> None:
        """One pass of upstream's gc: gcTerminated, gcTerminating, gcOrphaned's scan and
        gcUnscheduledTerminating, in upstream's order."""
        pods = self._pods.lister.list()
        for pod in terminated_to_delete(pods, self.options.terminated_pod_gc_threshold):
            await self._delete(pod, "terminated", mark_failed=False)
        terminating = [
            p
            for p in pods
            if p.metadata.HasField("deletion_timestamp")
            and p.spec.node_name
            and out_of_service(self._nodes.lister.get(p.spec.node_name))
        ]
        for pod in sorted(terminating, key=gc_order):
            await self._delete(pod, "terminating on an out-of-service node", mark_failed=True)
        self.check_all()
        for pod in unscheduled_terminating(pods):
            await self._delete(pod, "unscheduled and terminating", mark_failed=True)

    async def _delete(self, pod: types_pb2.Pod, why: str, *, mark_failed: bool) -> None:
        """markFailedAndDeletePod without a condition: errors are logged, not retried (the
        next pass sees the pod again)."""
        meta = pod.metadata
        logger.info("garbage collecting pod %s/%s (%s)", meta.namespace, meta.name, why)
        try:
            if mark_failed and pod.status.phase not in TERMINAL_PHASES:
                await self._client.update_status(failed(pod))
            await self._client.delete(
                types_pb2.Pod, meta.name, meta.namespace, grace_period_seconds=0, uid=meta.uid
            )
        except NotFound:
            return
        except ApiError as e:
            logger.warning("pod %s/%s: could not delete it: %s", meta.namespace, meta.name, e)
            return

    async def run(self) -> None:
        """Collects orphaned pods until cancelled; the informers must be running."""
        opts = self.options
        await run_controller(
            f"the pod garbage collector (quarantine {opts.quarantine:g}s, terminated pod "
            f"threshold {opts.terminated_pod_gc_threshold})",
            logger,
            synced=(self._pods, self._nodes),
            queues=(self.queue,),
            tasks=[
                ("podgc events", self._recorder.run),
                ("podgc periodic check", self._periodic),
                *workers("podgc", 1, self._worker),
            ],
        )


def new_controller(ctx: ControllerContext, options: PodGCOptions | None = None) -> PodGCController:
    """The init function registered as "podgc" (app.py binds the flags' options)."""
    return PodGCController(
        ctx.client,
        ctx.informers,
        ctx.clock,
        options=options,
        disruption_conditions=ctx.gates.enabled(POD_DISRUPTION_CONDITIONS),
    )
