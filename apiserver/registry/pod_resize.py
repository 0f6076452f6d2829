"""pods/resize (KEP-1287): what a resize may change and what it makes of the pod, as upstream's
podResizeStrategy (pkg/registry/core/pod/strategy.go: dropNonResizeUpdates) and
ValidatePodResize (pkg/apis/core/validation/validation.go)."""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.qos import compute_qos_class

_RESIZABLE: Final = ("cpu", "memory")


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
