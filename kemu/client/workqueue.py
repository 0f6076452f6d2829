"""A work queue of object keys, as client-go's util/workqueue (rate-limiting, delaying): the one
queue of every kemu control loop (the controller-manager's controllers, the kubelet's pod
workers).

Contract, the same as client-go's:
- A key is in the queue at most once: adding a key that is waiting is a no-op (deduplication).
  Keys are handed out in the order they were (first) added.
- `get()` hands a key to one worker and marks it processing; every `get()` must be paired with
  `done(key)`. A key added while it is processing is not handed out again before `done`; after
  `done` it is queued once more, so a change seen during a sync is never lost and a key is
  never processed by two workers at once.
- `add_after(key, delay)` adds the key once `delay` seconds have passed on the clock; a key
  already waiting keeps its earliest deadline. It needs `run()` (the timer) to be running in
  the owner's task group.
- `add_rate_limited(key)` is `add_after` with a per-key exponential backoff (base_delay,
  doubling up to max_delay); `forget(key)` resets it once the key synced.
- `shut_down()` makes `get()` return None once the queue is empty (queued keys are still
  handed out, so workers drain them as client-go's do); adds after shut_down are ignored, and
  `run()` returns.

One waiting `get()` is woken per key added, so that many workers on one queue do not all wake
for every key. Time goes through the injected clock only.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from typing import Final

import anyio
import anyio.lowlevel
from anyio.abc import TaskStatus

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
        self._queue: deque[str] = deque()  # the keys ready to be handed out, in order
        self._dirty: set[str] = set()  # keys that need processing (queued, or re-added)
        self._processing: set[str] = set()
        self._getters: deque[anyio.Event] = deque()  # get() calls waiting for a key
        self._shutting_down = False
        self._waiting: dict[str, float] = {}  # key -> its earliest monotonic deadline
        self._heap: list[tuple[float, int, str]] = []  # may hold superseded deadlines
        self._seq = itertools.count()
        self._timer: anyio.CancelScope | None = None  # the timer's current sleep
        self._timer_deadline: float | None = None  # what that sleep waits for (None: a change)
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

    def add(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:  # else queued again by done()
            self._push(key)

    async def get(self) -> str | None:
        """The next key (marked processing), or None once shut down and empty.

        Always a checkpoint, so that a worker whose syncs need no I/O cannot starve the loop.
        """
        await anyio.lowlevel.checkpoint()
        while not self._queue and not self._shutting_down:
            woken = anyio.Event()
            self._getters.append(woken)
            try:
                await woken.wait()
            except BaseException:
                # Cancelled: a key this getter was woken for goes to the next one.
                if woken.is_set():
                    self._wake_one()
                else:
                    self._getters.remove(woken)
                raise
        if not self._queue:
            return None
        key = self._queue.popleft()
        self._processing.add(key)
        self._dirty.discard(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._push(key)

    def shut_down(self) -> None:
        self._shutting_down = True
        while self._getters:
            self._getters.popleft().set()
        self._cancel_timer()

    def _push(self, key: str) -> None:
        self._queue.append(key)
        self._wake_one()

    def _wake_one(self) -> None:
        if self._getters:
            self._getters.popleft().set()

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
        if self._timer_deadline is None or deadline < self._timer_deadline:
            self._cancel_timer()  # it sleeps too long: make it look again

    def waiting(self, key: str) -> float | None:
        """The monotonic deadline of a key waiting to be added, or None."""
        return self._waiting.get(key)

    @property
    def pending_timers(self) -> int:
        """How many keys wait for their delay."""
        return len(self._waiting)

    def add_rate_limited(self, key: str) -> float:
        """Adds the key after its backoff; returns that delay (for the caller's log)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        delay: float = min(self._max_delay, self._base_delay * 2.0**failures)
        self.add_after(key, delay)
        return delay

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    def num_requeues(self, key: str) -> int:
        return self._failures.get(key, 0)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

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

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The timer of add_after: runs until cancelled or shut down."""
        task_status.started()
        while not self._shutting_down:
            deadline = self._add_due()
            # add_after and shut_down cancel this scope (only it) to make the timer look again.
            with anyio.CancelScope() as self._timer:
                self._timer_deadline = deadline
                if deadline is None:
                    await anyio.sleep_forever()
                else:
                    await self._clock.sleep(deadline - self._clock.monotonic())
            self._timer = self._timer_deadline = None
