"""DeleteOptions as a DELETE (its query and its body) or an Eviction's deleteOptions carry them,
read with the types upstream's decoder insists on and checked as upstream's
ValidateDeleteOptions (k8s.io/apimachinery pkg/apis/meta/v1/validation) before anything is
deleted: a malformed option is a 400 or 422 that names it, never a delete without it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from apiserver.endpoints.rest.request import INT64_MAX, INT64_MIN, bool_param, int_param
from apiserver.registry.eviction import DRY_RUN_ALL
from kemu.machinery.delete_options import validate_propagation
from kemu.machinery.errors import BadRequest, Invalid

_KIND: Final = "DeleteOptions"


@dataclass(frozen=True)
class DeleteOptions:
    """metav1.DeleteOptions: None leaves a field unset."""

    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None
    dry_run: list[str] = field(default_factory=list)


def _typed(body: Mapping[str, Any], name: str, typ: type, what: str, prefix: str) -> Any:
    value = body.get(name)
    if value is None:
        return None
    # (bool is an int in Python, not in JSON)
    if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
        raise BadRequest(
            f"{prefix}{name}: expected {what}, got {_json_type(value)} (DeleteOptions)"
        )
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"


def from_body(body: Any, prefix: str = "") -> DeleteOptions:
    """The DeleteOptions of a JSON body (`prefix` names where they sit: "deleteOptions." in
    an Eviction)."""
    if body is None:
        return DeleteOptions()
    if not isinstance(body, dict):
        raise BadRequest(f"{prefix or 'the body of a DELETE'}: expected a DeleteOptions object")
    # (upstream registers DeleteOptions in every group version: any apiVersion will do)
    kind = _typed(body, "kind", str, "a string", prefix)
    if not prefix and kind not in (None, "", _KIND):
        raise BadRequest(f'the body of a DELETE must be a DeleteOptions, not a "{kind[:64]}"')
    grace = _typed(body, "gracePeriodSeconds", int, "an integer", prefix)
    if grace is not None and not INT64_MIN <= grace <= INT64_MAX:
        raise BadRequest(f"{prefix}gracePeriodSeconds: out of range (DeleteOptions)")
    pre = _typed(body, "preconditions", dict, "an object", prefix) or {}
    uid = _typed(pre, "uid", str, "a string", prefix + "preconditions.")
    rv = _typed(pre, "resourceVersion", str, "a string", prefix + "preconditions.")
    dry_run = _typed(body, "dryRun", list, "an array of strings", prefix) or []
    if not all(isinstance(v, str) for v in dry_run):
        raise BadRequest(f"{prefix}dryRun: expected an array of strings (DeleteOptions)")
    return DeleteOptions(
        grace_period=grace,
        uid=uid,
        resource_version=rv,
        propagation_policy=_typed(body, "propagationPolicy", str, "a string", prefix),
        orphan_dependents=_typed(body, "orphanDependents", bool, "a boolean", prefix),
        dry_run=list(dry_run),
    )


def delete_options(query: Any, body: Any) -> DeleteOptions:
    """A DELETE's options: the query's, else the body's, validated."""
    b = from_body(body)
    grace = int_param(query, "gracePeriodSeconds")
    orphan = bool_param(query, "orphanDependents")
    options = DeleteOptions(
        grace_period=b.grace_period if grace is None else grace,
        uid=b.uid,
        resource_version=b.resource_version,
        propagation_policy=query.get("propagationPolicy") or b.propagation_policy,
        orphan_dependents=b.orphan_dependents if orphan is None else orphan,
        dry_run=[*query.getall("dryRun", []), *b.dry_run],
    )
    validate(options)
    return options


def validate(options: DeleteOptions, prefix: str = "") -> None:
    """Upstream ValidateDeleteOptions: propagationPolicy (and not with orphanDependents) and
    dryRun."""
    validate_propagation(options.propagation_policy, options.orphan_dependents)
    check_dry_run(options.dry_run, prefix)


def check_dry_run(values: list[str], prefix: str = "") -> None:
    """Upstream ValidateDryRun: "All" is the one value."""
    for value in values:
        if value != DRY_RUN_ALL:
            raise Invalid.field(
                f"{prefix}dryRun",
                f'Unsupported value: "{value}": supported values: "{DRY_RUN_ALL}"',
            )
