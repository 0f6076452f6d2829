"""NodeName: a pod with spec.nodeName fits only that node (upstream nodename/node_name.go).

PreFilter narrows the candidates to the named node (upstream 1.31+), or Skips when there is
none. The pods the scheduler places have no nodeName; the ones that do are simulations' (the
autoscaler) and, with KEP-5836's gate, running pods whose resize the kubelet deferred: their
cycle is thereby restricted to their own node (KEP-5836's DeferredPodScheduling plugin, pkg/scheduler/framework/plugins/deferredpodscheduling), the other nodes being
UnschedulableAndUnresolvable, so preemption looks for victims there only.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
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
    PreFilterExtensions,
    PreFilterPlugin,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PreFilterResult

NAME: Final = "NodeName"

ERR_REASON: Final = "node(s) didn't match the requested node name"


def fits(pod: types_pb2.Pod, node: types_pb2.Node) -> bool:
    return not pod.spec.node_name or pod.spec.node_name == node.metadata.name


class NodeName(PreFilterPlugin, FilterPlugin, EnqueueExtensions):
    NAME = NAME

    def name(self) -> str:
        return NAME

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.spec.node_name:
            return None, SKIP
        return PreFilterResult(frozenset({pod.spec.node_name})), SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if node.node is None:
            return as_error("node not found")
        if not fits(pod, node.node):
            return unresolvable(ERR_REASON)
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD), self.is_schedulable_after_node_add
            )
        ]

    def is_schedulable_after_node_add(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        return QueueingHint.QUEUE if fits(pod, new) else QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> NodeName:
    return NodeName()
