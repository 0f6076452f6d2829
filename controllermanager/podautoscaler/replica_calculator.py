"""The replica count for a resource utilization target (upstream
pkg/controller/podautoscaler/replica_calculator.go GetResourceReplicas with groupPods,
calculatePodRequests and metrics.GetResourceUtilizationRatio). Pure: the pods, their usage and
the time are given.

Usage is what kemu's kubelets simulate (kemu.machinery.usage.pod_usage), the figures
metrics.k8s.io serves for `kubectl top`; a pod has metrics while it is bound and Running, as
metrics-server reports the pods a kubelet runs."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Invalid
from kemu.machinery.quantity import parse_quantity
from kemu.machinery.usage import pod_usage

TOLERANCE: Final = 0.1
"""--horizontal-pod-autoscaler-tolerance."""
CPU_INITIALIZATION_PERIOD: Final = 300.0
"""--horizontal-pod-autoscaler-cpu-initialization-period (5 min)."""
INITIAL_READINESS_DELAY: Final = 30.0
"""--horizontal-pod-autoscaler-initial-readiness-delay."""
METRIC_WINDOW: Final = 15.0
"""The window of a PodMetrics (metrics-server's --metric-resolution)."""


@dataclass(frozen=True)
class CalculatorOptions:
    """What upstream's ReplicaCalculator is built with (NewReplicaCalculator: the
    controller-manager's --horizontal-pod-autoscaler-tolerance, -cpu-initialization-period
    and -initial-readiness-delay)."""

    tolerance: float = TOLERANCE
    cpu_initialization_period: float = CPU_INITIALIZATION_PERIOD
    initial_readiness_delay: float = INITIAL_READINESS_DELAY


DEFAULT_OPTIONS: Final = CalculatorOptions()


class MetricsError(Exception):
    """The replica count cannot be computed (upstream's errors, same messages)."""


@dataclass(frozen=True)
class ResourceReplicas:
    replicas: int
    utilization: int
    """The current average utilization, percent of the requests."""
    raw_average: int
    """The average usage per pod with metrics (milli-cores for cpu, bytes for memory)."""


def _seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def has_metrics(pod: types_pb2.Pod) -> bool:
    return bool(pod.spec.node_name) and pod.status.phase == "Running"


def pod_metrics(
    pods: Sequence[types_pb2.Pod], resource: str, container: str = ""
) -> dict[str, int]:
    """Each pod's usage of `resource` (one container's with `container`), for the pods that
    have metrics."""
    out: dict[str, int] = {}
    for pod in pods:
        if not has_metrics(pod):
            continue
        usage = [u for u in pod_usage(pod) if not container or u.name == container]
        if container and not usage:
            continue
        out[pod.metadata.name] = sum(
            u.cpu_millis if resource == "cpu" else u.memory_bytes for u in usage
        )
    return out


def _amount(resource: str, text: str) -> int:
    q = parse_quantity(text)
    return q.milli_value() if resource == "cpu" else q.value()


def pod_requests(
    pods: Sequence[types_pb2.Pod], resource: str, container: str = ""
) -> dict[str, int]:
    """calculatePodRequests: each pod's containers' requests of `resource`; a container
    without one is an error."""
    out: dict[str, int] = {}
    for pod in pods:
        total = 0
        for c in pod.spec.containers:
            if container and c.name != container:
                continue
            text = c.resources.requests.get(resource)
            if text is None:
                raise MetricsError(
                    f"missing request for {resource} in container {c.name} of Pod "
                    f"{pod.metadata.name}"
                )
            try:
                total += _amount(resource, text)
            except Invalid as e:
                raise MetricsError(str(e)) from e
        out[pod.metadata.name] = total
    return out


def _ready_condition(pod: types_pb2.Pod) -> types_pb2.PodCondition | None:
    return next((c for c in pod.status.conditions if c.type == "Ready"), None)


def group_pods(
    pods: Sequence[types_pb2.Pod],
    metrics: Mapping[str, int],
    resource: str,
    now: float,
    options: CalculatorOptions = DEFAULT_OPTIONS,
) -> tuple[int, set[str], set[str], set[str]]:
    """groupPods: (ready pods with metrics, unready, missing, ignored)."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod.metadata.name
        if pod.metadata.HasField("deletion_timestamp") or pod.status.phase == "Failed":
            ignored.add(name)
            continue
        if pod.status.phase == "Pending":
            unready.add(name)
            continue
        if name not in metrics:
            missing.add(name)
            continue
        if resource == "cpu":
            cond = _ready_condition(pod)
            if cond is None or not pod.status.HasField("start_time"):
                unready.add(name)
                continue
            start = _seconds(pod.status.start_time)
            transition = _seconds(cond.last_transition_time)
            if start + options.cpu_initialization_period > now:
                # still within its initialisation: a sample taken before it became ready
                # is not counted
                is_unready = cond.status == "False" or now - METRIC_WINDOW < transition
            else:
                is_unready = (
                    cond.status == "False" and start + options.initial_readiness_delay > transition
                )
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def utilization_ratio(
    metrics: Mapping[str, int], requests: Mapping[str, int], target: int
) -> tuple[float, int, int]:
    """GetResourceUtilizationRatio: (ratio to the target, utilization %, raw average)."""
    metrics_total = requests_total = entries = 0
    for name, value in metrics.items():
        if name not in requests:
            continue
        metrics_total += value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise MetricsError("no metrics returned matched known pods")
    utilization = metrics_total * 100 // requests_total
    return utilization / target, utilization, metrics_total // entries


def _within(ratio: float, tolerance: float) -> bool:
    return abs(1.0 - ratio) <= tolerance


def resource_replicas(
    current_replicas: int,
    target_utilization: int,
    resource: str,
    pods: Sequence[types_pb2.Pod],
    now: float,
    *,
    container: str = "",
    options: CalculatorOptions = DEFAULT_OPTIONS,
) -> ResourceReplicas:
    """GetResourceReplicas: the replica count that brings the average utilization of the
    pods' `resource` to `target_utilization` percent, with upstream's rules for unready pods
    (counted at 0 usage when scaling up) and pods without metrics (at 100% of their request,
    or the target if higher, when scaling down; at 0 when scaling up), the tolerance, and
    no scaling against the direction the raw ratio asks."""
    metrics = pod_metrics(pods, resource, container)
    if not metrics:  # (metrics-server has none: no pod of the selector runs)
        raise MetricsError(
            f"unable to get metrics for resource {resource}: no metrics returned from resource "
            "metrics API"
        )
    if not pods:
        raise MetricsError("no pods returned by selector while calculating replica count")
    ready, unready, missing, ignored = group_pods(pods, metrics, resource, now, options)
    for name in unready | ignored:
        metrics.pop(name, None)
    requests = pod_requests(pods, resource, container)
    if not metrics:
        raise MetricsError("did not receive metrics for targeted pods (pods might be unready)")
    ratio, utilization, raw = utilization_ratio(metrics, requests, target_utilization)
    scale_up_with_unready = bool(unready) and ratio > 1.0
    if not scale_up_with_unready and not missing:
        if _within(ratio, options.tolerance):
            return ResourceReplicas(current_replicas, utilization, raw)
        return ResourceReplicas(math.ceil(ratio * ready), utilization, raw)
    if missing:
        if ratio < 1.0:
            fallback = max(100, target_utilization)
            for name in missing:
                metrics[name] = requests[name] * fallback // 100
        else:
            for name in missing:
                metrics[name] = 0
    if scale_up_with_unready:
        for name in unready:
            metrics[name] = 0
    new_ratio, _, _ = utilization_ratio(metrics, requests, target_utilization)
    if (
        _within(new_ratio, options.tolerance)
        or (ratio < 1.0 < new_ratio)
        or (ratio > 1.0 > new_ratio)
    ):
        return ResourceReplicas(current_replicas, utilization, raw)
    new_replicas = math.ceil(new_ratio * len(metrics))
    if (new_ratio < 1.0 and new_replicas > current_replicas) or (
        new_ratio > 1.0 and new_replicas < current_replicas
    ):
        return ResourceReplicas(current_replicas, utilization, raw)
    return ResourceReplicas(new_replicas, utilization, raw)
