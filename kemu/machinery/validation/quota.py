"""core/v1 LimitRanges and ResourceQuotas (upstream pkg/apis/core/validation/validation.go:
ValidateLimitRange, ValidateResourceQuota and its status update)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.quantity import Quantity
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
)
from kemu.machinery.validation.meta import validate_object_meta, validate_qualified_name
from kemu.machinery.validation.resources import validate_resource_quantity

LIMIT_TYPES: Final = ("Container", "PersistentVolumeClaim", "Pod")
QUOTA_SCOPES: Final = (
    "BestEffort",
    "CrossNamespacePodAffinity",
    "NotBestEffort",
    "NotTerminating",
    "PriorityClass",
    "Terminating",
    "VolumeAttributesClass",
)
_SCOPE_OPERATORS: Final = ("DoesNotExist", "Exists", "In", "NotIn")


def _resource_list(values: Mapping[str, str], path: str) -> tuple[dict[str, Quantity], list[Cause]]:
    causes: list[Cause] = []
    out: dict[str, Quantity] = {}
    for name, text in sorted(values.items()):
        p = f"{path}[{name}]"
        causes.extend(validate_qualified_name(name, p))
        q, errs = validate_resource_quantity(name, text, p)
        causes.extend(errs)
        if q is not None and not errs:
            out[name] = q
    return out, causes


def validate_limit_range(lr: types_pb2.LimitRange) -> list[Cause]:
    """ValidateLimitRange: one item per type; per resource min <= defaultRequest <= default
    <= max and a maxLimitRequestRatio of at least 1 that max/min allows."""
    causes = validate_object_meta(lr.metadata, namespaced=True)
    seen: set[str] = set()
    for i, item in enumerate(lr.spec.limits):
        p = f"spec.limits[{i}]"
        if item.type in seen:
            causes.append(duplicate(f"{p}.type", item.type))
        seen.add(item.type)
        if item.type not in LIMIT_TYPES:
            causes.append(not_supported(f"{p}.type", item.type, LIMIT_TYPES))
        mx, e1 = _resource_list(item.max, f"{p}.max")
        mn, e2 = _resource_list(item.min, f"{p}.min")
        df, e3 = _resource_list(item.default_limit, f"{p}.default")
        dr, e4 = _resource_list(item.default_request, f"{p}.defaultRequest")
        ratio, e5 = _resource_list(item.max_limit_request_ratio, f"{p}.maxLimitRequestRatio")
        causes.extend(e1 + e2 + e3 + e4 + e5)
        if item.type == "Pod":
            if item.default_limit:
                causes.append(
                    forbidden(f"{p}.default", "may not be specified when `type` is 'Pod'")
                )
            if item.default_request:
                causes.append(
                    forbidden(f"{p}.defaultRequest", "may not be specified when `type` is 'Pod'")
                )
        if item.type == "PersistentVolumeClaim" and "storage" not in mn and "storage" not in mx:
            causes.append(
                required(
                    f"{p}.limits",
                    "either minimum or maximum storage value is required, but neither was provided",
                )
            )
        for k in sorted(set(mx) | set(mn) | set(df) | set(dr) | set(ratio)):
            if k in mn and k in mx and mx[k] < mn[k]:
                causes.append(
                    invalid(
                        f"{p}.min[{k}]",
                        str(mn[k]),
                        f"min value {mn[k]} is greater than max value {mx[k]}",
                    )
                )
            if k in dr and k in mn and dr[k] < mn[k]:
                causes.append(
                    invalid(
                        f"{p}.defaultRequest[{k}]",
                        str(dr[k]),
                        f"min value {mn[k]} is greater than default request value {dr[k]}",
                    )
                )
            if k in dr and k in mx and mx[k] < dr[k]:
                causes.append(
                    invalid(
                        f"{p}.defaultRequest[{k}]",
                        str(dr[k]),
                        f"default request value {dr[k]} is greater than max value {mx[k]}",
                    )
                )
            if k in dr and k in df and df[k] < dr[k]:
                causes.append(
                    invalid(
                        f"{p}.defaultRequest[{k}]",
                        str(dr[k]),
                        f"default request value {dr[k]} is greater than default limit value {df[k]}",
                    )
                )
            if k in df and k in mx and mx[k] < df[k]:
                causes.append(
                    invalid(
                        f"{p}.default[{k}]",
                        str(df[k]),
                        f"default value {df[k]} is greater than max value {mx[k]}",
                    )
                )
            if k in df and k in mn and df[k] < mn[k]:
                causes.append(
                    invalid(
                        f"{p}.default[{k}]",
                        str(df[k]),
                        f"min value {mn[k]} is greater than default value {df[k]}",
                    )
                )
            if k in ratio:
                r = ratio[k]
                if r < Quantity.from_int(1):
                    causes.append(
                        invalid(
                            f"{p}.maxLimitRequestRatio[{k}]", str(r), f"ratio {r} is less than 1"
                        )
                    )
                elif k in mx and k in mn and mn[k].milli_value() > 0:
                    allowed = mx[k].milli_value() / mn[k].milli_value()
                    if r.milli_value() / 1000 > allowed:
                        causes.append(
                            invalid(
                                f"{p}.maxLimitRequestRatio[{k}]",
                                str(r),
                                f"ratio {r} is greater than max/min = {allowed:f}",
                            )
                        )
    return causes


def validate_resource_quota(rq: types_pb2.ResourceQuota) -> list[Cause]:
    """ValidateResourceQuota: the hard limits' names and quantities, the scopes and the
    scope selector (an operator and values as each scope allows)."""
    causes = validate_object_meta(rq.metadata, namespaced=True)
    _, errs = _resource_list(rq.spec.hard, "spec.hard")
    causes.extend(errs)
    _, errs = _resource_list(rq.status.hard, "status.hard")
    causes.extend(errs)
    _, errs = _resource_list(rq.status.used, "status.used")
    causes.extend(errs)
    for i, scope in enumerate(rq.spec.scopes):
        if scope not in QUOTA_SCOPES:
            causes.append(not_supported(f"spec.scopes[{i}]", scope, QUOTA_SCOPES))
    for i, req in enumerate(rq.spec.scope_selector.match_expressions):
        p = f"spec.scopeSelector.matchExpressions[{i}]"
        if req.scope_name not in QUOTA_SCOPES:
            causes.append(not_supported(f"{p}.scopeName", req.scope_name, QUOTA_SCOPES))
        if req.operator not in _SCOPE_OPERATORS:
            causes.append(not_supported(f"{p}.operator", req.operator, _SCOPE_OPERATORS))
        elif req.operator in ("In", "NotIn") and not req.values:
            causes.append(
                invalid(
                    f"{p}.values",
                    [],
                    "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                )
            )
        elif req.operator in ("Exists", "DoesNotExist") and req.values:
            causes.append(
                invalid(
                    f"{p}.values",
                    list(req.values),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                )
            )
    return causes
