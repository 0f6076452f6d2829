"""batch/v1 CronJobs: upstream's pkg/apis/batch/validation ValidateCronJob(Create|Update), and
the schedule check of robfig/cron/v3's standard parser (ParseStandard: five fields, or a
descriptor such as @daily or @every 1h), which upstream validates a schedule with."""

from __future__ import annotations

import re
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import batch
from kemu.machinery.cron import CronError, load_location, parse_standard
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import invalid, not_supported, required
from kemu.machinery.validation.meta import validate_object_meta
from kemu.machinery.validation.workloads import (
    _validate_nonnegative,
    validate_job_spec_fields,
    validate_pod_template,
)

_MAX_NAME: Final = 52
"""A CronJob's name leaves 11 characters of a DNS-1035 label for its Jobs' suffix."""
_JOB_RESTART_POLICIES: Final = ("OnFailure", "Never")
_TIME_ZONE_CHARS: Final = re.compile(r"^[A-Za-z\.\-_0-9+]{1,14}$")
"""validTimeZoneCharacters: each path element of an IANA name."""


def _validate_time_zone(tz: str, path: str) -> list[Cause]:
    """validateTimeZone: non-empty, IANA characters per path element, not Local, a zone the
    tz database has."""
    if not tz:
        return [invalid(path, tz, "timeZone must be nil or non-empty string")]
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TIME_ZONE_CHARS.fullmatch(part):
            return [invalid(path, tz, f"unknown time zone {tz}")]
    if tz.lower() == "local":
        return [
            invalid(
                path,
                tz,
                "timeZone must be an explicit time zone as defined in "
                "https://www.iana.org/time-zones",
            )
        ]
    try:
        load_location(tz)
    except CronError as e:
        return [invalid(path, tz, str(e))]
    return []


def _validate_job_template(template: types_pb2.JobTemplateSpec) -> list[Cause]:
    """ValidateJobTemplateSpec at spec.jobTemplate: the job spec's fields and pod template
    (restartPolicy OnFailure or Never); no selector (the Job's is generated), no
    manualSelector."""
    path = "spec.jobTemplate.spec"
    spec = template.spec
    causes = validate_job_spec_fields(spec, path)
    causes.extend(validate_pod_template(spec.template, f"{path}.template", _JOB_RESTART_POLICIES))
    if spec.HasField("selector"):
        causes.append(invalid(f"{path}.selector", "", "`selector` will be auto-generated"))
    if spec.HasField("manual_selector") and spec.manual_selector:
        causes.append(not_supported(f"{path}.manualSelector", True, ["nil", "false"]))
    return causes


def _validate_tz_in_schedule(schedule: str, time_zone: bool, *, allowed: bool) -> list[Cause]:
    """validateScheduleFormat's TZ rule: TZ or CRON_TZ in a schedule only on an update of one
    that had it (and then not beside a timeZone)."""
    if "TZ" not in schedule:
        return []
    if not allowed:
        detail = "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    elif time_zone:
        detail = "cannot use both timeZone field and TZ or CRON_TZ in schedule"
    else:
        return []
    return [invalid("spec.schedule", schedule, detail)]


def validate_cron_job(cj: types_pb2.CronJob) -> list[Cause]:
    """validateCronJobSpec's rules of every write: the schedule (robfig's standard parser),
    concurrencyPolicy, the non-negative deadline and history limits, the job template."""
    causes = validate_object_meta(cj.metadata, namespaced=True)
    spec = cj.spec
    if not spec.schedule:
        causes.append(required("spec.schedule"))
    else:
        try:
            parse_standard(spec.schedule)
        except CronError as e:
            causes.append(invalid("spec.schedule", spec.schedule, str(e)))
    if spec.HasField("starting_deadline_seconds"):
        causes.extend(
            _validate_nonnegative(spec.starting_deadline_seconds, "spec.startingDeadlineSeconds")
        )
    if not spec.concurrency_policy:
        causes.append(required("spec.concurrencyPolicy"))
    elif spec.concurrency_policy not in batch.CONCURRENCY_POLICIES:
        causes.append(
            not_supported(
                "spec.concurrencyPolicy", spec.concurrency_policy, batch.CONCURRENCY_POLICIES
            )
        )
    causes.extend(_validate_job_template(spec.job_template))
    for name, field in (
        ("successfulJobsHistoryLimit", "successful_jobs_history_limit"),
        ("failedJobsHistoryLimit", "failed_jobs_history_limit"),
    ):
        if spec.HasField(field):
            causes.extend(_validate_nonnegative(getattr(spec, field), f"spec.{name}"))
    return causes


def validate_cron_job_create(cj: types_pb2.CronJob) -> list[Cause]:
    """ValidateCronJobCreate's own rules: no TZ or CRON_TZ in the schedule, the time zone,
    a name of at most 52 characters (its Jobs add an 11-character suffix)."""
    spec = cj.spec
    causes = _validate_tz_in_schedule(spec.schedule, spec.HasField("time_zone"), allowed=False)
    if spec.HasField("time_zone"):
        causes.extend(_validate_time_zone(spec.time_zone, "spec.timeZone"))
    if len(cj.metadata.name) > _MAX_NAME:
        causes.append(
            invalid(
                "metadata.name", cj.metadata.name, f"must be no more than {_MAX_NAME} characters"
            )
        )
    return causes


def validate_cron_job_update(new: types_pb2.CronJob, old: types_pb2.CronJob) -> list[Cause]:
    """ValidateCronJobUpdate's own rules: TZ in the schedule only if the old one had it, the
    time zone when it changed (no name length: an old long name stays updatable)."""
    spec = new.spec
    causes = _validate_tz_in_schedule(
        spec.schedule, spec.HasField("time_zone"), allowed="TZ" in old.spec.schedule
    )
    changed = spec.HasField("time_zone") != old.spec.HasField("time_zone") or (
        spec.time_zone != old.spec.time_zone
    )
    if changed and spec.HasField("time_zone"):
        causes.extend(_validate_time_zone(spec.time_zone, "spec.timeZone"))
    return causes
