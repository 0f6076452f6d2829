"""DynamicResources: a pod's ResourceClaims must be allocated on its node, and the binding cycle
writes their allocation and reservation before the pod is bound (upstream
pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go at 1.36/1.37; the
allocator is kemu.scheduling.dra, upstream's structured allocator).

Statuses are upstream's: `statusUnschedulable` is UnschedulableAndUnresolvable (so
DefaultPreemption leaves such nodes alone; but see DRAPreemption below), `statusError` an Error
(the pod backs off).

- PreEnqueue: every claim of the pod exists (a template's claim is named in
  status.resourceClaimStatuses), is not being deleted and, when generated, is owned by the pod.
- PreFilter: Skip without claims. An allocated claim that cannot be reserved for one more pod
  and is not reserved for this one: "resourceclaim in use"; an allocated claim's node selector
  constrains the nodes; an unallocated claim in flight for another pod: "resource claim NS/NAME
  is in the process of being allocated"; a request's class must exist. The allocator is built
  once per cycle over the allocated claims (assumed and in flight), the slices and classes.
- Filter: allocated claims whose node selector does not match, or whose binding conditions
  failed or timed out, are "resourceclaim not available on the node"; the others are allocated
  on the node ("cannot allocate all claims" when they do not fit; an allocator error is an
  Error); the node's results are kept for Reserve.
- PostFilter: deallocates one unavailable claim that only this pod (or no pod) reserves:
  "deallocation of ResourceClaim completed"; else "still not schedulable".
- Reserve: the node's allocations become in-flight claims (no API call); Unreserve drops them
  and takes the pod out of the claims' reservedFor.
- PreBindPreFlight: Success when the pod has claims (KEP-5278: the nomination is then
  published before PreBind), Skip otherwise.
- PreBind: for each claim not yet reserved for the pod, the finalizer
  `resource.kubernetes.io/delete-protection` (an Update), then status.allocation and
  reservedFor (an UpdateStatus), the written claim assumed; then, with DRADeviceBindingConditions
  and DRAResourceClaimDeviceStatus, the wait for the devices' bindingConditions (polling every
  5 s on the handle's clock, at most bindingTimeout, 600 s by default), an Error on a
  bindingFailureCondition or the timeout.

- PreFilterExtensions (DRAPreemption, KEP-5690, alpha at 1.37; upstream master's
  dynamicresources_preemption_test.go): RemovePod releases, in the dry run's copy of the state,
  the claims of a victim that no remaining pod reserves (not those reserved for a PodGroup);
  AddPod takes them back. Filter then allocates over the devices left by the others, and its
  "cannot allocate all claims" is Unschedulable (UnschedulableAndUnresolvable without the gate,
  as at 1.34-1.36, where DefaultPreemption never frees devices).

- Extended resources backed by DRA (DRAExtendedResource; upstream extendedresources.go): a
  pod requesting an extended resource that a DeviceClass backs (its extendedResourceName, or
  the implicit `deviceclass.resource.kubernetes.io/<class>`) gets one special claim: in memory
  at PreFilter (`<extended-resources>`), on each node the requests for what the node's
  allocatable does not have (`container-<i>-request-<j>`, ExactCount), allocated with the
  pod's claims; PreBind creates it (generateName `<pod>-extended-resources-`, owned by the
  pod, annotated resource.kubernetes.io/extended-resource-claim "true"), writes its
  allocation and reservation and then the pod's status.extendedResourceClaimStatus. A special
  claim left from an earlier cycle: "cannot schedule extended resource claim", and PostFilter
  deletes it.

Not modelled: SignPod.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

import numpy as np
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.component.clock_steps import StepOrder
from kemu.component.featuregate import (
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_EXTENDED_RESOURCE,
    DRA_PREEMPTION,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    DRA_SCHEDULER_FILTER_TIMEOUT,
    DYNAMIC_RESOURCE_ALLOCATION,
)
from kemu.component.pod_resources import pod_resources_options
from kemu.component.version import Version
from kemu.component.virtual_clock import take_step
from kemu.machinery.convert import message_to_dict
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.resourceclaim import (
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ClaimNameError,
    can_be_reserved,
    is_extended_resource_claim,
    is_for_pod,
    is_reserved_for_pod,
    not_for_pod_message,
    pod_claim_name,
    pod_claim_name_or_none,
)
from kemu.machinery.resources import amount
from kemu.scheduling.arrays import BoolArray, IntArray
from kemu.scheduling.columns import NodeColumns
from kemu.scheduling.dra.allocator import (
    AllocatedState,
    AllocationError,
    Allocator,
    Features,
    FitVerdict,
    new_cel_cache,
)
from kemu.scheduling.dra.fit_columns import CODE_FITS, CODE_NO_FIT, CODE_UNDECIDED, Int8Array
from kemu.scheduling.dra.pools import FailedAllocationOnNode
from kemu.scheduling.dra.taints import TaintedSlices
from kemu.scheduling.dra_manager import DraManager
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
    NodeToStatus,
    PluginArgs,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterExtensions,
    PreFilterPlugin,
    PreScorePlugin,
    ReservePlugin,
    ScoreExtensions,
    ScorePlugin,
    cycle_pod_info,
)
from kemu.scheduling.plugins.helpers import (
    NodeSelector,
    check_arg_keys,
    default_normalize_score,
    node_selector,
)
from kemu.scheduling.status import SKIP, SUCCESS, Status, as_error, unresolvable, unschedulable
from kemu.scheduling.types import (
    MAX_NODE_SCORE,
    NodeInfo,
    NodeScore,
    PodInfo,
    PostFilterResult,
    PreFilterResult,
)

logger = logging.getLogger(__name__)

NAME: Final = "DynamicResources"
STATE_KEY: Final = NAME
DELETE_PROTECTION_FINALIZER: Final = "resource.kubernetes.io/delete-protection"
DEFAULT_BINDING_TIMEOUT_SECONDS: Final = 600  # config.DynamicResourcesBindingTimeoutDefault
DEFAULT_FILTER_TIMEOUT_SECONDS: Final = 10  # config.DynamicResourcesFilterTimeoutDefault
FIRST_AVAILABLE_MAX_SIZE: Final = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize
BINDING_POLL_INTERVAL: Final = 5.0  # upstream's PreBind polls the claims every 5 s
# upstream's AssumeExtendedResourceTimeoutDefaultSeconds and bindClaim's poll period
ASSUME_EXTENDED_CLAIM_TIMEOUT: Final = 120.0
ASSUME_EXTENDED_CLAIM_POLL: Final = 1.0
_CONFLICT_RETRIES: Final = 5

# Upstream's statuses (the messages are user-visible: FailedScheduling events).
MSG_CANNOT_ALLOCATE: Final = "cannot allocate all claims"
MSG_NOT_AVAILABLE: Final = "resourceclaim not available on the node"
MSG_IN_USE: Final = "resourceclaim in use"
MSG_TIMED_OUT: Final = "timed out trying to allocate devices"
MSG_DEALLOCATED: Final = "deallocation of ResourceClaim completed"
MSG_STILL_UNSCHEDULABLE: Final = "still not schedulable"
MSG_NO_CLAIMS: Final = "no new claims to deallocate"
EVENT_BINDING_CONDITIONS_PENDING: Final = "BindingConditionsPending"
# DRAExtendedResource: upstream's in-memory name, intentionally not a valid object name.
SPECIAL_CLAIM_NAME: Final = "<extended-resources>"
MSG_STALE_EXTENDED_CLAIM: Final = "cannot schedule extended resource claim"
MSG_EXTENDED_CLAIM_DELETED: Final = "deletion of ResourceClaim completed"


# A node the fit check passed: the node, the allocator that passed it, the node's special claim.
_Fit = tuple[types_pb2.Node, Allocator, types_pb2.ResourceClaim | None]


@dataclass(slots=True, frozen=True)
class _ColumnFit:
    """The fit check over every row of the cycle's node columns (Allocator.fit_verdicts'
    codes; fit_columns.CODE_UNDECIDED where Filter decides per node), the node objects it
    saw, the allocator and the special claim it checked (None: no claim to allocate, every
    row passes)."""

    codes: Int8Array
    nodes: list[types_pb2.Node | None]
    allocator: Allocator | None
    claim: types_pb2.ResourceClaim | None

    def fit(self, columns: NodeColumns, node_name: str) -> _Fit | None:
        """The node passed over columns: what Reserve allocates with."""
        if self.allocator is None:
            return None
        row = columns.row_of.get(node_name)
        nodes = self.nodes
        node = nodes[row] if row is not None and row < len(nodes) else None
        if node is None or node.metadata.name != node_name:
            return None
        if int(self.codes[row]) != CODE_FITS:
            return None
        return node, self.allocator, self.claim


class ClaimNotReady(Exception):
    """A claim of the pod that keeps it from scheduling now (upstream foreachPodResourceClaim's
    errors, bindClaim's); the message is upstream's."""


@dataclass(slots=True)
class _State:
    """The cycle's view of the pod's claims (upstream stateData); shared by clones, as
    upstream's pointer is."""

    claims: list[types_pb2.ResourceClaim] = field(default_factory=list)
    to_allocate: list[int] = field(default_factory=list)
    selectors: dict[int, NodeSelector] = field(default_factory=dict)
    allocator: Allocator | None = None
    unavailable: set[int] = field(default_factory=set)
    node_allocations: dict[str, list[types_pb2.AllocationResult]] = field(default_factory=dict)
    # Nodes the allocator's fit check passed (FitVerdict.FITS), with that allocator and the
    # node's special claim (DRAExtendedResource) if any: their allocation is computed in
    # Reserve, for the chosen node only (the same result Filter's run would have given).
    fitting_nodes: dict[str, _Fit] = field(default_factory=dict)
    # The fit check over the cycle's node columns (filter_columns), once per cycle; None
    # when the plugin has no batch form for the pod.
    column_fit: tuple[NodeColumns, _ColumnFit | None] | None = None
    # Reserve's allocations (claim index -> result), published by PreBind.
    allocations: dict[int, types_pb2.AllocationResult] = field(default_factory=dict)
    # Preemption's dry run (DRAPreemption): the claims its removed pods release (UIDs), the
    # removed pods per claim, and the allocators over what the others keep (by released set).
    preempting: bool = False
    released: set[str] = field(default_factory=set)
    removed_for_claim: dict[str, set[str]] = field(default_factory=dict)
    simulated: dict[frozenset[str], Allocator] = field(default_factory=dict)
    # DRAExtendedResource: the special claim (in memory, or left from an earlier cycle), the
    # DRA-backed resources the pod requests -> their class, the node's variant of the claim
    # (with its requests) where DRA supplies some; after Reserve, the claim and allocation.
    extended: types_pb2.ResourceClaim | None = None
    extended_classes: dict[str, str] = field(default_factory=dict)
    node_extended: dict[str, types_pb2.ResourceClaim] = field(default_factory=dict)
    extended_allocation: types_pb2.AllocationResult | None = None
    # The special claim and its allocator per set of backed resources DRA must supply on a
    # node, and the released claims (the same on every node needing that set).
    extended_allocators: dict[
        tuple[frozenset[str], tuple[tuple[str, str], ...]],
        tuple[types_pb2.ResourceClaim, Allocator],
    ] = field(default_factory=dict)

    def clone(self) -> _State:
        """Shared, as upstream's pointer, but for what the dry run changes."""
        if not self.preempting:
            return self
        return replace(
            self,
            released=set(self.released),
            removed_for_claim={k: set(v) for k, v in self.removed_for_claim.items()},
        )


def _matching_device_status(
    claim: types_pb2.ResourceClaim, result: types_pb2.DeviceRequestAllocationResult
) -> types_pb2.AllocatedDeviceStatus | None:
    for d in claim.status.devices:
        if (d.driver, d.pool, d.device) == (result.driver, result.pool, result.device):
            return d
    return None


def _condition_true(
    status: types_pb2.AllocatedDeviceStatus, name: str
) -> types_pb2.Condition | None:
    for c in status.conditions:
        if c.type == name and c.status == "True":
            return c
    return None


@dataclass(frozen=True, slots=True)
class BindingCheck:
    """Where a claim's binding conditions stand (upstream isClaimReadyForBinding)."""

    ready: bool
    failure: str = ""  # set when a bindingFailureCondition is True


def binding_check(claim: types_pb2.ResourceClaim) -> BindingCheck:
    name = claim.metadata.name
    ready = True
    for result in claim.status.allocation.devices.results:
        if not result.binding_conditions:
            continue
        status = _matching_device_status(claim, result)
        if status is None:
            ready = False
            continue
        for cond in result.binding_failure_conditions:
            c = _condition_true(status, cond)
            if c is not None:
                return BindingCheck(
                    False,
                    f'claim {name} binding failed: reason={c.reason}, message="{c.message}"',
                )
        if not all(_condition_true(status, cond) for cond in result.binding_conditions):
            ready = False
    return BindingCheck(ready)


def _in_memory_extended_claim(pod: types_pb2.Pod, temp_uid: str) -> types_pb2.ResourceClaim:
    """The special claim for the pod's extended resources backed by DRA before it exists:
    upstream's in-memory name and a temporary UID (for the in-flight allocation), created in
    PreBind with generateName `<pod>-extended-resources-`, controlled by the pod."""
    c = types_pb2.ResourceClaim()
    c.metadata.namespace = pod.metadata.namespace
    c.metadata.name = SPECIAL_CLAIM_NAME
    c.metadata.uid = temp_uid
    c.metadata.generate_name = f"{pod.metadata.name}-extended-resources-"
    c.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] = "true"
    c.metadata.owner_references.add(
        api_version="v1",
        kind="Pod",
        name=pod.metadata.name,
        uid=pod.metadata.uid,
        controller=True,
        block_owner_deletion=True,
    )
    return c


def has_binding_conditions(claim: types_pb2.ResourceClaim) -> bool:
    return any(r.binding_conditions for r in claim.status.allocation.devices.results)


class DynamicResources(
    PreEnqueuePlugin,
    PreFilterPlugin,
    FilterPlugin,
    PostFilterPlugin,
    PreScorePlugin,
    ScorePlugin,
    ScoreExtensions,
    ReservePlugin,
    PreBindPlugin,
    EnqueueExtensions,
):
    NAME = NAME

    def __init__(
        self,
        handle: Handle,
        manager: DraManager,
        *,
        enabled: bool,
        binding_timeout: float,
        filter_timeout: float,
    ) -> None:
        self.handle = handle
        self.manager = manager
        self.enabled = enabled
        self.binding_timeout = binding_timeout
        self.filter_timeout = filter_timeout  # 0: no timeout
        gates = handle.gates
        self.features = Features.from_gates(gates)
        self.binding_conditions = gates.enabled(DRA_DEVICE_BINDING_CONDITIONS) and gates.enabled(
            DRA_RESOURCE_CLAIM_DEVICE_STATUS
        )
        # Selector results kept for the scheduler's lifetime (upstream: a 10-entry LRU of
        # compiled expressions; kemu.scheduling.dra.cel_cache says why kemu keeps more).
        self.cel_cache = new_cel_cache(self.features)
        # Tainted slices stay the same objects across cycles (the allocator caches by slice).
        self.tainted = TaintedSlices()
        # Score: 1.36+ (upstream's plugin has no Score before), with DRAPrioritizedList.
        self.scores = gates.version >= Version(1, 36) and self.features.prioritized_list
        self.preemption = gates.enabled(DRA_PREEMPTION)
        self.extended_resources = gates.enabled(DRA_EXTENDED_RESOURCE)
        self.counting = pod_resources_options(gates)
        # "cannot allocate all claims": Unschedulable (preemption may free devices) only with
        # DRAPreemption; UnschedulableAndUnresolvable before (upstream statusUnschedulable).
        self._cannot_allocate = (
            unschedulable(MSG_CANNOT_ALLOCATE)
            if self.preemption
            else unresolvable(MSG_CANNOT_ALLOCATE)
        )

    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ the pod's claims

    def pod_claims(self, pod: types_pb2.Pod) -> list[types_pb2.ResourceClaim]:
        """The claims of the pod, in spec order (template entries that need no claim left
        out); ClaimNotReady with upstream's message when one keeps the pod waiting."""
        claims: list[types_pb2.ResourceClaim] = []
        ns = pod.metadata.namespace
        for ref in pod.spec.resource_claims:
            try:
                name, must_own = pod_claim_name(pod, ref)
            except ClaimNameError as e:
                raise ClaimNotReady(str(e)) from None
            if name is None:
                continue
            claim = self.manager.get_claim(ns, name)
            if claim is None:
                raise ClaimNotReady(f'could not find ResourceClaim "{ns}/{name}"')
            if claim.metadata.HasField("deletion_timestamp"):
                raise ClaimNotReady(f'resourceclaim "{name}" is being deleted')
            if must_own and not is_for_pod(pod, claim):
                raise ClaimNotReady(not_for_pod_message(pod, claim))
            claims.append(claim)
        return claims

    def _pod_claims_or_none(self, pod: types_pb2.Pod) -> list[types_pb2.ResourceClaim] | None:
        """pod_claims, None where it raises ClaimNotReady (no message built: the queueing
        hints drop it; they run for every waiting pod on each claim event)."""
        claims: list[types_pb2.ResourceClaim] = []
        ns = pod.metadata.namespace
        for ref in pod.spec.resource_claims:
            found = pod_claim_name_or_none(pod, ref)
            if found is None:
                return None
            name, must_own = found
            if name is None:
                continue
            claim = self.manager.get_claim(ns, name)
            if (
                claim is None
                or claim.metadata.HasField("deletion_timestamp")
                or (must_own and not is_for_pod(pod, claim))
            ):
                return None
            claims.append(claim)
        return claims

    # ------------------------------------------------------------ queue

    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        if not self.enabled or not pod.spec.resource_claims:
            return SUCCESS
        try:
            self.pod_claims(pod)
        except ClaimNotReady as e:
            return unresolvable(str(e))
        return SUCCESS

    # ------------------------------------------------------------ scheduling cycle

    def pre_filter(
        self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, SKIP
        backed = self._extended_requests(state, pod)
        if not pod.spec.resource_claims and not backed:
            return None, SKIP
        s = _State(preempting=self.preemption)
        state.write(STATE_KEY, s)
        try:
            claims = self.pod_claims(pod)
        except ClaimNotReady as e:
            return None, unresolvable(str(e))
        if not claims and not backed:
            return None, SKIP
        if backed:
            s.extended_classes = backed
            s.extended = self._find_extended_claim(pod) or _in_memory_extended_claim(
                pod, str(uuid.UUID(int=self.handle.rng.getrandbits(128), version=4))
            )
        s.claims = claims
        for i, claim in enumerate(claims):
            if claim.status.HasField("allocation"):
                if not can_be_reserved(claim) and not is_reserved_for_pod(pod, claim):
                    return None, unresolvable(MSG_IN_USE)
                if claim.status.allocation.HasField("node_selector"):
                    s.selectors[i] = node_selector(claim.status.allocation.node_selector)
                continue
            if self.manager.claim_has_pending_allocation(claim.metadata.uid):
                return None, unresolvable(
                    f"resource claim {object_key(claim)} is in the process of being allocated"
                )
            for req in claim.spec.devices.requests:
                missing = self._missing_class(claim, req)
                if missing:
                    return None, unresolvable(missing)
            s.to_allocate.append(i)
        if s.to_allocate:
            s.allocator = self._new_allocator(s, frozenset())
        return None, SUCCESS

    def _extended_requests(self, state: CycleState, pod: types_pb2.Pod) -> dict[str, str]:
        """DRAExtendedResource: the extended resources the pod requests (non-zero) that a
        DeviceClass backs -> that class; {} without the gate or such requests (the cycle's
        PodInfo read, as counted by the scheduler's gates)."""
        if not self.extended_resources:
            return {}
        scalar = cycle_pod_info(state, pod, self.counting).requests.scalar
        if not scalar:
            return {}
        mapping = self.manager.extended_resource_classes()
        return {n: mapping[n] for n, q in scalar.items() if q and n in mapping}

    def _find_extended_claim(self, pod: types_pb2.Pod) -> types_pb2.ResourceClaim | None:
        """The special claim an earlier cycle created for the pod (annotated, controlled by
        the pod; upstream findExtendedResourceClaim, which walks every claim: kemu looks
        among those the informer's index has under the pod's uid)."""
        for c in self.manager.extended_claims_controlled_by(pod.metadata.uid):
            if c.metadata.namespace != pod.metadata.namespace:
                continue
            if not is_extended_resource_claim(c):
                continue
            if any(
                o.controller and o.uid == pod.metadata.uid and o.name == pod.metadata.name
                for o in c.metadata.owner_references
            ):
                return c
        return None

    def _extended_for(
        self, s: _State, pod: types_pb2.Pod, alloc: Mapping[str, int]
    ) -> tuple[types_pb2.ResourceClaim, Allocator] | None:
        """The special claim with the requests DRA must supply on a node of allocatable
        scalars `alloc`: the backed resources the node's allocatable does not have (a
        device plugin's count there satisfies them: NodeResourcesFit's); None when there
        are none (upstream filterExtendedResources, createDeviceRequests). With the
        allocator over the pod's claims and it: both the same on every node needing the
        same resources (kemu: built once per cycle for them, not per node)."""
        if s.extended is None:
            return None
        needed = {r: c for r, c in s.extended_classes.items() if alloc.get(r, 0) <= 0}
        if not needed:
            return None
        key = (frozenset(s.released), tuple(sorted(needed.items())))
        found = s.extended_allocators.get(key)
        if found is None:
            claim = self._node_extended_claim(s.extended, pod, needed)
            found = claim, self._new_allocator(s, key[0], (claim,))
            s.extended_allocators[key] = found
        return found

    @staticmethod
    def _node_extended_claim(
        extended: types_pb2.ResourceClaim, pod: types_pb2.Pod, needed: Mapping[str, str]
    ) -> types_pb2.ResourceClaim:
        """The special claim with a request per container for each resource of `needed`."""
        out = types_pb2.ResourceClaim()
        out.CopyFrom(extended)
        containers = [*pod.spec.init_containers, *pod.spec.containers]
        requests: list[types_pb2.DeviceRequest] = []
        for i, c in enumerate(containers):
            names = sorted(c.resources.requests)
            for r, cls in needed.items():
                text = c.resources.requests.get(r)
                count = amount(r, text) if text else 0
                if not count:
                    continue
                req = types_pb2.DeviceRequest(name=f"container-{i}-request-{names.index(r)}")
                req.exactly.device_class_name = cls
                req.exactly.allocation_mode = "ExactCount"
                req.exactly.count = count
                requests.append(req)
        requests.sort(key=lambda r: r.name)
        out.spec.devices.requests.extend(requests)
        return out

    def _new_allocator(
        self,
        s: _State,
        released: frozenset[str],
        extra: Sequence[types_pb2.ResourceClaim] = (),
    ) -> Allocator:
        """The allocator for the pod's claims to allocate (and `extra`, the node's special
        claim) over the devices that the allocated claims (assumed and in flight) other than
        `released` take."""
        allocated = (
            self.manager.allocated_state(consumable_capacity=self.features.consumable_capacity)
            if not released
            else AllocatedState.from_claims(
                (c for c in self.manager.allocated_claims() if c.metadata.uid not in released),
                consumable_capacity=self.features.consumable_capacity,
            )
        )
        slices = self.manager.slices_list()
        if self.features.device_taints:
            slices = self.tainted.apply(slices, self.manager.taint_rules_list())
        return Allocator(
            self.features,
            [*(s.claims[i] for i in s.to_allocate), *extra],
            allocated,
            {c.metadata.name: c for c in self.manager.classes.list()},
            slices,
            self.cel_cache,
        )

    def _missing_class(self, claim: types_pb2.ResourceClaim, req: types_pb2.DeviceRequest) -> str:
        """Upstream's message when a request cannot be served as written: its class does not
        exist, it has subrequests with DRAPrioritizedList off, or it is of neither kind ("" when
        it is fine)."""
        if req.HasField("exactly"):
            name = req.exactly.device_class_name
            if self.manager.classes.get(name) is None:
                return f"request {req.name}: device class {name} does not exist"
            return ""
        if not req.first_available:
            return f"resource claim {object_key(claim)}, request {req.name}: unknown request type"
        if not self.features.prioritized_list:
            return (
                f"resource claim {object_key(claim)}, request {req.name}: has subrequests, but "
                "the DRAPrioritizedList feature is disabled"
            )
        for sub in req.first_available:
            if self.manager.classes.get(sub.device_class_name) is None:
                return (
                    f"request {req.name}/{sub.name}: device class {sub.device_class_name} "
                    "does not exist"
                )
        return ""

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self if self.preemption else None

    def _victim_claims(self, victim: types_pb2.Pod) -> list[types_pb2.ResourceClaim]:
        """The victim's claims that exist, each once (template entries without a generated
        claim and missing claims are left out, as upstream's RemovePod/AddPod do)."""
        seen: set[str] = set()
        out: list[types_pb2.ResourceClaim] = []
        for ref in victim.spec.resource_claims:
            try:
                name, _ = pod_claim_name(victim, ref)
            except ClaimNameError:
                continue
            if name is None or name in seen:
                continue
            seen.add(name)
            claim = self.manager.get_claim(victim.metadata.namespace, name)
            if claim is not None:
                out.append(claim)
        return out

    def remove_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_remove: PodInfo, node: NodeInfo
    ) -> Status:
        """The victim's claims that no pod left reserves are released: allocated and reserved
        for nobody, or every pod of reservedFor removed (the UIDs, not their count); never a
        claim reserved for a PodGroup (upstream RemovePod, simulatedReleasedClaims)."""
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        victim = pod_to_remove.pod
        for claim in self._victim_claims(victim):
            uid = claim.metadata.uid
            removed = s.removed_for_claim.setdefault(uid, set())
            removed.add(victim.metadata.uid)
            refs = claim.status.reserved_for
            if any(r.resource != "pods" or r.api_group for r in refs):
                continue  # a PodGroup's claim stays (gang scheduling)
            if not refs:
                if claim.status.HasField("allocation"):
                    s.released.add(uid)
            elif {r.uid for r in refs} == removed:
                s.released.add(uid)
        return SUCCESS

    def add_pod(
        self, state: CycleState, pod: types_pb2.Pod, pod_to_add: PodInfo, node: NodeInfo
    ) -> Status:
        """Undoes remove_pod for the pod put back (upstream AddPod)."""
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        back = pod_to_add.pod.metadata.uid
        for claim in self._victim_claims(pod_to_add.pod):
            uid = claim.metadata.uid
            removed = s.removed_for_claim.get(uid)
            if removed is None or back not in removed:
                continue
            removed.discard(back)
            if not removed:
                del s.removed_for_claim[uid]
            s.released.discard(uid)
        return SUCCESS

    def _allocator_for(self, s: _State) -> Allocator | None:
        """The cycle's allocator, or in the dry run the one over the devices the released
        claims leave (built once per released set)."""
        if not s.released:
            return s.allocator
        key = frozenset(s.released)
        found = s.simulated.get(key)
        if found is None:
            found = s.simulated[key] = self._new_allocator(s, key)
        return found

    def filter(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or not (s.claims or s.extended):
            return SUCCESS
        n = node.node
        if n is None:
            return as_error("node not found")
        extended = None
        if s.extended is not None:
            if s.extended.spec.devices.requests:
                # Left from an earlier cycle: PostFilter deletes it, the next cycle starts anew.
                return unresolvable(MSG_STALE_EXTENDED_CLAIM)
            extended = self._extended_for(s, pod, node.allocatable.scalar)
        unavailable: list[int] = []
        now = self.handle.clock.now()
        for i, claim in enumerate(s.claims):
            if not claim.status.HasField("allocation"):
                continue
            selector = s.selectors.get(i)
            if selector is not None and not selector.matches(n):
                unavailable.append(i)
            elif self.binding_conditions and self._binding_gone_wrong(claim, now):
                unavailable.append(i)
        node_claim: types_pb2.ResourceClaim | None = None
        allocator: Allocator | None
        if extended is not None:
            node_claim, allocator = extended
        else:
            allocator = self._allocator_for(s) if s.to_allocate else None
        if allocator is not None and not unavailable:
            # kemu: the allocator's cheap check first (Allocator.fit_verdict; upstream runs the
            # search on every node): the same verdict, the search only where it cannot tell.
            # A node that fits is allocated in Reserve by the allocator that passed it (with
            # the node's special claim), so a dry run's FITS (claims released) is not taken.
            verdict = allocator.fit_verdict(n)
            if verdict is FitVerdict.NO_FIT:
                return self._cannot_allocate
            if verdict is FitVerdict.FITS and not s.released:
                s.fitting_nodes[node.name] = (n, allocator, node_claim)
                return SUCCESS
            started = self.handle.clock.monotonic()
            try:
                results = allocator.allocate(n)
            except FailedAllocationOnNode as e:
                return unresolvable(str(e))  # this node only (upstream statusUnschedulable)
            except AllocationError as e:
                return as_error(e)
            if (
                self.filter_timeout
                and self.handle.clock.monotonic() - started > self.filter_timeout
            ):
                # (upstream cancels the allocation at the deadline; kemu's allocator runs to
                # its end and the result is dropped)
                return unresolvable(MSG_TIMED_OUT)
            if results is None:
                return self._cannot_allocate
            s.node_allocations[node.name] = results
            if node_claim is not None:
                s.node_extended[node.name] = node_claim
        if unavailable:
            s.unavailable.update(unavailable)
            return unresolvable(MSG_NOT_AVAILABLE)
        return SUCCESS

    def filter_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> BoolArray | None:
        """Filter over columns (kemu.scheduling.columns.ColumnFilterPlugin): True where the
        fit check over every row (Allocator.fit_verdicts) says the claims fit, which is
        where `filter` returns Success without the search; the other rows are decided by
        `reject_columns` (no fit) or per node."""
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or not (s.claims or s.extended):
            return columns.all_rows(len(rows))
        fit = self._column_fit(s, pod, columns)
        if fit is None:
            return None
        if fit.allocator is None:
            return columns.all_rows(len(rows))
        out: BoolArray = fit.codes[rows] == CODE_FITS
        return out

    def reject_columns(
        self, state: CycleState, pod: types_pb2.Pod, columns: NodeColumns, rows: IntArray
    ) -> tuple[IntArray, list[Status]] | None:
        """The rows the fit check over columns says cannot fit get `filter`'s Status for
        them, "cannot allocate all claims" (kemu.scheduling.columns.ColumnRejectPlugin)."""
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or not (s.claims or s.extended):
            return None
        fit = self._column_fit(s, pod, columns)
        if fit is None or fit.allocator is None:
            return None
        which: IntArray = np.where(fit.codes[rows] == CODE_NO_FIT, 0, -1).astype(np.int64)
        return which, [self._cannot_allocate]

    def _column_fit(self, s: _State, pod: types_pb2.Pod, columns: NodeColumns) -> _ColumnFit | None:
        """`filter`'s fit check over every row of `columns`, once per cycle; None (the batch
        form declines the pod) in preemption's dry run, for a special claim left from an
        earlier cycle, or when an allocated claim of the pod is limited to some nodes or
        has binding conditions (those are told per node)."""
        if s.released:
            return None
        kept = s.column_fit
        if kept is not None and kept[0] is columns:
            return kept[1]
        fit = self._new_column_fit(s, pod, columns)
        s.column_fit = (columns, fit)
        return fit

    def _new_column_fit(
        self, s: _State, pod: types_pb2.Pod, columns: NodeColumns
    ) -> _ColumnFit | None:
        if s.extended is not None and s.extended.spec.devices.requests:
            return None
        now = self.handle.clock.now()
        for i, claim in enumerate(s.claims):
            if claim.status.HasField("allocation") and (
                i in s.selectors
                or (self.binding_conditions and self._binding_gone_wrong(claim, now))
            ):
                return None
        nodes = [ni.node for ni in columns.infos]
        per_node: BoolArray | None = None
        special: types_pb2.ResourceClaim | None = None
        allocator: Allocator | None
        if s.extended is not None:
            # The rows whose allocatable has a backed resource need another special claim
            # (or none): per node.
            for r in s.extended_classes:
                has = columns.scalar(r).allocatable > 0
                per_node = has if per_node is None else per_node | has
            extended = self._extended_for(s, pod, {})
            assert extended is not None  # (every backed resource is needed)
            special, allocator = extended
        elif s.to_allocate:
            allocator = s.allocator
        else:
            return _ColumnFit(np.zeros(0, dtype=np.int8), nodes, None, None)
        assert allocator is not None
        codes = allocator.fit_verdicts(nodes)
        if codes is None:
            codes = np.full(len(nodes), CODE_UNDECIDED, dtype=np.int8)
        if per_node is not None and per_node.any():
            codes[per_node] = CODE_UNDECIDED
        return _ColumnFit(codes, nodes, allocator, special)

    def _binding_gone_wrong(self, claim: types_pb2.ResourceClaim, now: float) -> bool:
        """An allocated claim whose binding conditions failed or timed out is not usable
        (Filter marks it unavailable; PostFilter deallocates it)."""
        if not has_binding_conditions(claim):
            return False
        check = binding_check(claim)
        if check.failure:
            return True
        if check.ready:
            return False
        ts = claim.status.allocation.allocation_timestamp
        if not claim.status.allocation.HasField("allocation_timestamp"):
            return False
        return ts.seconds + ts.nanos / 1e9 + self.binding_timeout < now

    # ------------------------------------------------------------ score (1.36+)

    def pre_score(self, state: CycleState, pod: types_pb2.Pod, nodes: list[NodeInfo]) -> Status:
        """Skip unless some claim to allocate has a firstAvailable request (upstream scores
        from 1.36, with DRAPrioritizedList; kemu's PreScore only spares the other pods a
        Score of 0 everywhere)."""
        s = state.read(STATE_KEY)
        if (
            not isinstance(s, _State)
            or not self.scores
            or not any(
                r.first_available for i in s.to_allocate for r in s.claims[i].spec.devices.requests
            )
        ):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: types_pb2.Pod, node: NodeInfo) -> tuple[int, Status]:
        """Per allocated device of a subrequest at index i of its request's firstAvailable,
        FIRST_AVAILABLE_MAX_SIZE - i: nodes that satisfy earlier alternatives win (upstream
        Score, FirstAvailableDeviceRequestMaxSize = 8)."""
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return 0, SUCCESS
        results = s.node_allocations.get(node.name)
        if results is None:
            return 0, SUCCESS
        total = 0
        for i, allocation in zip(s.to_allocate, results, strict=False):
            requests = {r.name: r for r in s.claims[i].spec.devices.requests}
            for r in allocation.devices.results:
                parent, _, sub = r.request.partition("/")
                req = requests.get(parent)
                if not sub or req is None:
                    continue
                names = [x.name for x in req.first_available]
                if sub in names:
                    total += FIRST_AVAILABLE_MAX_SIZE - names.index(sub)
        return total, SUCCESS

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(
        self, state: CycleState, pod: types_pb2.Pod, scores: list[NodeScore]
    ) -> tuple[list[NodeScore], Status]:
        return default_normalize_score(MAX_NODE_SCORE, False, scores), SUCCESS

    async def post_filter(
        self, state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        s = state.read(STATE_KEY)
        if isinstance(s, _State) and s.extended is not None and s.extended.spec.devices.requests:
            stale = s.extended
            try:
                await self.handle.client.delete(
                    types_pb2.ResourceClaim,
                    stale.metadata.name,
                    stale.metadata.namespace,
                    uid=stale.metadata.uid,
                )
            except NotFound:
                pass
            except ApiError as e:
                return None, as_error(e)
            return None, unschedulable(MSG_EXTENDED_CLAIM_DELETED)
        if not isinstance(s, _State) or not s.claims:
            return None, unschedulable(MSG_NO_CLAIMS)
        uid = pod.metadata.uid
        candidates = [
            i
            for i in sorted(s.unavailable)
            if all(r.uid == uid for r in s.claims[i].status.reserved_for)
        ]
        if not candidates:
            return None, unschedulable(MSG_STILL_UNSCHEDULABLE)
        claim = s.claims[self.handle.rng.choice(candidates)]
        fresh = types_pb2.ResourceClaim()
        fresh.CopyFrom(claim)
        fresh.status.ClearField("allocation")
        fresh.status.ClearField("reserved_for")
        fresh.status.ClearField("devices")
        try:
            written = await self.handle.client.update_status(fresh)
        except ApiError as e:
            return None, as_error(e)
        self.manager.assume_claim_after_api_call(written)
        logger.info("deallocated %s for %s", object_key(claim), object_key(pod))
        return None, unschedulable(MSG_DEALLOCATED)

    def reserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        fitting = s.fitting_nodes.get(node_name)
        if fitting is None and s.column_fit is not None and s.column_fit[1] is not None:
            fitting = s.column_fit[1].fit(s.column_fit[0], node_name)
        extended = s.node_extended.get(node_name)
        if extended is None and fitting is not None:
            extended = fitting[2]
        if not s.to_allocate and extended is None:
            return SUCCESS
        results = s.node_allocations.get(node_name)
        if results is None and fitting is not None:
            node, allocator, node_claim = fitting
            try:
                results = allocator.allocate(node)
            except AllocationError as e:
                return as_error(e)
            if results is not None:
                s.node_allocations[node_name] = results
                if node_claim is not None:
                    s.node_extended[node_name] = node_claim
        if results is None:
            return as_error("claim allocation not found for node")
        want = len(s.to_allocate) + (extended is not None)
        if len(results) != want:
            return as_error(
                f"internal error, have {len(results)} allocations, "
                f"{len(s.to_allocate)} claims to allocate, want {want} claims"
            )
        if extended is not None:
            claim = types_pb2.ResourceClaim()
            claim.CopyFrom(extended)
            claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
            claim.status.allocation.CopyFrom(results[-1])
            s.extended = claim
            s.extended_allocation = results[-1]
            self.manager.signal_claim_pending_allocation(claim.metadata.uid, claim)
        for i, result in zip(s.to_allocate, results, strict=False):
            claim = types_pb2.ResourceClaim()
            claim.CopyFrom(s.claims[i])
            if DELETE_PROTECTION_FINALIZER not in claim.metadata.finalizers:
                claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
            claim.status.allocation.CopyFrom(result)
            s.allocations[i] = result
            self.manager.signal_claim_pending_allocation(claim.metadata.uid, claim)
        return SUCCESS

    def unreserve(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> None:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return
        ext = s.extended
        if ext is not None and s.extended_allocation is not None:
            self.manager.remove_claim_pending_allocation(ext.metadata.uid)
            s.extended_allocation = None
            if ext.metadata.name != SPECIAL_CLAIM_NAME:  # created in PreBind: it goes

                async def delete_extended() -> None:
                    try:
                        await self.handle.client.delete(
                            types_pb2.ResourceClaim,
                            ext.metadata.name,
                            ext.metadata.namespace,
                            uid=ext.metadata.uid,
                        )
                    except ApiError as e:
                        logger.info("unreserve: deleting %s: %s", object_key(ext), e)

                self.handle.spawn(delete_extended, f"delete {object_key(ext)}")
        if not s.claims:
            return
        for i in s.allocations:
            claim = s.claims[i]
            if self.manager.remove_claim_pending_allocation(claim.metadata.uid):
                self.manager.assumed_claim_restore(claim.metadata.namespace, claim.metadata.name)
        reserved = []
        for claim in s.claims:
            current = self.manager.get_claim(claim.metadata.namespace, claim.metadata.name)
            if current is not None and current.status.HasField("allocation"):
                if is_reserved_for_pod(pod, current):
                    reserved.append(current)
        if reserved:

            async def drop() -> None:
                for claim in reserved:
                    await self._remove_reservation(pod, claim)

            self.handle.spawn(drop, f"unreserve claims of {object_key(pod)}")

    async def _remove_reservation(self, pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> None:
        """Takes the pod out of the claim's reservedFor (upstream's strategic-merge patch
        deleting the uid; kemu re-reads and writes the status, retrying on conflicts)."""
        client = self.handle.client
        uid = pod.metadata.uid
        current = claim
        for _ in range(_CONFLICT_RETRIES):
            updated = types_pb2.ResourceClaim()
            updated.CopyFrom(current)
            keep = [r for r in updated.status.reserved_for if r.uid != uid]
            del updated.status.reserved_for[:]
            updated.status.reserved_for.extend(keep)
            try:
                written = await client.update_status(updated)
            except Conflict:
                try:
                    current = await client.get(
                        types_pb2.ResourceClaim, claim.metadata.name, claim.metadata.namespace
                    )
                except NotFound:
                    return
                continue
            except ApiError as e:
                logger.error("unreserve %s for %s: %s", object_key(claim), object_key(pod), e)
                return
            self.manager.assume_claim_after_api_call(written)
            return

    # ------------------------------------------------------------ binding cycle

    def pre_bind_pre_flight(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State) or not (s.claims or s.extended_allocation is not None):
            return SKIP
        return SUCCESS

    async def pre_bind(self, state: CycleState, pod: types_pb2.Pod, node_name: str) -> Status:
        s = state.read(STATE_KEY)
        if not isinstance(s, _State):
            return SUCCESS
        if s.extended is not None and s.extended_allocation is not None:
            try:
                await self._bind_extended_claim(pod, s, s.extended, s.extended_allocation)
            except (ApiError, ClaimNotReady) as e:
                return as_error(e)
        for i, claim in enumerate(s.claims):
            if is_reserved_for_pod(pod, claim):
                continue
            try:
                s.claims[i] = await self._bind_claim(pod, claim, s.allocations.get(i))
            except (ApiError, ClaimNotReady) as e:
                return as_error(e)
        if self.binding_conditions and any(has_binding_conditions(c) for c in s.claims):
            return await self._wait_for_binding_conditions(pod, s, node_name)
        return SUCCESS

    async def _bind_extended_claim(
        self,
        pod: types_pb2.Pod,
        s: _State,
        claim: types_pb2.ResourceClaim,
        allocation: types_pb2.AllocationResult,
    ) -> None:
        """The special claim created (with its finalizer), allocated and reserved, then the
        pod's status.extendedResourceClaimStatus written (upstream bindClaim's
        extended-resource steps)."""
        # The devices stay in flight under the claim's uid in Reserve (the temporary one of
        # the in-memory claim) until the created claim is in the informer with its allocation
        # laid over it, as upstream bindClaim's deferred wait: else the next pods' cycles see
        # them free between the create and the informer's event, and allocate them again.
        in_flight = claim.metadata.uid
        try:
            written = await self._write_extended_claim(pod, s, claim, allocation)
            await self._wait_for_claim_in_assume_cache(written)
        finally:
            self.manager.remove_claim_pending_allocation(in_flight)

    async def _write_extended_claim(
        self,
        pod: types_pb2.Pod,
        s: _State,
        claim: types_pb2.ResourceClaim,
        allocation: types_pb2.AllocationResult,
    ) -> types_pb2.ResourceClaim:
        client = self.handle.client
        if claim.metadata.name == SPECIAL_CLAIM_NAME:
            new = types_pb2.ResourceClaim()
            new.metadata.CopyFrom(claim.metadata)
            new.metadata.name = ""
            new.metadata.uid = ""
            new.spec.CopyFrom(claim.spec)
            created = await client.create(new)
            s.extended = created  # Unreserve deletes it from here on
        else:
            created = claim
        written = await self._bind_claim(pod, created, allocation)
        s.extended = written
        status = types_pb2.PodExtendedResourceClaimStatus(resource_claim_name=written.metadata.name)
        containers = [*pod.spec.init_containers, *pod.spec.containers]
        by_request = {r.name for r in written.spec.devices.requests}
        for i, c in enumerate(containers):
            names = sorted(c.resources.requests)
            for j, r in enumerate(names):
                if f"container-{i}-request-{j}" in by_request:
                    status.request_mappings.add(
                        container_name=c.name,
                        resource_name=r,
                        request_name=f"container-{i}-request-{j}",
                    )
        # A patch without a resourceVersion, as upstream's schedutil.PatchPodStatus
        # (patchPodExtendedResourceClaimStatus): the scheduler's copy of the pod is older
        # than the nomination it may have written at the start of PreBind (KEP-5278), and an
        # update under its resourceVersion lost that race (a Conflict and a GET).
        await client.patch(
            types_pb2.Pod,
            pod.metadata.name,
            {"status": {"extendedResourceClaimStatus": message_to_dict(status)}},
            pod.metadata.namespace,
            subresource="status",
        )
        return written

    async def _wait_for_claim_in_assume_cache(self, claim: types_pb2.ResourceClaim) -> None:
        """Assumes the API's answer once the claims' informer holds the claim, looking at once
        and then every ASSUME_EXTENDED_CLAIM_POLL for up to ASSUME_EXTENDED_CLAIM_TIMEOUT
        (upstream's PollUntilContextTimeout over AssumeClaimAfterAPICall in bindClaim); after
        that only logged, as upstream."""
        clock = self.handle.clock
        deadline = clock.monotonic() + ASSUME_EXTENDED_CLAIM_TIMEOUT
        while not self.manager.assume_claim_after_api_call(claim):
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                logger.info("claim %s not stored in assume cache after retries", object_key(claim))
                return
            await clock.sleep(min(ASSUME_EXTENDED_CLAIM_POLL, remaining))

    async def _bind_claim(
        self,
        pod: types_pb2.Pod,
        claim: types_pb2.ResourceClaim,
        allocation: types_pb2.AllocationResult | None,
    ) -> types_pb2.ResourceClaim:
        """The claim's finalizer, allocation and reservation written (upstream bindClaim):
        first over the cycle's copy, re-read on a conflict."""
        client = self.handle.client
        name = object_key(claim)
        uid = claim.metadata.uid
        current = claim
        try:
            for attempt in range(_CONFLICT_RETRIES):
                if attempt:
                    try:
                        current = await client.get(
                            types_pb2.ResourceClaim, claim.metadata.name, claim.metadata.namespace
                        )
                    except NotFound:
                        raise ClaimNotReady(f"claim {name} got deleted in the meantime") from None
                    if current.metadata.uid != uid:
                        raise ClaimNotReady(f"claim {name} got deleted in the meantime")
                updated = types_pb2.ResourceClaim()
                updated.CopyFrom(current)
                try:
                    if allocation is not None:
                        if updated.status.HasField("allocation") and attempt:
                            raise ClaimNotReady(
                                f"claim {name} got allocated elsewhere in the meantime"
                            )
                        if DELETE_PROTECTION_FINALIZER not in updated.metadata.finalizers:
                            updated.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
                            updated = await client.update(updated)
                        updated.status.allocation.CopyFrom(allocation)
                        if self.binding_conditions:
                            ts = Timestamp()
                            ts.FromNanoseconds(int(self.handle.clock.now() * 1e9))
                            updated.status.allocation.allocation_timestamp.CopyFrom(ts)
                    ref = updated.status.reserved_for.add()
                    ref.resource = "pods"
                    ref.name = pod.metadata.name
                    ref.uid = pod.metadata.uid
                    written = await client.update_status(updated)
                except Conflict:
                    continue
                except ApiError as e:
                    what = "add allocation and reservation" if allocation else "add reservation"
                    raise ClaimNotReady(f"{what} to claim {name}: {e}") from e
                self.manager.assume_claim_after_api_call(written)
                logger.debug("claim %s allocated and reserved for %s", name, object_key(pod))
                return written
            raise ClaimNotReady(f"add reservation to claim {name}: conflict, retries exhausted")
        finally:
            self.manager.remove_claim_pending_allocation(uid)

    async def _wait_for_binding_conditions(
        self, pod: types_pb2.Pod, s: _State, node_name: str
    ) -> Status:
        """Waits for the devices' binding conditions (upstream PreBind's poll): an Error on a
        failure condition or after bindingTimeout."""
        self.handle.event_recorder.event(
            pod,
            "Normal",
            EVENT_BINDING_CONDITIONS_PENDING,
            "Scheduling",
            f"waiting for binding conditions for device on node {node_name}",
        )
        clock = self.handle.clock
        deadline = clock.monotonic() + self.binding_timeout
        while True:
            ready = True
            for claim in s.claims:
                current = self.manager.get_claim(claim.metadata.namespace, claim.metadata.name)
                if current is None:
                    return as_error(f"claim {claim.metadata.name} got deleted in the meantime")
                check = binding_check(current)
                if check.failure:
                    return as_error(check.failure)
                ready = ready and check.ready
            if ready:
                return SUCCESS
            remaining = deadline - clock.monotonic()
            if remaining <= 0:
                return as_error("device binding timeout")
            await clock.sleep(min(BINDING_POLL_INTERVAL, remaining))
            # (the look is a step: what else is due at the instant, the claim's provisioning
            # or allocation included, is done first; kemu.component.clock_steps)
            await take_step(clock, StepOrder.BINDING_CYCLE)

    # ------------------------------------------------------------ events

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        update = ActionType.ADD | ActionType.UPDATE_OBJECT
        return [
            # (upstream adds UpdateNodeTaint only without queueing hints)
            ClusterEventWithHint(
                ClusterEvent(
                    EventResource.NODE,
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_ALLOCATABLE,
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.RESOURCE_CLAIM, update),
                self.is_schedulable_after_claim_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.DEVICE_CLASS, update)),
            ClusterEventWithHint(ClusterEvent(EventResource.RESOURCE_SLICE, update)),
        ]

    def is_schedulable_after_claim_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """upstream isSchedulableAfterClaimChange, in its order."""
        if not isinstance(new, types_pb2.ResourceClaim):
            return QueueingHint.QUEUE
        freed = (
            isinstance(old, types_pb2.ResourceClaim)
            and old.status.HasField("allocation")
            and not new.status.HasField("allocation")
        )
        if not freed and not _may_be_pods_claim(pod, new):
            # kemu: the answer below without the pod's claims looked up (this hint runs for
            # every waiting pod on each claim event): a claim the pod cannot name is not one
            # of its claims, so SKIP either way.
            return QueueingHint.SKIP
        claims = self._pod_claims_or_none(pod)
        if claims is None:
            return QueueingHint.SKIP
        if freed:
            return QueueingHint.QUEUE  # devices were freed
        if all(c.metadata.uid != new.metadata.uid for c in claims):
            return QueueingHint.SKIP
        if not isinstance(old, types_pb2.ResourceClaim):
            return QueueingHint.QUEUE
        if old.status == new.status:
            return QueueingHint.SKIP  # e.g. the finalizer added
        return QueueingHint.QUEUE

    def is_schedulable_after_pod_change(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """The pod's own generated claims now named (upstream isSchedulableAfterPodChange)."""
        if not isinstance(new, types_pb2.Pod) or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.SKIP
        try:
            self.pod_claims(new)
        except ClaimNotReady:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def _may_be_pods_claim(pod: types_pb2.Pod, claim: types_pb2.ResourceClaim) -> bool:
    """Whether `claim` has a name the pod's claim entries resolve to (pod_claims looks
    claims up by those names in the pod's namespace)."""
    if claim.metadata.namespace != pod.metadata.namespace:
        return False
    name = claim.metadata.name
    if any(ref.resource_claim_name == name for ref in pod.spec.resource_claims):
        return True
    return any(st.resource_claim_name == name for st in pod.status.resource_claim_statuses)


def _seconds(args: PluginArgs, key: str, default: int) -> float:
    value = args.get(key, default)
    if isinstance(value, str) and value.endswith("s") and value[:-1].isdigit():
        value = int(value[:-1])  # a metav1.Duration such as "600s"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{NAME} args: {key}: Invalid value: {value!r}: must be a duration")
    return float(value)


def new(args: PluginArgs, handle: Handle) -> DynamicResources:
    """DynamicResourcesArgs: filterTimeout (DRASchedulerFilterTimeout; "must be zero or
    positive"), bindingTimeout (600 s by default; "must be at least 1 second"); upstream
    pkg/scheduler/apis/config/validation."""
    check_arg_keys(args, ("filterTimeout", "bindingTimeout"), NAME)
    gates = handle.gates
    filter_timeout = _seconds(args, "filterTimeout", DEFAULT_FILTER_TIMEOUT_SECONDS)
    if "filterTimeout" in args and not gates.enabled(DRA_SCHEDULER_FILTER_TIMEOUT):
        raise ValueError(
            f"{NAME} args: filterTimeout: Forbidden: DRASchedulingFilterTimeout feature gate "
            "is disabled"
        )
    if filter_timeout < 0:
        raise ValueError(
            f"{NAME} args: filterTimeout: Invalid value: {filter_timeout}: must be zero or positive"
        )
    if not gates.enabled(DRA_SCHEDULER_FILTER_TIMEOUT):
        filter_timeout = 0.0
    binding_timeout = _seconds(args, "bindingTimeout", DEFAULT_BINDING_TIMEOUT_SECONDS)
    if "bindingTimeout" in args and not (
        gates.enabled(DRA_DEVICE_BINDING_CONDITIONS)
        and gates.enabled(DRA_RESOURCE_CLAIM_DEVICE_STATUS)
    ):
        raise ValueError(
            f"{NAME} args: bindingTimeout: Forbidden: DRADeviceBindingConditions or "
            "DRAResourceClaimDeviceStatus feature gate is disabled"
        )
    if binding_timeout < 1:
        raise ValueError(
            f"{NAME} args: bindingTimeout: Invalid value: {binding_timeout}: must be at least "
            "1 second"
        )
    enabled = gates.enabled(DYNAMIC_RESOURCE_ALLOCATION)
    # The scheduler's manager; a simulation without one (the autoscaler's, until it has DRA)
    # sees no claims, slices or classes: a pod with claims does not fit, others Skip. (No
    # informers are asked for here: one started late would never sync.)
    shared = handle.shared_dra_manager() if enabled else None
    manager = shared if shared is not None else DraManager.empty()
    return DynamicResources(
        handle,
        manager,
        enabled=enabled,
        binding_timeout=binding_timeout,
        filter_timeout=filter_timeout,
    )
