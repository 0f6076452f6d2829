"""A claim's device constraints (upstream structured/internal/incubating allocator_incubating.go
matchAttributeConstraint, constraint.go distinctAttributeConstraint).

Constraints are monotonic: once one refuses a device, adding more devices never satisfies it,
so the search stops early. Each successful `add` is paired with exactly one `remove` (same
arguments) when the search backtracks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.pools import AllocationError

# A typed attribute value: ("string" | "int" | "bool" | "version", value).
AttributeValue = tuple[str, object]


def attribute_value(attr: types_pb2.DeviceAttribute) -> AttributeValue | None:
    if attr.HasField("string_value"):
        return ("string", attr.string_value)
    if attr.HasField("int_value"):
        return ("int", attr.int_value)
    if attr.HasField("bool_value"):
        return ("bool", attr.bool_value)
    if attr.HasField("version_value"):
        # semver 2.0.0 versions are minimal (no leading zeros): equal versions are equal strings.
        return ("version", attr.version_value)
    return None


def lookup_attribute(
    device: types_pb2.Device, driver: str, name: str
) -> types_pb2.DeviceAttribute | None:
    """An attribute by fully-qualified name; one in the driver's own domain may be published
    without the domain (upstream lookupAttribute)."""
    attrs = device.attributes
    if name in attrs:
        return attrs[name]
    domain, sep, ident = name.partition("/")
    if not sep or domain != driver:
        return None
    if ident in attrs:
        return attrs[ident]
    return None


def _applies(names: frozenset[str], request: str, sub_request: str) -> bool:
    if not names:
        return True
    if not sub_request:
        return request in names
    return request in names or f"{request}/{sub_request}" in names


class Constraint(Protocol):
    def add(self, request: str, sub_request: str, device: types_pb2.Device, driver: str) -> bool:
        """Whether the device may join; if so it is counted in."""
        ...

    def remove(
        self, request: str, sub_request: str, device: types_pb2.Device, driver: str
    ) -> None: ...


class MatchAttribute:
    """Every device of the named requests (all when none are named) has the attribute, with
    the same typed value."""

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self._requests = frozenset(requests)
        self._attribute = attribute
        self._value: AttributeValue | None = None
        self._count = 0

    def add(self, request: str, sub_request: str, device: types_pb2.Device, driver: str) -> bool:
        if not _applies(self._requests, request, sub_request):
            return True
        attr = lookup_attribute(device, driver, self._attribute)
        if attr is None:
            return False
        value = attribute_value(attr)
        if self._count == 0:
            # The first device with the attribute joins, whatever its value.
            self._value = value
            self._count = 1
            return True
        if value is None or self._value is None or value != self._value:
            return False
        self._count += 1
        return True

    def remove(self, request: str, sub_request: str, device: types_pb2.Device, driver: str) -> None:
        if not _applies(self._requests, request, sub_request):
            return
        self._count -= 1


class DistinctAttribute:
    """Every device of the named requests has the attribute, with values that differ
    (DRAConsumableCapacity: several shares of one device must not land in one claim)."""

    def __init__(self, requests: Sequence[str], attribute: str) -> None:
        self._requests = frozenset(requests)
        self._attribute = attribute
        self._values: list[AttributeValue] = []

    def add(self, request: str, sub_request: str, device: types_pb2.Device, driver: str) -> bool:
        if not _applies(self._requests, request, sub_request):
            return True
        attr = lookup_attribute(device, driver, self._attribute)
        if attr is None:
            return False
        value = attribute_value(attr)
        if value is None:
            # upstream's attribute lookup refuses a value of no known type.
            raise AllocationError(f"attribute {self._attribute}: unsupported attribute value")
        if not self._distinct(value):
            return False
        self._values.append(value)
        return True

    def _distinct(self, value: AttributeValue) -> bool:
        # As upstream: the first value of another type ends the comparison as "distinct".
        for existing in self._values:
            if existing[0] != value[0]:
                return True
            if existing[1] == value[1]:
                return False
        return True

    def remove(self, request: str, sub_request: str, device: types_pb2.Device, driver: str) -> None:
        if not _applies(self._requests, request, sub_request):
            return
        self._values.pop()
