from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kemu.chaos.profiles import CI, FULL, weights
from kemu.chaos.runner import ChaosRun
from kemu.chaos.schedule import (
    AUTOSCALING_ROLES,
    DELAY_RANGE,
    KINDS,
    MAX_SKEW,
    MIN_SKEW,
    ROLES,
    Action,
    FaultMix,
    make_schedule,
)
from kemu.machinery.latency import NO_LATENCY, Latency


def test_the_same_seed_gives_the_same_timeline() -> None:
    assert make_schedule(42, 60.0, CI.mix) == make_schedule(42, 60.0, CI.mix)


def test_another_seed_gives_another_timeline() -> None:
    assert make_schedule(1, 60.0, CI.mix) != make_schedule(2, 60.0, CI.mix)


def test_faults_are_spaced_and_within_the_window() -> None:
    mix = CI.mix
    faults = make_schedule(3, 120.0, mix)
    assert faults and all(f.at < 120.0 for f in faults)
    for before, after in zip(faults, faults[1:], strict=False):
        assert after.at - (before.at + before.down) >= mix.min_gap - 1e-6
    assert {f.role for f in faults} <= set(ROLES)


def test_a_pause_outlasts_the_scheduler_lease() -> None:
    from kemu.chaos.runner import LEASE_DURATION

    pauses = [f for f in make_schedule(5, 600.0, CI.mix) if f.action is Action.PAUSE]
    assert pauses and all(f.down > LEASE_DURATION for f in pauses)


def test_the_full_profile_kills_the_scheduler_at_least_100_times() -> None:
    w = FULL.workload.pods
    faults = make_schedule(0, w.total / w.rate, FULL.mix)
    kills = [f for f in faults if f.action is Action.KILL and f.role.startswith("scheduler")]
    assert len(kills) >= 100


def test_a_negative_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="duration"):
        make_schedule(1, -1.0, CI.mix)


@pytest.mark.parametrize("seed", range(20))
def test_the_ci_profile_fires_every_kind_of_fault(seed: int) -> None:
    assert CI.fault_window is not None
    faults = make_schedule(seed, CI.fault_window, CI.mix)
    assert {f.kind for f in faults} == set(KINDS)
    assert len(KINDS) <= len(faults) <= len(KINDS) + 5


def test_every_kind_fires_even_past_a_window_too_short_for_them_all() -> None:
    faults = make_schedule(4, 10.0, CI.mix)
    assert {f.kind for f in faults} == set(KINDS)
    assert len(faults) == len(KINDS)  # no weighted draw once the window is over


def test_the_network_and_time_faults_have_the_issues_names() -> None:
    assert {
        "partition scheduler-leader",
        "partition kubelet",
        "partition apiserver-one",
        "partition etcd-member",
        "delay etcd",
        "skew-clock scheduler-leader",
        "skew-clock kubelet",
        "skew-clock controllermanager",
        "drop watches",
    } <= set(KINDS)


@pytest.mark.parametrize("seed", range(10))
def test_delays_skews_and_partitions_are_sized_and_last_as_the_mix_says(seed: int) -> None:
    from kemu.chaos.runner import LEASE_DURATION

    faults = make_schedule(seed, 600.0, CI.mix)
    for f in faults:
        if f.action is Action.DELAY:
            assert DELAY_RANGE[0] <= f.size <= DELAY_RANGE[1]
            assert f.down == CI.mix.delay_down
        elif f.action is Action.SKEW_CLOCK:
            assert MIN_SKEW <= abs(f.size) <= MAX_SKEW
            assert f.down == CI.mix.skew_down
        elif f.action is Action.PARTITION:
            assert f.down == CI.mix.partition_down > LEASE_DURATION
        elif f.action is Action.DROP:
            assert f.down == 0.0
        else:
            assert f.size == 0.0
    skews = [f.size for f in faults if f.action is Action.SKEW_CLOCK]
    assert skews and any(s > 0 for s in skews) or any(s < 0 for s in skews)


def test_the_full_profile_kills_apiservers_often() -> None:
    w = FULL.workload.pods
    faults = make_schedule(0, w.total / w.rate, FULL.mix)
    kills = [f for f in faults if f.role.startswith("apiserver")]
    assert len(kills) >= len(faults) / 12, (len(kills), len(faults))


def test_a_run_without_scaling_has_no_autoscaler_faults() -> None:
    mix = CI.mix.without(AUTOSCALING_ROLES)
    faults = make_schedule(7, 300.0, mix)
    assert faults and not {f.role for f in faults} & set(AUTOSCALING_ROLES)


def test_weights_name_the_fault_kind() -> None:
    assert weights(kill_etcd_member=7.0)["kill etcd-member"] == 7.0
    with pytest.raises(ValueError, match="unknown fault kind 'kill_etc'"):
        weights(kill_etc=1.0)
    with pytest.raises(ValueError, match="weights.kill nothing: unknown fault kind"):
        FaultMix({"kill nothing": 1.0}, 1.0, 2.0, 0.5, 5.0)
    with pytest.raises(ValueError, match="partition_down: must be >= 0"):
        FaultMix({"kill etcd": 1.0}, 1.0, 2.0, 0.5, 5.0, partition_down=-1.0)
    assert weights(partition_etcd_member=2.0)["partition etcd-member"] == 2.0
    assert weights(skew_clock_kubelet=0.0)["skew-clock kubelet"] == 0.0
    assert set(ROLES) == {role for _, role in KINDS.values()}


def test_a_latency_fault_carries_the_mixs_distribution_and_lasts_latency_down() -> None:
    mix = FaultMix(
        weights={"latency apiserver": 1.0, "latency etcd": 1.0},
        min_gap=1.0,
        max_gap=2.0,
        kill_down=0.5,
        pause_down=5.0,
        latency=Latency.parse("normal:200ms,50ms"),
        latency_down=4.0,
    )
    faults = make_schedule(9, 60.0, mix)
    assert {f.kind for f in faults} == {"latency apiserver", "latency etcd"}
    assert all(f.action is Action.LATENCY for f in faults)
    assert all(f.latency == mix.latency and f.down == 4.0 and f.size == 0 for f in faults)
    assert faults[0].describe().endswith(f"({4.0:.1f}s, normal:200ms,50ms)")
    assert make_schedule(9, 60.0, mix) == faults
    other = make_schedule(9, 60.0, mix)
    assert [f.pick for f in other] == [f.pick for f in faults]  # the proxy's draws' seeds


def test_a_mix_with_latency_faults_and_no_latency_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match="^latency: latency etcd has weight, the latency is none"):
        FaultMix(
            weights={"latency etcd": 1.0},
            min_gap=1.0,
            max_gap=2.0,
            kill_down=0.5,
            pause_down=5.0,
            latency=NO_LATENCY,
        )
    with pytest.raises(ValueError, match="^latency_down: must be >= 0, not -1"):
        FaultMix(
            weights={"latency etcd": 1.0},
            min_gap=1.0,
            max_gap=2.0,
            kill_down=0.5,
            pause_down=5.0,
            latency_down=-1.0,
        )


def test_the_ci_profile_keeps_pods_coming_past_its_faults_window(tmp_path: Path) -> None:
    """The CI profile draws its faults over its first minute and creates pods for two, so a
    restart late in a loaded run still has pods to bind after it; a workload of the user's
    gets faults while it creates pods."""
    run = ChaosRun(tmp_path, CI, 7)
    pods = CI.workload.pods
    assert run.duration == CI.fault_window == 60.0
    assert pods.total / pods.rate >= 2 * run.duration
    assert run.schedule == make_schedule(7, 60.0, CI.mix)
    theirs = dataclasses.replace(CI.workload, pods=dataclasses.replace(pods, total=50, rate=5.0))
    assert ChaosRun(tmp_path, CI, 7, workload=theirs).duration == 10.0
