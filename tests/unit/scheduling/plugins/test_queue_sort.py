from __future__ import annotations

import functools

from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.plugins import queue_sort
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle


def _qpi(name: str, priority: int | None, timestamp: float) -> QueuedPodInfo:
    b = make_pod(name)
    if priority is not None:
        b.priority(priority)
    return QueuedPodInfo(PodInfo(b.obj()), timestamp=timestamp)


def test_higher_priority_comes_first_whatever_the_queue_time() -> None:
    pl = queue_sort.new({}, FakeHandle())
    high, low = _qpi("high", 100, 2.0), _qpi("low", 10, 1.0)
    assert pl.less(high, low)
    assert not pl.less(low, high)


def test_equal_priority_is_ordered_by_earlier_queue_time() -> None:
    pl = queue_sort.new({}, FakeHandle())
    early, late = _qpi("early", 5, 1.0), _qpi("late", 5, 2.0)
    assert pl.less(early, late)
    assert not pl.less(late, early)
    assert not pl.less(early, early)


def test_unset_priority_counts_as_zero() -> None:
    pl = queue_sort.new({}, FakeHandle())
    unset, zero, negative = _qpi("u", None, 2.0), _qpi("z", 0, 1.0), _qpi("n", -1, 0.0)
    assert pl.less(zero, unset)
    assert pl.less(unset, negative)


def test_sorting_with_less_gives_upstream_order() -> None:
    pl = queue_sort.new({}, FakeHandle())
    pods = [_qpi("a", 1, 3.0), _qpi("b", 10, 5.0), _qpi("c", 1, 1.0), _qpi("d", 10, 4.0)]

    def cmp(x: QueuedPodInfo, y: QueuedPodInfo) -> int:
        return -1 if pl.less(x, y) else (1 if pl.less(y, x) else 0)

    ordered = sorted(pods, key=functools.cmp_to_key(cmp))
    assert [q.pod.metadata.name for q in ordered] == ["d", "b", "c", "a"]
    assert pl.name() == "PrioritySort" == queue_sort.NAME
