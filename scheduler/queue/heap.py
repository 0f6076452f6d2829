"""A binary heap with lookup, update and delete by key (upstream backend/heap).

The scheduling queue keeps pods in heaps ordered by a caller's `less` (activeQ: the profile's
QueueSort; backoffQ: backoff expiry) and must also find, update and remove a pod by its key when
an informer event arrives; `heapq` alone cannot do the last two in O(log n).

Items that `less` does not order (neither is less than the other) come out in the order they
were added (an update keeps an item's place among them). Upstream's heap leaves such ties to
its sift history, and ties are rare there: the activeQ's QueueSort compares timestamps taken
in nanoseconds of real time, so the pod added first is first. In virtual time every pod added
at one instant has the same timestamp, and a tie left to the heap's history depends on when
the pops came between the adds (wall time): issue #58 item 6, the order rule in
docs/virtual-time.md. Adding order is what the real clock's timestamps would have said.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class KeyedHeap(Generic[T]):
    """Items ordered by `less` (the head is the item no other is less than), one per key."""

    __slots__ = ("_added", "_index", "_items", "_key", "_keys", "_less", "_order")

    def __init__(self, key: Callable[[T], str], less: Callable[[T, T], bool]) -> None:
        self._key = key
        self._less = less
        self._items: list[T] = []
        # Each item's key, at the item's position: a swap moves keys, never computes them
        # (a pod's key is a new string each time it is asked for).
        self._keys: list[str] = []
        self._index: dict[str, int] = {}
        # Each item's place in adding order, at the item's position: the tie-break.
        self._order: list[int] = []
        self._added = itertools.count()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: str) -> bool:
        return key in self._index

    def get(self, key: str) -> T | None:
        i = self._index.get(key)
        return None if i is None else self._items[i]

    def peek(self) -> T | None:
        return self._items[0] if self._items else None

    def list(self) -> list[T]:
        """The items in no particular order."""
        return list(self._items)

    def add_or_update(self, item: T) -> None:
        """Adds `item`, or replaces the item with its key and restores the order."""
        key = self._key(item)
        i = self._index.get(key)
        if i is None:
            self._items.append(item)
            self._keys.append(key)
            self._order.append(next(self._added))
            self._index[key] = len(self._items) - 1
            self._up(len(self._items) - 1)
        else:
            self._items[i] = item
            self._fix(i)

    def pop(self) -> T:
        """Removes and returns the head; IndexError when empty."""
        if not self._items:
            raise IndexError("pop from an empty heap")
        return self._remove_at(0)

    def delete(self, key: str) -> T | None:
        """Removes the item with `key`; None when there is none."""
        i = self._index.get(key)
        return None if i is None else self._remove_at(i)

    def _remove_at(self, i: int) -> T:
        last = len(self._items) - 1
        if i != last:
            self._swap(i, last)
        item = self._items.pop()
        self._order.pop()
        del self._index[self._keys.pop()]
        if i < len(self._items):
            self._fix(i)
        return item

    def _fix(self, i: int) -> None:
        if not self._down(i):
            self._up(i)

    def _swap(self, i: int, j: int) -> None:
        items, keys, order = self._items, self._keys, self._order
        items[i], items[j] = items[j], items[i]
        keys[i], keys[j] = keys[j], keys[i]
        order[i], order[j] = order[j], order[i]
        self._index[keys[i]] = i
        self._index[keys[j]] = j

    def _before(self, i: int, j: int) -> bool:
        """The item at `i` comes out before the one at `j`: `less`, then adding order."""
        a, b = self._items[i], self._items[j]
        if self._less(a, b):
            return True
        return not self._less(b, a) and self._order[i] < self._order[j]

    def _up(self, i: int) -> None:
        while i > 0:
            parent = (i - 1) // 2
            if not self._before(i, parent):
                break
            self._swap(i, parent)
            i = parent

    def _down(self, i: int) -> bool:
        """Sifts down; True when the item moved."""
        start, n = i, len(self._items)
        while True:
            left = 2 * i + 1
            if left >= n:
                break
            child = left
            right = left + 1
            if right < n and self._before(right, left):
                child = right
            if not self._before(child, i):
                break
            self._swap(i, child)
            i = child
        return i > start
