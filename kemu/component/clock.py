"""Time as an injected object, so behaviour that depends on time is testable.

Contract: `Clock.now()` is wall time in seconds since the epoch (for timestamps written to
objects), `Clock.monotonic()` is for measuring intervals and deadlines, `await Clock.sleep(s)`
waits `s` monotonic seconds (s <= 0 is just a checkpoint), or up to `slack` seconds more: a
timer whose exact instant does not matter says so (upstream's wait.JitterUntil periods, which
vary by their jitter factor anyway), and the event-driven virtual clock serves every timer due
within one jump (kemu/component/virtual_clock.py); the host's and the fake clock end it at `s`.
`RealClock` is the process clock.
`FakeClock` only moves when a test calls `advance()`: every sleeper whose deadline is reached
is woken, in deadline order (ties in the order they went to sleep); the woken tasks run at the
test's next checkpoint (for example `await anyio.wait_all_tasks_blocked()`).

A skewed wall clock (kemu only, for fault injection: the chaos harness's `skew-clock`): when
the environment names a file in KEMU_WALL_CLOCK_SKEW_FILE, `RealClock.now()` is time.time()
plus the seconds written in it (a float, negative for behind), read again at most once a
second; a missing or empty file is no skew. Only the wall clock moves, as a machine's clock
set wrong: `monotonic()` and `sleep()` do not, and upstream's components measure their
timeouts (leader election's observedTime, the node lifecycle controller's probe time) on the
local monotonic clock for that reason.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import time
from typing import Final, Protocol

import anyio
import anyio.lowlevel

logger = logging.getLogger(__name__)

SKEW_FILE_ENV: Final = "KEMU_WALL_CLOCK_SKEW_FILE"
SKEW_REREAD: Final = 1.0


class Clock(Protocol):
    def now(self) -> float: ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float, *, slack: float = 0.0) -> None: ...


class WallClockSkew:
    """Seconds the wall clock is off by, from the file `path` (see the module docstring)."""

    def __init__(self, path: str | None, *, reread: float = SKEW_REREAD) -> None:
        """`reread`: seconds between two reads of the file."""
        self.path = path
        self._reread = reread
        self._seconds = 0.0
        self._next_read = -float("inf")

    @classmethod
    def from_environ(cls) -> WallClockSkew:
        return cls(os.environ.get(SKEW_FILE_ENV) or None)

    def seconds(self) -> float:
        if self.path is None:
            return 0.0
        now = time.monotonic()
        if now >= self._next_read:
            self._next_read = now + self._reread
            self._seconds = self._read(self.path)
        return self._seconds

    def _read(self, path: str) -> float:
        try:
            with open(path) as f:
                text = f.read().strip()
        except FileNotFoundError:
            return 0.0
        except OSError as e:
            logger.warning("%s %s: cannot read it (%s); no skew", SKEW_FILE_ENV, path, e)
            return 0.0
        try:
            seconds = float(text) if text else 0.0
        except ValueError:
            seconds = float("nan")
        if seconds != seconds or abs(seconds) == float("inf"):  # NaN or infinite
            logger.warning(
                "%s %s: %r is not a number of seconds; no skew", SKEW_FILE_ENV, path, text
            )
            return 0.0
        if seconds != self._seconds:
            logger.info("wall clock skewed by %+gs (%s)", seconds, path)
        return seconds


_process_skew: WallClockSkew | None = None


def process_skew() -> WallClockSkew:
    """This process's skew, from its environment when first asked (not at import: the harness's
    fork server imports this module once for every process it forks)."""
    global _process_skew
    if _process_skew is None:
        _process_skew = WallClockSkew.from_environ()
    return _process_skew


class RealClock:
    """The process clock: time.time (plus the process's wall-clock skew, if any),
    time.monotonic and anyio.sleep."""

    def __init__(self, skew: WallClockSkew | None = None) -> None:
        """`skew`: default the process's (`process_skew()`)."""
        self._skew = skew if skew is not None else process_skew()

    def now(self) -> float:
        return time.time() + self._skew.seconds()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float, *, slack: float = 0.0) -> None:
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

    async def sleep(self, seconds: float, *, slack: float = 0.0) -> None:
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
