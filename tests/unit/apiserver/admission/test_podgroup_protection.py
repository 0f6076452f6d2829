"""PodGroupProtection (1.37, upstream plugin/pkg/admission/scheduling/podgroupprotection/
admission.go): the finalizers stamped on a new PodGroup and CompositePodGroup, a pod of a
PodGroup being deleted and a child of a CompositePodGroup being deleted refused; none of it at
1.36 or without GenericWorkload. And the Priority plugin's CompositePodGroup: the priority
resolved from the class."""

from __future__ import annotations

import pytest

from apiserver.admission.podgroup_protection import (
    admit_composite_pod_group_protection,
    admit_pod_group_protection,
    validate_parent_not_deleting,
    validate_pod_group_not_deleting,
)
from apiserver.admission.priority import admit_composite_pod_group_priority
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GENERIC_WORKLOAD, FeatureGates
from kemu.component.strategy_options import pod_group_rules
from kemu.component.version import Version
from kemu.machinery.errors import Forbidden, Invalid
from kemu.machinery.podgroups import (
    COMPOSITE_POD_GROUP_PROTECTION_FINALIZER,
    POD_GROUP_PROTECTION_FINALIZER,
    PodGroupRules,
)
from kemu.testing.builders import make_pod, make_priority_class

ON = PodGroupRules(minor=37, composite=True, topology_aware=True)
OFF = PodGroupRules(minor=37)


def _rules(minor: int, generic_workload: bool = True) -> PodGroupRules:
    gates = FeatureGates.for_version(Version(1, minor), {GENERIC_WORKLOAD: generic_workload})
    return pod_group_rules(gates)


def _pg(name: str) -> types_pb2.PodGroup:
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = name, "ns"
    pg.spec.scheduling_policy.basic.SetInParent()
    return pg


@pytest.mark.parametrize(
    ("minor", "generic_workload", "stamped"),
    [(37, True, True), (37, False, False), (36, True, False)],
)
def test_s_pgapi_10_every_new_pod_group_gets_the_finalizer_at_1_37(
    minor: int, generic_workload: bool, stamped: bool
) -> None:
    """Admit: 1.37 with GenericWorkload stamps it once; 1.36 has no such plugin."""
    pg = _pg("g")
    rules = _rules(minor, generic_workload)
    admit_pod_group_protection(pg, rules)
    admit_pod_group_protection(pg, rules)
    assert list(pg.metadata.finalizers) == ([POD_GROUP_PROTECTION_FINALIZER] if stamped else [])


def test_s_pgapi_10_a_pod_of_a_pod_group_being_deleted_is_refused() -> None:
    """Validate (validatePod): upstream's message; a live or missing group, a pod without a
    group, 1.36 and GenericWorkload off all let it through."""
    deleting = _pg("gang")
    deleting.metadata.deletion_timestamp.seconds = 1
    pod = make_pod("m-0").namespace("ns").obj()
    pod.spec.scheduling_group.pod_group_name = "gang"
    with pytest.raises(Forbidden) as e:
        validate_pod_group_not_deleting(pod, [deleting], _rules(37))
    assert e.value.code == 403
    assert str(e.value.message) == (
        'pods "m-0" is forbidden: cannot create Pod referencing PodGroup "gang" because it is '
        "being deleted"
    )
    validate_pod_group_not_deleting(pod, [_pg("gang")], _rules(37))
    validate_pod_group_not_deleting(pod, [], _rules(37))
    other = _pg("gang")
    other.metadata.namespace = "elsewhere"
    other.metadata.deletion_timestamp.seconds = 1
    validate_pod_group_not_deleting(pod, [other], _rules(37))
    validate_pod_group_not_deleting(make_pod("solo").namespace("ns").obj(), [deleting], _rules(37))
    validate_pod_group_not_deleting(pod, [deleting], _rules(36))
    validate_pod_group_not_deleting(pod, [deleting], _rules(37, generic_workload=False))


def _cpg(name: str, parent: str | None = None) -> types_pb2.CompositePodGroup:
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, "ns"
    if parent is not None:
        cpg.spec.parent_composite_pod_group_name = parent
    return cpg


def test_the_finalizer_is_stamped_once_with_the_gate() -> None:
    cpg = _cpg("root")
    admit_composite_pod_group_protection(cpg, ON)
    admit_composite_pod_group_protection(cpg, ON)
    assert list(cpg.metadata.finalizers) == [COMPOSITE_POD_GROUP_PROTECTION_FINALIZER]
    other = _cpg("root")
    admit_composite_pod_group_protection(other, OFF)
    assert not other.metadata.finalizers


def test_a_child_of_a_parent_being_deleted_is_refused() -> None:
    root = _cpg("root")
    root.metadata.deletion_timestamp.seconds = 1
    child = types_pb2.PodGroup()
    child.metadata.name, child.metadata.namespace = "leaf", "ns"
    child.spec.parent_composite_pod_group_name = "root"
    with pytest.raises(Forbidden) as e:
        validate_parent_not_deleting(child, [root], ON)
    assert str(e.value.message).endswith(
        'cannot create PodGroup referencing CompositePodGroup "root" because it is being deleted'
    )
    with pytest.raises(Forbidden, match="cannot create CompositePodGroup"):
        validate_parent_not_deleting(_cpg("mid", parent="root"), [root], ON)
    live = _cpg("root")
    validate_parent_not_deleting(child, [live], ON)  # a live parent
    validate_parent_not_deleting(child, [], ON)  # a missing parent is not this plugin's
    validate_parent_not_deleting(child, [root], OFF)


def test_priority_is_resolved_from_the_class() -> None:
    classes = [make_priority_class("high", 1000).obj()]
    cpg = _cpg("root")
    cpg.spec.priority_class_name = "high"
    admit_composite_pod_group_priority(cpg, classes, ON)
    assert cpg.spec.priority == 1000
    wrong = _cpg("root")
    wrong.spec.priority_class_name = "high"
    wrong.spec.priority = 5
    with pytest.raises(Invalid, match="must not be provided in CompositePodGroup spec"):
        admit_composite_pod_group_priority(wrong, classes, ON)
    missing = _cpg("root")
    missing.spec.priority_class_name = "nope"
    with pytest.raises(Invalid, match="no PriorityClass with name nope was found"):
        admit_composite_pod_group_priority(missing, classes, ON)
