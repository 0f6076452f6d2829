"""The Workload API by emulated version (issue #55): which group versions are served, the
REST edge's conversions between each version's JSON and the 1.37-shaped messages, the
strategies' defaults and dropped fields, per-version validation, and the printers."""

from __future__ import annotations

from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import podgroups, printers
from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import Invalid, NotFound
from kemu.machinery.kinds import BY_KIND, Served
from kemu.machinery.podgroups import PodGroupRules
from kemu.machinery.runtime_config import RuntimeConfig
from kemu.machinery.strategy import StrategyOptions, before_update, strategy_for
from kemu.machinery.validation.objects import validate_object, validate_status_update

API_ALL = RuntimeConfig.parse(["api/all=true"])
"""Every group version on: what is served is then the version's and the gates'."""

WORKLOAD = BY_KIND["Workload"]
POD_GROUP = BY_KIND["PodGroup"]
V1ALPHA1 = "scheduling.k8s.io/v1alpha1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
V1BETA1 = "scheduling.k8s.io/v1beta1"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"

AT_35 = PodGroupRules(minor=35)
AT_36 = PodGroupRules(minor=36, workload_aware_preemption=True)
AT_36_NO_WAP = PodGroupRules(minor=36, workload_aware_preemption=False)
AT_37 = PodGroupRules(minor=37)


def _fields(causes: list[Any]) -> dict[str, str]:
    return {c.field: c.message for c in causes}


# ---------------------------------------------------------------- served


@pytest.mark.parametrize(
    ("minor", "workload", "pod_group"),
    [
        (34, None, None),
        (35, (V1ALPHA1,), None),
        (36, (V1ALPHA2,), (V1ALPHA2,)),
        (37, (V1BETA1, V1ALPHA3), (V1BETA1, V1ALPHA3)),
    ],
)
def test_served_versions_follow_the_emulated_version(
    minor: int, workload: tuple[str, ...] | None, pod_group: tuple[str, ...] | None
) -> None:
    served = Served.at(minor, lambda gate: True, API_ALL)
    assert served.api_versions.get("Workload") == workload
    assert served.api_versions.get("PodGroup") == pod_group
    assert served.api_versions["Pod"] == ("v1",)


def test_nothing_of_the_api_is_served_without_generic_workload() -> None:
    served = Served.at(37, lambda gate: gate != "GenericWorkload", API_ALL)
    assert not served.serves(WORKLOAD) and not served.serves(POD_GROUP)
    assert ("scheduling.k8s.io", "v1beta1") not in served.group_versions()
    with pytest.raises(NotFound, match="podgroups"):
        served.check(POD_GROUP)


# ---------------------------------------------------------------- conversion


def test_v1alpha1_workload_round_trips_through_the_message() -> None:
    sent = {
        "apiVersion": V1ALPHA1,
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": "j"},
            "podGroups": [{"name": "a", "policy": {"gang": {"minCount": 2}}}],
        },
    }
    msg = podgroups.from_versioned(WORKLOAD, sent, V1ALPHA1)
    assert isinstance(msg, types_pb2.Workload)
    assert msg.spec.pod_group_templates[0].scheduling_policy.gang.min_count == 2
    assert podgroups.to_versioned(msg, V1ALPHA1) == sent


def test_fields_a_version_lacks_are_unknown_there() -> None:
    sent = {
        "apiVersion": V1ALPHA1,
        "kind": "Workload",
        "metadata": {"name": "w"},
        # 1.36's names at 1.35: unknown
        "spec": {"podGroupTemplates": [], "podGroups": [{"name": "a", "priority": 3}]},
    }
    unknown = UnknownFields(warn=True)
    msg = podgroups.from_versioned(WORKLOAD, sent, V1ALPHA1, unknown)
    assert unknown.found == [
        'unknown field "spec.podGroupTemplates"',
        'unknown field "spec.podGroups[0].priority"',
    ]
    assert isinstance(msg, types_pb2.Workload)
    assert not msg.spec.pod_group_templates[0].HasField("priority")
    with pytest.raises(Invalid, match="spec.podGroupTemplates"):
        podgroups.from_versioned(WORKLOAD, sent, V1ALPHA1)
    strict = UnknownFields(strict=True)
    with pytest.raises(Exception, match="strict decoding error"):
        podgroups.from_versioned(WORKLOAD, sent, V1ALPHA1, strict)


def test_v1alpha2_pod_group_reference_and_disruption_mode() -> None:
    sent = {
        "apiVersion": V1ALPHA2,
        "kind": "PodGroup",
        "metadata": {"name": "g"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
            "schedulingPolicy": {"basic": {}},
            "disruptionMode": "PodGroup",
        },
    }
    msg = podgroups.from_versioned(POD_GROUP, sent, V1ALPHA2)
    assert isinstance(msg, types_pb2.PodGroup)
    assert (msg.spec.workload_ref.workload_name, msg.spec.workload_ref.template_name) == (
        "w",
        "t",
    )
    assert msg.spec.disruption_mode.HasField("all")
    assert podgroups.to_versioned(msg, V1ALPHA2) == sent
    # 1.37's shape is the message's own
    spec: Any = podgroups.to_versioned(msg, V1BETA1)["spec"]
    assert spec["workloadRef"] == {
        "workloadName": "w",
        "templateName": "t",
    }
    assert podgroups.to_versioned(msg, V1ALPHA3)["apiVersion"] == V1ALPHA3


def test_v1alpha2_refuses_a_disruption_mode_it_does_not_have() -> None:
    sent = {"apiVersion": V1ALPHA2, "kind": "PodGroup", "spec": {"disruptionMode": "All"}}
    with pytest.raises(Invalid) as e:
        podgroups.from_versioned(POD_GROUP, sent, V1ALPHA2)
    assert e.value.causes[0].field == "spec.disruptionMode"
    assert 'supported values: "Pod", "PodGroup"' in e.value.causes[0].message


def test_pod_reference_fields_served_by_version() -> None:
    body: Any = {"spec": {"schedulingGroup": {"podGroupName": "g"}, "containers": []}}
    unknown = UnknownFields(warn=True)
    kept = podgroups.pod_fields_served(body, 35, unknown)
    assert unknown.found == ['unknown field "spec.schedulingGroup"']
    assert kept == {"spec": {"containers": []}}
    assert podgroups.pod_fields_served(body, 36, UnknownFields()) == body
    with pytest.raises(Invalid, match="workloadRef"):
        podgroups.pod_fields_served({"spec": {"workloadRef": {}}}, 37, None)


# ---------------------------------------------------------------- strategies


def _pod_group(**spec: Any) -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = "g", "ns"
    pg.spec.scheduling_policy.gang.min_count = 2
    for name, value in spec.items():
        setattr(pg.spec, name, value)
    return pg


def test_pod_group_create_defaults_disruption_mode_and_resets_status() -> None:
    pg = _pod_group()
    pg.status.conditions.add(type="PodGroupInitiallyScheduled", status="True")
    strategy_for(POD_GROUP).prepare_for_create(pg, StrategyOptions(pod_groups=AT_37), 0.0)
    assert pg.spec.disruption_mode.HasField("single")
    assert not pg.HasField("status")
    # 1.36 without WorkloadAwarePreemption: the field is not enabled, no default
    off = _pod_group()
    strategy_for(POD_GROUP).prepare_for_create(off, StrategyOptions(pod_groups=AT_36_NO_WAP), 0)
    assert not off.spec.HasField("disruption_mode")


def test_fields_of_other_versions_and_disabled_gates_are_dropped() -> None:
    pg = _pod_group(preemption_policy="Never")
    pg.spec.scheduling_constraints.topology.add(key="zone")
    strategy_for(POD_GROUP).prepare_for_create(pg, StrategyOptions(pod_groups=AT_36), 0.0)
    assert not pg.spec.HasField("preemption_policy")  # no such field at 1.36
    assert not pg.spec.HasField("scheduling_constraints")  # TopologyAware... off
    w = types_pb2.Workload()
    t = w.spec.pod_group_templates.add(name="a", priority=5)
    t.scheduling_policy.basic.SetInParent()
    strategy_for(WORKLOAD).prepare_for_create(w, StrategyOptions(pod_groups=AT_35), 0.0)
    assert not w.spec.pod_group_templates[0].HasField("priority")  # 1.35 has name, policy


def test_status_update_keeps_the_spec() -> None:
    old = _pod_group()
    sent = _pod_group()
    sent.spec.scheduling_policy.gang.min_count = 9
    sent.status.conditions.add(type="PodGroupInitiallyScheduled", status="True")
    opts = StrategyOptions(pod_groups=AT_37)
    written = strategy_for(POD_GROUP).prepare_for_status_update(sent, old, opts, 0.0)
    assert isinstance(written, types_pb2.PodGroup)
    assert written.spec.scheduling_policy.gang.min_count == 2
    assert written.status.conditions[0].type == "PodGroupInitiallyScheduled"
    # and a main-resource update keeps the status
    stored = before_update(POD_GROUP, written, _pod_group(), opts)
    assert isinstance(stored, types_pb2.PodGroup)
    assert stored.status.conditions[0].type == "PodGroupInitiallyScheduled"


def test_pod_group_reference_of_the_pod_by_version_and_gate() -> None:
    pod = types_pb2.Pod()
    pod.spec.scheduling_group.pod_group_name = "g"
    pod.spec.workload_ref.name = "w"
    podgroups.drop_disabled_pod_scheduling_group(pod.spec, None, AT_35)
    assert pod.spec.HasField("workload_ref") and not pod.spec.HasField("scheduling_group")
    pod.spec.scheduling_group.pod_group_name = "g"
    podgroups.drop_disabled_pod_scheduling_group(pod.spec, None, AT_37)
    assert pod.spec.HasField("scheduling_group") and not pod.spec.HasField("workload_ref")
    off = PodGroupRules(minor=37, generic_workload=False)
    podgroups.drop_disabled_pod_scheduling_group(pod.spec, pod.spec, off)
    assert pod.spec.HasField("scheduling_group")  # the stored pod has it: kept
    podgroups.drop_disabled_pod_scheduling_group(pod.spec, None, off)
    assert not pod.spec.HasField("scheduling_group")


# ---------------------------------------------------------------- validation


def _workload(*templates: types_pb2.PodGroupTemplate) -> types_pb2.Workload:
    w = types_pb2.Workload()
    w.metadata.name, w.metadata.namespace = "w", "ns"
    w.spec.pod_group_templates.extend(templates)
    return w


def _gang(name: str, n: int) -> types_pb2.PodGroupTemplate:
    t = types_pb2.PodGroupTemplate(name=name)
    t.scheduling_policy.gang.min_count = n
    return t


def test_workload_validation_at_1_35() -> None:
    both = _gang("b", 1)
    both.scheduling_policy.basic.SetInParent()
    w = _workload(_gang("a", 0), _gang("a", 1), both, types_pb2.PodGroupTemplate(name="c"))
    causes = _fields(validate_object(w, pod_groups=AT_35))
    assert causes["spec.podGroups[0].policy.gang.minCount"] == (
        "Invalid value: 0: must be greater than zero"
    )
    assert causes["spec.podGroups[1].name"] == 'Duplicate value: "a"'
    assert "multiple fields are set" in causes["spec.podGroups[2].policy"]
    assert causes["spec.podGroups[3].policy"] == (
        "Required value: exactly one of `basic`, `gang` is required"
    )
    empty = _fields(validate_object(_workload(), pod_groups=AT_35))
    assert empty == {"spec.podGroups": "Required value: must have at least one item"}
    many = _workload(*(_gang(f"g{i}", 1) for i in range(9)))
    assert _fields(validate_object(many, pod_groups=AT_35)) == {
        "spec.podGroups": "Too many: 9: must have at most 8 items"
    }


def test_workload_update_at_1_35_reports_upstream_paths() -> None:
    old = _workload(_gang("a", 2))
    new = _workload(_gang("a", 3))
    causes = _fields(validate_object(new, old=old, pod_groups=AT_35))
    assert causes["podGroups"].endswith("field is immutable")
    old.spec.controller_ref.kind, old.spec.controller_ref.name = "Job", "j"
    new.spec.CopyFrom(old.spec)
    new.spec.controller_ref.name = "k"
    causes = _fields(validate_object(new, old=old, pod_groups=AT_35))
    assert set(causes) == {"controllerRef"}
    # a controllerRef set later is allowed
    old.spec.ClearField("controller_ref")
    assert validate_object(new, old=old, pod_groups=AT_35) == []


def test_workload_validation_at_1_36_and_1_37() -> None:
    w = _workload(_gang("a", 0), _gang("b", -1))
    for rules in (AT_36, AT_37):
        causes = _fields(validate_object(w, pod_groups=rules))
        assert causes["spec.podGroupTemplates[0].schedulingPolicy.gang.minCount"] == (
            "Required value"
        )
        assert causes["spec.podGroupTemplates[1].schedulingPolicy.gang.minCount"] == (
            "Invalid value: -1: must be greater than or equal to 1"
        )
    none = _workload(types_pb2.PodGroupTemplate(name="a"))
    causes = _fields(validate_object(none, pod_groups=AT_37))
    assert causes["spec.podGroupTemplates[0].schedulingPolicy"] == (
        'Invalid value: "": must specify one of: `basic`, `gang`'
    )
    # 1.37: one priority across the templates
    a, b = _gang("a", 1), _gang("b", 1)
    a.priority = 10
    causes = _fields(validate_object(_workload(a, b), pod_groups=AT_37))
    assert causes["spec"] == "Invalid value: null: detected multiple priority configurations"


def test_gated_fields_are_forbidden_while_their_gate_is_off() -> None:
    pg = _pod_group(priority_class_name="high", preemption_policy="Never")
    assert _fields(validate_object(pg, pod_groups=AT_36_NO_WAP)) == {
        "spec.priorityClassName": "Forbidden",
        "spec.preemptionPolicy": "Forbidden",
    }
    assert _fields(validate_object(pg, pod_groups=AT_37)) == {"spec.preemptionPolicy": "Forbidden"}
    with_gate = PodGroupRules(minor=37, preemption_policy=True)
    assert validate_object(pg, pod_groups=with_gate) == []


def test_min_count_is_mutable_at_1_37_only() -> None:
    old = _pod_group()
    old.spec.workload_ref.workload_name, old.spec.workload_ref.template_name = "w", "t"
    new = types_pb2.PodGroup()
    new.CopyFrom(old)
    new.spec.scheduling_policy.gang.min_count = 5
    assert validate_object(new, old=old, pod_groups=AT_37) == []
    assert _fields(validate_object(new, old=old, pod_groups=AT_36)) == {
        "spec.schedulingPolicy": "Forbidden: field is immutable"
    }
    new.spec.ClearField("scheduling_policy")
    new.spec.scheduling_policy.basic.SetInParent()
    new.spec.workload_ref.workload_name = "other"
    assert _fields(validate_object(new, old=old, pod_groups=AT_37)) == {
        "spec.schedulingPolicy.gang": "Forbidden: field cannot be cleared once set",
        "spec.workloadRef": "Forbidden: field is immutable",
    }
    old.CopyFrom(new)
    new.spec.ClearField("scheduling_policy")
    new.spec.scheduling_policy.gang.min_count = 1
    assert _fields(validate_object(new, old=old, pod_groups=AT_37)) == {
        "spec.schedulingPolicy.basic": "Forbidden: field is immutable",
        "spec.schedulingPolicy.gang": "Forbidden: field cannot be set once created",
    }


def test_workload_templates_neither_added_nor_removed_at_1_37() -> None:
    old = _workload(_gang("a", 2), _gang("b", 2))
    new = _workload(_gang("a", 4), _gang("c", 2))
    causes = _fields(validate_object(new, old=old, pod_groups=AT_37))
    assert causes == {
        "spec.podGroupTemplates[1]": "Forbidden: cannot add new items",
        "spec.podGroupTemplates": "Forbidden: cannot remove items",
    }
    assert validate_object(_workload(_gang("a", 4), _gang("b", 1)), old=old, pod_groups=AT_37) == []
    assert "spec.podGroupTemplates" in _fields(
        validate_object(_workload(_gang("a", 4), _gang("b", 2)), old=old, pod_groups=AT_36)
    )


def test_pod_group_reference_names_by_version() -> None:
    pg = _pod_group()
    pg.spec.workload_ref.workload_name = "Bad_Name"
    at_36 = _fields(validate_object(pg, pod_groups=AT_36))
    assert set(at_36) == {
        "spec.podGroupTemplateRef.workload.workloadName",
        "spec.podGroupTemplateRef.workload.podGroupTemplateName",
    }
    at_37 = _fields(validate_object(pg, pod_groups=AT_37))
    assert set(at_37) == {"spec.workloadRef.workloadName", "spec.workloadRef.templateName"}


def test_pod_group_status_update_checks_conditions() -> None:
    old = _pod_group()
    new = _pod_group()
    new.status.conditions.add(type="PodGroupInitiallyScheduled", status="Maybe")
    causes = _fields(validate_status_update(new, old, pod_groups=AT_37))
    assert "Unsupported value" in causes["status.conditions[0].status"]
    assert causes["status.conditions[0].reason"] == "Required value: must be set"
    new.status.resource_claim_statuses.add(name="gpu")
    causes = _fields(validate_status_update(new, old, pod_groups=AT_37))
    assert "must match the name of an entry" in causes["status.resourceClaimStatuses[0].name"]


def test_pod_validates_its_group_reference() -> None:
    pod = types_pb2.Pod()
    pod.metadata.name, pod.metadata.namespace = "p", "ns"
    pod.spec.containers.add(name="c", image="i")
    pod.spec.scheduling_group.SetInParent()
    pod.spec.workload_ref.pod_group = "Not_A_Label"
    causes = _fields(validate_object(pod))
    assert causes["spec.schedulingGroup"] == "Required value: must specify one of: `podGroupName`"
    assert causes["spec.workloadRef.name"] == "Required value"
    assert "spec.workloadRef.podGroup" in causes


# ---------------------------------------------------------------- printers


def test_pod_group_printer_columns() -> None:
    pg = _pod_group()
    pg.spec.workload_ref.workload_name = "w"
    headers = printers.headers(POD_GROUP, wide=False, with_namespace=False)
    assert headers == ["NAME", "POLICY", "WORKLOAD", "STATUS", "AGE"]
    assert printers.row(POD_GROUP, pg, 0, wide=False, with_namespace=False)[:4] == [
        "g",
        "Gang",
        "w",
        "Pending",
    ]
    pg.status.conditions.add(type="PodGroupScheduled", status="False")
    assert printers.pod_group_status(pg) == "Unschedulable"
    pg.status.conditions.add(type="DisruptionTarget", status="True", reason="PreemptionByScheduler")
    assert printers.pod_group_status(pg) == "PreemptionByScheduler"
    basic = types_pb2.PodGroup()
    basic.spec.scheduling_policy.basic.SetInParent()
    assert printers.row(POD_GROUP, basic, 0, wide=False, with_namespace=False)[1:3] == [
        "Basic",
        "<none>",
    ]
