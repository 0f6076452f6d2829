"""The client side's one retry backoff (client-go's wait.Backoff, doubling to a cap)."""

from __future__ import annotations

import random

import pytest

from kemu.client.backoff import Backoff


def test_without_jitter_the_delay_doubles_to_its_cap_and_reset_starts_again() -> None:
    b = Backoff(0.1, 0.5)
    assert [round(b.next(), 3) for _ in range(5)] == [0.1, 0.2, 0.4, 0.5, 0.5]
    b.reset()
    assert b.next() == 0.1


def test_jitter_spreads_each_delay_within_its_bounds() -> None:
    b = Backoff(1.0, 1.0, jitter=0.5, rng=random.Random(7))
    delays = [b.next() for _ in range(200)]
    assert all(0.5 <= d <= 1.5 for d in delays)
    assert max(delays) - min(delays) > 0.5, "the jitter spreads the delays"


def test_a_seeded_source_draws_the_same_delays() -> None:
    def run(seed: int) -> list[float]:
        b = Backoff(0.05, 2.0, jitter=0.5, rng=random.Random(seed))
        return [b.next() for _ in range(10)]

    assert run(1) == run(1)
    assert run(1) != run(2)


@pytest.mark.parametrize(
    ("initial", "cap", "jitter", "field"),
    [(0.0, 1.0, 0.0, "initial"), (2.0, 1.0, 0.0, "cap"), (0.1, 1.0, 1.0, "jitter")],
)
def test_bad_parameters_are_refused_naming_them(
    initial: float, cap: float, jitter: float, field: str
) -> None:
    with pytest.raises(ValueError, match=field):
        Backoff(initial, cap, jitter=jitter)
