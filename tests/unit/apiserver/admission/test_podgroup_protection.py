"""PodGroupProtection (1.37) for CompositePodGroups, and the Priority plugin's
CompositePodGroup: the finalizer stamped on create, a child of a CompositePodGroup being
deleted refused, the priority resolved from the class."""

from __future__ import annotations

import pytest

from apiserver.admission.podgroup_protection import (
    admit_composite_pod_group_protection,
    validate_parent_not_deleting,
)
from apiserver.admission.priority import admit_composite_pod_group_priority
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden, Invalid
from kemu.machinery.podgroups import COMPOSITE_POD_GROUP_PROTECTION_FINALIZER, PodGroupRules
from kemu.testing.builders import make_priority_class

ON = PodGroupRules(minor=37, composite=True, topology_aware=True)
OFF = PodGroupRules(minor=37)


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
