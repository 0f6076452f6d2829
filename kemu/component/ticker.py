"""Upstream's `wait.Until(fn, period)` for a periodic `fn` that only acts on what has come due
(the scheduling queue's flushes, the scheduler cache's cleanup).

`Ticker` keeps upstream's grid, `fn` at the start and then every `period` (start + k * period),
but sleeps through the ticks at which `due()` says nothing can have come due: the next tick it
runs `fn` at is the first one at or after `due()`, and with nothing pending (`due()` None) it
holds no timer at all. Whoever makes something due sooner than the instant the ticker waits for
calls `wake(instant)`; what becomes due later needs no call (the ticker asks `due()` again
at the tick). What `fn` does, and when, is what a tick every period would do (a tick
at which nothing is due does nothing); an idle component holds no timer, so the event-driven
virtual clock makes no jump for it (kemu/component/virtual_clock.py), and a process on the
host's clock wakes less often.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from kemu.component.clock import Clock
from kemu.component.virtual_clock import move_on_after

_EPSILON: Final = 1e-9
"""Of a period: a target on the grid but for rounding is that tick, not the next."""
DUE_NOW: Final = -math.inf
"""What `due()` returns for "due already": at the next tick, whenever it comes."""


class Ticker:
    def __init__(
        self,
        clock: Clock,
        period: float,
        fn: Callable[[], object] | Callable[[], Awaitable[object]],
        due: Callable[[], float | None],
        *,
        slack: float = 0.0,
    ) -> None:
        """`fn`: a function or a coroutine function. `due()`: the earliest monotonic instant
        at which `fn` may act (None: nothing pending; an instant already passed: at the next
        tick). `slack`: how much later than its tick `fn` may run (upstream's jitter of the
        period, as the timer's slack on the virtual clock: Clock.sleep)."""
        if period <= 0:
            raise ValueError(f"ticker: period {period} must be positive")
        if slack < 0:
            raise ValueError(f"ticker: slack {slack} must not be negative")
        self._clock = clock
        self.period = period
        self._slack = slack
        self._fn = fn
        self._due = due
        self._woken = anyio.Event()
        self._waiting_for: float | None = math.inf
        """The tick the ticker sleeps until (inf: it waits for a wake)."""

    def wake(self, instant: float | None = None) -> None:
        """Something may come due at `instant` (None: now): the ticker looks again if it
        waits for a later tick."""
        if self._waiting_for is None:  # looking already
            return
        if instant is None or instant < self._waiting_for:
            self._woken.set()

    async def run(self, start: float | None = None) -> None:
        """Ticks from `start` (a monotonic instant; None: now) until cancelled."""
        clock, period = self._clock, self.period
        if start is None:
            start = clock.monotonic()
        else:
            await clock.sleep(start - clock.monotonic(), slack=self._slack)
        last = start
        await self._tick()
        while True:
            self._waiting_for = None
            self._woken = anyio.Event()
            due = self._due()
            if due is None:
                self._waiting_for = math.inf
                await self._woken.wait()
                continue
            # the first tick of the grid at or after `due`, after the last one and not past
            target = max(due, last + period, clock.monotonic())
            tick = start + math.ceil((target - start) / period - _EPSILON) * period
            remaining = tick - clock.monotonic()
            if remaining > 0:
                self._waiting_for = tick
                async with move_on_after(clock, remaining, slack=self._slack):
                    await self._woken.wait()
                if self._woken.is_set() and clock.monotonic() < tick:
                    continue  # woken for something due sooner: look again
                now_due = self._due()
                if now_due is None or now_due > tick + _EPSILON * period:
                    continue  # what was due went later meanwhile (a node renewed): not yet
            last = tick
            self._waiting_for = None
            await self._tick()

    async def _tick(self) -> None:
        result = self._fn()
        if inspect.isawaitable(result):
            await result
