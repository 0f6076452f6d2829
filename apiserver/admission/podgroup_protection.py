"""PodGroupProtection (1.37, upstream plugin/pkg/admission/podgroupprotection/admission.go), the
CompositePodGroup part: with GenericWorkload and CompositePodGroup on,

- Admit stamps `scheduling.k8s.io/compositepodgroup-protection` on every new
  CompositePodGroup, so that it is not removed while child groups still name it as their parent;
  the PodGroup protection controller (kube-controller-manager) removes the finalizer once the
  CompositePodGroup is being deleted and has no child left;
- Validate refuses a new PodGroup or CompositePodGroup whose parentCompositePodGroupName names a
  CompositePodGroup that is being deleted (the race in which a child attaches to a parent whose
  finalizer the controller is releasing).

Not modelled here: the plugin's PodGroup half (its finalizer on every new PodGroup and the
refusal of a pod that names a PodGroup being deleted): kemu's PodGroup protection controller
still adds the PodGroup finalizer itself, as at 1.36 (controllermanager/podgroup_protection.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.podgroups import COMPOSITE_POD_GROUP_PROTECTION_FINALIZER, PodGroupRules

NAME: Final = "PodGroupProtection"


def admit_composite_pod_group_protection(
    cpg: types_pb2.CompositePodGroup, rules: PodGroupRules
) -> None:
    """Admit on create: the protection finalizer, once."""
    if not (rules.generic_workload and rules.composite):
        return
    if COMPOSITE_POD_GROUP_PROTECTION_FINALIZER not in cpg.metadata.finalizers:
        cpg.metadata.finalizers.append(COMPOSITE_POD_GROUP_PROTECTION_FINALIZER)


def validate_parent_not_deleting(
    child: types_pb2.PodGroup | types_pb2.CompositePodGroup,
    composites: Iterable[types_pb2.CompositePodGroup],
    rules: PodGroupRules,
) -> None:
    """Validate on create: Forbidden when the parent CompositePodGroup (from `composites`, what
    the apiserver holds) is being deleted; a missing parent is not this plugin's concern."""
    if not (rules.generic_workload and rules.composite):
        return
    if not child.spec.HasField("parent_composite_pod_group_name"):
        return
    parent = child.spec.parent_composite_pod_group_name
    if not parent:
        return
    namespace = child.metadata.namespace
    for cpg in composites:
        if (cpg.metadata.namespace, cpg.metadata.name) != (namespace, parent):
            continue
        if cpg.metadata.HasField("deletion_timestamp"):
            kind = "PodGroup" if isinstance(child, types_pb2.PodGroup) else "CompositePodGroup"
            resource = f"{kind.lower()}s.scheduling.k8s.io"
            raise Forbidden(
                f'{resource} "{child.metadata.name}" is forbidden: cannot create {kind} '
                f'referencing CompositePodGroup "{parent}" because it is being deleted'
            )
        return
