"""Workload and PodGroup validation (upstream pkg/apis/scheduling/validation/validation.go), each
emulated version as its own (kemu.machinery.podgroups.PodGroupRules):

- 1.35 (hand-written, kubernetes@8a84988b): `spec.podGroups[i].{name, policy}`, whole list
  and controllerRef immutable, reported at the paths `podGroups` and `controllerRef` (no
  `spec.` prefix: upstream's field.NewPath quirk, kept).
- 1.36 (declarative tags of scheduling/v1alpha2/types.go): `spec.podGroupTemplates`, maxItems
  8, unique names, the policy union, gang.minCount >= 1, the gated fields forbidden while
  their gate is off, templates and a PodGroup's policy immutable.
- 1.37 (v1beta1): the same, with disruptionMode a union, preemptionPolicy
  (PodGroupPreemptionPolicy), gang.minCount mutable but the policy's variant fixed,
  templates neither added nor removed, one priority across a Workload's templates.

From 1.36 the messages are the declarative validators' (k8s.io/apimachinery pkg/api/validate,
read in pkg/apis/scheduling/v1alpha2/zz_generated.validations.go @008b3652): a union's
"must specify one of" / "must specify exactly one of", RequiredValue for a zero minCount,
Minimum's "must be greater than or equal to 1", a field behind a disabled gate a bare
`Forbidden`, Immutable's `Forbidden: field is immutable` (a field unset before may be set).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import message_to_dict
from kemu.machinery.errors import Cause
from kemu.machinery.podgroups import PodGroupRules
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_many,
)
from kemu.machinery.validation.meta import validate_object_meta, validate_qualified_name
from kemu.machinery.validation.names import is_dns1123_label, is_dns1123_subdomain

MAX_POD_GROUP_TEMPLATES: Final = 8
"""WorkloadMaxPodGroups (1.35) / WorkloadMaxPodGroupTemplates (1.36+)."""
MAX_RESOURCE_CLAIMS: Final = 4
MAX_TOPOLOGY_CONSTRAINTS: Final = 1
MAX_PRIORITY: Final = 1_000_000_000
PREEMPTION_POLICIES: Final = ("Never", "PreemptLowerPriority")

_IMMUTABLE: Final = "field is immutable"


def _gate_off(path: str) -> Cause:
    """validate.IfOption(<gate>, false, Forbidden*): a bare Forbidden, no detail."""
    return Cause(path, "Forbidden")


def _union(path: str, members: Sequence[str], set_: Sequence[str]) -> list[Cause]:
    """validate.Union: exactly one member set."""
    names = ", ".join(f"`{m}`" for m in members)
    if not set_:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(set_) > 1:
        shown = "{" + ", ".join(f"`{m}`" for m in set_) + "}"
        return [invalid(path, shown, f"must specify exactly one of: {names}")]
    return []


def _path_segment(value: str) -> list[str]:
    """IsValidPathSegmentName (apimachinery pkg/api/validation/path)."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _shown(msg: object) -> str:
    """A struct as an error shows it (its JSON)."""
    if isinstance(msg, types_pb2.TypedLocalObjectReference | types_pb2.PodGroupTemplate):
        return json.dumps(message_to_dict(msg), separators=(",", ":"))
    return str(msg)


def _controller_ref(ref: types_pb2.TypedLocalObjectReference, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if ref.api_group:
        causes += [
            invalid(f"{path}.apiGroup", ref.api_group, m)
            for m in is_dns1123_subdomain(ref.api_group)
        ]
    for name, value in (("kind", ref.kind), ("name", ref.name)):
        if not value:
            causes.append(required(f"{path}.{name}"))
        else:
            causes += [invalid(f"{path}.{name}", value, m) for m in _path_segment(value)]
    return causes


def _policy(
    policy: types_pb2.PodGroupSchedulingPolicy, path: str, has: bool, minor: int
) -> list[Cause]:
    """The basic | gang union and gang.minCount."""
    set_ = [n for n in ("basic", "gang") if policy.HasField(n)]
    if minor >= 36:
        causes = _union(path, ("basic", "gang"), set_)
        if policy.HasField("gang"):
            n = policy.gang.min_count
            if n == 0:
                causes.append(required(f"{path}.gang.minCount"))
            elif n < 1:
                causes.append(
                    invalid(f"{path}.gang.minCount", n, "must be greater than or equal to 1")
                )
        return causes
    if not has or not set_:
        return [required(path, "exactly one of `basic`, `gang` is required")]
    if len(set_) > 1:
        return [
            invalid(
                path,
                "{`basic`, `gang`}",
                "exactly one of `basic`, `gang` is required, but multiple fields are set",
            )
        ]
    if policy.HasField("gang"):
        n = policy.gang.min_count
        if n <= 0:
            return [invalid(f"{path}.gang.minCount", n, "must be greater than zero")]
    return []


def _names(names: Sequence[str], path: str, minor: int) -> list[Cause]:
    """Each item's name a DNS label, unique (1.35: Duplicate at the name; 1.36+:
    validate.Unique's Duplicate at the item)."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, name in enumerate(names):
        p = f"{path}[{i}].name"
        if not name:
            causes.append(required(p))
            continue
        causes += [invalid(p, name, m) for m in is_dns1123_label(name)]
        if name in seen:
            causes.append(duplicate(p if minor <= 35 else f"{path}[{i}]", name))
        seen.add(name)
    return causes


# ---------------------------------------------------------------- the group fields (1.36+)


def _group_fields(
    g: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec, path: str, rules: PodGroupRules
) -> list[Cause]:
    """What a PodGroupTemplate and a PodGroupSpec share (1.36+)."""
    causes = _policy(
        g.scheduling_policy,
        f"{path}.schedulingPolicy",
        g.HasField("scheduling_policy"),
        rules.minor,
    )
    if g.HasField("scheduling_constraints"):
        topo = g.scheduling_constraints.topology
        tpath = f"{path}.schedulingConstraints.topology"
        if len(topo) > MAX_TOPOLOGY_CONSTRAINTS:
            causes.append(too_many(tpath, len(topo), MAX_TOPOLOGY_CONSTRAINTS))
        for i, t in enumerate(topo):
            if not t.key:
                causes.append(required(f"{tpath}[{i}].key"))
            else:
                causes += validate_qualified_name(t.key, f"{tpath}[{i}].key")
    claims = g.resource_claims
    cpath = f"{path}.resourceClaims"
    if len(claims) > MAX_RESOURCE_CLAIMS:
        causes.append(too_many(cpath, len(claims), MAX_RESOURCE_CLAIMS))
    causes += _names([c.name for c in claims], cpath, rules.minor)
    for i, c in enumerate(claims):
        members = [
            m
            for m, f in (
                ("resourceClaimName", "resource_claim_name"),
                ("resourceClaimTemplateName", "resource_claim_template_name"),
            )
            if c.HasField(f)
        ]
        causes += _union(
            f"{cpath}[{i}]", ("resourceClaimName", "resourceClaimTemplateName"), members
        )
    disruption = g.HasField("disruption_mode")
    if not rules.disruption_fields:
        for name, used in (
            ("disruptionMode", disruption),
            ("priorityClassName", bool(g.priority_class_name)),
            ("priority", g.HasField("priority")),
        ):
            if used:
                causes.append(_gate_off(f"{path}.{name}"))
    else:
        if disruption and rules.minor >= 37:
            members = [m for m in ("single", "all") if g.disruption_mode.HasField(m)]
            causes += _union(f"{path}.disruptionMode", ("single", "all"), members)
        if g.priority_class_name:
            causes += [
                invalid(f"{path}.priorityClassName", g.priority_class_name, m)
                for m in is_dns1123_subdomain(g.priority_class_name)
            ]
        if g.HasField("priority") and g.priority > MAX_PRIORITY:
            causes.append(
                invalid(
                    f"{path}.priority", g.priority, f"must be less than or equal to {MAX_PRIORITY}"
                )
            )
    if g.HasField("preemption_policy"):
        if not rules.preemption_policy:
            causes.append(_gate_off(f"{path}.preemptionPolicy"))
        elif g.preemption_policy not in PREEMPTION_POLICIES:
            causes.append(
                not_supported(f"{path}.preemptionPolicy", g.preemption_policy, PREEMPTION_POLICIES)
            )
    return causes


# ---------------------------------------------------------------- Workload


def _templates_path(rules: PodGroupRules) -> str:
    return "spec.podGroups" if rules.minor <= 35 else "spec.podGroupTemplates"


def validate_workload(w: types_pb2.Workload, rules: PodGroupRules) -> list[Cause]:
    causes = validate_object_meta(w.metadata, namespaced=True)
    if w.spec.HasField("controller_ref"):
        causes += _controller_ref(w.spec.controller_ref, "spec.controllerRef")
    templates = w.spec.pod_group_templates
    path = _templates_path(rules)
    if not templates:
        # 1.35's hand-written detail; 1.36+ validate.RequiredSlice's bare Required
        causes.append(required(path, "must have at least one item" if rules.minor <= 35 else ""))
    elif len(templates) > MAX_POD_GROUP_TEMPLATES:
        causes.append(too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES))
    causes += _names([t.name for t in templates], path, rules.minor)
    for i, t in enumerate(templates):
        p = f"{path}[{i}]"
        if rules.minor <= 35:
            has = t.HasField("scheduling_policy")
            causes += _policy(t.scheduling_policy, f"{p}.policy", has, rules.minor)
        else:
            causes += _group_fields(t, p, rules)
    if rules.minor >= 37:
        priorities = {
            (t.priority_class_name, t.priority if t.HasField("priority") else None)
            for t in templates
        }
        if len(priorities) > 1:
            causes.append(invalid("spec", None, "detected multiple priority configurations"))
    return causes


def validate_workload_update(
    new: types_pb2.Workload, old: types_pb2.Workload, rules: PodGroupRules
) -> list[Cause]:
    """The update rules (the object's own rules run too: validate_object)."""
    causes: list[Cause] = []
    # set once: a Workload without a controllerRef may get one
    if _changed(new.spec, old.spec, "controller_ref"):
        if rules.minor <= 35:  # (upstream's path without `spec.`)
            causes.append(invalid("controllerRef", _shown(new.spec.controller_ref), _IMMUTABLE))
        else:
            causes.append(forbidden("spec.controllerRef", _IMMUTABLE))
    new_t, old_t = new.spec.pod_group_templates, old.spec.pod_group_templates
    if rules.minor <= 35:
        if list(new_t) != list(old_t):
            causes.append(invalid("podGroups", "[...]", _IMMUTABLE))
        return causes
    if rules.minor == 36:
        if list(new_t) != list(old_t):
            causes.append(forbidden("spec.podGroupTemplates", _IMMUTABLE))
        return causes
    # 1.37: NoAddItem, NoRemoveItem; in each template only gang.minCount may change
    by_name = {t.name: t for t in old_t}
    new_names = {t.name for t in new_t}
    added = [i for i, t in enumerate(new_t) if t.name not in by_name]
    if added:  # (validate.NoAddItem reports the first)
        causes.append(forbidden(f"spec.podGroupTemplates[{added[0]}]", "cannot add new items"))
    if any(n not in new_names for n in by_name):
        causes.append(forbidden("spec.podGroupTemplates", "cannot remove items"))
    for i, t in enumerate(new_t):
        before = by_name.get(t.name)
        if before is not None:
            causes += _group_update(t, before, f"spec.podGroupTemplates[{i}]")
    return causes


def _changed(new: Message, old: Message, name: str) -> bool:
    """validate.Immutable: the field differs from the stored one, which was set (a field
    unset before may be set once: isUnsetForReflect)."""
    fd = old.DESCRIPTOR.fields_by_name[name]
    before = getattr(old, name)
    if (fd.has_presence and not old.HasField(name)) or (not fd.has_presence and not before):
        return False
    after = getattr(new, name)
    return bool(after != before or (fd.has_presence and not new.HasField(name)))


def _variant(policy: types_pb2.PodGroupSchedulingPolicy) -> str | None:
    if policy.HasField("basic"):
        return "basic"
    return "gang" if policy.HasField("gang") else None


def _group_update(
    new: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec,
    old: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec,
    path: str,
) -> list[Cause]:
    """1.37: every field immutable but gang.minCount; the policy's variant fixed (basic
    `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`: validate.NoSet's and NoUnset's
    messages)."""
    causes: list[Cause] = []
    before, after = _variant(old.scheduling_policy), _variant(new.scheduling_policy)
    policy = f"{path}.schedulingPolicy"
    if before == "basic" and after != "basic":
        causes.append(forbidden(f"{policy}.basic", _IMMUTABLE))
    if before == "gang" and after != "gang":
        causes.append(forbidden(f"{policy}.gang", "field cannot be cleared once set"))
    if before != "gang" and after == "gang":
        causes.append(forbidden(f"{policy}.gang", "field cannot be set once created"))
    for fd in new.DESCRIPTOR.fields:
        if fd.name in ("scheduling_policy", "name"):
            continue
        if _changed(new, old, fd.name):
            causes.append(forbidden(f"{path}.{fd.json_name}", _IMMUTABLE))
    return causes


# ---------------------------------------------------------------- PodGroup (1.36+)


def validate_pod_group(pg: types_pb2.PodGroup, rules: PodGroupRules) -> list[Cause]:
    causes = validate_object_meta(pg.metadata, namespaced=True)
    spec = pg.spec
    if spec.HasField("workload_ref"):
        ref = spec.workload_ref
        if rules.minor <= 36:
            base = "spec.podGroupTemplateRef.workload"
            names = (
                ("workloadName", ref.workload_name),
                ("podGroupTemplateName", ref.template_name),
            )
        else:
            base = "spec.workloadRef"
            names = (("workloadName", ref.workload_name), ("templateName", ref.template_name))
        (wl_field, wl), (tpl_field, tpl) = names
        if not wl:
            causes.append(required(f"{base}.{wl_field}"))
        else:
            causes += [invalid(f"{base}.{wl_field}", wl, m) for m in is_dns1123_subdomain(wl)]
        if not tpl:
            causes.append(required(f"{base}.{tpl_field}"))
        else:
            causes += [invalid(f"{base}.{tpl_field}", tpl, m) for m in is_dns1123_label(tpl)]
    if spec.HasField("parent_composite_pod_group_name"):
        if not rules.composite:
            causes.append(_gate_off("spec.parentCompositePodGroupName"))
        elif not spec.HasField("workload_ref"):
            causes.append(
                required("spec.workloadRef", "required when `parentCompositePodGroupName` is set")
            )
    causes += _group_fields(spec, "spec", rules)
    return causes


def validate_pod_group_update(
    new: types_pb2.PodGroup, old: types_pb2.PodGroup, rules: PodGroupRules
) -> list[Cause]:
    if rules.minor >= 37:
        return _group_update(new.spec, old.spec, "spec")
    # 1.36: podGroupTemplateRef, schedulingPolicy (minCount too) and resourceClaims immutable;
    # schedulingConstraints and the WorkloadAwarePreemption fields while their gate is on
    causes: list[Cause] = []
    checked = {
        "workload_ref": "podGroupTemplateRef",
        "scheduling_policy": "schedulingPolicy",
        "resource_claims": "resourceClaims",
    }
    if rules.topology_aware:
        checked["scheduling_constraints"] = "schedulingConstraints"
    if rules.disruption_fields:
        checked.update(
            disruption_mode="disruptionMode",
            priority_class_name="priorityClassName",
            priority="priority",
        )
    for name, json_name in checked.items():
        if _changed(new.spec, old.spec, name):
            causes.append(forbidden(f"spec.{json_name}", _IMMUTABLE))
    return causes


def validate_pod_group_status_update(
    new: types_pb2.PodGroup, old: types_pb2.PodGroup, rules: PodGroupRules
) -> list[Cause]:
    """ValidatePodGroupStatusUpdate: the conditions, and claim statuses naming spec claims."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(new.status.conditions):
        p = f"status.conditions[{i}]"
        if not c.type:
            causes.append(required(f"{p}.type"))
        elif c.type in seen:
            causes.append(duplicate(f"{p}.type", c.type))
        seen.add(c.type)
        if c.status not in ("True", "False", "Unknown"):
            causes.append(not_supported(f"{p}.status", c.status, ("False", "True", "Unknown")))
        if not c.HasField("last_transition_time"):
            causes.append(required(f"{p}.lastTransitionTime", "must be set"))
        if not c.reason:
            causes.append(required(f"{p}.reason"))
    claims = {c.name for c in new.spec.resource_claims}
    for i, s in enumerate(new.status.resource_claim_statuses):
        if s.name not in claims:
            causes.append(
                invalid(
                    f"status.resourceClaimStatuses[{i}].name",
                    s.name,
                    "must match the name of an entry in `spec.resourceClaims`",
                )
            )
    return causes
