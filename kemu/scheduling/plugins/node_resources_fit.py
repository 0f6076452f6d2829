"""NodeResourcesFit: does the node have room for the pod's requests? (upstream
noderesources/fit.go).

PreFilter computes the pod's request once (with the in-place resize accounting of
`types.pod_requests`, and the pod-level requests of KEP-2837 with the PodLevelResources gate:
the plugin's `counting`, from the scheduler's gates as upstream's `feature.Features`); Filter compares it with each node's allocatable minus requested. Filter
statuses (pkg/scheduler/framework/plugins/noderesources/fit.go):
- `len(pods) + 1 > allowed pods`: "Too many pods", Unschedulable;
- cpu / memory / ephemeral-storage / scalar `request > allocatable - requested`:
  "Insufficient <resource>"; every failing resource adds a reason. The code is
  UnschedulableAndUnresolvable when for some failing resource the request exceeds even the
  node's allocatable (preemption cannot help there), Unschedulable otherwise.
Extended resources named in `ignoredResources`, or whose domain is in `ignoredResourceGroups`,
are not checked. With DRAExtendedResource an extended resource a DeviceClass backs is not
checked on a node whose allocatable does not have it: DynamicResources allocates it there
(upstream fitsRequest with the DRA manager's class mapping).

KEP-5836 (InPlacePodVerticalScalingSchedulerPreemption, KEP-5836's NodeResourcesFit change, pkg/scheduler/framework/plugins/noderesources/fit.go): a pod bound to
the evaluated node that the node's cache already holds (a running pod whose resize is Deferred)
is counted there at max(desired, allocated, actual) already, so only `delta = max(0, request -
cached request)` per resource must fit in `allocatable - requested`; the status is still
Unresolvable only when the request itself exceeds allocatable. The queueing hints of such a pod
look only at its own node: pods deleted or scaled down there, the node's allocatable growing,
the pod's own scale-down, and (registered only with the gate on, as merged by
kubernetes#140000) a scale-up of another pod there or of the pod itself (UpdatePodScaleUp):
whether the hint requeues a parked deferred pod when another pod on its node grows was an open
point of the KEP; the merged fit.go does (isSchedulableAfterAssignedPodScaleUp), and KEP-5836's
README lists that hint as the alpha behaviour beta drops.

NOT upstream: pluginConfig arg `kemuKubeletLikeResizeAccounting` (bool, default false) is kemu's
emulation of the accounting KEP-5836 plans for beta (its "Risk of Additional Preemption";
KEP-5836's NodeResourcesFit change, pkg/scheduler/framework/plugins/noderesources/fit.go, S-RPE-9), hence the `kemu` prefix. With it, and only in the cycle of a
pod bound to the evaluated node (a Deferred resize, on its own node), every *other* pod on the
node counts at what it holds as the kubelet counts it (`kemu.machinery.resources.
kubelet_pod_requests_from_status`: the larger of allocated and actual, no pending desired
size), while the pod itself counts at its whole request, max(desired, allocated, actual): it
fits iff `request <= allocatable - held by the others`. The preemption dry run re-runs Filter
on a NodeInfo copy it removes victims from and puts reprieved ones back into, so the sum is
taken over the node's pods as Filter sees them (one node per cycle, a few dozen pods; each
pod's held size is computed once per cycle): removing a victim frees what it holds. Ordinary
pods, and every cycle with the arg false, are untouched; without the gate the arg does
nothing.

Score ranks feasible nodes by `scoringStrategy`: LeastAllocated (default; spreads),
MostAllocated (bin-packs) or RequestedToCapacityRatio (a utilization -> score shape), over
`resources` (default cpu and memory, weight 1), using non-zero requests for cpu and memory.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import DRA_EXTENDED_RESOURCE, DYNAMIC_RESOURCE_ALLOCATION
from kemu.component.pod_resources import pod_resources_options
from kemu.machinery.resources import (
    SCHEDULER_DEFAULTS,
    PodResourcesOptions,
    is_pod_resize_deferred,
    kubelet_pod_requests_from_status,
)
from kemu.scheduling import status as st
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    CycleState,
    EnqueueExtensions,
    FilterPlugin,
    Handle,
    PlacementScoreExtensions,
    PlacementScorePlugin,
    PluginArgs,
    PodGroupAssignments,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ScoreExtensions,
    ScorePlugin,
    cycle_pod_info,
)
from kemu.scheduling.plugins.resource_allocation import (
    DEFAULT_RESOURCES,
    ColumnScorer,
    NodeScorer,
    ResourceAllocationScorer,
    ResourceSpec,
    least_allocated_cpu_memory,
    least_allocated_cpu_memory_columns,
    least_allocated_scorer,
    most_allocated_cpu_memory,
    most_allocated_cpu_memory_columns,
    most_allocated_scorer,
    parse_resources,
    parse_shape,
    requested_to_capacity_ratio_scorer,
)
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.status import Status
from kemu.scheduling.types import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    PODS,
    NodeInfo,
    PodInfo,
    PreFilterResult,
    Resource,
    pod_requests,
)

NAME: Final = "NodeResourcesFit"
PRE_FILTER_STATE_KEY: Final = "PreFilter" + NAME
PRE_SCORE_STATE_KEY: Final = "PreScore" + NAME

KUBELET_LIKE_RESIZE_ACCOUNTING: Final = "kemuKubeletLikeResizeAccounting"
"""The pluginConfig arg of kemu's beyond-upstream accounting (see the module docstring)."""

LEAST_ALLOCATED: Final = "LeastAllocated"
MOST_ALLOCATED: Final = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO: Final = "RequestedToCapacityRatio"

_TOO_MANY_PODS: Final = "Too many pods"
_INSUFFICIENT_CPU: Final = "Insufficient cpu"
_INSUFFICIENT_MEMORY: Final = "Insufficient memory"
_INSUFFICIENT_EPHEMERAL: Final = "Insufficient ephemeral-storage"


def is_extended_resource_name(name: str) -> bool:
    """Not a native resource (a name without a domain, or in the kubernetes.io domain) and not
    a quota `requests.` name (upstream v1helper.IsExtendedResourceName)."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


@dataclass(frozen=True, slots=True)
class InsufficientResource:
    """Why a pod does not fit a node, for one resource (upstream InsufficientResource)."""

    resource: str
    reason: str
    requested: int
    used: int
    capacity: int
    # The request exceeds the node's whole allocatable: removing pods cannot help.
    unresolvable: bool = False


class HeldRequests:
    """What the pods on a deferred pod's node hold as the kubelet counts them (not upstream:
    `kemuKubeletLikeResizeAccounting`), each computed once per cycle: the preemption dry run
    asks again after every removal and reprieve. Keyed by PodInfo identity (a PodInfo and its
    pod never change; a cycle's NodeInfo copies share them)."""

    __slots__ = ("_counting", "_held")

    def __init__(self, counting: PodResourcesOptions = SCHEDULER_DEFAULTS) -> None:
        self._held: dict[PodInfo, Resource] = {}
        self._counting = counting

    def of(self, pi: PodInfo) -> Resource:
        held = self._held.get(pi)
        if held is None:
            # 1.37's aggregation rule: the gate that makes this reachable exists from 1.37.
            held = Resource.from_amounts(
                kubelet_pod_requests_from_status(pi.pod, opts=self._counting)
            )
            self._held[pi] = held
        return held

    def by_others(self, node: NodeInfo, uid: str) -> Resource:
        """The sum over the node's pods except the one with `uid`."""
        total = Resource()
        for pi in node.pods:
            if pi.uid != uid:
                total.add(self.of(pi))
        return total


class PreFilterState:
    """The pod's request; read-only after PreFilter, so `clone` shares it (and with it the
    memo of `held`)."""

    __slots__ = (
        "assigned_node",
        "dra_backed",
        "empty",
        "ephemeral_storage",
        "held",
        "memory",
        "milli_cpu",
        "request",
        "scalars",
        "uid",
    )

    def __init__(
        self,
        request: Resource,
        ignored: frozenset[str] = frozenset(),
        ignored_groups: frozenset[str] = frozenset(),
        *,
        assigned_node: str = "",
        uid: str = "",
        held: HeldRequests | None = None,
        dra_backed: frozenset[str] = frozenset(),
    ) -> None:
        self.request = request
        # DRAExtendedResource: the pod's extended resources a DeviceClass backs; a node
        # without them in allocatable leaves them to DynamicResources.
        self.dra_backed = dra_backed
        # KEP-5836: the node the pod is bound to ("" for every pod the delta rule does not
        # apply to, so that Filter's hot path pays one falsy test for them).
        self.assigned_node = assigned_node
        self.uid = uid
        # Not upstream (kemuKubeletLikeResizeAccounting): set only with `assigned_node`.
        self.held = held
        self.milli_cpu = request.milli_cpu
        self.memory = request.memory
        self.ephemeral_storage = request.ephemeral_storage
        # Scalars to check: non-zero and not ignored (only extended resources can be ignored).
        scalars: list[tuple[str, int]] = []
        for name, qty in request.scalar.items():
            if qty == 0:
                continue
            if is_extended_resource_name(name) and (
                name in ignored or (ignored_groups and name.split("/", 1)[0] in ignored_groups)
            ):
                continue
            scalars.append((name, qty))
        self.scalars: tuple[tuple[str, int], ...] = tuple(scalars)
        # Upstream returns after the pods check only when the pod requests nothing at all
        # (an ignored extended resource still counts as a request there).
        self.empty = not (
            request.milli_cpu or request.memory or request.ephemeral_storage or request.scalar
        )

    def clone(self) -> PreFilterState:
        return self


@dataclass(frozen=True, slots=True)
class PreScoreState:
    pod_requests: tuple[int, ...]

    def clone(self) -> PreScoreState:
        return self


def fits_request(
    state: PreFilterState, node: NodeInfo, cached: Resource | None = None
) -> list[InsufficientResource]:
    """Every resource the node lacks for the pod (upstream fitsRequest).

    `cached`: what the node already counts for this very pod (KEP-5836, see the module
    docstring); then only the part of each request beyond it must fit, `max(0, request -
    cached)`, while Unresolvable still compares the whole request with allocatable."""
    out: list[InsufficientResource] = []
    alloc = node.allocatable
    used = node.requested
    n_pods = len(node.pods)
    # Upstream leaves the pod count alone for a pod the node already holds (it counts twice
    # there); kemu does the same.
    if n_pods + 1 > alloc.allowed_pod_number:
        out.append(InsufficientResource(PODS, _TOO_MANY_PODS, 1, n_pods, alloc.allowed_pod_number))
    if state.empty:
        return out
    req = state.milli_cpu
    delta = req if cached is None else max(0, req - cached.milli_cpu)
    if req > 0 and delta > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                CPU, _INSUFFICIENT_CPU, req, used.milli_cpu, alloc.milli_cpu, req > alloc.milli_cpu
            )
        )
    req = state.memory
    delta = req if cached is None else max(0, req - cached.memory)
    if req > 0 and delta > alloc.memory - used.memory:
        out.append(
            InsufficientResource(
                MEMORY, _INSUFFICIENT_MEMORY, req, used.memory, alloc.memory, req > alloc.memory
            )
        )
    req = state.ephemeral_storage
    delta = req if cached is None else max(0, req - cached.ephemeral_storage)
    if req > 0 and delta > alloc.ephemeral_storage - used.ephemeral_storage:
        out.append(
            InsufficientResource(
                EPHEMERAL_STORAGE,
                _INSUFFICIENT_EPHEMERAL,
                req,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                req > alloc.ephemeral_storage,
            )
        )
    for name, req in state.scalars:
        have = alloc.scalar.get(name, 0)
        if have == 0 and name in state.dra_backed:
            continue  # DynamicResources allocates it (upstream fitsRequest, DRAExtendedResource)
        in_use = used.scalar.get(name, 0)
        delta = req if cached is None else max(0, req - cached.scalar.get(name, 0))
        # Upstream decides Unresolvable on the delta for scalars (on the request for the
        # others); KEP-5836's design, keps/sig-scheduling/5836-* says the request, which kemu uses for every resource.
        if delta > have - in_use:
            out.append(
                InsufficientResource(name, f"Insufficient {name}", req, in_use, have, req > have)
            )
    return out


def fits(
    pod: types_pb2.Pod, node: NodeInfo, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> list[InsufficientResource]:
    """What `pod` lacks on `node`, ignoring nothing (upstream Fits; for hints and simulations)."""
    return fits_request(PreFilterState(pod_requests(pod, counting)[0]), node)


def _filter_assigned(s: PreFilterState, node: NodeInfo) -> Status:
    """Filter for a pod bound to `node` (KEP-5836): the node's copy of the pod, found by uid,
    already counts in `requested`; a pod the node does not hold is checked as any other.
    With `held` (not upstream) the pod's whole request must fit beside what the other pods
    hold, whether or not the node holds the pod."""
    if s.held is not None:
        # A copy whose `requested` is the held sum: fits_request, the ordinary pods' slow
        # path, stays as it is; only this one node per deferred cycle pays for the copy.
        view = node.clone()
        view.requested = s.held.by_others(node, s.uid)
        insufficient = fits_request(s, view)
        return _status_of(insufficient) if insufficient else st.SUCCESS
    cached = next((pi.requests for pi in node.pods if pi.uid == s.uid), None)
    insufficient = fits_request(s, node, cached)
    if not insufficient:
        return st.SUCCESS
    return _status_of(insufficient)


def _status_of(insufficient: Sequence[InsufficientResource]) -> Status:
    reasons = tuple(r.reason for r in insufficient)
    if any(r.unresolvable for r in insufficient):
        return Status(st.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reasons)
    return Status(st.Code.UNSCHEDULABLE, reasons)


# Filter's statuses for pods without scalar requests, by which tests failed (see _plain_status).
_PLAIN_STATUSES: dict[tuple[bool, ...], Status] = {}
_PLAIN_BITS: Final = 7


def _plain_status(s: PreFilterState, node: NodeInfo) -> Status:
    """fits_request's verdict as a Status, for a pod with no scalar resource to check,
    without building the InsufficientResource list: a failing node (every node in a
    preemptor's failed cycle) costs a few comparisons and a dictionary read. The Status
    names this plugin already (the runtime would), so that it is shared as it is."""
    alloc = node.allocatable
    used = node.requested
    cpu, memory, ephemeral = s.milli_cpu, s.memory, s.ephemeral_storage
    key = (
        len(node.pods) + 1 > alloc.allowed_pod_number,
        cpu > 0 and cpu > alloc.milli_cpu - used.milli_cpu,
        cpu > alloc.milli_cpu,
        memory > 0 and memory > alloc.memory - used.memory,
        memory > alloc.memory,
        ephemeral > 0 and ephemeral > alloc.ephemeral_storage - used.ephemeral_storage,
        ephemeral > alloc.ephemeral_storage,
    )
    return _plain_status_of(key)


def _plain_status_of(key: tuple[bool, ...]) -> Status:
    """The Status of one `_plain_status` key (too many pods, then per cpu, memory and
    ephemeral storage: short, and asking more than allocatable), shared per key."""
    status = _PLAIN_STATUSES.get(key)
    if status is None:
        too_many, cpu_short, cpu_over, mem_short, mem_over, eph_short, eph_over = key
        reasons: list[str] = []
        if too_many:
            reasons.append(_TOO_MANY_PODS)
        if cpu_short:
            reasons.append(_INSUFFICIENT_CPU)
        if mem_short:
            reasons.append(_INSUFFICIENT_MEMORY)
        if eph_short:
            reasons.append(_INSUFFICIENT_EPHEMERAL)
        if not reasons:
            status = st.SUCCESS
        else:
            unresolvable = (
                (cpu_short and cpu_over) or (mem_short and mem_over) or (eph_short and eph_over)
            )
            code = st.Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else st.Code.UNSCHEDULABLE
            status = Status(code, tuple(reasons), NAME)
        _PLAIN_STATUSES[key] = status  # at most 2^7 keys
    return status


def _status_of_key(key: int, scalars: Sequence[tuple[str, int]]) -> Status:
    """Filter's Status for fits_request's tests as bits (`reject_columns`): the
    `_plain_status` key in the low bits, then per scalar resource of the pod, in order, two
    bits: short, and asking more than allocatable (Unresolvable when both)."""
    plain = _plain_status_of(tuple(bool(key >> b & 1) for b in range(_PLAIN_BITS)))
    if key < 1 << _PLAIN_BITS:
        return plain
    reasons = list(plain.reasons)
    unresolvable = plain.code == st.Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    for j, (name, _) in enumerate(scalars):
        shift = _PLAIN_BITS + 2 * j
        if key >> shift & 1:
            reasons.append(f"Insufficient {name}")
            unresolvable = unresolvable or bool(key >> (shift + 1) & 1)
    if not reasons:  # (more than allocatable is short too: not reached)
        return plain
    code = st.Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else st.Code.UNSCHEDULABLE
    return Status(code, tuple(reasons), NAME)


class Fit(
    PreFilterPlugin,
    FilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    PlacementScorePlugin,
    EnqueueExtensions,
):
    NAME = NAME

    def __init__(
        self,
        *,
        ignored_resources: frozenset[str] = frozenset(),
        ignored_resource_groups: frozenset[str] = frozenset(),
        scorer: ResourceAllocationScorer | None = None,
        resize_preemption: bool = False,
        kubelet_like_resize_accounting: bool = False,
        counting: PodResourcesOptions = SCHEDULER_DEFAULTS,
        dra_classes: Callable[[], Mapping[str, str]] | None = None,
    ) -> None:
        self.ignored_resources = ignored_resources
        # DRAExtendedResource: extended resource name -> its DeviceClass (the scheduler's
        # DraManager), None without the gate.
        self.dra_classes = dra_classes
        self.ignored_resource_groups = ignored_resource_groups
        self.scorer = scorer or scorer_from_args(None)
        # InPlacePodVerticalScalingSchedulerPreemption (kemu.scheduling.deferred).
        self.resize_preemption = resize_preemption
        # Not upstream: kemuKubeletLikeResizeAccounting (module docstring).
        self.kubelet_like_resize_accounting = kubelet_like_resize_accounting
        # How pods are counted (the scheduler's gates: InPlacePodVerticalScaling,
        # PodLevelResources; upstream's fts.EnablePodLevelResources and friends).
        self.counting = counting
        # Placements are always scored MostAllocated, with the strategy's resources.
        self._placement_scorer = most_allocated_scorer(self.scorer.resources)

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ PreFilter / Filter

    def _pod_requests(self, state: CycleState, pod: types_pb2.Pod) -> tuple[int, ...]:
        """The scorer's requests of the cycle's pod (its PodInfo read, not copied)."""
        info = cycle_pod_info(state, pod, self.counting)
        return self.scorer.pod_requests(info.requests, info.non_zero_requests)

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        # Read only: PreFilterState keeps it.
        request = cycle_pod_info(state, pod, self.counting).requests
        # Upstream applies the delta rule to any pod bound to the evaluated node, not only to
        # Deferred ones; only those reach a cycle in the scheduler, simulations may pass others.
        assigned = pod.spec.node_name if self.resize_preemption else ""
        held = (
            HeldRequests(self.counting)
            if assigned and self.kubelet_like_resize_accounting
            else None
        )
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState(
                request,
                self.ignored_resources,
                self.ignored_resource_groups,
                assigned_node=assigned,
                uid=pod.metadata.uid,
                held=held,
                dra_backed=self._dra_backed(request),
            ),
        )
        return None, st.SUCCESS

    def _dra_backed(self, request: Resource) -> frozenset[str]:
        if self.dra_classes is None or not request.scalar:
            return frozenset()
        mapped = self.dra_classes()
        return frozenset(n for n, q in request.scalar.items() if q and n in mapped)

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return st.as_error(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState: not found")
        if s.assigned_node and s.assigned_node == node.name:
            return _filter_assigned(s, node)
        # Fast path: the common case is a fit, decided with a few integer comparisons.
        alloc = node.allocatable
        used = node.requested
        if len(node.pods) < alloc.allowed_pod_number and (
            s.empty
            or (
                not s.scalars
                and s.milli_cpu <= alloc.milli_cpu - used.milli_cpu
                and s.memory <= alloc.memory - used.memory
                and s.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage
            )
        ):
            return st.SUCCESS
        if not s.scalars:
            return _plain_status(s, node)
        insufficient = fits_request(s, node)
        if not insufficient:
            return st.SUCCESS
        return _status_of(insufficient)

    def nominated_columns_exact(
        self, state: CycleState, pod: types_pb2.Pod, nominated: Sequence[PodInfo]
    ) -> bool:
        """Its batch forms are exact over columns with nominated pods added
        (kemu.scheduling.columns.ColumnNominatedPlugin): they read the node's pods through
        the requested, free and pod-count columns, and the scalar columns, which do not
        count the nominated pods: exact unless the pod and a nominated pod both request
        scalar resources."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState) and s.scalars:
            return not any(pi.requests.scalar for pi in nominated)
        return True

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """Filter over columns, exact for cpu, memory, ephemeral storage, the pod count and
        scalar resources (fits_request's tests); the rows it leaves False take the per-node
        path, or `reject_columns`, for their reasons. A pod bound to a node (KEP-5836) has
        no batch form."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState) or s.assigned_node:
            return None
        ok: BoolArray = columns.free_pods[rows] > 0  # pods < allowed pods
        for name, qty in s.scalars:
            col = columns.scalar(name)
            if name in s.dra_backed:
                ok &= (col.free[rows] >= qty) | (col.allocatable[rows] == 0)
            else:
                ok &= col.free[rows] >= qty
        if s.empty:
            return ok
        # fits_request's test per resource: a resource the pod does not request always fits.
        if s.milli_cpu:
            ok &= columns.free_cpu[rows] >= s.milli_cpu
        if s.memory:
            ok &= columns.free_memory[rows] >= s.memory
        if s.ephemeral_storage:
            ok &= columns.free_ephemeral[rows] >= s.ephemeral_storage
        return ok

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]] | None:
        """The rows `filter_columns` rejects get `filter`'s Status, from their key of
        fits_request's tests computed over the columns (`_plain_status` bits, then two per
        scalar resource: short, and asking more than allocatable)
        (kemu.scheduling.columns.ColumnRejectPlugin): a preemptor's failed cycle, or a pod
        that fits one node of thousands, then builds no Status per node. Pods bound to a
        node, or with more scalar resources than the key holds: no batch form."""
        s = state.read(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState) or s.assigned_node:
            return None
        if _PLAIN_BITS + 2 * len(s.scalars) > 63:
            return None
        bits = (columns.free_pods[rows] <= 0).astype(np.int64)
        for shift, req, free, alloc in (
            (1, s.milli_cpu, columns.free_cpu, columns.alloc_cpu),
            (3, s.memory, columns.free_memory, columns.alloc_memory),
            (5, s.ephemeral_storage, columns.free_ephemeral, columns.alloc_ephemeral),
        ):
            if req > 0:
                bits |= (free[rows] < req).astype(np.int64) << shift
                bits |= (alloc[rows] < req).astype(np.int64) << (shift + 1)
        for j, (name, req) in enumerate(s.scalars):
            col = columns.scalar(name)
            shift = _PLAIN_BITS + 2 * j
            short = col.free[rows] < req
            over = col.allocatable[rows] < req
            if name in s.dra_backed:  # (fits_request: DynamicResources' where none)
                has = col.allocatable[rows] != 0
                short, over = short & has, over & has
            bits |= short.astype(np.int64) << shift
            bits |= over.astype(np.int64) << (shift + 1)
        codes, which = np.unique(bits, return_inverse=True)
        statuses: list[Status] = []
        index = np.empty(len(codes), dtype=np.int64)
        for i, code in enumerate(codes.tolist()):
            status = _status_of_key(code, s.scalars)
            if status.is_success():
                index[i] = -1
            else:
                index[i] = len(statuses)
                statuses.append(status)
        out: IntArray = index[which.reshape(-1)]
        return out, statuses

    # ------------------------------------------------------------ PreScore / Score

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(self._pod_requests(state, pod)))
        return st.SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
        return self.scorer.score(node, reqs), st.SUCCESS

    def score_nodes(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[list[int], Status]:
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
        score = self.scorer.score
        return [score(node, reqs) for node in nodes], st.SUCCESS

    def score_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> IntArray | None:
        batch = self.scorer.columns
        if batch is None:
            return None
        s = state.read(PRE_SCORE_STATE_KEY)
        if isinstance(s, PreScoreState):
            reqs = s.pod_requests
        else:
            reqs = self._pod_requests(state, pod)
        return batch(columns, rows, reqs)

    def score_extensions(self) -> ScoreExtensions | None:
        return None

    # ------------------------------------------------------------ PlacementScore (KEP-5732)

    def score_placement(
        self, state: CycleState, group: PodGroupKey, assignments: PodGroupAssignments
    ) -> tuple[int, Status]:
        """Bin-packing over the placement (upstream's NodeResourcesFit ScorePlacement): the
        MostAllocated score, whatever the scoring strategy's type, with its resources and
        weights, of the placement's nodes taken as one, the members proposed there added."""
        width = len(self.scorer.resources)
        requested = [0] * width
        for proposed in assignments.proposed:
            info = PodInfo(proposed.pod, self.counting)
            for i, r in enumerate(self.scorer.pod_requests(info.requests, info.non_zero_requests)):
                requested[i] += r
        score = self.scorer.placement_score(
            self._placement_scorer, assignments.placement.nodes, requested
        )
        return score, st.SUCCESS

    def placement_score_extensions(self) -> PlacementScoreExtensions | None:
        return None

    # ------------------------------------------------------------ queueing hints

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # In-place resize is GA (locked on), so a pod scaling down can free room.
        events = [
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN
                ),
                self.is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE
                ),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self.resize_preemption:
            # KEP-5836 as merged (kubernetes#140000, noderesources/fit.go EventsToRegister:
            # AssignedPod and TargetPod UpdatePodScaleUp): a scale-up can take the room a
            # parked deferred pod counted on, or its own scale-up can need a preemption.
            events.append(
                ClusterEventWithHint(
                    ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCALE_UP),
                    self.is_schedulable_after_pod_scale_up,
                )
            )
        return events

    def _node_bound(self, pod: types_pb2.Pod) -> str:
        """The node of a pod that is already bound (a Deferred resize, KEP-5836): its hints
        skip events of every other node. "" for the pods being placed."""
        return pod.spec.node_name if self.resize_preemption else ""

    def is_schedulable_after_pod_event(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        bound_to = self._node_bound(pod)
        if new is None:
            if not isinstance(old, types_pb2.Pod):
                return QueueingHint.QUEUE
            if bound_to:
                # Only a pod leaving the same node frees room there.
                same = old.spec.node_name == bound_to
                return QueueingHint.QUEUE if same else QueueingHint.SKIP
            if not old.spec.node_name and not old.status.nominated_node_name:
                # Neither bound nor holding a nomination: it reserved nothing.
                return QueueingHint.SKIP
            return QueueingHint.QUEUE
        if not isinstance(old, types_pb2.Pod) or not isinstance(new, types_pb2.Pod):
            return QueueingHint.QUEUE
        if bound_to and new.metadata.uid != pod.metadata.uid and new.spec.node_name != bound_to:
            return QueueingHint.SKIP
        if _is_schedulable_after_pod_scale_down(pod, old, new, self.counting):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_pod_scale_up(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """A pod's requests went up (upstream isSchedulableAfterTargetPodScaleUp and
        isSchedulableAfterAssignedPodScaleUp, noderesources/fit.go as merged by
        kubernetes#140000): only a deferred-resize pod cares, about its own scale-up (it may
        now need a preemption) and a scale-up of another pod on its node (it may take the
        room the pod was parked with); every other pod skips it."""
        if not is_pod_resize_deferred(pod):
            return QueueingHint.SKIP
        if not isinstance(new, types_pb2.Pod):
            return QueueingHint.QUEUE
        if new.metadata.uid == pod.metadata.uid:
            return QueueingHint.QUEUE
        if new.spec.node_name != pod.spec.node_name:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def is_schedulable_after_node_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        if not isinstance(new, types_pb2.Node):
            return QueueingHint.QUEUE
        bound_to = self._node_bound(pod)
        if bound_to and new.metadata.name != bound_to:
            return QueueingHint.SKIP
        request, _ = pod_requests(pod, self.counting)
        if fits_request(PreFilterState(request), NodeInfo(new)):
            # It would not fit even on the empty node.
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if not isinstance(old, types_pb2.Node):
            return QueueingHint.QUEUE
        if _any_requested_resource_increased(request, old, new):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _is_schedulable_after_pod_scale_down(
    target: types_pb2.Pod, old: types_pb2.Pod, new: types_pb2.Pod, counting: PodResourcesOptions
) -> bool:
    """The target itself scaled down, or a bound pod released some resource the target needs."""
    if new.metadata.uid == target.metadata.uid:
        return True
    if not new.spec.node_name:
        return False
    before, _ = pod_requests(old, counting)
    after, _ = pod_requests(new, counting)
    wanted, _ = pod_requests(target, counting)
    if wanted.milli_cpu and before.milli_cpu > after.milli_cpu:
        return True
    if wanted.memory and before.memory > after.memory:
        return True
    if wanted.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
        return True
    return any(
        qty and before.scalar.get(name, 0) > after.scalar.get(name, 0)
        for name, qty in wanted.scalar.items()
    )


def _any_requested_resource_increased(
    request: Resource, old: types_pb2.Node, new: types_pb2.Node
) -> bool:
    """Whether the node's allocatable grew for the pod count or a resource the pod requests."""
    before = Resource.from_list(old.status.allocatable)
    after = Resource.from_list(new.status.allocatable)
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if not (request.milli_cpu or request.memory or request.ephemeral_storage or request.scalar):
        return False
    if request.milli_cpu > 0 and after.milli_cpu > before.milli_cpu:
        return True
    if request.memory > 0 and after.memory > before.memory:
        return True
    if request.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage:
        return True
    return any(
        qty and after.scalar.get(name, 0) > before.scalar.get(name, 0)
        for name, qty in request.scalar.items()
    )


# ---------------------------------------------------------------- args and factory


def _string_set(args: PluginArgs, field: str) -> frozenset[str]:
    value = args.get(field)
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(f"{field}: must be a list of non-empty strings")
    return frozenset(value)


def scorer_from_args(strategy: Any, field: str = "scoringStrategy") -> ResourceAllocationScorer:
    """The scorer for a `scoringStrategy` arg (None: LeastAllocated over cpu and memory)."""
    if strategy is None:
        strategy = {}
    if not isinstance(strategy, Mapping):
        raise ValueError(f"{field}: must be an object")
    unknown = set(strategy) - {"type", "resources", "requestedToCapacityRatio"}
    if unknown:
        raise ValueError(f"{field}: unknown field(s) {sorted(unknown)}")
    kind = strategy.get("type", LEAST_ALLOCATED)
    resources: tuple[ResourceSpec, ...] = parse_resources(
        strategy.get("resources"), f"{field}.resources", default=DEFAULT_RESOURCES
    )
    cpu_memory = tuple(r.name for r in resources) == (CPU, MEMORY)
    fast: NodeScorer | None = None
    columns: ColumnScorer | None = None
    if kind == LEAST_ALLOCATED:
        fn = least_allocated_scorer(resources)
        if cpu_memory:
            fast = least_allocated_cpu_memory(
                resources[0].weight, resources[1].weight, use_requested=False
            )
            columns = least_allocated_cpu_memory_columns(resources[0].weight, resources[1].weight)
    elif kind == MOST_ALLOCATED:
        fn = most_allocated_scorer(resources)
        if cpu_memory:
            fast = most_allocated_cpu_memory(
                resources[0].weight, resources[1].weight, use_requested=False
            )
            columns = most_allocated_cpu_memory_columns(resources[0].weight, resources[1].weight)
    elif kind == REQUESTED_TO_CAPACITY_RATIO:
        param = strategy.get("requestedToCapacityRatio")
        if param is not None and not isinstance(param, Mapping):
            raise ValueError(f"{field}.requestedToCapacityRatio: must be an object")
        shape = parse_shape(
            None if param is None else param.get("shape"),
            f"{field}.requestedToCapacityRatio.shape",
        )
        fn = requested_to_capacity_ratio_scorer(resources, shape)
    else:
        raise ValueError(
            f"{field}.type: scoring strategy {kind!r} is not supported "
            f"(want {LEAST_ALLOCATED}, {MOST_ALLOCATED} or {REQUESTED_TO_CAPACITY_RATIO})"
        )
    return ResourceAllocationScorer(
        str(kind), fn, resources, use_requested=False, fast=fast, columns=columns
    )


def _bool_arg(args: PluginArgs, field: str) -> bool:
    value = args.get(field)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise ValueError(f"{field}: must be a boolean, got {value!r}")
    return value


def new(args: PluginArgs, handle: Handle) -> Fit:
    unknown = set(args) - {
        "ignoredResources",
        "ignoredResourceGroups",
        "scoringStrategy",
        KUBELET_LIKE_RESIZE_ACCOUNTING,
    }
    if unknown:
        raise ValueError(f"unknown NodeResourcesFit arg(s) {sorted(unknown)}")
    groups = _string_set(args, "ignoredResourceGroups")
    for g in groups:
        if "/" in g:
            raise ValueError(f"ignoredResourceGroups: resource group name {g!r} can't contain '/'")
    return Fit(
        ignored_resources=_string_set(args, "ignoredResources"),
        ignored_resource_groups=groups,
        scorer=scorer_from_args(args.get("scoringStrategy")),
        resize_preemption=resize_preemption_enabled(handle.gates),
        kubelet_like_resize_accounting=_bool_arg(args, KUBELET_LIKE_RESIZE_ACCOUNTING),
        counting=pod_resources_options(handle.gates),
        dra_classes=_dra_classes(handle),
    )


def _dra_classes(handle: Handle) -> Callable[[], Mapping[str, str]] | None:
    """The scheduler's extended resource -> DeviceClass mapping with DRAExtendedResource
    (and DynamicResourceAllocation) on; None otherwise or without a DRA manager."""
    gates = handle.gates
    if not (gates.enabled(DRA_EXTENDED_RESOURCE) and gates.enabled(DYNAMIC_RESOURCE_ALLOCATION)):
        return None
    manager = handle.shared_dra_manager()
    return None if manager is None else manager.extended_resource_classes
