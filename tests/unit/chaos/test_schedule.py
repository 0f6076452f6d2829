from __future__ import annotations

import pytest

from kemu.chaos.profiles import CI, FULL
from kemu.chaos.schedule import ROLES, Action, make_schedule


def test_the_same_seed_gives_the_same_timeline() -> None:
    assert make_schedule(42, 60.0) == make_schedule(42, 60.0)


def test_another_seed_gives_another_timeline() -> None:
    assert make_schedule(1, 60.0) != make_schedule(2, 60.0)


def test_faults_are_spaced_and_within_the_window() -> None:
    mix = CI.mix
    faults = make_schedule(3, 120.0, mix)
    assert faults and all(f.at < 120.0 for f in faults)
    for before, after in zip(faults, faults[1:], strict=False):
        assert after.at - (before.at + before.down) >= mix.min_gap - 1e-6
    assert {f.role for f in faults} <= set(ROLES)


def test_a_pause_outlasts_the_scheduler_lease() -> None:
    from kemu.chaos.runner import LEASE_DURATION

    pauses = [f for f in make_schedule(5, 600.0) if f.action is Action.PAUSE]
    assert pauses and all(f.down > LEASE_DURATION for f in pauses)


def test_the_full_profile_kills_the_scheduler_at_least_100_times() -> None:
    w = FULL.workload.pods
    faults = make_schedule(0, w.total / w.rate, FULL.mix)
    kills = [f for f in faults if f.action is Action.KILL and f.role.startswith("scheduler")]
    assert len(kills) >= 100


def test_a_negative_duration_is_refused() -> None:
    with pytest.raises(ValueError, match="duration"):
        make_schedule(1, -1.0)
