"""Placements for the pod-group cycle (KEP-5732, TopologyAwareWorkloadScheduling): upstream
pkg/scheduler/schedule_one_podgroup.go podGroupSchedulingPlacementAlgorithm and findBestPlacement
at 1.36 (commit 008b3652959c), pkg/scheduler/algorithm_podgroup.go at 1.37 (commit 1ff291df4b4d),
and the framework's RunPlacementGeneratePlugins / RunPlacementScorePlugins.

With the gate on, the group's algorithm (the scheduler's, passed in as `evaluate`) runs once per
placement instead of once over the cluster:

1. PlacementGenerate: the plugins turn the parent placement (every node of the snapshot) into
   candidate placements. 1.36 allows at most one such plugin (the framework refuses more: "at
   most one placement generate plugin is allowed"); 1.37 runs each on the parent and keeps the
   non-empty intersections of their placements (KEP-5732's merge). No plugin: the parent alone.
2. Each placement is assumed in the snapshot (`Snapshot.assume_placement`: the members' Filter
   sees only its nodes), the group's algorithm runs there, and the enclosing placement (none at
   the top) is put back; the algorithm undoes its own assumptions. An Error ends the cycle with it. At 1.37 a standalone
   group first tries the one placement holding its members' nominated nodes, if exactly one
   does, and keeps it when it places a member there (upstream nominatedPlacement).
3. No feasible placement: the group is Unschedulable with
   `0/N placements are available, first placement status: <the first one's reason>` (the first
   evaluated: the nominated one at 1.37, else the first generated; TopologyPlacementGenerator's
   placements come in domain-name order in kemu, in Go's map order upstream).
   One feasible placement: that one. Several: PlacementScore. Each plugin scores every
   feasible placement, NormalizePlacementScore brings its scores into [0, 100], each is
   multiplied by the plugin's placementScore weight and summed; the highest total wins, ties
   broken at random (upstream's Randomizer).

Where upstream dereferences a missing result (no placement generated at all), kemu reports the
group Unschedulable with `0/0 placements are available`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from kemu.component.version import Version
from kemu.scheduling.interface import (
    CycleState,
    Placement,
    PlacementGeneratePlugin,
    PlacementScore,
    PlacementScorePlugin,
    PodGroupAssignments,
    ProposedAssignment,
)
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Code, Status, as_error
from kemu.scheduling.types import NodeInfo

MERGED_PLACEMENT_GENERATORS_SINCE: Final = Version(1, 37)
"""1.37 runs several PlacementGenerate plugins and intersects their placements; 1.36 allows
one."""
NOMINATED_PLACEMENT_FIRST_SINCE: Final = Version(1, 37)
AT_MOST_ONE_GENERATOR: Final = "at most one placement generate plugin is allowed"


class GroupRun(Protocol):
    """What the placement algorithm reads of one run of the group's algorithm."""

    @property
    def status(self) -> Status: ...

    def proposed(self) -> tuple[ProposedAssignment, ...]:
        """The members the run placed, with their nodes."""
        ...


R = TypeVar("R", bound=GroupRun)


@dataclass(frozen=True, slots=True)
class PlacementOutcome(Generic[R]):
    """The placement algorithm's answer: `status` is the group's (Success: `run` is the chosen
    placement's run; a rejection: `run` is the one reported, if any; Error), `placement` the
    chosen one, `generated` how many placements there were."""

    status: Status
    run: R | None
    placement: Placement | None
    generated: int


# ---------------------------------------------------------------- PlacementGenerate


def run_placement_generate_plugins(
    plugins: Sequence[PlacementGeneratePlugin],
    state: CycleState,
    group: PodGroupKey,
    all_nodes: Sequence[NodeInfo],
    version: Version,
) -> tuple[list[Placement], Status]:
    """The candidate placements (see the module docstring, step 1)."""
    parent = Placement("", tuple(all_nodes))
    if not plugins:
        return [parent], SUCCESS
    if version < MERGED_PLACEMENT_GENERATORS_SINCE and len(plugins) > 1:
        return [], as_error(AT_MOST_ONE_GENERATOR)
    merged: list[Placement] | None = None
    for plugin in plugins:
        try:
            placements, status = plugin.generate_placements(state, group, parent)
        except Exception as err:  # a plugin's bug: an Error naming it
            return [], Status(
                Code.ERROR,
                (f'running PlacementGenerate plugin "{plugin.name()}": {err}',),
                plugin.name(),
            )
        if not status.is_success():
            return [], Status(status.code, status.reasons, status.plugin or plugin.name())
        merged = placements if merged is None else _intersect(merged, placements)
    return merged or [], SUCCESS


def _intersect(left: Sequence[Placement], right: Sequence[Placement]) -> list[Placement]:
    out: list[Placement] = []
    for a in left:
        for b in right:
            names = a.node_names() & b.node_names()
            if names:
                nodes = tuple(n for n in a.nodes if n.name in names)
                out.append(Placement(f"{a.name}/{b.name}" if a.name else b.name, nodes))
    return out


# ---------------------------------------------------------------- PlacementScore


def run_placement_score_plugins(
    plugins: Sequence[tuple[PlacementScorePlugin, int]],
    state: CycleState,
    group: PodGroupKey,
    candidates: Sequence[PodGroupAssignments],
) -> tuple[list[int], Status]:
    """Every candidate's total score, in `candidates` order (see the module docstring)."""
    totals = [0] * len(candidates)
    for plugin, weight in plugins:
        name = plugin.name()
        try:
            scores: list[PlacementScore] = []
            for candidate in candidates:
                score, status = plugin.score_placement(state, group, candidate)
                if not status.is_success():
                    return [], Status(
                        Code.ERROR,
                        (f'running PlacementScore plugin "{name}": {status.message()}',),
                        name,
                    )
                scores.append(PlacementScore(candidate.placement, score))
            extensions = plugin.placement_score_extensions()
            if extensions is not None:
                status = extensions.normalize_placement_score(state, group, scores)
                if not status.is_success():
                    return [], Status(
                        Code.ERROR,
                        (
                            f'running NormalizePlacementScore on PlacementScore plugin "{name}": '
                            f"{status.message()}",
                        ),
                        name,
                    )
        except Exception as err:  # a plugin's bug: an Error naming it
            return [], Status(Code.ERROR, (f'running PlacementScore plugin "{name}": {err}',), name)
        for i, s in enumerate(scores):
            totals[i] += s.score * weight
    return totals, SUCCESS


def best_placement(
    candidates: Sequence[PodGroupAssignments], totals: Sequence[int], rng: random.Random
) -> Placement:
    """The highest total; ties broken uniformly at random (upstream gives each placement a
    random number and keeps the larger on a tie)."""
    best = 0
    draw = rng.random()
    for i in range(1, len(candidates)):
        mine = rng.random()
        if totals[i] > totals[best] or (totals[i] == totals[best] and mine > draw):
            best, draw = i, mine
    return candidates[best].placement


# ---------------------------------------------------------------- the algorithm


def no_placement_status(first: Status | None, generated: int) -> Status:
    """The group's status when no placement is feasible (upstream 1.36's message; 1.37's
    podGroupFitError words it the same)."""
    if first is None:
        return Status(Code.UNSCHEDULABLE, (f"0/{generated} placements are available",))
    reason = first.message()
    return Status(
        Code.UNSCHEDULABLE,
        (f"0/{generated} placements are available, first placement status: {reason}",),
    )


def nominated_placement(
    placements: Sequence[Placement], nominated_nodes: frozenset[str]
) -> Placement | None:
    """The one placement holding a member's nominated node, or None (none, or several: then
    every placement is scored; upstream nominatedPlacement)."""
    if not nominated_nodes:
        return None
    matched: Placement | None = None
    for placement in placements:
        if placement.node_names() & nominated_nodes:
            if matched is not None:
                return None
            matched = placement
    return matched


def schedule_in_placements(
    placements: Sequence[Placement],
    snapshot: Snapshot,
    evaluate: Callable[[], R],
    score: Callable[[list[PodGroupAssignments]], tuple[Placement | None, Status]],
    *,
    nominated: Placement | None = None,
) -> PlacementOutcome[R]:
    """Steps 2 and 3 of the module docstring: `evaluate` runs the group's algorithm on the
    snapshot with a placement assumed (and undoes its own assumptions); `score` picks among
    several feasible placements (PlacementScore). `nominated` (1.37) is tried first."""
    generated = len(placements)
    first: R | None = None
    feasible: list[tuple[Placement, R]] = []

    parent = snapshot.assumed_placement()

    def run_in(placement: Placement) -> R:
        snapshot.assume_placement(placement.node_names())
        try:
            return evaluate()
        finally:
            # (the enclosing placement back, for a nested algorithm: upstream restores the
            # parent placement the same way)
            if parent is None:
                snapshot.forget_placement()
            else:
                snapshot.assume_placement(parent)

    if nominated is not None:
        run = run_in(nominated)
        if run.status.code is Code.ERROR:
            return PlacementOutcome(run.status, run, nominated, generated)
        first = run
        if run.status.is_success() and run.proposed():
            return PlacementOutcome(SUCCESS, run, nominated, generated)
    for placement in placements:
        if placement is nominated:
            continue
        run = run_in(placement)
        if run.status.code is Code.ERROR:
            return PlacementOutcome(run.status, run, placement, generated)
        if first is None:
            first = run
        if run.status.is_success():
            feasible.append((placement, run))
    if not feasible:
        status = no_placement_status(first.status if first is not None else None, generated)
        return PlacementOutcome(status, first, None, generated)
    if len(feasible) == 1:
        placement, run = feasible[0]
        return PlacementOutcome(SUCCESS, run, placement, generated)
    chosen, status = score(
        [PodGroupAssignments(placement, run.proposed()) for placement, run in feasible]
    )
    if chosen is None or not status.is_success():
        return PlacementOutcome(status, None, None, generated)
    for placement, run in feasible:
        if placement is chosen:
            return PlacementOutcome(SUCCESS, run, placement, generated)
    return PlacementOutcome(as_error("scored placement not found"), None, None, generated)
