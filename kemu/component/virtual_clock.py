"""The Clock of a process in virtual time (`--clock virtual`; kemu/machinery/virtual_time.py).

`VirtualClock` follows the cluster clock's segment: `now()` and `monotonic()` are the segment's
virtual time at the host's wall time, and `sleep(s)` returns once virtual time has moved `s`
seconds, however the rate changes meanwhile (a held clock keeps sleepers asleep; a faster one
wakes them sooner). The apiserver sets the segment from etcd (apiserver/clock/cluster_clock.py), every
other component from its clock session with the apiserver (kemu/client/clock.py).

Until its first segment arrives the clock is the host's (waiting for the apiserver to come up
is transport, not behaviour), so a process starts as in real time and switches once attached.

The pending sleeps are counted (`timers`, `next_deadline`) and `timers_changed` is set whenever
that changes, for the clock session to report them.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import math
import random
import time
from collections.abc import Callable
from types import TracebackType
from typing import Final

import anyio
import anyio.abc
import anyio.lowlevel

from kemu.component.clock import Clock, RealClock, WallClockSkew, process_skew
from kemu.component.clock_steps import ClockSteps, StepOrder
from kemu.machinery.virtual_time import ClockSegment

logger = logging.getLogger(__name__)

_PASSED: Final = 0.001
"""Virtual seconds past a sleep's latest instant at which the event-driven clock is said to
have passed it (a jump lands on the instant exactly: this is only rounding's margin)."""


class _Sleeper:
    """One pending sleep: due at virtual `target`, at the latest `latest` (its slack)."""

    __slots__ = ("target", "latest", "woken", "pending")

    def __init__(self, target: float, latest: float) -> None:
        self.target = target
        self.latest = latest
        self.woken = anyio.Event()
        self.pending = True


class VirtualClock:
    def __init__(
        self, *, wall: Callable[[], float] = time.time, skew: WallClockSkew | None = None
    ) -> None:
        """`skew`: default the process's (`process_skew()`)."""
        self._wall = wall
        self._skew = skew if skew is not None else process_skew()
        self._segment: ClockSegment | None = None
        self._changed = anyio.Event()
        self._seq = itertools.count()
        # Two heaps of the pending sleeps, by target (to wake them) and by latest instant
        # (to report); an entry whose sleep ended stays until it reaches the top.
        self._by_target: list[tuple[float, int, _Sleeper]] = []
        self._by_latest: list[tuple[float, int, _Sleeper]] = []
        self._pending = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._alarm: asyncio.TimerHandle | None = None
        self.timers_changed = anyio.Event()
        """Set when the pending sleeps change (replaced by a fresh one on `take_timers`)."""
        self.steps = ClockSteps()
        """The process's steps at one virtual instant (kemu.component.clock_steps), released
        through its clock session."""

    # ------------------------------------------------------------ the segment

    @property
    def segment(self) -> ClockSegment | None:
        return self._segment

    @property
    def attached(self) -> bool:
        return self._segment is not None

    def set_segment(self, segment: ClockSegment) -> bool:
        """Follow `segment` unless a newer one is already followed; True if taken."""
        if self._segment is not None and segment.generation <= self._segment.generation:
            return False
        self._segment = segment
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        self._wake_due()
        return True

    def next_change(self) -> anyio.Event:
        """Set when the segment next changes."""
        return self._changed

    # ------------------------------------------------------------ Clock

    def monotonic(self) -> float:
        if self._segment is None:
            return self._wall()
        return self._segment.at(self._wall())

    def now(self) -> float:
        return self.monotonic() + self._skew.seconds()

    async def sleep(self, seconds: float, *, slack: float = 0.0) -> None:
        """Returns once virtual time has moved `seconds`. `slack`: how much later than that it
        may return (see kemu/component/clock.py): at rate max the clock jumps to the earliest
        instant some sleep must end by, and every sleep due by then ends with it."""
        if seconds <= 0 or seconds != seconds:
            await anyio.lowlevel.checkpoint()
            return
        if self._segment is None:
            await anyio.sleep(seconds)
            return
        target = self.monotonic() + seconds
        sleeper = _Sleeper(target, target + slack if slack > 0 else target)
        seq = next(self._seq)
        heapq.heappush(self._by_target, (target, seq, sleeper))
        heapq.heappush(self._by_latest, (sleeper.latest, seq, sleeper))
        self._pending += 1
        self.timers_changed.set()
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        if self._by_target[0][2] is sleeper:
            self._wake_due()
        try:
            await sleeper.woken.wait()
        finally:
            if sleeper.pending:  # cancelled
                sleeper.pending = False
                self._pending -= 1
                self.timers_changed.set()

    def _wake_due(self) -> None:
        """Ends every sleep whose target the clock has reached, and sets the alarm for the
        next one (one loop timer per clock, however many sleep: a jump or a rate change
        touches only the sleeps it ends)."""
        if self._alarm is not None:
            self._alarm.cancel()
            self._alarm = None
        segment = self._segment
        if segment is None:
            return
        wall = self._wall()
        now = segment.at(wall)
        heap = self._by_target
        woke = False
        late = 0
        latest = now  # the earliest instant by which a late one had to end
        while heap:
            target, _, sleeper = heap[0]
            if not sleeper.pending:
                heapq.heappop(heap)
                continue
            if target > now:
                break
            heapq.heappop(heap)
            if now - sleeper.latest > _PASSED:
                late += 1
                latest = min(latest, sleeper.latest)
            sleeper.pending = False
            self._pending -= 1
            sleeper.woken.set()
            woke = True
        if late and segment.event_driven:
            # (the driver jumps to the earliest instant a reported sleep must end by, so only
            # one it did not count ends late: this process left a probe unanswered, frozen or
            # starved, or its session was away; said, as it shows as late work)
            logger.warning(
                "%d timer(s) woke up to %.3fs of virtual time after they were due: the "
                "event-driven clock went past them",
                late,
                now - latest,
            )
        if woke:
            self.timers_changed.set()
        if heap and self._loop is not None:
            due = segment.wall_at(heap[0][0])
            if due < math.inf:
                self._alarm = self._loop.call_later(max(due - wall, 0.0), self._wake_due)

    # ------------------------------------------------------------ reporting

    @property
    def timers(self) -> int:
        return self._pending

    def next_deadline(self) -> float | None:
        """The earliest virtual instant by which some pending sleep must end."""
        heap = self._by_latest
        while heap and not heap[0][2].pending:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def take_timers(self) -> tuple[int, float | None]:
        """The pending sleeps now (count, earliest virtual deadline), resetting
        `timers_changed` for the next change."""
        self.timers_changed = anyio.Event()
        return self.timers, self.next_deadline()


async def sleep_jittered(
    clock: Clock, seconds: float, max_factor: float, rng: random.Random | None = None
) -> None:
    """Upstream's sleep for wait.Jitter(seconds, max_factor): between `seconds` and
    seconds * (1 + max_factor). On the host's (or a fake) clock a uniform draw from `rng`
    (default the process's); on a VirtualClock the whole range is the sleep's slack, so that a
    run in virtual time draws nothing (the event-driven clock ends it where it serves the most
    timers, a flowing one at its start)."""
    if isinstance(clock, VirtualClock):
        await clock.sleep(seconds, slack=seconds * max_factor)
        return
    draw = (rng or random).random()
    await clock.sleep(seconds * (1 + max_factor * draw))


async def take_step(clock: Clock, order: StepOrder) -> None:
    """Returns once the process may take a step of `order` (kemu.component.clock_steps): on
    a VirtualClock in session while the cluster clock holds, once the event-driven clock's
    driver releases it; on any other clock at once."""
    if isinstance(clock, VirtualClock):
        await clock.steps.take(order)


class move_on_after:
    """anyio.move_on_after, `seconds` measured on `clock`: on the host's clock (RealClock)
    anyio's own (no task per scope on a hot path); on any other a timer on it cancels the scope
    (a held virtual clock never times out, a fast one sooner; a fake one when advanced)."""

    def __init__(self, clock: Clock, seconds: float, *, slack: float = 0.0) -> None:
        """`slack`: as Clock.sleep's, of the timer (none on the host's clock)."""
        self._clock = clock
        self._seconds = seconds
        self._slack = slack
        self._timed = not isinstance(clock, RealClock) and seconds != math.inf
        self._scope = anyio.CancelScope() if self._timed else anyio.move_on_after(seconds)
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> anyio.CancelScope:
        if self._timed:
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            self._group.start_soon(self._timer)
        return self._scope.__enter__()

    async def _timer(self) -> None:
        await self._clock.sleep(self._seconds, slack=self._slack)
        self._scope.cancel()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        swallowed = self._scope.__exit__(exc_type, exc, tb)
        if self._group is not None:
            self._group.cancel_scope.cancel()
            await self._group.__aexit__(None, None, None)
        return bool(swallowed)
