"""Consumable capacity (KEP-5075, DRAConsumableCapacity): how much of a device's capacity one
allocation takes (upstream structured/internal/incubating/consumable_capacity.go).

Names: a device publishes capacities with or without its driver as domain; a request names them
either way. Internally every name is fully qualified ("<domain>/<id>", an unqualified name
belongs to the driver); the allocation result uses the spelling the device published
(upstream's capacityNameForStatus).

Arithmetic is exact (kemu's Quantity): a validRange's rounding is min + n·step with the
smallest n that reaches the request, for whole and fractional values alike (upstream rounds in
integers or, with DRAFractionalCapacityRange, in milli-units; the same values for any quantity
they can represent).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

from kemu.api.v1 import types_pb2
from kemu.machinery.quantity import Quantity, parse_quantity
from kemu.scheduling.dra.pools import AllocationError

# Fully-qualified capacity name → quantity.
ConsumedCapacity = dict[str, Quantity]


@lru_cache(maxsize=4096)
def quantity(text: str) -> Quantity:
    """A quantity from an API string (cached: slices repeat the same few values)."""
    return parse_quantity(text)


def qualify(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def resolve_device_capacity(
    driver: str, capacity: Mapping[str, types_pb2.DeviceCapacity]
) -> dict[str, types_pb2.DeviceCapacity]:
    """The device's capacities by fully-qualified name; an entry spelled with the driver's
    domain wins over the same identifier without one."""
    prefix = driver + "/"
    resolved: dict[str, types_pb2.DeviceCapacity] = {}
    for name, cap in capacity.items():
        if name.startswith(prefix):
            resolved[name] = cap
    for name, cap in capacity.items():
        if name.startswith(prefix):
            continue
        key = qualify(name, driver)
        if key not in resolved:
            resolved[key] = cap
    return resolved


def capacity_name_for_status(
    name: str, driver: str, capacity: Mapping[str, types_pb2.DeviceCapacity]
) -> str:
    """The spelling written into the claim's status: the device's own."""
    if name in capacity:
        return name
    return name.split("/", 1)[1] if name.startswith(driver + "/") else name


def _resolve_capacity_name(
    request_name: str, driver: str, capacity: Mapping[str, types_pb2.DeviceCapacity]
) -> str | None:
    if request_name in capacity:
        return qualify(request_name, driver)
    domain, sep, ident = request_name.partition("/")
    if sep:
        if domain != driver:
            return None
        return request_name if ident in capacity else None
    qualified = f"{driver}/{request_name}"
    return qualified if qualified in capacity else None


def resolve_capacity_requests(
    requests: Mapping[str, str] | None,
    driver: str,
    capacity: Mapping[str, types_pb2.DeviceCapacity],
) -> dict[str, Quantity] | None:
    """The request's capacities by fully-qualified name, None when the device lacks one of
    them; an AllocationError when one capacity is requested under both spellings."""
    if not requests:
        return {}
    resolved: dict[str, Quantity] = {}
    for name, value in requests.items():
        key = _resolve_capacity_name(name, driver, capacity)
        if key is None:
            return None
        if key in resolved:
            ident = key.split("/", 1)[1]
            other = ident if name == key else key
            raise AllocationError(f'capacity "{ident}" requested both as "{name}" and as "{other}"')
        resolved[key] = quantity(value)
    return resolved


def calculate_consumed(requested: Quantity | None, cap: types_pb2.DeviceCapacity) -> Quantity:
    """What one allocation consumes of a capacity: the request rounded up by the policy; with
    no request the policy's default, else the whole capacity."""
    has_policy = cap.HasField("request_policy")
    policy = cap.request_policy
    if requested is None:
        if has_policy and policy.HasField("default_value"):
            return quantity(policy.default_value)
        return quantity(cap.value)
    if not has_policy:
        return requested
    if policy.HasField("valid_range") and policy.valid_range.min:
        return _round_up_range(requested, policy.valid_range)
    if policy.valid_values:
        for v in policy.valid_values:
            q = quantity(v)
            if requested <= q:
                return q
        return requested
    return requested


def _round_up_range(requested: Quantity, valid: types_pb2.CapacityRequestPolicyRange) -> Quantity:
    low = quantity(valid.min)
    if requested < low:
        return low
    if not valid.HasField("step"):
        return requested
    step = quantity(valid.step)
    if step.amount <= 0:
        return requested
    n = math.ceil((requested.amount - low.amount) / step.amount)
    return Quantity(low.amount + n * step.amount, step.format)


def violates_policy(consumed: Quantity, cap: types_pb2.DeviceCapacity) -> bool:
    if not cap.HasField("request_policy"):
        return False
    policy = cap.request_policy
    if policy.HasField("default_value") and consumed == quantity(policy.default_value):
        return False
    if policy.HasField("valid_range"):
        valid = policy.valid_range
        if valid.HasField("max") and consumed > quantity(valid.max):
            return True
        if valid.HasField("step"):
            step = quantity(valid.step).amount
            low = quantity(valid.min).amount if valid.min else 0
            if step > 0 and (consumed.amount - low) % step != 0:
                return True
        return False
    if policy.valid_values:
        return all(consumed != quantity(v) for v in policy.valid_values)
    return False


def request_fits(
    requests: Mapping[str, str] | None,
    driver: str,
    device: types_pb2.Device,
    consumed_before: Mapping[str, Quantity] | None,
    allocating: Mapping[str, Quantity] | None,
) -> dict[str, Quantity] | None:
    """upstream cmpRequestOverCapacity: the consumption of each of the device's capacities when
    the request is added to what is consumed already (`consumed_before`: allocated claims;
    `allocating`: this allocation's earlier picks), or None when it does not fit (a capacity
    the device lacks, the policy refuses the amount, or the sum passes the capacity)."""
    capacity = resolve_device_capacity(driver, device.capacity)
    resolved = resolve_capacity_requests(requests, driver, device.capacity)
    if resolved is None:
        return None
    consumed: dict[str, Quantity] = {}
    for name, cap in capacity.items():
        value = calculate_consumed(resolved.get(name), cap)
        if value.sign() < 0:
            raise AllocationError(f'capacity "{name}": capacity value is negative')
        consumed[name] = value
    for name, cap in capacity.items():
        value = consumed[name]
        if violates_policy(value, cap):
            return None
        total = value.amount
        if consumed_before and name in consumed_before:
            total += consumed_before[name].amount
        if allocating and name in allocating:
            total += allocating[name].amount
        if total > quantity(cap.value).amount:
            return None
    return consumed
