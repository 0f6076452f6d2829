"""What a pod needs: its effective resource requests and limits.

One model for the scheduler, the kubelet, kemuctl and the benchmarks, as upstream's
k8s.io/component-helpers/resource (`PodRequests`, `PodLimits`, `PodResourcesOptions`) is:

* app containers run together and add up; restartable init containers (sidecars) start before
  them and keep running, so they add to the app containers *and* to every init container that
  starts after them; a plain init container runs alone (with the sidecars started before it);
  the pod needs the larger of the app containers' sum and its init sequence's peak (KEP-753);
* pod-level requests, when the PodLevelResources gate is on and the spec sets them, replace
  the containers' sum for cpu, memory and hugepages;
* the pod overhead is added on top (to limits only where a limit is set and non-zero).

In-place resize (KEP-1287) gives a running pod three sizes: desired (spec), allocated
(status.containerStatuses[].allocatedResources) and actual
(status.containerStatuses[].resources). With `use_status_resources` (the
InPlacePodVerticalScaling gate) a pod needs, per resource, the largest of the three; upstream
changed *where* the largest is taken, without a feature gate (kubernetes commit 9d1c3c2,
component-helpers 1e15266, for kubernetes issue #140046; first tagged kubernetes-1.37.0-beta.0,
not in release-1.36), so the processes resolve the rule from their emulated version
(kemu.component.version_rules, `max_of_sums`) and pass it down in
`PodResourcesOptions.per_container_max`:

* 1.37 and later (max of sums): desired, allocated and actual are each summed over the whole
  pod with the sidecar rules, and the pod needs the largest of the three sums; a container's
  actual size falls back to its allocated one, which falls back to its spec. A pod that moves
  cpu from one container to another (desired a=1 b=2, allocated a=2 b=1) needs 3 cpu, what it
  ever holds.
* 1.36 and earlier (per-container maximum): each app container and sidecar whose status
  reports resources counts at the largest of its desired, allocated and actual sizes, and those
  are summed; a container without status resources, and every plain init container, counts at
  its spec. The pod above needs 4 cpu. (This is 1.33-1.36's helper; kemu uses it wherever
  the gate is on before 1.37. 1.32's read Infeasible from status.resize, left the allocated
  size out and counted sidecars at their spec; kemu does not model that difference.)

A resize the kubelet found Infeasible never happens, so then the desired size is left out
under both rules. Limits follow the same two rules with desired and actual only.

Quantities are exact integers: milli-CPU for cpu, base units (bytes, counts) for the rest.
Protobuf maps cannot tell an absent ResourceList from an empty one; empty stands for nil.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.quantity import to_int

CPU: Final = "cpu"
MEMORY: Final = "memory"
HUGEPAGES_PREFIX: Final = "hugepages-"

POD_RESIZE_PENDING: Final = "PodResizePending"
REASON_DEFERRED: Final = "Deferred"
REASON_INFEASIBLE: Final = "Infeasible"

DEFAULT_MILLI_CPU_REQUEST: Final = 100
"""The cpu a container without a cpu request is scored at (upstream DefaultMilliCPURequest)."""
DEFAULT_MEMORY_REQUEST: Final = 200 * 1024 * 1024
"""The memory a container without a memory request is scored at (DefaultMemoryRequest)."""
NON_ZERO_DEFAULTS: Final[Mapping[str, int]] = MappingProxyType(
    {CPU: DEFAULT_MILLI_CPU_REQUEST, MEMORY: DEFAULT_MEMORY_REQUEST}
)

Amounts = dict[str, int]
"""Resource name -> exact integer amount."""

ContainerResources = Mapping[str, Mapping[str, str]]
"""Container name -> a ResourceList (quantity strings), e.g. what the kubelet allocated."""


@dataclass(frozen=True, slots=True)
class PodResourcesOptions:
    """How `pod_requests` and `pod_limits` count (upstream PodResourcesOptions)."""

    use_status_resources: bool = False
    """Count allocated and actual resources from the status too (UseStatusResources; only with
    the InPlacePodVerticalScaling gate)."""
    exclude_overhead: bool = False
    non_missing_container_requests: Mapping[str, int] | None = None
    """Amounts for containers that do not name a resource at all; an explicit request, even
    zero, is kept (NonMissingContainerRequests; the scheduler's scoring defaults)."""
    pod_level_resources: bool = True
    """Honour spec.resources (the PodLevelResources gate; upstream's SkipPodLevelResources is
    its negation, so upstream's zero value honours it too)."""
    per_container_max: bool = False
    """With `use_status_resources`: take the largest of desired, allocated and actual per
    container, then sum (upstream 1.36 and earlier, determineEffectiveRequests); False: sum each
    size over the pod, then take the largest (1.37 and later). Upstream has no such option (the
    change was not gated): kemu keys it on the emulated version (kemu.component.version_rules,
    `max_of_sums`)."""


DEFAULT_OPTIONS: Final = PodResourcesOptions()
SCHEDULER_DEFAULTS: Final = PodResourcesOptions(use_status_resources=True)
"""How the scheduler counts pods by default (`scheduler_pod_requests`): as at the default
emulated version, the InPlacePodVerticalScaling and PodLevelResources gates on and the newest
aggregation rule. A process builds its own once from its gates and version
(kemu.component.pod_resources) and passes it down."""


@functools.lru_cache(maxsize=4096)
def amount(name: str, text: str) -> int:
    """`quantity.to_int`, remembered: a cluster's pods repeat a few quantity strings ("100m",
    "1Gi") and parsing them is most of the cost of building a scheduler PodInfo."""
    return to_int(name, text)


def amounts(resources: Mapping[str, str]) -> Amounts:
    """A ResourceList as exact integers (assumed valid, as admitted)."""
    return {name: amount(name, text) for name, text in resources.items()}


def max_resources(first: Mapping[str, int], *others: Mapping[str, int]) -> Amounts:
    """Per resource, the largest amount in any of the lists (upstream's `max` helper)."""
    out = dict(first)
    for other in others:
        for name, value in other.items():
            if name not in out or value > out[name]:
                out[name] = value
    return out


def _add(total: Amounts, more: Mapping[str, int]) -> None:
    for name, value in more.items():
        total[name] = total.get(name, 0) + value


def _set_max(total: Amounts, other: Mapping[str, int]) -> None:
    for name, value in other.items():
        if name not in total or value > total[name]:
            total[name] = value


# ---------------------------------------------------------------- resize conditions


def _pending_resize_reason(pod: types_pb2.Pod) -> str | None:
    # The first PodResizePending decides, as upstream reads it.
    for c in pod.status.conditions:
        if c.type == POD_RESIZE_PENDING:
            return c.reason
    return None


def is_pod_resize_infeasible(pod: types_pb2.Pod) -> bool:
    """PodResizePending with reason Infeasible (upstream IsPodResizeInfeasible)."""
    return _pending_resize_reason(pod) == REASON_INFEASIBLE


def is_pod_resize_deferred(pod: types_pb2.Pod) -> bool:
    """PodResizePending with reason Deferred (upstream IsPodResizeDeferred)."""
    return _pending_resize_reason(pod) == REASON_DEFERRED


# ---------------------------------------------------------------- pod-level resources


def is_supported_pod_level_resource(name: str) -> bool:
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def is_pod_level_requests_set(pod: types_pb2.Pod) -> bool:
    """Whether spec.resources requests a supported resource (IsPodLevelRequestsSet)."""
    return any(is_supported_pod_level_resource(n) for n in pod.spec.resources.requests)


def is_pod_level_resources_set(pod: types_pb2.Pod) -> bool:
    """Whether spec.resources names a supported resource (IsPodLevelResourcesSet)."""
    res = pod.spec.resources
    return any(is_supported_pod_level_resource(n) for n in (*res.requests, *res.limits))


def _apply_pod_level(total: Amounts, resources: Mapping[str, str]) -> None:
    # kemu's PodStatus has no pod-level allocated or actual resources (no
    # InPlacePodLevelResourcesVerticalScaling), so the spec's pod-level values are effective.
    for name, text in resources.items():
        if is_supported_pod_level_resource(name):
            total[name] = amount(name, text)


# ---------------------------------------------------------------- per container

# One size of one container: desired, allocated or actual; None: nothing (an Infeasible
# resize's container that reports no status counts at no size, as upstream).
_ContainerSize = Callable[
    [types_pb2.Container, types_pb2.ContainerStatus | None, bool], Mapping[str, str] | None
]


def _spec_requests(
    c: types_pb2.Container, _cs: types_pb2.ContainerStatus | None, _infeasible: bool
) -> Mapping[str, str]:
    return c.resources.requests


def _allocated_requests(
    c: types_pb2.Container, cs: types_pb2.ContainerStatus | None, infeasible: bool
) -> Mapping[str, str] | None:
    if cs is not None and cs.allocated_resources:
        return cs.allocated_resources
    return None if infeasible else c.resources.requests


def _actual_requests(
    c: types_pb2.Container, cs: types_pb2.ContainerStatus | None, infeasible: bool
) -> Mapping[str, str] | None:
    # A kubelet that has not actuated a container yet reports what it allocated.
    if cs is not None:
        if cs.HasField("resources") and cs.resources.requests:
            return cs.resources.requests
        if cs.allocated_resources:
            return cs.allocated_resources
    return None if infeasible else c.resources.requests


def _spec_limits(
    c: types_pb2.Container, _cs: types_pb2.ContainerStatus | None, _infeasible: bool
) -> Mapping[str, str]:
    return c.resources.limits


def _actual_limits(
    c: types_pb2.Container, cs: types_pb2.ContainerStatus | None, infeasible: bool
) -> Mapping[str, str] | None:
    if cs is not None and cs.HasField("resources") and cs.resources.limits:
        return cs.resources.limits
    return None if infeasible else c.resources.limits


def _statuses(pod: types_pb2.Pod) -> dict[str, types_pb2.ContainerStatus]:
    out = {cs.name: cs for cs in pod.status.init_container_statuses}
    out.update((cs.name, cs) for cs in pod.status.container_statuses)
    return out


@dataclass(slots=True)
class _Sizes:
    """One size (desired, allocated or actual) of every container, parsed once and combined
    as often as needed (the scheduler combines it with and without the scoring defaults).
    None: the container counts at nothing."""

    app: list[Amounts | None]
    init: list[tuple[bool, Amounts | None]]
    """(restartable, size) in order."""


def _sizes(
    pod: types_pb2.Pod,
    size: _ContainerSize,
    statuses: Mapping[str, types_pb2.ContainerStatus] | None,
    infeasible: bool,
) -> _Sizes:
    spec = pod.spec
    app: list[Amounts | None] = []
    for c in spec.containers:
        r = size(c, statuses.get(c.name) if statuses else None, infeasible)
        app.append(None if r is None else amounts(r))
    init: list[tuple[bool, Amounts | None]] = []
    for c in spec.init_containers:
        r = size(c, statuses.get(c.name) if statuses else None, infeasible)
        restartable = c.HasField("restart_policy") and c.restart_policy == "Always"
        init.append((restartable, None if r is None else amounts(r)))
    return _Sizes(app, init)


# One container's effective size under the per-container rule (1.36 and earlier), as exact
# integers: the largest of its sizes, taken before the containers are combined.
_ContainerMax = Callable[[types_pb2.Container, types_pb2.ContainerStatus | None, bool], Amounts]


def _max_container_requests(
    c: types_pb2.Container, cs: types_pb2.ContainerStatus | None, infeasible: bool
) -> Amounts:
    # Upstream <=1.36 determineEffectiveRequests, only for a status that reports resources.
    if cs is None or not cs.HasField("resources"):
        return amounts(c.resources.requests)
    actual = amounts(cs.resources.requests)
    allocated = amounts(cs.allocated_resources)
    if infeasible:
        return max_resources(actual, allocated)
    return max_resources(amounts(c.resources.requests), actual, allocated)


def _max_container_limits(
    c: types_pb2.Container, cs: types_pb2.ContainerStatus | None, infeasible: bool
) -> Amounts:
    # Upstream <=1.36 determineEffectiveLimits.
    if cs is None or not cs.HasField("resources"):
        return amounts(c.resources.limits)
    actual = amounts(cs.resources.limits)
    if infeasible:
        return actual
    return max_resources(amounts(c.resources.limits), actual)


def _per_container_sizes(
    pod: types_pb2.Pod,
    effective: _ContainerMax,
    plain_init: Callable[[types_pb2.Container], Mapping[str, str]],
    statuses: Mapping[str, types_pb2.ContainerStatus],
    infeasible: bool,
) -> _Sizes:
    """Each container at its own largest size (`effective`); a plain init container at
    `plain_init` (its spec: upstream <=1.36 reads no status for it)."""
    spec = pod.spec
    app: list[Amounts | None] = [
        effective(c, statuses.get(c.name), infeasible) for c in spec.containers
    ]
    init: list[tuple[bool, Amounts | None]] = []
    for c in spec.init_containers:
        if c.HasField("restart_policy") and c.restart_policy == "Always":
            init.append((True, effective(c, statuses.get(c.name), infeasible)))
        else:
            init.append((False, amounts(plain_init(c))))
    return _Sizes(app, init)


def _spec_requests_of(c: types_pb2.Container) -> Mapping[str, str]:
    return c.resources.requests


def _spec_limits_of(c: types_pb2.Container) -> Mapping[str, str]:
    return c.resources.limits


def _filled(r: Amounts | None, non_missing: Mapping[str, int] | None) -> Mapping[str, int]:
    """A container's size with `non_missing` for what it does not name (applyNonMissing)."""
    if not non_missing:
        return r or {}
    if r is None:
        return non_missing
    missing = [name for name in non_missing if name not in r]
    if not missing:
        return r
    out = dict(r)
    for name in missing:
        out[name] = non_missing[name]
    return out


def _combine(sizes: _Sizes, non_missing: Mapping[str, int] | None) -> Amounts:
    """The containers' sizes combined with the sidecar rules (upstream
    aggregateContainerResourcesByFn)."""
    total: Amounts = {}
    for r in sizes.app:
        _add(total, _filled(r, non_missing))
    if not sizes.init:
        return total
    sidecars: Amounts = {}
    init_peak: Amounts = {}
    for restartable, r in sizes.init:
        f = _filled(r, non_missing)
        if restartable:
            _add(total, f)
            _add(sidecars, f)
            _set_max(init_peak, sidecars)
        else:
            step = dict(f)
            _add(step, sidecars)
            _set_max(init_peak, step)
    _set_max(total, init_peak)
    return total


@dataclass(slots=True)
class _RequestSizes:
    """What `pod_requests` combines: the desired size, and with status resources (max of
    sums) the allocated and actual ones (None: the pod has no status to read, so they are
    desired's, or the per-container rule already took each container's largest size into
    `desired`)."""

    desired: _Sizes
    allocated: _Sizes | None = None
    actual: _Sizes | None = None
    infeasible: bool = False

    def effective(self, non_missing: Mapping[str, int] | None) -> Amounts:
        if self.allocated is None or self.actual is None:
            return _combine(self.desired, non_missing)
        allocated = _combine(self.allocated, non_missing)
        actual = _combine(self.actual, non_missing)
        if self.infeasible:
            return max_resources(actual, allocated)
        return max_resources(_combine(self.desired, non_missing), actual, allocated)


def _request_sizes(
    pod: types_pb2.Pod, use_status_resources: bool, per_container_max: bool
) -> _RequestSizes:
    if not use_status_resources:
        return _RequestSizes(_sizes(pod, _spec_requests, None, False))
    statuses = _statuses(pod)
    if per_container_max:
        if not statuses:
            return _RequestSizes(_sizes(pod, _spec_requests, None, False))
        infeasible = is_pod_resize_infeasible(pod)
        return _RequestSizes(
            _per_container_sizes(
                pod, _max_container_requests, _spec_requests_of, statuses, infeasible
            )
        )
    desired = _sizes(pod, _spec_requests, None, False)
    infeasible = is_pod_resize_infeasible(pod)
    if not statuses and not infeasible:
        # Nothing allocated or running yet: both other sizes fall back to the spec.
        return _RequestSizes(desired)
    return _RequestSizes(
        desired,
        _sizes(pod, _allocated_requests, statuses, infeasible),
        _sizes(pod, _actual_requests, statuses, infeasible),
        infeasible,
    )


def _pod_totals(pod: types_pb2.Pod, reqs: Amounts, opts: PodResourcesOptions) -> Amounts:
    if opts.pod_level_resources and is_pod_level_requests_set(pod):
        _apply_pod_level(reqs, pod.spec.resources.requests)
    if not opts.exclude_overhead and pod.spec.overhead:
        _add(reqs, amounts(pod.spec.overhead))
    return reqs


# ---------------------------------------------------------------- the pod


def pod_requests(pod: types_pb2.Pod, opts: PodResourcesOptions = DEFAULT_OPTIONS) -> Amounts:
    """The pod's effective requests (upstream resourcehelper.PodRequests).

    Without `use_status_resources`: the spec. With it: per resource the largest of the
    desired, allocated and actual sums, or of the allocated and actual sums when the pod's
    resize is Infeasible; with `per_container_max` (1.36 and earlier) the sum of each
    container's largest size instead (see the module docstring).
    """
    sizes = _request_sizes(pod, opts.use_status_resources, opts.per_container_max)
    return _pod_totals(pod, sizes.effective(opts.non_missing_container_requests), opts)


def pod_limits(pod: types_pb2.Pod, opts: PodResourcesOptions = DEFAULT_OPTIONS) -> Amounts:
    """The pod's effective limits (upstream resourcehelper.PodLimits): the spec, or with
    `use_status_resources` the larger of the desired and actual sums (only the actual one
    when the resize is Infeasible), or with `per_container_max` too the sum of each
    container's larger one. Overhead is added to limits that are set and non-zero; a
    resource without a limit stays unlimited."""
    if not opts.use_status_resources:
        limits = _combine(_sizes(pod, _spec_limits, None, False), None)
    elif opts.per_container_max:
        limits = _combine(
            _per_container_sizes(
                pod,
                _max_container_limits,
                _spec_limits_of,
                _statuses(pod),
                is_pod_resize_infeasible(pod),
            ),
            None,
        )
    else:
        desired = _sizes(pod, _spec_limits, None, False)
        infeasible = is_pod_resize_infeasible(pod)
        actual = _combine(_sizes(pod, _actual_limits, _statuses(pod), infeasible), None)
        limits = actual if infeasible else max_resources(_combine(desired, None), actual)
    if opts.pod_level_resources and is_pod_level_resources_set(pod):
        _apply_pod_level(limits, pod.spec.resources.limits)
    if not opts.exclude_overhead:
        for name, text in pod.spec.overhead.items():
            if limits.get(name):
                limits[name] += amount(name, text)
    return limits


# ---------------------------------------------------------------- the scheduler's view


def _non_missing_container_requests(
    requests: Mapping[str, int], pod_level_requests_set: bool
) -> Mapping[str, int]:
    # With pod-level requests a container without its own request shares the pod's; the
    # defaults stand in only for what neither the containers nor the pod request.
    if not pod_level_requests_set:
        return NON_ZERO_DEFAULTS
    return {name: value for name, value in NON_ZERO_DEFAULTS.items() if name not in requests}


def scheduler_pod_requests(
    pod: types_pb2.Pod, opts: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> tuple[Amounts, Amounts]:
    """(requests, non-zero requests) of a pod, as the scheduler counts it: what NodeInfo's
    Requested and NonZeroRequested add up (upstream framework PodInfo.CalculateResource).

    `opts.use_status_resources` is the InPlacePodVerticalScaling gate: a pending (Deferred)
    upsize is reserved at its desired size on the pod's node, an Infeasible one is not.
    `opts.pod_level_resources` is the PodLevelResources gate, `opts.per_container_max` the
    aggregation rule of the emulated version (True before 1.37). `exclude_overhead` and
    `non_missing_container_requests` are the scheduler's own (overhead counted; the scoring
    defaults below).

    The non-zero requests are for scoring only: a container that names no cpu or memory
    request counts at 100m / 200Mi (upstream GetNonzeroRequests), so that a node full of
    BestEffort pods does not look empty; an explicit request of 0 stays 0. Only their cpu and
    memory mean anything (upstream keeps just Non0CPU and Non0Mem).
    """
    if opts.exclude_overhead:
        opts = dataclasses.replace(opts, exclude_overhead=False)
    # Parsed once, combined twice: this runs for every pod the scheduler's cache learns of.
    sizes = _request_sizes(pod, opts.use_status_resources, opts.per_container_max)
    requests = _pod_totals(pod, sizes.effective(None), opts)
    non_missing = _non_missing_container_requests(
        requests, opts.pod_level_resources and is_pod_level_requests_set(pod)
    )
    if not non_missing:
        return requests, dict(requests)
    return requests, _pod_totals(pod, sizes.effective(non_missing), opts)


# ---------------------------------------------------------------- the kubelet's view


def _sized_of(sizes: ContainerResources) -> Callable[[types_pb2.Container], Mapping[str, str]]:
    def size(c: types_pb2.Container) -> Mapping[str, str]:
        given = sizes.get(c.name)
        return c.resources.requests if given is None else given

    return size


def _sized(sizes: ContainerResources) -> _ContainerSize:
    of = _sized_of(sizes)

    def size(
        c: types_pb2.Container, _cs: types_pb2.ContainerStatus | None, _infeasible: bool
    ) -> Mapping[str, str]:
        return of(c)

    return size


def _larger_of(allocated: ContainerResources, actual: ContainerResources) -> _ContainerMax:
    allocated_of = _sized_of(allocated)

    def size(
        c: types_pb2.Container, _cs: types_pb2.ContainerStatus | None, _infeasible: bool
    ) -> Amounts:
        held = amounts(allocated_of(c))
        running = actual.get(c.name)
        return held if running is None else max_resources(held, amounts(running))

    return size


def kubelet_pod_requests(
    pod: types_pb2.Pod,
    allocated: ContainerResources | None = None,
    actual: ContainerResources | None = None,
    *,
    opts: PodResourcesOptions = DEFAULT_OPTIONS,
) -> Amounts:
    """What a pod holds on its node, as the kubelet counts it when it admits a pod or decides
    a resize: upstream's allocation manager puts the checkpointed allocation into the pod's
    spec (UpdatePodFromAllocation) and its admit handler counts that pod with
    resourcehelper.PodRequests and UseStatusResources. The status it reads is the kubelet's
    own (allocated = the allocation), so a pod needs the larger of its allocated and its
    actual sums (1.37 and later; each sum can be computed once and kept, `max_resources` of
    the two is this), or with `opts.per_container_max` (1.36 and earlier) the sum of each
    container's larger size, a plain init container at its allocation. With
    `opts.pod_level_resources` (the PodLevelResources gate) the pod's spec.resources requests
    replace the containers' sum for cpu, memory and hugepages (kemu has no pod-level
    allocation: InPlacePodLevelResourcesVerticalScaling is not modelled); the overhead is added
    last. `use_status_resources` is not read: the kubelet's sizes are its own.

    `allocated` and `actual` map container names to requests; a container missing from them
    is at its spec, as a pod not admitted yet; no `actual`: the containers run at their
    allocation. A pending desired size is never counted: the kubelet has not given it (the
    scheduler, in contrast, reserves it).
    """
    allocated = allocated or {}
    if opts.per_container_max and actual:
        sizes = _per_container_sizes(
            pod, _larger_of(allocated, actual), _sized_of(allocated), {}, False
        )
        held = _combine(sizes, None)
    else:
        held = _combine(_sizes(pod, _sized(allocated), None, False), None)
        if actual:
            held = max_resources(held, _combine(_sizes(pod, _sized(actual), None, False), None))
    return _pod_totals(pod, held, opts)


def kubelet_pod_requests_from_status(
    pod: types_pb2.Pod, *, opts: PodResourcesOptions = DEFAULT_OPTIONS
) -> Amounts:
    """`kubelet_pod_requests` with the allocated and actual sizes the pod's status reports:
    what the pod holds on its node as its kubelet counts it, for a reader that has only the
    API object (the scheduler; KEP-5836's kubelet-like accounting, which upstream defers to
    beta). A container status without allocatedResources leaves the container at its spec (as
    a pod the kubelet has not admitted yet); one without resources runs at its allocation. A
    pending desired size is never counted; an Infeasible one neither."""
    allocated: dict[str, Mapping[str, str]] = {}
    actual: dict[str, Mapping[str, str]] = {}
    for name, cs in _statuses(pod).items():
        if cs.allocated_resources:
            allocated[name] = cs.allocated_resources
        if cs.HasField("resources") and cs.resources.requests:
            actual[name] = cs.resources.requests
        elif cs.allocated_resources:
            actual[name] = cs.allocated_resources
    return kubelet_pod_requests(pod, allocated, actual, opts=opts)
