"""In-place pod resize, the kubelet's half (KEP-1287; upstream pkg/kubelet/allocation).

A pod has three sizes: desired (its spec, changed through the pods/resize subresource),
allocated (what the kubelet admitted it with, checkpointed) and actual (what its containers run
with, status.containerStatuses[*].resources). When desired differs from allocated the kubelet
decides (`decide`):

* Infeasible: the desired cpu or memory request is more than the node's allocatable, so it can
  never fit: "Node didn't have enough capacity: memory, requested: X, capacity: Y";
* Deferred: it does not fit now next to every *other* active pod counted at what it holds, the
  larger of its allocated and actual requests (never at a pending desired size); the larger
  is taken per container before 1.37 and of the pod's sums from 1.37, as the emulated
  version's PodRequests (kemu.machinery.resources, `per_container_max`);
* accepted: the allocation becomes the desired size, and the containers are resized after a
  simulated actuation delay.

Deferred pods wait in a retry list, walked in `retry_order` whenever room may have appeared
(a pod removed or terminated, a resize actuated, a pod updated, and periodically).

Resources are kemu's exact integers (milli-CPU, bytes); see kubelet.admission.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge

from kemu.api.v1 import types_pb2
from kemu.machinery.qos import GUARANTEED, compute_qos_class
from kemu.machinery.quantity import to_int
from kemu.machinery.resources import max_resources, pod_requests
from kubelet.admission import (
    CPU,
    MEMORY,
    PodAllocation,
    allocation_from_spec,
    fits,
    used_by,
)

POD_RESIZE_PENDING: Final = "PodResizePending"
POD_RESIZE_IN_PROGRESS: Final = "PodResizeInProgress"
POD_RESIZE_PREEMPTION_DISABLED: Final = "PodResizePreemptionDisabled"
REASON_PREEMPTION_DISABLED_BY_NODE_POLICY: Final = "PreemptionDisabledByNodePolicy"

EVENT_RESIZE_STARTED: Final = "ResizeStarted"
EVENT_RESIZE_DEFERRED: Final = "ResizeDeferred"
EVENT_RESIZE_INFEASIBLE: Final = "ResizeInfeasible"

DEFAULT_ACTUATION_DELAY: Final = 0.5
DEFAULT_RETRY_PERIOD: Final = 180.0
"""Upstream retries pending resizes every 3 minutes besides the event triggers."""

# retry_trigger values of upstream's kubelet_pod_deferred_resize_accepted_total.
TRIGGER_PODS_REMOVED: Final = "pods_removed"
TRIGGER_POD_UPDATED: Final = "pod_updated"
TRIGGER_POD_RESIZED: Final = "pod_resized"
TRIGGER_POD_TERMINATED: Final = "pod_terminated"
TRIGGER_PERIODIC: Final = "periodic_retry"


class Pending(enum.StrEnum):
    DEFERRED = "Deferred"
    INFEASIBLE = "Infeasible"


@dataclass(frozen=True)
class Decision:
    """None `pending`: the resize is accepted."""

    pending: Pending | None
    message: str = ""


ACCEPTED: Final = Decision(None)


def desired_allocation(pod: types_pb2.Pod) -> PodAllocation:
    return allocation_from_spec(pod)


def decide(
    desired: Mapping[str, int],
    own_held: Mapping[str, int] | None,
    others: Iterable[Mapping[str, int]],
    allocatable: Mapping[str, int],
) -> Decision:
    """The fit of a resize to `desired` requests, next to the other active pods' requests
    (what each holds: kemu.machinery.resources.kubelet_pod_requests of its allocated and
    actual sizes, by the emulated version's rule); the pod itself counts at the larger of
    desired and what it holds (`own_held`)."""
    for name in (MEMORY, CPU):  # memory is reported first, as upstream
        wanted = desired.get(name, 0)
        capacity = allocatable.get(name, 0)
        if wanted > capacity:
            return Decision(
                Pending.INFEASIBLE,
                f"Node didn't have enough capacity: {name}, requested: {wanted}, "
                f"capacity: {capacity}",
            )
    used, count = used_by(others)
    result = fits(max_resources(desired, own_held or {}), used, count, allocatable)
    if not result.admit:
        return Decision(Pending.DEFERRED, result.message)
    return ACCEPTED


def increases(desired: Mapping[str, int], allocated: Mapping[str, int]) -> bool:
    """Whether a resize raises the cpu or memory request."""
    return any(desired.get(n, 0) > allocated.get(n, 0) for n in (CPU, MEMORY))


def retry_key(
    pod: types_pb2.Pod, allocated: Mapping[str, int], pending_since: float | None
) -> tuple[bool, int, bool, float]:
    """The order of the retry list (upstream's podsWithPendingResizes): resizes that raise no
    cpu/memory request first, then higher priority, then Guaranteed pods, then the oldest
    PodResizePending (pods without one last)."""
    # Upstream compares the spec's requests with the allocation's, neither with status.
    raises = increases(pod_requests(pod), allocated)
    priority = pod.spec.priority if pod.spec.HasField("priority") else 0
    guaranteed = compute_qos_class(pod) == GUARANTEED
    since = pending_since if pending_since is not None else float("inf")
    return (raises, -priority, not guaranteed, since)


class ResizeMetrics:
    """Upstream's kubelet resize metrics (KEP-1287 §Instrumentation) on `registry`; the
    gauges are computed at scrape time by `pending` / `in_progress` callbacks."""

    def __init__(
        self,
        registry: CollectorRegistry,
        *,
        pending: Callable[[str], int],
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
        for reason in Pending:
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
