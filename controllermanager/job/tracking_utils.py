"""The Job controller's tracking of finished pods with the job-tracking finalizer (KEP-2307;
upstream pkg/controller/job/tracking_utils.go: uidTrackingExpectations, and the functions of
job_controller.go that form the two-phase commit: trackJobStatusAndRemoveFinalizers,
flushUncountedAndRemoveFinalizers, enactJobFinished, updateJobStatus,
removeTrackingFinalizerFromPods).

- `FinalizerExpectations`: the pods whose job-tracking finalizer this controller is removing
  and has not yet seen removed in its informer (upstream uidTrackingExpectations). A pod in
  it is never counted again.
- `WrittenVersions`: per Job, the resourceVersion of this controller's last status write,
  until its informer shows the Job at least that new. A sync of an older copy would count
  from a status that lacks the pods whose finalizers the write let go (they count nowhere
  then) and start pods too many: it waits for the Job's update event instead.
- `FinishedPodTracker`: the two-phase commit. A restarted controller never counts a pod twice
  nor loses one: the uids of newly finished pods are first written to
  `status.uncountedTerminatedPods`, then their finalizers are removed, then (same sync) the
  uids whose pods no longer hold the finalizer move into the counters; the final condition
  (Failed, or Complete with completionTime) follows once no pod is uncounted or terminating.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

import anyio

from controllermanager.controller_utils import is_pod_active
from controllermanager.job.backoff_utils import BackoffRecord, BackoffStore
from controllermanager.job.utils import ensure_condition, has_tracking_finalizer, is_pod_failed
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.machinery import batch
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING

logger = logging.getLogger(__name__)

MAX_UNCOUNTED_PODS: Final = 500
FINALIZER_PATCH_RETRIES: Final = 3


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
class SyncJobCtx:
    """What one sync computes (upstream syncJobCtx)."""

    job: types_pb2.Job  # a copy whose status the sync edits
    pods: list[types_pb2.Pod]
    active_pods: list[types_pb2.Pod]
    succeeded: int
    failed: int
    terminating: int
    expected_removals: frozenset[str]
    new_succeeded: list[types_pb2.Pod] = field(default_factory=list)
    new_failed: list[types_pb2.Pod] = field(default_factory=list)
    # (type, reason, message): the interim condition (FailureTarget or SuccessCriteriaMet).
    finished: tuple[str, str, str] | None = None
    backoff: BackoffRecord = field(default_factory=BackoffRecord)
    """The pod-failure backoff after this sync's newly finished pods (stored once written)."""


def record_uncounted(ctx: SyncJobCtx) -> tuple[list[types_pb2.Pod], bool]:
    """The first phase: the uids of newly finished pods (and, once the Job is finishing, of
    the pods it stops) join `status.uncountedTerminatedPods`. Returns the pods whose
    finalizer is to go and whether a uid was added."""
    job = ctx.job
    uncounted = job.status.uncounted_terminated_pods
    counted_s, counted_f = set(uncounted.succeeded), set(uncounted.failed)
    to_remove: list[types_pb2.Pod] = []
    added = False
    failing = ctx.finished is not None and ctx.finished[0] == batch.FAILURE_TARGET
    for pod in ctx.pods:
        uid = pod.metadata.uid
        if not has_tracking_finalizer(pod) or uid in ctx.expected_removals:
            continue
        failed = is_pod_failed(pod, job)
        if not (failed or pod.status.phase == "Succeeded" or ctx.finished is not None):
            continue
        if pod.status.phase == "Succeeded" and uid not in counted_f:
            if uid not in counted_s:
                uncounted.succeeded.append(uid)
                counted_s.add(uid)
                added = True
        elif failed or failing:
            if uid not in counted_f:
                uncounted.failed.append(uid)
                counted_f.add(uid)
                added = True
        elif not is_pod_active(pod) or pod.metadata.HasField("deletion_timestamp"):
            pass
        else:
            continue  # a running pod of a succeeding Job: it finishes first
        to_remove.append(pod)
        if len(counted_s) + len(counted_f) >= MAX_UNCOUNTED_PODS:
            break
    return to_remove, added


def count_removed(status: types_pb2.JobStatus, with_finalizer: set[str]) -> bool:
    """The third phase: uncounted uids whose pods no longer hold the finalizer move into the
    counters. Whether any moved."""
    uncounted = status.uncounted_terminated_pods
    moved = False
    for uid in list(uncounted.succeeded):
        if uid not in with_finalizer:
            uncounted.succeeded.remove(uid)
            status.succeeded += 1
            moved = True
    for uid in list(uncounted.failed):
        if uid not in with_finalizer:
            uncounted.failed.remove(uid)
            status.failed += 1
            moved = True
    return moved


class FinishedPodTracker:
    """The writes of the two-phase commit: status writes pinned to the resourceVersion the
    sync read, the finalizer removals with their expectations, the final condition and its
    event. Shares the controller's expectations, written versions and backoff store."""

    def __init__(
        self,
        client: ApiClient,
        clock: Clock,
        recorder: EventRecorder,
        *,
        finalizer_expectations: FinalizerExpectations,
        written: WrittenVersions,
        backoff: BackoffStore,
    ) -> None:
        self._client = client
        self._clock = clock
        self._recorder = recorder
        self._finalizer_expectations = finalizer_expectations
        self._written = written
        self._backoff = backoff

    async def track_and_flush(
        self, key: str, ctx: SyncJobCtx, stored: types_pb2.Job, *, force: bool
    ) -> None:
        """upstream trackJobStatusAndRemoveFinalizers and flushUncountedAndRemoveFinalizers:
        uncounted uids first, then the finalizers, then the counters and the final
        condition."""
        job = ctx.job
        to_remove, added = record_uncounted(ctx)
        if ctx.finished is not None:
            if batch.find_condition(job, ctx.finished[0]) is None:
                type_, reason, message = ctx.finished
                ensure_condition(
                    job.status, type_, "True", reason, message, timestamp(self._clock.now())
                )
                added = True
        current = stored
        if added or force or job.status != stored.status:
            current = await self._write_status(current, job.status)
        removed = await self._remove_finalizers(key, to_remove)
        self._backoff.update(key, ctx.backoff)
        with_finalizer = {p.metadata.uid for p in ctx.pods if has_tracking_finalizer(p)} - removed
        moved = count_removed(job.status, with_finalizer)
        finished = self._enact_finished(ctx)
        if moved or finished:
            await self._write_status(current, job.status)
        if finished:
            self._record_finished(job)
            self._backoff.remove(key)

    def _enact_finished(self, ctx: SyncJobCtx) -> bool:
        """upstream enactJobFinished: the final condition once no pod is uncounted or
        terminating."""
        if ctx.finished is None:
            return False
        status = ctx.job.status
        uncounted = status.uncounted_terminated_pods
        if uncounted.succeeded or uncounted.failed or ctx.terminating > 0:
            return False
        interim, reason, message = ctx.finished
        final = batch.FAILED if interim == batch.FAILURE_TARGET else batch.COMPLETE
        now = timestamp(self._clock.now())
        ensure_condition(status, final, "True", reason, message, now)
        if final == batch.COMPLETE:
            status.completion_time.CopyFrom(now)
        return True

    def _record_finished(self, job: types_pb2.Job) -> None:
        if batch.has_condition(job, batch.COMPLETE):
            logger.info("job %s completed", object_key(job))
            self._recorder.event(job, EVENT_NORMAL, "Completed", "Complete", "Job completed")
            return
        cond = batch.find_condition(job, batch.FAILED)
        if cond is not None:
            logger.info("job %s failed: %s", object_key(job), cond.reason)
            self._recorder.event(job, EVENT_WARNING, cond.reason, "Fail", cond.message)

    async def _write_status(
        self, current: types_pb2.Job, status: types_pb2.JobStatus
    ) -> types_pb2.Job:
        """One status write pinned to the resourceVersion the sync read: a Conflict means a
        newer Job the next sync reads (upstream updateJobStatus)."""
        new = types_pb2.Job()
        new.CopyFrom(current)
        new.status.CopyFrom(status)
        written = await self._client.update_status(new)
        self._written.wrote(object_key(written), written)
        return written

    async def _remove_finalizers(self, key: str, pods: list[types_pb2.Pod]) -> set[str]:
        """Removes the tracking finalizer from `pods`; the uids whose removal succeeded (or
        whose pod is gone). The first error is raised after every pod was tried."""
        if not pods:
            return set()
        self._finalizer_expectations.expect_removals(key, (p.metadata.uid for p in pods))
        removed: set[str] = set()
        errors: list[ApiError] = []

        async def remove(pod: types_pb2.Pod) -> None:
            try:
                await remove_tracking_finalizer(self._client, pod)
                removed.add(pod.metadata.uid)
            except NotFound:
                removed.add(pod.metadata.uid)
                self._finalizer_expectations.removal_observed(key, pod.metadata.uid)
            except ApiError as e:
                self._finalizer_expectations.removal_observed(key, pod.metadata.uid)
                errors.append(e)

        async with anyio.create_task_group() as tg:
            for pod in pods:
                tg.start_soon(remove, pod)
        if errors:
            raise errors[0]
        return removed


async def remove_tracking_finalizer(client: ApiClient, pod: types_pb2.Pod) -> None:
    """A merge patch of the pod's finalizers without the job-tracking one, pinned to the
    resourceVersion; on a Conflict the pod is read again (same uid) and the patch retried."""
    current = pod
    for attempt in range(FINALIZER_PATCH_RETRIES):
        finalizers = [f for f in current.metadata.finalizers if f != batch.JOB_TRACKING_FINALIZER]
        if len(finalizers) == len(current.metadata.finalizers):
            return
        patch = {
            "metadata": {
                "finalizers": finalizers or None,
                "resourceVersion": current.metadata.resource_version,
            }
        }
        try:
            await client.patch(
                types_pb2.Pod, current.metadata.name, patch, current.metadata.namespace
            )
            return
        except Conflict:
            if attempt == FINALIZER_PATCH_RETRIES - 1:
                raise
        current = await client.get(types_pb2.Pod, pod.metadata.name, pod.metadata.namespace)
        if current.metadata.uid != pod.metadata.uid:
            raise NotFound(f'pods "{pod.metadata.name}" not found')
