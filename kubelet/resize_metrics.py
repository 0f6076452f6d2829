"""The kubelet's in-place resize metrics (KEP-1287 §Instrumentation, upstream
pkg/kubelet/metrics): requested resizes per container resource, infeasible resizes, Deferred
resizes accepted by a retry (by trigger), and the pending and in-progress gauges, computed at
scrape time."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

from prometheus_client import CollectorRegistry, Counter, Gauge

from kemu.machinery.quantity import to_int
from kubelet.admission import CPU, MEMORY
from kubelet.runtime import PodAllocation


class ResizeMetrics:
    """Upstream's kubelet resize metrics (KEP-1287 §Instrumentation) on `registry`; the
    gauges are computed at scrape time by `pending` / `in_progress` callbacks."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        pending: Callable[[str], int],
        reasons: Iterable[str],
        in_progress: Callable[[], int],
    ) -> None:
        self.requested = Counter(
            "kubelet_container_requested_resizes_total",
            "Number of requested resizes, counted at the container level.",
            ["resource", "requirement", "operation"],
            registry=registry,
        )
        self.infeasible = Counter(
            "kubelet_pod_infeasible_resizes_total",
            "Number of infeasible resizes for pods, by reason.",
            ["reason_detail"],
            registry=registry,
        )
        self.deferred_accepted = Counter(
            "kubelet_pod_deferred_resize_accepted_total",
            "Number of previously deferred resizes accepted, by what triggered the retry.",
            ["retry_trigger"],
            registry=registry,
        )
        gauge = Gauge(
            "kubelet_pod_pending_resizes",
            "Number of pending resizes for pods.",
            ["reason"],
            registry=registry,
        )
        for reason in reasons:
            gauge.labels(reason.lower()).set_function(functools.partial(_as_float, pending, reason))
        Gauge(
            "kubelet_pod_in_progress_resizes",
            "Number of in-progress resizes for pods.",
            registry=registry,
        ).set_function(lambda: float(in_progress()))

    def resize_accepted(self, old: PodAllocation, new: PodAllocation) -> None:
        for name in sorted(set(old) | set(new)):
            before, after = old.get(name), new.get(name)
            for requirement in ("requests", "limits"):
                was = dict(getattr(before, requirement, {}) or {})
                now = dict(getattr(after, requirement, {}) or {})
                for resource in (CPU, MEMORY):
                    operation = _operation(resource, was.get(resource), now.get(resource))
                    if operation:
                        self.requested.labels(resource, requirement, operation).inc()


def _as_float(count: Callable[[str], int], reason: str) -> float:
    return float(count(reason))


def _operation(resource: str, before: str | None, after: str | None) -> str:
    if before == after:
        return ""
    if before is None:
        return "add"
    if after is None:
        return "remove"
    return "increase" if to_int(resource, after) > to_int(resource, before) else "decrease"
