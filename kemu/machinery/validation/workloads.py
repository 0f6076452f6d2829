"""Workloads: ReplicaSets, Deployments and DaemonSets (apps/v1) and Jobs (batch/v1)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.labels import selector_from_label_selector
from kemu.machinery.quantity import NEGATIVE_ERROR
from kemu.machinery.validation.field import forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import (
    validate_annotations,
    validate_label_selector,
    validate_labels,
    validate_object_meta,
)
from kemu.machinery.validation.names import _PERCENT_RE
from kemu.machinery.validation.pod import validate_pod_spec
from kemu.machinery.validation.policy import _int_or_string

# ---------------------------------------------------------------- apps/v1 (ReplicaSet, Deployment)


def _validate_nonnegative(value: int, path: str) -> list[Cause]:
    return [invalid(path, value, NEGATIVE_ERROR)] if value < 0 else []


def _validate_positive_int_or_percent(value: types_pb2.IntOrString, path: str) -> list[Cause]:
    """apps ValidatePositiveIntOrPercent: a non-negative integer or a percentage (any size)."""
    which = value.WhichOneof("value")
    if which == "str_val":
        if not _PERCENT_RE.fullmatch(value.str_val):
            return [invalid(path, value.str_val, "must be an integer or percentage (e.g '5%')")]
        return []
    return _validate_nonnegative(value.int_val, path)


def _int_or_percent_value(value: types_pb2.IntOrString) -> int:
    if value.WhichOneof("value") == "str_val":
        text = value.str_val
        return int(text[:-1]) if _PERCENT_RE.fullmatch(text) else -1
    return value.int_val


def _validate_workload_selector_and_template(
    selector: types_pb2.LabelSelector | None,
    template: types_pb2.PodTemplateSpec | None,
    *,
    owner: str = "deployment",
    restart_policies: tuple[str, ...] = ("Always",),
    prefix: str = "spec",
) -> list[Cause]:
    """The selector and template rules shared by ReplicaSet, Deployment, DaemonSet and Job
    specs (upstream ValidateReplicaSetSpec / ValidateDeploymentSpec / ValidateDaemonSetSpec /
    ValidateJobSpec and ValidatePodTemplateSpecForReplicaSet): `owner` names the kind in the
    empty-selector message, `restart_policies` are the template's allowed restartPolicy,
    `prefix` the spec's path (a CronJob's job template is spec.jobTemplate.spec)."""
    causes = validate_selector_matching_template(selector, template, owner=owner, prefix=prefix)
    if template is not None:
        causes.extend(validate_pod_template(template, f"{prefix}.template", restart_policies))
    return causes


def validate_selector_matching_template(
    selector: types_pb2.LabelSelector | None,
    template: types_pb2.PodTemplateSpec | None,
    *,
    owner: str,
    prefix: str = "spec",
) -> list[Cause]:
    """A workload's selector: required, valid, not empty, matching the template's labels
    (the template required too)."""
    causes: list[Cause] = []
    if selector is None:
        causes.append(required(f"{prefix}.selector"))
    else:
        causes.extend(validate_label_selector(selector, f"{prefix}.selector"))
        if not selector.match_labels and not selector.match_expressions:
            causes.append(
                invalid(f"{prefix}.selector", "{}", f"empty selector is invalid for {owner}")
            )
    if template is None:
        causes.append(required(f"{prefix}.template"))
        return causes
    if selector is not None and not causes:
        try:
            parsed = selector_from_label_selector(selector, path=f"{prefix}.selector")
        except Invalid:
            causes.append(invalid(f"{prefix}.selector", "", "invalid label selector"))
        else:
            if not parsed.empty and not parsed.matches(template.metadata.labels):
                causes.append(
                    invalid(
                        f"{prefix}.template.metadata.labels",
                        dict(template.metadata.labels),
                        "`selector` does not match template `labels`",
                    )
                )
    return causes


def validate_pod_template(
    template: types_pb2.PodTemplateSpec, path: str, restart_policies: tuple[str, ...]
) -> list[Cause]:
    """A workload's pod template: its labels, annotations, pod spec and restartPolicy."""
    causes = validate_labels(template.metadata.labels, f"{path}.metadata.labels")
    causes.extend(
        validate_annotations(template.metadata.annotations, f"{path}.metadata.annotations")
    )
    causes.extend(validate_pod_spec(template.spec, f"{path}.spec"))
    if template.spec.restart_policy not in restart_policies:
        causes.append(
            not_supported(
                f"{path}.spec.restartPolicy", template.spec.restart_policy, restart_policies
            )
        )
    return causes


def validate_replica_set(rs: types_pb2.ReplicaSet) -> list[Cause]:
    causes = validate_object_meta(rs.metadata, namespaced=True)
    spec = rs.spec
    causes.extend(_validate_nonnegative(spec.replicas, "spec.replicas"))
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
        )
    )
    return causes


def _validate_deployment_strategy(strategy: types_pb2.DeploymentStrategy) -> list[Cause]:
    path = "spec.strategy"
    if strategy.type == "Recreate":
        if strategy.HasField("rolling_update"):
            return [
                forbidden(
                    f"{path}.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                )
            ]
        return []
    if strategy.type != "RollingUpdate":
        return [not_supported(f"{path}.type", strategy.type, ("Recreate", "RollingUpdate"))]
    if not strategy.HasField("rolling_update"):
        return [required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
    ru = strategy.rolling_update
    p = f"{path}.rollingUpdate"
    causes = _validate_positive_int_or_percent(ru.max_unavailable, f"{p}.maxUnavailable")
    causes.extend(_validate_positive_int_or_percent(ru.max_surge, f"{p}.maxSurge"))
    if _int_or_percent_value(ru.max_unavailable) == 0 and _int_or_percent_value(ru.max_surge) == 0:
        causes.append(
            invalid(
                f"{p}.maxUnavailable",
                _int_or_string(ru.max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    if (
        ru.max_unavailable.WhichOneof("value") == "str_val"
        and _int_or_percent_value(ru.max_unavailable) > 100
    ):
        causes.append(
            invalid(
                f"{p}.maxUnavailable", ru.max_unavailable.str_val, "must not be greater than 100%"
            )
        )
    return causes


def validate_deployment(d: types_pb2.Deployment) -> list[Cause]:
    causes = validate_object_meta(d.metadata, namespaced=True)
    spec = d.spec
    causes.extend(_validate_nonnegative(spec.replicas, "spec.replicas"))
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
        )
    )
    causes.extend(_validate_deployment_strategy(spec.strategy))
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if spec.HasField("revision_history_limit"):
        causes.extend(
            _validate_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit")
        )
    if spec.HasField("progress_deadline_seconds"):
        path = "spec.progressDeadlineSeconds"
        causes.extend(_validate_nonnegative(spec.progress_deadline_seconds, path))
        if spec.progress_deadline_seconds <= spec.min_ready_seconds:
            causes.append(
                invalid(
                    path, spec.progress_deadline_seconds, "must be greater than minReadySeconds"
                )
            )
    return causes


def validate_workload_update(
    new: types_pb2.ReplicaSet | types_pb2.Deployment | types_pb2.DaemonSet,
    old: types_pb2.ReplicaSet | types_pb2.Deployment | types_pb2.DaemonSet,
) -> list[Cause]:
    """apps/v1: the selector of a ReplicaSet, Deployment or DaemonSet is immutable."""
    if new.spec.selector != old.spec.selector:
        return [invalid("spec.selector", "", "field is immutable")]
    return []


# ---------------------------------------------------------------- apps/v1 DaemonSet, batch/v1 Job


def _validate_rolling_update_daemon_set(ru: types_pb2.RollingUpdateDaemonSet) -> list[Cause]:
    """ValidateRollingUpdateDaemonSet: maxUnavailable and maxSurge are non-negative integers
    or percentages of at most 100%, not both 0."""
    p = "spec.updateStrategy.rollingUpdate"
    causes: list[Cause] = []
    for value, name in ((ru.max_unavailable, "maxUnavailable"), (ru.max_surge, "maxSurge")):
        causes.extend(_validate_positive_int_or_percent(value, f"{p}.{name}"))
        if value.WhichOneof("value") == "str_val" and _int_or_percent_value(value) > 100:
            causes.append(invalid(f"{p}.{name}", value.str_val, "must not be greater than 100%"))
    if _int_or_percent_value(ru.max_unavailable) == 0 and _int_or_percent_value(ru.max_surge) == 0:
        causes.append(
            invalid(
                f"{p}.maxUnavailable",
                _int_or_string(ru.max_unavailable),
                "may not be 0 when `maxSurge` is 0",
            )
        )
    return causes


def validate_daemon_set(ds: types_pb2.DaemonSet) -> list[Cause]:
    """ValidateDaemonSet: selector and template as a ReplicaSet's ("daemonset" in the
    empty-selector message), restartPolicy Always, no activeDeadlineSeconds, the update
    strategy."""
    causes = validate_object_meta(ds.metadata, namespaced=True)
    spec = ds.spec
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
            owner="daemonset",
        )
    )
    if spec.template.spec.HasField("active_deadline_seconds"):
        causes.append(
            invalid(
                "spec.template.spec.activeDeadlineSeconds",
                spec.template.spec.active_deadline_seconds,
                "activeDeadlineSeconds in DaemonSet is not Supported",
            )
        )
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if spec.HasField("revision_history_limit"):
        causes.extend(
            _validate_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit")
        )
    strategy = spec.update_strategy
    if not strategy.type:
        causes.append(required("spec.updateStrategy.type"))
    elif strategy.type == "RollingUpdate":
        if not strategy.HasField("rolling_update"):
            causes.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            causes.extend(_validate_rolling_update_daemon_set(strategy.rolling_update))
    elif strategy.type != "OnDelete":
        causes.append(
            not_supported("spec.updateStrategy.type", strategy.type, ("OnDelete", "RollingUpdate"))
        )
    return causes


_JOB_CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
_JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"


MAX_COMPLETIONS_FOR_INDEXED_JOB: Final = 100_000
MAX_PARALLELISM_FOR_INDEXED_JOB: Final = 100_000


def _validate_indexed(spec: types_pb2.JobSpec, path: str) -> list[Cause]:
    """validateJobSpec's Indexed rules: completions set, completions and parallelism at most
    100000."""
    causes: list[Cause] = []
    if not spec.HasField("completions"):
        causes.append(required(f"{path}.completions", "when completion mode is Indexed"))
    elif spec.completions > MAX_COMPLETIONS_FOR_INDEXED_JOB:
        causes.append(
            invalid(
                f"{path}.completions",
                spec.completions,
                f"must be less than or equal to {MAX_COMPLETIONS_FOR_INDEXED_JOB} when "
                "completion mode is Indexed",
            )
        )
    if spec.HasField("parallelism") and spec.parallelism > MAX_PARALLELISM_FOR_INDEXED_JOB:
        causes.append(
            invalid(
                f"{path}.parallelism",
                spec.parallelism,
                f"must be less than or equal to {MAX_PARALLELISM_FOR_INDEXED_JOB} when "
                "completion mode is Indexed",
            )
        )
    return causes


def validate_job_spec_fields(spec: types_pb2.JobSpec, path: str) -> list[Cause]:
    """The rules of a Job's spec beside its selector and template (a Job's, a CronJob's job
    template's): non-negative counts, completionMode, podReplacementPolicy."""
    causes: list[Cause] = []
    for name, field in (
        ("parallelism", "parallelism"),
        ("completions", "completions"),
        ("activeDeadlineSeconds", "active_deadline_seconds"),
        ("backoffLimit", "backoff_limit"),
        ("ttlSecondsAfterFinished", "ttl_seconds_after_finished"),
    ):
        if spec.HasField(field):
            causes.extend(_validate_nonnegative(getattr(spec, field), f"{path}.{name}"))
    if spec.HasField("completion_mode"):
        if spec.completion_mode == "Indexed":
            causes.extend(_validate_indexed(spec, path))
        elif spec.completion_mode != "NonIndexed":
            causes.append(
                not_supported(
                    f"{path}.completionMode", spec.completion_mode, ("NonIndexed", "Indexed")
                )
            )
    if spec.HasField("pod_replacement_policy") and spec.pod_replacement_policy not in (
        "Failed",
        "TerminatingOrFailed",
    ):
        causes.append(
            not_supported(
                f"{path}.podReplacementPolicy",
                spec.pod_replacement_policy,
                ("Failed", "TerminatingOrFailed"),
            )
        )
    return causes


def validate_job(job: types_pb2.Job) -> list[Cause]:
    """ValidateJob: non-negative counts, completionMode (Indexed: completions set, at most
    100000),
    podReplacementPolicy, the selector (generated unless manualSelector: it must hold the
    Job's uid) matching the template, restartPolicy OnFailure or Never."""
    causes = validate_object_meta(job.metadata, namespaced=True)
    spec = job.spec
    causes.extend(validate_job_spec_fields(spec, "spec"))
    manual = spec.HasField("manual_selector") and spec.manual_selector
    if not manual and spec.HasField("selector"):
        uid = job.metadata.uid
        if spec.selector.match_labels.get(_JOB_CONTROLLER_UID_LABEL) != uid:
            causes.append(invalid("spec.selector", "", "`selector` not auto-generated"))
        labels = spec.template.metadata.labels
        if labels.get(_JOB_CONTROLLER_UID_LABEL) != uid:
            causes.append(
                invalid(
                    f"spec.template.metadata.labels[{_JOB_CONTROLLER_UID_LABEL}]",
                    labels.get(_JOB_CONTROLLER_UID_LABEL, ""),
                    f"must be '{uid}'",
                )
            )
        if labels.get(_JOB_NAME_LABEL) != job.metadata.name:
            causes.append(
                invalid(
                    f"spec.template.metadata.labels[{_JOB_NAME_LABEL}]",
                    labels.get(_JOB_NAME_LABEL, ""),
                    f"must be '{job.metadata.name}'",
                )
            )
    causes.extend(
        _validate_workload_selector_and_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
            owner="job",
            restart_policies=("OnFailure", "Never"),
        )
    )
    return causes


def _without_scheduling_directives(t: types_pb2.PodTemplateSpec) -> bytes:
    out = types_pb2.PodTemplateSpec()
    out.CopyFrom(t)
    out.metadata.ClearField("labels")
    out.metadata.ClearField("annotations")
    for f in ("node_selector", "affinity", "tolerations", "scheduling_gates"):
        out.spec.ClearField(f)
    return out.SerializeToString(deterministic=True)


def validate_job_update(new: types_pb2.Job, old: types_pb2.Job) -> list[Cause]:
    """ValidateJobSpecUpdate: selector, completions, completionMode and the template are
    immutable, but for the scheduling directives (node selector, affinity, tolerations,
    scheduling gates, labels, annotations) of a suspended Job that never started."""
    causes: list[Cause] = []
    a, b = new.spec, old.spec
    if a.selector != b.selector:
        causes.append(invalid("spec.selector", "", "field is immutable"))
    if a.HasField("completions") != b.HasField("completions") or a.completions != b.completions:
        causes.append(invalid("spec.completions", a.completions, "field is immutable"))
    if a.completion_mode != b.completion_mode:
        causes.append(invalid("spec.completionMode", a.completion_mode, "field is immutable"))
    mutable_scheduling = (
        b.HasField("suspend") and b.suspend and not old.status.HasField("start_time")
    )
    if mutable_scheduling:
        changed = _without_scheduling_directives(a.template) != _without_scheduling_directives(
            b.template
        )
    else:
        changed = a.template.SerializeToString(deterministic=True) != b.template.SerializeToString(
            deterministic=True
        )
    if changed:
        causes.append(invalid("spec.template", "", "field is immutable"))
    return causes
