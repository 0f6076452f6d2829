"""Pod admission: does a pod fit next to the pods this node already admitted, and in which
state does a pod that arrives on the node start (`admit_pod`, upstream's HandlePodAdditions for
one pod)?

Upstream's predicateAdmitHandler (pkg/kubelet/lifecycle/predicate.go) runs the scheduler's
resource fit against a NodeInfo of the admitted pods at their *allocated* resources. The first
failure decides: the pod count first, then cpu, memory, ephemeral-storage and extended
resources, each only when the pod requests a positive amount (extended resources the node does
not know are ignored, as upstream removes them). The pod is then rejected with reason
`OutOf<resource>` and the message of InsufficientResourceError:
"Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000", unless
its failure handler makes room first (upstream HandleAdmissionFailure: kubelet.preemption
evicts pods for a critical one).

What a pod needs is kemu.machinery.resources.kubelet_pod_requests (the scheduler's model, at
the kubelet's allocation). Resources are exact integers: milli-CPU for cpu, base units (bytes,
counts) for the rest. An allocation (kubelet.runtime.PodAllocation) maps each container name (init and app containers share
one name space) to the requests and limits the kubelet admitted it with.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import (
    DEFAULT_OPTIONS,
    PodResourcesOptions,
    is_pod_level_resources_set,
    kubelet_pod_requests,
)
from kubelet.runtime import (
    STARTUP_DELAY_ANNOTATION,
    ContainerAllocation,
    PodAllocation,
    PodRuntime,
    PodState,
    annotation_seconds,
)

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"
_NATIVE: Final = (CPU, MEMORY, EPHEMERAL_STORAGE)

REASON_PREFIX: Final = "OutOf"

ResourceList = dict[str, str]
"""A Kubernetes ResourceList: resource name -> quantity string."""


def allocation_from_spec(pod: types_pb2.Pod) -> PodAllocation:
    """The allocation a pod gets when admitted: what its spec asks for."""
    return {
        c.name: ContainerAllocation(dict(c.resources.requests), dict(c.resources.limits))
        for c in (*pod.spec.init_containers, *pod.spec.containers)
    }


def requests_of(allocation: PodAllocation) -> dict[str, Mapping[str, str]]:
    """Container name -> its requests (what kemu.machinery.resources.kubelet_pod_requests
    takes as an allocated or actual size)."""
    return {name: a.requests for name, a in allocation.items()}


def _add(total: dict[str, int], more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


@dataclass(frozen=True)
class AdmitResult:
    admit: bool
    reason: str = ""
    message: str = ""


ADMITTED: Final = AdmitResult(True)


@dataclass(frozen=True)
class InsufficientResource:
    """One resource the node lacks for a pod (upstream lifecycle.InsufficientResourceError)."""

    resource: str
    requested: int
    used: int
    capacity: int

    @property
    def amount(self) -> int:
        """How much more would have to be free (GetInsufficientAmount)."""
        return self.requested - (self.capacity - self.used)

    def result(self) -> AdmitResult:
        return AdmitResult(
            False,
            f"{REASON_PREFIX}{self.resource}",
            f"Node didn't have enough resource: {self.resource}, requested: {self.requested}, "
            f"used: {self.used}, capacity: {self.capacity}",
        )


def used_by(admitted: Iterable[Mapping[str, int]]) -> tuple[dict[str, int], int]:
    """(summed requests, pod count) of the admitted pods' requests."""
    used: dict[str, int] = {}
    count = 0
    for requests in admitted:
        _add(used, requests)
        count += 1
    return used, count


def fit_failures(
    requests: Mapping[str, int],
    used: Mapping[str, int],
    pod_count: int,
    allocatable: Mapping[str, int],
) -> list[InsufficientResource]:
    """Every resource a pod requesting `requests` lacks next to `pod_count` pods using
    `used`, in upstream's order (noderesources.Fits): the pod count, cpu, memory,
    ephemeral-storage, then extended resources by name."""
    out: list[InsufficientResource] = []
    allowed = allocatable.get(PODS, 0)
    if pod_count + 1 > allowed:
        out.append(InsufficientResource(PODS, 1, pod_count, allowed))
    extended = sorted(n for n in requests if n not in _NATIVE and n != PODS)
    for name in (*_NATIVE, *extended):
        wanted = requests.get(name, 0)
        if wanted <= 0:
            continue
        if name not in _NATIVE and name not in allocatable:
            continue  # an extended resource the node does not know: not ours to check
        capacity = allocatable.get(name, 0)
        in_use = used.get(name, 0)
        if wanted > capacity - in_use:
            out.append(InsufficientResource(name, wanted, in_use, capacity))
    return out


def fits(
    requests: Mapping[str, int],
    used: Mapping[str, int],
    pod_count: int,
    allocatable: Mapping[str, int],
) -> AdmitResult:
    """Whether a pod requesting `requests` fits next to `pod_count` pods using `used`; the
    first failure names the reason."""
    failures = fit_failures(requests, used, pod_count, allocatable)
    return failures[0].result() if failures else ADMITTED


class AdmissionError(Exception):
    """An admission failure handler could not make room: the pod is rejected with this
    reason and message (upstream UnexpectedAdmissionError)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class AdmissionFailureHandler(Protocol):
    """What the kubelet does when a pod does not fit (upstream AdmissionFailureHandler,
    kubelet.preemption's for critical pods)."""

    def __call__(
        self, pod: types_pb2.Pod, failures: Sequence[InsufficientResource]
    ) -> float | None:
        """None: the failures stand (the pod is rejected with the first). Else the room was
        made, the pod is admitted, and its containers start no earlier than the instant
        returned (when what made way has stopped). AdmissionError: rejected with its
        reason."""
        ...


POD_LEVEL_RESOURCES_NOT_ADMITTED: Final = "PodLevelResourcesNotSupported"
"""Upstream's PodLevelResourcesNotAdmittedReason (pkg/kubelet/lifecycle)."""


def pod_features_admit(pod: types_pb2.Pod, counting: PodResourcesOptions) -> AdmitResult:
    """Upstream's podFeaturesAdmitHandler (pkg/kubelet/lifecycle, after the resource fit): a
    kubelet without the PodLevelResources gate refuses a pod that sets spec.resources (one a
    newer apiserver kept)."""
    if not counting.pod_level_resources and is_pod_level_resources_set(pod):
        return AdmitResult(
            False, POD_LEVEL_RESOURCES_NOT_ADMITTED, "PodLevelResources feature gate is disabled"
        )
    return ADMITTED


def admit_pod(
    pod: types_pb2.Pod,
    held_by_others: Iterable[Mapping[str, int]],
    allocatable: Mapping[str, int],
    *,
    now: float,
    startup_delay: float,
    on_failure: AdmissionFailureHandler | None = None,
    counting: PodResourcesOptions = DEFAULT_OPTIONS,
) -> PodRuntime:
    """The kubelet's record of a pod that arrives on the node, in the state it starts in:
    STARTING (admitted at its spec's allocation; its containers run after the start-up delay,
    unless its annotation says otherwise), REJECTED (it does not fit next to `held_by_others`,
    the requests every other active pod holds, and `on_failure` made no room), or TERMINATED
    (deleted before it ever ran here: nothing to start or stop). `counting`: the kubelet's
    rules (its PodLevelResources gate: a pod's spec.resources requests replace its
    containers' sum, as upstream's predicateAdmitHandler counts it through the scheduler's
    NodeInfo)."""
    meta = pod.metadata
    rt = PodRuntime(meta.uid, meta.namespace, meta.name, PodState.STARTING, admitted_at=now)
    if meta.HasField("deletion_timestamp"):
        rt.state = PodState.TERMINATED
        rt.finished_at = now
        return rt
    requests = kubelet_pod_requests(pod, opts=counting)
    # Resized pods count at their new allocation (or their actual size, if larger): a pod
    # bound into room a resize took is rejected (KEP-1287's kubelet-side race).
    used, count = used_by(held_by_others)
    failures = fit_failures(requests, used, count, allocatable)
    free_at: float | None = None
    features = pod_features_admit(pod, counting)
    if failures:
        # No pod makes way for one the node refuses anyway (its features).
        handler = on_failure if features.admit else None
        try:
            free_at = None if handler is None else handler(pod, failures)
        except AdmissionError as e:
            rt.state = PodState.REJECTED
            rt.reason, rt.message = e.reason, e.message
            return rt
        if free_at is None:
            result = failures[0].result()
            rt.state = PodState.REJECTED
            rt.reason, rt.message = result.reason, result.message
            return rt
    if not features.admit:
        rt.state = PodState.REJECTED
        rt.reason, rt.message = features.reason, features.message
        return rt
    delay = annotation_seconds(pod, STARTUP_DELAY_ANNOTATION)
    rt.allocation = allocation_from_spec(pod)
    rt.requests = requests
    rt.start_at = max(now + (startup_delay if delay is None else delay), free_at or 0.0)
    return rt
