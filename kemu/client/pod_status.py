"""Writing a pod's status conditions without losing those others wrote meanwhile.

Upstream's components send a strategic merge patch, which merges conditions by type; kemu's
patches are JSON merge patches, which replace the list. So the list is written whole, under a
resourceVersion precondition, and recomputed from a fresh read when someone else wrote first
(the kubelet's status manager does the same)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.machinery.convert import message_to_dict
from kemu.machinery.errors import Conflict, NotFound
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.pod_conditions import condition_observed_generation, update_pod_condition

logger = logging.getLogger(__name__)

ATTEMPTS: Final = 5

# What to write to the status, given the pod as it is now: a merge patch of `status`
# (conditions written whole), or None when nothing needs to change.
StatusChange = Callable[[types_pb2.Pod], "JSONObject | None"]


def condition_change(
    condition_type: str,
    status: str,
    reason: str,
    message: str,
    *,
    now: float,
    tracking: bool,
    nominated_node_name: str | None = None,
) -> StatusChange:
    """The StatusChange that sets the condition `condition_type` (upstream UpdatePodCondition;
    observedGeneration as PodObservedGenerationTracking, `tracking`, says; lastTransitionTime
    `now` when it changes) and, when `nominated_node_name` is not None, status.nominatedNodeName
    to it ("" clears it): the conditions written whole, the nomination only when it changes;
    None when neither changes. The scheduler's PodScheduled and DisruptionTarget writes."""

    def change(current: types_pb2.Pod) -> JSONObject | None:
        copy = types_pb2.PodStatus()
        copy.CopyFrom(current.status)
        condition = types_pb2.PodCondition(
            type=condition_type,
            status=status,
            reason=reason,
            message=message,
            observed_generation=condition_observed_generation(
                current.status, condition_type, current.metadata.generation, tracking=tracking
            ),
        )
        condition_changed = update_pod_condition(copy, condition, now)
        nominated_changed = (
            nominated_node_name is not None
            and current.status.nominated_node_name != nominated_node_name
        )
        if not condition_changed and not nominated_changed:
            return None
        out: JSONObject = {"conditions": [message_to_dict(c) for c in copy.conditions]}
        if nominated_changed:
            out["nominatedNodeName"] = nominated_node_name or None
        return out

    return change


async def patch_pod_status(
    client: ApiClient, pod: types_pb2.Pod, change: StatusChange, *, attempts: int = ATTEMPTS
) -> bool:
    """Applies `change` to `pod` (the caller's latest copy) with a resourceVersion
    compare-and-swap on the status subresource; on a Conflict, reads the pod again and
    retries. False when the pod is gone (or replaced by a namesake). Raises Conflict after
    `attempts` lost races, and any other ApiError."""
    current = pod
    for _ in range(attempts):
        status = change(current)
        if status is None:
            return True
        patch = {
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "status": status,
        }
        try:
            await client.patch(
                types_pb2.Pod,
                pod.metadata.name,
                patch,
                pod.metadata.namespace,
                subresource="status",
            )
            return True
        except NotFound:
            return False
        except Conflict:
            try:
                current = await client.get(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
            except NotFound:
                return False
            if current.metadata.uid != pod.metadata.uid:
                return False
    raise Conflict(
        f"could not write the status of {pod.metadata.namespace}/{pod.metadata.name}: "
        "it kept changing"
    )
