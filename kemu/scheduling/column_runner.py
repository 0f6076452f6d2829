"""The batch forms of one profile's Filter and Score plugins over node columns (kemu, not
upstream): what `kemu.scheduling.columns` describes, run for a `Framework`.

The `Framework` (kemu.scheduling.runtime) runs the extension points node by node, as upstream's
frameworkImpl; `ColumnRunner` is the same profile's plugins over `NodeColumns` (their
`filter_columns`, `reject_columns`, `nominated_columns_exact`, `score_columns`,
`normalize_columns` and `constant_score_columns` forms), found once when the framework is
built. The column pass (kemu.scheduling.filter_score) drives it; every answer agrees with the
per-node path, which stays the reference (tests/unit/scheduling/test_columns_equivalence.py,
tests/unit/scheduler/test_batch_equivalence.py).

Contracts:
- Filter is one-sided: True for a row means every batch-form plugin the cycle runs would return
  Success for that node; False or None sends the row (or the cycle) to the per-node path.
- Score is all or nothing: None unless every Score plugin the cycle runs has a batch form for
  the pod and every score is in range; the per-node path then scores (and reports the error as
  upstream). A plugin exception is logged and gives None, never an error status: the per-node
  path, run next, reports it as upstream would.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import (
    ColumnConstantScorePlugin,
    ColumnFilterPlugin,
    ColumnNominatedPlugin,
    ColumnNormalizePlugin,
    ColumnRejectPlugin,
    ColumnScorePlugin,
    NodeColumns,
)
from kemu.scheduling.interface import CycleState, FilterFn, FilterPlugin, PodNominator, ScorePlugin
from kemu.scheduling.nominator import Nominator
from kemu.scheduling.status import SUCCESS, Code, Status
from kemu.scheduling.types import MAX_NODE_SCORE, MIN_NODE_SCORE, PodInfo, pod_priority

logger = logging.getLogger(__name__)

__all__ = ["ColumnRunner"]

ColumnFilterFn = Callable[[CycleState, types_pb2.Pod, NodeColumns, IntArray], BoolArray | None]
ColumnRejectFn = Callable[
    [CycleState, types_pb2.Pod, NodeColumns, IntArray],
    tuple[IntArray, Sequence[Status]] | None,
]
NominatedColumnsFn = Callable[[CycleState, types_pb2.Pod, Sequence[PodInfo]], bool]
ColumnScoreFn = Callable[[CycleState, types_pb2.Pod, NodeColumns, IntArray], IntArray | None]
ColumnNormalizeFn = Callable[[CycleState, types_pb2.Pod, IntArray], IntArray | None]
ColumnConstantScoreFn = Callable[[CycleState, types_pb2.Pod, NodeColumns], int | None]
# observed(status, start): the Score extension point's duration (the framework's metric).
ScoreObserver = Callable[[Status, float], None]

_REJECTED: Final = frozenset(
    {Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING}
)

# The ufuncs' reductions themselves: ndarray.max()/min() go through two Python frames each
# (numpy's _methods), ~1 us a call, four calls a cycle.
_max_of: Final = np.maximum.reduce
_min_of: Final = np.minimum.reduce


def _out_of_range(raw: IntArray) -> bool:
    """Whether a score is outside [MIN_NODE_SCORE, MAX_NODE_SCORE]: one reduction for both
    bounds, MIN_NODE_SCORE being 0 (a negative int64 read as uint64 is above 2**63)."""
    if raw.dtype == np.int64 and MIN_NODE_SCORE == 0:
        return bool(_max_of(raw.view(np.uint64)) > MAX_NODE_SCORE)
    return bool(_max_of(raw) > MAX_NODE_SCORE or _min_of(raw) < MIN_NODE_SCORE)


class ColumnRunner:
    """The batch forms of one profile's Filter and Score plugins. Built by the `Framework`
    from the plugins it enabled (in its order), with what it shares: its current nominator,
    the cycle's Filter plan and its Score metric."""

    def __init__(
        self,
        *,
        filters: Sequence[tuple[str, FilterPlugin]],
        scores: Sequence[tuple[str, ScorePlugin]],
        score_weights: dict[str, int],
        normalized: frozenset[str],
        pre_filter_extensions: frozenset[str],
        nominator: Callable[[], PodNominator | None],
        filter_plan: Callable[[CycleState], list[tuple[str, FilterFn]]],
        observe_score: ScoreObserver,
    ) -> None:
        self._filter: list[tuple[str, FilterFn]] = [(n, p.filter) for n, p in filters]
        self._score_names: tuple[str, ...] = tuple(n for n, _ in scores)
        self._score_weights = score_weights
        self._normalized = normalized  # the Score plugins with a NormalizeScore
        self._pre_filter_extensions = pre_filter_extensions
        self._nominator = nominator
        self._filter_plan = filter_plan
        self._observe_score = observe_score
        self._filter_columns: dict[str, ColumnFilterFn] = {
            n: p.filter_columns for n, p in filters if isinstance(p, ColumnFilterPlugin)
        }
        self._reject_columns: dict[str, ColumnRejectFn] = {
            n: p.reject_columns for n, p in filters if isinstance(p, ColumnRejectPlugin)
        }
        # The batch Filter plugins that opt in to the nominated pods' batch pass.
        self._nominated_columns_exact: dict[str, NominatedColumnsFn] = {
            n: p.nominated_columns_exact
            for n, p in filters
            if isinstance(p, ColumnNominatedPlugin) and isinstance(p, ColumnFilterPlugin)
        }
        self._score_columns: dict[str, ColumnScoreFn] = {
            n: p.score_columns for n, p in scores if isinstance(p, ColumnScorePlugin)
        }
        self._normalize_columns: dict[str, ColumnNormalizeFn] = {
            n: p.normalize_columns for n, p in scores if isinstance(p, ColumnNormalizePlugin)
        }
        self._constant_score_columns: dict[str, ColumnConstantScoreFn] = {
            n: p.constant_score_columns
            for n, p in scores
            if isinstance(p, ColumnConstantScorePlugin) and n in self._score_columns
        }

    # ------------------------------------------------------------ filter

    def run_filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """The batch form of the Framework's run_filter_plugins over `rows` of `columns`: True where every
        Filter plugin the cycle runs that has a batch form would return Success
        (kemu.scheduling.columns: False means the per-node path decides); the others, if
        any, are `filter_rest_plan`'s, to run per node on the rows left True. None when one of
        them declines the pod, or none has a batch form: the cycle then filters per node."""
        skip = state.skip_filter_plugins
        all_true = columns.all_rows(len(rows))  # masks are never written to: shared
        ok: BoolArray | None = None
        for name, _ in self._filter:
            if name in skip:
                continue
            fn = self._filter_columns.get(name)
            if fn is None:
                continue
            try:
                mask = fn(state, pod, columns, rows)
            except Exception:
                logger.exception(
                    "Filter plugin %s failed over columns for %s", name, object_key(pod)
                )
                return None  # the per-node path reports the error as upstream would
            if mask is None:
                return None
            if ok is None or ok is all_true:
                ok = mask
            elif mask is not all_true:
                ok = ok & mask
        if ok is None and any(n not in skip for n, _ in self._filter):
            return None  # no batch form among the plugins that run: nothing to gain
        return all_true if ok is None else ok

    def run_reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]]:
        """For rows `run_filter_columns` left False: (which, statuses), `statuses[which[i]]`
        being row i's per-node Filter Status where the batch forms know it
        (kemu.scheduling.columns.ColumnRejectPlugin: the first plugin in order that rejects
        the row knows its Status, and every plugin before it has a batch form that passed the
        row), `which[i]` -1 where they do not (the per-node path decides)."""
        out = np.full(len(rows), -1, dtype=np.int64)
        table: list[Status] = []
        undecided = np.arange(len(rows), dtype=np.int64)
        skip = state.skip_filter_plugins
        for name, _ in self._filter:
            if name in skip:
                continue
            fn = self._filter_columns.get(name)
            if fn is None or not len(undecided):
                break
            try:
                mask = fn(state, pod, columns, rows[undecided])
                failing = undecided[~mask] if mask is not None else undecided[:0]
                reject = self._reject_columns.get(name)
                known = (
                    reject(state, pod, columns, rows[failing]) if reject and len(failing) else None
                )
            except Exception:
                logger.exception(
                    "Filter plugin %s failed over columns for %s", name, object_key(pod)
                )
                break
            if mask is None:
                break
            if known is not None:
                which, statuses = known
                remap = np.full(len(statuses) + 1, -1, dtype=np.int64)  # [-1] stays -1
                for k, s in enumerate(statuses):
                    if s.code in _REJECTED:
                        remap[k] = len(table)
                        table.append(s.with_plugin(name))
                out[failing] = remap[which]
            undecided = undecided[mask]
        return out, table

    def filter_rest_plan(self, state: CycleState) -> list[tuple[str, FilterFn]]:
        """The Filter plugins the cycle runs that have no batch form, in order."""
        skip = state.skip_filter_plugins
        batch = self._filter_columns
        return [(n, fn) for n, fn in self._filter if n not in skip and n not in batch]

    def counted_nominated_pods(self, pod: types_pb2.Pod) -> dict[str, list[PodInfo]] | None:
        """Per node where `pod`'s Filter counts nominated pods (the two-pass filter of the
        Framework's run_filter_plugins_with_nominated_pods: a pod nominated there, other than
        `pod`, of at least its priority; on every other node that filter is the plain one),
        the pods it counts there, in nomination order. None when the nominator cannot list
        them."""
        nominator = self._nominator()
        if nominator is None:
            return {}
        if not isinstance(nominator, Nominator):
            return None
        names = nominator.nominated_node_names()
        out: dict[str, list[PodInfo]] = {}
        if not names:
            return out
        priority = pod_priority(pod)
        uid = pod.metadata.uid
        for name in names:
            counted = [
                pi
                for pi in nominator.nominated_pods_for_node(name)
                if pi.priority >= priority and pi.uid != uid
            ]
            if counted:
                out[name] = counted
        return out

    def nominated_columns(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        columns: NodeColumns,
        counted: dict[str, list[PodInfo]],
    ) -> tuple[NodeColumns, IntArray] | None:
        """The batch form of the first pass of the Framework's
        run_filter_plugins_with_nominated_pods: `columns` with the `counted` pods'
        (counted_nominated_pods) requests and count added to their nodes' rows, and those rows (the nodes in `columns` with a node object), over
        which run_filter_columns and run_reject_columns are that pass's Filter. None when that
        would not be exact in this cycle: a PreFilter extension (AddPod) runs, a Filter plugin
        that runs has no batch form, or one does not opt in for these pods
        (kemu.scheduling.columns.ColumnNominatedPlugin); the per-node path decides then.
        Computes the cycle's Filter plan on `state`, as the per-node path does when it reaches
        such a node (preemption's dry run reads it: default_preemption._simple_fit_state)."""
        self._filter_plan(state)
        skip = state.skip_filter_plugins
        if any(n not in skip for n in self._pre_filter_extensions):
            return None
        running = [n for n, _ in self._filter if n not in skip]
        exact = self._nominated_columns_exact
        if any(n not in exact for n in running):
            return None
        row_of, infos = columns.row_of, columns.infos
        rows: list[int] = []
        added: list[tuple[int, int, int, int, int, int]] = []
        everyone: list[PodInfo] = []
        for name, pods in counted.items():
            row = row_of.get(name)
            if row is None or infos[row].node is None:
                continue
            cpu = memory = ephemeral = nz_cpu = nz_memory = 0
            for pi in pods:
                r, nz = pi.requests, pi.non_zero_requests
                cpu += r.milli_cpu
                memory += r.memory
                ephemeral += r.ephemeral_storage
                nz_cpu += nz.milli_cpu
                nz_memory += nz.memory
            rows.append(row)
            added.append((cpu, memory, ephemeral, nz_cpu, nz_memory, len(pods)))
            everyone.extend(pods)
        try:
            if not all(exact[n](state, pod, everyone) for n in running):
                return None
        except Exception:
            logger.exception("nominated_columns_exact failed for %s", object_key(pod))
            return None
        at = np.array(rows, dtype=np.int64)
        adds = np.array(added, dtype=np.int64).reshape(len(rows), 6)
        return columns.with_pods_added(at, adds), at

    # ------------------------------------------------------------ score

    def run_score_columns(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        columns: NodeColumns,
        rows: IntArray,
        per_plugin: dict[str, IntArray | int] | None = None,
    ) -> IntArray | None:
        """The batch form of the Framework's run_score_plugins: each row's total weighted
        score, or None when a Score plugin the cycle runs has no batch form for the pod, or a
        score is out of range (the per-node path then scores, and reports that error as
        upstream). A plugin whose every row gets the same final score this cycle (`ColumnConstantScorePlugin`)
        adds it to all rows at once, at the end. `per_plugin` (the decision record's), when
        given, gets each plugin's weighted scores: an array over `rows`, or one int for all."""
        start = time.perf_counter()
        skip = state.skip_score_plugins
        total: IntArray | None = None
        offset = 0  # the constant scores, weighted
        weights = self._score_weights
        constants = self._constant_score_columns
        for name in self._score_names:
            if name in skip:
                continue
            constant = constants.get(name)
            if constant is not None:
                try:
                    value = constant(state, pod, columns)
                except Exception:
                    logger.exception(
                        "Score plugin %s failed over columns for %s", name, object_key(pod)
                    )
                    return None
                if value is not None:
                    if value > MAX_NODE_SCORE or value < MIN_NODE_SCORE:
                        return None
                    offset += value * weights[name]
                    if per_plugin is not None:
                        per_plugin[name] = value * weights[name]
                    continue
            fn = self._score_columns.get(name)
            if fn is None:
                return None
            try:
                raw = fn(state, pod, columns, rows)
                if raw is not None and name in self._normalized:
                    normalize = self._normalize_columns.get(name)
                    raw = None if normalize is None else normalize(state, pod, raw)
            except Exception:
                logger.exception(
                    "Score plugin %s failed over columns for %s", name, object_key(pod)
                )
                return None
            if raw is None:
                return None
            if len(raw) and _out_of_range(raw):
                return None
            weight = weights[name]
            if per_plugin is not None:
                per_plugin[name] = raw * weight
            if total is None:
                total = raw * weight  # a new array: `raw` may be the plugin's
            elif weight == 1:
                total += raw
            else:
                total += raw * weight
        self._observe_score(SUCCESS, start)
        if total is None:
            return np.full(len(rows), offset, dtype=np.int64)
        if offset:
            total += offset
        return total
