"""batch/v1 Jobs: what the apiserver, the Job controller and kemuctl share.

Defaulting as upstream's pkg/apis/batch/v1/defaults.go, the generated selector of
pkg/registry/batch/job/strategy.go (the apiserver applies it on create when
spec.manualSelector is not true), the label, annotation and finalizer names of batch/v1, and
the condition helpers of pkg/controller/job.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2

# Labels the generated selector puts on the template (batch/v1 types.go).
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
JOB_TRACKING_FINALIZER: Final = "batch.kubernetes.io/job-tracking"
"""On every pod the Job controller creates; removed once the pod's end is counted."""

NON_INDEXED: Final = "NonIndexed"
INDEXED: Final = "Indexed"
JOB_COMPLETION_INDEX_ANNOTATION: Final = "batch.kubernetes.io/job-completion-index"
"""An Indexed Job's pod's completion index: annotation, and label (PodIndexLabel)."""
COMPLETION_INDEX_ENV_NAME: Final = "JOB_COMPLETION_INDEX"
TERMINATING_OR_FAILED: Final = "TerminatingOrFailed"
FAILED_POLICY: Final = "Failed"

DEFAULT_BACKOFF_LIMIT: Final = 6

# Condition types and reasons (batch/v1 types.go).
COMPLETE: Final = "Complete"
FAILED: Final = "Failed"
SUSPENDED: Final = "Suspended"
FAILURE_TARGET: Final = "FailureTarget"
SUCCESS_CRITERIA_MET: Final = "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT_EXCEEDED: Final = "BackoffLimitExceeded"
REASON_DEADLINE_EXCEEDED: Final = "DeadlineExceeded"
REASON_COMPLETIONS_REACHED: Final = "CompletionsReached"
REASON_JOB_SUSPENDED: Final = "JobSuspended"
REASON_JOB_RESUMED: Final = "JobResumed"


def set_defaults_job(job: types_pb2.Job) -> None:
    """SetDefaults_Job: completions and parallelism 1 when both are unset, parallelism 1,
    backoffLimit 6, NonIndexed, suspend false, podReplacementPolicy TerminatingOrFailed, and
    the Job's labels from the template when it has none."""
    spec = job.spec
    if not spec.HasField("completions") and not spec.HasField("parallelism"):
        spec.completions = 1
        spec.parallelism = 1
    if not spec.HasField("parallelism"):
        spec.parallelism = 1
    if not spec.HasField("backoff_limit"):
        spec.backoff_limit = DEFAULT_BACKOFF_LIMIT
    if not job.metadata.labels and spec.template.metadata.labels:
        job.metadata.labels.update(spec.template.metadata.labels)
    if not spec.HasField("completion_mode"):
        spec.completion_mode = NON_INDEXED
    if not spec.HasField("suspend"):
        spec.suspend = False
    if not spec.HasField("pod_replacement_policy"):
        spec.pod_replacement_policy = TERMINATING_OR_FAILED


def generate_selector(job: types_pb2.Job) -> None:
    """upstream generateSelector: the job-name and controller-uid labels (new and legacy) on
    the template unless present, and `batch.kubernetes.io/controller-uid: <uid>` in the
    selector. A conflicting value the user set is left for validation to refuse."""
    labels = job.spec.template.metadata.labels
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, job.metadata.name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, job.metadata.uid)
    job.spec.selector.match_labels.setdefault(CONTROLLER_UID_LABEL, job.metadata.uid)


def manual_selector(job: types_pb2.Job) -> bool:
    return job.spec.HasField("manual_selector") and job.spec.manual_selector


def find_condition(job: types_pb2.Job, type_: str) -> types_pb2.JobCondition | None:
    for c in job.status.conditions:
        if c.type == type_:
            return c
    return None


def has_condition(job: types_pb2.Job, type_: str) -> bool:
    c = find_condition(job, type_)
    return c is not None and c.status == "True"


def is_finished(job: types_pb2.Job) -> bool:
    """IsJobFinished: a Complete or Failed condition that is True."""
    return has_condition(job, COMPLETE) or has_condition(job, FAILED)


def is_suspended(job: types_pb2.Job) -> bool:
    return job.spec.HasField("suspend") and job.spec.suspend


# ---------------------------------------------------------------- CronJobs

ALLOW_CONCURRENT: Final = "Allow"
FORBID_CONCURRENT: Final = "Forbid"
REPLACE_CONCURRENT: Final = "Replace"
CONCURRENCY_POLICIES: Final = (ALLOW_CONCURRENT, FORBID_CONCURRENT, REPLACE_CONCURRENT)
DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT: Final = 3
DEFAULT_FAILED_JOBS_HISTORY_LIMIT: Final = 1


def set_defaults_cron_job(cj: types_pb2.CronJob) -> None:
    """SetDefaults_CronJob: concurrencyPolicy Allow, suspend false, history limits 3 and 1."""
    spec = cj.spec
    if not spec.concurrency_policy:
        spec.concurrency_policy = ALLOW_CONCURRENT
    if not spec.HasField("suspend"):
        spec.suspend = False
    if not spec.HasField("successful_jobs_history_limit"):
        spec.successful_jobs_history_limit = DEFAULT_SUCCESSFUL_JOBS_HISTORY_LIMIT
    if not spec.HasField("failed_jobs_history_limit"):
        spec.failed_jobs_history_limit = DEFAULT_FAILED_JOBS_HISTORY_LIMIT
