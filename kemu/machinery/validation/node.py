"""Nodes and taints."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.validation.container import validate_dual_stack
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    too_many,
)
from kemu.machinery.validation.meta import (
    validate_label_name,
    validate_object_meta,
    validate_qualified_name,
)
from kemu.machinery.validation.names import is_valid_label_value
from kemu.machinery.validation.pod import validate_taint_effect
from kemu.machinery.validation.resources import validate_resource_quantity

# ---------------------------------------------------------------- nodes

MAX_DISABLE_RESIZE_PREEMPTION: Final = 20


def validate_taints(taints: Sequence[types_pb2.Taint], path: str) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(taints):
        p = f"{path}[{i}]"
        causes.extend(validate_label_name(taint.key, f"{p}.key"))
        errs = is_valid_label_value(taint.value)
        if errs:
            causes.append(invalid(f"{p}.value", taint.value, ";".join(errs)))
        causes.extend(validate_taint_effect(taint.effect, f"{p}.effect", allow_empty=False))
        if (taint.key, taint.effect) in seen:
            causes.append(
                duplicate(
                    p, f"{taint.key}:{taint.effect}", "taints must be unique by key and effect pair"
                )
            )
        seen.add((taint.key, taint.effect))
    return causes


def validate_node(node: types_pb2.Node) -> list[Cause]:
    causes = validate_object_meta(node.metadata, namespaced=False)
    causes.extend(validate_taints(node.spec.taints, "spec.taints"))
    owners = node.spec.pod_preemption_policy.disable_resize_preemption
    p = "spec.podPreemptionPolicy.disableResizePreemption"
    if len(owners) > MAX_DISABLE_RESIZE_PREEMPTION:
        causes.append(too_many(p, len(owners), MAX_DISABLE_RESIZE_PREEMPTION))
    seen: set[str] = set()
    for i, owner in enumerate(owners):
        causes.extend(validate_qualified_name(owner, f"{p}[{i}]"))
        if owner in seen:
            causes.append(duplicate(f"{p}[{i}]", owner))
        seen.add(owner)
    causes.extend(
        validate_dual_stack(node.spec.pod_cidrs, "spec.podCIDRs", parse=_parse_cidr, what="CIDR")
    )
    # upstream's ValidateNodeResources checks the quantities only, not the names: a kubelet
    # reports resources such as attachable-volumes-csi-<driver> (pkg/apis/core/validation).
    for field in ("capacity", "allocatable"):
        resources: Mapping[str, str] = getattr(node.status, field)
        for name, text in sorted(resources.items()):
            causes.extend(validate_resource_quantity(name, text, f"status.{field}.{name}")[1])
    return causes


def _parse_cidr(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """net.ParseCIDR: host bits may be set."""
    return ipaddress.ip_network(value, strict=False)


def validate_node_update(new: types_pb2.Node, old: types_pb2.Node) -> list[Cause]:
    """ValidateNodeUpdate: the controller-manager may give a node its pod CIDRs once."""
    if old.spec.pod_cidrs and list(new.spec.pod_cidrs) != list(old.spec.pod_cidrs):
        return [
            forbidden(
                "spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'
            )
        ]
    return []
