"""The CronJob controller (upstream pkg/controller/cronjob/cronjob_controllerv2.go),
registered as "cronjob".

A sync of one CronJob (upstream sync and syncCronJob), on the controller's clock (virtual
time follows: a CronJob is queued again, through the clock, 100 ms after its next schedule
time):
- its Jobs are those whose controller reference names it; a finished Job in status.active is
  removed from it (event SawCompletedJob), the latest completionTime of a succeeded Job is
  status.lastSuccessfulTime, an unfinished Job missing from the list is reported
  (UnexpectedJob), and an active Job gone from the API (read again to be sure) is removed
  (MissingJob);
- nothing is started while the CronJob is being deleted, its timeZone is unknown
  (UnknownTimeZone), it is suspended, or its schedule does not parse (UnparseableSchedule) or
  never fires (InvalidSchedule);
- the most recent unmet schedule time (kemu.machinery.cron, from lastScheduleTime or the
  creation, at most startingDeadlineSeconds back; more than 100 missed is the warning
  TooManyMissedTimes) gets a Job unless it is past its startingDeadlineSeconds
  (MissSchedule), already started, or concurrencyPolicy Forbid finds a Job active
  (JobAlreadyActive); Replace deletes the active Jobs first. The Job is named
  `<cronjob>-<minutes since the epoch>`, so that a second attempt for the same time finds it
  (AlreadyExists: taken into the active list if it is ours). Event SuccessfulCreate; the
  Job goes into status.active and its time into status.lastScheduleTime;
- the history limits: finished Jobs beyond successfulJobsHistoryLimit (default 3) and
  failedJobsHistoryLimit (default 1) are deleted in the background, the oldest start first
  (event SuccessfulDelete).

A schedule or timeZone change queues the CronJob for its new next time. Gates: CronJobTimeZone
(spec.timeZone read; off, every schedule is in the controller's zone, UTC for kemu) and
CronJobsScheduledAnnotation (the Jobs' scheduled-time annotation).
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass
from typing import Final

from controllermanager import cronjob_utils as cu
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import (
    resolve_controller_ref,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.component.featuregate import (
    CRON_JOB_TIME_ZONE,
    CRON_JOBS_SCHEDULED_ANNOTATION,
    FeatureGates,
)
from kemu.machinery import batch
from kemu.machinery.convert import timestamp
from kemu.machinery.cron import CronError, Schedule, load_location, parse_standard
from kemu.machinery.delete_options import BACKGROUND
from kemu.machinery.errors import AlreadyExists, ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.owners import controller_of

logger = logging.getLogger(__name__)

NAME: Final = "cronjob"
DEFAULT_WORKERS: Final = 5


@dataclass(frozen=True)
class CronJobOptions:
    """The gates of the CronJob controller, as values."""

    time_zones: bool = True
    """CronJobTimeZone: spec.timeZone is the schedule's zone."""
    scheduled_annotation: bool = True
    """CronJobsScheduledAnnotation: Jobs carry their scheduled time."""

    @classmethod
    def from_gates(cls, gates: FeatureGates) -> CronJobOptions:
        return cls(
            time_zones=gates.enabled(CRON_JOB_TIME_ZONE),
            scheduled_annotation=gates.enabled(CRON_JOBS_SCHEDULED_ANNOTATION),
        )


@dataclass
class _Result:
    """What syncCronJob decided: its status changes are in the sync's copy."""

    requeue_after: float | None = None
    update_status: bool = False


class JobControl:
    """The CronJob's writes of its Jobs (upstream injection.go's jobControlInterface and the
    controller's deleteJob, cleanupFinishedJobs): the scheduled Job created, active ones
    replaced, finished ones beyond the history limits deleted; each edits the sync's copy of
    the CronJob's status and records its event."""

    def __init__(self, client: ApiClient, options: CronJobOptions, recorder: EventRecorder) -> None:
        self._client = client
        self._options = options
        self._recorder = recorder

    def _event(self, cj: types_pb2.CronJob, type_: str, reason: str, message: str) -> None:
        self._recorder.event(cj, type_, reason, "Sync", message)

    async def replace_active(self, cj: types_pb2.CronJob, result: _Result) -> None:
        """concurrencyPolicy Replace: every active Job is deleted before the new one starts."""
        for ref in list(cj.status.active):
            try:
                job = await self._client.get(types_pb2.Job, ref.name, ref.namespace)
            except ApiError as e:
                self._event(cj, EVENT_WARNING, "FailedGet", f"Get job: {e.message}")
                raise
            if not await self.delete_job(cj, job):
                raise Conflict(f"could not replace job {ref.namespace}/{ref.name}")
            result.update_status = True

    async def start(self, cj: types_pb2.CronJob, scheduled: float) -> bool:
        """Creates the Job of `scheduled` and records it in the status (True), or finds it
        exists already (False, unless it is ours and not in the active list yet)."""
        request = cu.job_from_template(
            cj,
            scheduled,
            scheduled_annotation=self._options.scheduled_annotation,
            time_zones=self._options.time_zones,
        )
        try:
            job = await self._client.create(request)
        except AlreadyExists:
            job = await self._client.get(
                types_pb2.Job, request.metadata.name, cj.metadata.namespace
            )
            ref = controller_of(job)
            if ref is None or ref.uid != cj.metadata.uid:
                return False  # another actor's: it keeps the status
            if cu.in_active_list(cj, job.metadata.uid):
                return False
            logger.info("cronjob %s: job %s already exists", object_key(cj), job.metadata.name)
        except ApiError as e:
            self._event(cj, EVENT_WARNING, "FailedCreate", f"Error creating job: {e.message}")
            raise
        else:
            logger.info(
                "cronjob %s: created job %s for %s",
                object_key(cj),
                job.metadata.name,
                _rfc1123z(scheduled),
            )
            self._event(cj, EVENT_NORMAL, "SuccessfulCreate", f"Created job {job.metadata.name}")
        cj.status.active.append(cu.job_ref(job))
        cj.status.last_schedule_time.CopyFrom(timestamp(scheduled))
        return True

    async def delete_job(self, cj: types_pb2.CronJob, job: types_pb2.Job) -> bool:
        """deleteJob: in the background; removed from the active list. False on an error."""
        try:
            await self._client.delete(
                types_pb2.Job,
                job.metadata.name,
                job.metadata.namespace,
                propagation_policy=BACKGROUND,
            )
        except NotFound:
            pass
        except ApiError as e:
            self._event(cj, EVENT_WARNING, "FailedDelete", f"Deleted job: {e.message}")
            logger.warning(
                "cronjob %s: error deleting job %s: %s", object_key(cj), job.metadata.name, e
            )
            return False
        cu.delete_from_active_list(cj, job.metadata.uid)
        self._event(cj, EVENT_NORMAL, "SuccessfulDelete", f"Deleted job {job.metadata.name}")
        return True

    async def cleanup_finished_jobs(self, cj: types_pb2.CronJob, jobs: list[types_pb2.Job]) -> bool:
        """cleanupFinishedJobs: the history limits (see the module docstring)."""
        limits = (
            (
                batch.COMPLETE,
                cj.spec.successful_jobs_history_limit
                if cj.spec.HasField("successful_jobs_history_limit")
                else cu.DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT,
            ),
            (
                batch.FAILED,
                cj.spec.failed_jobs_history_limit
                if cj.spec.HasField("failed_jobs_history_limit")
                else cu.DEFAULT_FAILED_JOBS_HISTORY_LIMIT,
            ),
        )
        changed = False
        for condition, limit in limits:
            finished = [j for j in jobs if cu.finished_condition(j) == condition]
            surplus = len(finished) - limit
            for job in cu.by_start_time(finished)[: max(0, surplus)]:
                if await self.delete_job(cj, job):
                    changed = True
        return changed


class CronJobController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: CronJobOptions | None = None,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._workers = workers
        self._options = options or CronJobOptions()
        self._recorder = recorder or EventRecorder(client, "cronjob-controller", clock=clock)
        self._job_control = JobControl(client, self._options, self._recorder)
        self.queue = WorkQueue(clock, name=NAME)
        self._cronjobs: Informer[types_pb2.CronJob] = informers.informer(types_pb2.CronJob)
        self._jobs: Informer[types_pb2.Job] = informers.informer(types_pb2.Job)
        self._cronjobs.add_event_handler(
            FuncHandler(self._enqueue, self._on_cronjob_update, self._enqueue)
        )
        self._jobs.add_event_handler(
            FuncHandler(self._on_job_add, self._on_job_update, self._on_job_delete)
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, cj: types_pb2.CronJob) -> None:
        self.queue.add(object_key(cj))

    def _on_cronjob_update(self, old: types_pb2.CronJob, new: types_pb2.CronJob) -> None:
        """updateCronJob: a new schedule or zone queues the CronJob for its next time."""
        zone_changed = old.spec.HasField("time_zone") != new.spec.HasField("time_zone") or (
            old.spec.time_zone != new.spec.time_zone
        )
        if old.spec.schedule == new.spec.schedule and not zone_changed:
            self._enqueue(new)
            return
        try:
            schedule = parse_standard(cu.format_schedule(new, self._options.time_zones))
        except CronError as e:
            self._recorder.event(
                new,
                EVENT_WARNING,
                "UnParseableCronJobSchedule",
                "Sync",
                f"unparseable schedule for cronjob: {new.spec.schedule}: {e}",
            )
            return
        delay = cu.next_schedule_delay(new, self._clock.now(), schedule)
        if delay is not None:
            self.queue.add_after(object_key(new), delay)

    def _resolve(self, job: types_pb2.Job) -> types_pb2.CronJob | None:
        ref = controller_of(job)
        return resolve_controller_ref(self._cronjobs.lister, "CronJob", job.metadata.namespace, ref)

    def _on_job_add(self, job: types_pb2.Job) -> None:
        cj = self._resolve(job)
        if cj is not None:
            self._enqueue(cj)

    def _on_job_update(self, old: types_pb2.Job, new: types_pb2.Job) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        old_cj, cj = self._resolve(old), self._resolve(new)
        if old_cj is not None and (cj is None or old_cj.metadata.uid != cj.metadata.uid):
            self._enqueue(old_cj)
        if cj is not None:
            self._enqueue(cj)

    def _on_job_delete(self, job: types_pb2.Job) -> None:
        cj = self._resolve(job)
        if cj is not None:
            self._enqueue(cj)

    # ------------------------------------------------------------ sync

    def _jobs_of(self, cj: types_pb2.CronJob) -> list[types_pb2.Job]:
        """getJobsToBeReconciled: the Jobs whose controller reference names the CronJob."""
        out = []
        for job in self._jobs.lister.list(cj.metadata.namespace):
            ref = controller_of(job)
            if ref is not None and ref.name == cj.metadata.name:
                out.append(job)
        return out

    async def sync(self, key: str) -> None:
        """Syncs CronJob `key` (see the module docstring); an ApiError is retried."""
        namespace, _, name = key.partition("/")
        cached = self._cronjobs.lister.get(name, namespace)
        if cached is None:
            return
        cj = types_pb2.CronJob()
        cj.CopyFrom(cached)
        jobs = self._jobs_of(cj)
        result = _Result()
        error: ApiError | None = None
        try:
            await self._sync_cronjob(cj, jobs, result)
        except ApiError as e:
            error = e
        if await self._job_control.cleanup_finished_jobs(cj, jobs):
            result.update_status = True
        if result.update_status:
            await self._client.update_status(cj)
        if result.requeue_after is not None:
            self.queue.add_after(key, result.requeue_after)
        if error is not None:
            raise error

    async def _sync_cronjob(
        self, cj: types_pb2.CronJob, jobs: list[types_pb2.Job], result: _Result
    ) -> None:
        """syncCronJob: edits `cj`'s status (the sync's copy) and `result`."""
        if cj.metadata.HasField("deletion_timestamp"):
            return
        now = self._clock.now()
        await self._reconcile_active(cj, jobs, result)
        schedule = self._schedule(cj)
        if schedule is None:
            return
        scheduled = self._unmet_schedule_time(cj, now, schedule, result)
        if scheduled is None:
            return
        result.requeue_after = None  # upstream's error and AlreadyExists paths: none
        if cj.spec.concurrency_policy == cu.REPLACE:
            await self._job_control.replace_active(cj, result)
        if await self._job_control.start(cj, scheduled):
            result.update_status = True
            result.requeue_after = cu.next_schedule_delay(cj, now, schedule)

    def _schedule(self, cj: types_pb2.CronJob) -> Schedule | None:
        """The CronJob's parsed schedule; None (with its event) when its time zone is unknown,
        it is suspended or its schedule does not parse."""
        opts = self._options
        if opts.time_zones and cj.spec.HasField("time_zone"):
            try:
                load_location(cj.spec.time_zone)
            except CronError as e:
                message = f'invalid timeZone: "{cj.spec.time_zone}": {e}'
                self._event(cj, EVENT_WARNING, "UnknownTimeZone", message)
                return None
        if cj.spec.HasField("suspend") and cj.spec.suspend:
            logger.debug("cronjob %s: suspended, not starting a job", object_key(cj))
            return None
        if "TZ" in cj.spec.schedule:
            self._event(
                cj,
                EVENT_WARNING,
                "UnsupportedSchedule",
                f'CRON_TZ or TZ used in schedule "{cj.spec.schedule}" is not officially '
                "supported, see https://kubernetes.io/docs/concepts/workloads/controllers/"
                "cron-jobs/ for more details",
            )
        try:
            return parse_standard(cu.format_schedule(cj, opts.time_zones))
        except CronError as e:
            self._event(
                cj,
                EVENT_WARNING,
                "UnparseableSchedule",
                f'unparseable schedule: "{cj.spec.schedule}" : {e}',
            )
            return None

    def _unmet_schedule_time(
        self, cj: types_pb2.CronJob, now: float, schedule: Schedule, result: _Result
    ) -> float | None:
        """The scheduled time to start a Job for now (result.requeue_after set to the next
        one); None when there is none, it was missed past startingDeadlineSeconds, its Job is
        already started, or concurrencyPolicy Forbid finds a Job active."""
        try:
            scheduled, missed = cu.next_schedule_time(cj, now, schedule)
        except CronError as e:
            self._event(
                cj, EVENT_WARNING, "InvalidSchedule", f"invalid schedule: {cj.spec.schedule} : {e}"
            )
            return None
        if missed is cu.Missed.MANY:
            self._event(
                cj,
                EVENT_WARNING,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                "or check clock skew",
            )
            logger.info("cronjob %s: too many missed times", object_key(cj))
        result.requeue_after = cu.next_schedule_delay(cj, now, schedule)
        if scheduled is None:
            logger.debug("cronjob %s: no unmet start time", object_key(cj))
            return None
        if cj.spec.HasField("starting_deadline_seconds") and (
            scheduled + cj.spec.starting_deadline_seconds < now
        ):
            self._event(
                cj,
                EVENT_WARNING,
                "MissSchedule",
                f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}",
            )
            return None
        name = cu.job_name(cj, scheduled)
        if cu.in_active_list_by_name(cj, cj.metadata.namespace, name) or (
            cj.status.HasField("last_schedule_time")
            and cu.seconds(cj.status.last_schedule_time) == scheduled
        ):
            return None
        if cj.spec.concurrency_policy == cu.FORBID and cj.status.active:
            self._event(
                cj,
                EVENT_NORMAL,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy "
                "is Forbid",
            )
            return None
        return scheduled

    async def _reconcile_active(
        self, cj: types_pb2.CronJob, jobs: list[types_pb2.Job], result: _Result
    ) -> None:
        children = {job.metadata.uid for job in jobs}
        for job in jobs:
            found = cu.in_active_list(cj, job.metadata.uid)
            finished = cu.finished_condition(job)
            if not found and finished is None:
                fresh = await self._client.get(
                    types_pb2.CronJob, cj.metadata.name, cj.metadata.namespace
                )
                if cu.in_active_list(fresh, job.metadata.uid):
                    cj.CopyFrom(fresh)
                    continue
                self._event(
                    cj,
                    EVENT_WARNING,
                    "UnexpectedJob",
                    f"Saw a job that the controller did not create or forgot: {job.metadata.name}",
                )
            elif found and finished is not None:
                cu.delete_from_active_list(cj, job.metadata.uid)
                self._event(
                    cj,
                    EVENT_NORMAL,
                    "SawCompletedJob",
                    f"Saw completed job: {job.metadata.name}, condition: {finished}",
                )
                result.update_status = True
            if finished == batch.COMPLETE and job.status.HasField("completion_time"):
                done = job.status.completion_time
                if not cj.status.HasField("last_successful_time") or cu.seconds(done) > cu.seconds(
                    cj.status.last_successful_time
                ):
                    cj.status.last_successful_time.CopyFrom(done)
                    result.update_status = True
        for ref in list(cj.status.active):
            if ref.uid in children:
                continue
            try:
                await self._client.get(types_pb2.Job, ref.name, ref.namespace)
            except NotFound:
                self._event(cj, EVENT_NORMAL, "MissingJob", f"Active job went missing: {ref.name}")
                cu.delete_from_active_list(cj, ref.uid)
                result.update_status = True

    def _event(self, cj: types_pb2.CronJob, type_: str, reason: str, message: str) -> None:
        self._recorder.event(cj, type_, reason, "Sync", message)

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing cronjob", logger)

    async def run(self) -> None:
        """Syncs CronJobs until cancelled; the informers must be running."""
        await run_controller(
            "the cronjob controller",
            logger,
            synced=(self._cronjobs, self._jobs),
            queues=(self.queue,),
            tasks=[
                ("cronjob events", self._recorder.run),
                *workers("cronjob", self._workers, self._worker),
            ],
        )


def _rfc1123z(t: float) -> str:
    """Go's time.RFC1123Z in UTC: "Mon, 02 Jan 2006 15:04:05 -0700"."""
    return dt.datetime.fromtimestamp(int(t), dt.UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def new_controller(ctx: ControllerContext) -> CronJobController:
    """The init function registered as "cronjob"."""
    return CronJobController(
        ctx.client, ctx.informers, ctx.clock, options=CronJobOptions.from_gates(ctx.gates)
    )
