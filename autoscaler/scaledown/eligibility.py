"""The checks of a node before any removal simulation (upstream core/scaledown/eligibility and
simulator/utilization), in upstream's order, the first that fails naming the reason: a node
already being deleted, the scale-down-disabled annotation, a node of no node group, an unready
node while --scale-down-unready-enabled is false, and utilization: max(cpu, memory) requests
over allocatable of the pods counted on it in the snapshot (bound pods, pods force-added on
their nominated node, pods placed there in simulation; DaemonSet and mirror pods included, as
upstream by default; expendable pods are not in the snapshot, but for one nominated to
the node where the version counts it there; a pod terminating for longer than its grace
period and 30 s is not counted, as upstream's utilization.Calculate skips
drain.IsPodLongTerminating), held to the threshold whether the node is ready or not
(readiness only picks the waiting time: --scale-down-unready-time).

A node with node-local DRA devices is held to its devices alone (upstream utilization.Calculate
with DRA: CPU and memory are then not looked at): the highest utilization of its pools,
autoscaler/dra.py; when that cannot be computed (an incomplete pool, a claim not allocated),
a warning is logged and the node counts as unused, as upstream's.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Final

from autoscaler.dra import DraUtilization, UtilizationError, highest_dynamic_resource_utilization
from autoscaler.scaledown.options import ScaleDownOptions
from autoscaler.scaledown.rules import is_long_terminating
from autoscaler.scaledown.taints import TO_BE_DELETED_TAINT, has_taint
from kemu.machinery.node_conditions import is_node_ready
from kemu.scheduling.dra_snapshot import DraSnapshot
from kemu.scheduling.types import NodeInfo

logger = logging.getLogger(__name__)

SCALE_DOWN_DISABLED: Final = "cluster-autoscaler.kubernetes.io/scale-down-disabled"


class UnremovableReason(enum.StrEnum):
    """Upstream simulator.UnremovableReason names."""

    RECENTLY_UNREMOVABLE = "RecentlyUnremovable"
    SCALE_DOWN_DISABLED_ANNOTATION = "ScaleDownDisabledAnnotation"
    NOT_AUTOSCALED = "NotAutoscaled"
    SCALE_DOWN_UNREADY_DISABLED = "ScaleDownUnreadyDisabled"
    CURRENTLY_BEING_DELETED = "CurrentlyBeingDeleted"
    NOT_UNDERUTILIZED = "NotUnderutilized"
    NOT_UNNEEDED_LONG_ENOUGH = "NotUnneededLongEnough"
    NOT_UNREADY_LONG_ENOUGH = "NotUnreadyLongEnough"
    NODE_GROUP_MIN_SIZE_REACHED = "NodeGroupMinSizeReached"
    NO_PLACE_TO_MOVE_PODS = "NoPlaceToMovePods"
    BLOCKED_BY_POD = "BlockedByPod"
    NOT_UNNEEDED_OTHER_REASON = "NotUnneededOtherReason"


@dataclass(frozen=True)
class Utilization:
    cpu: float
    memory: float
    dra: DraUtilization | None = None
    """The node's devices' (None: no node-local devices, or no DRA)."""

    @property
    def value(self) -> float:
        if self.dra is not None:
            return self.dra.value
        return max(self.cpu, self.memory)

    @property
    def resource(self) -> str:
        """What the value is of (upstream utilization.Info's ResourceName)."""
        if self.dra is not None:
            return self.dra.resource
        return "cpu" if self.cpu >= self.memory else "memory"

    def describe(self) -> str:
        if self.dra is not None:
            return f"{self.dra.resource} {self.dra.value:.3g}"
        return f"cpu {self.cpu:.3g}, memory {self.memory:.3g}"


def utilization(ni: NodeInfo, now: float, dra: DraSnapshot | None = None) -> Utilization:
    """The requests of the node's pods over its allocatable, the pods terminating for too
    long at wall time `now` left out; with `dra` and node-local devices, their utilization."""
    if dra is not None:
        slices = dra.node_slices(ni.name)
        if slices:
            claims = {}
            for pi in ni.pods:
                for c in dra.pod_claims(pi.pod):
                    claims[(c.metadata.namespace, c.metadata.name)] = c
            try:
                return Utilization(
                    0.0, 0.0, highest_dynamic_resource_utilization(slices, claims.values())
                )
            except UtilizationError as e:
                logger.warning("Failed to calculate utilization for %s: %s", ni.name, e)
                return Utilization(0.0, 0.0, DraUtilization("", 0.0))
    cpu = mem = 0
    for pi in ni.pods:
        if is_long_terminating(pi.pod, now):
            continue
        cpu += pi.requests.milli_cpu
        mem += pi.requests.memory
    alloc = ni.allocatable
    return Utilization(
        cpu / alloc.milli_cpu if alloc.milli_cpu else 0.0,
        mem / alloc.memory if alloc.memory else 0.0,
    )


def check(
    ni: NodeInfo,
    *,
    in_group: bool,
    opts: ScaleDownOptions,
    now: float,
    dra: DraSnapshot | None = None,
) -> tuple[UnremovableReason | None, str, Utilization]:
    """None when the node may go on to the removal simulation; else the reason and a message
    for the log (`now`: wall time, for the long-terminating pods; `dra`: the simulation's DRA
    objects)."""
    node = ni.node
    assert node is not None
    util = utilization(ni, now, dra)
    if has_taint(node, TO_BE_DELETED_TAINT):
        return UnremovableReason.CURRENTLY_BEING_DELETED, "being deleted", util
    if node.metadata.annotations.get(SCALE_DOWN_DISABLED) == "true":
        return (
            UnremovableReason.SCALE_DOWN_DISABLED_ANNOTATION,
            f"annotated {SCALE_DOWN_DISABLED}: true",
            util,
        )
    if not in_group:
        return UnremovableReason.NOT_AUTOSCALED, "in no autoscaled node group", util
    if not opts.unready_enabled and not is_node_ready(node):
        return (
            UnremovableReason.SCALE_DOWN_UNREADY_DISABLED,
            "unready, and --scale-down-unready-enabled is false",
            util,
        )
    if util.value >= opts.utilization_threshold:
        return (
            UnremovableReason.NOT_UNDERUTILIZED,
            f"utilization {util.value:.3g} ({util.describe()}) is "
            f"not below the threshold {opts.utilization_threshold:g}",
            util,
        )
    return None, "", util
