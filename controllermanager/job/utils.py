"""The Job controller's pod predicates and its condition helper (upstream's isPodFailed,
IsPodTerminating and ensureJobConditionStatus in pkg/controller/job/job_controller.go and
util/utils.go)."""

from __future__ import annotations

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import batch


def has_tracking_finalizer(pod: types_pb2.Pod) -> bool:
    return batch.JOB_TRACKING_FINALIZER in pod.metadata.finalizers


def is_pod_failed(pod: types_pb2.Pod, job: types_pb2.Job) -> bool:
    """upstream isPodFailed: phase Failed, or (unless only Failed pods are replaced) a pod
    being deleted that did not succeed: it may never get the chance to report Failed."""
    if pod.status.phase == "Failed":
        return True
    if job.spec.pod_replacement_policy == batch.FAILED_POLICY:
        return False
    return pod.metadata.HasField("deletion_timestamp") and pod.status.phase != "Succeeded"


def is_pod_terminating(pod: types_pb2.Pod) -> bool:
    """upstream IsPodTerminating: being deleted and not finished."""
    return pod.metadata.HasField("deletion_timestamp") and pod.status.phase not in (
        "Succeeded",
        "Failed",
    )


def ensure_condition(
    status: types_pb2.JobStatus,
    type_: str,
    cond_status: str,
    reason: str,
    message: str,
    now: Timestamp,
) -> bool:
    """upstream ensureJobConditionStatus: sets the condition (its transition time when the
    status changes); a False condition that does not exist is not added. True if changed."""
    for c in status.conditions:
        if c.type != type_:
            continue
        if c.status == cond_status and c.reason == reason and c.message == message:
            return False
        if c.status != cond_status:
            c.last_transition_time.CopyFrom(now)
        c.status, c.reason, c.message = cond_status, reason, message
        c.last_probe_time.CopyFrom(now)
        return True
    if cond_status == "False":
        return False
    c = status.conditions.add(type=type_, status=cond_status, reason=reason, message=message)
    c.last_probe_time.CopyFrom(now)
    c.last_transition_time.CopyFrom(now)
    return True
