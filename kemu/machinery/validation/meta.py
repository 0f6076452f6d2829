"""ObjectMeta (names, labels, annotations, owner references, finalizers, size) and label selectors."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import forbidden, invalid, required, too_long
from kemu.machinery.validation.names import (
    MAX_OBJECT_SIZE,
    TOTAL_ANNOTATION_SIZE_LIMIT,
    NameFn,
    is_qualified_name,
    is_valid_label_value,
    name_is_dns_label,
    name_is_dns_subdomain,
)

# ---------------------------------------------------------------- metadata


def validate_label_name(key: str, path: str) -> list[Cause]:
    return [invalid(path, key, m) for m in is_qualified_name(key)]


def validate_qualified_name(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_qualified_name(value)]


def validate_labels(labels: Mapping[str, str], path: str) -> list[Cause]:
    causes = []
    for key, value in sorted(labels.items()):
        causes.extend(validate_label_name(key, path))
        causes.extend(invalid(f"{path}[{key}]", value, m) for m in is_valid_label_value(value))
    return causes


def validate_annotations(annotations: Mapping[str, str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    total = 0
    for key, value in sorted(annotations.items()):
        causes.extend(invalid(path, key, m) for m in is_qualified_name(key.lower()))
        total += len(key.encode()) + len(value.encode())
    if total > TOTAL_ANNOTATION_SIZE_LIMIT:
        causes.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return causes


def validate_object_meta(
    meta: types_pb2.ObjectMeta,
    *,
    namespaced: bool,
    name_fn: NameFn = name_is_dns_subdomain,
    path: str = "metadata",
) -> list[Cause]:
    causes: list[Cause] = []
    if meta.generate_name:
        causes.extend(
            invalid(f"{path}.generateName", meta.generate_name, m)
            for m in name_fn(meta.generate_name, True)
        )
    if meta.name:
        causes.extend(invalid(f"{path}.name", meta.name, m) for m in name_fn(meta.name, False))
    elif not meta.generate_name:
        causes.append(required(f"{path}.name", "name or generateName is required"))
    if namespaced:
        if not meta.namespace:
            causes.append(required(f"{path}.namespace"))
        else:
            causes.extend(
                invalid(f"{path}.namespace", meta.namespace, m)
                for m in name_is_dns_label(meta.namespace)
            )
    elif meta.namespace:
        causes.append(forbidden(f"{path}.namespace", "not allowed on this type"))
    causes.extend(validate_labels(meta.labels, f"{path}.labels"))
    causes.extend(validate_annotations(meta.annotations, f"{path}.annotations"))
    causes.extend(validate_owner_references(meta.owner_references, f"{path}.ownerReferences"))
    causes.extend(validate_finalizers(meta.finalizers, f"{path}.finalizers"))
    return causes


# The garbage collector's finalizers (kemu.machinery.delete_options has them with the policies;
# it imports this module).
_ORPHAN_FINALIZER: Final = "orphan"
_FOREGROUND_FINALIZER: Final = "foregroundDeletion"
BANNED_OWNERS: Final = frozenset({("v1", "Event")})
"""apiVersion/kind that may not own anything (upstream BannedOwners)."""


def validate_owner_references(refs: Sequence[types_pb2.OwnerReference], path: str) -> list[Cause]:
    """Every field set, no banned owner kind, at most one controller (upstream
    ValidateOwnerReferences: the paths carry no index, as upstream's)."""
    causes: list[Cause] = []
    controller = ""
    for ref in refs:
        version = ref.api_version.rsplit("/", 1)[-1]
        if not version:
            causes.append(
                invalid(f"{path}.apiVersion", ref.api_version, "version must not be empty")
            )
        if not ref.kind:
            causes.append(invalid(f"{path}.kind", ref.kind, "must not be empty"))
        if not ref.name:
            causes.append(invalid(f"{path}.name", ref.name, "must not be empty"))
        if not ref.uid:
            causes.append(invalid(f"{path}.uid", ref.uid, "must not be empty"))
        if (ref.api_version, ref.kind) in BANNED_OWNERS:
            causes.append(
                invalid(
                    path, f"{ref.kind}/{ref.name}", f"{ref.kind} is disallowed from being an owner"
                )
            )
        if ref.HasField("controller") and ref.controller:
            this = f"{ref.kind}/{ref.name}"
            if controller:
                causes.append(
                    invalid(
                        path,
                        this,
                        'Only one reference can have Controller set to true. Found "true" in '
                        f"references for {controller} and {this}",
                    )
                )
            else:
                controller = this
    return causes


def validate_finalizers(finalizers: Sequence[str], path: str) -> list[Cause]:
    """Qualified names; orphan and foregroundDeletion not both (upstream ValidateFinalizers)."""
    causes: list[Cause] = []
    for f in finalizers:
        causes.extend(invalid(path, f, m) for m in is_qualified_name(f))
    if _ORPHAN_FINALIZER in finalizers and _FOREGROUND_FINALIZER in finalizers:
        causes.append(
            invalid(
                path,
                ",".join(finalizers),
                f"finalizer {_ORPHAN_FINALIZER} and {_FOREGROUND_FINALIZER} cannot be both set",
            )
        )
    return causes


def validate_no_new_finalizers(
    new: types_pb2.ObjectMeta, old: types_pb2.ObjectMeta, path: str = "metadata"
) -> list[Cause]:
    """An object being deleted takes no new finalizers (upstream ValidateNoNewFinalizers)."""
    if not old.HasField("deletion_timestamp"):
        return []
    extra = sorted(set(new.finalizers) - set(old.finalizers))
    if not extra:
        return []
    shown = "[]string{" + ", ".join(json.dumps(f) for f in extra) + "}"
    return [
        forbidden(
            f"{path}.finalizers",
            "no new finalizers can be added if the object is being deleted, "
            f"found new finalizers {shown}",
        )
    ]


def validate_object_meta_update(
    new: types_pb2.ObjectMeta, old: types_pb2.ObjectMeta, path: str = "metadata"
) -> list[Cause]:
    causes = []
    for field, json_name in (("name", "name"), ("namespace", "namespace"), ("uid", "uid")):
        before, after = getattr(old, field), getattr(new, field)
        if before and after != before:
            causes.append(invalid(f"{path}.{json_name}", after, "field is immutable"))
    causes.extend(validate_no_new_finalizers(new, old, path))
    return causes


def validate_object_size(serialized_len: int, *, name: str = "") -> list[Cause]:
    """Objects larger than etcd's default request limit (1.5 MiB) cannot be stored."""
    if serialized_len <= MAX_OBJECT_SIZE:
        return []
    return [
        Cause(
            "metadata.name" if name else "<root>",
            f"Too long: object is too large ({serialized_len} bytes, "
            f"at most {MAX_OBJECT_SIZE} bytes)",
        )
    ]


# ---------------------------------------------------------------- label selectors


_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector: types_pb2.LabelSelector, path: str) -> list[Cause]:
    causes = validate_labels(selector.match_labels, f"{path}.matchLabels")
    for i, expr in enumerate(selector.match_expressions):
        p = f"{path}.matchExpressions[{i}]"
        if expr.operator in ("In", "NotIn"):
            if not expr.values:
                causes.append(
                    required(f"{p}.values", "must be specified when `operator` is 'In' or 'NotIn'")
                )
        elif expr.operator in ("Exists", "DoesNotExist"):
            if expr.values:
                causes.append(
                    forbidden(
                        f"{p}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            causes.append(invalid(f"{p}.operator", expr.operator, "not a valid selector operator"))
        causes.extend(validate_label_name(expr.key, f"{p}.key"))
        for j, value in enumerate(expr.values):
            causes.extend(
                invalid(f"{p}.values[{j}]", value, m) for m in is_valid_label_value(value)
            )
    return causes


# ---------------------------------------------------------------- namespaces, services, config maps

# Finalizers upstream knows without a domain prefix (helper.IsStandardFinalizerName).
STANDARD_FINALIZERS: Final = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


def validate_finalizer_name(name: str, path: str) -> list[Cause]:
    causes = validate_qualified_name(name, path)
    if not causes and "/" not in name and name not in STANDARD_FINALIZERS:
        causes.append(
            invalid(
                path, name, "name is neither a standard finalizer name nor is it fully qualified"
            )
        )
    return causes
