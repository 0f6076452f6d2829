"""resource.k8s.io (Dynamic Resource Allocation) API rules shared by the apiserver's strategies
and validation: the gates that change the API (`DraRules`), upstream's defaults
(pkg/apis/resource/v1/defaults.go) and the strategies' dropDisabledFields
(pkg/registry/resource/{deviceclass,resourceslice,resourceclaim,resourceclaimtemplate}/
strategy.go): a gated field is dropped when its gate is off, unless the stored object already
uses it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from kemu.api.v1 import types_pb2 as pb

ADMIN_ACCESS_LABEL: Final = "resource.kubernetes.io/admin-access"
"""The namespace label (value "true") without which a claim may not ask for adminAccess."""
ADMIN_ACCESS_FORBIDDEN: Final = (
    "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on "
    "the containing namespace"
)

ALLOCATION_MODE_EXACT_COUNT: Final = "ExactCount"
ALLOCATION_MODE_ALL: Final = "All"
TOLERATION_OP_EQUAL: Final = "Equal"
TOLERATION_OP_EXISTS: Final = "Exists"


@dataclass(frozen=True)
class DraRules:
    """What the DRA API looks like at the apiserver's gates (resolved once, passed down)."""

    dynamic_resource_allocation: bool = True
    """DynamicResourceAllocation: a pod's spec.resourceClaims, containers' resources.claims
    and status.resourceClaimStatuses (the kinds themselves are served by kinds.Served)."""
    admin_access: bool = True
    """DRAAdminAccess: a request's exactly.adminAccess and a result's adminAccess."""
    prioritized_list: bool = True
    """DRAPrioritizedList: a request's firstAvailable."""
    device_taints: bool = True
    """DRADeviceTaints: devices' taints, requests' and results' tolerations."""
    partitionable_devices: bool = True
    """DRAPartitionableDevices: sharedCounters, consumesCounters, per-device node selection."""
    consumable_capacity: bool = True
    """DRAConsumableCapacity: allowMultipleAllocations, requestPolicy, capacity requests,
    distinctAttribute, shareID and consumedCapacity; `device.allowMultipleAllocations` in CEL."""
    binding_conditions: bool = True
    """DRADeviceBindingConditions: bindsToNode, binding(Failure)Conditions,
    allocationTimestamp."""
    device_status: bool = True
    """DRAResourceClaimDeviceStatus: a claim's status.devices."""
    extended_resource: bool = True
    """DRAExtendedResource: a DeviceClass's extendedResourceName."""


DEFAULT_DRA_RULES: Final = DraRules()


# ---------------------------------------------------------------- defaults


def _default_request(req: pb.ExactDeviceRequest | pb.DeviceSubRequest) -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest."""
    if not req.allocation_mode:
        req.allocation_mode = ALLOCATION_MODE_EXACT_COUNT
    if req.allocation_mode == ALLOCATION_MODE_EXACT_COUNT and req.count == 0:
        req.count = 1
    _default_tolerations(req.tolerations)


def _default_tolerations(tolerations: Iterable[pb.DeviceToleration]) -> None:
    """SetDefaults_DeviceToleration: operator Equal."""
    for t in tolerations:
        if not t.operator:
            t.operator = TOLERATION_OP_EQUAL


def default_claim_spec(spec: pb.ResourceClaimSpec) -> None:
    for request in spec.devices.requests:
        if request.HasField("exactly"):
            _default_request(request.exactly)
        for sub in request.first_available:
            _default_request(sub)


def default_allocation(status: pb.ResourceClaimStatus) -> None:
    if status.HasField("allocation"):
        for result in status.allocation.devices.results:
            _default_tolerations(result.tolerations)


# ---------------------------------------------------------------- dropDisabledFields


def _requests_use(spec: pb.ResourceClaimSpec | None, field: str) -> bool:
    if spec is None:
        return False
    for r in spec.devices.requests:
        if field == "first_available" and r.first_available:
            return True
        if field == "admin_access" and r.exactly.HasField("admin_access"):
            return True
        if field == "tolerations" and (
            r.exactly.tolerations or any(s.tolerations for s in r.first_available)
        ):
            return True
        if field == "capacity" and (
            r.exactly.HasField("capacity") or any(s.HasField("capacity") for s in r.first_available)
        ):
            return True
    if field == "capacity":
        return any(c.HasField("distinct_attribute") for c in spec.devices.constraints)
    return False


def drop_disabled_claim_spec_fields(
    spec: pb.ResourceClaimSpec, old: pb.ResourceClaimSpec | None, rules: DraRules
) -> None:
    """resourceclaim (and resourceclaimtemplate) dropDisabledFields. Only fields that are set
    are touched (clearing inside an unset `exactly` would set it)."""
    requests = spec.devices.requests
    exact = [r.exactly for r in requests if r.HasField("exactly")]
    subs = [s for r in requests for s in r.first_available]
    if not rules.prioritized_list and not _requests_use(old, "first_available"):
        for r in requests:
            if r.first_available:
                del r.first_available[:]
        subs = []
    both: list[pb.ExactDeviceRequest | pb.DeviceSubRequest] = [*exact, *subs]
    if not rules.admin_access and not _requests_use(old, "admin_access"):
        for e in exact:
            e.ClearField("admin_access")
    if not rules.device_taints and not _requests_use(old, "tolerations"):
        for req in both:
            if req.tolerations:
                del req.tolerations[:]
    if not rules.consumable_capacity and not _requests_use(old, "capacity"):
        for req in both:
            req.ClearField("capacity")
        for c in spec.devices.constraints:
            c.ClearField("distinct_attribute")


def _results(status: pb.ResourceClaimStatus | None) -> list[pb.DeviceRequestAllocationResult]:
    if status is None or not status.HasField("allocation"):
        return []
    return list(status.allocation.devices.results)


def drop_disabled_claim_status_fields(
    status: pb.ResourceClaimStatus, old: pb.ResourceClaimStatus | None, rules: DraRules
) -> None:
    """resourceclaim dropDisabledStatusFields and dropDeallocatedStatusDevices."""
    results = _results(status)
    old_results = _results(old)
    if not rules.admin_access and not any(r.HasField("admin_access") for r in old_results):
        for r in results:
            r.ClearField("admin_access")
    if not rules.device_taints and not any(r.tolerations for r in old_results):
        for r in results:
            if r.tolerations:
                del r.tolerations[:]
    if not rules.binding_conditions and not any(
        r.binding_conditions or r.binding_failure_conditions for r in old_results
    ):
        for r in results:
            if r.binding_conditions:
                del r.binding_conditions[:]
            if r.binding_failure_conditions:
                del r.binding_failure_conditions[:]
        if status.HasField("allocation") and not (
            old is not None and old.allocation.HasField("allocation_timestamp")
        ):
            status.allocation.ClearField("allocation_timestamp")
    if not rules.consumable_capacity and not any(
        r.HasField("share_id") or r.consumed_capacity for r in old_results
    ):
        for r in results:
            r.ClearField("share_id")
            r.consumed_capacity.clear()
    if not rules.device_status and not (old is not None and old.devices) and status.devices:
        del status.devices[:]
    # dropDeallocatedStatusDevices: a device no longer allocated loses its status entry.
    if old is not None and old.devices and status.devices:
        allocated = {_device_id(r.driver, r.pool, r.device, r.share_id) for r in results}
        kept = [
            d
            for d in status.devices
            if _device_id(d.driver, d.pool, d.device, d.share_id) in allocated or not _results(old)
        ]
        if len(kept) != len(status.devices):
            del status.devices[:]
            status.devices.extend(kept)


def _device_id(driver: str, pool: str, device: str, share_id: str) -> str:
    """structured.MakeSharedDeviceID's text: driver/pool/device[/shareID]."""
    base = f"{driver}/{pool}/{device}"
    return f"{base}/{share_id}" if share_id else base


def shared_device_id(r: pb.DeviceRequestAllocationResult | pb.AllocatedDeviceStatus) -> str:
    return _device_id(r.driver, r.pool, r.device, r.share_id)


def _slice_uses(spec: pb.ResourceSliceSpec | None, what: str) -> bool:
    if spec is None:
        return False
    devices = spec.devices
    if what == "taints":
        return any(d.taints for d in devices)
    if what == "partitionable":
        return (
            bool(spec.shared_counters)
            or spec.HasField("per_device_node_selection")
            or any(
                d.consumes_counters
                or d.HasField("node_name")
                or d.HasField("node_selector")
                or d.HasField("all_nodes")
                for d in devices
            )
        )
    if what == "binding":
        return any(
            d.HasField("binds_to_node") or d.binding_conditions or d.binding_failure_conditions
            for d in devices
        )
    return any(
        d.HasField("allow_multiple_allocations")
        or any(c.HasField("request_policy") for c in d.capacity.values())
        for d in devices
    )


def drop_disabled_slice_fields(
    spec: pb.ResourceSliceSpec, old: pb.ResourceSliceSpec | None, rules: DraRules
) -> None:
    """resourceslice dropDisabledFields."""
    devices = spec.devices
    if not rules.device_taints and not _slice_uses(old, "taints"):
        for d in devices:
            if d.taints:
                del d.taints[:]
    if not rules.partitionable_devices and not _slice_uses(old, "partitionable"):
        if spec.shared_counters:
            del spec.shared_counters[:]
        spec.ClearField("per_device_node_selection")
        for d in devices:
            if d.consumes_counters:
                del d.consumes_counters[:]
            for f in ("node_name", "node_selector", "all_nodes"):
                d.ClearField(f)
    if not rules.binding_conditions and not _slice_uses(old, "binding"):
        for d in devices:
            d.ClearField("binds_to_node")
            d.ClearField("binding_conditions")
            d.ClearField("binding_failure_conditions")
    if not rules.consumable_capacity and not _slice_uses(old, "consumable"):
        for d in devices:
            d.ClearField("allow_multiple_allocations")
            for c in d.capacity.values():
                c.ClearField("request_policy")


def drop_disabled_class_fields(
    spec: pb.DeviceClassSpec, old: pb.DeviceClassSpec | None, rules: DraRules
) -> None:
    """deviceclass dropDisabledFields: extendedResourceName with DRAExtendedResource off."""
    if not rules.extended_resource and not (
        old is not None and old.HasField("extended_resource_name")
    ):
        spec.ClearField("extended_resource_name")


def drop_disabled_pod_fields(spec: pb.PodSpec, old: pb.PodSpec | None, rules: DraRules) -> None:
    """pkg/api/pod/util.go dropDisabledDynamicResourceAllocationFields: without the gate a
    pod's claims and its containers' claims are dropped unless the stored pod uses them."""
    if rules.dynamic_resource_allocation or (old is not None and _pod_uses_claims(old)):
        return
    if spec.resource_claims:
        del spec.resource_claims[:]
    for c in (*spec.init_containers, *spec.containers):
        if c.resources.claims:
            del c.resources.claims[:]


def _pod_uses_claims(spec: pb.PodSpec) -> bool:
    return bool(spec.resource_claims) or any(
        c.resources.claims for c in (*spec.init_containers, *spec.containers)
    )


def drop_disabled_pod_status_fields(
    status: pb.PodStatus, old: pb.PodStatus, rules: DraRules
) -> None:
    """dropDisabledPodStatusFields' DRA part: resourceClaimStatuses without
    DynamicResourceAllocation, extendedResourceClaimStatus without DRAExtendedResource, each
    unless the stored status has it."""
    if (
        not rules.dynamic_resource_allocation
        and not old.resource_claim_statuses
        and status.resource_claim_statuses
    ):
        del status.resource_claim_statuses[:]
    if not rules.extended_resource and not old.HasField("extended_resource_claim_status"):
        status.ClearField("extended_resource_claim_status")


def uses_admin_access(spec: pb.ResourceClaimSpec) -> list[int]:
    """The indices of the requests that ask for admin access."""
    return [
        i
        for i, r in enumerate(spec.devices.requests)
        if r.HasField("exactly") and r.exactly.admin_access
    ]


def claim_state(claim: pb.ResourceClaim) -> str:
    """The STATE column of `kubectl get resourceclaims` (upstream printers.go
    resourceClaimState): "deleted", "pending" or "allocated", and "reserved"."""
    states = []
    if claim.metadata.HasField("deletion_timestamp"):
        states.append("deleted")
    allocated = claim.status.HasField("allocation")
    if not allocated and not claim.metadata.HasField("deletion_timestamp"):
        states.append("pending")
    if allocated:
        states.append("allocated")
        if claim.status.reserved_for:
            states.append("reserved")
    return ",".join(states)
