"""The Job controller (upstream pkg/controller/job): runs a Job's pods to completion.

A sync of one Job (upstream syncJob, NonIndexed completion mode):
- claims the pods of its namespace its selector matches (adopting and releasing as the
  ReplicaSet controller does); a Job that is finished is left alone;
- counts them: active (not finished, not being deleted), terminating (being deleted, not
  finished), ready; succeeded and failed are `status.succeeded/failed` plus the uids in
  `status.uncountedTerminatedPods` plus the pods that finished since and still carry the
  `batch.kubernetes.io/job-tracking` finalizer every pod gets at creation;
- decides whether the Job is done: failed more than `backoffLimit` times (reason
  BackoffLimitExceeded) or active longer than `activeDeadlineSeconds` since `startTime`
  (DeadlineExceeded): the interim condition FailureTarget is written and the active pods are
  deleted; `completions` pods succeeded with none active (or, without completions, one
  succeeded and none active): SuccessCriteriaMet. The final condition (Failed, or Complete
  with `completionTime`) follows once no pod is uncounted or terminating, as upstream since
  the terminal conditions are delayed (JobPodReplacementPolicy/JobManagedBy);
- otherwise, when its expectations are satisfied, keeps min(parallelism, completions -
  succeeded) pods active: creations in slow-start batches (at most 500 a sync), delayed by the
  pod-failure backoff after failures (10 s doubling, at most 10 min); surplus active pods are
  deleted in the ReplicaSet controller's deletion order; a suspended Job (spec.suspend) has
  every active pod deleted and the condition Suspended, and resuming resets `startTime`;
  pods being deleted are replaced at once under the default podReplacementPolicy
  TerminatingOrFailed (and counted as failed), only once Failed under `Failed`;
- tracks finished pods as upstream's two-phase commit, so that a restarted controller never
  counts a pod twice nor loses one: the uids of newly finished pods are first written to
  `status.uncountedTerminatedPods`, then their finalizers are removed, then (same sync) the
  uids whose pods no longer hold the finalizer move into the counters. A sync waits until the
  Job informer shows the controller's last status write (tracking_utils.WrittenVersions): an older
  copy lacks the pods whose finalizers that write let go, and counting from it would start a
  surplus pod.

Split as upstream's pkg/controller/job: this module (job_controller.go: handlers, syncJob,
manageJob's creations and deletions as JobPodManager), tracking_utils.py (the tracking of
finished pods: the writes above), backoff_utils.py (the pod-failure backoff), utils.py (the
pod predicates and the condition helper).

Pods that keep the finalizer while their Job is gone or finished (a Job deleted with its pods
running: the garbage collector deletes them, and their finalizer must go) have it removed by a
second queue of pod keys (upstream's orphan pod handling).

Indexed completion mode as indexed_job_utils.py says; with WorkloadWithJob, a Job gets its
Workload and PodGroup before its first pod (1.36: a gang-eligible Indexed Job; 1.37: every
Job without a parent, from spec.scheduling) and its pods name the PodGroup
(scheduling_manager.py).

Not modelled: status.completedIndexes, podFailurePolicy, successPolicy, backoffLimitPerIndex,
managedBy, the elastic-indexed exceptions; restart counts under restartPolicy OnFailure (kemu's
kubelet does not restart containers). `ttlSecondsAfterFinished` is stored but no
ttl-after-finished controller deletes finished Jobs.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from controllermanager.controller import ControllerContext, Syncing, run_controller, workers
from controllermanager.controller_utils import (
    ControllerExpectations,
    ControllerRefManager,
    PodControl,
    index_by_controller_uid,
    is_pod_active,
    new_controller_ref,
    owner_selector,
    owners_selecting,
    pods_to_delete,
    recheck_owner,
    resolve_controller_ref,
    run_slow_start,
)
from controllermanager.job.backoff_utils import BackoffStore
from controllermanager.job.indexed_job_utils import (
    indexed_template,
    indexes_to_create,
    pod_generate_name_with_index,
)
from controllermanager.job.scheduling_manager import JobSchedulingManager
from controllermanager.job.tracking_utils import (
    FinalizerExpectations,
    FinishedPodTracker,
    SyncJobCtx,
    WrittenVersions,
    remove_tracking_finalizer,
)
from controllermanager.job.utils import (
    ensure_condition,
    has_tracking_finalizer,
    is_pod_failed,
    is_pod_terminating,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.component.featuregate import WORKLOAD_WITH_JOB, FeatureGates
from kemu.component.version_rules import VersionRules
from kemu.machinery import batch
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import BY_KIND, EVENT_NORMAL
from kemu.machinery.labels import Selector
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_conditions import is_pod_ready

logger = logging.getLogger(__name__)

NAME: Final = "job"
DEFAULT_WORKERS: Final = 5
MAX_POD_CREATE_DELETE_PER_SYNC: Final = 500

MESSAGE_BACKOFF: Final = "Job has reached the specified backoff limit"
MESSAGE_DEADLINE: Final = "Job was active longer than specified deadline"
MESSAGE_COMPLETIONS: Final = "Reached expected number of succeeded pods"


def _wanted_active(job: types_pb2.Job, succeeded: int, active: int) -> int:
    """upstream manageJob: parallelism, at most the completions still missing; a work queue
    (no completions) starts no new pod after its first success."""
    parallelism = job.spec.parallelism
    if not job.spec.HasField("completions"):
        return active if succeeded > 0 else parallelism
    return max(0, min(job.spec.completions - succeeded, parallelism))


def count_pods(
    job: types_pb2.Job, pods: list[types_pb2.Pod], expected_removals: frozenset[str]
) -> SyncJobCtx:
    """The claimed pods counted: active, terminating, and succeeded and failed as the status
    counters plus the uncounted uids plus the pods that finished since and still carry the
    tracking finalizer (those not already expected to lose it)."""
    uncounted = job.status.uncounted_terminated_pods
    ctx = SyncJobCtx(
        job=job,
        pods=pods,
        active_pods=[p for p in pods if is_pod_active(p)],
        succeeded=0,
        failed=0,
        terminating=sum(1 for p in pods if is_pod_terminating(p)),
        expected_removals=expected_removals,
    )
    counted_s, counted_f = set(uncounted.succeeded), set(uncounted.failed)
    for p in pods:
        uid = p.metadata.uid
        if not has_tracking_finalizer(p) or uid in expected_removals:
            continue
        if uid in counted_s or uid in counted_f:
            continue
        if p.status.phase == "Succeeded":
            ctx.new_succeeded.append(p)
        elif is_pod_failed(p, job):
            ctx.new_failed.append(p)
    ctx.succeeded = job.status.succeeded + len(counted_s) + len(ctx.new_succeeded)
    ctx.failed = job.status.failed + len(counted_f) + len(ctx.new_failed)
    return ctx


def past_failure_limits(
    ctx: SyncJobCtx, now: float
) -> tuple[tuple[str, str, str] | None, float | None]:
    """The interim condition the Job already carries, or the one its backoffLimit or
    activeDeadlineSeconds calls for (upstream pastBackoffLimitOnFailure,
    pastActiveDeadline); and, while the deadline is ahead, the seconds until it passes."""
    job = ctx.job
    for type_ in (batch.SUCCESS_CRITERIA_MET, batch.FAILURE_TARGET):
        cond = batch.find_condition(job, type_)
        if cond is not None and cond.status == "True":
            return (type_, cond.reason, cond.message), None
    if ctx.failed > job.spec.backoff_limit:
        return (batch.FAILURE_TARGET, batch.REASON_BACKOFF_LIMIT_EXCEEDED, MESSAGE_BACKOFF), None
    if not job.spec.HasField("active_deadline_seconds") or batch.is_suspended(job):
        return None, None
    if not job.status.HasField("start_time"):
        return None, None
    start = job.status.start_time.seconds + job.status.start_time.nanos / 1e9
    remaining = job.spec.active_deadline_seconds - (now - start)
    if remaining <= 0:
        return (batch.FAILURE_TARGET, batch.REASON_DEADLINE_EXCEEDED, MESSAGE_DEADLINE), None
    return None, remaining


def update_suspend_condition(job: types_pb2.Job, now: float, recorder: EventRecorder) -> bool:
    """The Suspended condition after a managed sync; resuming restarts startTime."""
    ts = timestamp(now)
    if batch.is_suspended(job):
        changed = ensure_condition(
            job.status, batch.SUSPENDED, "True", batch.REASON_JOB_SUSPENDED, "Job suspended", ts
        )
        if changed:
            recorder.event(job, EVENT_NORMAL, "Suspended", "Suspend", "Job suspended")
        return changed
    changed = ensure_condition(
        job.status, batch.SUSPENDED, "False", batch.REASON_JOB_RESUMED, "Job resumed", ts
    )
    if changed:
        recorder.event(job, EVENT_NORMAL, "Resumed", "Resume", "Job resumed")
        # activeDeadlineSeconds counts continuous activity: it starts again.
        job.status.start_time.CopyFrom(ts)
    return changed


class JobPodManager:
    """upstream manageJob and its deletions: creates or deletes pods towards the wanted active
    count, under the controller's expectations (shared with its event handlers)."""

    def __init__(
        self,
        pod_control: PodControl,
        expectations: ControllerExpectations,
        clock: Clock,
        queue: WorkQueue,
    ) -> None:
        self._pod_control = pod_control
        self._expectations = expectations
        self._clock = clock
        self._queue = queue

    async def manage(
        self, key: str, ctx: SyncJobCtx, pod_group: types_pb2.PodGroup | None = None
    ) -> tuple[int, ApiError | None]:
        """upstream manageJob: the number of active pods after creating or deleting; new
        pods name `pod_group` in spec.schedulingGroup (WorkloadWithJob)."""
        job = ctx.job
        active = len(ctx.active_pods)
        if batch.is_suspended(job):
            deleted, error = await self.delete_pods(job, ctx.active_pods)
            ctx.terminating += deleted
            return active - deleted, error
        want = _wanted_active(job, ctx.succeeded, active)
        if active > want:
            victims = pods_to_delete(
                ctx.active_pods,
                [],
                min(active - want, MAX_POD_CREATE_DELETE_PER_SYNC),
                self._clock.now(),
            )
            deleted, error = await self.delete_pods(job, victims)
            ctx.terminating += deleted
            return active - deleted, error
        diff = want - active
        if job.spec.pod_replacement_policy == batch.FAILED_POLICY:
            diff -= ctx.terminating
        if diff <= 0:
            return active, None
        wait = ctx.backoff.remaining(self._clock.now())
        if wait > 0:
            logger.info("job %s: backing off %.1fs before creating pods", key, wait)
            self._queue.add_after(key, wait)
            return active, None
        count = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int] = []
        if job.spec.completion_mode == batch.INDEXED:
            indexes = indexes_to_create(job.spec.completions, ctx.pods, count)
            count = len(indexes)
            if count == 0:
                return active, None
        self._expectations.expect_creations(key, count)
        template = types_pb2.PodTemplateSpec()
        template.CopyFrom(job.spec.template)
        if batch.JOB_TRACKING_FINALIZER not in template.metadata.finalizers:
            template.metadata.finalizers.append(batch.JOB_TRACKING_FINALIZER)
        if pod_group is not None:
            template.spec.scheduling_group.pod_group_name = pod_group.metadata.name
        ref = new_controller_ref(job)
        pending = iter(indexes)

        async def create() -> None:
            index = next(pending, None)
            if index is None:
                await self._pod_control.create_pods(template, job, ref)
                return
            await self._pod_control.create_pods(
                indexed_template(template, job.metadata.name, index),
                job,
                ref,
                generate_name=pod_generate_name_with_index(job.metadata.name, index),
            )

        logger.info("job %s: creating %d pods (%d active, %d wanted)", key, count, active, want)
        created, error = await run_slow_start(count, create)
        for _ in range(count - created):
            self._expectations.creation_observed(key)
        return active + created, error

    async def delete_pods(
        self, job: types_pb2.Job, pods: list[types_pb2.Pod]
    ) -> tuple[int, ApiError | None]:
        """Deletes pods (expecting their deletions): how many went, and the first error."""
        if not pods:
            return 0, None
        key = object_key(job)
        self._expectations.expect_deletions(key, (object_key(p) for p in pods))
        errors: list[ApiError] = []
        deleted = [0]

        async def delete(pod: types_pb2.Pod) -> None:
            try:
                await self._pod_control.delete_pod(pod.metadata.namespace, pod.metadata.name, job)
                deleted[0] += 1
            except ApiError as e:
                self._expectations.deletion_observed(key, object_key(pod))
                if isinstance(e, NotFound):
                    deleted[0] += 1
                else:
                    errors.append(e)

        async with anyio.create_task_group() as tg:
            for pod in pods:
                tg.start_soon(delete, pod)
        return deleted[0], errors[0] if errors else None


class JobController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
        gates: FeatureGates | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._workers = workers
        self._recorder = recorder or EventRecorder(client, "job-controller", clock=clock)
        self.expectations = ControllerExpectations(clock)
        self.finalizer_expectations = FinalizerExpectations()
        self.written = WrittenVersions()
        self.backoff = BackoffStore()
        self.pod_control = PodControl(client, self._recorder)
        self._tracker = FinishedPodTracker(
            client,
            clock,
            self._recorder,
            finalizer_expectations=self.finalizer_expectations,
            written=self.written,
            backoff=self.backoff,
        )
        self.queue = WorkQueue(clock, name=NAME)
        self.orphan_queue = WorkQueue(clock, name=f"{NAME}-orphan-pods")
        self._pods_manager = JobPodManager(self.pod_control, self.expectations, clock, self.queue)
        self._jobs: Informer[types_pb2.Job] = informers.informer(types_pb2.Job)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_by_controller_uid(self._pods)
        self._scheduling: JobSchedulingManager | None = None
        if gates is not None and gates.enabled(WORKLOAD_WITH_JOB):
            self._scheduling = JobSchedulingManager(
                client,
                informers,
                self._recorder,
                self.queue,
                VersionRules.at(gates.version),
                BY_KIND["Workload"].api_versions_at(gates.version.minor)[0],
            )
        self._jobs.add_event_handler(
            FuncHandler(self._enqueue, self._on_job_update, self._on_job_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, job: types_pb2.Job) -> None:
        self.queue.add(object_key(job))

    def _on_job_update(self, old: types_pb2.Job, new: types_pb2.Job) -> None:
        if old.metadata.uid != new.metadata.uid:
            self._on_job_delete(old)
        self._enqueue(new)
        if batch.is_finished(new):
            self._orphan_pods_of(new)

    def _on_job_delete(self, job: types_pb2.Job) -> None:
        key = object_key(job)
        self.expectations.delete(key)
        self.finalizer_expectations.delete(key)
        self.written.delete(key)
        self.queue.add(key)
        self._orphan_pods_of(job)

    def _orphan_pods_of(self, job: types_pb2.Job) -> None:
        """Queues the pods of a gone or finished Job that still hold the finalizer."""
        for pod in self._pods.lister.by_index("controller-uid", job.metadata.uid):
            if has_tracking_finalizer(pod):
                self.orphan_queue.add(object_key(pod))

    def _resolve(
        self, namespace: str, ref: types_pb2.OwnerReference | None
    ) -> types_pb2.Job | None:
        return resolve_controller_ref(self._jobs.lister, "Job", namespace, ref)

    def _check_orphan(self, pod: types_pb2.Pod) -> types_pb2.Job | None:
        """The pod's Job; a pod with the finalizer whose Job is gone or finished is queued
        for the finalizer's removal."""
        ref = controller_of(pod)
        job = self._resolve(pod.metadata.namespace, ref)
        if has_tracking_finalizer(pod) and (job is None or batch.is_finished(job)):
            if ref is None or ref.kind == "Job":
                self.orphan_queue.add(object_key(pod))
        return job

    def _on_pod_add(self, pod: types_pb2.Pod) -> None:
        if pod.metadata.HasField("deletion_timestamp"):
            self._on_pod_delete(pod)
            return
        ref = controller_of(pod)
        job = self._check_orphan(pod)
        if job is not None:
            key = object_key(job)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        if ref is None:
            for job in self._matching_jobs(pod):
                self._enqueue(job)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        job = self._check_orphan(new)
        if job is not None:
            key = object_key(job)
            if not has_tracking_finalizer(new):
                self.finalizer_expectations.removal_observed(key, new.metadata.uid)
            if new.metadata.HasField("deletion_timestamp"):
                self.expectations.deletion_observed(key, object_key(new))
            self.queue.add(key)
        old_job = self._resolve(old.metadata.namespace, controller_of(old))
        if old_job is not None and (job is None or old_job.metadata.uid != job.metadata.uid):
            self._enqueue(old_job)
        if controller_of(new) is None and old.metadata.labels != new.metadata.labels:
            for match in self._matching_jobs(new):
                self._enqueue(match)

    def _on_pod_delete(self, pod: types_pb2.Pod) -> None:
        job = self._resolve(pod.metadata.namespace, controller_of(pod))
        if job is None:
            self._check_orphan(pod)
            return
        key = object_key(job)
        self.expectations.deletion_observed(key, object_key(pod))
        if not self._pods.lister.get(pod.metadata.name, pod.metadata.namespace):
            # Gone from the API: its finalizer too.
            self.finalizer_expectations.removal_observed(key, pod.metadata.uid)
        self.queue.add(key)

    def _matching_jobs(self, pod: types_pb2.Pod) -> list[types_pb2.Job]:
        return owners_selecting(self._jobs.lister, pod.metadata.namespace, pod.metadata.labels)

    # ------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Syncs Job `key` (see the module docstring); raises an ApiError to be retried."""
        namespace, _, name = key.partition("/")
        stored = self._jobs.lister.get(name, namespace)
        if stored is None:
            self.expectations.delete(key)
            self.finalizer_expectations.delete(key)
            self.written.delete(key)
            self.backoff.remove(key)
            return
        if not self.written.observed(key, stored):
            # The informer has not shown our last status write yet; its update event
            # queues the Job again.
            logger.debug("job %s: waiting for the informer to show the last status write", key)
            return
        if batch.is_finished(stored):
            self.backoff.remove(key)
            return
        job = types_pb2.Job()
        job.CopyFrom(stored)
        selector = owner_selector(job)
        if selector is None:
            logger.warning("job %s: invalid selector, not syncing it", key)
            return
        satisfied = self.expectations.satisfied(key)
        now = self._clock.now()
        if not job.status.HasField("start_time") and not batch.is_suspended(job):
            job.status.start_time.CopyFrom(timestamp(now))
        ctx = await self._context(job, selector)
        self._decide_failure(key, ctx, now)
        active = len(ctx.active_pods)
        manage_error: ApiError | None = None
        suspend_changed = False
        if ctx.finished is not None:
            deleted, manage_error = await self._pods_manager.delete_pods(job, ctx.active_pods)
            active -= deleted
            ctx.terminating += deleted
            if deleted != len(ctx.active_pods):
                ctx.finished = None  # not every pod could be deleted: finish later
        else:
            managed = False
            if satisfied and not job.metadata.HasField("deletion_timestamp"):
                pod_group = None
                if self._scheduling is not None:
                    pod_group = await self._scheduling.ensure(
                        stored, new_controller_ref(job), has_pods=bool(ctx.pods)
                    )
                active, manage_error = await self._pods_manager.manage(key, ctx, pod_group)
                managed = True
            if job.spec.HasField("completions"):
                complete = ctx.succeeded >= job.spec.completions and active == 0
            else:
                complete = ctx.succeeded > 0 and active == 0
            if complete:
                ctx.finished = (
                    batch.SUCCESS_CRITERIA_MET,
                    batch.REASON_COMPLETIONS_REACHED,
                    MESSAGE_COMPLETIONS,
                )
            elif managed:
                suspend_changed = update_suspend_condition(job, now, self._recorder)
        ready = sum(1 for p in ctx.active_pods if is_pod_ready(p) and is_pod_active(p))
        job.status.active = active
        job.status.ready = min(ready, active)
        job.status.terminating = ctx.terminating
        await self._tracker.track_and_flush(key, ctx, stored, force=suspend_changed)
        if manage_error is not None:
            raise manage_error

    async def _context(self, job: types_pb2.Job, selector: Selector) -> SyncJobCtx:
        key = object_key(job)
        candidates = [
            p
            for p in self._pods.lister.list(job.metadata.namespace)
            if has_tracking_finalizer(p) or is_pod_active(p) or controller_of(p) is not None
        ]
        manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
            self._client, job, selector, recheck_owner(self._client, job)
        )
        pods = await manager.claim(candidates)
        ctx = count_pods(job, pods, self.finalizer_expectations.expected(key))
        ctx.backoff = self.backoff.new_record(
            key, ctx.new_succeeded, ctx.new_failed, self._clock.now()
        )
        return ctx

    def _decide_failure(self, key: str, ctx: SyncJobCtx, now: float) -> None:
        ctx.finished, recheck_after = past_failure_limits(ctx, now)
        if recheck_after is not None:
            self.queue.add_after(key, recheck_after)

    # ------------------------------------------------------------ orphan pods

    async def sync_orphan_pod(self, key: str) -> None:
        """Removes the finalizer of a pod whose Job is gone or finished (upstream
        handleOrphanPod)."""
        namespace, _, name = key.partition("/")
        pod = self._pods.lister.get(name, namespace)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = controller_of(pod)
        job = self._resolve(namespace, ref)
        if job is not None and not batch.is_finished(job):
            return
        if ref is not None and job is None:
            # Our cache may be behind: trust the API about the Job's existence.
            try:
                fresh = await self._client.get(types_pb2.Job, ref.name, namespace)
                if fresh.metadata.uid == ref.uid and not batch.is_finished(fresh):
                    return
            except NotFound:
                pass
        try:
            await remove_tracking_finalizer(self._client, pod)
        except NotFound:
            return
        logger.info("removed the tracking finalizer of orphan pod %s", key)

    # ------------------------------------------------------------ workers

    async def _worker(
        self, queue: WorkQueue, sync: Callable[[str], Awaitable[None]], what: str
    ) -> None:
        while (key := await queue.get()) is not None:
            try:
                await sync(key)
            except ApiError as e:
                level = logging.INFO if isinstance(e, Conflict) else logging.WARNING
                logger.log(level, "error syncing %s %s, requeuing: %s", what, key, e)
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
            finally:
                queue.done(key)

    async def run(self) -> None:
        """Syncs Jobs until cancelled; the informers must be running."""

        async def jobs() -> None:
            await self._worker(self.queue, self.sync, "job")

        async def orphans() -> None:
            await self._worker(self.orphan_queue, self.sync_orphan_pod, "orphan pod")

        synced: list[Syncing] = [self._jobs, self._pods]
        if self._scheduling is not None:
            synced += [self._scheduling.workloads, self._scheduling.pod_groups]
        await run_controller(
            "the job controller",
            logger,
            synced=synced,
            queues=(self.queue, self.orphan_queue),
            tasks=[
                ("job events", self._recorder.run),
                *workers("job", self._workers, jobs),
                ("job orphan worker", orphans),
            ],
        )


def new_controller(ctx: ControllerContext) -> JobController:
    """The init function registered as "job"."""
    return JobController(ctx.client, ctx.informers, ctx.clock, gates=ctx.gates)
