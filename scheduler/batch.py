"""The scheduling cycle's batch path: Filter and host selection over node columns.

`batch_filter` is `Scheduler._find_nodes_that_pass_filters` over `kemu.scheduling.columns`:
the same nodes in the same rotated order from the same start index, stopping at the same
number of feasible nodes (percentageOfNodesToScore), with the same Filter count. The
framework's batch Filter decides the rows it can (True: the per-node Filter would return
Success); every other row it reaches in order, and every node with nominated pods of at
least the pod's priority (other than the pod itself), goes through the per-node path (`run_filter_plugins_with_nominated_pods`), which gives the
failing nodes their exact Status (or raises the same error), except the rows whose Status the
batch forms know (`Framework.run_reject_columns`: the first plugin in order to reject the row
has a `reject_columns` form and every plugin before it passed the row in batch). Rows are evaluated in chunks
of the rotated order, so that a cluster where most nodes fit does not pay for the rest.

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
from kemu.scheduling.columns import BoolArray, IntArray, NodeColumns
from kemu.scheduling.interface import CycleState, FilterFn, NodeToStatus
from kemu.scheduling.status import Status
from kemu.scheduling.types import NodeInfo

__all__ = ["ColumnFramework", "FilterError", "batch_filter", "select_host_index"]

MIN_CHUNK = 64


class FilterError(Exception):
    """A node's per-node Filter returned an error (neither Success nor a rejection)."""

    def __init__(self, status: Status) -> None:
        super().__init__(status.message() or str(status))
        self.status = status


class ColumnFramework(Protocol):
    def run_filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo
    ) -> Status: ...

    def nominated_node_names(self, pod: types_pb2.Pod) -> set[str] | None: ...

    def run_reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]]: ...

    def filter_rest_plan(self, state: CycleState) -> list[tuple[str, FilterFn]]: ...

    def run_filter_rest(
        self,
        state: CycleState,
        pod: types_pb2.Pod,
        node: NodeInfo,
        plan: list[tuple[str, FilterFn]],
    ) -> Status: ...


def batch_filter(
    fwk: ColumnFramework,
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
    nominated = fwk.nominated_node_names(pod)
    if nominated is None:
        return None
    base: IntArray | None = None
    if nodes is not columns.infos:
        row_of = columns.row_of
        base = np.fromiter((row_of[ni.name] for ni in nodes), dtype=np.int64, count=n)
    nominated_positions: IntArray | None = None
    if nominated:
        if base is None:
            where = columns.row_of
        else:
            where = {ni.name: i for i, ni in enumerate(nodes)}
        found_at = [where[name] for name in nominated if name in where]
        if found_at:
            nominated_positions = np.array(sorted(found_at), dtype=np.int64)

    rest = fwk.filter_rest_plan(state)
    rejected: list[tuple[str, Status]] = []
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
        ok = fwk.run_filter_columns(state, pod, columns, rows)
        if ok is None:
            return None
        nominated_here: BoolArray | None = None
        if nominated_positions is not None:
            nominated_here = np.isin(idx, nominated_positions)
            ok = ok & ~nominated_here
        all_ok = bool(np.logical_and.reduce(ok))
        known: IntArray
        known_statuses: list[Status]
        if all_ok:  # nothing rejected: no rejection to look up (never read below)
            known, known_statuses = _NONE_KNOWN, []
        else:
            known, known_statuses = _known_rejections(
                fwk, state, pod, columns, rows, ok, nominated_here
            )
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
                    status = fwk.run_filter_rest(state, pod, node, rest)
                elif known[j] >= 0:
                    status = known_statuses[int(known[j])]
                else:
                    status = fwk.run_filter_plugins_with_nominated_pods(state, pod, node)
                if status.is_success():
                    passed.append(j)
                elif status.is_rejected():
                    rejected.append((node.name, status))
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
            rejected.extend(
                zip(
                    [nodes[i].name for i in idx[reached].tolist()],
                    [known_statuses[k] for k in known[reached].tolist()],
                    strict=True,
                )
            )
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
                rejected.append((node.name, status))
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
    for name, status in rejected:
        statuses.set(name, status)
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


def _known_rejections(
    fwk: ColumnFramework,
    state: CycleState,
    pod: types_pb2.Pod,
    columns: NodeColumns,
    rows: IntArray,
    ok: BoolArray,
    nominated: BoolArray | None,
) -> tuple[IntArray, list[Status]]:
    """The per-node Status of the chunk's rejected rows that the batch forms know, by chunk
    position (`statuses[which[j]]`, -1: not known), never for the nodes with nominated pods
    (their two-pass filter runs per node)."""
    which = np.full(len(rows), -1, dtype=np.int64)
    todo = ~ok if nominated is None else ~ok & ~nominated
    at = np.flatnonzero(todo)
    if not len(at):
        return which, []
    known, statuses = fwk.run_reject_columns(state, pod, columns, rows[at])
    which[at] = known
    return which, statuses


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
