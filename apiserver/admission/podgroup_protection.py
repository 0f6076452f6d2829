"""PodGroupProtection (1.37, upstream plugin/pkg/admission/scheduling/podgroupprotection/
admission.go): in the default-enabled admission plugins (pkg/kubeapiserver/options/plugins.go
DefaultOffAdmissionPlugins' defaultOnPlugins), acting on creates only, with GenericWorkload on.
There is no such plugin at 1.36 and before (VersionRules podgroup_protection_admission), where
the controller-manager adds the PodGroup finalizer itself.

- Admit stamps `scheduling.k8s.io/podgroup-protection` on every new PodGroup and, with
  CompositePodGroup on, `scheduling.k8s.io/compositepodgroup-protection` on every new
  CompositePodGroup, so that neither is removed while pods (a PodGroup) or child groups (a
  CompositePodGroup) still name it; the PodGroup protection controller (kube-controller-manager,
  controllermanager/podgroup_protection.py) removes the finalizer once the object is being
  deleted and nothing names it any more.
- Validate refuses a new object that names a parent being deleted (the race in which a child
  attaches to a parent whose finalizer the controller is releasing): a pod whose
  spec.schedulingGroup.podGroupName names a PodGroup being deleted, and, with
  CompositePodGroup on, a PodGroup or CompositePodGroup whose parentCompositePodGroupName names
  a CompositePodGroup being deleted. A parent that does not exist is not this plugin's concern.
  The refusal is upstream's admission.NewForbidden: `<resource> "<name>" is forbidden: cannot
  create <Kind> referencing <ParentKind> "<parent>" because it is being deleted` (403).

Upstream reads the parents from the apiserver's informers (listers); kemu reads its watch
cache once it has seen this apiserver's own writes (chain.py `_fresh`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden
from kemu.machinery.podgroups import (
    COMPOSITE_POD_GROUP_PROTECTION_FINALIZER,
    POD_GROUP_PROTECTION_FINALIZER,
    PodGroupRules,
)

NAME: Final = "PodGroupProtection"

Parent = types_pb2.PodGroup | types_pb2.CompositePodGroup


def active(rules: PodGroupRules) -> bool:
    """The plugin exists at the emulated version and GenericWorkload is on."""
    return rules.protection_admission and rules.generic_workload


def admit_pod_group_protection(pg: types_pb2.PodGroup, rules: PodGroupRules) -> None:
    """Admit on create: the PodGroup protection finalizer, once."""
    if active(rules) and POD_GROUP_PROTECTION_FINALIZER not in pg.metadata.finalizers:
        pg.metadata.finalizers.append(POD_GROUP_PROTECTION_FINALIZER)


def admit_composite_pod_group_protection(
    cpg: types_pb2.CompositePodGroup, rules: PodGroupRules
) -> None:
    """Admit on create: the CompositePodGroup protection finalizer, once."""
    if not (active(rules) and rules.composite):
        return
    if COMPOSITE_POD_GROUP_PROTECTION_FINALIZER not in cpg.metadata.finalizers:
        cpg.metadata.finalizers.append(COMPOSITE_POD_GROUP_PROTECTION_FINALIZER)


def referenced_pod_group(pod: types_pb2.Pod) -> str:
    """The PodGroup a pod names in spec.schedulingGroup.podGroupName ("" for none)."""
    if not pod.spec.HasField("scheduling_group"):
        return ""
    return pod.spec.scheduling_group.pod_group_name


def validate_pod_group_not_deleting(
    pod: types_pb2.Pod, pod_groups: Iterable[types_pb2.PodGroup], rules: PodGroupRules
) -> None:
    """Validate on create (validatePod): Forbidden when the PodGroup the pod names (from
    `pod_groups`, what the apiserver holds) is being deleted."""
    if not active(rules):
        return
    _refuse_if_deleting(
        "pods", "Pod", pod.metadata, "PodGroup", referenced_pod_group(pod), pod_groups
    )


def validate_parent_not_deleting(
    child: Parent, composites: Iterable[types_pb2.CompositePodGroup], rules: PodGroupRules
) -> None:
    """Validate on create (validatePodGroup, validateCompositePodGroup): Forbidden when the
    parent CompositePodGroup (from `composites`) is being deleted."""
    if not (active(rules) and rules.composite):
        return
    if not child.spec.HasField("parent_composite_pod_group_name"):
        return
    kind = "PodGroup" if isinstance(child, types_pb2.PodGroup) else "CompositePodGroup"
    _refuse_if_deleting(
        f"{kind.lower()}s.scheduling.k8s.io",
        kind,
        child.metadata,
        "CompositePodGroup",
        child.spec.parent_composite_pod_group_name,
        composites,
    )


def _refuse_if_deleting(
    resource: str,
    child_kind: str,
    child: types_pb2.ObjectMeta,
    parent_kind: str,
    parent_name: str,
    parents: Iterable[Parent],
) -> None:
    """validateParentReference: the parent of that name in the child's namespace, if it
    exists and is being deleted, refuses the child."""
    if not parent_name:
        return
    for parent in parents:
        meta = parent.metadata
        if (meta.namespace, meta.name) != (child.namespace, parent_name):
            continue
        if meta.HasField("deletion_timestamp"):
            raise Forbidden(
                f'{resource} "{child.name}" is forbidden: cannot create {child_kind} '
                f'referencing {parent_kind} "{parent_name}" because it is being deleted'
            )
        return
