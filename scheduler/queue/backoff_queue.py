"""Pods waiting out their backoff (upstream backoff_queue.go).

A pod's backoff is `initial * 2**(attempts-1)`, capped at `max` (1, 2, 4, 8, 10, 10 s by
default), counted from its queue timestamp (the time it last came back to the queue). A pod
never attempted has no backoff. The heap is ordered by backoff expiry, ties by the queue sort.
"""

from __future__ import annotations

from collections.abc import Callable

from kemu.component.clock import Clock
from scheduler.framework.interface import QueuedPodInfo
from scheduler.queue.heap import KeyedHeap


def _key(qpi: QueuedPodInfo) -> str:
    return qpi.pod_info.key


class BackoffQueue:
    def __init__(
        self,
        clock: Clock,
        initial: float,
        maximum: float,
        less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
    ) -> None:
        self._clock = clock
        self.initial = initial
        self.maximum = maximum
        self._sort_less = less
        self._heap: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._less)

    def duration(self, qpi: QueuedPodInfo) -> float:
        """The backoff a pod gets after `qpi.attempts` attempts."""
        if qpi.attempts == 0 or self.initial <= 0:
            return 0.0
        d = self.initial
        for _ in range(1, qpi.attempts):
            if d > self.maximum - d:
                return self.maximum
            d += d
        return min(d, self.maximum)

    def expiry(self, qpi: QueuedPodInfo) -> float:
        """The monotonic time the pod's backoff ends."""
        return qpi.timestamp + self.duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self.expiry(qpi) > self._clock.monotonic()

    def _less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ea, eb = self.expiry(a), self.expiry(b)
        if ea != eb:
            return ea < eb
        return self._sort_less(a, b)

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, key: str) -> bool:
        return key in self._heap

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._heap.get(key)

    def add(self, qpi: QueuedPodInfo) -> None:
        self._heap.add_or_update(qpi)

    def delete(self, key: str) -> QueuedPodInfo | None:
        return self._heap.delete(key)

    def pop(self) -> QueuedPodInfo:
        """The pod whose backoff ends first, even if it has not ended (PopFromBackoffQ)."""
        return self._heap.pop()

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        out: list[QueuedPodInfo] = []
        while (head := self._heap.peek()) is not None and not self.is_backing_off(head):
            out.append(self._heap.pop())
        return out

    def list(self) -> list[QueuedPodInfo]:
        return self._heap.list()
