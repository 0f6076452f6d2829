"""The retry list of Deferred resizes: its order, its triggers and its timer (upstream
pkg/kubelet/allocation/allocation_manager.go: podsWithPendingResizes, sortPendingResizes,
RetryPendingResizes and the ticker of Run).

Upstream keeps one list per kubelet, sorted on every push (`retry_key`), and walks all of it
whenever room may have appeared. The walk runs on events (the `TRIGGER_*` values, which are
the retry_trigger label of kubelet_pod_deferred_resize_accepted_total) and on a timer: the
timer first fires `INITIAL_RETRY_DELAY` (30 s) after start, and every walk, whatever its
trigger, resets it to `retry_period` (3 minutes): a node whose events keep retrying never
needs the timer, a quiet one is retried 3 minutes after its last walk. Unlike the event
triggers, the timer is the only thing that retries a resize whose room came from outside the
kubelet's own pods (none in kemu: allocatable does not change while a kubelet runs).

kemu runs one timer per node (`RetryTimer`), since a hollow kubelet process is many kubelets.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.qos import GUARANTEED, compute_qos_class
from kemu.machinery.resources import DEFAULT_OPTIONS, PodResourcesOptions, kubelet_pod_requests
from kubelet.admission import CPU, MEMORY

INITIAL_RETRY_DELAY: Final = 30.0
"""Upstream's initialRetryDelay: the first periodic retry, 30 s after start."""
DEFAULT_RETRY_PERIOD: Final = 180.0
"""Upstream's retryDelay: 3 minutes after the last retry, whatever triggered it."""

# retry_trigger values of upstream's kubelet_pod_deferred_resize_accepted_total.
TRIGGER_PODS_ADDED: Final = "pods_added"
TRIGGER_PODS_REMOVED: Final = "pods_removed"
TRIGGER_POD_UPDATED: Final = "pod_updated"
TRIGGER_POD_RESIZED: Final = "pod_resized"
TRIGGER_POD_TERMINATED: Final = "pod_terminated"
TRIGGER_PERIODIC: Final = "periodic_retry"


def increases(desired: Mapping[str, int], allocated: Mapping[str, int]) -> bool:
    """Whether a resize raises the cpu or memory request."""
    return any(desired.get(n, 0) > allocated.get(n, 0) for n in (CPU, MEMORY))


def retry_key(
    pod: types_pb2.Pod,
    allocated: Mapping[str, int],
    pending_since: float | None,
    counting: PodResourcesOptions = DEFAULT_OPTIONS,
) -> tuple[bool, int, bool, float]:
    """The order of the retry list (upstream's podsWithPendingResizes): resizes that raise no
    cpu/memory request first, then higher priority, then Guaranteed pods, then the oldest
    PodResizePending (pods without one last). `counting`: the kubelet's (its
    PodLevelResources gate: pod-level requests and the QoS class they make)."""
    # Upstream compares the spec's requests with the allocation's, neither with status.
    raises = increases(kubelet_pod_requests(pod, opts=counting), allocated)
    priority = pod.spec.priority if pod.spec.HasField("priority") else 0
    qos = compute_qos_class(pod, pod_level_resources=counting.pod_level_resources)
    guaranteed = qos == GUARANTEED
    since = pending_since if pending_since is not None else float("inf")
    return (raises, -priority, not guaranteed, since)


class RetryTimer:
    """The periodic retry deadline of each node (monotonic seconds): `start` arms every node
    `initial_delay` from now, `reset` (every walk of a node's list) re-arms it `period` from
    now, `due` lists the nodes whose deadline has passed."""

    def __init__(self, *, period: float, initial_delay: float = INITIAL_RETRY_DELAY) -> None:
        self.period = period
        # A period shorter than upstream's initial delay (tests) is used from the start.
        self.initial_delay = min(initial_delay, period)
        self._deadlines: dict[str, float] = {}

    def start(self, nodes: Iterable[str], now: float) -> None:
        for name in nodes:
            self._deadlines[name] = now + self.initial_delay

    def forget(self, node: str) -> None:
        self._deadlines.pop(node, None)

    def reset(self, node: str, now: float) -> None:
        if node in self._deadlines:
            self._deadlines[node] = now + self.period

    def deadline(self, node: str) -> float | None:
        return self._deadlines.get(node)

    def next_deadline(self) -> float | None:
        return min(self._deadlines.values(), default=None)

    def due(self, now: float) -> list[str]:
        return sorted(name for name, at in self._deadlines.items() if at <= now)
