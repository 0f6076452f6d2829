"""The scheduler's Prometheus metrics, with upstream's names (pkg/scheduler/metrics, reference
pkg/scheduler/metrics/metrics.go). One instance per process, on the component's own registry."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_SUBSYSTEM: Final = "scheduler_"


def _exponential(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class SchedulerMetrics:
    """`entities`: the queue's entity metrics (1.37: scheduler_queued_entities,
    scheduler_queue_incoming_entities_total); None before."""

    def __init__(self, registry: CollectorRegistry | None, *, entities: bool = False) -> None:
        r = registry
        self.schedule_attempts = Counter(
            _SUBSYSTEM + "schedule_attempts_total",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=r,
        )
        self.scheduling_attempt_duration = Histogram(
            _SUBSYSTEM + "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.scheduling_algorithm_duration = Histogram(
            _SUBSYSTEM + "scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds.",
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.pod_scheduling_sli_duration = Histogram(
            _SUBSYSTEM + "pod_scheduling_sli_duration_seconds",
            "E2e latency for a pod being scheduled, from the time the pod enters the queue.",
            ["attempts"],
            buckets=_exponential(0.01, 2, 20),
            registry=r,
        )
        self.pod_scheduling_attempts = Histogram(
            _SUBSYSTEM + "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            buckets=_exponential(1, 2, 5),
            registry=r,
        )
        self.framework_extension_point_duration = Histogram(
            _SUBSYSTEM + "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            buckets=_exponential(0.0001, 2, 12),
            registry=r,
        )
        self.pending_pods = Gauge(
            _SUBSYSTEM + "pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=r,
        )
        self.queue_incoming_pods = Counter(
            _SUBSYSTEM + "queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=r,
        )
        # 1.37 (ALPHA, upstream metrics.go QueuedEntities, SchedulerQueueIncomingEntities): the
        # queue's entities, a pod group counting once (`type` pod or podgroup).
        self.queued_entities: Gauge | None = None
        self.queue_incoming_entities: Counter | None = None
        if entities:
            self.queued_entities = Gauge(
                _SUBSYSTEM + "queued_entities",
                "Number of queued scheduling entities ('pod' or 'podgroup'; 'pod' stands for "
                "individual pods that are not members of any podgroup) by the queue type.",
                ["queue", "type"],
                registry=r,
            )
            self.queue_incoming_entities = Counter(
                _SUBSYSTEM + "queue_incoming_entities_total",
                "Number of scheduling entities added to scheduling queues by event, queue "
                "type, and entity type.",
                ["queue", "event", "type"],
                registry=r,
            )
        self.unschedulable_pods = Gauge(
            _SUBSYSTEM + "unschedulable_pods",
            "The number of unschedulable pods broken down by plugin name.",
            ["plugin", "profile"],
            registry=r,
        )
        self.preemption_attempts = Counter(
            _SUBSYSTEM + "preemption_attempts_total",
            "Total preemption attempts in the cluster till now.",
            registry=r,
        )
        self.preemption_victims = Histogram(
            _SUBSYSTEM + "preemption_victims",
            "Number of selected preemption victims.",
            buckets=_exponential(1, 2, 7),
            registry=r,
        )
        self.preemption_goroutines_duration = Histogram(
            _SUBSYSTEM + "preemption_goroutines_duration_seconds",
            "Duration in seconds for running goroutines for the preemption.",
            ["result"],
            buckets=_exponential(0.01, 2, 20),
            registry=r,
        )
        self.preemption_goroutines_execution = Counter(
            _SUBSYSTEM + "preemption_goroutines_execution_total",
            "Number of preemption goroutines executed, by the result.",
            ["result"],
            registry=r,
        )
        self.nominated_pod_filter_evaluations = Histogram(
            _SUBSYSTEM + "kemu_nominated_pod_filter_evaluations",
            "kemu: nodes run through Filter in the successful cycle of a pod that had a "
            "nominated node (KEP-1923 A/B benchmark).",
            ["profile"],
            buckets=[1, 2, 5, 10, 50, 100, 250, 500, 1000, 2500, 5000],
            registry=r,
        )
        self.nominated_pod_algorithm_duration = Histogram(
            _SUBSYSTEM + "kemu_nominated_pod_scheduling_algorithm_duration_seconds",
            "kemu: scheduling algorithm latency of the successful cycle of a pod that had a "
            "nominated node (KEP-1923 A/B benchmark).",
            ["profile"],
            buckets=_exponential(0.0001, 2, 16),
            registry=r,
        )
        self.scheduling_algorithm_cpu = Counter(
            _SUBSYSTEM + "kemu_scheduling_algorithm_cpu_seconds_total",
            "kemu: CPU time of the scheduler's thread over the spans of "
            "scheduling_algorithm_duration_seconds (its count is theirs): the wall-clock "
            "figure less the time the process waited for a core. A failed cycle's span "
            "includes what other tasks ran while PostFilter awaited.",
            registry=r,
        )
        self.filter_evaluations = Counter(
            _SUBSYSTEM + "kemu_filter_evaluations_total",
            "kemu: Filter plugin evaluations (node x plugin), for the KEP-1923 A/B benchmark.",
            ["profile"],
            registry=r,
        )

    @staticmethod
    def attempts_label(attempts: int) -> str:
        return str(attempts) if attempts < 15 else "15+"


POD_GROUP_TYPE: Final = "podgroup"
COMPOSITE_POD_GROUP_TYPE: Final = "compositepodgroup"
"""The `type` label values of the pod-group metrics at 1.37: the root of the cycle, a PodGroup
or a CompositePodGroup tree (KEP-6012)."""


class PodGroupMetrics:
    """The pod-group cycle's metrics (upstream pkg/scheduler/metrics/metrics.go; registered
    only with GenericWorkload on; ALPHA, added in 1.36): attempts by result
    (scheduled, unschedulable, error, waiting_on_preemption) and profile, the attempt's
    duration (from the cycle's start to its pods handed to binding or back to the queue) and
    the algorithm's. At 1.37 each also has `type` (podgroup) and the algorithm's has
    `profile`. `labels(result, profile)` and `algorithm(profile)` give the children at the
    emulated version's label set."""

    def __init__(self, registry: CollectorRegistry | None, *, typed: bool) -> None:
        self.typed = typed
        extra = ["type"] if typed else []
        self.schedule_attempts = Counter(
            _SUBSYSTEM + "podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod groups, by the result.",
            ["result", "profile", *extra],
            registry=registry,
        )
        self.scheduling_attempt_duration = Histogram(
            _SUBSYSTEM + "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile", *extra],
            buckets=_exponential(0.001, 2, 15),
            registry=registry,
        )
        self.scheduling_algorithm_duration = Histogram(
            _SUBSYSTEM + "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            ["profile", *extra] if typed else [],
            buckets=_exponential(0.001, 2, 15),
            registry=registry,
        )

        # Topology-aware placements (KEP-5732, 1.37, ALPHA; upstream metrics.go
        # RecordGeneratedPlacements, ObservePlacementEvaluation): placements generated per
        # profile, and each placement's evaluation by result (feasible: the group fit there)
        # with its duration (buckets: kemu's choice, those of the other pod-group histograms).
        self.placements = typed
        self.generated_placements_total = Counter(
            _SUBSYSTEM + "generated_placements_total",
            "Number of candidate placements generated when scheduling pod groups, by "
            "scheduler profile.",
            ["profile"],
            registry=registry if typed else None,
        )
        self.placement_evaluations = Counter(
            _SUBSYSTEM + "placement_evaluations_total",
            "Number of candidate placements evaluated when scheduling pod groups, by result "
            "and scheduler profile. 'feasible' means the pod group fit into the placement, "
            "while 'infeasible' means it did not.",
            ["profile", "result"],
            registry=registry if typed else None,
        )
        self.placement_evaluation_duration = Histogram(
            _SUBSYSTEM + "placement_evaluation_duration_seconds",
            "Duration of a candidate placement's evaluation when scheduling pod groups, by "
            "result and scheduler profile.",
            ["result", "profile"],
            buckets=_exponential(0.001, 2, 15),
            registry=registry if typed else None,
        )

        # Workload-aware preemption (KEP-5710, ALPHA): its attempts by the PodGroupPostFilter's
        # status code, and how many pods each successful one preempted.
        self.workload_preemption_attempts = Counter(
            _SUBSYSTEM + "workload_preemption_attempts_total",
            "Number of workload-aware preemption attempts, by the result.",
            ["result"],
            registry=registry,
        )
        self.workload_preemption_victims = Histogram(
            _SUBSYSTEM + "workload_preemption_victims",
            "Number of pods selected as victims by workload-aware preemption.",
            buckets=_exponential(1, 2, 10),
            registry=registry,
        )

    def generated_placements(self, profile: str, count: int) -> None:
        if self.placements:
            self.generated_placements_total.labels(profile).inc(count)

    def placement_evaluation(self, feasible: bool, profile: str, seconds: float) -> None:
        if self.placements:
            result = "feasible" if feasible else "infeasible"
            self.placement_evaluations.labels(profile, result).inc()
            self.placement_evaluation_duration.labels(result, profile).observe(seconds)

    def workload_preemption(self, result: str, victims: int) -> None:
        self.workload_preemption_attempts.labels(result).inc()
        if result == "Success":
            self.workload_preemption_victims.observe(victims)

    def attempt(
        self, result: str, profile: str, seconds: float, group_type: str = POD_GROUP_TYPE
    ) -> None:
        values = (result, profile, group_type) if self.typed else (result, profile)
        self.schedule_attempts.labels(*values).inc()
        self.scheduling_attempt_duration.labels(*values).observe(seconds)

    def algorithm(self, profile: str, seconds: float, group_type: str = POD_GROUP_TYPE) -> None:
        if self.typed:
            self.scheduling_algorithm_duration.labels(profile, group_type).observe(seconds)
        else:
            self.scheduling_algorithm_duration.observe(seconds)


class CounterChild(Protocol):
    """A labelled prometheus Counter's child."""

    def inc(self, amount: float = 1) -> None: ...


def fast_inc(child: CounterChild) -> Callable[[float], None]:
    """`child.inc` for amounts known to be non-negative, done directly on the child's value
    object (prometheus_client's `inc` checks the sign and whether the metric is observable,
    two Python frames, in the scheduling cycle's span). Any other counter keeps its own."""
    value = getattr(child, "_value", None)
    inc = getattr(value, "inc", None)
    if isinstance(child, Counter) and callable(inc):
        out: Callable[[float], None] = inc
        return out
    return child.inc
