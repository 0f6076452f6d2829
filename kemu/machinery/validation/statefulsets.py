"""apps/v1 StatefulSets: upstream's pkg/apis/apps/validation ValidateStatefulSet(Spec|Update)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import (
    validate_annotations,
    validate_labels,
    validate_object_meta,
)
from kemu.machinery.validation.storage import validate_claim_spec
from kemu.machinery.validation.workloads import (
    _int_or_percent_value,
    _validate_nonnegative,
    _validate_positive_int_or_percent,
    validate_selector_matching_template,
)

_RETENTION_POLICIES: Final = (apps.RETAIN_PVC, apps.DELETE_PVC)

_SPEC_UPDATE_FORBIDDEN: Final = (
    "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
    "'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)


def _validate_update_strategy(strategy: types_pb2.StatefulSetUpdateStrategy) -> list[Cause]:
    path = "spec.updateStrategy"
    if not strategy.type:
        return [required(path)]
    if strategy.type == apps.ON_DELETE:
        if strategy.HasField("rolling_update"):
            return [
                invalid(
                    f"{path}.rollingUpdate", "", "only allowed for updateStrategy 'RollingUpdate'"
                )
            ]
        return []
    if strategy.type != apps.ROLLING_UPDATE:
        return [invalid(path, strategy.type, "must be 'RollingUpdate' or 'OnDelete'")]
    causes: list[Cause] = []
    ru = strategy.rolling_update
    if ru.HasField("partition"):
        causes.extend(_validate_nonnegative(ru.partition, f"{path}.rollingUpdate.partition"))
    if ru.HasField("max_unavailable"):
        p = f"{path}.rollingUpdate.maxUnavailable"
        causes.extend(_validate_positive_int_or_percent(ru.max_unavailable, p))
        value = _int_or_percent_value(ru.max_unavailable)
        if value == 0:
            causes.append(invalid(p, value, "must be greater than 0"))
        elif ru.max_unavailable.WhichOneof("value") == "str_val" and value > 100:
            causes.append(invalid(p, ru.max_unavailable.str_val, "must not be greater than 100%"))
    return causes


def validate_stateful_set(sts: types_pb2.StatefulSet) -> list[Cause]:
    """ValidateStatefulSetSpec: podManagementPolicy, the update strategy, the claim retention
    policy, non-negative replicas, minReadySeconds, ordinals.start and revisionHistoryLimit,
    the selector matching the template (its labels and annotations valid, restartPolicy
    Always, no activeDeadlineSeconds; its pod spec is validated when the controller creates
    the pods), and each volumeClaimTemplate as a claim."""
    causes = validate_object_meta(sts.metadata, namespaced=True)
    spec = sts.spec
    if not spec.pod_management_policy:
        causes.append(required("spec.podManagementPolicy"))
    elif spec.pod_management_policy not in (apps.ORDERED_READY, apps.PARALLEL):
        causes.append(
            invalid(
                "spec.podManagementPolicy",
                spec.pod_management_policy,
                f"must be '{apps.ORDERED_READY}' or '{apps.PARALLEL}'",
            )
        )
    causes.extend(_validate_update_strategy(spec.update_strategy))
    policy = spec.persistent_volume_claim_retention_policy
    for value, name in ((policy.when_deleted, "whenDeleted"), (policy.when_scaled, "whenScaled")):
        if value not in _RETENTION_POLICIES:
            causes.append(
                not_supported(
                    f"spec.persistentVolumeClaimRetentionPolicy.{name}", value, _RETENTION_POLICIES
                )
            )
    causes.extend(_validate_nonnegative(spec.replicas, "spec.replicas"))
    causes.extend(_validate_nonnegative(spec.min_ready_seconds, "spec.minReadySeconds"))
    if spec.HasField("ordinals"):
        causes.extend(_validate_nonnegative(spec.ordinals.start, "spec.ordinals.start"))
    if spec.HasField("revision_history_limit"):
        causes.extend(
            _validate_nonnegative(spec.revision_history_limit, "spec.revisionHistoryLimit")
        )
    # ValidatePodTemplateSpecForStatefulSet checks the template's labels and annotations,
    # not its pod spec (whose volume mounts name the claim templates, not its volumes).
    causes.extend(
        validate_selector_matching_template(
            spec.selector if spec.HasField("selector") else None,
            spec.template if spec.HasField("template") else None,
            owner="statefulset",
        )
    )
    template = spec.template
    causes.extend(validate_labels(template.metadata.labels, "spec.template.labels"))
    causes.extend(validate_annotations(template.metadata.annotations, "spec.template.annotations"))
    if template.spec.restart_policy != "Always":
        causes.append(
            not_supported(
                "spec.template.spec.restartPolicy", template.spec.restart_policy, ["Always"]
            )
        )
    if spec.template.spec.HasField("active_deadline_seconds"):
        causes.append(
            forbidden(
                "spec.template.spec.activeDeadlineSeconds",
                "activeDeadlineSeconds in StatefulSet is not Supported",
            )
        )
    for i, claim in enumerate(spec.volume_claim_templates):
        path = f"spec.volumeClaimTemplates[{i}]"
        if not claim.metadata.name:
            causes.append(required(f"{path}.metadata.name"))
        causes.extend(validate_labels(claim.metadata.labels, f"{path}.metadata.labels"))
        causes.extend(validate_claim_spec(claim.spec, f"{path}.spec"))
    return causes


def _fixed_spec(sts: types_pb2.StatefulSet) -> bytes:
    """The spec without what an update may change."""
    spec = types_pb2.StatefulSetSpec()
    spec.CopyFrom(sts.spec)
    for field in (
        "replicas",
        "ordinals",
        "template",
        "update_strategy",
        "revision_history_limit",
        "persistent_volume_claim_retention_policy",
        "min_ready_seconds",
    ):
        spec.ClearField(field)
    return spec.SerializeToString(deterministic=True)


def validate_stateful_set_update(
    new: types_pb2.StatefulSet, old: types_pb2.StatefulSet
) -> list[Cause]:
    """ValidateStatefulSetUpdate: only replicas, ordinals, the template, the update strategy,
    revisionHistoryLimit, the claim retention policy and minReadySeconds may change."""
    if _fixed_spec(new) != _fixed_spec(old):
        return [forbidden("spec", _SPEC_UPDATE_FORBIDDEN)]
    return []
