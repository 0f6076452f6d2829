"""kemu.machinery.latency: the one syntax of the API path's latency, and its draws."""

from __future__ import annotations

import random
import statistics

import pytest

from kemu.machinery.latency import Distribution, Latency, LatencyError


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("200ms", Latency(Distribution.FIXED, 0.2)),
        ("fixed:1.5s", Latency(Distribution.FIXED, 1.5)),
        ("0", Latency()),
        (" uniform:100ms-300ms ", Latency(Distribution.UNIFORM, 0.1, 0.3)),
        ("normal:200ms,50ms", Latency(Distribution.NORMAL, 0.2, 0.05)),
        ("lognormal:200ms, 50ms", Latency(Distribution.LOGNORMAL, 0.2, 0.05)),
    ],
)
def test_parse_reads_each_distribution_and_prints_it_back(text: str, want: Latency) -> None:
    got = Latency.parse(text)
    assert got == want
    assert Latency.parse(str(got)) == got


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("5", 'missing unit in duration "5"'),
        ("-1s", "must not be negative"),
        ("gauss:1s,1s", "unknown distribution 'gauss' (known: fixed, uniform, normal, lognormal)"),
        ("uniform:1s", "uniform takes MIN-MAX"),
        ("normal:1s-2s", "normal takes MEAN,STDDEV"),
        ("uniform:300ms-100ms", "the maximum is below the minimum"),
        ("lognormal:0,1s", "a log-normal latency needs a mean above 0"),
        ("uniform:1s-x", 'invalid duration "x"'),
    ],
)
def test_parse_refuses_bad_text_saying_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(LatencyError) as e:
        Latency.parse(text)
    assert says in str(e.value)


def test_a_fixed_latency_draws_nothing_from_the_generator() -> None:
    rng = random.Random(3)
    assert Latency.parse("200ms").draw(rng) == 0.2
    assert rng.random() == random.Random(3).random()
    assert Latency.parse("0").none and Latency.parse("normal:0,0").none
    assert not Latency.parse("uniform:0-1ms").none


@pytest.mark.parametrize(
    "text", ["uniform:100ms-300ms", "normal:200ms,50ms", "lognormal:200ms,50ms"]
)
def test_draws_repeat_with_the_seed_and_have_the_distributions_mean(text: str) -> None:
    latency = Latency.parse(text)
    rng, again_rng = random.Random(7), random.Random(7)
    first = [latency.draw(rng) for _ in range(2000)]
    again = [latency.draw(again_rng) for _ in range(2000)]
    assert first == again
    assert all(d >= 0 for d in first)
    assert statistics.fmean(first) == pytest.approx(latency.mean, rel=0.05)
    if latency.distribution is Distribution.UNIFORM:
        assert 0.1 <= min(first) and max(first) <= 0.3
    else:
        assert statistics.stdev(first) == pytest.approx(0.05, rel=0.1)


def test_a_normal_draw_below_zero_counts_as_zero() -> None:
    latency = Latency.parse("normal:10ms,100ms")
    rng = random.Random(1)
    draws = [latency.draw(rng) for _ in range(200)]
    assert min(draws) == 0.0 and max(draws) > 0
