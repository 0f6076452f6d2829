"""What the Job controller keeps besides the API (upstream pkg/controller/job
tracking_utils.go, backoff_utils.go and the pod predicates of job_controller.go).

- `FinalizerExpectations`: the pods whose job-tracking finalizer this controller is removing
  and has not yet seen removed in its informer (upstream uidTrackingExpectations). A pod in
  it is never counted again.
- `WrittenVersions`: per Job, the resourceVersion of this controller's last status write,
  until its informer shows the Job at least that new. A sync of an older copy would count
  from a status that lacks the pods whose finalizers the write let go (they count nowhere
  then) and start pods too many: it waits for the Job's update event instead.
- `BackoffStore`: per Job, the failures since the last success and the time of the last one:
  a replacement pod waits 10 s, 20 s, 40 s, ... (at most 10 min) after a failure (upstream
  DefaultJobPodFailureBackOff and MaxJobPodFailureBackOff). In memory, as upstream's.
- the predicates: when a pod counts as failed (deleted pods too, under the
  TerminatingOrFailed replacement policy), when it finished, whether it is terminating.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import batch

POD_FAILURE_BACKOFF: Final = 10.0
MAX_POD_FAILURE_BACKOFF: Final = 600.0


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


def finished_time(pod: types_pb2.Pod, now: float) -> float:
    """upstream getFinishedTime: the latest container finish, else the deletion time, else
    now."""
    latest: float | None = None
    for cs in pod.status.container_statuses:
        term = cs.state.terminated
        if cs.state.HasField("terminated") and term.HasField("finished_at"):
            t = term.finished_at.seconds + term.finished_at.nanos / 1e9
            latest = t if latest is None else max(latest, t)
    if latest is not None:
        return latest
    if pod.metadata.HasField("deletion_timestamp"):
        ts = pod.metadata.deletion_timestamp
        return ts.seconds + ts.nanos / 1e9
    return now


class FinalizerExpectations:
    """Per Job key, the uids of pods whose finalizer removal is in flight."""

    def __init__(self) -> None:
        self._items: dict[str, set[str]] = {}

    def expect_removals(self, key: str, uids: Iterable[str]) -> None:
        self._items.setdefault(key, set()).update(uids)

    def removal_observed(self, key: str, uid: str) -> None:
        uids = self._items.get(key)
        if uids is not None:
            uids.discard(uid)
            if not uids:
                del self._items[key]

    def expected(self, key: str) -> frozenset[str]:
        return frozenset(self._items.get(key, ()))

    def delete(self, key: str) -> None:
        self._items.pop(key, None)


class WrittenVersions:
    """Per Job key, the resourceVersion of the Job as this controller last wrote it, until the
    informer's copy is as new (resourceVersions are etcd revisions: ordered)."""

    def __init__(self) -> None:
        self._items: dict[str, int] = {}

    def wrote(self, key: str, job: types_pb2.Job) -> None:
        self._items[key] = int(job.metadata.resource_version)

    def observed(self, key: str, cached: types_pb2.Job) -> bool:
        """Whether `cached` (the informer's copy) includes the last write; forgets the write
        once it does."""
        written = self._items.get(key)
        if written is None:
            return True
        if int(cached.metadata.resource_version) < written:
            return False
        del self._items[key]
        return True

    def delete(self, key: str) -> None:
        self._items.pop(key, None)


@dataclass
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure: float | None = None

    def remaining(self, now: float) -> float:
        """Seconds before a replacement pod may be created (0: now)."""
        if self.last_failure is None or self.failures_after_last_success == 0:
            return 0.0
        delay: float = min(
            POD_FAILURE_BACKOFF * 2.0 ** (self.failures_after_last_success - 1),
            MAX_POD_FAILURE_BACKOFF,
        )
        return max(0.0, self.last_failure + delay - now)


class BackoffStore:
    """Per Job key, the record of its pod failures (see the module docstring)."""

    def __init__(self) -> None:
        self._records: dict[str, BackoffRecord] = {}

    def new_record(
        self,
        key: str,
        succeeded: Iterable[types_pb2.Pod],
        failed: Iterable[types_pb2.Pod],
        now: float,
    ) -> BackoffRecord:
        """The record after the newly finished pods (upstream newBackoffRecord): a success
        after the last failure resets the count; failures after the last success add up."""
        old = self._records.get(key, BackoffRecord())
        last_success = max((finished_time(p, now) for p in succeeded), default=None)
        failure_times = sorted(finished_time(p, now) for p in failed)
        if last_success is None:
            if not failure_times:
                return BackoffRecord(old.failures_after_last_success, old.last_failure)
            return BackoffRecord(
                old.failures_after_last_success + len(failure_times), failure_times[-1]
            )
        after = [t for t in failure_times if t > last_success]
        return BackoffRecord(len(after), after[-1] if after else None)

    def update(self, key: str, record: BackoffRecord) -> None:
        self._records[key] = record

    def remove(self, key: str) -> None:
        self._records.pop(key, None)


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
