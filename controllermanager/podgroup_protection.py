"""The PodGroup protection controller (upstream pkg/controller/podgroupprotection, 1.36):
`podgroup-protection-controller`, run with GenericWorkload on from 1.36.

It keeps the finalizer `scheduling.k8s.io/podgroup-protection` on a PodGroup while a pod that
has not finished (phase neither Succeeded nor Failed) names it in
`spec.schedulingGroup.podGroupName` (same namespace), so that deleting a PodGroup whose gang
still runs leaves it Terminating until its last member ends:
- a PodGroup not being deleted, without the finalizer, that such a pod references gets it
  (1.36's processPodGroup: NeedToAddFinalizer and isBeingUsed, then addFinalizer);
- a PodGroup being deleted that holds the finalizer loses it once no such pod references it
  (IsDeletionCandidate and not isBeingUsed, then removeFinalizer); the garbage collector or
  the user's delete then completes.
Both are plain updates of the PodGroup (a Conflict is retried from the informer's newer
copy). The pods are found through an index of the pod informer by `namespace/podGroupName`
(upstream's PodSchedulingGroupIndex). A pod event queues its PodGroup only when it can change
the answer (upstream's enqueuePodGroupForPod): the pod was deleted or finished, or it is not
bound yet (a new member); a bound running pod's updates are ignored.

Not modelled: upstream's later move (the 1.37 cycle, kubernetes/kubernetes
pkg/controller/podgroupprotection with the v1beta1 PodGroup) of the finalizer's addition to
the apiserver's PodGroupProtection admission plugin, which stamps it on every PodGroup at
creation while this controller only removes it: kemu's controller adds it at every version
from 1.36, so a PodGroup no pod references has no finalizer here; the CompositePodGroup
protection of the same cycle.
"""

from __future__ import annotations

import logging
from typing import Final

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.protection_util import is_deletion_candidate, need_to_add_finalizer
from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES

logger = logging.getLogger(__name__)

NAME: Final = "podgroup-protection-controller"
"""upstream's names.PodGroupProtectionController."""
POD_GROUP_PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
"""pkg/apis/scheduling PodGroupProtectionFinalizer."""
POD_SCHEDULING_GROUP_INDEX: Final = "spec.schedulingGroup.podGroupName"
"""The pod informer's index of `namespace/podGroupName` (upstream's PodSchedulingGroupIndex)."""


def pod_group_key_of(pod: types_pb2.Pod) -> str | None:
    """`namespace/name` of the PodGroup the pod names in spec.schedulingGroup, or None."""
    if not pod.spec.HasField("scheduling_group"):
        return None
    group = pod.spec.scheduling_group
    if not group.HasField("pod_group_name"):
        return None
    return f"{pod.metadata.namespace}/{group.pod_group_name}"


def _index_keys(pod: types_pb2.Pod) -> list[str]:
    key = pod_group_key_of(pod)
    return [] if key is None else [key]


def index_pods_by_pod_group(pods: Informer[types_pb2.Pod]) -> None:
    """Adds POD_SCHEDULING_GROUP_INDEX once, however many controllers share the informer."""
    try:
        pods.add_indexer(POD_SCHEDULING_GROUP_INDEX, _index_keys)
    except ValueError:
        pass  # another controller added it


def is_pod_terminated(pod: types_pb2.Pod) -> bool:
    """isPodTerminated: Succeeded or Failed."""
    return pod.status.phase in TERMINAL_PHASES


def event_matters(pod: types_pb2.Pod, *, deleted: bool) -> bool:
    """enqueuePodGroupForPod's filter: a deleted or finished pod, or one not bound yet."""
    return deleted or is_pod_terminated(pod) or not pod.spec.node_name


class PodGroupProtectionController:
    """`podgroup-protection-controller`; see the module docstring."""

    def __init__(self, client: ApiClient, informers: InformerFactory, clock: Clock) -> None:
        self._client = client
        self.queue = WorkQueue(clock, name="podgroupprotection")
        self._groups: Informer[types_pb2.PodGroup] = informers.informer(types_pb2.PodGroup)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_pods_by_pod_group(self._pods)
        self._groups.add_event_handler(
            FuncHandler(self._on_group, lambda _old, new: self._on_group(new))
        )
        self._pods.add_event_handler(
            FuncHandler(
                lambda pod: self._on_pod(pod, deleted=False),
                self._on_pod_update,
                lambda pod: self._on_pod(pod, deleted=True),
            )
        )

    @property
    def name(self) -> str:
        return NAME

    def _on_group(self, pg: types_pb2.PodGroup) -> None:
        """podGroupAddedUpdated."""
        if need_to_add_finalizer(pg, POD_GROUP_PROTECTION_FINALIZER) or is_deletion_candidate(
            pg, POD_GROUP_PROTECTION_FINALIZER
        ):
            self.queue.add(object_key(pg))

    def _on_pod(self, pod: types_pb2.Pod, *, deleted: bool) -> None:
        key = pod_group_key_of(pod)
        if key is not None and event_matters(pod, deleted=deleted):
            self.queue.add(key)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        self._on_pod(new, deleted=False)
        if old.metadata.uid != new.metadata.uid:  # a pod replaced under the same name
            self._on_pod(old, deleted=True)

    def is_being_used(self, pg: types_pb2.PodGroup) -> bool:
        """isBeingUsed: a pod of the informer that has not finished names the group."""
        pods = self._pods.lister.by_index(POD_SCHEDULING_GROUP_INDEX, object_key(pg))
        return any(not is_pod_terminated(p) for p in pods)

    async def sync(self, key: str) -> None:
        """processPodGroup; an ApiError is retried."""
        namespace, _, name = key.partition("/")
        pg = self._groups.lister.get(name, namespace)
        if pg is None:
            return
        if is_deletion_candidate(pg, POD_GROUP_PROTECTION_FINALIZER):
            if not self.is_being_used(pg):
                await self._set_finalizer(pg, present=False)
            else:
                logger.info("keeping the finalizer of PodGroup %s: pods still use it", key)
            return
        if need_to_add_finalizer(pg, POD_GROUP_PROTECTION_FINALIZER) and self.is_being_used(pg):
            await self._set_finalizer(pg, present=True)

    async def _set_finalizer(self, pg: types_pb2.PodGroup, *, present: bool) -> None:
        """addFinalizer / removeFinalizer: an update of a copy."""
        new = types_pb2.PodGroup()
        new.CopyFrom(pg)
        kept = [f for f in new.metadata.finalizers if f != POD_GROUP_PROTECTION_FINALIZER]
        if present:
            kept.append(POD_GROUP_PROTECTION_FINALIZER)
        del new.metadata.finalizers[:]
        new.metadata.finalizers.extend(kept)
        try:
            await self._client.update(new)
        except NotFound:
            return
        logger.info(
            "%s protection finalizer %s PodGroup %s",
            "added" if present else "removed",
            "to" if present else "from",
            object_key(pg),
        )

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "protecting PodGroup", logger)

    async def run(self) -> None:
        await run_controller(
            "the PodGroup protection controller",
            logger,
            synced=(self._groups, self._pods),
            queues=(self.queue,),
            tasks=workers(NAME, 1, self._worker),
        )


def new_controller(ctx: ControllerContext) -> PodGroupProtectionController:
    """The init function registered as "podgroup-protection-controller"."""
    return PodGroupProtectionController(ctx.client, ctx.informers, ctx.clock)
