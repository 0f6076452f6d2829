"""A work queue of object keys, as client-go's util/workqueue (rate-limiting, delaying).

Contract, the same as client-go's:
- A key is in the queue at most once: adding a key that is waiting is a no-op (deduplication).
- `get()` hands a key to one worker and marks it processing; every `get()` must be paired with
  `done(key)`. A key added while it is processing is not handed out again before `done`; after
  `done` it is queued once more, so a change seen during a sync is never lost and a key is
  never processed by two workers at once.
- `add_after(key, delay)` adds the key once `delay` seconds have passed on the clock; a key
  already waiting keeps its earliest deadline. It needs `run()` (the timer) to be running.
- `add_rate_limited(key)` is `add_after` with a per-key exponential backoff (base_delay,
  doubling up to max_delay); `forget(key)` resets it once the key synced.
- `shut_down()` makes `get()` return None once the queue is empty (queued keys are still
  handed out, as client-go drains them); adds after shut_down are ignored.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Final

import anyio
import anyio.lowlevel

from kemu.component.clock import Clock

DEFAULT_BASE_DELAY: Final = 0.005
DEFAULT_MAX_DELAY: Final = 1000.0


class WorkQueue:
    def __init__(
        self,
        clock: Clock,
        *,
        name: str = "",
        base_delay: float = DEFAULT_BASE_DELAY,
        max_delay: float = DEFAULT_MAX_DELAY,
    ) -> None:
        self.name = name
        self._clock = clock
        self._base_delay = base_delay
        self._max_delay = max_delay
        self._queue: list[str] = []  # FIFO order of the keys ready to be handed out
        self._dirty: set[str] = set()  # keys that need processing (queued, or re-added)
        self._processing: set[str] = set()
        self._shutting_down = False
        self._changed = anyio.Event()
        self._waiting: dict[str, float] = {}  # key -> earliest monotonic deadline
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._timer_changed = anyio.Event()
        self._failures: dict[str, int] = {}

    # ------------------------------------------------------------ the queue

    def __len__(self) -> int:
        """How many keys are ready to be handed out."""
        return len(self._queue)

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def is_processing(self, key: str) -> bool:
        return key in self._processing

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def add(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key in self._processing:
            return  # queued again by done()
        self._queue.append(key)
        self._notify()

    async def get(self) -> str | None:
        """The next key (marked processing), or None once shut down and empty.

        Always a checkpoint, so that a worker whose syncs need no I/O cannot starve the loop.
        """
        await anyio.lowlevel.checkpoint()
        while not self._queue and not self._shutting_down:
            await self._changed.wait()
        if not self._queue:
            return None
        key = self._queue.pop(0)
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._queue.append(key)
            self._notify()

    def shut_down(self) -> None:
        self._shutting_down = True
        self._notify()
        self._timer_changed.set()

    # ------------------------------------------------------------ delays and rate limiting

    def add_after(self, key: str, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        deadline = self._clock.monotonic() + delay
        current = self._waiting.get(key)
        if current is not None and current <= deadline:
            return
        self._waiting[key] = deadline
        heapq.heappush(self._heap, (deadline, next(self._seq), key))
        self._timer_changed.set()

    def waiting(self, key: str) -> float | None:
        """The monotonic deadline of a key waiting to be added, or None."""
        return self._waiting.get(key)

    def add_rate_limited(self, key: str) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(self._max_delay, self._base_delay * 2**failures))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    def _add_due(self) -> float | None:
        """Adds every key whose deadline has come; returns the next deadline, if any."""
        now = self._clock.monotonic()
        while self._heap:
            deadline, _, key = self._heap[0]
            if self._waiting.get(key) != deadline:
                heapq.heappop(self._heap)  # superseded by an earlier deadline
                continue
            if deadline > now:
                return deadline
            heapq.heappop(self._heap)
            del self._waiting[key]
            self.add(key)
        return None

    async def run(self) -> None:
        """The timer of add_after: runs until cancelled or shut down."""
        while not self._shutting_down:
            next_deadline = self._add_due()
            changed = self._timer_changed = anyio.Event()
            if next_deadline is None:
                await changed.wait()
                continue
            async with anyio.create_task_group() as tg:

                async def timer(seconds: float) -> None:
                    await self._clock.sleep(seconds)
                    tg.cancel_scope.cancel()

                tg.start_soon(timer, next_deadline - self._clock.monotonic())
                await changed.wait()
                tg.cancel_scope.cancel()
