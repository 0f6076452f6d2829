"""Resource names, quantities and requirements (core/v1 ResourceRequirements, ResourceList)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.quantity import NEGATIVE_ERROR, Quantity, parse_quantity
from kemu.machinery.validation.field import invalid, required
from kemu.machinery.validation.meta import validate_qualified_name
from kemu.machinery.validation.names import is_qualified_name

# ---------------------------------------------------------------- resources

_CONTAINER_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage"})
_POD_LEVEL_RESOURCES: Final = frozenset({"cpu", "memory"})
_NODE_RESOURCES: Final = frozenset({"cpu", "memory", "ephemeral-storage", "pods", "storage"})
_INTEGER_RESOURCES: Final = frozenset({"pods"})


def _is_hugepages(name: str) -> bool:
    return name.startswith("hugepages-")


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_extended_resource(name: str) -> bool:
    """`example.com/gpu`: a qualified name outside the kubernetes.io domain."""
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name(f"requests.{name}")


def _overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not _is_hugepages(name)


def _validate_resource_name(
    name: str, path: str, standard: frozenset[str], what: str
) -> list[Cause]:
    causes = validate_qualified_name(name, path)
    if causes:
        return causes
    if "/" not in name:
        if name not in standard and not _is_hugepages(name):
            causes.append(invalid(path, name, what))
    elif not is_native_resource(name) and not is_extended_resource(name):
        causes.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return causes


def validate_resource_quantity(
    name: str, text: str, path: str
) -> tuple[Quantity | None, list[Cause]]:
    """Parses one resource value: a valid, non-negative quantity, an integer where it must be."""
    try:
        q = parse_quantity(text, path)
    except Invalid as e:
        return None, list(e.causes)
    if q.sign() < 0:
        return q, [invalid(path, text, NEGATIVE_ERROR)]
    if (name in _INTEGER_RESOURCES or is_extended_resource(name)) and q.milli_value() % 1000:
        return q, [invalid(path, text, "must be an integer")]
    return q, []


def validate_resource_requirements(
    resources: types_pb2.ResourceRequirements,
    path: str,
    *,
    standard: frozenset[str] = _CONTAINER_RESOURCES,
    what: str = "must be a standard resource for containers",
) -> list[Cause]:
    causes: list[Cause] = []
    limits: dict[str, Quantity] = {}
    for name, text in sorted(resources.limits.items()):
        p = f"{path}.limits[{name}]"
        causes.extend(_validate_resource_name(name, p, standard, what))
        q, errs = validate_resource_quantity(name, text, p)
        causes.extend(errs)
        if q is not None:
            limits[name] = q
    for name, text in sorted(resources.requests.items()):
        p = f"{path}.requests[{name}]"
        causes.extend(_validate_resource_name(name, p, standard, what))
        q, errs = validate_resource_quantity(name, text, p)
        causes.extend(errs)
        if q is None:
            continue
        limit = limits.get(name)
        if limit is not None:
            if q != limit and not _overcommit_allowed(name):
                causes.append(invalid(p, str(q), f"must be equal to {name} limit of {limit}"))
            elif q > limit:
                causes.append(
                    invalid(p, str(q), f"must be less than or equal to {name} limit of {limit}")
                )
        elif not _overcommit_allowed(name) and name not in resources.limits:
            causes.append(
                required(f"{path}.limits", "Limit must be set for non overcommitable resources")
            )
    return causes


def validate_resource_list(
    resources: Mapping[str, str],
    path: str,
    *,
    standard: frozenset[str] = _NODE_RESOURCES,
    what: str = "must be a standard resource type or fully qualified",
    key_style: bool = True,
) -> list[Cause]:
    """Capacity, allocatable, overhead: valid names, valid non-negative quantities."""
    causes = []
    for name, text in sorted(resources.items()):
        p = f"{path}[{name}]" if key_style else f"{path}.{name}"
        causes.extend(_validate_resource_name(name, p, standard, what))
        causes.extend(validate_resource_quantity(name, text, p)[1])
    return causes
