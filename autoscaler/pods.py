"""Which pods the autoscaler counts, and where (upstream core/utils, processors/pods,
the kubernetes listers' isUnschedulable), with nominatedNodeName handled by version:

The version decides through kemu.component.version_rules (`autoscaler_nnn_in_cluster_state`),
resolved once by the process:

- before 1.37 (cluster-autoscaler before kubernetes/autoscaler#9607, the filterOutExpendable
  pod list processor): among the unschedulable, non-expendable pods, one whose
  status.nominatedNodeName names a node of the snapshot is "waiting for lower priority pods
  preemption": it is counted on that node and triggers no scale-up. A pod nominated to a node
  that does not exist is an ordinary unschedulable pod.
- from 1.37 (#9607): every unbound pod with a nominatedNodeName is counted on its node when
  the node exists (whatever its conditions: KEP-5278's binding-cycle NNN, pods of other
  schedulers) and never triggers a scale-up, even when the node is gone; expendable pods and
  pods being deleted are filtered out first, as before (neither counted there nor scaled
  for: an expendable pod's room is free, a terminating pod will not bind).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.version_rules import VersionRules
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.scheduling.types import pod_priority

_TERMINAL: Final = frozenset({"Succeeded", "Failed"})


def is_unschedulable(pod: types_pb2.Pod) -> bool:
    """Unbound, not being deleted, and PodScheduled=False with reason Unschedulable."""
    if pod.spec.node_name or pod.metadata.HasField("deletion_timestamp"):
        return False
    cond = get_pod_condition(pod.status, "PodScheduled")
    return cond is not None and cond.status == "False" and cond.reason == "Unschedulable"


def is_scheduled(pod: types_pb2.Pod) -> bool:
    """Bound and not finished: it holds room on its node (upstream's scheduled pod lister)."""
    return bool(pod.spec.node_name) and pod.status.phase not in _TERMINAL


def is_expendable(pod: types_pb2.Pod, cutoff: int) -> bool:
    """Priority below the cutoff: never triggers a scale-up (upstream IsExpendablePod)."""
    return pod_priority(pod) < cutoff


def counted_on_nominated_node(pod: types_pb2.Pod, cutoff: int) -> bool:
    """From 1.37 (#9607): an unbound pod that has a nominatedNodeName and passed the filters
    that come first (not being deleted, not expendable) is counted on that node."""
    return (
        bool(pod.status.nominated_node_name)
        and not pod.metadata.HasField("deletion_timestamp")
        and not is_expendable(pod, cutoff)
    )


@dataclass
class PodSets:
    """The pods of one loop, sorted by what the autoscaler does with them."""

    scheduled: list[types_pb2.Pod] = field(default_factory=list)
    """Bound pods, counted on their nodes."""
    nominated: list[tuple[types_pb2.Pod, str]] = field(default_factory=list)
    """Unbound pods force-added on their nominated node."""
    unschedulable: list[types_pb2.Pod] = field(default_factory=list)
    """Candidates for a scale-up (still to be checked against existing nodes)."""
    expendable: list[types_pb2.Pod] = field(default_factory=list)
    too_young: list[types_pb2.Pod] = field(default_factory=list)
    """Unschedulable for less than --new-pod-scale-up-delay."""
    nominated_elsewhere: list[types_pb2.Pod] = field(default_factory=list)
    """From 1.37: pods with NNN on a node that is gone (no scale-up, not counted)."""


def sort_pods(
    pods: Iterable[types_pb2.Pod],
    node_names: set[str],
    *,
    rules: VersionRules,
    expendable_cutoff: int,
    now: float,
    new_pod_scale_up_delay: float,
) -> PodSets:
    """Sorts the pods of the informer as the version's autoscaler does (module docstring)."""
    out = PodSets()
    nnn_always = rules.autoscaler_nnn_in_cluster_state
    for pod in pods:
        if is_scheduled(pod):
            out.scheduled.append(pod)
            continue
        if pod.spec.node_name or pod.status.phase in _TERMINAL:
            continue
        nnn = pod.status.nominated_node_name
        if nnn_always and counted_on_nominated_node(pod, expendable_cutoff):
            if nnn in node_names:
                out.nominated.append((pod, nnn))
            elif is_unschedulable(pod):
                out.nominated_elsewhere.append(pod)
            continue
        if not is_unschedulable(pod):
            continue
        if is_expendable(pod, expendable_cutoff):
            out.expendable.append(pod)
        elif not nnn_always and nnn and nnn in node_names:
            out.nominated.append((pod, nnn))
        elif now - pod.metadata.creation_timestamp.seconds < new_pod_scale_up_delay:
            out.too_young.append(pod)
        else:
            out.unschedulable.append(pod)
    return out
