"""The Workload API (scheduling.k8s.io Workload and PodGroup) as each emulated version serves
it, and the rules that differ by version and gate.

kemu's messages (proto/kemu/api/v1/types.proto) have 1.37's scheduling.k8s.io/v1beta1 shape,
which the gRPC edge carries at every version; the REST edge converts the group versions of
older releases to and from it here (upstream's conversion functions between each versioned
type and the internal one, pkg/apis/scheduling/v1alpha1|v1alpha2):

- 1.35, v1alpha1 (kubernetes/api v0.35.0 scheduling/v1alpha1/types.go): Workload only, its
  groups nested as `spec.podGroups[]{name, policy{basic|gang{minCount}}}`.
- 1.36, v1alpha2 (v0.36.0 scheduling/v1alpha2/types.go): `spec.podGroupTemplates[]`, a
  PodGroup's `spec.podGroupTemplateRef.workload{workloadName, podGroupTemplateName}`, and
  `disruptionMode` a string enum "Pod" | "PodGroup" (1.37: the union {single: {}} | {all: {}},
  commit "Convert DisruptionMode from enum to struct").
- 1.37, v1beta1 and v1alpha3: the messages' own shape (v1alpha3 adds the kind
  CompositePodGroup, KEP-6012, served there only; both have the Workload's
  compositePodGroupTemplates).

A version's `Shape` lists its fields: a field it does not have is an unknown field
(fieldValidation, as the JSON decoder of that version finds it) and its OpenAPI schema
(kubectl explain) is written from the same table.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import autoscaling, convert, resource_versions
from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import (
    SCHEDULING_V1ALPHA1,
    SCHEDULING_V1ALPHA2,
    Kind,
    kind_of,
)
from kemu.machinery.validation.field import invalid, not_supported

# ---------------------------------------------------------------- the rules by version and gate


@dataclass(frozen=True, slots=True)
class PodGroupRules:
    """What the apiserver's strategies and validation read of the Workload API: the emulated
    minor version (1.35, 1.36 and 1.37 each behave as their own) and the gates of its
    optional fields, resolved once (kemu.component.strategy_options)."""

    minor: int = 37
    generic_workload: bool = True
    """GenericWorkload: the pod's reference to its group is kept (else dropped on create
    unless the stored pod had one)."""
    topology_aware: bool = False
    """TopologyAwareWorkloadScheduling (1.36+): schedulingConstraints."""
    workload_aware_preemption: bool = True
    """1.36's WorkloadAwarePreemption: disruptionMode, priorityClassName and priority (not
    gated at 1.37, where the gate was folded into GenericWorkload)."""
    preemption_policy: bool = False
    """PodGroupPreemptionPolicy (1.37): preemptionPolicy."""
    composite: bool = False
    """CompositePodGroup (1.37): a PodGroup's parentCompositePodGroupName and a Workload's
    compositePodGroupTemplates (the kind itself is served only with the gate on)."""
    resource_claims: bool = False
    """DRAWorkloadResourceClaims (1.36+): resourceClaims and status.resourceClaimStatuses."""
    protection_admission: bool = True
    """The PodGroupProtection admission plugin exists (1.37: VersionRules
    podgroup_protection_admission); it acts with GenericWorkload on."""

    @property
    def disruption_fields(self) -> bool:
        """Whether disruptionMode, priorityClassName and priority exist and are enabled."""
        return self.minor >= 37 or (self.minor == 36 and self.workload_aware_preemption)


DEFAULT_RULES: Final = PodGroupRules()

POD_GROUP_PROTECTION_FINALIZER: Final = "scheduling.k8s.io/podgroup-protection"
"""pkg/apis/scheduling PodGroupProtectionFinalizer (GroupName + "/podgroup-protection")."""
COMPOSITE_POD_GROUP_PROTECTION_FINALIZER: Final = "scheduling.k8s.io/compositepodgroup-protection"
"""pkg/apis/scheduling CompositePodGroupProtectionFinalizer (1.37): stamped by the
PodGroupProtection admission plugin, removed by the PodGroup protection controller."""

# ---------------------------------------------------------------- shapes


@dataclass(frozen=True)
class Obj:
    """A versioned struct: its schema name and JSON fields."""

    name: str
    fields: tuple[tuple[str, Shape], ...]
    description: str = ""


@dataclass(frozen=True)
class Arr:
    item: Shape


Shape = Obj | Arr | str
"""A struct, a list, or a leaf: "string", "integer", or the full name of one of kemu's
messages (kemu.api.v1.ObjectMeta) whose fields the message decoder checks itself."""

OBJECT_META: Final = "kemu.api.v1.ObjectMeta"
CONDITION: Final = "kemu.api.v1.Condition"

_REF: Final = Obj(
    "TypedLocalObjectReference",
    (("apiGroup", "string"), ("kind", "string"), ("name", "string")),
    "TypedLocalObjectReference allows to reference typed object inside the same namespace.",
)
_BASIC: Final = Obj(
    "BasicSchedulingPolicy",
    (),
    "BasicSchedulingPolicy indicates that standard Kubernetes scheduling behavior should be used.",
)
_GANG: Final = Obj(
    "GangSchedulingPolicy",
    (("minCount", "integer"),),
    "GangSchedulingPolicy defines the parameters for gang scheduling.",
)

# 1.35: scheduling.k8s.io/v1alpha1
_V1ALPHA1_POD_GROUP: Final = Obj(
    "PodGroup",
    (
        ("name", "string"),
        (
            "policy",
            Obj(
                "PodGroupPolicy",
                (("basic", _BASIC), ("gang", _GANG)),
                "PodGroupPolicy defines the scheduling configuration for a PodGroup.",
            ),
        ),
    ),
    "PodGroup represents a set of pods with a common scheduling policy.",
)
V1ALPHA1_WORKLOAD: Final = Obj(
    "Workload",
    (
        ("metadata", OBJECT_META),
        (
            "spec",
            Obj(
                "WorkloadSpec",
                (("controllerRef", _REF), ("podGroups", Arr(_V1ALPHA1_POD_GROUP))),
                "WorkloadSpec defines the desired state of a Workload.",
            ),
        ),
    ),
    "Workload allows for expressing scheduling constraints that should be used when managing "
    "lifecycle of workloads from scheduling perspective, including scheduling, preemption, "
    "eviction and other phases.",
)

# 1.36: scheduling.k8s.io/v1alpha2
_POLICY: Final = Obj(
    "PodGroupSchedulingPolicy",
    (("basic", _BASIC), ("gang", _GANG)),
    "PodGroupSchedulingPolicy defines the scheduling configuration for a PodGroup. Exactly one "
    "policy must be set.",
)
_CONSTRAINTS: Final = Obj(
    "PodGroupSchedulingConstraints",
    (("topology", Arr(Obj("TopologyConstraint", (("key", "string"),)))),),
    "PodGroupSchedulingConstraints defines scheduling constraints (e.g. topology) for a PodGroup.",
)
_CLAIM: Final = Obj(
    "PodGroupResourceClaim",
    (
        ("name", "string"),
        ("resourceClaimName", "string"),
        ("resourceClaimTemplateName", "string"),
    ),
)
_V1ALPHA2_GROUP_FIELDS: Final[tuple[tuple[str, Shape], ...]] = (
    ("schedulingPolicy", _POLICY),
    ("schedulingConstraints", _CONSTRAINTS),
    ("resourceClaims", Arr(_CLAIM)),
    ("disruptionMode", "string"),
    ("priorityClassName", "string"),
    ("priority", "integer"),
)
V1ALPHA2_WORKLOAD: Final = Obj(
    "Workload",
    (
        ("metadata", OBJECT_META),
        (
            "spec",
            Obj(
                "WorkloadSpec",
                (
                    ("controllerRef", _REF),
                    (
                        "podGroupTemplates",
                        Arr(
                            Obj(
                                "PodGroupTemplate",
                                (("name", "string"), *_V1ALPHA2_GROUP_FIELDS),
                                "PodGroupTemplate represents a template for a set of pods with "
                                "a scheduling policy.",
                            )
                        ),
                    ),
                ),
                "WorkloadSpec defines the desired state of a Workload.",
            ),
        ),
    ),
    V1ALPHA1_WORKLOAD.description,
)
V1ALPHA2_POD_GROUP: Final = Obj(
    "PodGroup",
    (
        ("metadata", OBJECT_META),
        (
            "spec",
            Obj(
                "PodGroupSpec",
                (
                    (
                        "podGroupTemplateRef",
                        Obj(
                            "PodGroupTemplateReference",
                            (
                                (
                                    "workload",
                                    Obj(
                                        "WorkloadPodGroupTemplateReference",
                                        (
                                            ("workloadName", "string"),
                                            ("podGroupTemplateName", "string"),
                                        ),
                                    ),
                                ),
                            ),
                        ),
                    ),
                    *_V1ALPHA2_GROUP_FIELDS,
                ),
                "PodGroupSpec defines the desired state of a PodGroup.",
            ),
        ),
        (
            "status",
            Obj(
                "PodGroupStatus",
                (
                    ("conditions", Arr(CONDITION)),
                    (
                        "resourceClaimStatuses",
                        Arr(
                            Obj(
                                "PodGroupResourceClaimStatus",
                                (("name", "string"), ("resourceClaimName", "string")),
                            )
                        ),
                    ),
                ),
                "PodGroupStatus represents information about the status of a pod group.",
            ),
        ),
    ),
    "PodGroup represents a runtime instance of pods grouped together.",
)

SHAPES: Final[dict[tuple[str, str], Obj]] = {
    (SCHEDULING_V1ALPHA1, "Workload"): V1ALPHA1_WORKLOAD,
    (SCHEDULING_V1ALPHA2, "Workload"): V1ALPHA2_WORKLOAD,
    (SCHEDULING_V1ALPHA2, "PodGroup"): V1ALPHA2_POD_GROUP,
}
"""(group version, kind) -> its shape, where it is not the message's own."""


def _check_shape(shape: Shape, value: JSON, path: str, unknown: UnknownFields | None) -> JSON:
    """`value` without the fields `shape` does not have, each reported as the decoder of that
    version would (an unknown field: dropped and listed, or Invalid)."""
    if isinstance(shape, Arr):
        if not isinstance(value, list):
            return value  # (the message decoder names the wrong type)
        return [_check_shape(shape.item, v, f"{path}[{i}]", unknown) for i, v in enumerate(value)]
    if isinstance(shape, str) or not isinstance(value, dict):
        return value
    fields = dict(shape.fields)
    out: JSONObject = {}
    for key, item in value.items():
        sub = f"{path}.{key}" if path else key
        child = fields.get(key)
        if child is None:
            if unknown is None:
                raise Invalid.field(sub, f'unknown field "{key}"')
            unknown.found.append(f'unknown field "{sub}"')
            continue
        out[key] = _check_shape(child, item, sub, unknown)
    return out


# ---------------------------------------------------------------- conversions

_DISRUPTION_MODES: Final = {"Pod": "single", "PodGroup": "all"}
"""1.36's DisruptionMode strings -> 1.37's union members."""


def _get(obj: JSON, key: str) -> JSON:
    return obj.get(key) if isinstance(obj, dict) else None


def _disruption_in(group: JSONObject, path: str) -> None:
    mode = group.get("disruptionMode")
    if mode is None:
        return
    member = _DISRUPTION_MODES.get(mode) if isinstance(mode, str) else None
    if member is None:
        cause = not_supported(f"{path}.disruptionMode", mode, _DISRUPTION_MODES)
        raise Invalid.from_causes("the object", [cause])
    group["disruptionMode"] = {member: {}}


def _disruption_out(group: JSONObject) -> None:
    mode = group.get("disruptionMode")
    if isinstance(mode, dict):
        for name, member in _DISRUPTION_MODES.items():
            if member in mode:
                group["disruptionMode"] = name
                break


def _v1alpha1_workload_in(body: JSONObject) -> None:
    spec = body.get("spec")
    if isinstance(spec, dict) and "podGroups" in spec:
        groups = spec.pop("podGroups")
        if isinstance(groups, list):
            groups = [_renamed(g, {"policy": "schedulingPolicy"}) for g in groups]
        spec["podGroupTemplates"] = groups


def _v1alpha1_workload_out(body: JSONObject) -> None:
    spec = body.get("spec")
    if isinstance(spec, dict):
        templates = spec.pop("podGroupTemplates", None)
        if isinstance(templates, list):
            spec["podGroups"] = [
                {
                    k: v
                    for k, v in _renamed(t, {"schedulingPolicy": "policy"}).items()
                    if k in ("name", "policy")
                }
                for t in templates
                if isinstance(t, dict)
            ]


def _v1alpha2_workload_in(body: JSONObject) -> None:
    templates = _get(_get(body, "spec"), "podGroupTemplates")
    if isinstance(templates, list):
        for i, t in enumerate(templates):
            if isinstance(t, dict):
                _disruption_in(t, f"spec.podGroupTemplates[{i}]")


def _v1alpha2_workload_out(body: JSONObject) -> None:
    spec = body.get("spec")
    if isinstance(spec, dict):
        spec.pop("compositePodGroupTemplates", None)
    templates = _get(spec, "podGroupTemplates")
    if isinstance(templates, list):
        for t in templates:
            if isinstance(t, dict):
                t.pop("preemptionPolicy", None)
                _disruption_out(t)


def _v1alpha2_pod_group_in(body: JSONObject) -> None:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    _disruption_in(spec, "spec")
    if "podGroupTemplateRef" in spec:
        ref = spec.pop("podGroupTemplateRef")
        if ref is None:
            return
        workload = _get(ref, "workload")
        if not isinstance(workload, dict):
            # the union's one member is required (upstream's DV union: "must specify one of")
            # (validate.Union of its one member)
            cause = invalid("spec.podGroupTemplateRef", "", "must specify one of: `workload`")
            raise Invalid.from_causes("PodGroup", [cause])
        spec["workloadRef"] = _renamed(workload, {"podGroupTemplateName": "templateName"})


def _v1alpha2_pod_group_out(body: JSONObject) -> None:
    spec = body.get("spec")
    if not isinstance(spec, dict):
        return
    spec.pop("preemptionPolicy", None)
    spec.pop("parentCompositePodGroupName", None)
    _disruption_out(spec)
    ref = spec.pop("workloadRef", None)
    if isinstance(ref, dict):
        spec["podGroupTemplateRef"] = {
            "workload": _renamed(ref, {"templateName": "podGroupTemplateName"})
        }


def _renamed(obj: JSON, names: dict[str, str]) -> JSONObject:
    if not isinstance(obj, dict):
        return {}
    return {names.get(k, k): v for k, v in obj.items()}


_Convert = Callable[[JSONObject], None]
_CONVERSIONS: Final[dict[tuple[str, str], tuple[_Convert, _Convert]]] = {
    (SCHEDULING_V1ALPHA1, "Workload"): (_v1alpha1_workload_in, _v1alpha1_workload_out),
    (SCHEDULING_V1ALPHA2, "Workload"): (_v1alpha2_workload_in, _v1alpha2_workload_out),
    (SCHEDULING_V1ALPHA2, "PodGroup"): (_v1alpha2_pod_group_in, _v1alpha2_pod_group_out),
    # resource.k8s.io's v1beta1 and v1alpha3 (kemu.machinery.resource_versions).
    **resource_versions.CONVERSIONS,
    # autoscaling/v1 HorizontalPodAutoscalers (kemu.machinery.autoscaling; kinds-b)
    **autoscaling.CONVERSIONS,
}


def converts(kind: Kind, api_version: str) -> bool:
    """Whether `kind` served as `api_version` is not its message's own shape and name."""
    return api_version != kind.api_version


def to_versioned(obj: Message, api_version: str, *, wire: bool = False) -> JSONObject:
    """An object as `api_version` serves it (`wire`: convert.to_dict's)."""
    kind = kind_of(obj)
    body = convert.to_dict(obj, wire=wire)
    if not converts(kind, api_version):
        return body
    body["apiVersion"] = api_version
    conversion = _CONVERSIONS.get((api_version, kind.kind))
    if conversion is not None:
        conversion[1](body)
    return body


def from_versioned(
    kind: Kind, data: object, api_version: str, unknown: UnknownFields | None = None
) -> Message:
    """Reads one object of `kind` sent as `api_version` (its apiVersion and kind checked as
    convert.from_dict does; unknown fields: see UnknownFields)."""
    if not converts(kind, api_version):
        return convert.from_dict(kind, data, unknown)
    if not isinstance(data, dict):
        return convert.from_dict(kind, data, unknown)  # (names the wrong type)
    given = data.get("apiVersion", api_version)
    if given != api_version:
        raise Invalid(
            f'apiVersion: "{given}" does not serve kind {kind.kind} (expected "{api_version}")',
            [Cause("apiVersion", f"expected {api_version}")],
        )
    shape = SHAPES.get((api_version, kind.kind))
    body: JSON = {k: v for k, v in data.items() if k not in ("apiVersion", "kind")}
    found = UnknownFields(strict=False) if unknown is not None else None
    if shape is not None:
        body = _check_shape(shape, body, "", found)
    assert isinstance(body, dict)
    conversion = _CONVERSIONS.get((api_version, kind.kind))
    if conversion is not None:
        conversion[0](body)
    body["apiVersion"] = kind.api_version
    if "kind" in data:
        body["kind"] = data["kind"]
    if unknown is not None and found is not None:
        unknown.found.extend(found.found)
    return convert.from_dict(kind, body, unknown)


def from_manifest(kind: Kind, data: object, unknown: UnknownFields | None = None) -> Message:
    """An object of a manifest, in any group version upstream has served the kind as (a
    client reads manifests without asking the server which it serves: kemuctl apply)."""
    api_version = data.get("apiVersion") if isinstance(data, dict) else None
    every = {gv for _, versions in kind.versions for gv in versions}
    if isinstance(api_version, str) and api_version in every:
        return from_versioned(kind, data, api_version, unknown)
    return convert.from_dict(kind, data, unknown)


# ---------------------------------------------------------------- the pod's reference

WORKLOAD_REF_LAST_MINOR: Final = 35
"""core/v1 PodSpec.workloadRef exists at 1.35 only; 1.36 replaced it with schedulingGroup
(kubernetes/api v0.36.0 core/v1/types.go: "This field got replaced with the SchedulingGroup
field in Kubernetes 1.36")."""


def pod_field_absent(minor: int) -> str:
    """The JSON name of the pod's group reference that 1.`minor` does not have."""
    return "schedulingGroup" if minor <= WORKLOAD_REF_LAST_MINOR else "workloadRef"


def pod_fields_served(body: JSON, minor: int, unknown: UnknownFields | None) -> JSON:
    """A pod sent to the REST edge without the group reference its version does not have
    (spec.schedulingGroup before 1.36, spec.workloadRef after 1.35): an unknown field there."""
    spec = _get(body, "spec")
    if not isinstance(spec, dict) or not isinstance(body, dict):
        return body
    absent = pod_field_absent(minor)
    if absent not in spec:
        return body
    if unknown is None:
        raise Invalid.field(f"spec.{absent}", f'unknown field "{absent}"')
    unknown.found.append(f'unknown field "spec.{absent}"')
    return {**body, "spec": {k: v for k, v in spec.items() if k != absent}}


# ---------------------------------------------------------------- strategies: drop and default


def _drop_group_fields(
    new: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec,
    old: types_pb2.PodGroupTemplate | types_pb2.PodGroupSpec | None,
    rules: PodGroupRules,
) -> None:
    """The fields of a template or a PodGroup's spec that the version does not have (gone,
    as the JSON decoder of that version drops them), or whose gate is off and the stored
    object does not use (upstream's dropDisabledFields: schedulingConstraints,
    resourceClaims). Gated fields that upstream forbids instead are validation's."""
    if rules.minor <= 35:
        keep = {"name", "scheduling_policy"}
        for fd in new.DESCRIPTOR.fields:
            if fd.name not in keep:
                new.ClearField(fd.name)
        return
    if rules.minor <= 36:
        new.ClearField("preemption_policy")
    if not rules.topology_aware and not (
        old is not None and old.HasField("scheduling_constraints")
    ):
        new.ClearField("scheduling_constraints")
    if not rules.resource_claims and not (old is not None and len(old.resource_claims)):
        new.ClearField("resource_claims")


def drop_disabled_workload_fields(
    new: types_pb2.Workload, old: types_pb2.Workload | None, rules: PodGroupRules
) -> None:
    """Each template's disabled fields (`_drop_group_fields`); before 1.37 no
    compositePodGroupTemplates (the field does not exist there)."""
    _drop_templates(
        new.spec.pod_group_templates, old.spec.pod_group_templates if old else (), rules
    )
    if rules.minor <= 36:
        new.spec.ClearField("composite_pod_group_templates")
        return
    _drop_composite_templates(
        new.spec.composite_pod_group_templates,
        old.spec.composite_pod_group_templates if old else (),
        rules,
    )


def _drop_templates(
    new: Sequence[types_pb2.PodGroupTemplate],
    old: Sequence[types_pb2.PodGroupTemplate],
    rules: PodGroupRules,
) -> None:
    old_templates = {t.name: t for t in old}
    for t in new:
        _drop_group_fields(t, old_templates.get(t.name), rules)


def _drop_composite_templates(
    new: Sequence[types_pb2.CompositePodGroupTemplate],
    old: Sequence[types_pb2.CompositePodGroupTemplate],
    rules: PodGroupRules,
) -> None:
    """A composite template's schedulingConstraints without TopologyAwareWorkloadScheduling
    (unless stored), and its children's fields, recursively."""
    old_templates = {t.name: t for t in old}
    for t in new:
        before = old_templates.get(t.name)
        if not rules.topology_aware and not (
            before is not None and before.HasField("scheduling_constraints")
        ):
            t.ClearField("scheduling_constraints")
        _drop_templates(t.pod_group_templates, before.pod_group_templates if before else (), rules)
        _drop_composite_templates(
            t.composite_pod_group_templates,
            before.composite_pod_group_templates if before else (),
            rules,
        )


def drop_disabled_composite_pod_group_fields(
    new: types_pb2.CompositePodGroup, old: types_pb2.CompositePodGroup | None, rules: PodGroupRules
) -> None:
    """dropDisabledCompositePodGroupFields (upstream
    pkg/registry/scheduling/compositepodgroup/strategy.go at 1.37): preemptionPolicy without
    PodGroupPreemptionPolicy unless the stored object has one. (schedulingConstraints needs
    no drop: the kind is served only with CompositePodGroup, which needs
    TopologyAwareWorkloadScheduling.)"""
    if not rules.preemption_policy and not (
        old is not None and old.spec.HasField("preemption_policy")
    ):
        new.spec.ClearField("preemption_policy")


def default_composite_pod_group(cpg: types_pb2.CompositePodGroup) -> None:
    """CompositePodGroupSpec.disruptionMode's `+default={"single": {}}`."""
    if not cpg.spec.HasField("disruption_mode"):
        cpg.spec.disruption_mode.single.SetInParent()


def drop_disabled_pod_group_fields(
    new: types_pb2.PodGroup, old: types_pb2.PodGroup | None, rules: PodGroupRules
) -> None:
    _drop_group_fields(new.spec, old.spec if old else None, rules)
    if rules.minor <= 36:
        new.spec.ClearField("parent_composite_pod_group_name")


def drop_disabled_pod_group_status_fields(
    new: types_pb2.PodGroup, old: types_pb2.PodGroup, rules: PodGroupRules
) -> None:
    """podGroupStatusStrategy: status.resourceClaimStatuses dropped with
    DRAWorkloadResourceClaims off, unless the stored spec has claims."""
    if not rules.resource_claims and not len(old.spec.resource_claims):
        new.status.ClearField("resource_claim_statuses")


def default_pod_group(pg: types_pb2.PodGroup, rules: PodGroupRules) -> None:
    """PodGroupSpec.disruptionMode's default (`+default="Pod"` at 1.36, `{"single": {}}` at
    1.37: the same member of kemu's union), where the field is enabled."""
    if rules.disruption_fields and not pg.spec.HasField("disruption_mode"):
        pg.spec.disruption_mode.single.SetInParent()


def drop_disabled_pod_scheduling_group(
    spec: types_pb2.PodSpec, old: types_pb2.PodSpec | None, rules: PodGroupRules
) -> None:
    """A pod's reference to its group: the field its version does not have gone (1.35:
    spec.workloadRef only; 1.36+: spec.schedulingGroup only), and with GenericWorkload off
    the one it has dropped unless the stored pod uses it (pkg/api/pod/util.go
    dropDisabledWorkloadRef, 1.35; the same for schedulingGroup after)."""
    has, gone = (
        ("workload_ref", "scheduling_group")
        if rules.minor <= WORKLOAD_REF_LAST_MINOR
        else ("scheduling_group", "workload_ref")
    )
    spec.ClearField(gone)
    if not rules.generic_workload and not (old is not None and old.HasField(has)):
        spec.ClearField(has)
