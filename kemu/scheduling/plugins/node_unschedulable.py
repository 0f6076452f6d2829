"""NodeUnschedulable: filters out cordoned nodes (spec.unschedulable) unless the pod tolerates
the `node.kubernetes.io/unschedulable:NoSchedule` taint (upstream
nodeunschedulable/node_unschedulable.go).

Events: a node added schedulable, or updated from unschedulable to schedulable (upstream
classifies a spec.unschedulable change as UpdateNodeTaint, and so must kemu's event handlers);
the rejected pod itself gaining a toleration of the unschedulable taint.

KEP-5836: a cordon keeps new pods off a node; it says nothing about a pod already running there
that waits for its Deferred resize. With InPlacePodVerticalScalingSchedulerPreemption such a pod
Skips this plugin at PreFilter (the KEP: every plugin but NodeName, NodeResourcesFit and the
preemption ones implements PreFilter to Skip Deferred pods), so a cordoned node does not stop
resize preemption on it. Every other pod gets Success at PreFilter.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.deferred import SkipsDeferredResizePods, resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginArgs,
)
from kemu.scheduling.plugins.helpers import UNSCHEDULABLE_TAINT, tolerations_tolerate_taint
from kemu.scheduling.status import SUCCESS, Status, unresolvable
from kemu.scheduling.types import NodeInfo, PodInfo

NAME: Final = "NodeUnschedulable"

ERR_REASON_UNKNOWN_CONDITION: Final = "node(s) had unknown conditions"
ERR_REASON_UNSCHEDULABLE: Final = "node(s) were unschedulable"


def _tolerates_unschedulable(pod: types_pb2.Pod) -> bool:
    return tolerations_tolerate_taint(pod.spec.tolerations, UNSCHEDULABLE_TAINT)


class NodeUnschedulable(SkipsDeferredResizePods, FilterPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, *, skip_deferred: bool = False) -> None:
        self.skip_deferred = skip_deferred

    def name(self) -> str:
        return NAME

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if node.node is None:
            return unresolvable(ERR_REASON_UNKNOWN_CONDITION)
        if not node.unschedulable or _tolerates_unschedulable(pod):
            return SUCCESS
        return unresolvable(ERR_REASON_UNSCHEDULABLE)

    def nominated_columns_exact(
        self, state: CycleState, pod: types_pb2.Pod, nominated: Sequence[PodInfo]
    ) -> bool:
        """Its batch forms are exact over columns with nominated pods added
        (kemu.scheduling.columns.ColumnNominatedPlugin): It reads no pod of the node."""
        return True

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        has_node = columns.nodes_present(rows)
        if not columns.unschedulable_nodes or _tolerates_unschedulable(pod):
            return has_node
        ok: BoolArray = has_node & ~columns.unschedulable[rows]
        return ok

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the node is now schedulable and was not (or did not exist)."""
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        was_schedulable = isinstance(old, types_pb2.Node) and not old.spec.unschedulable
        if not was_schedulable and not new.spec.unschedulable:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the rejected pod itself now tolerates the unschedulable taint."""
        if (
            isinstance(new, types_pb2.Pod)
            and new.metadata.uid == pod.metadata.uid
            and _tolerates_unschedulable(new)
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable(skip_deferred=resize_preemption_enabled(handle.gates))
