"""The Priority admission plugin (plugin/pkg/admission/priority/admission.go): a pod's
spec.priorityClassName resolved to spec.priority and spec.preemptionPolicy, or the global default
class given; and the system priority classes the apiserver creates at start-up, as upstream's
scheduling bootstrap (pkg/registry/scheduling/rest/storage_scheduling.go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.podgroups import PodGroupRules

PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"

# Created by the apiserver at start-up, as upstream's scheduling bootstrap does.
SYSTEM_NODE_CRITICAL: Final = ("system-node-critical", 2000001000)
SYSTEM_CLUSTER_CRITICAL: Final = ("system-cluster-critical", 2000000000)
SYSTEM_PRIORITY_CLASSES: Final = (SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL)


def system_priority_classes() -> list[types_pb2.PriorityClass]:
    out = []
    for name, value in SYSTEM_PRIORITY_CLASSES:
        pc = types_pb2.PriorityClass(value=value, preemption_policy=PREEMPT_LOWER_PRIORITY)
        pc.metadata.name = name
        pc.description = (
            "Used for system critical pods that must not be moved from their current node."
        )
        out.append(pc)
    return out


def admit_priority(pod: types_pb2.Pod, classes: Sequence[types_pb2.PriorityClass]) -> None:
    """Resolves spec.priorityClassName to spec.priority and spec.preemptionPolicy."""
    _resolve(pod.spec, classes, "pod spec", preemption_policy=True)


def admit_pod_group_priority(
    pg: types_pb2.PodGroup, classes: Sequence[types_pb2.PriorityClass], rules: PodGroupRules
) -> None:
    """A PodGroup's priorityClassName resolved on create as a pod's (the global default
    class when it names none, else 0; a priority sent must match), where the field exists:
    1.36 with WorkloadAwarePreemption, 1.37 (plugin/pkg/admission/priority admission_test.go
    TestAdmitPodGroup: "feature gate disabled, skips validation"); its preemptionPolicy with
    PodGroupPreemptionPolicy (1.37)."""
    if rules.disruption_fields:
        _resolve(pg.spec, classes, "PodGroup spec", preemption_policy=rules.preemption_policy)


def admit_composite_pod_group_priority(
    cpg: types_pb2.CompositePodGroup,
    classes: Sequence[types_pb2.PriorityClass],
    rules: PodGroupRules,
) -> None:
    """A CompositePodGroup's priorityClassName resolved on create as a PodGroup's (KEP-6012:
    "the Priority admission controller gets extended to additionally support the
    CompositePodGroup API"); its preemptionPolicy with PodGroupPreemptionPolicy."""
    _resolve(cpg.spec, classes, "CompositePodGroup spec", preemption_policy=rules.preemption_policy)


def _resolve(
    spec: types_pb2.PodSpec | types_pb2.PodGroupSpec | types_pb2.CompositePodGroupSpec,
    classes: Sequence[types_pb2.PriorityClass],
    what: str,
    *,
    preemption_policy: bool,
) -> None:
    by_name = {pc.metadata.name: pc for pc in classes}
    if spec.priority_class_name:
        pc = by_name.get(spec.priority_class_name)
        if pc is None:
            raise Invalid.field(
                "spec.priorityClassName",
                f"no PriorityClass with name {spec.priority_class_name} was found",
            )
        value, policy = pc.value, pc.preemption_policy if pc.HasField("preemption_policy") else ""
    else:
        defaults = sorted((pc for pc in classes if pc.global_default), key=lambda pc: pc.value)
        if defaults:
            pc = defaults[0]
            spec.priority_class_name = pc.metadata.name
            value = pc.value
            policy = pc.preemption_policy if pc.HasField("preemption_policy") else ""
        else:
            value, policy = 0, ""
    if spec.HasField("priority") and spec.priority != value:
        raise Invalid.field(
            "spec.priority",
            f"the integer value of priority ({spec.priority}) must not be provided in {what}; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec.priority = value
    if not preemption_policy:
        return
    policy = policy or PREEMPT_LOWER_PRIORITY
    if spec.HasField("preemption_policy") and spec.preemption_policy != policy:
        raise Invalid.field(
            "spec.preemptionPolicy",
            f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be "
            f"provided in {what}; priority admission controller computed {policy} from the "
            "given PriorityClass name",
        )
    spec.preemption_policy = policy
