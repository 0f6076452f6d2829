"""Borrowing between priority levels (issue #58 item 3): upstream's fair allocation within
bounds (conc_alloc.go), the seat demand's statistics (integrator.go, seatDemandStats) and the
periodic re-division (apf_controller.go updateBorrowing)."""

from __future__ import annotations

import contextlib
import math

import anyio
import pytest
from prometheus_client import CollectorRegistry

from apiserver.endpoints import identity
from apiserver.endpoints.inflight import RequestInfo
from apiserver.flowcontrol.apf_filter import (
    ApfMetrics,
    BorrowingMetrics,
    PriorityAndFairness,
    limit_bounds,
)
from apiserver.flowcontrol.conc_alloc import AllocItem, compute_concurrency_allocation
from apiserver.flowcontrol.integrator import Integrator, SeatDemandStats
from kemu.machinery import flowcontrol


def _alloc(required: int, *items: tuple[float, float, float]) -> tuple[list[float], float]:
    return compute_concurrency_allocation(required, [AllocItem(*i) for i in items])


def test_fair_allocation_no_bound_matters() -> None:
    allocs, fair = _alloc(10, (1, 0, 100), (1, 0, 100), (2, 0, 100))
    assert allocs == pytest.approx([2.5, 2.5, 5])
    assert fair == pytest.approx(2.5)


def test_fair_allocation_an_upper_bound_stops_a_level() -> None:
    allocs, fair = _alloc(10, (1, 0, 1), (1, 0, 100))
    assert allocs == pytest.approx([1, 9])
    assert fair == pytest.approx(9)


def test_fair_allocation_a_lower_bound_holds_a_level_up() -> None:
    # p * 1 would be below 1: the first keeps its lower bound, the second takes the rest
    allocs, fair = _alloc(10, (1, 1, 10), (10, 0, 10))
    assert allocs == pytest.approx([1, 9])
    assert fair == pytest.approx(0.9)


def test_fair_allocation_a_zero_target_gets_its_lower_bound() -> None:
    allocs, _ = _alloc(10, (0, 0, 50), (5, 2, 50))
    assert allocs[0] == pytest.approx(10 * 0.001 / 5.001)
    assert sum(allocs) == pytest.approx(10)


def test_fair_allocation_without_room() -> None:
    assert _alloc(6, (3, 3, 9), (3, 3, 9)) == ([3, 3], 1.0)
    assert _alloc(18, (3, 3, 9), (3, 3, 9)) == ([9, 9], 3.0)
    assert _alloc(0, (3, 0, 9)) == ([0.0], 0.0)
    with pytest.raises(ValueError, match="lower bounds"):
        _alloc(5, (3, 3, 9), (3, 3, 9))
    with pytest.raises(ValueError, match="upper bounds"):
        _alloc(19, (3, 3, 9), (3, 3, 9))
    with pytest.raises(ValueError, match="below its lower bound"):
        _alloc(5, (1, 3, 9))


def test_integrator_time_weighted_average_deviation_and_high_watermark() -> None:
    t = [0.0]
    integ = Integrator(lambda: t[0])
    integ.set(10)
    t[0] = 5
    integ.set(0)
    t[0] = 10
    got = integ.reset()
    assert (got.duration, got.average, got.deviation, got.max) == (10, 5, 5, 10)
    t[0] = 20  # the next period starts at the current value (0)
    got = integ.reset()
    assert (got.average, got.max) == (0, 0)


def test_seat_demand_smoothing_rises_at_once_and_decays_slowly() -> None:
    stats = SeatDemandStats()
    t = [0.0]
    integ = Integrator(lambda: t[0])
    integ.set(100)
    t[0] = 10
    stats.update(integ.reset())
    assert stats.smoothed == 100
    integ.set(0)
    t[0] = 20
    stats.update(integ.reset())
    assert stats.smoothed == pytest.approx(97.7)
    assert stats.high_watermark == 100  # (the period began at 100)


def test_limit_bounds_lendable_and_borrowing_percent() -> None:
    levels = {pl.metadata.name: pl for pl, _ in flowcontrol.bootstrap_priority_levels()}
    # workload-low: 245 nominal, lends 90% (round(220.5) = 221, Go's rounding), no borrowing
    # limit: up to the server's total more
    assert limit_bounds(levels["workload-low"], 245, 600) == (24, 845)
    assert limit_bounds(levels["leader-election"], 25, 600) == (25, 625)
    pl = levels["global-default"].__deepcopy__()
    pl.spec.limited.borrowing_limit_percent = 10
    assert limit_bounds(pl, 49, 600) == (24, 54)


SERVICE_ACCOUNT = identity.UserInfo(
    "system:serviceaccount:apps:x", ("system:serviceaccounts", identity.AUTHENTICATED)
)


def _apf(registry: CollectorRegistry, now: list[float]) -> PriorityAndFairness:
    return PriorityAndFairness(
        600,
        lambda: 1,
        lambda: None,
        lambda info: 0,
        ApfMetrics(registry),
        now=lambda: now[0],
        wait_limit=60.0,
        borrowing=BorrowingMetrics(registry),
    )


async def test_a_busy_level_borrows_the_idle_levels_seats_and_gives_them_back() -> None:
    registry = CollectorRegistry()
    now = [0.0]
    apf = _apf(registry, now)
    anonymous = RequestInfo("get", "pods", "ns")  # global-default: 49 nominal seats
    assert apf.nominal_limit("global-default") == 49
    idle = apf.current_limit("global-default")
    # idle: the seats divided by the levels' lower bounds (upstream divides the same way)
    assert idle == 56

    executing = {"global-default": 0, "workload-low": 0}

    async def hold(info: RequestInfo, level: str, release: anyio.Event) -> None:
        async with apf.admit(info):
            executing[level] += 1
            await release.wait()

    release = anyio.Event()
    async with anyio.create_task_group() as tg:
        for _ in range(200):
            tg.start_soon(hold, anonymous, "global-default", release)
        await anyio.wait_all_tasks_blocked()
        assert executing["global-default"] == idle  # the rest wait
        now[0] += 10
        apf.update_borrowing()
        await anyio.wait_all_tasks_blocked()
        borrowed = apf.current_limit("global-default")
        # demand 200: lower bound 49, target 200; the others at their lower bounds (234):
        # p = 602 / 434, 200 p
        assert borrowed == round(200 * 602 / 434)
        assert executing["global-default"] == 200  # all dispatched, beyond the nominal 49
        assert (
            registry.get_sample_value(
                "apiserver_flowcontrol_current_limit_seats", {"priority_level": "global-default"}
            )
            == borrowed
        )
        assert (
            registry.get_sample_value(
                "apiserver_flowcontrol_demand_seats_high_watermark",
                {"priority_level": "global-default"},
            )
            == 200
        )
        fair = registry.get_sample_value("apiserver_flowcontrol_seat_fair_frac")
        assert fair == pytest.approx(602 / 434, rel=1e-4)  # (the exempt level: 0.001)

        # workload-low gets busy too: global-default gives seats back
        sa = RequestInfo("get", "pods", "ns", user=SERVICE_ACCOUNT)
        for _ in range(300):
            tg.start_soon(hold, sa, "workload-low", release)
        await anyio.wait_all_tasks_blocked()
        now[0] += 10
        apf.update_borrowing()
        await anyio.wait_all_tasks_blocked()
        # workload-low's lower bound is now its nominal 245 (its demand's high watermark);
        # the idle levels keep their lower bounds; global-default gets the rest (147)
        assert apf.current_limit("workload-low") == 245
        assert apf.current_limit("global-default") == 602 - 245 - (13 + 50 + 73 + 25 + 49)
        assert apf.current_limit("global-default") < borrowed
        total = sum(
            apf.current_limit(name)
            for name in (
                "exempt", "catch-all", "system", "node-high", "leader-election",
                "workload-high", "workload-low", "global-default",
            )
        )  # fmt: skip
        assert math.isclose(total, 602, abs_tol=4)  # (each rounded)
        release.set()


async def test_no_borrowing_before_1_26() -> None:
    registry = CollectorRegistry()
    apf = PriorityAndFairness(600, lambda: 1, lambda: None, lambda info: 0, ApfMetrics(registry))
    assert apf.current_limit("global-default") == 49
    with contextlib.nullcontext():
        apf.update_borrowing()
    assert apf.current_limit("global-default") == 49
    assert registry.get_sample_value("apiserver_flowcontrol_seat_fair_frac") is None
