"""The drainability rules (upstream simulator/drainability/rules, in their order): for each pod
counted on a node, whether it is left alone (mirror pods, pods terminating for longer than
their grace period and 30 s (longterminating), DaemonSet pods, pods that ended; expendable
pods never get here: they are not in the snapshot, but for one nominated to the node where
the version counts it there, which is a pod as any other), re-placed elsewhere in simulation and evicted (the others), or whether it blocks the
node's removal, and why (upstream drain.BlockingPodReason, with upstream's messages: the
kube-system, not-safe-to-evict and local-storage ones name the pod alone). Local storage is an
emptyDir not in memory or a hostPath volume, but those the pod's
cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes annotation lists."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from autoscaler.scaledown.options import ScaleDownOptions
from kemu.api.v1 import types_pb2
from kemu.machinery.eviction import matching_pdbs
from kemu.machinery.keys import object_key
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_strategy import TERMINAL_PHASES, spec_grace_seconds
from kemu.machinery.pod_types import is_mirror_pod

SAFE_TO_EVICT: Final = "cluster-autoscaler.kubernetes.io/safe-to-evict"
SAFE_TO_EVICT_LOCAL_VOLUMES: Final = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
"""Comma-separated names of the pod's local volumes that do not block its node's removal."""
LONG_TERMINATING_EXTRA: Final = 30.0
"""Seconds past its grace period after which a terminating pod is left alone (upstream
drain.PodLongTerminatingExtraThreshold)."""
KUBE_SYSTEM: Final = "kube-system"


REPLICATED_KINDS: Final = frozenset({"ReplicationController", "Job", "ReplicaSet", "StatefulSet"})
"""The controllers whose pods count as replicated under --skip-nodes-with-custom-controller-pods
(upstream drainability/rules/replicated)."""


class BlockingReason(enum.StrEnum):
    """Upstream drain.BlockingPodReason names."""

    NOT_REPLICATED = "NotReplicated"
    LOCAL_STORAGE_REQUESTED = "LocalStorageRequested"
    NOT_SAFE_TO_EVICT_ANNOTATION = "NotSafeToEvictAnnotation"
    UNMOVABLE_KUBE_SYSTEM_POD = "UnmovableKubeSystemPod"
    NOT_ENOUGH_PDB = "NotEnoughPdb"


@dataclass(frozen=True)
class BlockingPod:
    pod: str
    """namespace/name"""
    reason: BlockingReason
    message: str


@dataclass
class NodePods:
    """The pods of one node, sorted by the rules."""

    movable: list[types_pb2.Pod] = field(default_factory=list)
    """To re-place in simulation, then evict."""
    daemonset: list[types_pb2.Pod] = field(default_factory=list)
    """DaemonSet and mirror pods: not moved (they go with the node)."""
    ignored: list[types_pb2.Pod] = field(default_factory=list)
    """Finished or long-terminating pods: not re-placed."""
    blocking: BlockingPod | None = None


def is_daemonset_pod(pod: types_pb2.Pod) -> bool:
    ref = controller_of(pod)
    return ref is not None and ref.kind == "DaemonSet"


def _has_blocking_local_storage(pod: types_pb2.Pod) -> bool:
    listed = pod.metadata.annotations.get(SAFE_TO_EVICT_LOCAL_VOLUMES, "")
    safe = set(listed.split(",")) if listed else set()
    for v in pod.spec.volumes:
        local = v.HasField("host_path") or (
            v.HasField("empty_dir") and v.empty_dir.medium != "Memory"
        )
        if local and v.name not in safe:
            return True
    return False


def is_long_terminating(pod: types_pb2.Pod, now: float) -> bool:
    """Deleted more than its grace period (30 s if unset) and LONG_TERMINATING_EXTRA ago."""
    if not pod.metadata.HasField("deletion_timestamp"):
        return False
    deleted = pod.metadata.deletion_timestamp.ToNanoseconds() / 1e9
    return deleted + spec_grace_seconds(pod) + LONG_TERMINATING_EXTRA < now


class PdbTracker:
    """The PDBs' remaining disruptions while several nodes are removed in one simulation
    (upstream RemainingPdbTracker): a pod moved uses one disruption of each PDB that guards
    it."""

    def __init__(self, pdbs: Iterable[types_pb2.PodDisruptionBudget]) -> None:
        self._pdbs = list(pdbs)
        self._left = {object_key(p): p.status.disruptions_allowed for p in self._pdbs}

    def fork(self) -> PdbTracker:
        out = PdbTracker(())
        out._pdbs = self._pdbs
        out._left = dict(self._left)
        return out

    def guarding(self, pod: types_pb2.Pod) -> list[types_pb2.PodDisruptionBudget]:
        return matching_pdbs(pod, self._pdbs)

    def can_disrupt(self, pods: Iterable[types_pb2.Pod]) -> tuple[bool, str]:
        """Whether every pod may go: each PDB that guards one has a disruption left (upstream's
        pdb drainability rule; a node whose pods together need more than that is still
        removable, only not in parallel: its drain's evictions wait for the budget); else
        False and the first pod that may not. When all may, the budgets are used up by one per
        pod, below zero if need be (upstream RemainingPdbTracker.RemovePods): a later node
        that needs them is blocked."""
        pods = list(pods)
        for pod in pods:
            for pdb in self.guarding(pod):
                if self._left[object_key(pdb)] < 1:
                    return False, object_key(pod)
        for pod in pods:
            for pdb in self.guarding(pod):
                self._left[object_key(pdb)] -= 1
        return True, ""


def classify(
    pods: Iterable[types_pb2.Pod],
    pdbs: PdbTracker,
    options: ScaleDownOptions,
    *,
    now: float,
) -> NodePods:
    """Sorts a node's pods by the rules at time `now`; stops at the first blocking pod. The
    PDBs are checked for all movable pods together (and used up in `pdbs` when they allow
    it)."""
    out = NodePods()
    guarded: list[types_pb2.Pod] = []  # safe-to-evict "true" pods skip the PDB rule
    for pod in pods:
        key = object_key(pod)
        name = pod.metadata.name
        ann = pod.metadata.annotations
        if is_mirror_pod(pod):
            out.daemonset.append(pod)
            continue
        if is_long_terminating(pod, now):
            out.ignored.append(pod)
            continue
        if is_daemonset_pod(pod):
            out.daemonset.append(pod)
            continue
        if pod.status.phase in TERMINAL_PHASES:
            out.ignored.append(pod)
            continue
        if ann.get(SAFE_TO_EVICT) == "true":
            out.movable.append(pod)
            continue
        ref = controller_of(pod)
        if ref is None or (
            options.skip_nodes_with_custom_controller_pods and ref.kind not in REPLICATED_KINDS
        ):
            out.blocking = BlockingPod(
                key, BlockingReason.NOT_REPLICATED, f"{key} is not replicated"
            )
            return out
        if (
            options.skip_nodes_with_system_pods
            and pod.metadata.namespace == KUBE_SYSTEM
            and not pdbs.guarding(pod)
        ):
            out.blocking = BlockingPod(
                key,
                BlockingReason.UNMOVABLE_KUBE_SYSTEM_POD,
                f"non-daemonset, non-mirrored, non-pdb-assigned kube-system pod present: {name}",
            )
            return out
        if ann.get(SAFE_TO_EVICT) == "false":
            out.blocking = BlockingPod(
                key,
                BlockingReason.NOT_SAFE_TO_EVICT_ANNOTATION,
                f"pod annotated as not safe to evict present: {name}",
            )
            return out
        if options.skip_nodes_with_local_storage and _has_blocking_local_storage(pod):
            out.blocking = BlockingPod(
                key,
                BlockingReason.LOCAL_STORAGE_REQUESTED,
                f"pod with local storage present: {name}",
            )
            return out
        out.movable.append(pod)
        guarded.append(pod)
    ok, which = pdbs.can_disrupt(guarded)
    if not ok:
        out.blocking = BlockingPod(
            which,
            BlockingReason.NOT_ENOUGH_PDB,
            f"not enough pod disruption budget to move {which}",
        )
    return out
