"""PriorityClasses (scheduling/v1) and PodDisruptionBudgets (policy/v1)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.quantity import NEGATIVE_ERROR
from kemu.machinery.validation.field import forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import validate_label_selector, validate_object_meta
from kemu.machinery.validation.names import _PERCENT_RE, _regex_error
from kemu.machinery.validation.pod import validate_preemption_policy

# ---------------------------------------------------------------- priority classes

HIGHEST_USER_DEFINABLE_PRIORITY: Final = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY: Final = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX: Final = "system-"
SYSTEM_PRIORITY_CLASSES: Final[dict[str, int]] = {
    "system-node-critical": SYSTEM_CRITICAL_PRIORITY + 1000,
    "system-cluster-critical": SYSTEM_CRITICAL_PRIORITY,
}


def _system_priority_class_error(pc: types_pb2.PriorityClass) -> str | None:
    value = SYSTEM_PRIORITY_CLASSES.get(pc.metadata.name)
    if value is None:
        return f"{pc.metadata.name} is not a known system priority class"
    if pc.value != value:
        return f"value of {pc.metadata.name} PriorityClass must be {value}"
    if pc.global_default:
        return f"globalDefault of {pc.metadata.name} PriorityClass must be false"
    return None


def validate_priority_class(pc: types_pb2.PriorityClass) -> list[Cause]:
    causes = validate_object_meta(pc.metadata, namespaced=False)
    if pc.metadata.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        err = _system_priority_class_error(pc)
        if err is not None:
            causes.append(
                forbidden(
                    "metadata.name",
                    "priority class names with 'system-' prefix are reserved for system use "
                    f"only. error: {err}",
                )
            )
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            forbidden(
                "value",
                f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if pc.HasField("preemption_policy"):
        causes.extend(validate_preemption_policy(pc.preemption_policy, "preemptionPolicy"))
    return causes


def validate_priority_class_update(
    new: types_pb2.PriorityClass, old: types_pb2.PriorityClass
) -> list[Cause]:
    causes = []
    if new.value != old.value:
        causes.append(forbidden("value", "may not be changed in an update."))
    before = old.preemption_policy if old.HasField("preemption_policy") else None
    after = new.preemption_policy if new.HasField("preemption_policy") else None
    if before != after:
        causes.append(invalid("preemptionPolicy", after, "field is immutable"))
    return causes


# ---------------------------------------------------------------- pod disruption budgets

UNHEALTHY_POD_EVICTION_POLICIES: Final = ("AlwaysAllow", "IfHealthyBudget")


def _validate_int_or_percent(value: types_pb2.IntOrString, path: str) -> list[Cause]:
    which = value.WhichOneof("value")
    if which == "int_val":
        if value.int_val < 0:
            return [invalid(path, value.int_val, NEGATIVE_ERROR)]
        return []
    text = value.str_val
    if not _PERCENT_RE.fullmatch(text):
        return [
            invalid(
                path,
                text,
                _regex_error(
                    "a valid percent string must be a numeric string followed by an ending '%'",
                    "[0-9]+%",
                    "1%",
                    "93%",
                ),
            )
        ]
    if int(text[:-1]) > 100:
        return [invalid(path, text, "must not be greater than 100%")]
    return []


def validate_pod_disruption_budget(pdb: types_pb2.PodDisruptionBudget) -> list[Cause]:
    causes = validate_object_meta(pdb.metadata, namespaced=True)
    spec = pdb.spec
    has_min = spec.HasField("min_available") and spec.min_available.WhichOneof("value") is not None
    has_max = (
        spec.HasField("max_unavailable") and spec.max_unavailable.WhichOneof("value") is not None
    )
    if has_min and has_max:
        causes.append(
            invalid(
                "spec.minAvailable",
                _int_or_string(spec.min_available),
                "minAvailable and maxUnavailable cannot be both set",
            )
        )
    elif not has_min and not has_max:
        # Upstream policy/v1 accepts neither; kemu requires one so a budget always means
        # something definite.
        causes.append(
            required("spec.minAvailable", "one of minAvailable or maxUnavailable must be set")
        )
    if has_min:
        causes.extend(_validate_int_or_percent(spec.min_available, "spec.minAvailable"))
    if has_max:
        causes.extend(_validate_int_or_percent(spec.max_unavailable, "spec.maxUnavailable"))
    if spec.HasField("selector"):
        causes.extend(validate_label_selector(spec.selector, "spec.selector"))
    if spec.unhealthy_pod_eviction_policy and (
        spec.unhealthy_pod_eviction_policy not in UNHEALTHY_POD_EVICTION_POLICIES
    ):
        causes.append(
            not_supported(
                "spec.unhealthyPodEvictionPolicy",
                spec.unhealthy_pod_eviction_policy,
                UNHEALTHY_POD_EVICTION_POLICIES,
            )
        )
    return causes


def _int_or_string(value: types_pb2.IntOrString) -> object:
    return value.int_val if value.WhichOneof("value") == "int_val" else value.str_val
