"""KEP-5836: scheduler preemption for Deferred in-place resizes (alpha in 1.37, KEP-5836, keps/sig-scheduling/5836-*).

A running pod whose resize the kubelet could not fit is marked PodResizePending/Deferred. With
the gate on, the scheduler queues that (already bound) pod and runs a cycle restricted to its
own node: the plugins with nothing to say about resources Skip at PreFilter, NodeResourcesFit
counts only the part of the request the node's cached copy of the pod does not already hold,
DefaultPreemption may remove lower-priority pods there, and DeferredPodScheduling parks a pod
that fits at Permit so that it is never bound again. The scheduler process never assumes such a
pod, never nominates it and never writes PodScheduled=False for it.

Both flags are resolved once per plugin or process; `is_deferred_resize_pod` is what the
scheduler process uses to recognise such a pod (the plugins test only the condition, as
upstream's do).
"""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    FeatureGates,
)
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.scheduling.interface import CycleState, PreFilterExtensions, PreFilterPlugin
from kemu.scheduling.status import SKIP, SUCCESS, Status
from kemu.scheduling.types import NodeInfo, PreFilterResult


def resize_preemption_enabled(gates: FeatureGates) -> bool:
    """InPlacePodVerticalScalingSchedulerPreemption, which upstream makes depend on
    InPlacePodVerticalScaling. The gate does not exist before 1.37: off there."""
    return gates.enabled(IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION) and gates.enabled(
        IN_PLACE_POD_VERTICAL_SCALING
    )


def is_deferred_resize_pod(pod: types_pb2.Pod) -> bool:
    """A pod bound to a node whose resize the kubelet deferred: what the scheduler queues and
    cycles on its node when resize preemption is enabled."""
    return bool(pod.spec.node_name) and is_pod_resize_deferred(pod)


class SkipsDeferredResizePods(PreFilterPlugin):
    """The PreFilter of a Filter plugin with nothing to say about resources (upstream's "skip
    evaluation in irrelevant filtering, prefiltering, and postfiltering plugins for deferred
    resize pods"): Skip for a pod whose resize is Deferred when `skip_deferred` (resize
    preemption on), so that the plugin's Filter does not run in that pod's cycle on its own node;
    Success, a no-op, for every other pod."""

    skip_deferred: bool = False

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self.skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None
