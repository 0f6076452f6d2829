"""CompositePodGroup (KEP-6012, gate CompositePodGroup, alpha in 1.37): served as
scheduling.k8s.io/v1alpha3 only, its validation (the declarative tags of
scheduling/v1alpha3/types.go), its strategy, a PodGroup's parentCompositePodGroupName, and a
Workload's tree of compositePodGroupTemplates (upstream
pkg/apis/scheduling/validation/validation.go ValidateWorkloadSpec)."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import podgroups, printers
from kemu.machinery.errors import NotFound
from kemu.machinery.kinds import BY_KIND, Served, lookup
from kemu.machinery.podgroups import PodGroupRules
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.machinery.strategy import StrategyOptions, before_update, strategy_for
from kemu.machinery.validation.objects import validate_object, validate_status_update

API_ALL = RuntimeConfig.parse(["api/all=true"])
"""Every group version on: what is served is then the version's and the gates'."""

CPG = BY_KIND["CompositePodGroup"]
WORKLOAD = BY_KIND["Workload"]
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"

ON = PodGroupRules(minor=37, composite=True, topology_aware=True)
OFF = PodGroupRules(minor=37)


def _fields(causes: list[Any]) -> dict[str, str]:
    return {c.field: c.message for c in causes}


def _cpg(name: str = "c", *, gang: int | None = None, parent: str | None = None) -> Any:
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, "ns"
    cpg.spec.workload_ref.workload_name = "w"
    cpg.spec.workload_ref.template_name = "t"
    if gang is None:
        cpg.spec.scheduling_policy.basic.SetInParent()
    else:
        cpg.spec.scheduling_policy.gang.min_group_count = gang
    if parent is not None:
        cpg.spec.parent_composite_pod_group_name = parent
    return cpg


# ---------------------------------------------------------------- served


@pytest.mark.parametrize(
    ("minor", "gates", "served"),
    [
        (37, {"GenericWorkload", "CompositePodGroup"}, (V1ALPHA3,)),
        (37, {"GenericWorkload"}, None),
        (36, {"GenericWorkload", "CompositePodGroup"}, None),
    ],
)
def test_served_only_as_v1alpha3_at_1_37_with_the_gate(
    minor: int, gates: set[str], served: tuple[str, ...] | None
) -> None:
    at = Served.at(minor, lambda gate: gate in gates, API_ALL)
    assert at.api_versions.get("CompositePodGroup") == served
    if served is None:
        with pytest.raises(NotFound, match=r"compositepodgroups\.scheduling\.k8s\.io"):
            at.check(CPG)


def test_names_users_type_resolve_to_the_kind() -> None:
    for name in ("compositepodgroup", "compositepodgroups", "CompositePodGroup"):
        assert lookup(name) is CPG


# ---------------------------------------------------------------- validation


def test_a_valid_tree_node_passes() -> None:
    assert validate_object(_cpg(gang=2, parent="root"), pod_groups=ON) == []


def test_spec_fields_are_validated_naming_the_field() -> None:
    cpg = _cpg(gang=0, parent="Bad_Parent")
    cpg.spec.workload_ref.template_name = "Not_A_Label"
    cpg.spec.priority = 2_000_000_000
    cpg.spec.disruption_mode.single.SetInParent()
    cpg.spec.disruption_mode.all.SetInParent()
    cpg.spec.scheduling_constraints.topology.add(key="a")
    cpg.spec.scheduling_constraints.topology.add(key="b")
    causes = _fields(validate_object(cpg, pod_groups=ON))
    assert causes["spec.schedulingPolicy.gang.minGroupCount"] == "Required value"
    assert "spec.parentCompositePodGroupName" in causes
    assert "spec.workloadRef.templateName" in causes
    assert causes["spec.priority"] == (
        "Invalid value: 2000000000: must be less than or equal to 1000000000"
    )
    assert "must specify exactly one of: `single`, `all`" in causes["spec.disruptionMode"]
    assert causes["spec.schedulingConstraints.topology"] == (
        "Too many: 2: must have at most 1 items"
    )
    negative = _cpg(gang=-1)
    assert _fields(validate_object(negative, pod_groups=ON)) == {
        "spec.schedulingPolicy.gang.minGroupCount": (
            "Invalid value: -1: must be greater than or equal to 1"
        )
    }


def test_workload_ref_and_policy_are_required() -> None:
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = "c", "ns"
    assert _fields(validate_object(cpg, pod_groups=ON)) == {
        "spec.workloadRef": "Required value",
        "spec.schedulingPolicy": 'Invalid value: "": must specify one of: `basic`, `gang`',
    }


def test_preemption_policy_needs_its_gate() -> None:
    cpg = _cpg()
    cpg.spec.preemption_policy = "Never"
    assert _fields(validate_object(cpg, pod_groups=ON)) == {"spec.preemptionPolicy": "Forbidden"}
    gated = PodGroupRules(minor=37, composite=True, preemption_policy=True)
    assert validate_object(cpg, pod_groups=gated) == []
    cpg.spec.preemption_policy = "Sometimes"
    assert (
        "Unsupported value"
        in _fields(validate_object(cpg, pod_groups=gated))["spec.preemptionPolicy"]
    )


def test_every_spec_field_is_immutable_min_group_count_too() -> None:
    old = _cpg(gang=2, parent="root")
    new = types_pb2.CompositePodGroup()
    new.CopyFrom(old)
    new.spec.scheduling_policy.gang.min_group_count = 3
    new.spec.parent_composite_pod_group_name = "other"
    assert _fields(validate_object(new, old=old, pod_groups=ON)) == {
        "spec.schedulingPolicy": "Forbidden: field is immutable",
        "spec.parentCompositePodGroupName": "Forbidden: field is immutable",
    }
    new.CopyFrom(old)
    new.spec.scheduling_policy.ClearField("gang")
    new.spec.scheduling_policy.basic.SetInParent()
    assert _fields(validate_object(new, old=old, pod_groups=ON)) == {
        "spec.schedulingPolicy": "Forbidden: field is immutable",
        "spec.schedulingPolicy.gang": "Forbidden: field cannot be cleared once set",
    }


def test_status_update_checks_conditions() -> None:
    old = _cpg()
    new = _cpg()
    new.status.conditions.add(type="CompositePodGroupInitiallyScheduled", status="Maybe")
    causes = _fields(validate_status_update(new, old, pod_groups=ON))
    assert "Unsupported value" in causes["status.conditions[0].status"]
    assert causes["status.conditions[0].reason"] == "Required value: must be set"


# ---------------------------------------------------------------- strategy


def test_create_resets_status_defaults_disruption_mode_drops_a_disabled_policy() -> None:
    cpg = _cpg()
    cpg.status.conditions.add(type="X", status="True")
    cpg.spec.scheduling_constraints.topology.add(key="zone")
    cpg.spec.preemption_policy = "Never"
    strategy_for(CPG).prepare_for_create(cpg, StrategyOptions(pod_groups=ON), 0.0)
    assert not cpg.status.conditions
    assert cpg.spec.disruption_mode.HasField("single")
    assert cpg.spec.scheduling_constraints.topology[0].key == "zone"
    assert not cpg.spec.HasField("preemption_policy")
    gated = PodGroupRules(minor=37, composite=True, preemption_policy=True)
    kept = _cpg()
    kept.spec.preemption_policy = "Never"
    strategy_for(CPG).prepare_for_create(kept, StrategyOptions(pod_groups=gated), 0.0)
    assert kept.spec.preemption_policy == "Never"


def test_update_keeps_the_stored_status() -> None:
    old = _cpg()
    old.status.conditions.add(type="CompositePodGroupInitiallyScheduled", status="True")
    sent = _cpg()
    sent.metadata.labels["a"] = "b"
    stored = before_update(CPG, old, sent, StrategyOptions(pod_groups=ON))
    assert isinstance(stored, types_pb2.CompositePodGroup)
    assert stored.status == old.status
    assert stored.metadata.labels["a"] == "b"


# ---------------------------------------------------------------- PodGroup's parent


def test_pod_group_parent_is_forbidden_without_the_gate_and_checked_with_it() -> None:
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = "g", "ns"
    pg.spec.scheduling_policy.gang.min_count = 1
    pg.spec.parent_composite_pod_group_name = "root"
    assert _fields(validate_object(pg, pod_groups=OFF)) == {
        "spec.parentCompositePodGroupName": "Forbidden"
    }
    assert _fields(validate_object(pg, pod_groups=ON)) == {
        "spec.workloadRef": "Required value: required when `parentCompositePodGroupName` is set"
    }
    pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name = "w", "t"
    assert validate_object(pg, pod_groups=ON) == []
    pg.spec.parent_composite_pod_group_name = "Bad_Name"
    assert "spec.parentCompositePodGroupName" in _fields(validate_object(pg, pod_groups=ON))


# ---------------------------------------------------------------- Workload tree


def _pgt(name: str) -> types_pb2.PodGroupTemplate:
    t = types_pb2.PodGroupTemplate(name=name)
    t.scheduling_policy.basic.SetInParent()
    return t


def _cpgt(
    name: str, *children: types_pb2.PodGroupTemplate | types_pb2.CompositePodGroupTemplate
) -> types_pb2.CompositePodGroupTemplate:
    t = types_pb2.CompositePodGroupTemplate(name=name)
    t.scheduling_policy.gang.min_group_count = 1
    for c in children:
        if isinstance(c, types_pb2.PodGroupTemplate):
            t.pod_group_templates.append(c)
        else:
            t.composite_pod_group_templates.append(c)
    return t


def _tree(*templates: types_pb2.CompositePodGroupTemplate) -> types_pb2.Workload:
    w = types_pb2.Workload()
    w.metadata.name, w.metadata.namespace = "w", "ns"
    w.spec.composite_pod_group_templates.extend(templates)
    return w


def test_workload_tree_is_forbidden_without_the_gate() -> None:
    w = _tree(_cpgt("root", _pgt("leaf")))
    assert validate_object(w, pod_groups=ON) == []
    assert _fields(validate_object(w, pod_groups=OFF)) == {
        "spec.compositePodGroupTemplates": "Forbidden"
    }


def test_workload_needs_exactly_one_kind_of_templates() -> None:
    w = _tree(_cpgt("root", _pgt("leaf")))
    w.spec.pod_group_templates.append(_pgt("other"))
    assert _fields(validate_object(w, pod_groups=ON))["spec"] == (
        'Invalid value: "{`podGroupTemplates`, `compositePodGroupTemplates`}": must specify '
        "exactly one of: `podGroupTemplates`, `compositePodGroupTemplates`"
    )
    empty = _tree()
    assert _fields(validate_object(empty, pod_groups=ON)) == {
        "spec": 'Invalid value: "": must specify one of: `podGroupTemplates`, '
        "`compositePodGroupTemplates`"
    }


def test_workload_tree_depth_is_at_most_four() -> None:
    three = _tree(_cpgt("a", _cpgt("b", _cpgt("c", _pgt("leaf")))))
    assert validate_object(three, pod_groups=ON) == []
    four = _tree(_cpgt("a", _cpgt("b", _cpgt("c", _cpgt("d", _pgt("leaf"))))))
    causes = _fields(validate_object(four, pod_groups=ON))
    assert causes["spec.compositePodGroupTemplates[0]"].endswith(
        "maximum template hierarchy depth is 4"
    )


def test_workload_tree_names_unique_priority_one_children_required() -> None:
    dup = _tree(_cpgt("a", _pgt("a"), _cpgt("b")))
    causes = _fields(validate_object(dup, pod_groups=ON))
    assert causes["spec.compositePodGroupTemplates[0].podGroupTemplates[0].name"] == (
        'Duplicate value: "a"'
    )
    assert causes["spec.compositePodGroupTemplates[0].compositePodGroupTemplates[0]"] == (
        'Invalid value: "b": must have at least one child PodGroupTemplate or '
        "CompositePodGroupTemplate"
    )
    leaf = _pgt("leaf")
    leaf.priority = 5
    mixed = _tree(_cpgt("root", leaf))
    assert _fields(validate_object(mixed, pod_groups=ON)) == {
        "spec": "Invalid value: null: all priority and priorityClassName values must be "
        "identical, detected multiple values"
    }


def test_workload_tree_templates_neither_added_nor_removed() -> None:
    old = _tree(_cpgt("root", _pgt("x"), _pgt("y")))
    new = _tree(_cpgt("root", _pgt("x"), _pgt("z")))
    new.spec.composite_pod_group_templates[0].scheduling_policy.gang.min_group_count = 3
    assert _fields(validate_object(new, old=old, pod_groups=ON)) == {
        "spec.compositePodGroupTemplates[0].podGroupTemplates[1]": (
            "Forbidden: cannot add new items"
        ),
        "spec.compositePodGroupTemplates[0].podGroupTemplates": "Forbidden: cannot remove items",
    }
    old.spec.composite_pod_group_templates[0].disruption_mode.all.SetInParent()
    new = _tree(_cpgt("root", _pgt("x"), _pgt("y")))
    new.spec.composite_pod_group_templates[0].disruption_mode.single.SetInParent()
    assert _fields(validate_object(new, old=old, pod_groups=ON)) == {
        "spec.compositePodGroupTemplates[0].disruptionMode": "Forbidden: field is immutable"
    }


def test_v1alpha2_workload_does_not_show_the_tree() -> None:
    w = _tree(_cpgt("root", _pgt("leaf")))
    spec = podgroups.to_versioned(w, V1ALPHA2)["spec"]
    assert isinstance(spec, dict) and "compositePodGroupTemplates" not in spec
    dropped = types_pb2.Workload()
    dropped.CopyFrom(w)
    strategy_for(WORKLOAD).prepare_for_create(
        dropped, StrategyOptions(pod_groups=PodGroupRules(minor=36)), 0.0
    )
    assert not dropped.spec.composite_pod_group_templates


def test_v1alpha3_round_trips_a_composite_pod_group() -> None:
    sent = {
        "apiVersion": V1ALPHA3,
        "kind": "CompositePodGroup",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {
            "parentCompositePodGroupName": "root",
            "workloadRef": {"workloadName": "w", "templateName": "t"},
            "schedulingPolicy": {"gang": {"minGroupCount": 2}},
            "schedulingConstraints": {"topology": [{"key": "topology.kubernetes.io/zone"}]},
            "disruptionMode": {"all": {}},
        },
    }
    msg = podgroups.from_manifest(CPG, sent)
    assert isinstance(msg, types_pb2.CompositePodGroup)
    assert msg.spec.scheduling_policy.gang.min_group_count == 2
    body = podgroups.to_versioned(msg, V1ALPHA3)
    assert body["apiVersion"] == V1ALPHA3 and body["kind"] == "CompositePodGroup"
    assert body["spec"] == sent["spec"]


def test_printer_columns_and_status() -> None:
    cpg = _cpg("root", gang=2)
    assert printers.headers(CPG, wide=False, with_namespace=False) == [
        "NAME",
        "POLICY",
        "WORKLOAD",
        "STATUS",
        "AGE",
    ]
    assert printers.row(CPG, cpg, 0, wide=False, with_namespace=False)[:4] == [
        "root",
        "Gang",
        "w",
        "Pending",
    ]
    cpg.status.conditions.add(type="CompositePodGroupInitiallyScheduled", status="False")
    assert printers.composite_pod_group_status(cpg) == "Unschedulable"
    cpg.status.conditions.add(
        type="DisruptionTarget", status="True", reason="PreemptionByScheduler"
    )
    assert printers.composite_pod_group_status(cpg) == "PreemptionByScheduler"


def test_status_conditions_follow_metav1_validate_conditions() -> None:
    """apimachinery's ValidateConditions: the reason's format and length, the message's
    length, a type that is a label name."""
    old = _cpg()
    new = _cpg()
    c = new.status.conditions.add(
        type="not a label", status="True", reason="Sche duled", message="m" * (32 * 1024 + 1)
    )
    c.last_transition_time.seconds = 1
    causes = _fields(validate_status_update(new, old, pod_groups=ON))
    assert causes["status.conditions[0].reason"].startswith(
        'Invalid value: "Sche duled": a condition reason must start with alphabetic character'
    )
    assert causes["status.conditions[0].message"] == "Too long: must have at most 32768 bytes"
    assert "status.conditions[0].type" in causes
    c.type, c.reason, c.message = "CompositePodGroupInitiallyScheduled", "Unschedulable", "m"
    assert validate_status_update(new, old, pod_groups=ON) == []
