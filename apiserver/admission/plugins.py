"""Pod defaulting, the Priority and DefaultTolerationSeconds admission plugins, and the pod
update and resize rules.

Upstream sources: pkg/apis/core/v1/defaults.go (SetDefaults_Pod), plugin/pkg/admission/priority,
plugin/pkg/admission/defaulttolerationseconds, pkg/apis/core/validation (ValidatePodUpdate,
ValidatePodResize), pkg/registry/core/pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from kemu.api.v1 import types_pb2
from kemu.machinery import jsonutil
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE

PREEMPT_LOWER_PRIORITY: Final = "PreemptLowerPriority"

# Created by the apiserver at start-up, as upstream's scheduling bootstrap does.
SYSTEM_NODE_CRITICAL: Final = ("system-node-critical", 2000001000)
SYSTEM_CLUSTER_CRITICAL: Final = ("system-cluster-critical", 2000000000)
SYSTEM_PRIORITY_CLASSES: Final = (SYSTEM_NODE_CRITICAL, SYSTEM_CLUSTER_CRITICAL)

_RESIZABLE: Final = ("cpu", "memory")

DEFAULT_TOLERATION_SECONDS: Final = 300
"""Upstream's --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds."""


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
    spec = pod.spec
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
            f"the integer value of priority ({spec.priority}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec.priority = value
    policy = policy or PREEMPT_LOWER_PRIORITY
    if spec.HasField("preemption_policy") and spec.preemption_policy != policy:
        raise Invalid.field(
            "spec.preemptionPolicy",
            f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be "
            f"provided in pod spec; priority admission controller computed {policy} from the "
            "given PriorityClass name",
        )
    spec.preemption_policy = policy


@dataclass(frozen=True)
class DefaultTolerationSeconds:
    """The DefaultTolerationSeconds plugin's settings (upstream's apiserver flags
    --default-not-ready-toleration-seconds and --default-unreachable-toleration-seconds)."""

    not_ready: int = DEFAULT_TOLERATION_SECONDS
    unreachable: int = DEFAULT_TOLERATION_SECONDS


DEFAULT_TOLERATIONS: Final = DefaultTolerationSeconds()


def admit_default_toleration_seconds(
    pod: types_pb2.Pod, settings: DefaultTolerationSeconds = DEFAULT_TOLERATIONS
) -> None:
    """DefaultTolerationSeconds: a pod that does not tolerate the NoExecute taints
    node.kubernetes.io/not-ready and node.kubernetes.io/unreachable gets a toleration of each
    (operator Exists, effect NoExecute) for the configured seconds, so that the taint manager evicts it
    that long after its node went not ready or unreachable. A toleration with an empty key
    (every taint) or an empty effect (every effect) already tolerates them."""
    for key, seconds in (
        (TAINT_NODE_NOT_READY, settings.not_ready),
        (TAINT_NODE_UNREACHABLE, settings.unreachable),
    ):
        if not any(
            t.key in ("", key) and t.effect in ("", "NoExecute") for t in pod.spec.tolerations
        ):
            pod.spec.tolerations.add(
                key=key, operator="Exists", effect="NoExecute", toleration_seconds=seconds
            )


def resize_pod(current: types_pb2.Pod, desired: types_pb2.Pod) -> types_pb2.Pod:
    """The pod after a pods/resize request (ValidatePodResize and the resize strategy).

    As upstream's dropNonResizeUpdates, changes to anything but container resources and
    resize policies are dropped, not refused.
    """
    if desired.metadata.name and desired.metadata.name != current.metadata.name:
        raise Invalid.field("metadata.name", "may not be changed in a resize")
    if current.status.phase in ("Succeeded", "Failed"):
        raise Invalid.field("spec", "Forbidden: pod resize is not allowed for terminated pods")
    _check_running_containers_report_resources(current)
    if len(desired.spec.containers) != len(current.spec.containers):
        raise Invalid.field("spec.containers", "Forbidden: containers may not be added or removed")
    result = types_pb2.Pod()
    result.CopyFrom(current)
    causes: list[Cause] = []
    for i, (old_c, new_c) in enumerate(
        zip(current.spec.containers, desired.spec.containers, strict=True)
    ):
        path = f"spec.containers[{i}]"
        if old_c.name != new_c.name:
            causes.append(Cause(f"{path}.name", "Forbidden: may not be changed in a resize"))
            continue
        for section in ("requests", "limits"):
            old_r = dict(getattr(old_c.resources, section))
            new_r = dict(getattr(new_c.resources, section))
            for res in set(old_r) | set(new_r):
                if res in _RESIZABLE:
                    if res in old_r and res not in new_r:
                        causes.append(
                            Cause(
                                f"{path}.resources.{section}[{res}]",
                                "Forbidden: resource may not be removed",
                            )
                        )
                elif old_r.get(res) != new_r.get(res):
                    causes.append(
                        Cause(
                            f"{path}.resources.{section}[{res}]",
                            "Forbidden: only cpu and memory resources are mutable",
                        )
                    )
        rc = result.spec.containers[i]
        _set_resources(rc, new_c)
        del rc.resize_policy[:]
        rc.resize_policy.extend(new_c.resize_policy)
    # Sidecars (restartable init containers) may be resized too; others may not change.
    if len(desired.spec.init_containers) == len(current.spec.init_containers):
        for i, (old_c, new_c) in enumerate(
            zip(current.spec.init_containers, desired.spec.init_containers, strict=True)
        ):
            if old_c.resources == new_c.resources and list(old_c.resize_policy) == list(
                new_c.resize_policy
            ):
                continue
            if old_c.restart_policy != "Always":
                causes.append(
                    Cause(
                        f"spec.initContainers[{i}].resources",
                        "Forbidden: resources for non-sidecar init containers are immutable",
                    )
                )
                continue
            ic = result.spec.init_containers[i]
            _set_resources(ic, new_c)
            del ic.resize_policy[:]
            ic.resize_policy.extend(new_c.resize_policy)
    if causes:
        raise Invalid.from_causes(f'Pod "{current.metadata.name}"', causes)
    if result.spec != current.spec:
        result.metadata.generation = current.metadata.generation + 1
    return result


def _set_resources(target: types_pb2.Container, desired: types_pb2.Container) -> None:
    """Takes desired's resources; an empty set stays absent, so a resize that changes nothing
    leaves the spec (and the generation) as it was."""
    if desired.resources.requests or desired.resources.limits:
        target.resources.CopyFrom(desired.resources)
    elif target.HasField("resources") and not (
        target.resources.requests or target.resources.limits
    ):
        return
    else:
        target.ClearField("resources")


def check_resize_qos(
    current: types_pb2.Pod, resized: types_pb2.Pod, *, pod_level_resources: bool
) -> None:
    """Call once the resized pod's quantities are known to be valid. `pod_level_resources`:
    the PodLevelResources gate (the pod-level requests and limits decide the class)."""
    if compute_qos_class(resized, pod_level_resources=pod_level_resources) != compute_qos_class(
        current, pod_level_resources=pod_level_resources
    ):
        raise Invalid.field(
            "spec", "Forbidden: Pod QOS Class may not change as a result of resizing"
        )


def _check_running_containers_report_resources(pod: types_pb2.Pod) -> None:
    """KEP-1287's skew rule (upstream isPodResizeRequestSupported): a kubelet reports
    containerStatuses[].resources only if it can resize in place, so a pod whose first running
    container reports none runs on a node that cannot, and is refused. A pod without running
    containers may be resized: nothing tells yet."""
    for cs in pod.status.container_statuses:
        if cs.state.HasField("running"):
            if not cs.HasField("resources"):
                raise Invalid.field(
                    "spec", "Forbidden: Pod running on node without support for resize"
                )
            return


def parse_patch(text: str) -> dict[str, Any]:
    patch = jsonutil.loads(text, "the patch")
    if not isinstance(patch, dict):
        raise BadRequest("a merge patch must be a JSON object")
    return patch
