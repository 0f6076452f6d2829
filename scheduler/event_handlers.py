"""Informer events → the scheduler's cache and queue (upstream eventhandlers.go).

Unassigned pods of one of our profiles go to the queue; assigned pods go to the cache and,
as cluster events, may move unschedulable pods back to the active queue. A pod that gets a
node leaves the queue and enters the cache. Nodes go to the cache, and their changes become
cluster events with the action types upstream computes (allocatable, labels, taints, ...).

A pod this scheduler has assumed (in its binding cycle, still unbound in the API) is in
neither: its updates are ignored, except a newly set deletionTimestamp, which like its deletion
frees its room at once (upstream handleAssumedPodDeletion, kubernetes#134157): a pod waiting at
Permit is rejected, any other is forgotten by the cache, and an AssignedPodDelete retries the
pods that may now fit; its PreBind and Bind go on and fail. So the binding cycle's own
nominatedNodeName PATCH (KEP-5278) moves no other pod.

KEP-5836 (`resize_preemption`, KEP-5836's design, keps/sig-scheduling/5836-*): an assigned pod of one of our profiles
whose resize is PodResizePending/Deferred is also in the queue, for a cycle on its own node:
added when the informer adds it (scheduler start-up) or an update makes it Deferred, kept up
to date by its updates (cache first, then queue, as the KEP asks), removed when the condition
goes or the pod is deleted. It stays in the cache as an assigned pod throughout. No
PodResizePreemptionDisabled pod condition is read: the merged scheduler (kubernetes#140000)
reads the node's policy itself (DeferredPodScheduling's Filter and node hints), and KEP-5836's
README lists that condition among the rejected alternatives; no kubelet writes it.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Final, Protocol

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.informer import FuncHandler, Informer
from kemu.machinery.keys import object_key
from kemu.scheduling.deferred import is_deferred_resize_pod
from kemu.scheduling.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    ActionType,
    ClusterEvent,
    EventResource,
)
from kemu.scheduling.pod_group_state import PodGroupStates
from kemu.scheduling.types import pod_priority
from scheduler.cache.cache import CacheError
from scheduler.cache.interface import SchedulerCache
from scheduler.queue.interface import SchedulingQueue
from scheduler.queue.pod_events import (
    UNSCHEDULED_POD_ADD,
    has_nominated_node_name_changed,
    le_priority_pre_check,
    resize_actions,
)

logger = logging.getLogger(__name__)

# The storage kinds whose changes are cluster events (the volume plugins register for them).
_STORAGE_RESOURCES: Final[Mapping[type[Message], EventResource]] = {
    types_pb2.PersistentVolumeClaim: EventResource.PVC,
    types_pb2.PersistentVolume: EventResource.PV,
    types_pb2.StorageClass: EventResource.STORAGE_CLASS,
    types_pb2.CSINode: EventResource.CSI_NODE,
}
# The DRA kinds whose changes are cluster events (DynamicResources registers for them).
_DRA_RESOURCES: Final[Mapping[type[Message], EventResource]] = {
    types_pb2.ResourceClaim: EventResource.RESOURCE_CLAIM,
    types_pb2.ResourceSlice: EventResource.RESOURCE_SLICE,
    types_pb2.DeviceClass: EventResource.DEVICE_CLASS,
    types_pb2.DeviceTaintRule: EventResource.DEVICE_TAINT_RULE,
}
# The pod-group kinds whose adds and updates are cluster events (GangScheduling's).
_POD_GROUP_RESOURCES: Final[Mapping[type[Message], EventResource]] = {
    types_pb2.Workload: EventResource.WORKLOAD,
    types_pb2.PodGroup: EventResource.POD_GROUP,
    types_pb2.CompositePodGroup: EventResource.COMPOSITE_POD_GROUP,
}


class WaitingPods(Protocol):
    """What the handlers need of each profile's framework: its pods waiting at Permit."""

    def reject_waiting_pod(self, uid: str) -> bool: ...


def node_update_action(old: types_pb2.Node, new: types_pb2.Node) -> ActionType:
    """What changed on a node that scheduling cares about (upstream nodeSchedulingPropertiesChange)."""
    action = ActionType(0)
    if dict(old.status.allocatable) != dict(new.status.allocatable):
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if dict(old.metadata.labels) != dict(new.metadata.labels):
        action |= ActionType.UPDATE_NODE_LABEL
    if list(old.spec.taints) != list(new.spec.taints) or (
        old.spec.unschedulable != new.spec.unschedulable
    ):
        action |= ActionType.UPDATE_NODE_TAINT
    if _conditions(old) != _conditions(new):
        action |= ActionType.UPDATE_NODE_CONDITION
    if dict(old.metadata.annotations) != dict(new.metadata.annotations):
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.spec.pod_preemption_policy != new.spec.pod_preemption_policy:
        action |= ActionType.UPDATE_NODE_PREEMPTION_POLICY
    return action


def _conditions(node: types_pb2.Node) -> dict[str, str]:
    return {c.type: c.status for c in node.status.conditions}


def pod_update_action(old: types_pb2.Pod, new: types_pb2.Pod) -> ActionType:
    """What changed on an assigned pod (upstream podSchedulingPropertiesChange)."""
    action = ActionType(0)
    if dict(old.metadata.labels) != dict(new.metadata.labels):
        action |= ActionType.UPDATE_POD_LABEL
    action |= resize_actions(new, old)
    if list(old.spec.tolerations) != list(new.spec.tolerations):
        action |= ActionType.UPDATE_POD_TOLERATION
    if old.spec.scheduling_gates and not new.spec.scheduling_gates:
        action |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    return action or ActionType.UPDATE_POD_OTHER


def _cache_call(what: str, fn: Callable[..., object], *args: object) -> None:
    """A cache inconsistency is logged, as upstream, and does not stop the handler."""
    try:
        fn(*args)
    except CacheError as e:
        logger.error("scheduler cache %s failed: %s", what, e)


class EventHandlers:
    """The handlers the scheduler's pod and node informers call."""

    def __init__(
        self,
        *,
        cache: SchedulerCache,
        queue: SchedulingQueue,
        scheduler_names: Iterable[str],
        frameworks: Mapping[str, WaitingPods],
        resize_preemption: bool = False,
        pod_groups: PodGroupStates | None = None,
    ) -> None:
        self.cache = cache
        self.queue = queue
        self.scheduler_names = frozenset(scheduler_names)
        # Each profile's framework by scheduler name (its pods waiting at Permit).
        self.frameworks = dict(frameworks)
        # InPlacePodVerticalScalingSchedulerPreemption (kemu.scheduling.deferred).
        self.resize_preemption = resize_preemption
        # Pod groups' members (GenericWorkload; kemu.scheduling.pod_group_state), fed before
        # the queue so that GangScheduling's PreEnqueue counts the pod itself.
        self.pod_groups = pod_groups

    def register(self, pods: Informer[types_pb2.Pod], nodes: Informer[types_pb2.Node]) -> None:
        """Subscribes these handlers to the scheduler's pod and node informers."""
        pods.add_event_handler(
            FuncHandler(
                on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_delete
            )
        )
        nodes.add_event_handler(
            FuncHandler(
                on_add=self.on_node_add,
                on_update=self.on_node_update,
                on_delete=self.on_node_delete,
            )
        )

    def register_storage(self, *informers: Informer[Message]) -> None:
        """Subscribes the queue to the storage kinds the volume plugins read (claims, PVs,
        StorageClasses, CSINodes): each add, update and delete is a cluster event of its kind
        (upstream addAllEventHandlers' buildEvtResHandler)."""
        for informer in informers:
            resource = _STORAGE_RESOURCES[informer.kind]
            informer.add_event_handler(
                FuncHandler(
                    on_add=functools.partial(self._on_object_add, resource),
                    on_update=functools.partial(self._on_object_update, resource),
                    on_delete=functools.partial(self._on_object_delete, resource),
                )
            )

    def register_dra(self, *informers: Informer[Message]) -> None:
        """Subscribes the queue to the DRA kinds DynamicResources reads (claims, slices,
        classes, DeviceTaintRules): each add, update and delete is a cluster event of its kind
        (upstream addAllEventHandlers; the claims through the assume cache's handler)."""
        for informer in informers:
            resource = _DRA_RESOURCES[informer.kind]
            informer.add_event_handler(
                FuncHandler(
                    on_add=functools.partial(self._on_object_add, resource),
                    on_update=functools.partial(self._on_object_update, resource),
                    on_delete=functools.partial(self._on_object_delete, resource),
                )
            )

    def register_pod_groups(self, *informers: Informer[Message]) -> None:
        """Subscribes the queue to the Workload (1.35), PodGroup (1.36+) and
        CompositePodGroup (1.37, KEP-6012) informers: adds and updates are cluster events
        (upstream addAllEventHandlers for the gang plugin); PodGroups and CompositePodGroups
        feed the workload forest first (upstream's queue keeps its workloadForest so)."""
        for informer in informers:
            resource = _POD_GROUP_RESOURCES[informer.kind]
            informer.add_event_handler(
                FuncHandler(
                    on_add=functools.partial(self._on_group_add, resource),
                    on_update=functools.partial(self._on_group_update, resource),
                    on_delete=functools.partial(self._on_group_delete, resource),
                )
            )

    def _on_group_add(self, resource: EventResource, obj: Message) -> None:
        self._forest_add(obj)
        if isinstance(obj, types_pb2.PodGroup):
            self.queue.add_pod_group(obj)  # (1.37: its members waiting for it queue)
        elif isinstance(obj, types_pb2.CompositePodGroup):
            self.queue.add_composite_pod_group(obj)  # (... and those waiting for their root)
        self._on_object_add(resource, obj)

    def _on_group_update(self, resource: EventResource, old: Message, new: Message) -> None:
        self._forest_add(new)
        if isinstance(new, types_pb2.PodGroup):
            self.queue.add_pod_group(new)
        elif isinstance(new, types_pb2.CompositePodGroup):
            self.queue.add_composite_pod_group(new)
        self._on_object_update(resource, old, new)

    def _on_group_delete(self, resource: EventResource, obj: Message) -> None:
        if isinstance(obj, types_pb2.PodGroup):
            # (first: the queue finds the entity of its tree's root in the forest)
            self.queue.delete_pod_group(obj)
        forest = self.pod_groups.forest if self.pod_groups is not None else None
        if forest is not None:
            if isinstance(obj, types_pb2.PodGroup):
                forest.delete_pod_group(obj)
            elif isinstance(obj, types_pb2.CompositePodGroup):
                forest.delete_composite_pod_group(obj)
        self._on_object_delete(resource, obj)

    def _forest_add(self, obj: Message) -> None:
        forest = self.pod_groups.forest if self.pod_groups is not None else None
        if forest is None:
            return
        if isinstance(obj, types_pb2.PodGroup):
            forest.add_pod_group(obj)
        elif isinstance(obj, types_pb2.CompositePodGroup):
            forest.add_composite_pod_group(obj)

    def _on_object_add(self, resource: EventResource, obj: Message) -> None:
        event = ClusterEvent(resource, ActionType.ADD, f"{resource}Add")
        self.queue.move_all_to_active_or_backoff_queue(event, None, obj)

    def _on_object_update(self, resource: EventResource, old: Message, new: Message) -> None:
        event = ClusterEvent(resource, ActionType.UPDATE_OBJECT, f"{resource}Update")
        self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def _on_object_delete(self, resource: EventResource, obj: Message) -> None:
        event = ClusterEvent(resource, ActionType.DELETE, f"{resource}Delete")
        self.queue.move_all_to_active_or_backoff_queue(event, obj, None)

    def _responsible(self, pod: types_pb2.Pod) -> bool:
        return pod.spec.scheduler_name in self.scheduler_names

    def _queues_deferred(self, pod: types_pb2.Pod) -> bool:
        """An assigned pod this scheduler queues for its Deferred resize (KEP-5836)."""
        return self.resize_preemption and is_deferred_resize_pod(pod) and self._responsible(pod)

    def _update_deferred(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        """Follows an assigned pod's Deferred condition into and out of the queue."""
        was, now = self._queues_deferred(old), self._queues_deferred(new)
        if now:
            if was:
                self.queue.update(old, new)
            else:
                logger.info(
                    "pod %s has a deferred resize: queued on %s",
                    object_key(new),
                    new.spec.node_name,
                )
                self.queue.add(new)
        elif was:
            logger.info("pod %s no longer has a deferred resize: dequeued", object_key(new))
            self.queue.delete(new)

    # ------------------------------------------------------------ pods

    def on_pod_add(self, pod: types_pb2.Pod) -> None:
        if self.pod_groups is not None:
            self.pod_groups.add_pod(pod)
        if pod.spec.node_name:
            _cache_call("AddPod", self.cache.add_pod, pod)
            self.queue.assigned_pod_added(pod)
            if self._queues_deferred(pod):
                # Typically at start-up: the resize was deferred before this scheduler ran.
                logger.info(
                    "pod %s has a deferred resize: queued on %s",
                    object_key(pod),
                    pod.spec.node_name,
                )
                self.queue.add(pod)
        elif self._responsible(pod):
            self.queue.add(pod)
            if self.pod_groups is not None and self.pod_groups.membership.gang:
                # A new member may complete its gang (upstream addPodToSchedulingQueue, with
                # GangScheduling on: an UnscheduledPodAdd to the pool's hints).
                self.queue.move_all_to_active_or_backoff_queue(UNSCHEDULED_POD_ADD, None, pod)

    def on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if self.pod_groups is not None:
            self.pod_groups.update_pod(old, new)
        if new.spec.node_name:
            if old.spec.node_name:
                _cache_call("UpdatePod", self.cache.update_pod, old, new)
                if self.resize_preemption:
                    self._update_deferred(old, new)
                self.queue.assigned_pod_updated(old, new, pod_update_action(old, new))
            else:
                # Bound: it leaves the queue (and the nominator) and enters the cache.
                if self._responsible(old):
                    self.queue.delete(old)
                _cache_call("AddPod", self.cache.add_pod, new)
                self.queue.assigned_pod_added(new)
        elif self._responsible(old):
            self._update_pod_in_scheduling_queue(old, new)

    def _update_pod_in_scheduling_queue(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        """upstream updatePodInSchedulingQueue."""
        if old.metadata.resource_version == new.metadata.resource_version:
            return  # the same object again: queueing it twice would schedule it twice
        if self.cache.is_assumed_pod(new):
            # In its binding cycle: nothing to update in the queue (the KEP-5278 NNN PATCH
            # lands here), unless its deletion has just begun.
            if new.metadata.HasField("deletion_timestamp") and not old.metadata.HasField(
                "deletion_timestamp"
            ):
                self._handle_assumed_pod_deletion(new)
            return
        self.queue.update(old, new)
        if has_nominated_node_name_changed(old, new):
            # A withdrawn or moved nomination frees room for pods of lower or equal priority.
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, old, None, le_priority_pre_check(pod_priority(old))
            )

    def _handle_assumed_pod_deletion(self, pod: types_pb2.Pod) -> None:
        """An assumed pod is being deleted: its room is freed now, not when its binding
        cycle ends (upstream handleAssumedPodDeletion)."""
        assumed = self.cache.get_pod(pod)
        if assumed is None:
            logger.debug("assumed pod %s was already forgotten", object_key(pod))
            return
        fwk = self.frameworks.get(assumed.spec.scheduler_name)
        if fwk is None:
            logger.error("no profile for the scheduler name of assumed pod %s", object_key(pod))
            return
        if fwk.reject_waiting_pod(assumed.metadata.uid):
            # Its binding cycle fails at WaitOnPermit and cleans up after itself.
            logger.info("rejected waiting pod %s: it is being deleted", object_key(pod))
        else:
            # In PreBind or Bind: forgotten here so that the node is free at once.
            logger.info(
                "forgot assumed pod %s on %s: it is being deleted",
                object_key(pod),
                assumed.spec.node_name,
            )
            _cache_call("ForgetPod", self.cache.forget_pod, assumed)
        self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, assumed, None)

    def on_pod_delete(self, pod: types_pb2.Pod) -> None:
        if self.pod_groups is not None:
            self.pod_groups.delete_pod(pod)
        if pod.spec.node_name:
            _cache_call("RemovePod", self.cache.remove_pod, pod)
            if self.resize_preemption and self._responsible(pod):
                # A deferred pod leaves the queue too (the last object may be stale, so whether
                # it was Deferred is not asked); before the event below, which would requeue it.
                self.queue.delete(pod)
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, pod, None)
        elif self._responsible(pod):
            self.queue.delete(pod)
            if self.cache.is_assumed_pod(pod):
                self._handle_assumed_pod_deletion(pod)
            elif pod.status.nominated_node_name:
                self.queue.move_all_to_active_or_backoff_queue(
                    ASSIGNED_POD_DELETE, pod, None, le_priority_pre_check(pod_priority(pod))
                )

    # ------------------------------------------------------------ nodes

    def on_node_add(self, node: types_pb2.Node) -> None:
        _cache_call("AddNode", self.cache.add_node, node)
        self.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)

    def on_node_update(self, old: types_pb2.Node, new: types_pb2.Node) -> None:
        _cache_call("UpdateNode", self.cache.update_node, old, new)
        action = node_update_action(old, new)
        if action:
            event = ClusterEvent(EventResource.NODE, action, "NodeUpdate")
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def on_node_delete(self, node: types_pb2.Node) -> None:
        _cache_call("RemoveNode", self.cache.remove_node, node)
