"""resource.k8s.io (Dynamic Resource Allocation) validation: upstream
pkg/apis/resource/validation/validation.go (1.35+), its messages and field paths, for
DeviceClass, ResourceSlice, ResourceClaim (spec, update, status update), ResourceClaimTemplate
and DeviceTaintRule. CEL selectors compile here (kemu.machinery.dra_cel); on an update whose
selectors are unchanged they count as stored expressions (upstream compiles those with the
current environment and new ones with the previous release's; kemu's environment is the same
for both, so only the length limit, which does not apply to stored raw parameters, differs).

Not checked, for want of the library's support: the estimated CEL cost ("too complex, exceeds
cost limit"). The admin-access namespace label needs the store: apiserver/admission.
"""

from __future__ import annotations

import ipaddress
import json
import re
import uuid
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Final, TypeVar

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2 as pb
from kemu.machinery.convert import message_to_dict
from kemu.machinery.dra import (
    ALLOCATION_MODE_ALL,
    ALLOCATION_MODE_EXACT_COUNT,
    TOLERATION_OP_EQUAL,
    TOLERATION_OP_EXISTS,
    DraRules,
    shared_device_id,
)
from kemu.machinery.dra_cel import (
    CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
    Features,
    SelectorCache,
    SelectorCompileError,
)
from kemu.machinery.errors import Cause, Invalid
from kemu.machinery.quantity import Quantity, parse_quantity
from kemu.machinery.semver import is_semver
from kemu.machinery.validation.field import (
    duplicate,
    forbidden,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from kemu.machinery.validation.meta import (
    validate_annotations,
    validate_label_name,
    validate_labels,
    validate_object_meta,
)
from kemu.machinery.validation.names import (
    is_dns1123_label,
    is_dns1123_subdomain,
    is_valid_label_value,
    name_is_dns_subdomain,
)
from kemu.machinery.validation.pod import validate_node_selector
from kemu.machinery.validation.resources import is_extended_resource
from kemu.machinery.validation.scheduling import validate_conditions

# k8s.io/api/resource/v1 limits.
DRIVER_NAME_MAX_LENGTH: Final = 63
POOL_NAME_MAX_LENGTH: Final = 253
DEVICE_MAX_DOMAIN_LENGTH: Final = 63
DEVICE_MAX_ID_LENGTH: Final = 32
DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: Final = 64
RESOURCE_SLICE_MAX_DEVICES: Final = 128
RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS: Final = 64
MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: Final = 32
MAX_COUNTER_SETS: Final = 8
MAX_COUNTERS_PER_COUNTER_SET: Final = 32
MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION: Final = 32
MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: Final = 2
DEVICE_TAINTS_MAX_LENGTH: Final = 16
DEVICE_TOLERATIONS_MAX_LENGTH: Final = 16
DEVICE_REQUESTS_MAX_SIZE: Final = 32
DEVICE_SELECTORS_MAX_SIZE: Final = 32
DEVICE_CONSTRAINTS_MAX_SIZE: Final = 32
DEVICE_CONFIG_MAX_SIZE: Final = 32
FIRST_AVAILABLE_MAX_SIZE: Final = 8
ALLOCATION_RESULTS_MAX_SIZE: Final = 32
OPAQUE_PARAMETERS_MAX_LENGTH: Final = 10 * 1024
RESERVED_FOR_MAX_SIZE: Final = 256
ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS: Final = 8
ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH: Final = 10 * 1024
NETWORK_INTERFACE_NAME_MAX_LENGTH: Final = 256
NETWORK_HARDWARE_ADDRESS_MAX_LENGTH: Final = 128
NETWORK_MAX_IPS: Final = 16
BINDING_CONDITIONS_MAX_SIZE: Final = 4
CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: Final = 10
DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS: Final = 8

TAINT_EFFECTS: Final = ("NoExecute", "NoSchedule", "None")  # sets.List: sorted
_REQUEST_REF: Final = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
_IMMUTABLE: Final = "field is immutable"
_C_IDENTIFIER_FMT: Final = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER: Final = re.compile(_C_IDENTIFIER_FMT)
_C_IDENTIFIER_ERROR: Final = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string of "
    "alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used "
    f"for validation is '{_C_IDENTIFIER_FMT}')"
)

# The admission-time compile cache: shared across requests, as upstream's lazy compiler is.
_CACHES: Final = {
    False: SelectorCache(1024, Features(consumable_capacity=False)),
    True: SelectorCache(1024, Features(consumable_capacity=True)),
}

T = TypeVar("T")


def _shown(value: object) -> str:
    if isinstance(value, Message):
        return json.dumps(message_to_dict(value), separators=(",", ":"))
    return str(value)


# ---------------------------------------------------------------- generic helpers


def _validate_slice(
    items: Sequence[T], max_size: int, item: Callable[[T, str], list[Cause]], path: str
) -> list[Cause]:
    """validateSlice: TooMany short-circuits, else each item."""
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]
    causes: list[Cause] = []
    for i, x in enumerate(items):
        causes += item(x, f"{path}[{i}]")
    return causes


def _validate_set(
    items: Sequence[T],
    max_size: int,
    item: Callable[[T, str], list[Cause]],
    key: Callable[[T], Hashable],
    path: str,
) -> list[Cause]:
    """validateSet: validateSlice plus Duplicate at the repeated item."""
    if 0 <= max_size < len(items):
        return [too_many(path, len(items), max_size)]
    causes = _validate_slice(items, -1, item, path)
    seen: set[Hashable] = set()
    for i, x in enumerate(items):
        k = key(x)
        if k in seen:
            causes.append(duplicate(f"{path}[{i}]", k))
        seen.add(k)
    return causes


def _truncate(key: str, max_len: int) -> str:
    max_len = max(max_len, 16)
    if len(key) <= max_len:
        return key
    remaining = max_len - 3
    return key[: (remaining + 1) // 2] + "..." + key[len(key) - remaining // 2 :]


def _validate_map(
    m: Mapping[str, T],
    max_size: int,
    truncate: int,
    key: Callable[[str, str], list[Cause]],
    item: Callable[[T, str], list[Cause]],
    path: str,
) -> list[Cause]:
    if 0 <= max_size < len(m):
        return [too_many(path, len(m), max_size)]
    causes: list[Cause] = []
    for k in sorted(m):
        p = f"{path}[{_truncate(k, truncate)}]"
        causes += key(k, p) + item(m[k], p)
    return causes


def _dns_label(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_dns1123_label(value)]


def _dns_subdomain(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_dns1123_subdomain(value)]


def validate_driver_name(name: str, path: str) -> list[Cause]:
    """ValidateCSIDriverName (the same format)."""
    if not name:
        return [required(path)]
    if len(name) > DRIVER_NAME_MAX_LENGTH:
        return [too_long(path, DRIVER_NAME_MAX_LENGTH)]
    return _dns_subdomain(name.lower(), path)


def validate_pool_name(name: str, path: str) -> list[Cause]:
    if not name:
        return [required(path)]
    causes: list[Cause] = []
    if len(name) > POOL_NAME_MAX_LENGTH:
        causes.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in name.split("/"):
        causes += _dns_subdomain(part, path)
    return causes


def _validate_uid(uid: str, path: str) -> list[Cause]:
    try:
        uuid.UUID(uid)
    except ValueError as exc:
        return [invalid(path, uid, f"error validating uid: {exc}")]
    if len(uid) != 36 or uid != uid.lower():
        return [
            invalid(
                path,
                uid,
                "uid must be in RFC 4122 normalized form, "
                "`xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lowercase hexadecimal characters",
            )
        ]
    return []


def _c_identifier(ident: str, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        causes.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.fullmatch(ident):
        causes.append(invalid(path, ident, _C_IDENTIFIER_ERROR))
    return causes


def validate_qualified_name(name: str, path: str) -> list[Cause]:
    """An attribute or capacity name: a C identifier, or `<domain>/<C identifier>`."""
    parts = name.split("/")
    if len(parts) == 1:
        return _c_identifier(parts[0], path)
    causes: list[Cause] = []
    if len(parts) == 2:
        if not parts[0]:
            causes.append(invalid(path, "", "the domain must not be empty"))
        else:
            causes += validate_driver_name(parts[0], path)
        if not parts[1]:
            causes.append(invalid(path, "", "the name must not be empty"))
        else:
            causes += _c_identifier(parts[1], path)
    return causes


def _fully_qualified_name(name: str, path: str) -> list[Cause]:
    causes = validate_qualified_name(name, path)
    if "/" not in name:
        causes.append(
            invalid(
                path,
                name,
                "a fully qualified name must be a domain and a name separated by a slash",
            )
        )
    return causes


def _label_value(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_valid_label_value(value)]


def _raw_extension(raw: pb.RawExtension, path: str, stored: bool, max_len: int) -> list[Cause]:
    """validateRawExtension: a JSON object, at most max_len bytes on create."""
    text = raw.raw
    if not text:
        return [required(path)]
    if not stored and len(text.encode()) > max_len:
        return [too_long(path, max_len)]
    try:
        value = json.loads(text)
    except ValueError as exc:
        return [invalid(path, "<value omitted>", f"error parsing data as JSON: {exc}")]
    if value is None:
        return [required(path)]
    if not isinstance(value, dict):
        return [invalid(path, "<value omitted>", "must be a valid JSON object")]
    return []


# ---------------------------------------------------------------- selectors and configs


def _validate_selectors(
    selectors: Sequence[pb.DeviceSelector], path: str, stored: bool, rules: DraRules
) -> list[Cause]:
    def one(selector: pb.DeviceSelector, p: str) -> list[Cause]:
        if not selector.HasField("cel"):
            return [required(f"{p}.cel")]
        return validate_cel_selector(selector.cel.expression, f"{p}.cel.expression", rules)

    return _validate_slice(selectors, DEVICE_SELECTORS_MAX_SIZE, one, path)


def validate_cel_selector(expression: str, path: str, rules: DraRules) -> list[Cause]:
    """validateCELSelector: TooLong above 10 Ki (not compiled), else compiled; an error is
    Invalid with upstream's detail ("compilation failed: ...")."""
    if len(expression) > CEL_SELECTOR_EXPRESSION_MAX_LENGTH:
        return [too_long(path, CEL_SELECTOR_EXPRESSION_MAX_LENGTH)]
    try:
        _CACHES[rules.consumable_capacity].get_or_compile(expression)
    except SelectorCompileError as exc:
        return [invalid(path, expression, exc.detail)]
    return []


def _validate_device_configuration(
    config: pb.DeviceConfiguration | pb.DeviceClaimConfiguration | pb.DeviceAllocationConfiguration,
    path: str,
    stored: bool,
) -> list[Cause]:
    if not config.HasField("opaque"):
        return [required(f"{path}.opaque")]
    opaque = config.opaque
    return validate_driver_name(opaque.driver, f"{path}.opaque.driver") + _raw_extension(
        opaque.parameters, f"{path}.opaque.parameters", stored, OPAQUE_PARAMETERS_MAX_LENGTH
    )


# ---------------------------------------------------------------- DeviceClass


def validate_device_class(
    obj: pb.DeviceClass, old: pb.DeviceClass | None, rules: DraRules
) -> list[Cause]:
    """ValidateDeviceClass / ValidateDeviceClassUpdate (without the metadata update's rules):
    unchanged selectors and configs count as stored."""
    causes = validate_object_meta(obj.metadata, namespaced=False, name_fn=name_is_dns_subdomain)
    return causes + _device_class_spec(obj.spec, None if old is None else old.spec, rules)


def _device_class_spec(
    spec: pb.DeviceClassSpec, old: pb.DeviceClassSpec | None, rules: DraRules
) -> list[Cause]:
    stored = old is not None and list(spec.selectors) == list(old.selectors)
    causes = _validate_selectors(spec.selectors, "spec.selectors", stored, rules)
    stored = old is not None and list(spec.config) == list(old.config)
    causes += _validate_slice(
        spec.config,
        DEVICE_CONFIG_MAX_SIZE,
        lambda c, p: _validate_device_configuration(c, p, stored),
        "spec.config",
    )
    if spec.HasField("extended_resource_name") and not is_extended_resource(
        spec.extended_resource_name
    ):
        causes.append(
            invalid(
                "spec.extendedResourceName",
                spec.extended_resource_name,
                "must be a valid extended resource name",
            )
        )
    return causes


# ---------------------------------------------------------------- ResourceClaim


RequestNames = dict[str, frozenset[str] | None]


def gather_request_names(claim: pb.DeviceClaim) -> RequestNames:
    return {
        r.name: (frozenset(s.name for s in r.first_available) if r.first_available else None)
        for r in claim.requests
    }


def _has_request(names: RequestNames, ref: str) -> bool:
    segments = ref.split("/")
    if len(segments) > 2 or segments[0] not in names:
        return False
    if len(segments) == 1:
        return True
    subs = names[segments[0]]
    return subs is not None and segments[1] in subs


def _request_ref(ref: str, path: str, names: RequestNames) -> list[Cause]:
    segments = ref.split("/")
    if len(segments) > 2:
        return [invalid(path, ref, _REQUEST_REF)]
    causes: list[Cause] = []
    for s in segments:
        causes += _dns_label(s, path) if s else [required(path)]
    if not _has_request(names, ref):
        causes.append(invalid(path, ref, _REQUEST_REF))
    return causes


def _allocation_mode(mode: str, count: int, mode_path: str, count_path: str) -> list[Cause]:
    if mode == ALLOCATION_MODE_ALL:
        if count != 0:
            return [
                invalid(count_path, count, f"must not be specified when allocationMode is '{mode}'")
            ]
    elif mode == ALLOCATION_MODE_EXACT_COUNT:
        if count <= 0:
            return [invalid(count_path, count, "must be greater than zero")]
    else:
        return [not_supported(mode_path, mode, (ALLOCATION_MODE_ALL, ALLOCATION_MODE_EXACT_COUNT))]
    return []


def _device_class_name(name: str, path: str) -> list[Cause]:
    return [required(path)] if not name else _dns_subdomain(name, path)


def _toleration(t: pb.DeviceToleration, path: str) -> list[Cause]:
    causes: list[Cause] = []
    if t.key:
        causes += validate_label_name(t.key, f"{path}.key")
    if t.operator == TOLERATION_OP_EXISTS:
        if t.value:
            causes.append(invalid(f"{path}.value", t.value, "must be empty for operator `Exists`"))
    elif t.operator == TOLERATION_OP_EQUAL:
        causes += _label_value(t.value, f"{path}.value")
    elif not t.operator:
        causes.append(required(f"{path}.operator"))
    else:
        causes.append(
            not_supported(
                f"{path}.operator", t.operator, (TOLERATION_OP_EQUAL, TOLERATION_OP_EXISTS)
            )
        )
    if t.effect and t.effect not in TAINT_EFFECTS:
        causes.append(not_supported(f"{path}.effect", t.effect, TAINT_EFFECTS))
    return causes


def _capacity_requests(capacity: pb.CapacityRequirements, path: str) -> list[Cause]:
    causes: list[Cause] = []
    for name in sorted(capacity.requests):
        p = f"{path}.requests[{name}]"
        causes += validate_qualified_name(name, p)
        try:
            parse_quantity(capacity.requests[name], p)
        except Invalid as exc:
            causes += exc.causes
    return causes


def _exact_or_sub(
    req: pb.ExactDeviceRequest | pb.DeviceSubRequest, path: str, stored: bool, rules: DraRules
) -> list[Cause]:
    causes = _device_class_name(req.device_class_name, f"{path}.deviceClassName")
    causes += _validate_selectors(req.selectors, f"{path}.selectors", stored, rules)
    causes += _allocation_mode(
        req.allocation_mode, req.count, f"{path}.allocationMode", f"{path}.count"
    )
    if len(req.tolerations) > DEVICE_TOLERATIONS_MAX_LENGTH:
        causes.append(
            too_many(f"{path}.tolerations", len(req.tolerations), DEVICE_TOLERATIONS_MAX_LENGTH)
        )
    for i, t in enumerate(req.tolerations):
        causes += _toleration(t, f"{path}.tolerations[{i}]")
    if req.HasField("capacity"):
        causes += _capacity_requests(req.capacity, f"{path}.capacity")
    return causes


def _device_request(req: pb.DeviceRequest, path: str, stored: bool, rules: DraRules) -> list[Cause]:
    causes = [required(f"{path}.name")] if not req.name else _dns_label(req.name, f"{path}.name")
    has_first = len(req.first_available) > 0
    has_exactly = req.HasField("exactly")
    if not has_first and not has_exactly:
        causes.append(required(path, "exactly one of `exactly` or `firstAvailable` is required"))
    elif has_first and has_exactly:
        causes.append(
            invalid(
                path,
                None,
                "exactly one of `exactly` or `firstAvailable` is required, but multiple fields "
                "are set",
            )
        )
    elif has_first:

        def sub(s: pb.DeviceSubRequest, p: str) -> list[Cause]:
            head = [required(f"{p}.name")] if not s.name else _dns_label(s.name, f"{p}.name")
            return head + _exact_or_sub(s, p, stored, rules)

        causes += _validate_set(
            req.first_available,
            FIRST_AVAILABLE_MAX_SIZE,
            sub,
            lambda s: s.name,
            f"{path}.firstAvailable",
        )
    else:
        causes += _exact_or_sub(req.exactly, f"{path}.exactly", stored, rules)
    return causes


def _constraint(
    c: pb.DeviceConstraint, path: str, names: RequestNames, rules: DraRules
) -> list[Cause]:
    causes = _validate_set(
        c.requests,
        DEVICE_REQUESTS_MAX_SIZE,
        lambda r, p: _request_ref(r, p, names),
        lambda r: r,
        f"{path}.requests",
    )
    if c.HasField("match_attribute"):
        causes += _fully_qualified_name(c.match_attribute, f"{path}.matchAttribute")
    elif c.HasField("distinct_attribute"):
        causes += _fully_qualified_name(c.distinct_attribute, f"{path}.distinctAttribute")
    elif rules.consumable_capacity:
        causes.append(
            required(
                path,
                'exactly one of "matchAttribute" or "distinctAttribute" is required, but multiple '
                "fields are set",
            )
        )
    else:
        causes.append(required(f"{path}.matchAttribute"))
    return causes


def validate_claim_spec(
    spec: pb.ResourceClaimSpec, path: str, stored: bool, rules: DraRules
) -> list[Cause]:
    devices = spec.devices
    names = gather_request_names(devices)
    p = f"{path}.devices"
    causes = _validate_set(
        devices.requests,
        DEVICE_REQUESTS_MAX_SIZE,
        lambda r, q: _device_request(r, q, stored, rules),
        lambda r: r.name,
        f"{p}.requests",
    )
    causes += _validate_slice(
        devices.constraints,
        DEVICE_CONSTRAINTS_MAX_SIZE,
        lambda c, q: _constraint(c, q, names, rules),
        f"{p}.constraints",
    )

    def config(c: pb.DeviceClaimConfiguration, q: str) -> list[Cause]:
        out = _validate_set(
            c.requests,
            DEVICE_REQUESTS_MAX_SIZE,
            lambda r, qq: _request_ref(r, qq, names),
            lambda r: r,
            f"{q}.requests",
        )
        return out + _validate_device_configuration(c, q, stored)

    causes += _validate_slice(devices.config, DEVICE_CONFIG_MAX_SIZE, config, f"{p}.config")
    return causes


def validate_resource_claim(
    obj: pb.ResourceClaim, old: pb.ResourceClaim | None, rules: DraRules
) -> list[Cause]:
    """ValidateResourceClaim; on update only the spec's immutability (upstream does not
    validate an unchangeable spec again)."""
    causes = validate_object_meta(obj.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    if old is not None:
        if obj.spec != old.spec:
            causes.append(invalid("spec", _shown(obj.spec), _IMMUTABLE))
        return causes
    return causes + validate_claim_spec(obj.spec, "spec", False, rules)


def validate_resource_claim_status_update(
    new: pb.ResourceClaim, old: pb.ResourceClaim, rules: DraRules
) -> list[Cause]:
    """ValidateResourceClaimStatusUpdate."""
    status, old_status = new.status, old.status
    names = gather_request_names(new.spec.devices)
    path = "status"

    def consumer(ref: pb.ResourceClaimConsumerReference, p: str) -> list[Cause]:
        out: list[Cause] = []
        for value, name in ((ref.resource, "resource"), (ref.name, "name"), (ref.uid, "uid")):
            if not value:
                out.append(required(f"{p}.{name}"))
        return out

    causes = _validate_set(
        status.reserved_for, RESERVED_FOR_MAX_SIZE, consumer, lambda r: r.uid, f"{path}.reservedFor"
    )
    allocated = (
        {shared_device_id(r) for r in status.allocation.devices.results}
        if status.HasField("allocation")
        else set()
    )
    causes += _validate_set(
        status.devices,
        -1,
        lambda d, p: _device_status(d, p, allocated),
        shared_device_id,
        f"{path}.devices",
    )
    if status.reserved_for:
        if not status.HasField("allocation"):
            causes.append(
                forbidden(f"{path}.reservedFor", "may not be specified when `allocated` is not set")
            )
        elif new.metadata.HasField("deletion_timestamp"):
            old_uids = {_ref_key(r) for r in old_status.reserved_for}
            if any(_ref_key(r) not in old_uids for r in status.reserved_for):
                causes.append(
                    forbidden(
                        f"{path}.reservedFor",
                        "new entries may not be added while `deallocationRequested` or "
                        "`deletionTimestamp` are set",
                    )
                )
    if old_status.HasField("allocation") and status.HasField("allocation"):
        if status.allocation != old_status.allocation:
            causes.append(invalid(f"{path}.allocation", _shown(status.allocation), _IMMUTABLE))
    elif status.HasField("allocation"):
        causes += _allocation_result(status.allocation, f"{path}.allocation", names)
    return causes


def _ref_key(r: pb.ResourceClaimConsumerReference) -> tuple[str, str, str, str]:
    return (r.api_group, r.resource, r.name, r.uid)


def _binding_parameters(
    conditions: Sequence[str], failures: Sequence[str], path: str
) -> list[Cause]:
    causes = _validate_slice(
        conditions, BINDING_CONDITIONS_MAX_SIZE, validate_label_name, f"{path}.bindingConditions"
    )
    causes += _validate_slice(
        failures,
        BINDING_CONDITIONS_MAX_SIZE,
        validate_label_name,
        f"{path}.bindingFailureConditions",
    )
    seen: set[str] = set()
    for i, c in enumerate(conditions):
        if c in seen:
            causes.append(duplicate(f"{path}.bindingConditions[{i}]", c))
        seen.add(c)
    seen_f: set[str] = set()
    for i, c in enumerate(failures):
        if c in seen_f:
            causes.append(duplicate(f"{path}.bindingFailureConditions[{i}]", c))
        seen_f.add(c)
        if c in conditions:
            causes.append(
                invalid(
                    f"{path}.bindingFailureConditions[{i}]",
                    c,
                    "bindingFailureConditions must not overlap with bindingConditions",
                )
            )
    if not conditions and failures:
        causes.append(
            invalid(
                f"{path}.bindingConditions",
                "[]",
                "bindingConditions are required to use bindingFailureConditions",
            )
        )
    if not failures and conditions:
        causes.append(
            invalid(
                f"{path}.bindingFailureConditions",
                "[]",
                "bindingFailureConditions are required to use bindingConditions",
            )
        )
    return causes


def _allocation_result(
    allocation: pb.AllocationResult, path: str, names: RequestNames
) -> list[Cause]:
    p = f"{path}.devices"

    def result(r: pb.DeviceRequestAllocationResult, q: str) -> list[Cause]:
        out = _request_ref(r.request, f"{q}.request", names)
        out += validate_driver_name(r.driver, f"{q}.driver")
        out += validate_pool_name(r.pool, f"{q}.pool")
        out += [required(f"{q}.device")] if not r.device else _dns_label(r.device, f"{q}.device")
        out += _binding_parameters(r.binding_conditions, r.binding_failure_conditions, q)
        if r.HasField("share_id"):
            out += _validate_uid(r.share_id, f"{q}.shareID")
        return out

    def config(c: pb.DeviceAllocationConfiguration, q: str) -> list[Cause]:
        out: list[Cause] = []
        if not c.source:
            out.append(required(f"{q}.source"))
        elif c.source not in ("FromClaim", "FromClass"):
            out.append(not_supported(f"{q}.source", c.source, ("FromClaim", "FromClass")))
        out += _validate_set(
            c.requests,
            DEVICE_REQUESTS_MAX_SIZE,
            lambda r, qq: _request_ref(r, qq, names),
            lambda r: r,
            f"{q}.requests",
        )
        return out + _validate_device_configuration(c, q, False)

    causes = _validate_slice(
        allocation.devices.results, ALLOCATION_RESULTS_MAX_SIZE, result, f"{p}.results"
    )
    causes += _validate_slice(
        allocation.devices.config, 2 * DEVICE_CONFIG_MAX_SIZE, config, f"{p}.config"
    )
    if allocation.HasField("node_selector"):
        causes += validate_node_selector(allocation.node_selector, f"{path}.nodeSelector")
    return causes


def _device_status(d: pb.AllocatedDeviceStatus, path: str, allocated: set[str]) -> list[Cause]:
    causes = validate_driver_name(d.driver, f"{path}.driver")
    causes += validate_pool_name(d.pool, f"{path}.pool")
    causes += (
        [required(f"{path}.device")] if not d.device else _dns_label(d.device, f"{path}.device")
    )
    if d.HasField("share_id"):
        causes += _validate_uid(d.share_id, f"{path}.shareID")
    device_id = shared_device_id(d)
    if device_id not in allocated:
        causes.append(invalid(path, device_id, "must be an allocated device in the claim"))
    if len(d.conditions) > ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS:
        causes.append(
            too_many(
                f"{path}.conditions", len(d.conditions), ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS
            )
        )
    causes += validate_conditions(d.conditions, f"{path}.conditions")
    if d.HasField("data") and d.data.raw:
        causes += _raw_extension(
            d.data, f"{path}.data", False, ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH
        )
    if d.HasField("network_data"):
        n = d.network_data
        if len(n.interface_name) > NETWORK_INTERFACE_NAME_MAX_LENGTH:
            causes.append(
                too_long(f"{path}.networkData.interfaceName", NETWORK_INTERFACE_NAME_MAX_LENGTH)
            )
        if len(n.hardware_address) > NETWORK_HARDWARE_ADDRESS_MAX_LENGTH:
            causes.append(
                too_long(f"{path}.networkData.hardwareAddress", NETWORK_HARDWARE_ADDRESS_MAX_LENGTH)
            )
        causes += _validate_set(
            n.ips, NETWORK_MAX_IPS, _interface_address, lambda a: a, f"{path}.networkData.ips"
        )
    return causes


def _interface_address(address: str, path: str) -> list[Cause]:
    """IsValidInterfaceAddress: an IP address with a prefix length (CIDR notation)."""
    try:
        ipaddress.ip_interface(address)
        if "/" not in address:
            raise ValueError(address)
    except ValueError:
        return [
            invalid(
                path,
                address,
                "must be a valid address in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            )
        ]
    return []


# ---------------------------------------------------------------- ResourceClaimTemplate


def validate_resource_claim_template(
    obj: pb.ResourceClaimTemplate, old: pb.ResourceClaimTemplate | None, rules: DraRules
) -> list[Cause]:
    """ValidateResourceClaimTemplate; on update only the spec's immutability."""
    if old is not None:
        return [invalid("spec", _shown(obj.spec), _IMMUTABLE)] if obj.spec != old.spec else []
    causes = validate_object_meta(obj.metadata, namespaced=True, name_fn=name_is_dns_subdomain)
    meta = obj.spec.metadata
    causes += validate_labels(meta.labels, "spec.metadata.labels")
    causes += validate_annotations(meta.annotations, "spec.metadata.annotations")
    return causes + validate_claim_spec(obj.spec.spec, "spec.spec", False, rules)


# ---------------------------------------------------------------- ResourceSlice


def validate_resource_slice(
    obj: pb.ResourceSlice, old: pb.ResourceSlice | None, rules: DraRules
) -> list[Cause]:
    """ValidateResourceSlice / ValidateResourceSliceUpdate: driver, pool.name and nodeName
    immutable."""
    causes = validate_object_meta(obj.metadata, namespaced=False, name_fn=name_is_dns_subdomain)
    if old is not None:
        s, o = obj.spec, old.spec
        if s.pool.name != o.pool.name:
            causes.append(invalid("spec.pool.name", s.pool.name, _IMMUTABLE))
        if s.driver != o.driver:
            causes.append(invalid("spec.driver", s.driver, _IMMUTABLE))
        if s.HasField("node_name") != o.HasField("node_name") or s.node_name != o.node_name:
            shown = s.node_name if s.HasField("node_name") else None
            causes.append(invalid("spec.nodeName", shown, _IMMUTABLE))
    return causes + _slice_spec(obj.spec, None if old is None else old.spec)


def _node_name(name: str, path: str) -> list[Cause]:
    return [invalid(path, name, m) for m in name_is_dns_subdomain(name)]


def _slice_spec(spec: pb.ResourceSliceSpec, old: pb.ResourceSliceSpec | None) -> list[Cause]:
    path = "spec"
    causes = validate_driver_name(spec.driver, f"{path}.driver")
    pool = spec.pool
    causes += validate_pool_name(pool.name, f"{path}.pool.name")
    if pool.resource_slice_count <= 0:
        causes.append(
            invalid(
                f"{path}.pool.resourceSliceCount",
                pool.resource_slice_count,
                "must be greater than zero",
            )
        )
    if pool.generation < 0:
        causes.append(
            invalid(
                f"{path}.pool.generation", pool.generation, "must be greater than or equal to zero"
            )
        )
    set_fields: list[str] = []
    if spec.HasField("node_name"):
        if spec.node_name:
            set_fields.append("`nodeName`")
            causes += _node_name(spec.node_name, f"{path}.nodeName")
        else:
            causes.append(
                invalid(f"{path}.nodeName", "", "must be either unset or set to a non-empty string")
            )
    if spec.HasField("node_selector"):
        set_fields.append("`nodeSelector`")
        causes += validate_node_selector(spec.node_selector, f"{path}.nodeSelector")
        if len(spec.node_selector.node_selector_terms) != 1:
            causes.append(
                invalid(
                    f"{path}.nodeSelector.nodeSelectorTerms",
                    json.dumps(
                        [message_to_dict(t) for t in spec.node_selector.node_selector_terms],
                        separators=(",", ":"),
                    ),
                    "must have exactly one node selector term",
                )
            )
    for fname, json_name in (
        ("all_nodes", "allNodes"),
        ("per_device_node_selection", "perDeviceNodeSelection"),
    ):
        if spec.HasField(fname):
            if getattr(spec, fname):
                set_fields.append(f"`{json_name}`")
            else:
                causes.append(
                    invalid(f"{path}.{json_name}", False, "must be either unset or set to true")
                )
    members = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
    if not set_fields:
        causes.append(required(path, members))
    elif len(set_fields) > 1:
        causes.append(
            invalid(
                path, "{" + ", ".join(set_fields) + "}", members + ", but multiple fields are set"
            )
        )
    if spec.shared_counters and spec.devices:
        causes.append(invalid(path, "", "only one of `sharedCounters` or `devices` is allowed"))
    limit = RESOURCE_SLICE_MAX_DEVICES
    if any(d.taints or d.consumes_counters for d in spec.devices):
        limit = RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS_OR_CONSUMES_COUNTERS
    per_device = spec.HasField("per_device_node_selection") and spec.per_device_node_selection
    old_devices = {d.name: d for d in old.devices} if old is not None else {}
    causes += _validate_set(
        spec.devices,
        limit,
        lambda d, p: _device(d, p, per_device, old_devices.get(d.name)),
        lambda d: d.name,
        f"{path}.devices",
    )
    causes += _validate_set(
        spec.shared_counters,
        MAX_COUNTER_SETS,
        _counter_set,
        lambda c: c.name,
        f"{path}.sharedCounters",
    )
    return causes


def _counter_name(name: str, path: str) -> list[Cause]:
    return _dns_label(name, path)


def _no_check(value: object, path: str) -> list[Cause]:
    return []


def _counter_set(c: pb.CounterSet, path: str) -> list[Cause]:
    causes = [required(f"{path}.name")] if not c.name else _counter_name(c.name, f"{path}.name")
    if not c.counters:
        causes.append(required(f"{path}.counters"))
    else:
        causes += _validate_map(
            c.counters,
            MAX_COUNTERS_PER_COUNTER_SET,
            63,
            _counter_name,
            _counter_value,
            f"{path}.counters",
        )
    return causes


def _counter_value(counter: pb.Counter, path: str) -> list[Cause]:
    try:
        parse_quantity(counter.value, f"{path}.value")
    except Invalid as exc:
        return list(exc.causes)
    return []


def _device(d: pb.Device, path: str, per_device: bool, old: pb.Device | None) -> list[Cause]:
    causes = [required(f"{path}.name")] if not d.name else _dns_label(d.name, f"{path}.name")
    n = len(d.attributes) + len(d.capacity)
    if n > MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE:
        causes.append(
            invalid(
                path,
                n,
                "the total number of attributes and capacities must not exceed "
                f"{MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE}",
            )
        )
    key_len = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH
    causes += _validate_map(
        d.attributes, -1, key_len, validate_qualified_name, _attribute, f"{path}.attributes"
    )
    multi = d.HasField("allow_multiple_allocations") and d.allow_multiple_allocations
    causes += _validate_map(
        d.capacity,
        -1,
        key_len,
        validate_qualified_name,
        lambda c, p: _capacity(c, p, multi),
        f"{path}.capacity",
    )
    if old is None or list(old.taints) != list(d.taints):  # unchanged taints: not again
        causes += _validate_slice(d.taints, DEVICE_TAINTS_MAX_LENGTH, _taint, f"{path}.taints")
    causes += _validate_set(
        d.consumes_counters,
        MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE,
        _counter_consumption,
        lambda c: c.counter_set,
        f"{path}.consumesCounters",
    )
    node_fields = ("node_name", "node_selector", "all_nodes")
    if per_device:
        set_fields: list[str] = []
        if d.HasField("node_name"):
            if d.node_name:
                set_fields.append("`nodeName`")
                causes += _node_name(d.node_name, f"{path}.nodeName")
            else:
                causes.append(invalid(f"{path}.nodeName", "", "must not be empty"))
        if d.HasField("node_selector"):
            set_fields.append("`nodeSelector`")
            causes += validate_node_selector(d.node_selector, f"{path}.nodeSelector")
        if d.HasField("all_nodes"):
            if d.all_nodes:
                set_fields.append("`allNodes`")
            else:
                causes.append(
                    invalid(f"{path}.allNodes", False, "must be either unset or set to true")
                )
        msg = (
            "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
            "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        )
        if not set_fields:
            causes.append(required(path, msg))
        elif len(set_fields) > 1:
            causes.append(invalid(path, "{" + ", ".join(set_fields) + "}", msg))
    elif any(d.HasField(f) for f in node_fields):
        causes.append(
            invalid(
                path,
                None,
                "`nodeName`, `nodeSelector` and `allNodes` can only be set if "
                "`perDeviceNodeSelection` is set to true in the ResourceSlice spec",
            )
        )
    causes += _binding_parameters(d.binding_conditions, d.binding_failure_conditions, path)
    return causes


def _counter_consumption(c: pb.DeviceCounterConsumption, path: str) -> list[Cause]:
    causes = (
        [required(f"{path}.counterSet")]
        if not c.counter_set
        else _counter_name(c.counter_set, f"{path}.counterSet")
    )
    if not c.counters:
        causes.append(required(f"{path}.counters"))
    else:
        causes += _validate_map(
            c.counters,
            MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION,
            63,
            _counter_name,
            _counter_value,
            f"{path}.counters",
        )
    return causes


def _attribute(a: pb.DeviceAttribute, path: str) -> list[Cause]:
    causes: list[Cause] = []
    n = 0
    if a.HasField("bool_value"):
        n += 1
    if a.HasField("int_value"):
        n += 1
    if a.HasField("string_value"):
        n += 1
        if len(a.string_value) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            causes.append(too_long(f"{path}.string", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if a.HasField("version_value"):
        n += 1
        v = a.version_value
        if not is_semver(v):
            causes.append(
                invalid(
                    f"{path}.version", v, "must be a string compatible with semver.org spec 2.0.0"
                )
            )
        if len(v) > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH:
            causes.append(too_long(f"{path}.version", DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH))
    if n == 0:
        causes.append(invalid(path, "", "exactly one value must be specified"))
    elif n > 1:
        causes.append(invalid(path, _shown(a), "exactly one value must be specified"))
    return causes


def _q(text: str, path: str) -> tuple[Quantity | None, list[Cause]]:
    try:
        return parse_quantity(text, path), []
    except Invalid as exc:
        return None, list(exc.causes)


def _capacity(c: pb.DeviceCapacity, path: str, multi: bool) -> list[Cause]:
    value, causes = _q(c.value, f"{path}.value")
    if not c.HasField("request_policy"):
        return causes
    p = f"{path}.requestPolicy"
    if not multi:
        return causes + [forbidden(p, "allowMultipleAllocations must be true")]
    if value is None:
        return causes
    policy = c.request_policy
    if policy.valid_values and policy.HasField("valid_range"):
        return causes + [
            forbidden(
                p,
                'exactly one policy can be specified, cannot specify "validValues" and '
                '"validRange" at the same time',
            )
        ]
    if policy.valid_values:
        if not policy.HasField("default_value"):
            return causes + [required(f"{p}.default", "required when validValues is defined")]
        default, errs = _q(policy.default_value, f"{p}.default")
        if default is None:
            return causes + errs
        causes += _valid_values(default, value, list(policy.valid_values), f"{p}.validValues")
    elif policy.HasField("valid_range"):
        if not policy.HasField("default_value"):
            return causes + [required(f"{p}.default", "required when validRange is defined")]
        default, errs = _q(policy.default_value, f"{p}.default")
        if default is None:
            return causes + errs
        causes += _valid_range(default, value, policy.valid_range, f"{p}.validRange")
    return causes


def _valid_values(default: Quantity, cap: Quantity, texts: list[str], path: str) -> list[Cause]:
    causes: list[Cause] = []
    values: list[Quantity] = []
    for i, t in enumerate(texts):
        q, errs = _q(t, f"{path}[{i}]")
        if q is None:
            return errs
        values.append(q)
    for i in range(len(values) - 1):
        if values[i] > values[i + 1]:
            causes.append(
                invalid(
                    f"{path}[{i + 1}]",
                    str(values[i + 1]),
                    "values must be sorted in ascending order",
                )
            )
    if len(values) > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS:
        return causes + [too_many(path, len(values), CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS)]
    seen: set[int] = set()
    for i, q in enumerate(values):
        if q > cap:
            causes.append(
                invalid(f"{path}[{i}]", str(q), f"option is larger than capacity value: {cap}")
            )
        if q.value() in seen:
            causes.append(duplicate(f"{path}[{i}]", str(q.value())))
        seen.add(q.value())
    if default not in values:
        causes.append(
            invalid(path, str(default), "default value is not valid according to the requestPolicy")
        )
    return causes


def _valid_range(
    default: Quantity, cap: Quantity, r: pb.CapacityRequestPolicyRange, path: str
) -> list[Cause]:
    if not r.min:
        return [required(f"{path}.min", "required when validRange is defined")]
    lo, errs = _q(r.min, f"{path}.min")
    if lo is None:
        return errs
    causes: list[Cause] = []
    if lo > cap:
        causes.append(invalid(f"{path}.min", str(lo), f"min is larger than capacity value: {cap}"))
    if default < lo:
        causes.append(invalid(f"{path}.min", str(default), f"default is less than min: {lo}"))
    hi = None
    if r.HasField("max"):
        hi, errs = _q(r.max, f"{path}.max")
        if hi is None:
            return causes + errs
        if lo > hi:
            causes.append(invalid(f"{path}.max", str(lo), f"min is larger than max: {hi}"))
        if hi > cap:
            causes.append(
                invalid(f"{path}.max", str(hi), f"max is larger than capacity value: {cap}")
            )
        if default > hi:
            causes.append(invalid(f"{path}.max", str(default), f"default is more than max: {hi}"))
    if r.HasField("step"):
        step, errs = _q(r.step, f"{path}.step")
        if step is None:
            return causes + errs
        added = lo + step
        if added > cap:
            causes.append(
                invalid(
                    f"{path}.step",
                    str(step),
                    f"one step {added} is larger than capacity value: {cap}",
                )
            )
        for v in (default, hi):
            if v is not None and step.value() and (v.value() - lo.value()) % step.value() != 0:
                causes.append(
                    invalid(
                        f"{path}.step",
                        str(v),
                        f"value is not a multiple of a given step ({step}) from ({lo})",
                    )
                )
    return causes


def _taint(t: pb.DeviceTaint, path: str, old: pb.DeviceTaint | None = None) -> list[Cause]:
    causes = validate_label_name(t.key, f"{path}.key")
    if t.value:
        causes += _label_value(t.value, f"{path}.value")
    if old is None or old.effect != t.effect:
        if not t.effect:
            causes.append(required(f"{path}.effect"))
        elif t.effect not in TAINT_EFFECTS:
            causes.append(not_supported(f"{path}.effect", t.effect, TAINT_EFFECTS))
    return causes


# ---------------------------------------------------------------- DeviceTaintRule


def validate_device_taint_rule(
    obj: pb.DeviceTaintRule, old: pb.DeviceTaintRule | None, rules: DraRules
) -> list[Cause]:
    causes = validate_object_meta(obj.metadata, namespaced=False, name_fn=name_is_dns_subdomain)
    return causes + _taint_rule_spec(obj.spec, None if old is None else old.spec)


def _taint_rule_spec(
    spec: pb.DeviceTaintRuleSpec, old: pb.DeviceTaintRuleSpec | None
) -> list[Cause]:
    causes: list[Cause] = []
    if spec.HasField("device_selector"):
        s = spec.device_selector
        p = "spec.deviceSelector"
        if s.HasField("driver"):
            causes += validate_driver_name(s.driver, f"{p}.driver")
        if s.HasField("pool"):
            causes += validate_pool_name(s.pool, f"{p}.pool")
        if s.HasField("device"):
            causes += (
                [required(f"{p}.device")] if not s.device else _dns_label(s.device, f"{p}.device")
            )
    return causes + _taint(spec.taint, "spec.taint", None if old is None else old.taint)


def validate_device_taint_rule_status_update(
    new: pb.DeviceTaintRule, old: pb.DeviceTaintRule, rules: DraRules
) -> list[Cause]:
    conditions = new.status.conditions
    causes = validate_conditions(conditions, "status.conditions")
    if len(conditions) > DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS:
        causes.append(
            too_many("status.conditions", len(conditions), DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS)
        )
    return causes
