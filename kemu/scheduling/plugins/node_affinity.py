"""NodeAffinity: spec.nodeSelector and the required node affinity in Filter, the preferred node
affinity in Score (upstream nodeaffinity/node_affinity.go).

- PreFilter: Skip when the pod has neither a nodeSelector nor a required node affinity (and the
  plugin has no added affinity); otherwise parses the pod's selectors once into CycleState. When
  every required term pins `metadata.name` (matchFields In), the PreFilterResult is the union
  of the pinned names; terms whose pins conflict leave no node: "pod affinity terms conflict".
- Filter: UnschedulableAndUnresolvable "node(s) didn't match Pod's node affinity/selector", or
  "node(s) didn't match scheduler-enforced node affinity" for the plugin's added affinity.
- Score: the sum of the weights of the matching preferred terms (the pod's and the added ones),
  normalized so the best node scores 100.
- Args: `addedAffinity` (a NodeAffinity, as in NodeAffinityArgs) applied to every pod.
- Events: a node added, or its labels changed, such that the pod now matches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.machinery.labels import Requirement, Selector
from kemu.machinery.resources import is_pod_resize_deferred
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns, per_node_rows
from kemu.scheduling.deferred import resize_preemption_enabled
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
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
)
from kemu.scheduling.plugins.helpers import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    NodeSelectorParseError,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    check_arg_keys,
    default_normalize_score,
    has_required_node_affinity,
    message_from_args,
    node_selector,
    preferred_scheduling_terms,
    required_node_affinity,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable
from kemu.scheduling.types import (
    MAX_NODE_SCORE,
    NodeInfo,
    NodeScore,
    PodInfo,
    PreFilterResult,
)

NAME: Final = "NodeAffinity"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

ERR_REASON_POD: Final = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED: Final = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT: Final = "pod affinity terms conflict"

_POD_FAILED: Final = unresolvable(ERR_REASON_POD)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: RequiredNodeAffinity

    def clone(self) -> _PreFilterState:
        return self  # not affected by pod additions or removals


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    preferred: PreferredSchedulingTerms | None

    def clone(self) -> _PreScoreState:
        return self


def _pod_preferred_terms(pod: types_pb2.Pod) -> PreferredSchedulingTerms | None:
    """The pod's parsed preferred terms, None when it has none; NodeSelectorParseError."""
    terms = pod.spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
    if not terms:
        return None
    return preferred_scheduling_terms(
        terms,
        path="spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution",
    )


def _pinned_node_names(pod: types_pb2.Pod) -> frozenset[str] | None:
    """The node names the required terms allow through matchFields on metadata.name, or None
    when some term does not pin names (terms are ORed, so then every node may match)."""
    required = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
    names: set[str] = set()
    for term in required.node_selector_terms:
        term_names: set[str] | None = None
        for r in term.match_fields:
            if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                values = set(r.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return frozenset(names)


# ---------------------------------------------------------------- over node columns


def _requirement_rows(r: Requirement, columns: NodeColumns, rows: IntArray) -> BoolArray | None:
    """`r.matches(labels)` per row from the label's value ids; None for gt/lt."""
    op = r.operator
    if op in ("gt", "lt"):
        return None
    d = columns.domains(r.key)
    ids = d.row_ids[rows]
    if op == "exists":
        out: BoolArray = ids >= 0
        return out
    if op == "!":
        out = ids < 0
        return out
    want = [d.ids[v] for v in r.values if v in d.ids]
    hit: BoolArray = np.isin(ids, want) if want else np.zeros(len(rows), dtype=np.bool_)
    if op in ("=", "==", "in"):
        return hit
    return ~hit  # != and notin: a node without the label matches


def _selector_rows(sel: Selector, columns: NodeColumns, rows: IntArray) -> BoolArray | None:
    if sel.nothing:
        return np.zeros(len(rows), dtype=np.bool_)
    out = np.ones(len(rows), dtype=np.bool_)
    for r in sel.requirements:
        m = _requirement_rows(r, columns, rows)
        if m is None:
            return None
        out &= m
    return out


def _node_selector_rows(ns: NodeSelector, columns: NodeColumns, rows: IntArray) -> BoolArray | None:
    """`ns.matches(node)` per row (ORed terms); None when a term has field requirements or
    an operator the columns cannot answer (the per-node Filter then decides)."""
    out = np.zeros(len(rows), dtype=np.bool_)
    for t in ns.terms:
        if t.error:
            continue  # matches nothing
        if t.fields:
            return None
        m = np.ones(len(rows), dtype=np.bool_)
        for r in t.labels:
            mr = _requirement_rows(r, columns, rows)
            if mr is None:
                return None
            m &= mr
        out |= m
    return out


def _required_rows(
    required: RequiredNodeAffinity, columns: NodeColumns, rows: IntArray
) -> BoolArray | None:
    """`required.matches(node)` per row, or None when the columns cannot answer."""
    out = np.ones(len(rows), dtype=np.bool_)
    if required.label_selector is not None:
        m = _selector_rows(required.label_selector, columns, rows)
        if m is None:
            return None
        out &= m
    if required.node_selector is not None:
        m = _node_selector_rows(required.node_selector, columns, rows)
        if m is None:
            return None
        out &= m
    return out


class NodeAffinity(
    PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ScoreExtensions, EnqueueExtensions
):
    NAME = NAME

    def __init__(
        self,
        added_node_selector: NodeSelector | None = None,
        added_preferred: PreferredSchedulingTerms | None = None,
        *,
        skip_deferred: bool = False,
    ) -> None:
        self._added_node_selector = added_node_selector
        self._added_preferred = added_preferred
        # KEP-5836: a running pod's resize is not a placement; its node affinity (required
        # during scheduling, ignored during execution) has nothing to say about it.
        self._skip_deferred = skip_deferred

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ filter

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if self._skip_deferred and is_pod_resize_deferred(pod):
            return None, SKIP
        has_required = has_required_node_affinity(pod)
        if not has_required and self._added_node_selector is None and not pod.spec.node_selector:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required_node_affinity(pod)))
        if not has_required:
            return None, SUCCESS
        required = (
            pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        )
        if not required.node_selector_terms:
            return None, SUCCESS
        names = _pinned_node_names(pod)
        if names is None:
            return None, SUCCESS
        if not names:
            return None, unresolvable(ERR_REASON_CONFLICT)
        return PreFilterResult(names), SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        n = node.node
        if n is None:
            return as_error("node not found")
        if self._added_node_selector is not None and not self._added_node_selector.matches(n):
            return unresolvable(ERR_REASON_ENFORCED)
        s = state.read(PRE_FILTER_STATE_KEY)
        # Without PreFilter (disabled, or a simulation calling Filter alone) parse here.
        required = s.required if isinstance(s, _PreFilterState) else required_node_affinity(pod)
        if not required.matches(n):
            return unresolvable(ERR_REASON_POD)
        return SUCCESS

    def nominated_columns_exact(
        self, state: CycleState, pod: types_pb2.Pod, nominated: Sequence[PodInfo]
    ) -> bool:
        """Its batch forms are exact over columns with nominated pods added
        (kemu.scheduling.columns.ColumnNominatedPlugin): It reads no pod of the node (labels and fields: `infos[row]` per node)."""
        return True

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """`filter` over rows from the columns' label value ids (kemu.scheduling.columns);
        selectors the columns cannot answer (gt/lt, matchFields) are decided per node."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return None
        match = _required_rows(s.required, columns, rows)
        if match is not None and self._added_node_selector is not None:
            added = _node_selector_rows(self._added_node_selector, columns, rows)
            match = None if added is None else match & added
        if match is None:
            none = np.zeros(len(rows), dtype=np.bool_)
            return per_node_rows(
                rows, none, columns, lambda ni: self.filter(state, pod, ni).is_success()
            )
        out: BoolArray = match & columns.has_node[rows]
        return out

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]] | None:
        """The rejection of the rows the pod's own selector and affinity do not match (kemu.
        scheduling.columns.ColumnRejectPlugin); none with a scheduler-enforced affinity."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState) or self._added_node_selector is not None:
            return None
        match = _required_rows(s.required, columns, rows)
        if match is None:
            return None
        which = np.where(~match & columns.has_node[rows], 0, -1).astype(np.int64)
        return which, [_POD_FAILED]

    # ------------------------------------------------------------ score

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        try:
            preferred = _pod_preferred_terms(pod)
        except NodeSelectorParseError as e:
            return as_error(e)
        if preferred is None and self._added_preferred is None:
            return SKIP
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(preferred))
        return SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        n = node.node
        if n is None:
            return 0, as_error("node not found")
        count = 0
        if self._added_preferred is not None:
            count += self._added_preferred.score(n)
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            preferred = s.preferred
        else:
            try:
                preferred = _pod_preferred_terms(pod)
            except NodeSelectorParseError as e:
                return 0, as_error(e)
        if preferred is not None:
            count += preferred.score(n)
        return count, SUCCESS

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        return default_normalize_score(MAX_NODE_SCORE, False, scores), SUCCESS

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue when the node (added, or updated from not matching) now matches the pod."""
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        if self._added_node_selector is not None and not self._added_node_selector.matches(new):
            return QueueingHint.SKIP
        required = required_node_affinity(pod)
        if not required.matches(new):
            return QueueingHint.SKIP
        if not isinstance(old, types_pb2.Node):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if required.matches(old) else QueueingHint.QUEUE


def new(args: PluginArgs, handle: Handle) -> NodeAffinity:
    check_arg_keys(args, ("addedAffinity",), NAME)
    added = args.get("addedAffinity")
    skip_deferred = resize_preemption_enabled(handle.gates)
    if added is None:
        return NodeAffinity(skip_deferred=skip_deferred)
    affinity: types_pb2.NodeAffinity = message_from_args(
        types_pb2.NodeAffinity, added, "addedAffinity"
    )
    added_selector = None
    added_preferred = None
    try:
        if affinity.HasField("required_during_scheduling_ignored_during_execution"):
            required = affinity.required_during_scheduling_ignored_during_execution
            if not required.node_selector_terms:
                raise NodeSelectorParseError(
                    "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                    ".nodeSelectorTerms: Required value: must have at least one node selector term"
                )
            added_selector = node_selector(
                required,
                path="addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
                ".nodeSelectorTerms",
                strict=True,
            )
        if affinity.preferred_during_scheduling_ignored_during_execution:
            added_preferred = preferred_scheduling_terms(
                affinity.preferred_during_scheduling_ignored_during_execution,
                path="addedAffinity.preferredDuringSchedulingIgnoredDuringExecution",
            )
    except NodeSelectorParseError as e:
        raise ValueError(f"{NAME} args: {e}") from None
    return NodeAffinity(added_selector, added_preferred, skip_deferred=skip_deferred)
