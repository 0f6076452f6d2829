"""TaintToleration: filters out nodes with a NoSchedule/NoExecute taint the pod does not
tolerate, and prefers nodes with fewer untolerated PreferNoSchedule taints (upstream
tainttoleration/taint_toleration.go).

Filter: UnschedulableAndUnresolvable "node(s) had untolerated taint(s)". Upstream printed the
taint ("node(s) had untolerated taint {key: value}") until kubernetes#134740 (1.35, backported
to 1.34) removed keys and values from pod statuses; kemu emulates the current message and
logs the taint at debug level instead.
Score: the number of PreferNoSchedule taints no PreferNoSchedule-or-any-effect toleration
tolerates, normalized reversed (fewer is better, none scores 100).
Events: a node added or its taints changed such that the pod now tolerates it; the rejected
pod itself updated with new tolerations.

KEP-5836: taints decide where pods may be placed (NoExecute ones are the taint manager's
business once a pod runs); a running pod waiting for its Deferred resize is not being placed.
With InPlacePodVerticalScalingSchedulerPreemption it Skips this plugin at PreFilter, which
exists for that alone (every other pod gets Success), so a taint does not stop resize
preemption on its own node.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import (
    NodeColumns,
    default_normalize_columns,
    per_node_rows,
)
from kemu.scheduling.deferred import SkipsDeferredResizePods, resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PluginArgs,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from kemu.scheduling.plugins.helpers import (
    TAINT_PREFER_NO_SCHEDULE,
    default_normalize_score,
    do_not_schedule_taint,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from kemu.scheduling.status import SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import MAX_NODE_SCORE, NodeInfo, NodeScore, PodInfo

logger = logging.getLogger(__name__)

NAME: Final = "TaintToleration"
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

ERR_REASON_UNTOLERATED: Final = "node(s) had untolerated taint(s)"


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    tolerations_prefer_no_schedule: tuple[types_pb2.Toleration, ...]

    def clone(self) -> _PreScoreState:
        return self  # immutable: pod additions and removals do not change it


def _untolerated(node: types_pb2.Node, pod: types_pb2.Pod) -> types_pb2.Taint | None:
    return find_matching_untolerated_taint(
        node.spec.taints, pod.spec.tolerations, do_not_schedule_taint
    )


class TaintToleration(
    SkipsDeferredResizePods,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    EnqueueExtensions,
):
    NAME = NAME

    def __init__(self, *, skip_deferred: bool = False) -> None:
        self.skip_deferred = skip_deferred

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ filter

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        if node.node is None:
            return as_error("node not found")
        if not node.taints:
            return SUCCESS
        taint = _untolerated(node.node, pod)
        if taint is None:
            return SUCCESS
        logger.debug(
            "node %s has taint {%s: %s} that pod %s does not tolerate",
            node.name,
            taint.key,
            taint.value,
            object_key(pod),
        )
        return unresolvable(ERR_REASON_UNTOLERATED)

    def nominated_columns_exact(
        self, state: CycleState, pod: types_pb2.Pod, nominated: Sequence[PodInfo]
    ) -> bool:
        """Its batch forms are exact over columns with nominated pods added
        (kemu.scheduling.columns.ColumnNominatedPlugin): It reads no pod of the node (taints: `infos[row]` for tainted rows)."""
        return True

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """Untainted nodes pass; tainted ones are checked one by one (most nodes have none)."""
        if not columns.tainted_nodes:
            return columns.nodes_present(rows)
        tainted = columns.tainted[rows]
        ok: BoolArray = columns.nodes_present(rows) & ~tainted
        if not tainted.any():
            return ok

        def tolerated(node: NodeInfo) -> bool:
            return node.node is not None and _untolerated(node.node, pod) is None

        return per_node_rows(rows, ok, columns, tolerated)

    # ------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        tolerations = tuple(
            t for t in pod.spec.tolerations if t.effect in ("", TAINT_PREFER_NO_SCHEDULE)
        )
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(tolerations))
        return SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return 0, as_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        if node.node is None:
            return 0, as_error("node not found")
        count = 0
        for taint in node.taints:
            if taint.effect != TAINT_PREFER_NO_SCHEDULE:
                continue
            if not tolerations_tolerate_taint(s.tolerations_prefer_no_schedule, taint):
                count += 1
        return count, SUCCESS

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return [], as_error(f'reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
        tolerations = s.tolerations_prefer_no_schedule
        out: list[int] = []
        for node in nodes:
            count = 0
            for taint in node.taints:  # most nodes have none
                if taint.effect == TAINT_PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(
                    tolerations, taint
                ):
                    count += 1
            out.append(count)
        return out, SUCCESS

    def score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> IntArray | None:
        s = state.read(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            return None  # the per-node path reports the error
        out = np.zeros(len(rows), dtype=np.int64)
        if not columns.tainted_nodes:
            return out
        tolerations = s.tolerations_prefer_no_schedule
        infos = columns.infos
        for i in np.flatnonzero(columns.tainted[rows]):
            count = 0
            for taint in infos[int(rows[i])].taints:
                if taint.effect == TAINT_PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(
                    tolerations, taint
                ):
                    count += 1
            out[i] = count
        return out

    def constant_score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns
    ) -> int | None:
        """Without a tainted node every raw score is 0, which NormalizeScore (reversed) makes
        MAX_NODE_SCORE for every row (kemu.scheduling.columns.ColumnConstantScorePlugin)."""
        if columns.tainted_nodes or not isinstance(state.read(PRE_SCORE_STATE_KEY), _PreScoreState):
            return None  # score_columns decides (and declines without the PreScore state)
        return MAX_NODE_SCORE

    def normalize_columns(
        self, state: CycleState, pod: types_pb2.Pod, scores: IntArray
    ) -> IntArray | None:
        return default_normalize_columns(MAX_NODE_SCORE, True, scores)

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        return default_normalize_score(MAX_NODE_SCORE, True, scores), SUCCESS

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_TOLERATION),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the node's taints went from (or were added as) untolerated to tolerated."""
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        was_untolerated = not isinstance(old, types_pb2.Node) or _untolerated(old, pod) is not None
        if was_untolerated and _untolerated(new, pod) is None:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_toleration_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Tolerations can only be added to a pod: queue the rejected pod itself."""
        if isinstance(new, types_pb2.Pod) and new.metadata.uid == pod.metadata.uid:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: PluginArgs, handle: Handle) -> TaintToleration:
    return TaintToleration(skip_deferred=resize_preemption_enabled(handle.gates))
