"""kemu.component.ticker: upstream's wait.Until grid, without the ticks at which nothing is due."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from kemu.component.clock import FakeClock
from kemu.component.ticker import DUE_NOW, Ticker

pytestmark = pytest.mark.anyio


class _Work:
    """Items due at monotonic instants; `tick` records when it ran and takes what is due."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.items: list[float] = []
        self.ticks: list[float] = []
        self.taken: list[tuple[float, float]] = []  # (item, tick that took it)

    def due(self) -> float | None:
        return min(self.items, default=None)

    def tick(self) -> None:
        now = self.clock.monotonic()
        self.ticks.append(now)
        for item in [i for i in self.items if i <= now]:
            self.items.remove(item)
            self.taken.append((item, now))


async def _step(clock: FakeClock, seconds: float) -> None:
    """Time passing in quarter seconds (exact in binary: the instants compared are exact)."""
    for _ in range(int(seconds * 4)):
        clock.advance(0.25)
        await anyio.wait_all_tasks_blocked()


@asynccontextmanager
async def _ticking(start: float) -> AsyncIterator[tuple[FakeClock, _Work, Ticker]]:
    """A ticker of period 1 s over `_Work`, started at `start` (its grid is start + k)."""
    clock = FakeClock(monotonic=start)
    work = _Work(clock)
    ticker = Ticker(clock, 1.0, work.tick, work.due)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run)
        await anyio.wait_all_tasks_blocked()
        yield clock, work, ticker
        tg.cancel_scope.cancel()


async def test_with_nothing_due_it_holds_no_timer_and_does_not_tick() -> None:
    async with _ticking(100.0) as (clock, work, _):
        await _step(clock, 5)
        assert work.ticks == [100.0]  # wait.Until runs it at the start
        assert clock.sleepers == 0


async def test_an_item_is_taken_at_the_first_tick_of_the_grid_at_or_after_it() -> None:
    # As a tick every second from the start would: at 103.0 for an item due at 102.25 (added
    # at 100.5), at 106.0 for one due at 106.0.
    async with _ticking(100.0) as (clock, work, ticker):
        await _step(clock, 0.5)
        work.items.append(102.25)
        ticker.wake(102.25)
        await _step(clock, 3)
        assert work.taken == [(102.25, 103.0)]
        work.items.append(106.0)
        ticker.wake(106.0)
        await _step(clock, 3)
        assert [t for _, t in work.taken] == [103.0, 106.0]
        # every tick it made took something: none at 101, 102, 104 or 105
        assert work.ticks == [100.0, 103.0, 106.0]


async def test_a_wake_for_an_earlier_item_cuts_a_longer_wait_short() -> None:
    async with _ticking(0.0) as (clock, work, ticker):
        work.items.append(10.0)
        ticker.wake(10.0)
        await _step(clock, 1.0)
        work.items.append(2.5)
        ticker.wake(2.5)
        await _step(clock, 2.5)
        assert work.taken == [(2.5, 3.0)]
        ticker.wake(50.0)  # later than what it waits for (10.0): nothing to look at again
        await _step(clock, 8)
        assert [i for i, _ in work.taken] == [2.5, 10.0]


def test_a_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="period"):
        Ticker(FakeClock(), 0.0, lambda: None, lambda: None)


class _SlackClock(FakeClock):
    """A FakeClock that records the slack of each sleep (a fake clock serves none)."""

    def __init__(self, monotonic: float) -> None:
        super().__init__(monotonic=monotonic)
        self.slacks: list[float] = []

    async def sleep(self, seconds: float, *, slack: float = 0.0) -> None:
        self.slacks.append(slack)
        await super().sleep(seconds, slack=slack)


async def test_from_a_start_instant_its_grid_is_that_instant_and_every_wait_has_the_slack() -> None:
    # (the kubelet's status loop: its grid starts at its node's phase, each tick may come up
    # to 4% of a period later on the virtual clock)
    clock = _SlackClock(monotonic=100.0)
    work = _Work(clock)
    ticker = Ticker(clock, 1.0, work.tick, work.due, slack=0.04)
    work.items.append(107.5)
    async with anyio.create_task_group() as tg:
        tg.start_soon(ticker.run, 104.0)
        await anyio.wait_all_tasks_blocked()
        await _step(clock, 10)
        tg.cancel_scope.cancel()
    assert work.ticks == [104.0, 108.0]
    assert clock.slacks and set(clock.slacks) == {0.04}


def test_a_slack_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="slack"):
        Ticker(FakeClock(), 1.0, lambda: None, lambda: None, slack=-1.0)


async def test_what_went_later_without_a_wake_is_not_ticked_for_before_its_time() -> None:
    # (the node monitor: the oldest probe's node renewed while the ticker slept, and nobody
    # wakes a ticker for something due later)
    async with _ticking(100.0) as (clock, work, ticker):
        work.items.append(103.0)
        ticker.wake(103.0)
        await _step(clock, 1)
        work.items[0] = 105.5
        await _step(clock, 7)
        assert work.ticks == [100.0, 106.0]
        assert work.taken == [(105.5, 106.0)]


async def test_due_now_is_the_next_tick() -> None:
    async with _ticking(100.0) as (clock, work, ticker):
        await _step(clock, 0.5)
        work.items.append(DUE_NOW)
        ticker.wake()
        await _step(clock, 1)
        assert work.ticks == [100.0, 101.0]
