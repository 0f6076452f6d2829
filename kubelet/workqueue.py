"""A work queue of pod UIDs with delayed adds, as the kubelet's pod workers use.

Contract (client-go workqueue semantics): a key added while it waits is queued once; a key added
while a worker processes it is queued again after `done()`, so one key is never processed by two
workers at once and no change is missed. `add_after(key, delay)` adds the key once `delay`
seconds have passed on the injected clock (a single timer task serves every delayed key; run it
with `run_timers` in the owner's task group).
"""

from __future__ import annotations

import heapq
import itertools
import math

import anyio
from anyio.abc import TaskStatus

from kemu.component.clock import Clock


class WorkQueue:
    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._send, self._receive = anyio.create_memory_object_stream[str](math.inf)
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._timers: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._wake = anyio.Event()
        self._sleep: anyio.CancelScope | None = None

    def __len__(self) -> int:
        return len(self._dirty)

    @property
    def pending_timers(self) -> int:
        return len(self._timers)

    def add(self, key: str) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._send.send_nowait(key)

    def add_after(self, key: str, delay: float) -> None:
        if delay <= 0:
            self.add(key)
            return
        due = self._clock.monotonic() + delay
        earliest = self._timers[0][0] if self._timers else math.inf
        heapq.heappush(self._timers, (due, next(self._seq), key))
        if due < earliest:
            # The timer task sleeps until the old earliest deadline: make it look again.
            if self._sleep is not None:
                self._sleep.cancel()
            self._wake.set()

    async def get(self) -> str:
        """The next key; the caller must call `done(key)` when it has processed it."""
        key = await self._receive.receive()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._send.send_nowait(key)

    async def run_timers(
        self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Moves delayed keys into the queue when they are due; runs until cancelled."""
        task_status.started()
        while True:
            now = self._clock.monotonic()
            while self._timers and self._timers[0][0] <= now:
                _, _, key = heapq.heappop(self._timers)
                self.add(key)
            if not self._timers:
                await self._wake.wait()
                self._wake = anyio.Event()
                continue
            self._wake = anyio.Event()
            with anyio.CancelScope() as scope:
                self._sleep = scope
                await self._clock.sleep(self._timers[0][0] - now)
            self._sleep = None
