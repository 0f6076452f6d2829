"""What the CronJob controller computes without I/O (upstream pkg/controller/cronjob/utils.go).

- `most_recent_schedule_time`: from the later of creationTimestamp and
  status.lastScheduleTime (and, when asked, now - startingDeadlineSeconds), the most recent
  schedule time not after now, and how many were missed (more than 100: "too many", which
  upstream reports as the event TooManyMissedTimes and still starts the most recent one).
- `next_schedule_time`: the unmet schedule time a sync should start a Job for, if any;
  `next_schedule_delay`: how long until the sync after (the next schedule time + 100 ms).
- `job_from_template`: the Job of one scheduled time: named `<cronjob>-<minutes since the
  epoch>`, the jobTemplate's labels and annotations (with CronJobsScheduledAnnotation the
  scheduled time in RFC 3339, in the CronJob's zone, under
  `batch.kubernetes.io/cronjob-scheduled-timestamp`), a controller reference, the template's
  spec.
- `format_schedule`: the schedule with spec.timeZone prepended as `TZ=<zone> ` (CronJobTimeZone).
- active-list helpers, and the jobs' order for the history limits (by status.startTime,
  unset last, then name).
"""

from __future__ import annotations

import datetime as dt
import enum
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from controllermanager.controller_utils import new_controller_ref
from kemu.api.v1 import types_pb2
from kemu.machinery import batch
from kemu.machinery.cron import CronError, Schedule, load_location

SCHEDULED_TIMESTAMP_ANNOTATION: Final = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA: Final = 0.1
"""Upstream's nextScheduleDelta: a sync is queued this long after the schedule time."""
TOO_MANY_MISSED: Final = 100
ALLOW: Final = "Allow"
FORBID: Final = "Forbid"
REPLACE: Final = "Replace"
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: Final = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT: Final = 1


class Missed(enum.Enum):
    NONE = "none"
    FEW = "few"
    MANY = "many"


def seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


@dataclass(frozen=True)
class MostRecent:
    earliest: float
    most_recent: float | None
    missed: Missed


def most_recent_schedule_time(
    cj: types_pb2.CronJob, now: float, schedule: Schedule, *, starting_deadline: bool
) -> MostRecent:
    """mostRecentScheduleTime. CronError when two consecutive schedule times are less than a
    second apart or the schedule never fires (robfig's zero time, e.g. "0 0 30 2 *")."""
    earliest = seconds(cj.metadata.creation_timestamp)
    if cj.status.HasField("last_schedule_time"):
        earliest = seconds(cj.status.last_schedule_time)
    if starting_deadline and cj.spec.HasField("starting_deadline_seconds"):
        earliest = max(earliest, now - cj.spec.starting_deadline_seconds)
    t1 = schedule.next(earliest)
    if t1 is not None and now < t1:
        return MostRecent(earliest, None, Missed.NONE)
    t2 = None if t1 is None else schedule.next(t1)
    if t1 is not None and t2 is not None and now < t2:
        return MostRecent(earliest, t1, Missed.NONE)
    # Upstream's zero time (a schedule that never fires) makes the difference 0.
    between = 0 if t1 is None or t2 is None else round(t2 - t1)
    if t1 is None or between < 1:
        raise CronError("time difference between two schedules is less than 1 second")
    elapsed = int(now - t1)
    missed_count = elapsed // between + 1
    # Back from a rough count of missed times to let the schedule find the exact last one.
    t: float | None = schedule.next(t1 + (missed_count - 2) * between)
    most_recent: float | None = None
    while t is not None and t <= now:
        most_recent = t
        t = schedule.next(t)
    missed = Missed.MANY if missed_count > TOO_MANY_MISSED else Missed.FEW
    return MostRecent(earliest, most_recent, missed)


def next_schedule_time(
    cj: types_pb2.CronJob, now: float, schedule: Schedule
) -> tuple[float | None, Missed]:
    """nextScheduleTime: the unmet schedule time to start a Job for (None: none), and how many
    were missed. CronError as most_recent_schedule_time."""
    found = most_recent_schedule_time(cj, now, schedule, starting_deadline=True)
    if found.most_recent is None or found.most_recent > now:
        return None, found.missed
    return found.most_recent, found.missed


def next_schedule_delay(cj: types_pb2.CronJob, now: float, schedule: Schedule) -> float | None:
    """nextScheduleTimeDuration: seconds until the sync after the next schedule time (None:
    the schedule never fires again)."""
    try:
        found = most_recent_schedule_time(cj, now, schedule, starting_deadline=False)
        base = found.most_recent if found.most_recent is not None else found.earliest
    except CronError:
        base = now
    nxt = schedule.next(base)
    if nxt is None:
        return None
    return nxt + NEXT_SCHEDULE_DELTA - now


def format_schedule(cj: types_pb2.CronJob, time_zones: bool) -> str:
    """formatSchedule: the schedule as written when it names a zone itself ("TZ" in it: the
    caller warns) or has no spec.timeZone; else `TZ=<zone> <schedule>` (CronJobTimeZone)."""
    text = cj.spec.schedule
    if "TZ" in text or not time_zones or not cj.spec.HasField("time_zone"):
        return text
    try:
        load_location(cj.spec.time_zone)
    except CronError:
        return text
    return f"TZ={cj.spec.time_zone} {text}"


def job_name(cj: types_pb2.CronJob, scheduled: float) -> str:
    """getJobName: `<cronjob>-<scheduled time in minutes since the epoch>`."""
    return f"{cj.metadata.name}-{math.floor(scheduled) // 60}"


def scheduled_timestamp(scheduled: float, zone: str) -> str:
    """The scheduled time as Go's RFC 3339 in the zone ("Z" for UTC)."""
    t = dt.datetime.fromtimestamp(math.floor(scheduled), load_location(zone))
    text = t.isoformat()
    return text.replace("+00:00", "Z") if t.utcoffset() == dt.timedelta(0) else text


def job_from_template(
    cj: types_pb2.CronJob, scheduled: float, *, scheduled_annotation: bool, time_zones: bool
) -> types_pb2.Job:
    """getJobFromTemplate2 (see the module docstring)."""
    job = types_pb2.Job()
    template = cj.spec.job_template
    job.metadata.name = job_name(cj, scheduled)
    job.metadata.namespace = cj.metadata.namespace
    job.metadata.labels.update(template.metadata.labels)
    job.metadata.annotations.update(template.metadata.annotations)
    if scheduled_annotation:
        zone = cj.spec.time_zone if time_zones and cj.spec.HasField("time_zone") else ""
        job.metadata.annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = scheduled_timestamp(
            scheduled, zone
        )
    job.metadata.owner_references.append(new_controller_ref(cj))
    job.spec.CopyFrom(template.spec)
    return job


# ---------------------------------------------------------------- the active list


def in_active_list(cj: types_pb2.CronJob, uid: str) -> bool:
    return any(ref.uid == uid for ref in cj.status.active)


def in_active_list_by_name(cj: types_pb2.CronJob, namespace: str, name: str) -> bool:
    return any(ref.name == name and ref.namespace == namespace for ref in cj.status.active)


def delete_from_active_list(cj: types_pb2.CronJob, uid: str) -> None:
    kept = [ref for ref in cj.status.active if ref.uid != uid]
    del cj.status.active[:]
    cj.status.active.extend(kept)


def job_ref(job: types_pb2.Job) -> types_pb2.ObjectReference:
    """getRef: an ObjectReference to the Job."""
    return types_pb2.ObjectReference(
        kind="Job",
        api_version="batch/v1",
        namespace=job.metadata.namespace,
        name=job.metadata.name,
        uid=job.metadata.uid,
        resource_version=job.metadata.resource_version,
    )


def finished_condition(job: types_pb2.Job) -> str | None:
    """getFinishedStatus: Complete or Failed (a True condition), None while it runs."""
    for c in job.status.conditions:
        if c.type in (batch.COMPLETE, batch.FAILED) and c.status == "True":
            return c.type
    return None


def by_start_time(jobs: Sequence[types_pb2.Job]) -> list[types_pb2.Job]:
    """byJobStartTime: the earliest status.startTime first, Jobs without one last, then by
    name."""

    def key(job: types_pb2.Job) -> tuple[int, float, str]:
        if job.status.HasField("start_time"):
            return 0, seconds(job.status.start_time), job.metadata.name
        return 1, 0.0, job.metadata.name

    return sorted(jobs, key=key)
