"""DeferredPodScheduling: the cycle of a running pod whose in-place resize the kubelet deferred
(KEP-5836, upstream plugins/deferredpodscheduling/deferred_pod_scheduling.go; KEP-5836's design, keps/sig-scheduling/5836-*).

A no-op unless InPlacePodVerticalScalingSchedulerPreemption is on and the pod has
PodResizePending/Deferred:
- PreFilter: Skip for every other pod (so Filter never runs for them);
- Filter: a node other than the pod's spec.nodeName is UnschedulableAndUnresolvable "pod assigned
  to different node"; a node whose spec.podPreemptionPolicy.disableResizePreemption is non-empty
  is UnschedulableAndUnresolvable "node had resize preemption disabled", so DefaultPreemption
  never looks for victims there (the scheduler reads the node field itself: old kubelets do not
  propagate the policy to the pod, KEP §Version Skew);
- Permit: a deferred pod that passed every filter (its resize fits, or fits once victims are
  gone) is rejected UnschedulableAndUnresolvable "pod resize fits, waiting for Kubelet
  actuation": it is already bound, so it is parked in the unschedulable pool instead of going
  to binding, and waits there for the kubelet to clear its Deferred condition (or for an event
  that makes it not fit again);
- queueing hints: the pod's own node re-enabling resize preemption (disabled -> enabled), or
  that node being added with preemption enabled, queues it; everything else is Skip.
"""

from __future__ import annotations

import logging
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.scheduling.deferred import resize_preemption_enabled
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
    PermitPlugin,
    PluginArgs,
    PreFilterExtensions,
    PreFilterPlugin,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import NodeInfo, PreFilterResult

logger = logging.getLogger(__name__)

NAME: Final = "DeferredPodScheduling"

ERR_REASON_DIFFERENT_NODE: Final = "pod assigned to different node"
ERR_REASON_NODE_DISABLES_RESIZE_PREEMPTION: Final = "node had resize preemption disabled"
WAITING_FOR_KUBELET: Final = "pod resize fits, waiting for Kubelet actuation"


def resize_preemption_disabled(node: types_pb2.Node) -> bool:
    """Some owner asked the node not to preempt pods for in-place resizes."""
    return bool(node.spec.pod_preemption_policy.disable_resize_preemption)


class DeferredPodScheduling(PreFilterPlugin, FilterPlugin, PermitPlugin, EnqueueExtensions):
    NAME = NAME

    def __init__(self, *, enabled: bool) -> None:
        self.enabled = enabled

    def name(self) -> str:
        return NAME

    def _deferred(self, pod: types_pb2.Pod) -> bool:
        # Upstream tests the condition only; a pod gets it from its kubelet, so it is bound.
        return self.enabled and is_pod_resize_deferred(pod)

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self._deferred(pod):
            return None, SKIP
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if not self._deferred(pod):
            return SUCCESS
        if node.node is None:
            return as_error("node not found")
        if pod.spec.node_name and pod.spec.node_name != node.name:
            return unresolvable(ERR_REASON_DIFFERENT_NODE)
        if resize_preemption_disabled(node.node):
            return unresolvable(ERR_REASON_NODE_DISABLES_RESIZE_PREEMPTION)
        return SUCCESS

    def permit(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> tuple[Status, float]:
        if not self._deferred(pod):
            return SUCCESS, 0.0
        logger.debug("Parking %s: its resize fits on %s", object_key(pod), node_name)
        return unresolvable(WAITING_FOR_KUBELET), 0.0

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_PREEMPTION_POLICY),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD),
                self.is_schedulable_after_node_add,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the pod's node re-enabled resize preemption."""
        if not self._deferred(pod):
            return QueueingHint.SKIP
        if not isinstance(old, types_pb2.Node) or not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE  # upstream: an unexpected object queues (with an error)
        if pod.spec.node_name != new.metadata.name:
            return QueueingHint.SKIP
        if resize_preemption_disabled(old) and not resize_preemption_disabled(new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_add(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the pod's node appears with resize preemption enabled."""
        if not self._deferred(pod):
            return QueueingHint.SKIP
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        if pod.spec.node_name != new.metadata.name or resize_preemption_disabled(new):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def new(args: PluginArgs, handle: Handle) -> DeferredPodScheduling:
    check_arg_keys(args, (), NAME)
    return DeferredPodScheduling(enabled=resize_preemption_enabled(handle.gates))
