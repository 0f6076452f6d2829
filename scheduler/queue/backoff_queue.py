"""Pods (and, at 1.37, pod groups: pod_group_entity.py) waiting out their backoff (upstream
backoff_queue.go).

A pod's backoff is `initial * 2**(attempts-1)`, capped at `max` (1, 2, 4, 8, 10, 10 s by
default), counted from its queue timestamp (the time it last came back to the queue). A pod
never attempted has no backoff. The heap is ordered by backoff expiry, ties by the queue sort.

As upstream, pods whose last attempt failed with an error (no rejecting plugin, neither
unschedulable nor pending) wait in a second heap (podErrorBackoffQ) that `pop` never takes
from: PopFromBackoffQ may only cut short the backoff of rejected pods, otherwise a pod that
keeps failing with an error (no nodes at all, a PreBind error) is retried in a busy loop when
nothing else is pending. Both heaps are flushed when their backoff completes.
"""

from __future__ import annotations

from collections.abc import Callable

from kemu.component.clock import Clock
from kemu.scheduling.interface import QueuedPodInfo
from scheduler.queue.heap import KeyedHeap
from scheduler.queue.pod_group_entity import QueuedPodGroupInfo, entity_backoff


def queued_key(qpi: QueuedPodInfo) -> str:
    """A queued entity's key in the queue's heaps: a pod's "namespace/name", a pod group's
    "podgroup/namespace/name" (1.37)."""
    if type(qpi) is QueuedPodGroupInfo:
        return qpi.key
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
        self._heap: KeyedHeap[QueuedPodInfo] = KeyedHeap(queued_key, self._less)
        self._errors: KeyedHeap[QueuedPodInfo] = KeyedHeap(queued_key, self._less_expiry)

    def duration(self, qpi: QueuedPodInfo) -> float:
        """The backoff a pod gets after `qpi.attempts` attempts; a pod group (1.37), after its
        failed attempts, with a longer cap (pod_group_entity.entity_backoff)."""
        if type(qpi) is QueuedPodGroupInfo:
            return entity_backoff(qpi.backoff_count(), len(qpi), self.initial, self.maximum)
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

    def _less_expiry(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return self.expiry(a) < self.expiry(b)

    def __len__(self) -> int:
        return len(self._heap) + len(self._errors)

    def __contains__(self, key: str) -> bool:
        return key in self._heap or key in self._errors

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._heap.get(key) or self._errors.get(key)

    def add(self, qpi: QueuedPodInfo) -> None:
        """Adds or updates the pod: in the error heap when nothing rejected it (an error)."""
        key = queued_key(qpi)
        # (a pod group's own rejecting plugins stay empty: it always waits in the error heap,
        # as upstream's backoffQueue.add does with an entity that has none)
        if not qpi.unschedulable_plugins and not qpi.pending_plugins:
            self._heap.delete(key)
            self._errors.add_or_update(qpi)
        else:
            self._errors.delete(key)
            self._heap.add_or_update(qpi)

    def delete(self, key: str) -> QueuedPodInfo | None:
        found = self._heap.delete(key)
        return found if found is not None else self._errors.delete(key)

    def poppable(self) -> bool:
        """Whether `pop` has a pod to return (a rejected one)."""
        return len(self._heap) > 0

    def pop(self) -> QueuedPodInfo:
        """The rejected pod whose backoff ends first, even if it has not ended
        (PopFromBackoffQ); never a pod that failed with an error. IndexError when there is
        none (see `poppable`)."""
        return self._heap.pop()

    def next_expiry(self) -> float | None:
        """The monotonic time the first backoff ends (None: no pod backs off)."""
        heads = [h for h in (self._heap.peek(), self._errors.peek()) if h is not None]
        return min((self.expiry(h) for h in heads), default=None)

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        out: list[QueuedPodInfo] = []
        for heap in (self._heap, self._errors):
            while (head := heap.peek()) is not None and not self.is_backing_off(head):
                out.append(heap.pop())
        return out

    def list(self) -> list[QueuedPodInfo]:
        return self._heap.list() + self._errors.list()
