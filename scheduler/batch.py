"""The scheduling cycle's batch path: Filter and host selection over node columns.

`batch_filter` is `Scheduler`'s per-node Filter pass over `kemu.scheduling.columns`:
the same nodes in the same rotated order from the same start index, stopping at the same
number of feasible nodes (percentageOfNodesToScore), with the same Filter count. The
framework's batch Filter decides the rows it can (True: the per-node Filter would return
Success); every other row it reaches in order goes through the per-node path
(`run_filter_plugins_with_nominated_pods`), which gives the failing nodes their exact Status
(or raises the same error), except the rows whose Status the batch forms know
(`ColumnRunner.run_reject_columns`: the first plugin in order to reject the row has a
`reject_columns` form and every plugin before it passed the row in batch). Rows are evaluated
in chunks of the rotated order, so that a cluster where most nodes fit does not pay for the
rest.

A node with nominated pods of at least the pod's priority (other than the pod itself) takes
upstream's two-pass filter (RunFilterPluginsWithNominatedPods: pass 1 on the node with them
added, pass 2, if that passed, on the node as it is). When `ColumnRunner.nominated_columns` can
make it exact for the cycle (no PreFilter AddPod extension runs, every Filter plugin that runs
has a batch form and opts in: kemu.scheduling.columns.ColumnNominatedPlugin), pass 1 runs over
the columns with those pods' requests and count added (`_Nominated`), pass 2 is the plain mask:
a row passing both is feasible; a row failing pass 1 gets pass 1's Status, one passing it and
failing pass 2 gets pass 2's, from the batch reject forms over the matching columns where they
know it. Every other such row goes through the per-node two-pass filter, as the rows above.

`select_host_index` is `Scheduler.select_host` (the highest score, ties broken by upstream's
reservoir sampling) over an array of totals, drawing the same random numbers in the same
order, so that the batch path places every pod where the per-node path would.
"""

from __future__ import annotations

import random
from operator import itemgetter
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from kemu.api.v1 import types_pb2
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.column_runner import ColumnRunner
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.interface import CycleState, FilterFn, NodeToStatus, StatusBlock
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo, PodInfo

__all__ = ["FilterError", "PerNodeFilter", "batch_filter", "select_host_index"]

MIN_CHUNK = 64


class FilterError(Exception):
    """A node's per-node Filter returned an error (neither Success nor a rejection)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message() or str(status))
        self.status = status


class PerNodeFilter(Protocol):
    """The per-node Filter of the Framework the batch path falls back to, row by row."""

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


def batch_filter(
    fwk: PerNodeFilter,
    runner: ColumnRunner,
    state: CycleState,
    pod: types_pb2.Pod,
    columns: NodeColumns,
    nodes: list[NodeInfo],
    start: int,
    to_find: int,
    statuses: NodeToStatus,
) -> tuple[list[NodeInfo], IntArray, int] | None:
    """(feasible nodes, their rows in `columns`, nodes checked) for `nodes` (the snapshot's
    list or a subset of it) from `start`, or None when the framework has no batch form for
    this pod (nothing is changed then: the caller runs the per-node path). Rejected nodes
    get their per-node Status in `statuses`; a per-node error raises FilterError."""
    n = len(nodes)
    counted = runner.counted_nominated_pods(pod)
    if counted is None:
        return None
    base: IntArray | None = None
    if nodes is not columns.infos:
        row_of = columns.row_of
        base = np.fromiter((row_of[ni.name] for ni in nodes), dtype=np.int64, count=n)
    nominated = _Nominated.of(columns, nodes, base, counted) if counted else None

    rest = runner.filter_rest_plan(state)
    positions: list[IntArray] = []
    found = 0
    checked = n
    # While every node from `start` on passed, the feasible nodes are the window
    # [start, start + found) of the rotated order: a slice or two of `nodes`.
    contiguous = True
    lo = 0
    chunk = max(to_find, MIN_CHUNK)
    while lo < n:
        hi = min(n, lo + chunk)
        if start + hi <= n:
            idx = np.arange(start + lo, start + hi, dtype=np.int64)
        else:
            idx = (np.arange(lo, hi, dtype=np.int64) + start) % n
        rows = idx if base is None else base[idx]
        ok = runner.run_filter_columns(state, pod, columns, rows)
        if ok is None:
            return None
        known: IntArray
        known_statuses: list[Status]
        here = nominated.here(idx) if nominated is not None else None
        if nominated is not None and here is not None:
            ok, known, known_statuses = nominated.filter(
                runner, state, pod, columns, rows, ok, here
            )
            all_ok = bool(np.logical_and.reduce(ok))
        else:
            all_ok = bool(np.logical_and.reduce(ok))
            known, known_statuses = _NONE_KNOWN, []
            if not all_ok:  # (all_ok: nothing rejected, `known` is never read below)
                known = np.full(len(rows), -1, dtype=np.int64)
                _add_rejections(runner, state, pod, columns, rows, ~ok, known, known_statuses)
        if rest:
            # Plugins without a batch form: every row in order through the per-node path,
            # only those plugins where the batch passed (the others would return Success).
            passed: list[int] = []
            stop = -1
            for j, batch_ok in enumerate(ok.tolist()):
                if found + len(passed) >= to_find:
                    stop = j
                    break
                node = nodes[int(idx[j])]
                if batch_ok:
                    status = fwk.run_filter_plan(rest, state, pod, node)
                elif known[j] >= 0:
                    status = known_statuses[int(known[j])]
                else:
                    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
                if status.is_success():
                    passed.append(j)
                elif status.is_rejected():
                    statuses.set(node.name, status)
                else:
                    raise FilterError(status)
            positions.append(idx[passed])
            found += len(passed)
            contiguous = False
            if stop >= 0 or found >= to_find:
                checked = lo + (stop if stop >= 0 else len(ok))
                break
            lo = hi
            chunk *= 2
            continue
        if all_ok:  # the common case: every row passes, nothing per node
            take = min(len(ok), to_find - found)
            positions.append(idx if take == len(idx) else idx[:take])
            found += take
            if found >= to_find:
                checked = lo + take
                break
            lo = hi
            chunk *= 2
            continue
        contiguous = False
        ok = ok.copy()
        # Every row the batch could not pass, in order, through the per-node path, as long
        # as the feasible nodes before it are fewer than wanted.
        before = np.cumsum(ok)
        bad = np.flatnonzero(~ok)
        if (known[bad] >= 0).all():
            # Every rejection is known from the batch forms: no row changes, no per-node call.
            reached = bad[found + before[bad] < to_find]
            statuses.add_block(StatusBlock(nodes, idx[reached], known[reached], known_statuses))
            bad = bad[:0]
        extra = 0
        for j in bad.tolist():
            if found + int(before[j]) + extra >= to_find:
                break
            node = nodes[int(idx[j])]
            k = int(known[j])
            if k >= 0:
                status = known_statuses[k]
            else:
                status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
            if status.is_success():
                ok[j] = True
                extra += 1
            elif status.is_rejected():
                statuses.set(node.name, status)
            else:
                raise FilterError(status)
        total = found + np.cumsum(ok)
        if len(total) and int(total[-1]) >= to_find:
            cut = int(np.argmax(total >= to_find)) + 1
            positions.append(idx[:cut][ok[:cut]])
            checked = lo + cut
            break
        positions.append(idx[ok])
        found = int(total[-1]) if len(total) else found
        lo = hi
        chunk *= 2
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
    feasible_rows = feasible_positions if base is None else base[feasible_positions]
    return feasible, feasible_rows, checked


_NONE_KNOWN: Final[IntArray] = np.zeros(0, dtype=np.int64)


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
    the batch forms know it (run_reject_columns), as `statuses[which[j]]` (appended to
    `statuses`); `which` is left as it is (-1: not known) elsewhere."""
    at = np.flatnonzero(todo)
    if not len(at):
        return
    known, table = runner.run_reject_columns(state, pod, columns, rows[at])
    if table:
        which[at] = np.where(known >= 0, known + len(statuses), -1)
        statuses.extend(table)


class _Nominated:
    """The nodes of a batch_filter call where the pod's Filter counts nominated pods
    (run_filter_plugins_with_nominated_pods: pass 1 on the node with them, then, if that
    passes, pass 2 on the node as it is), by position in `nodes`; those with a node object
    (`with_node`) the batch forms evaluate when the framework can make that exact
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
        batch forms evaluate that (None: nowhere in the chunk)."""
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
        """The chunk's (ok, known, statuses) as batch_filter's plain chunk has them, for a
        chunk with nominated pods (`here`): a row the batch forms evaluate is True when pass 1
        (over `columns_with`) and pass 2 (`ok`, the plain batch mask) pass; its Status is
        pass 1's when pass 1 rejects it, else pass 2's, where the batch forms know it. Every
        other row with nominated pods is False with no known Status: the per-node path."""
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


def select_host_index(totals: IntArray, rng: random.Random) -> int:
    """The index `Scheduler.select_host` would pick for these scores, with the same draws:
    walking in order, a score above the best so far takes its place (no draw); a score equal
    to it draws `rng.random()` and takes its place if `draw * ties < 1`. Only the draws
    for the final best score decide; the others are drawn and forgotten. Scores are never
    negative (Score's range check)."""
    first = int(totals.argmax())  # the first of the highest
    best_score = totals[first]
    ties_at = (totals[first + 1 :] == best_score).nonzero()[0]
    # Draws before `first`: each score equal to the best so far (below the final best) drew
    # once, and was forgotten when a higher score came.
    before = 0
    if first > 1:
        head = totals[:first]
        running = np.maximum.accumulate(head)
        before = int(np.count_nonzero(head[1:] == running[:-1]))
    _skip_draws(rng, before)
    m = len(ties_at)
    if not m:
        return first
    # draw * ties < 1 with draw = x / 2**53 (x an integer below 2**53): the same comparison
    # as x * ties < 2**53 (scaling by a power of two is exact), one division fewer.
    x = _draw_numerators(rng, m)
    taken = (x * np.arange(2, m + 2, dtype=np.float64) < _TWO_53).nonzero()[0]
    if not len(taken):
        return first
    return first + 1 + int(ties_at[taken[-1]])


# random.Random.random(): two 32-bit outputs a, b of the Mersenne Twister, in that order,
# (a >> 5) * 2**26 + (b >> 6) over 2**53 (CPython's random_random). getrandbits(64 * k)
# consumes the same 2k outputs, the first in the least significant 32 bits, so k draws come
# from one call instead of k (exactly: tests/unit/scheduler/test_cycle_fast_paths.py).
_TWO_26: Final = 67108864.0
_TWO_53: Final = 9007199254740992.0
_BULK_MIN: Final = 8


def _draw_numerators(rng: random.Random, k: int) -> npt.NDArray[np.float64]:
    """The next `k` values of `rng.random()` times 2**53 (integers, exact in float64), drawn:
    the generator advances by k draws."""
    if k < _BULK_MIN or type(rng) is not random.Random:
        rand = rng.random
        values = np.array([rand() for _ in range(k)], dtype=np.float64)
        values *= _TWO_53
        return values
    words = np.frombuffer(rng.getrandbits(64 * k).to_bytes(8 * k, "little"), dtype="<u4")
    high = (words[0::2] >> 5).astype(np.float64)
    high *= _TWO_26
    high += words[1::2] >> 6
    return high


def draws(rng: random.Random, k: int) -> npt.NDArray[np.float64]:
    """The next `k` values of `rng.random()` (for tests: select_host_index's draws)."""
    out: npt.NDArray[np.float64] = _draw_numerators(rng, k) / _TWO_53
    return out


def _skip_draws(rng: random.Random, k: int) -> None:
    """Advances `rng` by `k` draws of `rng.random()`."""
    if k < _BULK_MIN or type(rng) is not random.Random:
        rand = rng.random
        for _ in range(k):
            rand()
    else:
        rng.getrandbits(64 * k)
