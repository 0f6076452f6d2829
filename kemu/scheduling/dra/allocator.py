"""The structured allocator: which devices a pod's claims get on one node (upstream
staging/src/k8s.io/dynamic-resource-allocation/structured: allocator.go, internal/incubating/
allocator_incubating.go, internal/allocatedstate.go).

One Allocator is built per set of claims (a pod's unallocated claims) and asked node after node.
The search is upstream's: claim after claim, request after request, device after device,
depth-first with backtracking, the first complete solution wins (no scoring). Candidates are
visited pool by pool (see pools.py for the order), slice by slice, device by device; within one
request only combinations, not permutations, are tried. Per candidate the cheap checks come
first: in use, then the selectors (class, request; cached), consumable capacity, counters,
taints, the claim's constraints.

Upstream keeps three copies of this code (stable, incubating, experimental) chosen by the set of
features enabled; for the features kemu emulates they behave the same, and kemu has one
implementation that reads `Features`.

Errors that abort allocation (a missing class, a CEL error, an invalid pool asked for all
devices, ...) raise AllocationError with upstream's message; `allocate` returns None when the
claims do not fit on the node. FailedAllocationOnNode (an AllocationError) is the one that is
not fatal: the node has invalid pools and nothing else fits; the plugin makes it Unschedulable
on that node.
"""

from __future__ import annotations

import enum
import operator
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Final, NamedTuple

import numpy as np
from google.protobuf.internal.containers import RepeatedCompositeFieldContainer

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    FeatureGates,
)
from kemu.machinery.quantity import Quantity
from kemu.scheduling.dra import consumable_capacity as cc
from kemu.scheduling.dra.cel_cache import (
    CelCache,
    CelCompileError,
    CelEvaluator,
    CelRuntimeError,
)
from kemu.scheduling.dra.constraints import Constraint, DistinctAttribute, MatchAttribute
from kemu.scheduling.dra.fit_columns import (
    CODE_FITS,
    CODE_NO_FIT,
    CODE_UNDECIDED,
    MAX_SHAPES,
    Int8Array,
    ShapeColumns,
)
from kemu.scheduling.dra.pools import AllocationError, FailedAllocationOnNode, Pool, node_matches
from kemu.scheduling.dra.taints import taint_prevents_allocation

__all__ = [
    "AllocatedState",
    "AllocationError",
    "Allocator",
    "DeviceID",
    "FailedAllocationOnNode",
    "Features",
]

# resourceapi.AllocationResultsMaxSize: devices in one claim's allocation.
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
_MAX_INT: Final = 2**63 - 1

MODE_EXACT_COUNT: Final = "ExactCount"
MODE_ALL: Final = "All"
SOURCE_FROM_CLASS: Final = "FromClass"
SOURCE_FROM_CLAIM: Final = "FromClaim"


class DeviceID(NamedTuple):
    driver: str
    pool: str
    device: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}/{self.device}"


@dataclass(frozen=True)
class Features:
    """The DRA features the allocator honours (upstream structured.Features), resolved once
    from the feature gates."""

    admin_access: bool = False
    prioritized_list: bool = False
    partitionable_devices: bool = False
    device_taints: bool = False
    consumable_capacity: bool = False
    # upstream DeviceBindingAndStatus: DRADeviceBindingConditions and
    # DRAResourceClaimDeviceStatus both on.
    binding_conditions: bool = False
    # Not the allocator's (the scheduler plugin's claims for extended resources); carried here
    # so that one value describes DRA's features.
    extended_resource: bool = False

    @classmethod
    def from_gates(cls, gates: FeatureGates) -> Features:
        return cls(
            admin_access=gates.enabled(DRA_ADMIN_ACCESS),
            prioritized_list=gates.enabled(DRA_PRIORITIZED_LIST),
            partitionable_devices=gates.enabled(DRA_PARTITIONABLE_DEVICES),
            device_taints=gates.enabled(DRA_DEVICE_TAINTS),
            consumable_capacity=gates.enabled(DRA_CONSUMABLE_CAPACITY),
            binding_conditions=gates.enabled(DRA_DEVICE_BINDING_CONDITIONS)
            and gates.enabled(DRA_RESOURCE_CLAIM_DEVICE_STATUS),
            extended_resource=gates.enabled(DRA_EXTENDED_RESOURCE),
        )

    @classmethod
    def all(cls) -> Features:
        return cls(True, True, True, True, True, True, True)


def new_cel_cache(features: Features) -> CelCache:
    """The selector cache a scheduler (or an autoscaler simulation) keeps for its lifetime,
    on kemu's CEL environment for these features."""
    return CelCache(CelEvaluator(consumable_capacity=features.consumable_capacity))


@dataclass
class AllocatedState:
    """What allocated claims use (upstream AllocatedState, GatherAllocatedState): devices
    allocated exclusively; shares of devices that allow multiple allocations, with the capacity
    each device has given away so far (fully-qualified capacity names)."""

    allocated_devices: set[DeviceID] = field(default_factory=set)
    shared_devices: set[tuple[DeviceID, str]] = field(default_factory=set)
    aggregated_capacity: dict[DeviceID, dict[str, Quantity]] = field(default_factory=dict)
    # The devices of shared_devices (kept by add_result).
    _shared_ids: set[DeviceID] = field(default_factory=set, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._shared_ids = {d for d, _ in self.shared_devices}

    @classmethod
    def from_claims(
        cls, claims: Iterable[types_pb2.ResourceClaim], *, consumable_capacity: bool = True
    ) -> AllocatedState:
        """From allocated claims (the informer's and those allocated in flight). Devices
        allocated with admin access do not count; with DRAConsumableCapacity a result with a
        shareID is a share of a device."""
        state = cls()
        for claim in claims:
            if not claim.status.HasField("allocation"):
                continue
            for r in claim.status.allocation.devices.results:
                if r.admin_access:
                    continue
                state.add_result(r, consumable_capacity=consumable_capacity)
        return state

    def add_result(
        self, r: types_pb2.DeviceRequestAllocationResult, *, consumable_capacity: bool = True
    ) -> None:
        device_id = DeviceID(r.driver, r.pool, r.device)
        if consumable_capacity and r.HasField("share_id"):
            self.shared_devices.add((device_id, r.share_id))
            self._shared_ids.add(device_id)
            if r.consumed_capacity:
                have = self.aggregated_capacity.setdefault(device_id, {})
                for name, value in r.consumed_capacity.items():
                    key = cc.qualify(name, r.driver)
                    q = cc.quantity(value)
                    have[key] = have[key] + q if key in have else q
            return
        self.allocated_devices.add(device_id)

    def is_allocated(self, device_id: DeviceID) -> bool:
        """Exclusively or as a share (upstream IsDeviceAllocated): its counters are consumed."""
        return device_id in self.allocated_devices or device_id in self._shared_ids


class FitVerdict(enum.Enum):
    """Allocator.fit_verdict's answer."""

    NO_FIT = "no fit"
    FITS = "fits"
    UNDECIDED = "undecided"


# Allocator.fit_verdict's verdict on one device for one request.
_NOT_SELECTABLE: Final = 0
_SELECTABLE: Final = 1
_SURE: Final = 2
_UNKNOWN: Final = 3
MAX_FIT_ENTRIES: Final = 200_000


# fit_verdict's entry of a node for a request: devices selectable, surely taken, unknown;
# whether every slice of the node is node-local.
_FitEntry = tuple[frozenset[DeviceID], frozenset[DeviceID], frozenset[DeviceID], bool]
# What a request's fit entries depend on besides the node and the features: the class's
# selectors, the request's, whether it asks for capacity; the features.
_FitKey = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], bool, "Features"]


def _same_objects(a: object, b: tuple[object, ...]) -> bool:
    assert isinstance(a, tuple)
    return len(a) == len(b) and all(map(operator.is_, a, b))


def _fit_key(p: _Prepared, features: Features) -> _FitKey:
    return (
        p.class_exprs,
        p.request.exprs,
        tuple(sel.cel.expression for sel in p.device_class.spec.selectors),
        p.request.capacity is not None,
        features,
    )


class _Key(NamedTuple):
    claim: int
    request: int
    sub_request: int


@dataclass(slots=True)
class _Request:
    """A request or a subrequest (upstream requestAccessor)."""

    name: str
    class_name: str
    mode: str
    count: int
    admin_access: bool
    has_admin_access: bool
    selectors: Sequence[types_pb2.DeviceSelector]
    tolerations: Sequence[types_pb2.DeviceToleration]
    capacity: Mapping[str, str] | None  # None: no capacity requirements
    # The selectors' CEL expressions (set once the selectors are known to all have one).
    exprs: tuple[str, ...] = ()

    @classmethod
    def exact(cls, r: types_pb2.DeviceRequest) -> _Request:
        e = r.exactly
        return cls(
            name=r.name,
            class_name=e.device_class_name,
            mode=e.allocation_mode or MODE_EXACT_COUNT,
            count=(e.count or 1)
            if (e.allocation_mode or MODE_EXACT_COUNT) == MODE_EXACT_COUNT
            else 0,
            admin_access=e.admin_access,
            has_admin_access=e.HasField("admin_access"),
            selectors=e.selectors,
            tolerations=e.tolerations,
            capacity=e.capacity.requests if e.HasField("capacity") else None,
        )

    @classmethod
    def sub(cls, s: types_pb2.DeviceSubRequest) -> _Request:
        mode = s.allocation_mode or MODE_EXACT_COUNT
        return cls(
            name=s.name,
            class_name=s.device_class_name,
            mode=mode,
            count=(s.count or 1) if mode == MODE_EXACT_COUNT else 0,
            admin_access=False,
            has_admin_access=False,
            selectors=s.selectors,
            tolerations=s.tolerations,
            capacity=s.capacity.requests if s.HasField("capacity") else None,
        )


@dataclass(slots=True)
class _Candidate:
    """A device at its place (upstream deviceWithID)."""

    id: DeviceID
    device: types_pb2.Device
    slice: types_pb2.ResourceSlice
    index: int
    pool: Pool


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A request or subrequest checked once per Allocator (nothing here depends on the node)."""

    key: _Key
    request: _Request
    parent: _Request | None
    device_class: types_pb2.DeviceClass
    class_exprs: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _PreparedClaim:
    claim: types_pb2.ResourceClaim
    requests: tuple[_Prepared, ...]
    # One factory per constraint: each Allocate call gets fresh ones.
    constraints: tuple[Callable[[], Constraint], ...]
    # Whether a class it may use or the claim itself has configuration.
    has_config: bool


@dataclass(slots=True)
class _RequestData:
    request: _Request
    parent: _Request | None
    device_class: types_pb2.DeviceClass | None
    class_exprs: tuple[str, ...] = ()
    num_devices: int = 0
    selected_sub_request: int = 0
    all_devices: list[_Candidate] = field(default_factory=list)

    def request_name(self) -> str:
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name


@dataclass(slots=True)
class _DeviceResult:
    request: _Request
    parent: str  # "" unless a subrequest
    id: DeviceID
    device: types_pb2.Device
    slice: types_pb2.ResourceSlice
    share_id: str | None = None
    consumed: dict[str, Quantity] | None = None
    admin_access: bool | None = None

    def request_name(self) -> str:
        return f"{self.parent}/{self.request.name}" if self.parent else self.request.name


class _MaxSizeExceeded(Exception):
    """The claim would get more than 32 devices (upstream errAllocationResultMaxSizeExceeded):
    backtrack harder."""


def _claim_ref(claim: types_pb2.ResourceClaim) -> str:
    """klog.KObj: namespace/name."""
    m = claim.metadata
    return f"{m.namespace}/{m.name}" if m.namespace else m.name


def new_share_id() -> str:
    return str(uuid.uuid4())


def _zero_counters(counter_set: types_pb2.CounterSet) -> dict[str, Quantity]:
    return {name: cc.quantity(c.value) for name, c in counter_set.counters.items()}


def _prepare_claim(
    a: Allocator, claim_index: int, claim: types_pb2.ResourceClaim
) -> _PreparedClaim:
    """upstream Allocate's per-claim checks that do not depend on the node, in its order."""
    features = a.features
    ref = _claim_ref(claim)
    prepared: list[_Prepared] = []
    for request_index, request in enumerate(claim.spec.devices.requests):
        has_subs = len(request.first_available) > 0
        if not features.prioritized_list and has_subs:
            raise AllocationError(
                f"claim {ref}, request {request.name}: has subrequests, but the "
                "DRAPrioritizedList feature is disabled"
            )
        if not features.consumable_capacity:
            if request.HasField("exactly") and request.exactly.HasField("capacity"):
                raise AllocationError(
                    f"claim {ref}, request {request.name}: has capacity requests, but the "
                    "DRAConsumableCapacity feature is disabled"
                )
            for sub in request.first_available:
                if sub.HasField("capacity"):
                    raise AllocationError(
                        f"claim {ref}, subrequest {sub.name}: has capacity requests, but the "
                        "DRAConsumableCapacity feature is disabled"
                    )
        if has_subs:
            parent = _Request(request.name, "", MODE_EXACT_COUNT, 0, False, False, (), (), None)
            for sub_index, sub in enumerate(request.first_available):
                key = _Key(claim_index, request_index, sub_index)
                prepared.append(_prepare_request(a, ref, _Request.sub(sub), parent, key))
        else:
            key = _Key(claim_index, request_index, 0)
            prepared.append(_prepare_request(a, ref, _Request.exact(request), None, key))
    constraints: list[Callable[[], Constraint]] = []
    for i, c in enumerate(claim.spec.devices.constraints):
        names, attr = tuple(c.requests), ""
        if c.HasField("match_attribute"):
            attr = c.match_attribute
            constraints.append(partial(MatchAttribute, names, attr))
        elif c.HasField("distinct_attribute"):
            attr = c.distinct_attribute
            constraints.append(partial(DistinctAttribute, names, attr))
        else:
            raise AllocationError(
                f"claim {ref}, constraint #{i}: empty constraint (unsupported constraint type?)"
            )
    has_config = bool(claim.spec.devices.config) or any(
        p.device_class.spec.config for p in prepared
    )
    return _PreparedClaim(claim, tuple(prepared), tuple(constraints), has_config)


def _prepare_request(
    a: Allocator, ref: str, request: _Request, parent: _Request | None, key: _Key
) -> _Prepared:
    for i, selector in enumerate(request.selectors):
        if not selector.HasField("cel"):
            raise AllocationError(
                f"claim {ref}, request {request.name}, selector #{i}: CEL expression empty "
                "(unsupported selector type?)"
            )
    request.exprs = tuple(sel.cel.expression for sel in request.selectors)
    if not a.features.admin_access and request.has_admin_access:
        raise AllocationError(
            f"claim {ref}, request {request.name}: admin access is requested, but the feature "
            "is disabled"
        )
    if not request.class_name:
        raise AllocationError(
            f"claim {ref}, request {request.name}: missing device class name (unsupported "
            "request type?)"
        )
    device_class = a.classes.get(request.class_name)
    if device_class is None:
        raise AllocationError(
            f"claim {ref}, request {request.name}: could not retrieve device class "
            f'{request.class_name}: deviceclass.resource.k8s.io "{request.class_name}" not found'
        )
    if request.mode == MODE_EXACT_COUNT:
        if request.count > _MAX_INT:
            raise AllocationError(
                f"claim {ref}, request {request.name}: exact count {request.count} is too large"
            )
    elif request.mode != MODE_ALL:
        raise AllocationError(
            f"claim {ref}, request {request.name}: unsupported count mode {request.mode}"
        )
    class_exprs = tuple(
        sel.cel.expression for sel in device_class.spec.selectors if sel.HasField("cel")
    )
    return _Prepared(key, request, parent, device_class, class_exprs)


class Allocator:
    """Allocates a pod's claims on a node (upstream structured.Allocator).

    `claims` are the claims to allocate (their status.allocation unset), `allocated` what other
    claims use, `classes` the DeviceClasses by name, `slices` every ResourceSlice (with
    DeviceTaintRules already applied, see taints.apply_taint_rules), `cel_cache` the selector
    results shared across calls. `share_id` makes shareIDs (a UUID each by default)."""

    def __init__(
        self,
        features: Features,
        claims: Sequence[types_pb2.ResourceClaim],
        allocated: AllocatedState,
        classes: Mapping[str, types_pb2.DeviceClass],
        slices: Sequence[types_pb2.ResourceSlice],
        cel_cache: CelCache,
        *,
        share_id: Callable[[], str] = new_share_id,
    ) -> None:
        self.features = features
        self.claims = list(claims)
        self.allocated = allocated
        self.classes = classes
        self.cel_cache = cel_cache
        self._share_id = share_id
        self._all_slices = list(slices)
        # The slices by node (and those of no single node), kept in the cache while the
        # slices are the same objects (kemu: each PreFilter passes the informer's slices).
        memo = cel_cache.slice_partition
        if (
            memo is not None
            and len(memo[0]) == len(self._all_slices)
            and all(map(operator.is_, memo[0], self._all_slices))
        ):
            self._all_slices, self._slices_on_node, self._slices_shared = memo
        else:
            self._slices_on_node = {}
            self._slices_shared = []
            for s in slices:
                if s.spec.node_name:
                    self._slices_on_node.setdefault(s.spec.node_name, []).append(s)
                else:
                    self._slices_shared.append(s)
            cel_cache.slice_partition = (
                self._all_slices,
                self._slices_on_node,
                self._slices_shared,
            )
        # Counters left in each pool after the allocated devices' consumption (computed once:
        # nothing it depends on changes while this Allocator lives).
        self._available_counters: dict[tuple[str, str], dict[str, dict[str, Quantity]]] = {}
        self._prepared: list[_PreparedClaim] | None = None
        self._fit_shape_memo: (
            tuple[tuple[tuple[_Prepared, object], ...], bool] | tuple[()] | None
        ) = None
        self.allocate_one_calls = 0

    def prepared(self) -> list[_PreparedClaim]:
        """The claims' requests checked (once; an AllocationError is raised again each call)."""
        if self._prepared is None:
            self._prepared = [_prepare_claim(self, i, c) for i, c in enumerate(self.claims)]
        return self._prepared

    def allocate(self, node: types_pb2.Node) -> list[types_pb2.AllocationResult] | None:
        """One AllocationResult per claim (in order), or None when they do not fit on `node`."""
        return _Run(self, node).run()

    def fit_verdict(self, node: types_pb2.Node) -> FitVerdict:
        """What `allocate(node)` would do, told cheaply where the claims' shape allows it:
        NO_FIT when it would return None (no error), FITS when it would return results (no
        error), else UNDECIDED (call `allocate`). kemu's own shortcut (upstream runs the
        allocator on every node); tests/unit/scheduling/dra/test_fit_verdict.py compares it
        with `allocate` on random clusters.

        Decided for ExactCount requests without subrequests or admin access (constraints only
        for NO_FIT, since they can only refuse more), on nodes without invalid pools: a request
        whose selectable devices not allocated to other claims are fewer than its count cannot
        be served (the search takes distinct, selectable, unused devices); one request alone
        is served when that many of them are surely taken (no counters, taints, shared or
        capacity-checked devices; node-local slices, so the node selector is the node)."""
        shape = self._fit_shape()
        if shape is None:
            return FitVerdict.UNDECIDED
        requests, single = shape
        name = node.metadata.name
        # What the node's pools depend on (the same objects: the same pools).
        on_node = self._slices_on_node.get(name)
        context = (node, on_node, self._slices_shared, self._all_slices)
        entries = self.cel_cache.fit_entries
        pools: list[Pool] | None = None
        allocated = self.allocated.allocated_devices
        fits = single
        for p, key in requests:
            found = entries.get((name, key))
            if found is not None and _same_objects(found[0], context):
                entry: _FitEntry | None = found[1]  # type: ignore[assignment]
            else:
                if pools is None:
                    try:
                        pools = self.cel_cache.pools.gather(
                            (on_node or []) + self._slices_shared,
                            node,
                            partitionable_devices=self.features.partitionable_devices,
                            all_slices=self._all_slices,
                        )
                    except AllocationError:
                        return FitVerdict.UNDECIDED
                entry = self._fit_entry(pools, p)
                if len(entries) >= MAX_FIT_ENTRIES:
                    entries.clear()
                entries[(name, key)] = (context, entry)
            if entry is None:
                return FitVerdict.UNDECIDED
            selectable, sure, unknown, all_local = entry
            if unknown and not unknown <= allocated:
                return FitVerdict.UNDECIDED  # the search could end in an error
            wanted = p.request.count
            if len(selectable) - len(selectable & allocated) < wanted:
                return FitVerdict.NO_FIT  # later requests are never reached
            fits = fits and all_local and len(sure) - len(sure & allocated) >= wanted
        return FitVerdict.FITS if fits else FitVerdict.UNDECIDED

    def fit_verdicts(self, nodes: Sequence[types_pb2.Node | None]) -> Int8Array | None:
        """`fit_verdict` for every node of `nodes` at once (one row each; a row without a
        node is undecided), as codes (fit_columns.CODE_NO_FIT, CODE_FITS, CODE_UNDECIDED);
        None when the claims' shape is not one it decides (every row undecided). The nodes'
        entries are kept per request shape across pods while the nodes and slices are the
        same objects (kemu.scheduling.dra.fit_columns); what changes between pods, the
        allocated devices, is a mask, and each count per row a bincount."""
        shape = self._fit_shape()
        if shape is None:
            return None
        requests, single = shape
        cache = self.cel_cache
        devices = cache.device_mask
        if devices.clear_if_large():
            cache.fit_columns.clear()
        columns = [self._shape_columns(nodes, p, key) for p, key in requests]
        allocated = devices.allocated(self.allocated.allocated_devices)
        n = len(nodes)
        out: Int8Array = np.full(n, CODE_UNDECIDED, dtype=np.int8)
        open_ = np.ones(n, dtype=np.bool_)
        fits = np.full(n, single, dtype=np.bool_)
        for (p, _), col in zip(requests, columns, strict=True):
            wanted = p.request.count
            open_ &= col.valid  # no entry: undecided
            if len(col.unknown[0]):
                open_ &= col.free(col.unknown, allocated, n) == 0  # the search could err
            no_fit = open_ & (col.free(col.selectable, allocated, n) < wanted)
            out[no_fit] = CODE_NO_FIT  # later requests are never reached
            open_ &= ~no_fit
            if single:
                fits &= col.all_local & (col.free(col.sure, allocated, n) >= wanted)
        if single:
            out[open_ & fits] = CODE_FITS
        return out

    def _shape_columns(
        self, nodes: Sequence[types_pb2.Node | None], p: _Prepared, key: object
    ) -> ShapeColumns:
        """The request shape's entries over `nodes` (kept while the same objects)."""
        kept = self.cel_cache.fit_columns
        found = kept.get(key)
        if (
            isinstance(found, ShapeColumns)
            and found.slices is self._all_slices
            and _same_objects(found.nodes, tuple(nodes))
        ):
            return found
        built = ShapeColumns.build(
            nodes,
            self._all_slices,
            [self._node_entry(node, p, key) if node is not None else None for node in nodes],
            self.cel_cache.device_mask,
        )
        if len(kept) >= MAX_SHAPES:
            kept.clear()
        kept[key] = built
        return built

    def _node_entry(self, node: types_pb2.Node, p: _Prepared, key: object) -> _FitEntry | None:
        """fit_verdict's entry of `node` for the request (None: undecided there)."""
        name = node.metadata.name
        on_node = self._slices_on_node.get(name)
        context = (node, on_node, self._slices_shared, self._all_slices)
        entries = self.cel_cache.fit_entries
        found = entries.get((name, key))
        if found is not None and _same_objects(found[0], context):
            return found[1]  # type: ignore[return-value]
        try:
            pools = self.cel_cache.pools.gather(
                (on_node or []) + self._slices_shared,
                node,
                partitionable_devices=self.features.partitionable_devices,
                all_slices=self._all_slices,
            )
        except AllocationError:
            return None
        entry = self._fit_entry(pools, p)
        if len(entries) >= MAX_FIT_ENTRIES:
            entries.clear()
        entries[(name, key)] = (context, entry)
        return entry

    def _fit_shape(self) -> tuple[tuple[tuple[_Prepared, object], ...], bool] | None:
        """The requests when every claim's are of the shape fit_verdict decides, with whether
        it may say FITS (one request, no constraints); None otherwise."""
        if self._fit_shape_memo is not None:
            return self._fit_shape_memo or None
        shape: tuple[tuple[tuple[_Prepared, object], ...], bool] | None = None
        try:
            prepared = self.prepared()
        except AllocationError:
            prepared = []
        else:
            requests: list[tuple[_Prepared, object]] = []
            constraints = False
            simple = True
            for pc in prepared:
                constraints = constraints or bool(pc.constraints)
                total = 0
                for p in pc.requests:
                    r = p.request
                    if p.parent is not None or r.mode != MODE_EXACT_COUNT or r.admin_access:
                        simple = False
                    total += r.count
                    # one token object per key (hashed by identity: cheap per node)
                    keys = self.cel_cache.fit_keys
                    if len(keys) >= MAX_FIT_ENTRIES:
                        keys.clear()  # (old tokens stay distinct objects)
                    requests.append((p, keys.setdefault(_fit_key(p, self.features), object())))
                if total > ALLOCATION_RESULTS_MAX_SIZE:
                    simple = False  # _check_claim's error
            if simple and requests:
                shape = (tuple(requests), len(requests) == 1 and not constraints)
        self._fit_shape_memo = shape if shape is not None else ()
        return shape

    def _fit_entry(self, pools: list[Pool], p: _Prepared) -> _FitEntry | None:
        """The node's devices the request's selectors take, those of them the search surely
        takes (_SURE), those only the search can tell (_UNKNOWN), and whether all the node's
        slices are node-local (fit_verdict keeps it across pods while what the node's pools
        depend on is the same); None when a pool is invalid or a slice selects nodes per
        device."""
        selectable: list[DeviceID] = []
        sure: list[DeviceID] = []
        unknown: list[DeviceID] = []
        all_local = True
        result: _FitEntry | None = None
        for pool in pools:
            if pool.is_invalid:
                break
            if pool.is_incomplete:
                continue  # never allocated from
            for s in pool.device_slices_targeting_node:
                if s.spec.per_device_node_selection:
                    break
                all_local = all_local and bool(s.spec.node_name)
                driver, pool_name = s.spec.driver, s.spec.pool.name
                for index, device in enumerate(s.spec.devices):
                    device_id = DeviceID(driver, pool_name, device.name)
                    verdict = self._fit_device(p, s, index, device)
                    if verdict == _UNKNOWN:
                        unknown.append(device_id)
                    elif verdict != _NOT_SELECTABLE:
                        selectable.append(device_id)
                        if verdict == _SURE:
                            sure.append(device_id)
            else:
                continue
            break
        else:
            result = (frozenset(selectable), frozenset(sure), frozenset(unknown), all_local)
        return result

    def _fit_device(
        self, p: _Prepared, s: types_pb2.ResourceSlice, index: int, device: types_pb2.Device
    ) -> int:
        """What the search would make of an unused device for the request: _NOT_SELECTABLE,
        _SELECTABLE (it may still refuse it), _SURE (it takes it) or _UNKNOWN (a selector or
        the capacity check could fail: only the search can tell)."""
        features = self.features
        request = p.request
        if not features.binding_conditions and device.binding_conditions:
            return _NOT_SELECTABLE
        cache = self.cel_cache
        driver = s.spec.driver
        device_key = cache.device_key(s, index)
        selected = cache.selected(p.class_exprs, request.exprs, driver, device_key)
        if selected is None:
            try:
                selected = all(
                    cache.matches(sel.cel.expression, driver, device, device_key)
                    for sel in p.device_class.spec.selectors
                ) and all(
                    cache.matches(sel.cel.expression, driver, device, device_key)
                    for sel in request.selectors
                )
            except (CelCompileError, CelRuntimeError):
                return _UNKNOWN
            cache.remember_selected(p.class_exprs, request.exprs, driver, device_key, selected)
        if not selected:
            return _NOT_SELECTABLE
        multi = features.consumable_capacity and device.allow_multiple_allocations
        trivial_capacity = not device.capacity or (
            request.capacity is None
            and not device.allow_multiple_allocations
            and not any(c.HasField("request_policy") for c in device.capacity.values())
        )
        if multi or (features.consumable_capacity and not trivial_capacity):
            # The capacity check may fail with an error; shares are left to the search (its
            # undo of a share can fail: see test_fit_verdict.py).
            return _UNKNOWN
        if (
            device.consumes_counters
            or (features.device_taints and len(device.taints) > 0)
            or (features.consumable_capacity and request.capacity is not None)
        ):
            return _SELECTABLE
        return _SURE


class _Run:
    """One Allocate call (upstream's `allocator`): the state of the search."""

    def __init__(self, a: Allocator, node: types_pb2.Node) -> None:
        self.a = a
        self.features = a.features
        self.node = node
        self.claims = a.claims
        self.pools: list[Pool] = []
        self.request_data: dict[_Key, _RequestData] = {}
        self.constraints: list[list[Constraint]] = [[] for _ in a.claims]
        self.matches: dict[tuple[DeviceID, _Key], bool] = {}
        # Devices being allocated in this attempt → the claims (indices) they go to.
        self.allocating: dict[DeviceID, set[int]] = {}
        # Capacity of shared devices being allocated in this attempt.
        self.allocating_capacity: dict[DeviceID, dict[str, Quantity]] = {}
        # Counters consumed by devices being allocated, per pool and counter set.
        self.consumed_counters: dict[tuple[str, str], dict[str, dict[str, Quantity]]] = {}
        self.results: list[list[_DeviceResult]] = [[] for _ in a.claims]

    # ------------------------------------------------------------ the call

    def run(self) -> list[types_pb2.AllocationResult] | None:
        a = self.a
        slices_for_node = a._slices_on_node.get(self.node.metadata.name, []) + a._slices_shared
        try:
            self.pools = a.cel_cache.pools.gather(
                slices_for_node,
                self.node,
                partitionable_devices=self.features.partitionable_devices,
                all_slices=a._all_slices,
            )
        except AllocationError as e:
            raise AllocationError(f"gather pool information: {e}") from None

        for claim_index, prepared in enumerate(a.prepared()):
            self._check_claim(claim_index, prepared)

        try:
            done = self._allocate_one(_Key(0, 0, 0), 0, False, (0, 0, 0))
        except _MaxSizeExceeded:
            done = False
        if not done:
            for pool in self.pools:
                if pool.is_invalid:
                    # Not fatal for other nodes.
                    raise FailedAllocationOnNode("invalid resource pools were encountered")
            return None
        return [self._result(i, claim) for i, claim in enumerate(self.claims)]

    def _check_claim(self, claim_index: int, prepared: _PreparedClaim) -> None:
        """This call's state for one claim: its requests' data (an "All" request's devices on
        this node), the claim's device limit, fresh constraints."""
        claim = prepared.claim
        least: dict[int, int] = {}
        for p in prepared.requests:
            data = _RequestData(
                request=p.request,
                parent=p.parent,
                device_class=p.device_class,
                class_exprs=p.class_exprs,
            )
            if p.request.mode == MODE_ALL:
                self._collect_all(p.key, data)
            else:
                data.num_devices = p.request.count
            self.request_data[p.key] = data
            have = least.get(p.key.request)
            least[p.key.request] = data.num_devices if have is None else min(have, data.num_devices)
        min_devices = sum(least.values())
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE:
            raise AllocationError(
                f"claim {_claim_ref(claim)}: number of requested devices {min_devices} exceeds "
                f"the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
            )
        self.constraints[claim_index] = [make() for make in prepared.constraints]

    def _collect_all(self, key: _Key, data: _RequestData) -> None:
        """The devices an "All" request takes on this node: every selectable one of every
        pool; an incomplete or invalid pool is an error."""
        ref = _claim_ref(self.claims[key.claim])
        request = data.request
        for pool in self.pools:
            if pool.is_incomplete:
                raise AllocationError(
                    f"claim {ref}, request {request.name}: asks for all devices, but "
                    f"resource pool {pool.id} is currently being updated"
                )
            if pool.is_invalid:
                raise AllocationError(
                    f"claim {ref}, request {request.name}: asks for all devices, but "
                    f"resource pool {pool.id} is currently invalid"
                )
            for s in pool.device_slices_targeting_node:
                for index, device in enumerate(s.spec.devices):
                    cand = _Candidate(
                        DeviceID(s.spec.driver, s.spec.pool.name, device.name),
                        device,
                        s,
                        index,
                        pool,
                    )
                    if not self._is_selectable(key, data, cand):
                        continue
                    if self.features.consumable_capacity and (
                        self._capacity_fits(key, request, cand) is None
                    ):
                        continue
                    data.all_devices.append(cand)
        data.num_devices = len(data.all_devices)

    # ------------------------------------------------------------ the search

    def _allocate_one(
        self, key: _Key, device_index: int, in_sub_request: bool, start: tuple[int, int, int]
    ) -> bool:
        """Allocates the `device_index`th device of the request at `key`, then the rest,
        recursively. True when everything got allocated; _MaxSizeExceeded to backtrack past
        the previous request; AllocationError to abort."""
        self.a.allocate_one_calls += 1
        if key.claim >= len(self.claims):
            return True  # the first complete solution wins
        claim = self.claims[key.claim]
        if key.request >= len(claim.spec.devices.requests):
            try:
                return self._allocate_one(_Key(key.claim + 1, 0, 0), 0, False, (0, 0, 0))
            except _MaxSizeExceeded:
                # Another allocation of an earlier claim may let a later one pick a smaller
                # subrequest.
                return False
        data = self.request_data[key]

        if not in_sub_request and data.parent is not None:
            # A firstAvailable request: the first subrequest with which everything that
            # follows succeeds wins.
            all_exceeded = True
            sub = 0
            while True:
                sub_key = _Key(key.claim, key.request, sub)
                if sub_key not in self.request_data:
                    if all_exceeded:
                        raise _MaxSizeExceeded
                    return False
                try:
                    ok = self._allocate_one(sub_key, 0, True, (0, 0, 0))
                except _MaxSizeExceeded:
                    sub += 1
                    continue
                all_exceeded = False
                if ok:
                    self.request_data[_Key(key.claim, key.request, 0)].selected_sub_request = sub
                    return True
                sub += 1

        request = data.request
        do_all = request.mode == MODE_ALL
        if do_all and not data.all_devices:
            return False  # "All" needs at least one device
        if device_index >= data.num_devices:
            return self._allocate_one(_Key(key.claim, key.request + 1, 0), 0, False, (0, 0, 0))
        if (
            len(self.results[key.claim]) + data.num_devices - device_index
            > ALLOCATION_RESULTS_MAX_SIZE
        ):
            raise _MaxSizeExceeded

        if do_all:
            # The order does not matter: the next one of the known devices or no solution.
            cand = data.all_devices[device_index]
            undo = self._allocate_device(key, data, cand, must=True)
            if undo is None:
                return False
            try:
                done = self._allocate_one(key, device_index + 1, in_sub_request, (0, 0, 0))
            except BaseException:
                undo()
                raise
            if not done:
                undo()
            return done

        pools = self.pools
        features = self.features
        for pool_index in range(start[0], len(pools)):
            pool = pools[pool_index]
            if pool.is_incomplete or pool.is_invalid:
                continue  # never allocated from; other pools may do
            slices = pool.device_slices_targeting_node
            slice_start = start[1] if pool_index == start[0] else 0
            for slice_index in range(slice_start, len(slices)):
                s = slices[slice_index]
                driver, pool_name = s.spec.driver, s.spec.pool.name
                devices = s.spec.devices
                first = start[2] if (pool_index == start[0] and slice_index == start[1]) else 0
                for index in range(first, len(devices)):
                    device = devices[index]
                    device_id = DeviceID(driver, pool_name, device.name)
                    # "In use" first: cheap.
                    if request.admin_access:
                        if key.claim in self.allocating.get(device_id, ()):
                            continue
                    elif self._in_use(device_id):
                        continue
                    cand = _Candidate(device_id, device, s, index, pool)
                    if not self._is_selectable(key, data, cand):
                        continue
                    fits: dict[str, Quantity] | None = None
                    if features.consumable_capacity:
                        fits = self._capacity_fits(key, request, cand)
                        if fits is None:
                            continue
                    undo = self._allocate_device(key, data, cand, must=False, fits=fits)
                    if undo is None:
                        continue
                    try:
                        done = self._allocate_one(
                            key,
                            device_index + 1,
                            in_sub_request,
                            (pool_index, slice_index, index + 1),
                        )
                    except BaseException:
                        undo()
                        raise
                    if done:
                        return True
                    undo()
        return False

    def _in_use(self, device_id: DeviceID) -> bool:
        return device_id in self.a.allocated.allocated_devices or bool(
            self.allocating.get(device_id)
        )

    def _is_selectable(self, key: _Key, data: _RequestData, cand: _Candidate) -> bool:
        device = cand.device
        if not self.features.binding_conditions and device.binding_conditions:
            return False  # not supported with the feature off
        match_key = (cand.id, key)
        found = self.matches.get(match_key)
        if found is not None:
            return found
        cache = self.a.cel_cache
        request = data.request
        device_key = cache.device_key(cand.slice, cand.index)
        driver = cand.id.driver
        result = cache.selected(data.class_exprs, request.exprs, driver, device_key)
        if result is None:
            result = (
                data.device_class is None
                or self._selectors_match(
                    key, cand, data.device_class, data.device_class.spec.selectors
                )
            ) and self._selectors_match(key, cand, None, request.selectors)
            cache.remember_selected(data.class_exprs, request.exprs, driver, device_key, result)
        if result and cand.slice.spec.per_device_node_selection:
            result = node_matches(
                self.node,
                device.node_name,
                device.all_nodes,
                device.node_selector if device.HasField("node_selector") else None,
            )
        self.matches[match_key] = result
        return result

    def _selectors_match(
        self,
        key: _Key,
        cand: _Candidate,
        device_class: types_pb2.DeviceClass | None,
        selectors: Sequence[types_pb2.DeviceSelector],
    ) -> bool:
        if not selectors:
            return True
        cache = self.a.cel_cache
        device_key = cache.device_key(cand.slice, cand.index)
        for i, selector in enumerate(selectors):
            try:
                if not cache.matches(
                    selector.cel.expression, cand.id.driver, cand.device, device_key
                ):
                    return False
            except CelCompileError as e:
                if device_class is not None:
                    raise AllocationError(
                        f"class {device_class.metadata.name}: selector #{i}: CEL compile error: {e}"
                    ) from None
                raise AllocationError(
                    f"claim {_claim_ref(self.claims[key.claim])}: selector #{i}: CEL compile "
                    f"error: {e}"
                ) from None
            except CelRuntimeError as e:
                if device_class is not None:
                    raise AllocationError(
                        f"class {device_class.metadata.name}: selector #{i} on device {cand.id}: "
                        f"CEL runtime error: {e}"
                    ) from None
                raise AllocationError(
                    f"claim {_claim_ref(self.claims[key.claim])}: selector #{i} on device "
                    f"{cand.id}: CEL runtime error: {e}"
                ) from None
        return True

    def _capacity_fits(
        self, key: _Key, request: _Request, cand: _Candidate
    ) -> dict[str, Quantity] | None:
        """What the device's capacities would hold with this request added, None when it does
        not fit (a device without capacities and a request without any: always fits)."""
        device = cand.device
        if not device.capacity:
            return {} if not request.capacity else None
        if (
            not request.capacity
            and not device.allow_multiple_allocations
            and not any(c.HasField("request_policy") for c in device.capacity.values())
        ):
            # An exclusive device asked for no capacity: it takes all of each, which fits.
            return {}
        try:
            return cc.request_fits(
                request.capacity,
                cand.id.driver,
                device,
                self.a.allocated.aggregated_capacity.get(cand.id),
                self.allocating_capacity.get(cand.id),
            )
        except AllocationError as e:
            raise AllocationError(
                f"claim {_claim_ref(self.claims[key.claim])}, request {request.name}: device "
                f"{cand.id}: {e}"
            ) from None

    def _allocate_device(
        self,
        key: _Key,
        data: _RequestData,
        cand: _Candidate,
        *,
        must: bool,
        fits: dict[str, Quantity] | None = None,
    ) -> Callable[[], None] | None:
        """Checks availability and constraints for one selectable candidate; if it can be
        taken, records it and returns how to undo that, else None."""
        features = self.features
        request = data.request
        device = cand.device
        device_id = cand.id
        multi = features.consumable_capacity and device.allow_multiple_allocations
        if not multi and request.admin_access and key.claim in self.allocating.get(device_id, ()):
            return None
        if not request.admin_access and self._in_use(device_id):
            return None
        if not features.partitionable_devices and device.consumes_counters:
            return None
        # A shared device already in use has consumed its counters.
        counters_taken = False
        if device.consumes_counters and not (multi and self._capacity_in_use(device_id)):
            if not self._take_counters(cand):
                return None
            counters_taken = True

        if data.parent is None:
            base, sub = request.name, ""
        else:
            base, sub = data.parent.name, request.name

        if features.device_taints and taint_prevents_allocation(device.taints, request.tolerations):
            if counters_taken:
                self._release_counters(cand)
            return None

        constraints = self.constraints[key.claim]
        for i, constraint in enumerate(constraints):
            if not constraint.add(base, sub, device, device_id.driver):
                if must:
                    raise AllocationError(
                        f"claim {_claim_ref(self.claims[key.claim])}, request {request.name}: "
                        f"cannot add device {device_id} because a claim constraint would not "
                        "be satisfied"
                    )
                for earlier in constraints[:i]:
                    earlier.remove(base, sub, device, device_id.driver)
                if counters_taken:
                    self._release_counters(cand)
                return None

        consumed: dict[str, Quantity] | None = None
        share_id: str | None = None
        capacity_entry_added = False
        if features.consumable_capacity:
            if fits is None:
                # Not checked by the caller ("All"), or nothing changed since it was.
                fits = self._capacity_fits(key, request, cand)
            if fits is None:
                for c in constraints:
                    c.remove(base, sub, device, device_id.driver)
                if counters_taken:
                    self._release_counters(cand)
                return None
            if multi:
                consumed = fits
                share_id = self._new_share_id()
                capacity_entry_added = device_id not in self.allocating_capacity
                have = self.allocating_capacity.setdefault(device_id, {})
                for name, value in consumed.items():
                    have[name] = have[name] + value if name in have else value

        claims_of_device = self.allocating.setdefault(device_id, set())
        added_claim = False
        if not multi and key.claim not in claims_of_device:
            claims_of_device.add(key.claim)
            added_claim = True

        result = _DeviceResult(
            request=request,
            parent=data.parent.name if data.parent is not None else "",
            id=device_id,
            device=device,
            slice=cand.slice,
            share_id=share_id,
            consumed=consumed or None,
            admin_access=True if request.admin_access else None,
        )
        results = self.results[key.claim]
        results.append(result)

        def undo() -> None:
            for c in constraints:
                c.remove(base, sub, device, device_id.driver)
            if added_claim:
                claims_of_device.discard(key.claim)
            if share_id is not None:
                have = self.allocating_capacity.get(device_id)
                if have is not None:
                    for name, value in (consumed or {}).items():
                        have[name] = have[name] - value
                    # Gone with the share that added it, which the search (backtracking in
                    # order) undoes last: upstream keeps an entry whose shares consumed nothing,
                    # which then skips the counters of the device's next share; an entry
                    # dropped while an earlier share still holds the device would let the next
                    # share take its counters again.
                    if capacity_entry_added:
                        del self.allocating_capacity[device_id]
            if counters_taken:
                self._release_counters(cand)
            results.pop()

        return undo

    def _new_share_id(self) -> str:
        return self.a._share_id()

    def _capacity_in_use(self, device_id: DeviceID) -> bool:
        return (
            device_id in self.a.allocated.aggregated_capacity
            or device_id in self.allocating_capacity
        )

    # ------------------------------------------------------------ counters

    def _available(self, pool: Pool) -> dict[str, dict[str, Quantity]]:
        pool_key = (pool.id.driver, pool.id.pool)
        available = self.a._available_counters.get(pool_key)
        if available is None:
            available = {name: _zero_counters(cs) for name, cs in pool.counter_sets.items()}
            allocated = self.a.allocated
            for slices in (
                pool.device_slices_targeting_node,
                pool.device_slices_not_targeting_node,
            ):
                for s in slices:
                    for d in s.spec.devices:
                        if not d.consumes_counters:
                            continue
                        if not allocated.is_allocated(
                            DeviceID(s.spec.driver, s.spec.pool.name, d.name)
                        ):
                            continue
                        for consumption in d.consumes_counters:
                            counters = available.get(consumption.counter_set)
                            if counters is None:
                                continue
                            for name, c in consumption.counters.items():
                                if name in counters:
                                    counters[name] = counters[name] - cc.quantity(c.value)
            self.a._available_counters[pool_key] = available
        return available

    def _take_counters(self, cand: _Candidate) -> bool:
        """Adds the device's consumption to this attempt's; False (and nothing added) when a
        counter of the pool would go below zero."""
        available = self._available(cand.pool)
        pool_key = (cand.pool.id.driver, cand.pool.id.pool)
        consumed = self.consumed_counters.setdefault(pool_key, {})
        for consumption in cand.device.consumes_counters:
            per_set = consumed.setdefault(consumption.counter_set, {})
            for name, c in consumption.counters.items():
                q = cc.quantity(c.value)
                per_set[name] = per_set[name] + q if name in per_set else q
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for name, value in counters.items():
                if name in used and value < used[name]:
                    self._release_counters(cand)
                    return False
                if name not in used and value.sign() < 0:
                    self._release_counters(cand)
                    return False
        return True

    def _release_counters(self, cand: _Candidate) -> None:
        consumed = self.consumed_counters[(cand.pool.id.driver, cand.pool.id.pool)]
        for consumption in cand.device.consumes_counters:
            per_set = consumed[consumption.counter_set]
            for name, c in consumption.counters.items():
                per_set[name] = per_set[name] - cc.quantity(c.value)

    # ------------------------------------------------------------ the result

    def _result(
        self, claim_index: int, claim: types_pb2.ResourceClaim
    ) -> types_pb2.AllocationResult:
        out = types_pb2.AllocationResult()
        binding = self.features.binding_conditions
        for r in self.results[claim_index]:
            entry = out.devices.results.add(
                request=r.request_name(),
                driver=r.id.driver,
                pool=r.id.pool,
                device=r.id.device,
            )
            if r.admin_access is not None:
                entry.admin_access = r.admin_access
            if r.request.tolerations:
                entry.tolerations.extend(r.request.tolerations)
            if r.share_id is not None:
                entry.share_id = r.share_id
            if r.consumed:
                for name, value in r.consumed.items():
                    status_name = cc.capacity_name_for_status(name, r.id.driver, r.device.capacity)
                    entry.consumed_capacity[status_name] = str(value)
            if binding and r.device.binding_conditions:
                entry.binding_conditions.extend(r.device.binding_conditions)
                entry.binding_failure_conditions.extend(r.device.binding_failure_conditions)
        if self.a.prepared()[claim_index].has_config:
            self._add_configs(out, claim_index, claim)
        selector = self._node_selector(claim, self.results[claim_index])
        if selector is not None:
            out.node_selector.CopyFrom(selector)
        return out

    def _add_configs(
        self, out: types_pb2.AllocationResult, claim_index: int, claim: types_pb2.ResourceClaim
    ) -> None:
        configs = out.devices.config
        requests = claim.spec.devices.requests
        # Each class's configs once, listing the requests that use the class.
        class_ranges: dict[str, tuple[int, int]] = {}
        for request_index in range(len(requests)):
            data = self.request_data[_Key(claim_index, request_index, 0)]
            if data.parent is not None:
                data = self.request_data[
                    _Key(claim_index, request_index, data.selected_sub_request)
                ]
            device_class = data.device_class
            if device_class is None:
                continue
            name = device_class.metadata.name
            if name in class_ranges:
                begin, end = class_ranges[name]
                for i in range(begin, end):
                    configs[i].requests.append(data.request_name())
                continue
            begin = len(configs)
            for class_config in device_class.spec.config:
                c = configs.add(source=SOURCE_FROM_CLASS, requests=[data.request_name()])
                if class_config.HasField("opaque"):
                    c.opaque.CopyFrom(class_config.opaque)
            class_ranges[name] = (begin, len(configs))
        for config in claim.spec.devices.config:
            if not config.requests:
                c = configs.add(source=SOURCE_FROM_CLAIM)
                if config.HasField("opaque"):
                    c.opaque.CopyFrom(config.opaque)
                continue
            # As upstream: once per request the config names (a config naming two requests
            # appears twice).
            for request_index, request in enumerate(requests):
                matched = request.name in config.requests
                if not matched:
                    data = self.request_data[_Key(claim_index, request_index, 0)]
                    if data.parent is None:
                        continue
                    sub = request.first_available[data.selected_sub_request]
                    matched = f"{request.name}/{sub.name}" in config.requests
                if matched:
                    c = configs.add(source=SOURCE_FROM_CLAIM, requests=list(config.requests))
                    if config.HasField("opaque"):
                        c.opaque.CopyFrom(config.opaque)

    def _node_selector(
        self, claim: types_pb2.ResourceClaim, results: list[_DeviceResult]
    ) -> types_pb2.NodeSelector | None:
        """upstream createNodeSelector: the node's name when a device is local to it (or binds
        to it), else the slices' selectors merged into one term, else nothing (anywhere)."""
        term = types_pb2.NodeSelectorTerm()
        for r in results:
            spec = r.slice.spec
            if spec.per_device_node_selection:
                node_name = r.device.node_name
                selector = r.device.node_selector if r.device.HasField("node_selector") else None
            else:
                node_name = spec.node_name
                selector = spec.node_selector if spec.HasField("node_selector") else None
            if node_name or r.device.binds_to_node:
                out = types_pb2.NodeSelector()
                out.node_selector_terms.add().match_fields.add(
                    key="metadata.name", operator="In", values=[self.node.metadata.name]
                )
                return out
            if selector is not None:
                terms = selector.node_selector_terms
                if len(terms) == 1:
                    _merge(terms[0].match_fields, term.match_fields)
                    _merge(terms[0].match_expressions, term.match_expressions)
                elif len(terms) > 1:
                    raise AllocationError(
                        f"create NodeSelector for claim {claim.metadata.name}: "
                        f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms"
                    )
        if term.match_fields or term.match_expressions:
            out = types_pb2.NodeSelector()
            out.node_selector_terms.add().CopyFrom(term)
            return out
        return None


def _merge(
    source: Iterable[types_pb2.NodeSelectorRequirement],
    target: RepeatedCompositeFieldContainer[types_pb2.NodeSelectorRequirement],
) -> None:
    existing = list(target)
    for req in source:
        if any(
            e.key == req.key and e.operator == req.operator and set(e.values) == set(req.values)
            for e in existing
        ):
            continue
        target.add().CopyFrom(req)
        existing.append(req)
