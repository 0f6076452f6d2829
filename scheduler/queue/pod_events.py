"""Cluster events about pods, as the scheduling queue sees them (upstream framework/events.go).

`pod_scheduling_properties_change` turns a pod update into the specific events plugins register
for (label change, scale down, toleration added, scheduling gates removed), so that a pod's own
update and assigned-pod updates go through the same queueing-hint machinery as node events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.events import ActionType, ClusterEvent, EventResource
from kemu.scheduling.pod_info import same_requests_inputs
from kemu.scheduling.types import pod_priority, pod_requests

# Labels of queue moves that are not cluster events (for queue_incoming_pods_total{event}).
SCHEDULE_ATTEMPT_FAILURE: Final = "ScheduleAttemptFailure"
BACKOFF_COMPLETE: Final = "BackoffComplete"
POP_FROM_BACKOFF_Q: Final = "PopFromBackoffQ"

ASSIGNED_POD_ADD: Final = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_UPDATE: Final = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate"
)
UNSCHEDULED_POD_ADD: Final = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.ADD, "UnschedulablePodAdd"
)
UNSCHEDULED_POD_UPDATE: Final = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.UPDATE, "UnschedulablePodUpdate"
)
UNSCHEDULED_POD_DELETE: Final = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.DELETE, "UnschedulablePodDelete"
)

_ACTION_LABELS: Final = {
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCALE_UP: "UpdatePodScaleUp",
    ActionType.UPDATE_POD_TOLERATION: "UpdatePodToleration",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
    ActionType.UPDATE_POD_OTHER: "Update",
}

# A pre-check: a cheap filter over the unschedulable pool before hints run (upstream
# PreEnqueueCheck). It must not depend on plugin logic.
PreEnqueueCheck = Callable[[types_pb2.Pod], bool]


def pod_event(resource: EventResource, action: ActionType) -> ClusterEvent:
    """A pod update event with upstream's label, e.g. "AssignedPodUpdatePodScaleDown"; a
    combination of actions is labelled "<resource>Update"."""
    return ClusterEvent(resource, action, f"{resource}{_ACTION_LABELS.get(action, 'Update')}")


def resize_actions(
    new: types_pb2.Pod, old: types_pb2.Pod, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> ActionType:
    """UPDATE_POD_SCALE_DOWN when some request of the pod went down, UPDATE_POD_SCALE_UP when
    some went up (both for a resize that moves two resources apart), none otherwise
    (upstream extractPodScaleDown and extractPodScaleUp, pkg/scheduler/framework/events.go;
    the scale-up event is KEP-5836's, which NodeResourcesFit registers with
    InPlacePodVerticalScalingSchedulerPreemption, noderesources/fit.go EventsToRegister)."""
    if same_requests_inputs(old, new):
        return ActionType(0)  # equal inputs, equal requests: most updates (conditions, NNN, phase)
    new_req, _ = pod_requests(new, counting)
    old_req, _ = pod_requests(old, counting)
    action = ActionType(0)
    for name in {*old_req.names(), *new_req.names()}:
        before, after = old_req.get(name), new_req.get(name)
        if after < before:
            action |= ActionType.UPDATE_POD_SCALE_DOWN
        elif after > before:
            action |= ActionType.UPDATE_POD_SCALE_UP
    return action


def pod_scheduling_properties_change(
    new: types_pb2.Pod, old: types_pb2.Pod, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> list[ClusterEvent]:
    """The events a pod update stands for (upstream PodSchedulingPropertiesChange).

    The resource is AssignedPod when the new pod is bound, else UnschedulablePod. When no
    specific change is found the update is UPDATE_POD_OTHER (kemu's name for upstream's generic
    Pod/Update action), which only plugins registering generic pod updates see.
    """
    resource = EventResource.ASSIGNED_POD if new.spec.node_name else EventResource.UNSCHEDULED_POD
    actions: list[ActionType] = []
    if dict(new.metadata.labels) != dict(old.metadata.labels):
        actions.append(ActionType.UPDATE_POD_LABEL)
    resized = resize_actions(new, old, counting)
    if resized & ActionType.UPDATE_POD_SCALE_DOWN:
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if resized & ActionType.UPDATE_POD_SCALE_UP:
        actions.append(ActionType.UPDATE_POD_SCALE_UP)
    if not new.spec.scheduling_gates and old.spec.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    # Validation lets tolerations only be added, so a length change is every change.
    if len(new.spec.tolerations) != len(old.spec.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATION)
    if list(new.status.resource_claim_statuses) != list(old.status.resource_claim_statuses) or (
        new.status.extended_resource_claim_status != old.status.extended_resource_claim_status
    ):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if not actions:
        actions.append(ActionType.UPDATE_POD_OTHER)
    return [pod_event(resource, a) for a in actions]


def has_nominated_node_name_changed(old: types_pb2.Pod, new: types_pb2.Pod) -> bool:
    """A nomination existed and was removed or moved (upstream hasNominatedNodeNameChanged).

    The event handler then moves lower-or-equal priority pods as if the nominated pod had been
    deleted from its old node: `move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, old,
    None, le_priority_pre_check(pod_priority(old)))`.
    """
    old_nnn = old.status.nominated_node_name
    return bool(old_nnn) and old_nnn != new.status.nominated_node_name


def le_priority_pre_check(priority: int) -> PreEnqueueCheck:
    """Selects pods whose priority is lower than or equal to `priority`."""

    def check(pod: types_pb2.Pod) -> bool:
        return pod_priority(pod) <= priority

    return check
