"""The PodGroup protection controller (upstream pkg/controller/scheduling/podgroupprotection):
`podgroup-protection-controller`, run with GenericWorkload on from 1.36.

It keeps the finalizer `scheduling.k8s.io/podgroup-protection` on a PodGroup while a pod that
has not finished (phase neither Succeeded nor Failed) names it in
`spec.schedulingGroup.podGroupName` (same namespace), so that deleting a PodGroup whose gang
still runs leaves it Terminating until its last member ends. Who puts the finalizer there
changed between the versions (VersionRules podgroup_protection_admission):

- 1.36: this controller. A PodGroup not being deleted, without the finalizer, that such a pod
  references gets it (processPodGroup: NeedToAddFinalizer and isBeingUsed, then addFinalizer),
  so a PodGroup no pod references has none. A pod event queues its PodGroup only when it can
  change the answer (enqueuePodGroupForPod): the pod was deleted or finished, or it is not
  bound yet (a new member); a bound running pod's updates are ignored.
- 1.37: the apiserver's PodGroupProtection admission plugin stamps it on every new PodGroup
  (apiserver/admission/podgroup_protection.py); this controller only removes it. A PodGroup
  is queued only as a deletion candidate (handlePodGroupUpdate), a pod only once it has
  finished, was deleted, or was replaced under the same name (handlePodChange).

At both, a PodGroup being deleted that holds the finalizer loses it once no such pod
references it (IsDeletionCandidate and not isBeingUsed / hasActivePods, then removeFinalizer);
the garbage collector or the user's delete then completes. Both are plain updates of the
PodGroup (a Conflict is retried from the informer's newer copy). The pods are found through an
index of the pod informer by `namespace/podGroupName` (upstream's PodSchedulingGroupIndex,
activePodSchedulingGroup at 1.37).

CompositePodGroups (1.37 with CompositePodGroup on, upstream's controller given a
CompositePodGroup informer): the PodGroupProtection admission plugin stamps
`scheduling.k8s.io/compositepodgroup-protection` on every new CompositePodGroup; this controller
removes it once the CompositePodGroup is being deleted and no PodGroup or CompositePodGroup
names it in `spec.parentCompositePodGroupName` (processCompositePodGroup, hasChildGroups), found
through indexes of the two group informers by `namespace/parent`. A group's event queues its
parent (the field is immutable: the old object's, or the new one's), and its own key when it is
a deletion candidate, so that deleting the leaves releases the tree bottom-up.
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
from kemu.component.featuregate import COMPOSITE_POD_GROUP
from kemu.component.version_rules import VersionRules
from kemu.machinery.errors import NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.pod_strategy import TERMINAL_PHASES
from kemu.machinery.podgroups import (
    COMPOSITE_POD_GROUP_PROTECTION_FINALIZER,
    POD_GROUP_PROTECTION_FINALIZER,
)

logger = logging.getLogger(__name__)

NAME: Final = "podgroup-protection-controller"
"""upstream's names.PodGroupProtectionController."""
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


CHILD_GROUP_PARENT_INDEX: Final = "spec.parentCompositePodGroupName"
"""The PodGroup and CompositePodGroup informers' index of `namespace/parent` (upstream's
childPodGroupParentCompositeGroup and childCompositePodGroupParentCompositeGroup)."""
_CPG_KEY: Final = "CompositePodGroup:"
"""The queue's keys of CompositePodGroups (upstream's EntityKey of CompositePodGroupKeyType);
a PodGroup's key is its `namespace/name`."""


def parent_key_of(group: types_pb2.PodGroup | types_pb2.CompositePodGroup) -> str | None:
    """`namespace/name` of the group's parent CompositePodGroup, or None."""
    if not group.spec.HasField("parent_composite_pod_group_name"):
        return None
    return f"{group.metadata.namespace}/{group.spec.parent_composite_pod_group_name}"


def _parent_index_keys(group: types_pb2.PodGroup | types_pb2.CompositePodGroup) -> list[str]:
    key = parent_key_of(group)
    return [] if key is None else [key]


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


def event_matters(pod: types_pb2.Pod, *, deleted: bool, adds_finalizer: bool) -> bool:
    """Whether a pod event can change its PodGroup's answer: a deleted or finished pod, and,
    where this controller adds the finalizer (1.36's enqueuePodGroupForPod), one not bound yet;
    1.37's handlePodChange has no new member to look at."""
    return deleted or is_pod_terminated(pod) or (adds_finalizer and not pod.spec.node_name)


class PodGroupProtectionController:
    """`podgroup-protection-controller`; see the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        rules: VersionRules,
        composite_pod_groups: bool = False,
    ) -> None:
        """`rules`: the emulated version's (whether the finalizer is this controller's to
        add). `composite_pod_groups`: CompositePodGroup on (the controller then watches
        them)."""
        self._adds_finalizer = not rules.podgroup_protection_admission
        self._client = client
        self.queue = WorkQueue(clock, name="podgroupprotection")
        self._groups: Informer[types_pb2.PodGroup] = informers.informer(types_pb2.PodGroup)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._composites: Informer[types_pb2.CompositePodGroup] | None = None
        index_pods_by_pod_group(self._pods)
        self._groups.add_event_handler(
            FuncHandler(
                self._on_group,
                lambda old, new: self._on_group(new, old),
                self._on_group_deleted,
            )
        )
        if composite_pod_groups:
            self._composites = informers.informer(types_pb2.CompositePodGroup)
            for inf in (self._groups, self._composites):
                try:
                    inf.add_indexer(CHILD_GROUP_PARENT_INDEX, _parent_index_keys)
                except ValueError:
                    pass  # another controller added it
            self._composites.add_event_handler(
                FuncHandler(
                    self._on_composite,
                    lambda old, new: self._on_composite(new, old),
                    lambda cpg: self._queue_parent(cpg),
                )
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

    def _on_group(self, pg: types_pb2.PodGroup, old: types_pb2.PodGroup | None = None) -> None:
        """podGroupAddedUpdated (1.36), handlePodGroupUpdate (1.37, its parent queued too)."""
        if is_deletion_candidate(pg, POD_GROUP_PROTECTION_FINALIZER) or (
            self._adds_finalizer and need_to_add_finalizer(pg, POD_GROUP_PROTECTION_FINALIZER)
        ):
            self.queue.add(object_key(pg))
        self._queue_parent(old if old is not None else pg)

    def _on_group_deleted(self, pg: types_pb2.PodGroup) -> None:
        self._queue_parent(pg)

    def _on_composite(
        self, cpg: types_pb2.CompositePodGroup, old: types_pb2.CompositePodGroup | None = None
    ) -> None:
        """handleCompositePodGroupUpdate."""
        if is_deletion_candidate(cpg, COMPOSITE_POD_GROUP_PROTECTION_FINALIZER):
            self.queue.add(_CPG_KEY + object_key(cpg))
        self._queue_parent(old if old is not None else cpg)

    def _queue_parent(self, group: types_pb2.PodGroup | types_pb2.CompositePodGroup) -> None:
        """A child's event may release its parent (parentCompositePodGroupName is immutable)."""
        if self._composites is None:
            return
        key = parent_key_of(group)
        if key is not None:
            self.queue.add(_CPG_KEY + key)

    def _on_pod(self, pod: types_pb2.Pod, *, deleted: bool) -> None:
        key = pod_group_key_of(pod)
        if key is not None and event_matters(
            pod, deleted=deleted, adds_finalizer=self._adds_finalizer
        ):
            self.queue.add(key)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        self._on_pod(new, deleted=False)
        if old.metadata.uid != new.metadata.uid:  # a pod replaced under the same name
            self._on_pod(old, deleted=True)

    def is_being_used(self, pg: types_pb2.PodGroup) -> bool:
        """isBeingUsed: a pod of the informer that has not finished names the group."""
        pods = self._pods.lister.by_index(POD_SCHEDULING_GROUP_INDEX, object_key(pg))
        return any(not is_pod_terminated(p) for p in pods)

    def has_child_groups(self, cpg: types_pb2.CompositePodGroup) -> bool:
        """hasChildGroups: a PodGroup or a CompositePodGroup names it as its parent."""
        key = object_key(cpg)
        if self._groups.lister.by_index(CHILD_GROUP_PARENT_INDEX, key):
            return True
        return self._composites is not None and bool(
            self._composites.lister.by_index(CHILD_GROUP_PARENT_INDEX, key)
        )

    async def sync(self, key: str) -> None:
        """processPodGroup, or processCompositePodGroup for a CompositePodGroup's key; an
        ApiError is retried."""
        if key.startswith(_CPG_KEY):
            await self._sync_composite(key.removeprefix(_CPG_KEY))
            return
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
        if (
            self._adds_finalizer
            and need_to_add_finalizer(pg, POD_GROUP_PROTECTION_FINALIZER)
            and self.is_being_used(pg)
        ):
            await self._set_finalizer(pg, present=True)

    async def _sync_composite(self, key: str) -> None:
        """processCompositePodGroup: the finalizer removed from a CompositePodGroup being
        deleted that has no child group left."""
        if self._composites is None:
            return
        namespace, _, name = key.partition("/")
        cpg = self._composites.lister.get(name, namespace)
        if cpg is None or not is_deletion_candidate(cpg, COMPOSITE_POD_GROUP_PROTECTION_FINALIZER):
            return
        if self.has_child_groups(cpg):
            logger.info("keeping the finalizer of CompositePodGroup %s: child groups remain", key)
            return
        new = types_pb2.CompositePodGroup()
        new.CopyFrom(cpg)
        kept = [f for f in new.metadata.finalizers if f != COMPOSITE_POD_GROUP_PROTECTION_FINALIZER]
        del new.metadata.finalizers[:]
        new.metadata.finalizers.extend(kept)
        try:
            await self._client.update(new)
        except NotFound:
            return
        logger.info("removed protection finalizer from CompositePodGroup %s", key)

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
            synced=(self._groups, self._pods)
            + ((self._composites,) if self._composites is not None else ()),
            queues=(self.queue,),
            tasks=workers(NAME, 1, self._worker),
        )


def new_controller(ctx: ControllerContext) -> PodGroupProtectionController:
    """The init function registered as "podgroup-protection-controller"."""
    return PodGroupProtectionController(
        ctx.client,
        ctx.informers,
        ctx.clock,
        rules=VersionRules.at(ctx.gates.version),
        composite_pod_groups=ctx.gates.enabled(COMPOSITE_POD_GROUP),
    )
