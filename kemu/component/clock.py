"""Time as an injected object, so behaviour that depends on time is testable.

Contract: `Clock.now()` is wall time in seconds since the epoch (for timestamps written to
objects), `Clock.monotonic()` is for measuring intervals and deadlines, `await Clock.sleep(s)`
waits `s` monotonic seconds (s <= 0 is just a checkpoint). `RealClock` is the process clock.
`FakeClock` only moves when a test calls `advance()`: every sleeper whose deadline is reached
is woken, in deadline order (ties in the order they went to sleep); the woken tasks run at the
test's next checkpoint (for example `await anyio.wait_all_tasks_blocked()`).
"""

from __future__ import annotations

import heapq
import itertools
import time
from typing import Protocol

import anyio
import anyio.lowlevel


class Clock(Protocol):
    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    """The process clock: time.time, time.monotonic and anyio.sleep."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))


class FakeClock:
    """A clock that stands still until `advance()`; see the module docstring."""

    def __init__(self, *, now: float = 1_700_000_000.0, monotonic: float = 1_000.0) -> None:
        self._wall_offset = now - monotonic
        self._monotonic = monotonic
        self._seq = itertools.count()
        self._sleepers: list[tuple[float, int, anyio.Event]] = []

    def now(self) -> float:
        return self._monotonic + self._wall_offset

    def monotonic(self) -> float:
        return self._monotonic

    @property
    def sleepers(self) -> int:
        """How many sleeps are pending (useful to know a task reached its sleep)."""
        return len(self._sleepers)

    def next_deadline(self) -> float | None:
        """The monotonic time the earliest pending sleep ends, or None."""
        return self._sleepers[0][0] if self._sleepers else None

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await anyio.lowlevel.checkpoint()
            return
        entry = (self._monotonic + seconds, next(self._seq), anyio.Event())
        heapq.heappush(self._sleepers, entry)
        try:
            await entry[2].wait()
        finally:
            # advance() pops an entry before setting it, so only a cancelled sleep is left.
            if not entry[2].is_set():
                self._sleepers.remove(entry)
                heapq.heapify(self._sleepers)

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline is now reached."""
        if seconds < 0:
            raise ValueError("a clock cannot go backwards")
        self._monotonic += seconds
        while self._sleepers and self._sleepers[0][0] <= self._monotonic:
            _, _, event = heapq.heappop(self._sleepers)
            event.set()

    def set_wall_time(self, now: float) -> None:
        """Jump the wall clock (not the monotonic one), as NTP may."""
        self._wall_offset = now - self._monotonic
