from __future__ import annotations

import random

import pytest

from scheduler.queue.heap import KeyedHeap


def _heap() -> KeyedHeap[tuple[str, int]]:
    return KeyedHeap(lambda item: item[0], lambda a, b: a[1] < b[1])


def test_pops_in_order_after_random_adds_updates_and_deletes() -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    heap = _heap()
    reference: dict[str, int] = {}
    for _ in range(500):
        key = f"k{rng.randrange(40)}"
        op = rng.random()
        if op < 0.6:
            value = rng.randrange(1000)
            heap.add_or_update((key, value))
            reference[key] = value
        elif op < 0.8:
            assert heap.delete(key) == ((key, reference.pop(key)) if key in reference else None)
        elif reference:
            head = heap.pop()
            assert head[1] == min(reference.values()), f"seed {seed}"
            del reference[head[0]]
        assert len(heap) == len(reference), f"seed {seed}"
        # Every key finds its item: the index follows the swaps.
        assert all(heap.get(k) == (k, v) for k, v in reference.items()), f"seed {seed}"
    drained = [heap.pop()[1] for _ in range(len(heap))]
    assert drained == sorted(reference.values()), f"seed {seed}"


def test_get_peek_and_contains() -> None:
    heap = _heap()
    assert heap.peek() is None
    heap.add_or_update(("a", 5))
    heap.add_or_update(("b", 3))
    assert heap.peek() == ("b", 3)
    assert "a" in heap and "c" not in heap
    assert heap.get("a") == ("a", 5)
    heap.add_or_update(("a", 1))
    assert heap.peek() == ("a", 1)
    with pytest.raises(IndexError):
        _heap().pop()


def test_ties_come_out_in_adding_order_whatever_the_pops_between() -> None:
    """Issue #58 item 6: in virtual time pods added at one instant have one timestamp; which
    comes out first must not depend on when pops came between the adds (wall time), nor on an
    update (it keeps its place among its equals)."""
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    heap = _heap()
    reference: dict[str, tuple[int, int]] = {}  # key -> (value, adding order)
    for i in range(300):
        op = rng.random()
        if op < 0.5:
            key = f"k{i}"
            value = rng.choice((1, 2))
            heap.add_or_update((key, value))
            reference[key] = (value, i)
        elif op < 0.7 and reference:
            key = rng.choice(sorted(reference))
            heap.add_or_update((key, reference[key][0]))
        elif reference:
            head = heap.pop()[0]
            expected = min(reference, key=lambda k: reference[k])
            assert head == expected, f"seed {seed}"
            del reference[head]
