"""Filter and Score over a list of nodes, behind one call each, in the column or the per-node
form (kemu; the halves of upstream's findNodesThatPassFilters and prioritizeNodes,
pkg/scheduler/schedule_one.go, that run the plugins).

`find_feasible_nodes` walks `nodes` in the rotated order from `start` and stops at `to_find`
feasible nodes (percentageOfNodesToScore), giving each rejected node its Status. Given the
cycle's `NodeColumns` (`ColumnPaths.columns_for`), it runs the profile's column forms
(kemu.scheduling.column_runner) over chunks of that order, and the plugins without one, node by
node, on the rows the columns passed; without columns, or when a plugin declines the pod, the
per-node form: the Framework's Filter, node after node. Both forms visit the same nodes in the
same order, stop at the same node, give the same Statuses and raise the same error
(tests/unit/scheduler/test_batch_equivalence.py):

- A row the column forms pass is feasible unless a plugin without a column form rejects it
  (`ColumnRunner.filter_rest_plan`, run per node). A row they fail gets the Status the column
  reject forms know (`ColumnRunner.run_reject_columns`: the first plugin in order to reject it
  has a `reject_columns` form and every plugin before it passed the row over columns), or goes
  through the per-node Filter. Rows are decided in chunks of the rotated order (doubling), so a
  cluster where most nodes fit does not pay for the rest.
- A node with nominated pods of at least the pod's priority (other than the pod itself) takes
  upstream's two-pass filter (RunFilterPluginsWithNominatedPods: pass 1 on the node with them
  added, pass 2, if that passed, on the node as it is). When `ColumnRunner.nominated_columns` can
  make it exact for the cycle (no PreFilter AddPod extension runs, every Filter plugin that
  runs has a column form and opts in: kemu.scheduling.columns.ColumnNominatedPlugin), pass 1
  runs over the columns with those pods added (`_Nominated`), pass 2 is the plain mask; every
  other such row goes through the per-node two-pass filter.

`prioritize_nodes` scores the feasible nodes over the same rows when the column pass found
them and every Score plugin has a column form for the pod, else per node; `select_host` picks
the highest total, ties broken by upstream's reservoir sampling with the same draws in both
forms (kemu.scheduling.select_host).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Final, Protocol

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.column_runner import ColumnRunner
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.interface import CycleState, FilterFn, NodeToStatus, StatusBlock
from kemu.scheduling.runtime import NodePluginScores
from kemu.scheduling.select_host import select_host_by_walk, select_host_index
from kemu.scheduling.snapshot import Snapshot
from kemu.scheduling.status import SUCCESS, Status
from kemu.scheduling.types import NodeInfo, PodInfo

__all__ = [
    "BATCH_MIN_NODES",
    "COLUMNS_WHERE_WORTH_IT",
    "ColumnPaths",
    "FeasibleNodes",
    "FilterError",
    "FilterScoreFramework",
    "PrioritizedNodes",
    "find_feasible_nodes",
    "prioritize_nodes",
    "select_host",
]

BATCH_MIN_NODES: Final = 32
"""Below this many nodes the column forms' fixed cost (NumPy calls) exceeds what they save."""
MIN_CHUNK: Final = 64


class FilterError(Exception):
    """A node's Filter returned an error (neither Success nor a rejection)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message() or str(status))
        self.status = status


class FilterScoreFramework(Protocol):
    """The part of a profile's Framework (kemu.scheduling.runtime) that filters and scores."""

    def has_filter_plugins(self) -> bool: ...

    def has_score_plugins(self) -> bool: ...

    def column_runner(self) -> ColumnRunner: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status: ...

    def run_filter_plan(
        self,
        plan: list[tuple[str, FilterFn]],
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
    ) -> Status: ...

    def run_score_plugins(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[NodePluginScores], Status]: ...


@dataclass(frozen=True, slots=True)
class ColumnPaths:
    """Where the column forms run: on clusters of at least `min_nodes` nodes (below, the
    NumPy calls' fixed cost exceeds what they save) unless `enabled` is False (always node by
    node: the reference path)."""

    enabled: bool = True
    min_nodes: int = BATCH_MIN_NODES

    def columns_for(self, snapshot: Snapshot, nodes: int) -> NodeColumns | None:
        """The snapshot's columns for a Filter pass over `nodes` nodes, or None: per node."""
        if self.enabled and nodes >= self.min_nodes:
            return snapshot.columns()
        return None


COLUMNS_WHERE_WORTH_IT: Final = ColumnPaths()
"""The default: the column forms on clusters of at least BATCH_MIN_NODES nodes."""


@dataclass(frozen=True, slots=True)
class FeasibleNodes:
    """What a Filter pass found (upstream findNodesThatPassFilters' feasible list): the nodes,
    in the order found, and, when the column pass found them, the node columns and their rows
    there, over which the column Score then runs."""

    nodes: list[NodeInfo]
    rows: IntArray | None = None
    columns: NodeColumns | None = None
    evaluated: int = 0
    """Nodes run through Filter to find them (kemu's filter_evaluations metric)."""
    checked: int = 0
    """Nodes of the rotated order the pass went through (where the next pass starts)."""


# ---------------------------------------------------------------- Filter


def find_feasible_nodes(
    fwk: FilterScoreFramework,
    state: CycleState,
    pod: types_pb2.Pod,
    nodes: list[NodeInfo],
    statuses: NodeToStatus,
    *,
    start: int,
    to_find: int,
    columns: NodeColumns | None,
) -> FeasibleNodes:
    """Up to `to_find` feasible nodes of `nodes` from position `start` of the rotated order,
    over `columns` where the profile's column forms cover the pod, else per node (see the
    module docstring). Rejected nodes get their Status in `statuses`; an error raises
    FilterError."""
    n = len(nodes)
    if n == 0:
        return FeasibleNodes([])
    if not fwk.has_filter_plugins():
        feasible = [nodes[(start + i) % n] for i in range(min(to_find, n))]
        return FeasibleNodes(feasible, checked=len(feasible))
    if columns is not None:
        found = _ColumnPass.run(fwk, state, pod, columns, nodes, statuses, start, to_find)
        if found is not None:  # None: no column form for this pod, nothing changed
            return found
    return _filter_node_by_node(fwk, state, pod, nodes, statuses, start, to_find)


def _filter_node_by_node(
    fwk: FilterScoreFramework,
    state: CycleState,
    pod: types_pb2.Pod,
    nodes: list[NodeInfo],
    statuses: NodeToStatus,
    start: int,
    to_find: int,
) -> FeasibleNodes:
    """The per-node form (the reference): the Framework's Filter, node after node."""
    n = len(nodes)
    feasible: list[NodeInfo] = []
    checked = 0
    for i in range(n):
        node = nodes[(start + i) % n]
        checked += 1
        status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
        if status.is_success():
            feasible.append(node)
            if len(feasible) >= to_find:
                break
        elif status.is_rejected():
            statuses.set(node.name, status)
        else:
            raise FilterError(status)
    return FeasibleNodes(feasible, evaluated=checked, checked=checked)


_NONE_KNOWN: Final[IntArray] = np.zeros(0, dtype=np.int64)


@dataclass(slots=True)
class _Verdicts:
    """A chunk's column verdicts: `ok` (True: every plugin with a column form passes the
    row), and for rows it fails, `statuses[known[j]]` where the reject forms know the
    Status (-1: the per-node Filter decides)."""

    ok: BoolArray
    all_ok: bool
    known: IntArray = field(default_factory=lambda: _NONE_KNOWN)
    statuses: list[Status] = field(default_factory=list)


class _ColumnPass:
    """One column Filter pass over `nodes` (the snapshot's list or a subset of it, `base`
    their rows in `columns`). See the module docstring."""

    __slots__ = (
        "base",
        "columns",
        "fwk",
        "nodes",
        "nominated",
        "pod",
        "rest",
        "runner",
        "state",
        "statuses",
        "to_find",
    )

    def __init__(
        self,
        fwk: FilterScoreFramework,
        state: CycleState,
        pod: types_pb2.Pod,
        columns: NodeColumns,
        nodes: list[NodeInfo],
        base: IntArray | None,
        nominated: _Nominated | None,
        statuses: NodeToStatus,
        to_find: int,
    ) -> None:
        self.fwk = fwk
        self.runner = fwk.column_runner()
        self.state = state
        self.pod = pod
        self.columns = columns
        self.nodes = nodes
        self.base = base
        self.nominated = nominated
        self.statuses = statuses
        self.to_find = to_find
        # The Filter plugins without a column form: per node, on the rows the columns pass.
        self.rest = self.runner.filter_rest_plan(state)

    @staticmethod
    def run(
        fwk: FilterScoreFramework,
        state: CycleState,
        pod: types_pb2.Pod,
        columns: NodeColumns,
        nodes: list[NodeInfo],
        statuses: NodeToStatus,
        start: int,
        to_find: int,
    ) -> FeasibleNodes | None:
        """The pass, or None when the profile has no column form for this pod (nothing is
        changed then: the caller filters per node)."""
        counted = fwk.column_runner().counted_nominated_pods(pod)
        if counted is None:
            return None
        base: IntArray | None = None
        if nodes is not columns.infos:
            row_of = columns.row_of
            base = np.fromiter((row_of[ni.name] for ni in nodes), dtype=np.int64, count=len(nodes))
        nominated = _Nominated.of(columns, nodes, base, counted) if counted else None
        one = _ColumnPass(fwk, state, pod, columns, nodes, base, nominated, statuses, to_find)
        return one.walk(start)

    def walk(self, start: int) -> FeasibleNodes | None:
        """The rotated order from `start` in doubling chunks, until `to_find` are found."""
        n = len(self.nodes)
        positions: list[IntArray] = []
        found = 0
        checked = n
        # While every node from `start` on passed, the feasible nodes are the window
        # [start, start + found) of the rotated order: a slice or two of `nodes`.
        contiguous = True
        lo = 0
        chunk = max(self.to_find, MIN_CHUNK)
        while lo < n:
            hi = min(n, lo + chunk)
            if start + hi <= n:
                idx = np.arange(start + lo, start + hi, dtype=np.int64)
            else:
                idx = (np.arange(lo, hi, dtype=np.int64) + start) % n
            verdicts = self._verdicts(idx)
            if verdicts is None:
                return None
            if self.rest:
                taken, used = self._decide_with_rest(idx, verdicts, found)
                contiguous = False
            elif verdicts.all_ok:  # the common case: every row passes, nothing per node
                taken, used = self._take_window(idx, found)
            else:
                taken, used = self._decide_rejected(idx, verdicts, found)
                contiguous = False
            positions.append(taken)
            found += len(taken)
            if used is not None:
                checked = lo + used
                break
            lo = hi
            chunk *= 2
        return self._feasible(positions, found, checked, start, contiguous)

    def _verdicts(self, idx: IntArray) -> _Verdicts | None:
        """The column verdicts of the chunk at positions `idx` (None: a plugin declined)."""
        rows = idx if self.base is None else self.base[idx]
        runner, state, pod, columns = self.runner, self.state, self.pod, self.columns
        ok = runner.run_filter_columns(state, pod, columns, rows)
        if ok is None:
            return None
        nominated = self.nominated
        here = nominated.here(idx) if nominated is not None else None
        if nominated is not None and here is not None:
            ok, known, statuses = nominated.filter(runner, state, pod, columns, rows, ok, here)
            return _Verdicts(ok, bool(np.logical_and.reduce(ok)), known, statuses)
        if bool(np.logical_and.reduce(ok)):
            return _Verdicts(ok, True)  # (nothing rejected: `known` is never read)
        verdicts = _Verdicts(ok, False, np.full(len(rows), -1, dtype=np.int64))
        _add_rejections(runner, state, pod, columns, rows, ~ok, verdicts.known, verdicts.statuses)
        return verdicts

    def _take_window(self, idx: IntArray, found: int) -> tuple[IntArray, int | None]:
        """Every row passed: the first ones up to `to_find` (and how many of the chunk were
        used when that is reached)."""
        take = min(len(idx), self.to_find - found)
        taken = idx if take == len(idx) else idx[:take]
        return taken, take if found + take >= self.to_find else None

    def _decide_with_rest(
        self, idx: IntArray, verdicts: _Verdicts, found: int
    ) -> tuple[IntArray, int | None]:
        """With plugins that have no column form: every row in order through the per-node
        path (only those plugins where the columns passed: the others would return Success),
        until `to_find` are found."""
        fwk, state, pod, nodes, rest = self.fwk, self.state, self.pod, self.nodes, self.rest
        known, known_statuses = verdicts.known, verdicts.statuses
        passed: list[int] = []
        stop = -1
        for j, batch_ok in enumerate(verdicts.ok.tolist()):
            if found + len(passed) >= self.to_find:
                stop = j
                break
            node = nodes[int(idx[j])]
            if batch_ok:
                status = fwk.run_filter_plan(rest, state, pod, node)
            elif known[j] >= 0:
                status = known_statuses[int(known[j])]
            else:
                status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
            self._note(node, status, passed, j)
        if stop < 0 and found + len(passed) >= self.to_find:
            stop = len(idx)
        return idx[passed], stop if stop >= 0 else None

    def _decide_rejected(
        self, idx: IntArray, verdicts: _Verdicts, found: int
    ) -> tuple[IntArray, int | None]:
        """Some rows failed over columns: each, in order, through the per-node path (or its
        known Status) as long as the feasible nodes before it are fewer than wanted."""
        to_find, nodes = self.to_find, self.nodes
        ok = verdicts.ok.copy()
        known, known_statuses = verdicts.known, verdicts.statuses
        before = np.cumsum(ok)
        bad = np.flatnonzero(~ok)
        if (known[bad] >= 0).all():
            # Every rejection is known from the column forms: no row changes, no per-node call.
            reached = bad[found + before[bad] < to_find]
            self.statuses.add_block(
                StatusBlock(nodes, idx[reached], known[reached], known_statuses)
            )
            bad = bad[:0]
        extra: list[int] = []
        for j in bad.tolist():
            if found + int(before[j]) + len(extra) >= to_find:
                break
            node = nodes[int(idx[j])]
            k = int(known[j])
            if k >= 0:
                status = known_statuses[k]
            else:
                status = self.fwk.run_filter_plugins_with_nominated_pods(self.state, self.pod, node)
            self._note(node, status, extra, j)
        ok[extra] = True
        total = found + np.cumsum(ok)
        if len(total) and int(total[-1]) >= to_find:
            cut = int(np.argmax(total >= to_find)) + 1
            return idx[:cut][ok[:cut]], cut
        return idx[ok], None

    def _note(self, node: NodeInfo, status: Status, passed: list[int], j: int) -> None:
        """A per-node verdict: row `j` passes, is rejected (its Status kept), or errs."""
        if status.is_success():
            passed.append(j)
        elif status.is_rejected():
            self.statuses.set(node.name, status)
        else:
            raise FilterError(status)

    def _feasible(
        self,
        positions: list[IntArray],
        found: int,
        checked: int,
        start: int,
        contiguous: bool,
    ) -> FeasibleNodes:
        nodes = self.nodes
        n = len(nodes)
        if len(positions) == 1:
            feasible_positions = positions[0]
        elif positions:
            feasible_positions = np.concatenate(positions)
        else:
            feasible_positions = np.zeros(0, np.int64)
        if contiguous:
            end = start + found
            feasible = nodes[start:end] if end <= n else nodes[start:] + nodes[: end - n]
        else:
            feasible = _pick(nodes, feasible_positions.tolist())
        rows = feasible_positions if self.base is None else self.base[feasible_positions]
        return FeasibleNodes(feasible, rows, self.columns, checked, checked)


def _add_rejections(
    runner: ColumnRunner,
    state: CycleState,
    pod: types_pb2.Pod,
    columns: NodeColumns,
    rows: IntArray,
    todo: BoolArray,
    which: IntArray,
    statuses: list[Status],
) -> None:
    """For the chunk positions in `todo`: the per-node Status of `rows` over `columns` where
    the column forms know it (run_reject_columns), as `statuses[which[j]]` (appended to
    `statuses`); `which` is left as it is (-1: not known) elsewhere."""
    at = np.flatnonzero(todo)
    if not len(at):
        return
    known, table = runner.run_reject_columns(state, pod, columns, rows[at])
    if table:
        which[at] = np.where(known >= 0, known + len(statuses), -1)
        statuses.extend(table)


class _Nominated:
    """The nodes of a column pass where the pod's Filter counts nominated pods
    (run_filter_plugins_with_nominated_pods: pass 1 on the node with them, then, if that
    passes, pass 2 on the node as it is), by position in `nodes`; those with a node object
    (`with_node`) the column forms evaluate when the framework can make that exact
    (ColumnRunner.nominated_columns: the columns with the pods added, asked once, when a chunk
    first reaches such a node), the rest go through the per-node path."""

    __slots__ = ("_asked", "_columns_with", "_counted", "at", "with_node")

    def __init__(
        self, at: BoolArray, with_node: BoolArray, counted: dict[str, list[PodInfo]]
    ) -> None:
        self.at = at  # by position in `nodes`: counted nominated pods there
        self.with_node = with_node  # and the node object is there
        self._counted = counted
        self._asked = False
        self._columns_with: NodeColumns | None = None

    @staticmethod
    def of(
        columns: NodeColumns,
        nodes: list[NodeInfo],
        base: IntArray | None,
        counted: dict[str, list[PodInfo]],
    ) -> _Nominated | None:
        where = columns.row_of if base is None else {ni.name: i for i, ni in enumerate(nodes)}
        found_at = [where[name] for name in counted if name in where]
        if not found_at:
            return None
        at = np.zeros(len(nodes), dtype=np.bool_)
        at[found_at] = True
        with_node = np.zeros(len(nodes), dtype=np.bool_)
        with_node[[p for p in found_at if nodes[p].node is not None]] = True
        return _Nominated(at, with_node, counted)

    def columns_with(
        self, runner: ColumnRunner, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns
    ) -> NodeColumns | None:
        if not self._asked:
            self._asked = True
            batch = runner.nominated_columns(state, pod, columns, self._counted)
            self._columns_with = None if batch is None else batch[0]
        return self._columns_with

    def here(self, idx: IntArray) -> tuple[BoolArray, BoolArray] | None:
        """For the chunk of positions `idx`: where nominated pods are counted, and where the
        column forms evaluate that (None: nowhere in the chunk)."""
        at: BoolArray = self.at[idx]
        if not np.logical_or.reduce(at):
            return None
        by_columns: BoolArray = self.with_node[idx]
        return at, by_columns

    def filter(
        self,
        runner: ColumnRunner,
        state: CycleState,
        pod: types_pb2.Pod,
        columns: NodeColumns,
        rows: IntArray,
        ok: BoolArray,
        here: tuple[BoolArray, BoolArray],
    ) -> tuple[BoolArray, IntArray, list[Status]]:
        """The chunk's (ok, known, statuses) as a plain chunk has them, for a chunk with
        nominated pods (`here`): a row the column forms evaluate is True when pass 1 (over
        `columns_with`) and pass 2 (`ok`, the plain mask) pass; its Status is pass 1's when
        pass 1 rejects it, else pass 2's, where the reject forms know it. Every other row
        with nominated pods is False with no known Status: the per-node path."""
        nominated, by_columns = here
        which = np.full(len(rows), -1, dtype=np.int64)
        statuses: list[Status] = []
        out = ok & ~nominated
        at = np.flatnonzero(by_columns)
        with_pods = self.columns_with(runner, state, pod, columns) if len(at) else None
        pass1: BoolArray | None = None
        if with_pods is not None:
            pass1 = runner.run_filter_columns(state, pod, with_pods, rows[at])
        plain_todo = ~ok & ~nominated
        if pass1 is not None and with_pods is not None:
            out[at] = pass1 & ok[at]
            # The rows failing pass 1 get its Status over `with_pods`; so do the rows without
            # nominated pods, whose rows in `with_pods` are those of `columns`: one call.
            failed1 = plain_todo.copy()
            failed1[at[~pass1]] = True
            _add_rejections(runner, state, pod, with_pods, rows, failed1, which, statuses)
            plain_todo = np.zeros(len(rows), dtype=np.bool_)
            plain_todo[at[pass1 & ~ok[at]]] = True  # pass 1 passed: pass 2's Status
        _add_rejections(runner, state, pod, columns, rows, plain_todo, which, statuses)
        return out, which, statuses


def _pick(nodes: list[NodeInfo], positions: list[int]) -> list[NodeInfo]:
    if len(positions) > 1:
        return list(itemgetter(*positions)(nodes))
    return [nodes[p] for p in positions]


# ---------------------------------------------------------------- Score


@dataclass(frozen=True, slots=True)
class PrioritizedNodes:
    """The feasible nodes' scores (upstream prioritizeNodes' result): `totals` over the
    column rows (with each plugin's weighted scores in `plugin_scores` when they were asked
    for), or one NodePluginScores per node."""

    nodes: list[NodeInfo]
    totals: IntArray | None = None
    plugin_scores: Mapping[str, IntArray | int] | None = None
    node_scores: list[NodePluginScores] | None = None


def prioritize_nodes(
    fwk: FilterScoreFramework,
    state: CycleState,
    pod: types_pb2.Pod,
    found: FeasibleNodes,
    *,
    plugin_scores: dict[str, IntArray | int] | None = None,
) -> tuple[PrioritizedNodes, Status]:
    """Scores `found.nodes` over their columns when the column pass found them and every
    Score plugin has a column form for the pod, else per node. `plugin_scores`, when given,
    gets the column form's per-plugin weighted scores (a decision record's)."""
    nodes = found.nodes
    if not fwk.has_score_plugins():
        ones = [NodePluginScores(n.name, 1) for n in nodes]
        return PrioritizedNodes(nodes, node_scores=ones), SUCCESS
    if found.rows is not None and found.columns is not None:
        runner = fwk.column_runner()
        totals = runner.run_score_columns(state, pod, found.columns, found.rows, plugin_scores)
        if totals is not None:
            return PrioritizedNodes(nodes, totals, plugin_scores), SUCCESS
    scores, status = fwk.run_score_plugins(state, pod, nodes)
    return PrioritizedNodes(nodes, node_scores=scores), status


def select_host(scores: PrioritizedNodes, rng: random.Random) -> int:
    """The index in `scores.nodes` of the highest total; ties broken uniformly at random
    (reservoir sampling, as upstream's selectHost), with the same draws in both forms."""
    if scores.totals is not None:
        return select_host_index(scores.totals, rng)
    assert scores.node_scores is not None
    return select_host_by_walk([s.total_score for s in scores.node_scores], rng)
