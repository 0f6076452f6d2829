"""Host selection (upstream selectHost, pkg/scheduler/schedule_one.go): the highest score, ties
broken uniformly at random by reservoir sampling, in two forms that draw the same random
numbers in the same order, so that the column path places every pod where the per-node path
would: `select_host_by_walk` over a list (upstream's walk) and `select_host_index` over an
array of totals (kemu's column path)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Final

import numpy as np
import numpy.typing as npt

from kemu.scheduling.arrays import IntArray

__all__ = ["draws", "select_host_by_walk", "select_host_index"]


def select_host_by_walk(scores: Sequence[int], rng: random.Random) -> int:
    """The index of the highest score: walking in order, a score above the best so far takes
    its place; a score equal to it draws `rng.random()` and takes its place if
    `draw * ties < 1` (upstream's reservoir sampling)."""
    best, best_score, ties = 0, -1, 0
    rand = rng.random
    for i, score in enumerate(scores):
        if score > best_score:
            best, best_score, ties = i, score, 1
        elif score == best_score:
            ties += 1
            if rand() * ties < 1.0:
                best = i
    return best


def select_host_index(totals: IntArray, rng: random.Random) -> int:
    """The index `select_host_by_walk` would pick for these scores, with the same draws:
    only the draws for the final best score decide; the others are drawn and forgotten.
    Scores are never negative (Score's range check)."""
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
