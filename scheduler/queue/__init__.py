"""The scheduling queue: activeQ, backoffQ, the unschedulable pool, queueing hints (the nominator
it holds is kemu.scheduling.nominator)."""

from scheduler.queue.hints import (
    QueueingHintFunction,
    QueueingHintMap,
    QueueingHintMapPerProfile,
    build_queueing_hint_map,
)
from scheduler.queue.metrics import QueueMetrics
from scheduler.queue.scheduling_queue import PriorityQueue, QueueOptions, priority_sort_less

__all__ = [
    "PriorityQueue",
    "QueueOptions",
    "QueueMetrics",
    "QueueingHintFunction",
    "QueueingHintMap",
    "QueueingHintMapPerProfile",
    "build_queueing_hint_map",
    "priority_sort_less",
]
