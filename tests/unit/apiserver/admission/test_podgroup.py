"""Admission of PodGroups: 1.36's PodGroupWorkloadExists (apiserver/admission/podgroup.py) and
the Priority plugin's resolution of a PodGroup's priority (apiserver/admission/priority.py)."""

from __future__ import annotations

import pytest

from apiserver.admission.podgroup import admit_pod_group_workload_exists
from apiserver.admission.priority import admit_pod_group_priority
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden, Invalid
from kemu.machinery.podgroups import PodGroupRules

AT_36 = PodGroupRules(minor=36)


def _pod_group() -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = "g", "ns"
    pg.spec.scheduling_policy.basic.SetInParent()
    pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name = "w", "t"
    return pg


def _workload(namespace: str, *templates: str) -> types_pb2.Workload:
    w = types_pb2.Workload()
    w.metadata.name, w.metadata.namespace = "w", namespace
    for name in templates:
        w.spec.pod_group_templates.add(name=name).scheduling_policy.basic.SetInParent()
    return w


def test_a_pod_group_needs_its_workload_and_template_at_1_36() -> None:
    pg = _pod_group()
    with pytest.raises(Forbidden) as e:
        admit_pod_group_workload_exists(pg, [_workload("elsewhere", "t")], AT_36)
    assert e.value.message == (
        'podgroups.scheduling.k8s.io "g" is forbidden: PodGroup rejected: Workload "w" not found'
    )
    with pytest.raises(Forbidden, match='PodGroupTemplate "t" not found in Workload "w"'):
        admit_pod_group_workload_exists(pg, [_workload("ns", "other")], AT_36)
    admit_pod_group_workload_exists(pg, [_workload("ns", "other", "t")], AT_36)


def test_no_check_without_a_reference_the_gate_or_after_1_36() -> None:
    pg = _pod_group()
    admit_pod_group_workload_exists(pg, [], PodGroupRules(minor=37))  # removed in 1.37
    admit_pod_group_workload_exists(pg, [], PodGroupRules(minor=36, generic_workload=False))
    pg.spec.ClearField("workload_ref")
    admit_pod_group_workload_exists(pg, [], AT_36)


def _class(name: str, value: int, *, default: bool = False) -> types_pb2.PriorityClass:
    pc = types_pb2.PriorityClass(value=value, global_default=default)
    pc.metadata.name = name
    return pc


def test_priority_admission_resolves_a_pod_group_where_the_field_exists() -> None:
    classes = [_class("high", 1000), _class("low", 10, default=True)]
    pg = _pod_group()
    pg.spec.priority_class_name = "high"
    admit_pod_group_priority(pg, classes, PodGroupRules(minor=37))
    assert pg.spec.priority == 1000
    assert not pg.spec.HasField("preemption_policy")  # PodGroupPreemptionPolicy off
    unnamed = _pod_group()
    admit_pod_group_priority(unnamed, classes, PodGroupRules(minor=37, preemption_policy=True))
    assert (unnamed.spec.priority_class_name, unnamed.spec.priority) == ("low", 10)
    assert unnamed.spec.preemption_policy == "PreemptLowerPriority"
    wrong = _pod_group()
    wrong.spec.priority_class_name, wrong.spec.priority = "high", 5
    with pytest.raises(Invalid, match="must not be provided in PodGroup spec"):
        admit_pod_group_priority(wrong, classes, PodGroupRules(minor=37))
    # 1.36 without WorkloadAwarePreemption: left alone
    off = _pod_group()
    off.spec.priority_class_name = "missing"
    admit_pod_group_priority(off, classes, PodGroupRules(minor=36, workload_aware_preemption=False))
    assert not off.spec.HasField("priority")
    with pytest.raises(Invalid, match="no PriorityClass with name missing"):
        admit_pod_group_priority(off, classes, PodGroupRules(minor=36))
