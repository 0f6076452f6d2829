"""1.36's PodGroupWorkloadExists admission (apiserver/admission/podgroup.py)."""

from __future__ import annotations

import pytest

from apiserver.admission.podgroup import admit_pod_group_workload_exists
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
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
