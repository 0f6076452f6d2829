"""bench ha's arithmetic and table: the spreading of client processes, the medians over the
rounds, CPU per call, the refusal of bad options (the run itself is real processes:
`python -m bench ha --quick`)."""

from __future__ import annotations

import argparse

import pytest

from bench.ha import Options, Phase, Result, build_parser, medians, options, render, servers_of


def test_one_apiserver_puts_every_process_on_a_two_spreads_them_round_robin() -> None:
    assert [servers_of(1, k, "a:1", "b:2") for k in range(3)] == ["a:1,b:2"] * 3
    assert [servers_of(2, k, "a:1", "b:2") for k in range(4)] == [
        "a:1,b:2", "b:2,a:1", "a:1,b:2", "b:2,a:1",
    ]  # fmt: skip


def _phase(variant: int, rnd: int, op: str, ok: int, seconds: float, a: float) -> Phase:
    cpu = {"etcd": 1.0, "apiserver-a": a, "apiserver-b": 0.5, "clients": 2.0}
    cpu |= {"apiserver-standby-0": 0.25, "apiserver-standby-1": 0.75}
    return Phase(variant, rnd, op, ok, 0, seconds, cpu, p99=0.01, late=0.0)


def test_rows_are_the_medians_over_the_rounds_per_call() -> None:
    result = Result(host="h", load_before="1", load_after="2")
    for rnd, (seconds, a) in enumerate([(10.0, 10.0), (5.0, 6.0), (20.0, 20.0)]):
        for variant in (1, 2):
            for op in ("create", "bind"):
                result.phases.append(_phase(variant, rnd, op, 1000, seconds, a))
    rate, cpu, errors = medians(result, 1, "create")
    assert rate == 100.0  # 1000 calls in 10 s, the median of 100, 200 and 50 per second
    assert cpu["apiserver-a"] == 10.0 and cpu["apiserver-b"] == 0.5 and cpu["etcd"] == 1.0
    assert errors == 0
    text = render(Options(1000, 3, 4, 16, None, standbys=2), result)
    assert "create, 1 apiserver " in text and "bind, 2 apiservers" in text
    assert "  0.500  " in text  # the standbys' mean: (0.25 + 0.75) / 2
    assert "load before 1, after 2" in text and "median of 3 rounds" in text


@pytest.mark.parametrize("flag", ["-n", "--rounds", "--processes", "--concurrency"])
def test_a_count_below_one_is_refused_naming_the_flag(flag: str) -> None:
    args: argparse.Namespace = build_parser().parse_args([flag, "0"])
    with pytest.raises(ValueError, match=f"{flag} must be at least 1, not 0"):
        options(args)
    with pytest.raises(ValueError, match="--standbys must be at least 0, not -1"):
        options(build_parser().parse_args(["--standbys", "-1"]))
