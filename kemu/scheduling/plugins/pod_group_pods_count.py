"""PodGroupPodsCount (KEP-5732, TopologyAwareWorkloadScheduling): upstream
pkg/scheduler/framework/plugins/podgrouppodscount/podgroup_pods_count.go.

A PlacementScore plugin favouring the placement that takes more of the group: its score is the
group's scheduled members (assumed or bound) plus the members proposed in the placement;
NormalizePlacementScore scales them against the largest, so the best gets MAX_NODE_SCORE
(minCount is left out on purpose: a small difference in counts stays a small difference in
scores). All scores zero is an error: "no pods from pod group are assigned to any of the
candidate placements".
"""

from __future__ import annotations

from typing import Final

from kemu.scheduling.composite_pod_groups import CompositePodGroupKey
from kemu.scheduling.interface import (
    CycleState,
    Handle,
    PlacementScore,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PluginArgs,
    PodGroupAssignments,
)
from kemu.scheduling.plugins.helpers import check_arg_keys
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import SUCCESS, Status, as_error
from kemu.scheduling.types import MAX_NODE_SCORE, MIN_NODE_SCORE

NAME: Final = "PodGroupPodsCount"


class PodGroupPodsCount(PlacementScorePlugin, PlacementScoreExtensions):
    NAME = NAME

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def name(self) -> str:
        return NAME

    def score_placement(
        self, state: CycleState, group: PodGroupKey, assignments: PodGroupAssignments
    ) -> tuple[int, Status]:
        states = self.handle.pod_group_states()
        if isinstance(group, CompositePodGroupKey) and states is not None:
            # A CompositePodGroup: the members of every PodGroup under it (KEP-6012).
            forest = states.forest
            leaves = forest.leaves_of(group.group_key()) if forest is not None else []
            scheduled = sum(
                leaf_state.scheduled_pods_count()
                for leaf in leaves
                if (leaf_state := states.get(leaf)) is not None
            )
            return scheduled + len(assignments.proposed), SUCCESS
        pg_state = states.get(group) if states is not None else None
        if pg_state is None:
            return 0, as_error(f"pod group state for {group} not found")
        return pg_state.scheduled_pods_count() + len(assignments.proposed), SUCCESS

    def placement_score_extensions(self) -> PlacementScoreExtensions | None:
        return self

    def normalize_placement_score(
        self, state: CycleState, group: PodGroupKey, scores: list[PlacementScore]
    ) -> Status:
        most = max((s.score for s in scores), default=0)
        if most == 0:
            return as_error(
                "no pods from pod group are assigned to any of the candidate placements"
            )
        for s in scores:
            s.score = MIN_NODE_SCORE + s.score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // most
        return SUCCESS


def new(args: PluginArgs, handle: Handle) -> PodGroupPodsCount:
    check_arg_keys(args, (), NAME)
    return PodGroupPodsCount(handle)
