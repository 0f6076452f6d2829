"""Host selection (kemu/scheduling/select_host.py): the walk over a list and
select_host_index over an array draw the same random numbers and pick the same node; the
draws in bulk are random()'s values (issue #16)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kemu.scheduling.select_host import draws, select_host_by_walk, select_host_index


def _select_host(scores: list[int], rng: random.Random) -> int:
    """Upstream selectHost's walk, over indices, written out (the reference of both forms)."""
    best, best_score, ties = -1, -1, 0
    for i, score in enumerate(scores):
        if score > best_score:
            best, best_score, ties = i, score, 1
        elif score == best_score:
            ties += 1
            if rng.random() * ties < 1.0:
                best = i
    return best


@pytest.mark.parametrize("k", [0, 1, 7, 8, 9, 300])
def test_bulk_draws_are_the_values_of_random_in_order(k: int) -> None:
    a, b = random.Random(42), random.Random(42)
    assert draws(a, k).tolist() == [b.random() for _ in range(k)]
    assert a.random() == b.random()  # the generator advanced by exactly k draws


@given(
    scores=st.lists(st.integers(0, 3), min_size=1, max_size=600),
    seed=st.integers(0, 2**16),
)
def test_select_host_index_with_many_ties_draws_and_picks_as_select_host(
    scores: list[int], seed: int
) -> None:
    a, b = random.Random(seed), random.Random(seed)
    expected = _select_host(scores, a)
    assert select_host_index(np.array(scores, dtype=np.int64), b) == expected
    assert a.random() == b.random()


def test_select_host_index_with_a_random_subclass_calls_its_random() -> None:
    class Counting(random.Random):
        calls = 0

        def random(self) -> float:
            self.calls += 1
            return super().random()

    rng = Counting(3)
    scores = [5] * 50 + [7] * 50  # 49 ties of 5 drawn and forgotten, then 49 of 7
    got = select_host_index(np.array(scores, dtype=np.int64), rng)
    assert rng.calls == 98
    assert got == _select_host(scores, random.Random(3))


@settings(deadline=None)  # no time limit: on a loaded machine 200 ms is not a bound
@given(scores=st.lists(st.integers(0, 5), min_size=1, max_size=40), seed=st.integers(0, 2**16))
def test_select_host_index_draws_and_picks_as_select_host(scores: list[int], seed: int) -> None:
    a, b = random.Random(seed), random.Random(seed)
    expected = select_host_by_walk(scores, a)
    got = select_host_index(np.array(scores, dtype=np.int64), b)
    assert got == expected
    assert a.random() == b.random()  # the same number of draws


@given(scores=st.lists(st.integers(0, 5), min_size=1, max_size=60), seed=st.integers(0, 2**16))
def test_the_walk_is_upstreams_reservoir_sampling(scores: list[int], seed: int) -> None:
    a, b = random.Random(seed), random.Random(seed)
    assert select_host_by_walk(scores, a) == _select_host(scores, b)
    assert a.random() == b.random()
