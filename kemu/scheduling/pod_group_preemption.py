"""Workload-aware preemption's victim selection (KEP-5710; upstream
pkg/scheduler/framework/preemption/podgrouppreemption.go PodGroupEvaluator.Preempt and
selectVictimsOnDomain, 1.36 gate WorkloadAwarePreemption, folded into GenericWorkload at 1.37).
Pure: the caller gives the snapshot's pods and a function that says whether the preemptor
group fits with some pods gone; no API writes.

Victims come in units (`VictimUnit`, upstream's domain victims, newDomainForWorkloadPreemption
and getCrossNodesVictims):
- a pod whose PodGroup has disruptionMode All (1.37 `{all: {}}`; 1.36's string "PodGroup",
  which the API layer stores as the same union) is one unit with every scheduled pod of its
  group, on whichever node: they go together, at the PodGroup's priority;
- any other pod (disruptionMode Single, the default, or no PodGroup) is its own unit, at its
  PodGroup's priority when the PodGroup sets one (upstream GetPodPriority), else its own.
- CompositePodGroups (KEP-6012, `forest` given): a pod's unit is the subtree of its highest
  ancestor (its PodGroup or a CPG above it) with disruptionMode All, every scheduled pod of
  every PodGroup under it (upstream getHighestAllAncestor); its priority is its tree's root's
  (upstream getPodPriority walks up the hierarchy); a CPG unit is more important than a
  PodGroup's (upstream victimRank).

`select_pod_group_victims` is the algorithm, over the whole cluster (upstream's single
"cluster-domain"): the potential victims are the units of lower priority than the preemptor
group; all are removed and the group must then fit; then each unit, most important first
(`importance`: higher priority; a group before a single pod; between groups the larger, then
the older; between pods the older) and those whose removal violates a PodDisruptionBudget
before the others, is put back when the group still fits without it (reprieved). Upstream
checks a reprieve by running Filter for each member on the node the first run proposed; kemu
runs the group's algorithm again (the same members in the same order against the same
snapshot), so a reprieve may move a member to another node: the assignments returned are those
of the last run that fit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GENERIC_WORKLOAD, WORKLOAD_AWARE_PREEMPTION, FeatureGates
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey, WorkloadForest
from kemu.scheduling.interface import ObjectLister
from kemu.scheduling.pod_group_state import GroupMembership, PodGroupKey
from kemu.scheduling.preemption import violated_budgets
from kemu.scheduling.status import SUCCESS, Code, Status, unresolvable
from kemu.scheduling.types import NodeInfo, PodInfo

__all__ = [
    "NO_VICTIMS",
    "PodGroupFits",
    "PodGroupPreemption",
    "VictimUnit",
    "disrupts_whole_group",
    "importance",
    "pod_group_priority",
    "select_pod_group_victims",
    "victim_units",
    "workload_aware_preemption_enabled",
]

NO_VICTIMS: Final = "No preemption victims found for incoming preemptor"


@dataclass(frozen=True, slots=True)
class VictimUnit:
    """Pods that are preempted together, at `priority`; `group` is set for a PodGroup with
    disruptionMode All (its scheduled pods on every node)."""

    pods: tuple[PodInfo, ...]
    priority: int
    group: PodGroupKey | None = None
    # The earliest start among the pods (nanoseconds; now for a pod not started).
    start_ns: int = 0

    @property
    def nodes(self) -> frozenset[str]:
        """The nodes the unit's pods run on (upstream affectedNodes)."""
        return frozenset(pi.pod.spec.node_name for pi in self.pods)


# Whether the group fits with the given pods (by uid) gone: its members' proposed nodes (uid ->
# node) and Success, or why not (upstream PodGroupSchedulingFunc).
PodGroupFits = Callable[[frozenset[str]], tuple[Mapping[str, str], Status]]


@dataclass(frozen=True, slots=True)
class PodGroupPreemption:
    """The units to preempt and where each member goes once they are gone (uid -> node)."""

    victims: tuple[VictimUnit, ...]
    assignments: Mapping[str, str]
    pdb_violations: int = 0

    def pods(self) -> list[types_pb2.Pod]:
        return [pi.pod for unit in self.victims for pi in unit.pods]


def workload_aware_preemption_enabled(gates: FeatureGates) -> bool:
    """1.36: WorkloadAwarePreemption (with GenericWorkload); 1.37: folded into
    GenericWorkload (the removed gate reads as on)."""
    return gates.enabled(GENERIC_WORKLOAD) and gates.enabled(WORKLOAD_AWARE_PREEMPTION)


def disrupts_whole_group(pg: types_pb2.PodGroup | None) -> bool:
    """disruptionMode All: the group's pods are preempted together."""
    return pg is not None and pg.spec.disruption_mode.HasField("all")


def pod_group_priority(pg: types_pb2.PodGroup | None, default: int) -> int:
    """The PodGroup's spec.priority when set (resolved from its priorityClassName by
    admission), else `default`."""
    if pg is not None and pg.spec.HasField("priority"):
        return pg.spec.priority
    return default


def importance(unit: VictimUnit) -> tuple[int, int, int, int]:
    """A sort key putting the more important unit first (upstream MoreImportantVictim: a
    CompositePodGroup before a PodGroup before a single pod)."""
    if isinstance(unit.group, CompositePodGroupKey):
        return (-unit.priority, 0, -len(unit.pods), unit.start_ns)
    if unit.group is not None:
        return (-unit.priority, 1, -len(unit.pods), unit.start_ns)
    return (-unit.priority, 2, 0, unit.start_ns)


def victim_units(
    nodes: Iterable[NodeInfo],
    membership: GroupMembership,
    pod_groups: ObjectLister[types_pb2.PodGroup] | None,
    now_ns: int,
    *,
    below: int,
    skip: Callable[[PodInfo], bool] = lambda pi: False,
    forest: WorkloadForest | None = None,
) -> list[VictimUnit]:
    """The snapshot's pods as victim units of priority lower than `below`, node order kept.
    A unit with a pod `skip` says no to is left out whole. `forest`: the CompositePodGroup
    trees (with the gate on)."""
    singles: list[VictimUnit] = []
    groups: dict[PodGroupKey, list[PodInfo]] = {}
    group_priority: dict[PodGroupKey, int] = {}
    skipped: set[PodGroupKey] = set()
    trees = forest is not None and forest.enabled
    for node in nodes:
        for pi in node.pods:
            key = membership.key(pi.pod) if membership.enabled else None
            chain: list[tuple[PodGroupKey, types_pb2.PodGroup | types_pb2.CompositePodGroup]]
            if key is None:
                chain = []
            elif trees:
                assert forest is not None
                chain = forest.ancestry(key)
            else:
                pg = pod_groups.get(key.name, key.namespace) if pod_groups else None
                chain = [(key, pg)] if pg is not None else []
            start = pi.start_time_ns()
            start = now_ns if start is None else start
            unit_key: PodGroupKey | None = None
            for group_key, obj in chain:
                if obj.spec.disruption_mode.HasField("all"):
                    unit_key = group_key  # the highest ancestor with All wins
            root = chain[-1][1] if chain else None
            priority = (
                root.spec.priority
                if root is not None and root.spec.HasField("priority")
                else pi.priority
            )
            if unit_key is not None:
                groups.setdefault(unit_key, []).append(pi)
                group_priority[unit_key] = priority
                if skip(pi):
                    skipped.add(unit_key)
                continue
            if priority < below and not skip(pi):
                singles.append(VictimUnit((pi,), priority, None, start))
    units = list(singles)
    for key, members in groups.items():
        priority = group_priority[key]
        if priority >= below or key in skipped:
            continue
        starts = [pi.start_time_ns() for pi in members]
        start = min(now_ns if s is None else s for s in starts)
        units.append(VictimUnit(tuple(members), priority, key, start))
    return units


def select_pod_group_victims(
    potential: Sequence[VictimUnit],
    pdbs: Sequence[types_pb2.PodDisruptionBudget],
    fits: PodGroupFits,
) -> tuple[PodGroupPreemption | None, Status]:
    """See the module docstring. None and the status of the run with every potential victim
    gone when the group does not fit even then; None and UnschedulableAndUnresolvable when
    there is no potential victim."""
    if not potential:
        return None, unresolvable(NO_VICTIMS)
    removed = {pi.uid for unit in potential for pi in unit.pods}
    assignments, status = fits(frozenset(removed))
    if not status.is_success():
        return None, status
    ordered = sorted(potential, key=importance)
    pods = [pi.pod for unit in ordered for pi in unit.pods]
    budgets = violated_budgets(pods, pdbs) if pdbs else ()
    violating: list[VictimUnit] = []
    non_violating: list[VictimUnit] = []
    i = 0
    for unit in ordered:
        n = len(unit.pods)
        violates = bool(budgets) and any(budgets[i : i + n])
        i += n
        (violating if violates else non_violating).append(unit)
    victims: list[VictimUnit] = []
    violations = 0
    for group, violates in ((violating, True), (non_violating, False)):
        for unit in group:
            without = removed - {pi.uid for pi in unit.pods}
            trial, status = fits(frozenset(without))
            if status.is_success():
                removed, assignments = without, trial  # reprieved
                continue
            if status.code is Code.ERROR:
                return None, status
            victims.append(unit)
            violations += violates
    victims.sort(key=importance)
    return PodGroupPreemption(tuple(victims), dict(assignments), violations), SUCCESS
