"""Cluster events and queueing hints (upstream framework/types.go ClusterEvent, QueueingHint).

A plugin that can reject pods says which cluster events might make a rejected pod schedulable
(EnqueueExtensions.events_to_register) and, per event, a hint function that looks at the pod
and the changed object and answers Queue or Skip. The queue moves a pod out of the
unschedulable pool only for events its rejecting plugins registered and whose hint says Queue.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_OTHER = 2048  # any other pod update (e.g. its nominated node)
    # KEP-5836: spec.podPreemptionPolicy changed (upstream UpdateNodePreemptionPolicy).
    UPDATE_NODE_PREEMPTION_POLICY = 4096
    # KEP-5836: a pod's requests went up (upstream UpdatePodScaleUp); NodeResourcesFit
    # registers it for deferred-resize pods only.
    UPDATE_POD_SCALE_UP = 8192
    # An update of a kind with no finer action types (upstream's plain Update): the storage
    # kinds the volume plugins watch.
    UPDATE_OBJECT = 16384
    # DRA: the pod's status.resourceClaimStatuses or extendedResourceClaimStatus changed
    # (upstream UpdatePodGeneratedResourceClaim, extractPodGeneratedResourceClaimChange).
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 32768

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATION
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_OTHER
        | UPDATE_NODE_PREEMPTION_POLICY
        | UPDATE_POD_SCALE_UP
        | UPDATE_OBJECT
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
    )
    ALL = ADD | DELETE | UPDATE


class EventResource(enum.StrEnum):
    POD = "Pod"  # any pod (assigned or not); used for the pod being scheduled itself
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    NODE = "Node"
    PDB = "PodDisruptionBudget"
    PVC = "PersistentVolumeClaim"
    PV = "PersistentVolume"
    STORAGE_CLASS = "storage.k8s.io/StorageClass"
    CSI_NODE = "storage.k8s.io/CSINode"
    # KEP-4671/KEP-5832 (GangScheduling's events): 1.35's Workload, 1.36+'s PodGroup.
    WORKLOAD = "scheduling.k8s.io/Workload"
    POD_GROUP = "scheduling.k8s.io/PodGroup"
    COMPOSITE_POD_GROUP = "scheduling.k8s.io/CompositePodGroup"  # KEP-6012 (1.37)
    # DRA (DynamicResources' events; upstream framework/types.go).
    RESOURCE_CLAIM = "resource.k8s.io/ResourceClaim"
    RESOURCE_SLICE = "resource.k8s.io/ResourceSlice"
    DEVICE_CLASS = "resource.k8s.io/DeviceClass"
    DEVICE_TAINT_RULE = "resource.k8s.io/DeviceTaintRule"
    WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    def covers(self, other: ClusterEvent) -> bool:
        """Whether a plugin registered for `self` cares about `other`."""
        resource_ok = self.resource in (EventResource.WILDCARD, other.resource) or (
            self.resource == EventResource.POD
            and other.resource in (EventResource.ASSIGNED_POD, EventResource.UNSCHEDULED_POD)
        )
        return resource_ok and bool(self.action & other.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name or int(self.action)}"


class QueueingHint(enum.IntEnum):
    SKIP = 0
    QUEUE = 1


# hint(pod being requeued, old object or None, new object or None) -> Queue or Skip
QueueingHintFn = Callable[[types_pb2.Pod, object, object], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None  # None: always Queue


def queue_always(pod: types_pb2.Pod, old: object, new: object) -> QueueingHint:
    return QueueingHint.QUEUE


# Events with special meaning to the queue.
NODE_ADD: Final = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
ASSIGNED_POD_DELETE: Final = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
UNSCHEDULABLE_TIMEOUT: Final = ClusterEvent(
    EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout"
)
FORCE_ACTIVATE: Final = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
