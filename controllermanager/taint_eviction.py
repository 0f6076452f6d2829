"""The taint eviction controller (upstream pkg/controller/tainteviction, the NoExecute taint
manager; its own controller, `taint-eviction-controller`, since 1.29): deletes the pods bound to
a node with NoExecute taints they do not tolerate, or tolerate only for a while.

For each pod bound to a node, against the node's NoExecute taints (as upstream's
processPodOnNode):
- no NoExecute taint: nothing to do; a scheduled eviction is cancelled (Event
  TaintManagerEviction "Cancelling deletion of Pod ns/name");
- a taint no toleration of the pod tolerates: the pod is evicted now;
- every taint tolerated (each by its first matching toleration): the shortest tolerationSeconds
  of those tolerations decides. None set: tolerated forever (a scheduled eviction is
  cancelled); zero or less: evicted now; otherwise the eviction is scheduled that long after
  the controller first saw the pod under the taints. A scheduled eviction keeps its start when
  the taints change (not-ready becoming unreachable does not restart the clock).

Evicting writes the condition DisruptionTarget=True, reason DeletionByTaintManager, message
"Taint manager: deleting due to NoExecute taint" (unless already there; only with
PodDisruptionConditions, on by default from 1.26, unconditional from 1.34), records the Event
TaintManagerEviction "Marking for deletion Pod ns/name", and deletes the pod with its own grace
period, as upstream. A pod on a node that is down stays Terminating until its node comes back,
is deleted, or is tainted out-of-service (controllermanager.podgc).

With DefaultTolerationSeconds (the apiserver's admission) every pod tolerates
node.kubernetes.io/not-ready and node.kubernetes.io/unreachable for 300 s, so pods of a node
that stopped reporting are evicted 5 minutes after the node lifecycle controller tainted it.

Not modelled: the per-node work of upstream's NoExecuteTaintManager when a node is deleted is
the same per-pod check here (its taints are gone: evictions are cancelled).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter

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
from kemu.machinery.errors import Conflict, NotFound
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL
from kemu.scheduling.plugins.helpers import TAINT_NO_EXECUTE, tolerates_taint

logger = logging.getLogger(__name__)

NAME: Final = "taint-eviction-controller"
EVENT_SOURCE: Final = "taint-eviction-controller"
EVENT_REASON: Final = "TaintManagerEviction"
DELETION_BY_TAINT_MANAGER: Final = "DeletionByTaintManager"
DELETION_MESSAGE: Final = "Taint manager: deleting due to NoExecute taint"
WORKERS: Final = 8


def no_execute_taints(node: types_pb2.Node | None) -> list[types_pb2.Taint]:
    if node is None:
        return []
    return [t for t in node.spec.taints if t.effect == TAINT_NO_EXECUTE]


def matching_tolerations(
    taints: Sequence[types_pb2.Taint], tolerations: Iterable[types_pb2.Toleration]
) -> list[types_pb2.Toleration] | None:
    """upstream's GetMatchingTolerations: for each taint the first toleration that tolerates
    it, or None if some taint is not tolerated."""
    tols = list(tolerations)
    used: list[types_pb2.Toleration] = []
    for taint in taints:
        match = next((t for t in tols if tolerates_taint(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def min_toleration_seconds(tolerations: Sequence[types_pb2.Toleration]) -> float | None:
    """upstream's getMinTolerationTime: the shortest tolerationSeconds (0 for none used or a
    value <= 0), or None when none of them sets it (tolerated forever)."""
    if not tolerations:
        return 0.0
    seconds = [t.toleration_seconds for t in tolerations if t.HasField("toleration_seconds")]
    if not seconds:
        return None
    return float(max(0, min(seconds)))


def evicted_by_taint_manager(pod: types_pb2.Pod, now: float) -> types_pb2.Pod | None:
    """A copy of `pod` with DisruptionTarget=True/DeletionByTaintManager, or None if it has it."""
    cond = next((c for c in pod.status.conditions if c.type == DISRUPTION_TARGET), None)
    if (
        cond is not None
        and cond.status == "True"
        and (cond.reason, cond.message) == (DELETION_BY_TAINT_MANAGER, DELETION_MESSAGE)
    ):
        return None
    new = types_pb2.Pod()
    new.CopyFrom(pod)
    cond = next((c for c in new.status.conditions if c.type == DISRUPTION_TARGET), None)
    if cond is None:
        cond = new.status.conditions.add(type=DISRUPTION_TARGET)
    if cond.status != "True":
        cond.last_transition_time.CopyFrom(timestamp(now))
    cond.status = "True"
    cond.reason = DELETION_BY_TAINT_MANAGER
    cond.message = DELETION_MESSAGE
    return new


@dataclass
class ScheduledEviction:
    """A pod to evict at `fire_at` (monotonic), seen under the taints since `created_at`."""

    uid: str
    created_at: float
    fire_at: float


class TaintEvictionController:
    """Evicts pods from NoExecute-tainted nodes; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        recorder: EventRecorder | None = None,
        registry: CollectorRegistry | None = None,
        disruption_conditions: bool = True,
    ) -> None:
        self._client = client
        self._clock = clock
        self._disruption_conditions = disruption_conditions
        self._recorder = recorder or EventRecorder(
            client, EVENT_SOURCE, host=socket.gethostname(), clock=clock
        )
        self.queue = WorkQueue(clock, name=NAME)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._nodes: Informer[types_pb2.Node] = informers.informer(types_pb2.Node)
        index_pods_by_node_name(self._pods)
        self.scheduled: dict[str, ScheduledEviction] = {}
        """namespace/name -> its scheduled eviction; only the worker holding the key touches it."""
        self._deletions = (
            None
            if registry is None
            else Counter(
                "taint_eviction_controller_pod_deletions_total",
                "Total number of Pods deleted by the taint eviction controller since its start.",
                registry=registry,
            )
        )
        self._pods.add_event_handler(
            FuncHandler(
                self._on_pod, lambda _old, new: self._on_pod(new), lambda p: self._on_pod(p)
            )
        )
        self._nodes.add_event_handler(
            FuncHandler(self._on_node, self._on_node_update, self._on_node)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _on_pod(self, pod: types_pb2.Pod) -> None:
        if pod.spec.node_name or object_key(pod) in self.scheduled:
            self.queue.add(object_key(pod))

    def _on_node(self, node: types_pb2.Node) -> None:
        for pod in self._pods.lister.by_index(POD_NODE_NAME_INDEX, node.metadata.name):
            self.queue.add(object_key(pod))

    def _on_node_update(self, old: types_pb2.Node, new: types_pb2.Node) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self._on_node(new)

    # ------------------------------------------------------------ sync

    def _cancel(self, key: str, pod: types_pb2.Pod | None) -> None:
        if self.scheduled.pop(key, None) is None:
            return
        logger.info("pod %s: eviction cancelled", key)
        if pod is not None:
            self._recorder.event(
                pod, EVENT_NORMAL, EVENT_REASON, "", f"Cancelling deletion of Pod {key}"
            )

    async def sync(self, key: str) -> None:
        """Decides the pod's eviction (processPodOnNode); raises an ApiError to retry."""
        namespace, _, name = key.partition("/")
        pod = self._pods.lister.get(name, namespace)
        if pod is None or not pod.spec.node_name or pod.metadata.HasField("deletion_timestamp"):
            self.scheduled.pop(key, None)  # gone or going: nothing to cancel on it
            return
        taints = no_execute_taints(self._nodes.lister.get(pod.spec.node_name))
        if not taints:
            self._cancel(key, pod)
            return
        now = self._clock.monotonic()
        used = matching_tolerations(taints, pod.spec.tolerations)
        if used is None:
            logger.info("pod %s: not every NoExecute taint of its node is tolerated", key)
            await self._evict(key, pod)
            return
        seconds = min_toleration_seconds(used)
        if seconds is None:
            self._cancel(key, pod)
            return
        scheduled = self.scheduled.get(key)
        if scheduled is None or scheduled.uid != pod.metadata.uid:
            scheduled = ScheduledEviction(pod.metadata.uid, now, now + seconds)
            self.scheduled[key] = scheduled
            logger.info("pod %s: eviction scheduled in %gs", key, seconds)
        if now >= scheduled.fire_at:
            await self._evict(key, pod)
        else:
            self.queue.add_after(key, scheduled.fire_at - now)

    async def _evict(self, key: str, pod: types_pb2.Pod) -> None:
        """upstream's addConditionAndDeletePod."""
        self._recorder.event(pod, EVENT_NORMAL, EVENT_REASON, "", f"Marking for deletion Pod {key}")
        meta = pod.metadata
        try:
            marked = (
                evicted_by_taint_manager(pod, self._clock.now())
                if self._disruption_conditions
                else None
            )
            if marked is not None:
                await self._client.update_status(marked)
            await self._client.delete(types_pb2.Pod, meta.name, meta.namespace, uid=meta.uid)
        except NotFound:
            pass  # gone already
        except Conflict:
            if self._pods.lister.get(meta.name, meta.namespace) is None:
                self.scheduled.pop(key, None)
                return
            raise  # the pod changed under us: decided again on a fresh copy
        self.scheduled.pop(key, None)
        if self._deletions is not None:
            self._deletions.inc()
        logger.info("pod %s: evicted from node %s (NoExecute taint)", key, pod.spec.node_name)

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "evicting pod", logger)

    async def run(self) -> None:
        """Evicts pods until cancelled; the informers must be running."""

        def tainted_nodes() -> None:
            for node in self._nodes.lister.list():
                if no_execute_taints(node):
                    self._on_node(node)

        await run_controller(
            "the taint eviction controller",
            logger,
            synced=(self._pods, self._nodes),
            queues=(self.queue,),
            tasks=[
                ("taint eviction events", self._recorder.run),
                *workers("taint eviction", WORKERS, self._worker),
            ],
            on_synced=tainted_nodes,
        )


def new_controller(ctx: ControllerContext) -> TaintEvictionController:
    """The init function registered as "taint-eviction-controller"."""
    return TaintEvictionController(
        ctx.client,
        ctx.informers,
        ctx.clock,
        registry=ctx.registry,
        disruption_conditions=ctx.gates.enabled(POD_DISRUPTION_CONDITIONS),
    )
