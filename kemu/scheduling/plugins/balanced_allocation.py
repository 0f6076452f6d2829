"""NodeResourcesBalancedAllocation: prefer nodes whose resources would be used evenly
(upstream noderesources/balanced_allocation.go).

For each configured resource (default cpu and memory) the fraction requested / allocatable
with the pod added, using actual (not non-zero) requests, capped at 1; the score is
`(1 - std) * 100` truncated, where std is the population standard deviation of the fractions
(for exactly two it is |f1 - f2| / 2; for one or none it is 0). Resources the node does not
have are left out. Best-effort pods (requesting none of the resources) are not scored: PreScore
returns Skip, so such pods do not all pile onto one "balanced" node (kubernetes#129138).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.component.pod_resources import pod_resources_options
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling import status as st
from kemu.scheduling.arrays import IntArray
from kemu.scheduling.columns import NodeColumns, balanced_cpu_memory_columns
from kemu.scheduling.interface import (
    CycleState,
    Handle,
    PluginArgs,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    cycle_pod_info,
)
from kemu.scheduling.plugins.resource_allocation import (
    DEFAULT_RESOURCES,
    ResourceAllocationScorer,
    ResourceSpec,
    parse_resources,
)
from kemu.scheduling.status import Status
from kemu.scheduling.types import CPU, MAX_NODE_SCORE, MEMORY, NodeInfo

NAME: Final = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME


def balanced_resource_scorer(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    fractions: list[float] = []
    total = 0.0
    for req, alloc in zip(requested, allocatable, strict=True):
        if alloc == 0:
            continue
        fraction = float(req) / float(alloc)
        if fraction > 1:
            fraction = 1.0
        total += fraction
        fractions.append(fraction)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        std = math.sqrt(sum((f - mean) * (f - mean) for f in fractions) / len(fractions))
    # Go's int64(float) truncates toward zero; 1 - std is never negative here.
    return int((1 - std) * float(MAX_NODE_SCORE))


def _balanced_cpu_memory(node: NodeInfo, reqs: Sequence[int]) -> int:
    """balanced_resource_scorer over [cpu, memory] with actual requests, inlined."""
    alloc = node.allocatable
    used = node.requested
    cap_cpu = alloc.milli_cpu
    cap_mem = alloc.memory
    if not cap_cpu or not cap_mem:
        # One fraction or none: std is 0.
        return MAX_NODE_SCORE
    f_cpu = float(used.milli_cpu + reqs[0]) / float(cap_cpu)
    f_mem = float(used.memory + reqs[1]) / float(cap_mem)
    if f_cpu > 1:
        f_cpu = 1.0
    if f_mem > 1:
        f_mem = 1.0
    return int((1 - abs((f_cpu - f_mem) / 2)) * float(MAX_NODE_SCORE))


def _balanced_cpu_memory_columns(
    cols: NodeColumns, rows: IntArray, reqs: Sequence[int]
) -> IntArray:
    return balanced_cpu_memory_columns(
        cols.req_cpu[rows], cols.req_memory[rows], cols.alloc_cpu[rows], cols.alloc_memory[rows],
        reqs, dense=not cols.no_cpu_or_memory_nodes,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class PreScoreState:
    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self


class BalancedAllocation(PreScorePlugin, ScorePlugin):
    NAME = NAME

    def __init__(
        self,
        resources: Sequence[ResourceSpec] = DEFAULT_RESOURCES,
        counting: PodResourcesOptions = SCHEDULER_DEFAULTS,
    ) -> None:
        # How pods are counted (the scheduler's gates, as upstream's fts: PodLevelResources).
        self.counting = counting
        cpu_memory = tuple(r.name for r in resources) == (CPU, MEMORY)
        self.scorer = ResourceAllocationScorer(
            NAME,
            balanced_resource_scorer,
            resources,
            use_requested=True,
            fast=_balanced_cpu_memory if cpu_memory else None,
            columns=_balanced_cpu_memory_columns if cpu_memory else None,
        )

    def name(self) -> str:
        return NAME

    def _pod_requests(self, state: CycleState, pod: types_pb2.Pod) -> tuple[int, ...]:
        """The scorer's requests of the cycle's pod (its PodInfo read, not copied)."""
        info = cycle_pod_info(state, pod, self.counting)
        return self.scorer.pod_requests(info.requests, info.non_zero_requests)

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        reqs = self._pod_requests(state, pod)
        if not any(reqs):
            return st.SKIP
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(reqs))
        return st.SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
            if not any(reqs):
                return 0, st.SUCCESS
        return self.scorer.score(node, reqs), st.SUCCESS

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
            if not any(reqs):
                return [0] * len(nodes), st.SUCCESS
        score = self.scorer.score
        return [score(node, reqs) for node in nodes], st.SUCCESS

    def score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> IntArray | None:
        batch = self.scorer.columns
        if batch is None:
            return None
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
            if not any(reqs):
                return np.zeros(len(rows), dtype=np.int64)
        return batch(columns, rows, reqs)

    def score_extensions(self) -> ScoreExtensions | None:
        return None


def new(args: PluginArgs, handle: Handle) -> BalancedAllocation:
    unknown = set(args) - {"resources"}
    if unknown:
        raise ValueError(f"unknown NodeResourcesBalancedAllocation arg(s) {sorted(unknown)}")
    return BalancedAllocation(
        parse_resources(
            args.get("resources"), "resources", default=DEFAULT_RESOURCES, weight_must_be_one=True
        ),
        pod_resources_options(handle.gates),
    )
