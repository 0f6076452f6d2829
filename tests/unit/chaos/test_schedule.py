from __future__ import annotations

import pytest

from kemu.chaos.profiles import CI, FULL, weights
from kemu.chaos.schedule import AUTOSCALING_ROLES, KINDS, ROLES, Action, FaultMix, make_schedule


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
    w = CI.workload.pods
    faults = make_schedule(seed, w.total / w.rate, CI.mix)
    assert {f"{f.action.value} {f.role}" for f in faults} == set(KINDS)
    assert 15 <= len(faults) <= 25


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
    assert set(ROLES) == {role for _, role in KINDS.values()}
