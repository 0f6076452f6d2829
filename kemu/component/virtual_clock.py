"""The Clock of a process in virtual time (`--clock virtual`; kemu/machinery/virtual_time.py).

`VirtualClock` follows the cluster clock's segment: `now()` and `monotonic()` are the segment's
virtual time at the host's wall time, and `sleep(s)` returns once virtual time has moved `s`
seconds, however the rate changes meanwhile (a held clock keeps sleepers asleep; a faster one
wakes them sooner). The apiserver sets the segment from etcd (apiserver/server/clock.py), every
other component from its clock session with the apiserver (kemu/client/clock.py).

Until its first segment arrives the clock is the host's (waiting for the apiserver to come up
is transport, not behaviour), so a process starts as in real time and switches once attached.

The pending sleeps are counted (`timers`, `next_deadline`) and `timers_changed` is set whenever
that changes, for the clock session to report them.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from types import TracebackType

import anyio
import anyio.abc
import anyio.lowlevel

from kemu.component.clock import Clock, WallClockSkew, process_skew
from kemu.machinery.virtual_time import ClockSegment


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
        self._deadlines: dict[int, float] = {}
        self.timers_changed = anyio.Event()
        """Set when the pending sleeps change (replaced by a fresh one on `take_timers`)."""

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
        changed.set()  # every sleeper recomputes its wall deadline
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

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0 or seconds != seconds:
            await anyio.lowlevel.checkpoint()
            return
        if self._segment is None:
            await anyio.sleep(seconds)
            return
        target = self.monotonic() + seconds
        token = next(self._seq)
        self._deadlines[token] = target
        self.timers_changed.set()
        try:
            while True:
                segment, changed = self._segment, self._changed
                wall = self._wall()
                if segment.at(wall) >= target:
                    return
                remaining = segment.wall_at(target) - wall
                with anyio.move_on_after(remaining if remaining < math.inf else math.inf):
                    await changed.wait()
        finally:
            del self._deadlines[token]
            self.timers_changed.set()

    # ------------------------------------------------------------ reporting

    @property
    def timers(self) -> int:
        return len(self._deadlines)

    def next_deadline(self) -> float | None:
        return min(self._deadlines.values(), default=None)

    def take_timers(self) -> tuple[int, float | None]:
        """The pending sleeps now (count, earliest virtual deadline), resetting
        `timers_changed` for the next change."""
        self.timers_changed = anyio.Event()
        return self.timers, self.next_deadline()


class move_on_after:
    """anyio.move_on_after, `seconds` measured on `clock`: on a VirtualClock a timer on it
    cancels the scope (so a held clock never times out, a fast one sooner); on any other clock
    anyio's own (the host's time, and no task per scope on a hot path)."""

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._timed = isinstance(clock, VirtualClock) and seconds != math.inf
        self._scope = anyio.CancelScope() if self._timed else anyio.move_on_after(seconds)
        self._group: anyio.abc.TaskGroup | None = None

    async def __aenter__(self) -> anyio.CancelScope:
        if self._timed:
            self._group = anyio.create_task_group()
            await self._group.__aenter__()
            self._group.start_soon(self._timer)
        return self._scope.__enter__()

    async def _timer(self) -> None:
        await self._clock.sleep(self._seconds)
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
