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
import re
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
    too_long,
    too_many,
)
from kemu.machinery.validation.meta import (
    validate_label_name,
    validate_object_meta,
    validate_qualified_name,
)
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


def _topology(topo: Sequence[types_pb2.TopologyConstraint], path: str) -> list[Cause]:
    """schedulingConstraints.topology: at most one, each key a label key."""
    causes: list[Cause] = []
    tpath = f"{path}.topology"
    if len(topo) > MAX_TOPOLOGY_CONSTRAINTS:
        causes.append(too_many(tpath, len(topo), MAX_TOPOLOGY_CONSTRAINTS))
    for i, t in enumerate(topo):
        if not t.key:
            causes.append(required(f"{tpath}[{i}].key"))
        else:
            causes += validate_qualified_name(t.key, f"{tpath}[{i}].key")
    return causes


def _priority(
    g: types_pb2.PodGroupTemplate
    | types_pb2.PodGroupSpec
    | types_pb2.CompositePodGroupTemplate
    | types_pb2.CompositePodGroupSpec,
    path: str,
) -> list[Cause]:
    """priorityClassName a DNS subdomain (k8s-long-name); priority at most
    HighestUserDefinablePriority."""
    causes: list[Cause] = []
    if g.priority_class_name:
        causes += [
            invalid(f"{path}.priorityClassName", g.priority_class_name, m)
            for m in is_dns1123_subdomain(g.priority_class_name)
        ]
    if g.HasField("priority") and g.priority > MAX_PRIORITY:
        causes.append(
            invalid(f"{path}.priority", g.priority, f"must be less than or equal to {MAX_PRIORITY}")
        )
    return causes


def _preemption_policy(
    g: types_pb2.PodGroupTemplate
    | types_pb2.PodGroupSpec
    | types_pb2.CompositePodGroupTemplate
    | types_pb2.CompositePodGroupSpec,
    path: str,
    rules: PodGroupRules,
) -> list[Cause]:
    """preemptionPolicy: Forbidden with PodGroupPreemptionPolicy off, else the enum."""
    if not g.HasField("preemption_policy"):
        return []
    if not rules.preemption_policy:
        return [_gate_off(f"{path}.preemptionPolicy")]
    if g.preemption_policy not in PREEMPTION_POLICIES:
        return [not_supported(f"{path}.preemptionPolicy", g.preemption_policy, PREEMPTION_POLICIES)]
    return []


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
        causes += _topology(g.scheduling_constraints.topology, f"{path}.schedulingConstraints")
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
        causes += _priority(g, path)
    causes += _preemption_policy(g, path, rules)
    return causes


# ---------------------------------------------------------------- the composite group fields


def _composite_fields(
    g: types_pb2.CompositePodGroupTemplate | types_pb2.CompositePodGroupSpec,
    path: str,
    rules: PodGroupRules,
) -> list[Cause]:
    """What a CompositePodGroupTemplate and a CompositePodGroupSpec share (declarative tags
    of scheduling/v1alpha3/types.go at 1.37): the basic | gang union with
    gang.minGroupCount >= 1, schedulingConstraints' topology, disruptionMode's union, the priority fields, preemptionPolicy
    (PodGroupPreemptionPolicy)."""
    policy = g.scheduling_policy
    ppath = f"{path}.schedulingPolicy"
    causes = _union(ppath, ("basic", "gang"), [n for n in ("basic", "gang") if policy.HasField(n)])
    if policy.HasField("gang"):
        n = policy.gang.min_group_count
        if n == 0:
            causes.append(required(f"{ppath}.gang.minGroupCount"))
        elif n < 1:
            causes.append(
                invalid(f"{ppath}.gang.minGroupCount", n, "must be greater than or equal to 1")
            )
    if g.HasField("scheduling_constraints"):  # (dropped without its gate: the strategy's)
        causes += _topology(g.scheduling_constraints.topology, f"{path}.schedulingConstraints")
    if g.HasField("disruption_mode"):
        members = [m for m in ("single", "all") if g.disruption_mode.HasField(m)]
        causes += _union(f"{path}.disruptionMode", ("single", "all"), members)
    causes += _priority(g, path)
    causes += _preemption_policy(g, path, rules)
    return causes


def _workload_ref(ref: types_pb2.WorkloadReference, base: str, template_field: str) -> list[Cause]:
    """workloadName a DNS subdomain, the template's name a DNS label; both required."""
    causes: list[Cause] = []
    if not ref.workload_name:
        causes.append(required(f"{base}.workloadName"))
    else:
        causes += [
            invalid(f"{base}.workloadName", ref.workload_name, m)
            for m in is_dns1123_subdomain(ref.workload_name)
        ]
    if not ref.template_name:
        causes.append(required(f"{base}.{template_field}"))
    else:
        causes += [
            invalid(f"{base}.{template_field}", ref.template_name, m)
            for m in is_dns1123_label(ref.template_name)
        ]
    return causes


# ---------------------------------------------------------------- Workload


def _templates_path(rules: PodGroupRules) -> str:
    return "spec.podGroups" if rules.minor <= 35 else "spec.podGroupTemplates"


def validate_workload(w: types_pb2.Workload, rules: PodGroupRules) -> list[Cause]:
    causes = validate_object_meta(w.metadata, namespaced=True)
    if w.spec.HasField("controller_ref"):
        causes += _controller_ref(w.spec.controller_ref, "spec.controllerRef")
    templates = w.spec.pod_group_templates
    composites = w.spec.composite_pod_group_templates
    path = _templates_path(rules)
    if rules.minor >= 37:
        # 1.37: podGroupTemplates and compositePodGroupTemplates are a union (+k8s:unionMember
        # both), the second forbidden with CompositePodGroup off
        if composites and not rules.composite:
            causes.append(_gate_off("spec.compositePodGroupTemplates"))
        set_ = [
            m
            for m, v in (
                ("podGroupTemplates", templates),
                ("compositePodGroupTemplates", composites),
            )
            if v
        ]
        causes += _union("spec", ("podGroupTemplates", "compositePodGroupTemplates"), set_)
    elif not templates:
        # 1.35's hand-written detail; 1.36 validate.RequiredSlice's bare Required
        causes.append(required(path, "must have at least one item" if rules.minor <= 35 else ""))
    causes += _template_list(templates, path, rules)
    if rules.minor >= 37:
        causes += _composite_template_list(composites, "spec.compositePodGroupTemplates", rules)
        causes += _tree_rules(w.spec)
    return causes


def _template_list(
    templates: Sequence[types_pb2.PodGroupTemplate], path: str, rules: PodGroupRules
) -> list[Cause]:
    """A list of PodGroupTemplates: at most 8, unique DNS-label names, each one's fields."""
    causes: list[Cause] = []
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        causes.append(too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES))
    causes += _names([t.name for t in templates], path, rules.minor)
    for i, t in enumerate(templates):
        p = f"{path}[{i}]"
        if rules.minor <= 35:
            has = t.HasField("scheduling_policy")
            causes += _policy(t.scheduling_policy, f"{p}.policy", has, rules.minor)
        else:
            causes += _group_fields(t, p, rules)
    return causes


def _composite_template_list(
    templates: Sequence[types_pb2.CompositePodGroupTemplate], path: str, rules: PodGroupRules
) -> list[Cause]:
    """A list of CompositePodGroupTemplates, each with its children lists, recursively."""
    causes: list[Cause] = []
    if len(templates) > MAX_POD_GROUP_TEMPLATES:
        causes.append(too_many(path, len(templates), MAX_POD_GROUP_TEMPLATES))
    causes += _names([t.name for t in templates], path, rules.minor)
    for i, t in enumerate(templates):
        p = f"{path}[{i}]"
        causes += _composite_fields(t, p, rules)
        causes += _template_list(t.pod_group_templates, f"{p}.podGroupTemplates", rules)
        causes += _composite_template_list(
            t.composite_pod_group_templates, f"{p}.compositePodGroupTemplates", rules
        )
    return causes


MAX_TEMPLATE_DEPTH: Final = 4
"""WorkloadMaxTreeDepth (scheduling/v1alpha3 and v1beta1, 1.37): the depth of a Workload's
tree of templates, its leaves (PodGroupTemplates) included."""


def _tree_rules(spec: types_pb2.WorkloadSpec) -> list[Cause]:
    """1.37's hand-written rules of a Workload's tree (ValidateWorkloadSpec, upstream
    pkg/apis/scheduling/validation/validation.go): template names unique across the tree,
    the tree at most WorkloadMaxTreeDepth deep, one priority across it, every composite
    template with at least one child."""
    causes = _tree_names(spec)
    path = "spec.compositePodGroupTemplates"
    for i, t in enumerate(spec.composite_pod_group_templates):
        if _too_deep(t, 1):
            shown = json.dumps(
                [message_to_dict(c) for c in t.composite_pod_group_templates],
                separators=(",", ":"),
            )
            causes.append(
                invalid(
                    f"{path}[{i}]",
                    shown,
                    f"maximum template hierarchy depth is {MAX_TEMPLATE_DEPTH}",
                )
            )
    causes += _tree_priority(spec)
    for i, t in enumerate(spec.composite_pod_group_templates):
        causes += _has_children(t, f"{path}[{i}]")
    return causes


def _too_deep(t: types_pb2.CompositePodGroupTemplate, depth: int) -> bool:
    """A composite template at depth MAX_TEMPLATE_DEPTH leaves no level for its leaves."""
    if depth == MAX_TEMPLATE_DEPTH:
        return True
    return any(_too_deep(c, depth + 1) for c in t.composite_pod_group_templates)


def _tree_names(spec: types_pb2.WorkloadSpec) -> list[Cause]:
    """A name used twice in the tree: Duplicate at the later one (within one list, the list's
    own uniqueness reports it: `_names`)."""
    seen = {t.name for t in spec.pod_group_templates}
    return _composite_names(spec.composite_pod_group_templates, "spec", seen)


def _composite_names(
    templates: Sequence[types_pb2.CompositePodGroupTemplate], path: str, seen: set[str]
) -> list[Cause]:
    causes: list[Cause] = []
    for i, t in enumerate(templates):
        if t.name in seen:
            p = f"{path}.compositePodGroupTemplates[{i}].name"
            causes.append(duplicate(p, t.name))
    seen.update(t.name for t in templates)
    for i, t in enumerate(templates):
        p = f"{path}.compositePodGroupTemplates[{i}]"
        for j, child in enumerate(t.pod_group_templates):
            if child.name in seen:
                causes.append(duplicate(f"{p}.podGroupTemplates[{j}].name", child.name))
        seen.update(c.name for c in t.pod_group_templates)
        causes += _composite_names(t.composite_pod_group_templates, p, seen)
    return causes


def _priority_key(
    t: types_pb2.PodGroupTemplate | types_pb2.CompositePodGroupTemplate,
) -> tuple[str, int | None]:
    return (t.priority_class_name, t.priority if t.HasField("priority") else None)


def _tree_priority(spec: types_pb2.WorkloadSpec) -> list[Cause]:
    """One (priorityClassName, priority) across every template (validateWorkloadPriority:
    the PodGroupTemplates' message first, then the composite tree's)."""
    keys = [_priority_key(t) for t in spec.pod_group_templates]
    if len(set(keys)) > 1:
        return [invalid("spec", None, "detected multiple priority configurations")]
    first = keys[0] if keys else None

    def walk(t: types_pb2.CompositePodGroupTemplate) -> list[tuple[str, int | None]]:
        out = [_priority_key(t)]
        for c in t.composite_pod_group_templates:
            out += walk(c)
        return out + [_priority_key(c) for c in t.pod_group_templates]

    tree = [k for t in spec.composite_pod_group_templates for k in walk(t)]
    if len({*tree, *([first] if first is not None and tree else [])}) > 1:
        return [
            invalid(
                "spec",
                None,
                "all priority and priorityClassName values must be identical, detected "
                "multiple values",
            )
        ]
    return []


def _has_children(t: types_pb2.CompositePodGroupTemplate, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if not t.pod_group_templates and not t.composite_pod_group_templates:
        causes.append(
            invalid(
                path,
                t.name,
                "must have at least one child PodGroupTemplate or CompositePodGroupTemplate",
            )
        )
    for i, c in enumerate(t.composite_pod_group_templates):
        causes += _has_children(c, f"{path}.compositePodGroupTemplates[{i}]")
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
    causes += _templates_update(new_t, old_t, "spec.podGroupTemplates")
    causes += _composite_templates_update(
        new.spec.composite_pod_group_templates,
        old.spec.composite_pod_group_templates,
        "spec.compositePodGroupTemplates",
    )
    return causes


def _added_removed(new: Sequence[str], old: Sequence[str], path: str) -> list[Cause]:
    """validate.NoAddItem (the first added item) and NoRemoveItem of a list map by name."""
    causes: list[Cause] = []
    added = [i for i, n in enumerate(new) if n not in old]
    if added:
        causes.append(forbidden(f"{path}[{added[0]}]", "cannot add new items"))
    if any(n not in new for n in old):
        causes.append(forbidden(path, "cannot remove items"))
    return causes


def _templates_update(
    new_t: Sequence[types_pb2.PodGroupTemplate],
    old_t: Sequence[types_pb2.PodGroupTemplate],
    path: str,
) -> list[Cause]:
    by_name = {t.name: t for t in old_t}
    causes = _added_removed([t.name for t in new_t], list(by_name), path)
    for i, t in enumerate(new_t):
        before = by_name.get(t.name)
        if before is not None:
            causes += _group_update(t, before, f"{path}[{i}]")
    return causes


_CHILD_LISTS: Final = ("pod_group_templates", "composite_pod_group_templates")


def _composite_templates_update(
    new_t: Sequence[types_pb2.CompositePodGroupTemplate],
    old_t: Sequence[types_pb2.CompositePodGroupTemplate],
    path: str,
) -> list[Cause]:
    """Composite templates (1.37): neither added nor removed at any level; in each, the
    policy's variant fixed (minGroupCount may change) and every other field immutable."""
    by_name = {t.name: t for t in old_t}
    causes = _added_removed([t.name for t in new_t], list(by_name), path)
    for i, t in enumerate(new_t):
        before = by_name.get(t.name)
        if before is None:
            continue
        p = f"{path}[{i}]"
        causes += _variant_update(t.scheduling_policy, before.scheduling_policy, p)
        for fd in t.DESCRIPTOR.fields:
            if fd.name in ("name", "scheduling_policy", *_CHILD_LISTS):
                continue
            if _changed(t, before, fd.name):
                causes.append(forbidden(f"{p}.{fd.json_name}", _IMMUTABLE))
        causes += _templates_update(
            t.pod_group_templates, before.pod_group_templates, f"{p}.podGroupTemplates"
        )
        causes += _composite_templates_update(
            t.composite_pod_group_templates,
            before.composite_pod_group_templates,
            f"{p}.compositePodGroupTemplates",
        )
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


def _variant(
    policy: types_pb2.PodGroupSchedulingPolicy | types_pb2.CompositePodGroupSchedulingPolicy,
) -> str | None:
    if policy.HasField("basic"):
        return "basic"
    return "gang" if policy.HasField("gang") else None


def _variant_update(
    new: types_pb2.PodGroupSchedulingPolicy | types_pb2.CompositePodGroupSchedulingPolicy,
    old: types_pb2.PodGroupSchedulingPolicy | types_pb2.CompositePodGroupSchedulingPolicy,
    path: str,
) -> list[Cause]:
    """The policy's variant fixed: basic `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`
    (validate.NoSet's and NoUnset's messages)."""
    causes: list[Cause] = []
    before, after = _variant(old), _variant(new)
    policy = f"{path}.schedulingPolicy"
    if before == "basic" and after != "basic":
        causes.append(forbidden(f"{policy}.basic", _IMMUTABLE))
    if before == "gang" and after != "gang":
        causes.append(forbidden(f"{policy}.gang", "field cannot be cleared once set"))
    if before != "gang" and after == "gang":
        causes.append(forbidden(f"{policy}.gang", "field cannot be set once created"))
    return causes


def _group_update(
    new: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec,
    old: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec,
    path: str,
) -> list[Cause]:
    """1.37: every field immutable but gang.minCount; the policy's variant fixed (basic
    `+k8s:immutable`, gang `+k8s:update=NoSet,NoUnset`: validate.NoSet's and NoUnset's
    messages)."""
    causes = _variant_update(new.scheduling_policy, old.scheduling_policy, path)
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
        if rules.minor <= 36:
            base, template = "spec.podGroupTemplateRef.workload", "podGroupTemplateName"
        else:
            base, template = "spec.workloadRef", "templateName"
        causes += _workload_ref(spec.workload_ref, base, template)
    if spec.HasField("parent_composite_pod_group_name"):
        # +k8s:ifDisabled(CompositePodGroup)=+k8s:forbidden, else a k8s-long-name that needs
        # workloadRef (+k8s:dependentRequired)
        parent = spec.parent_composite_pod_group_name
        if not rules.composite:
            causes.append(_gate_off("spec.parentCompositePodGroupName"))
        else:
            causes += [
                invalid("spec.parentCompositePodGroupName", parent, m)
                for m in is_dns1123_subdomain(parent)
            ]
            if not spec.HasField("workload_ref"):
                causes.append(
                    required(
                        "spec.workloadRef", "required when `parentCompositePodGroupName` is set"
                    )
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


_CONDITION_REASON: Final = re.compile(r"[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?")
_CONDITION_REASON_ERROR: Final = (
    "a condition reason must start with alphabetic character, optionally followed by a string "
    "of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'"
)
_MAX_CONDITION_REASON: Final = 1024
_MAX_CONDITION_MESSAGE: Final = 32 * 1024


def validate_conditions(
    conditions: Sequence[types_pb2.Condition], path: str = "status.conditions"
) -> list[Cause]:
    """metav1validation.ValidateConditions of status.conditions (apimachinery
    pkg/apis/meta/v1/validation): types unique and label names, a known status, a
    non-negative observedGeneration, lastTransitionTime and reason set, the reason's format
    and length, the message's length."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        p = f"{path}[{i}]"
        if c.type in seen:
            causes.append(duplicate(f"{p}.type", c.type))
        seen.add(c.type)
        causes += validate_label_name(c.type, f"{p}.type")
        if c.status not in ("True", "False", "Unknown"):
            causes.append(not_supported(f"{p}.status", c.status, ("False", "True", "Unknown")))
        if c.observed_generation < 0:
            causes.append(
                invalid(
                    f"{p}.observedGeneration",
                    c.observed_generation,
                    "must be greater than or equal to zero",
                )
            )
        if not c.HasField("last_transition_time"):
            causes.append(required(f"{p}.lastTransitionTime", "must be set"))
        if not c.reason:
            causes.append(required(f"{p}.reason", "must be set"))
        else:
            if not _CONDITION_REASON.fullmatch(c.reason):
                causes.append(invalid(f"{p}.reason", c.reason, _CONDITION_REASON_ERROR))
            if len(c.reason) > _MAX_CONDITION_REASON:
                causes.append(too_long(f"{p}.reason", _MAX_CONDITION_REASON))
        if len(c.message) > _MAX_CONDITION_MESSAGE:
            causes.append(too_long(f"{p}.message", _MAX_CONDITION_MESSAGE))
    return causes


def validate_pod_group_status_update(
    new: types_pb2.PodGroup, old: types_pb2.PodGroup, rules: PodGroupRules
) -> list[Cause]:
    """ValidatePodGroupStatusUpdate: the conditions, and claim statuses naming spec claims."""
    causes = validate_conditions(new.status.conditions)
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


# ---------------------------------------------------------------- CompositePodGroup (1.37)


def validate_composite_pod_group(
    cpg: types_pb2.CompositePodGroup, rules: PodGroupRules
) -> list[Cause]:
    """ValidateCompositePodGroup (the name a DNS subdomain) and the declarative tags of
    scheduling/v1alpha3 CompositePodGroupSpec: parentCompositePodGroupName a
    k8s-long-name, workloadRef required (no standalone CompositePodGroup), the composite
    fields (`_composite_fields`). The tree itself (depth, cycles, one Workload) is checked by
    the scheduler at run time (the condition's reason Invalid), not here."""
    causes = validate_object_meta(cpg.metadata, namespaced=True)
    spec = cpg.spec
    if spec.HasField("parent_composite_pod_group_name"):
        parent = spec.parent_composite_pod_group_name
        causes += [
            invalid("spec.parentCompositePodGroupName", parent, m)
            for m in is_dns1123_subdomain(parent)
        ]
    if not spec.HasField("workload_ref"):
        causes.append(required("spec.workloadRef"))
    else:
        causes += _workload_ref(spec.workload_ref, "spec.workloadRef", "templateName")
    causes += _composite_fields(spec, "spec", rules)
    return causes


def validate_composite_pod_group_update(
    new: types_pb2.CompositePodGroup, old: types_pb2.CompositePodGroup, rules: PodGroupRules
) -> list[Cause]:
    """Every spec field immutable (`+k8s:immutable`), schedulingPolicy as a whole too
    (minGroupCount included, unlike a PodGroup's minCount), its variant's rules beside."""
    causes = _variant_update(new.spec.scheduling_policy, old.spec.scheduling_policy, "spec")
    for fd in new.spec.DESCRIPTOR.fields:
        if _changed(new.spec, old.spec, fd.name):
            causes.append(forbidden(f"spec.{fd.json_name}", _IMMUTABLE))
    return causes


def validate_composite_pod_group_status_update(
    new: types_pb2.CompositePodGroup, old: types_pb2.CompositePodGroup, rules: PodGroupRules
) -> list[Cause]:
    """ValidateCompositePodGroupStatusUpdate: the conditions."""
    return validate_conditions(new.status.conditions)
