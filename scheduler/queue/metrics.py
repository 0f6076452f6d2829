"""The scheduling queue's metrics (upstream pkg/scheduler/metrics, pkg/scheduler/metrics/metrics.go).

The queue takes any object with two prometheus metrics (the scheduler's SchedulerMetrics has
them; `QueueMetrics` makes them on its own for a queue used alone):
- `pending_pods`: Gauge `scheduler_pending_pods{queue=active|backoff|unschedulable|gated}`;
  the queue binds each child to a function, so it is read when scraped, at no cost per move;
- `queue_incoming_pods`: Counter `scheduler_queue_incoming_pods_total{queue, event}`, every
  move into a queue with the event that caused it;
- `unschedulable_pods`: Gauge `scheduler_unschedulable_pods{plugin, profile}`, the queued pods
  (not in flight) that each plugin rejected in their last attempt or gated at PreEnqueue;
- 1.37 (None before): `queued_entities`, Gauge `scheduler_queued_entities{queue, type}` (a pod
  group once, type `podgroup`; a pod alone, type `pod`), and `queue_incoming_entities`, Counter
  `scheduler_queue_incoming_entities_total{queue, event, type}`. `pending_pods` then also has
  `queue="pending"`: members waiting for their group in flight.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge

from kemu.scheduling.interface import LabelledCounter


class GaugeFunction(Protocol):
    def set_function(self, f: Callable[[], float]) -> None: ...


class LabelledGaugeFunction(Protocol):
    def labels(self, *values: str) -> GaugeFunction: ...


class UpDown(Protocol):
    def inc(self, amount: float = 1) -> None: ...

    def dec(self, amount: float = 1) -> None: ...


class LabelledGauge(Protocol):
    def labels(self, *values: str) -> UpDown: ...


class QueueMetricsSink(Protocol):
    @property
    def pending_pods(self) -> LabelledGaugeFunction: ...

    @property
    def queue_incoming_pods(self) -> LabelledCounter: ...

    @property
    def unschedulable_pods(self) -> LabelledGauge: ...

    @property
    def queued_entities(self) -> LabelledGaugeFunction | None: ...

    @property
    def queue_incoming_entities(self) -> LabelledCounter | None: ...


class QueueMetrics:
    """The queue's metrics on `registry` (None: unregistered, for tests)."""

    def __init__(self, registry: CollectorRegistry | None) -> None:
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            ["queue"],
            registry=registry,
        )
        self.queue_incoming_pods = Counter(
            "scheduler_queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=registry,
        )
        self.unschedulable_pods = Gauge(
            "scheduler_unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name. A pod will "
            "increment the gauge for all plugins that caused it to not schedule and so this "
            "metric have meaning only when broken down by plugin.",
            ["plugin", "profile"],
            registry=registry,
        )
        self.queued_entities: Gauge | None = None
        self.queue_incoming_entities: Counter | None = None
