"""Objects for the allocator's tests (after upstream allocatortesting's helpers: slice, device,
claim, class), and a selector evaluator made of Python functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from kemu.api.v1 import types_pb2
from kemu.scheduling.dra.cel_cache import CelCompileError, CelRuntimeError

DRIVER = "driver.example.com"
DRIVER2 = "driver-b.example.com"
CLASS = "class-a"
CLASS2 = "class-b"
NODE = "node-1"
NODE2 = "node-2"
REQ = "req-0"
REQ1 = "req-1"

Predicate = Callable[[str, types_pb2.Device], bool]


class FakeEvaluator:
    """Expressions mapped to predicates on (driver, device); an unknown expression does not
    compile; a predicate raising KeyError is a CEL runtime error ("no such key")."""

    def __init__(self, table: Mapping[str, Predicate] | None = None) -> None:
        self.table: dict[str, Predicate] = dict(table or {})
        self.calls = 0

    def evaluate(
        self, expression: str, driver: str, device: types_pb2.Device, device_key: bytes
    ) -> bool:
        self.calls += 1
        fn = self.table.get(expression)
        if fn is None:
            raise CelCompileError(f"undeclared reference in {expression!r}")
        try:
            return fn(driver, device)
        except KeyError as e:
            raise CelRuntimeError(f"no such key: {e.args[0]}") from None


def node(name: str = NODE, labels: Mapping[str, str] | None = None) -> types_pb2.Node:
    n = types_pb2.Node()
    n.metadata.name = name
    n.metadata.labels.update(labels or {})
    return n


def device(
    name: str,
    *,
    attrs: Mapping[str, Any] | None = None,
    capacity: Mapping[str, str] | None = None,
    counters: Mapping[str, Mapping[str, str]] | None = None,
    taints: Sequence[tuple[str, str, str]] = (),
    binding_conditions: Sequence[str] = (),
    binding_failure_conditions: Sequence[str] = (),
    binds_to_node: bool | None = None,
    multi: bool | None = None,
    node_name: str | None = None,
    all_nodes: bool | None = None,
) -> types_pb2.Device:
    d = types_pb2.Device(name=name)
    for key, value in (attrs or {}).items():
        a = d.attributes[key]
        if isinstance(value, bool):
            a.bool_value = value
        elif isinstance(value, int):
            a.int_value = value
        elif isinstance(value, str) and value.startswith("v") and value[1:2].isdigit():
            a.version_value = value[1:]
        else:
            a.string_value = value
    for key, value in (capacity or {}).items():
        d.capacity[key].value = value
    for set_name, values in (counters or {}).items():
        c = d.consumes_counters.add(counter_set=set_name)
        for counter, amount in values.items():
            c.counters[counter].value = amount
    for key, value, effect in taints:
        d.taints.add(key=key, value=value, effect=effect)
    d.binding_conditions.extend(binding_conditions)
    d.binding_failure_conditions.extend(binding_failure_conditions)
    if binds_to_node is not None:
        d.binds_to_node = binds_to_node
    if multi is not None:
        d.allow_multiple_allocations = multi
    if node_name is not None:
        d.node_name = node_name
    if all_nodes is not None:
        d.all_nodes = all_nodes
    return d


def slice_(
    name: str,
    devices: Sequence[types_pb2.Device | str] = (),
    *,
    node_name: str | None = NODE,
    pool: str = NODE,
    driver: str = DRIVER,
    generation: int = 1,
    count: int = 1,
    all_nodes: bool | None = None,
    node_selector: types_pb2.NodeSelector | None = None,
    per_device: bool | None = None,
    shared_counters: Mapping[str, Mapping[str, str]] | None = None,
) -> types_pb2.ResourceSlice:
    s = types_pb2.ResourceSlice()
    s.metadata.name = name
    spec = s.spec
    spec.driver = driver
    spec.pool.name = pool
    spec.pool.generation = generation
    spec.pool.resource_slice_count = count
    if all_nodes is not None:
        spec.all_nodes = all_nodes
    elif node_selector is not None:
        spec.node_selector.CopyFrom(node_selector)
    elif per_device is not None:
        spec.per_device_node_selection = per_device
    elif node_name is not None and not shared_counters:
        spec.node_name = node_name
    for d in devices:
        spec.devices.append(device(d) if isinstance(d, str) else d)
    for set_name, values in (shared_counters or {}).items():
        cs = spec.shared_counters.add(name=set_name)
        for counter, amount in values.items():
            cs.counters[counter].value = amount
    return s


def label_selector(key: str, *values: str) -> types_pb2.NodeSelector:
    ns = types_pb2.NodeSelector()
    ns.node_selector_terms.add().match_expressions.add(key=key, operator="In", values=values)
    return ns


def device_class(
    name: str = CLASS,
    selectors: Sequence[str] = (),
    configs: Sequence[str] = (),
    driver: str = DRIVER,
) -> types_pb2.DeviceClass:
    c = types_pb2.DeviceClass()
    c.metadata.name = name
    for expr in selectors:
        c.spec.selectors.add().cel.expression = expr
    for raw in configs:
        cfg = c.spec.config.add()
        cfg.opaque.driver = driver
        cfg.opaque.parameters.raw = raw
    return c


def request(
    name: str = REQ,
    class_name: str = CLASS,
    *,
    count: int = 1,
    mode: str = "ExactCount",
    selectors: Sequence[str] = (),
    admin_access: bool | None = None,
    tolerations: Sequence[types_pb2.DeviceToleration] = (),
    capacity: Mapping[str, str] | None = None,
) -> types_pb2.DeviceRequest:
    r = types_pb2.DeviceRequest(name=name)
    e = r.exactly
    e.device_class_name = class_name
    e.allocation_mode = mode
    if mode == "ExactCount":
        e.count = count
    for expr in selectors:
        e.selectors.add().cel.expression = expr
    if admin_access is not None:
        e.admin_access = admin_access
    e.tolerations.extend(tolerations)
    if capacity is not None:
        e.capacity.requests.update(capacity)
    return r


def sub_request(
    name: str,
    class_name: str = CLASS,
    *,
    count: int = 1,
    mode: str = "ExactCount",
    selectors: Sequence[str] = (),
    tolerations: Sequence[types_pb2.DeviceToleration] = (),
    capacity: Mapping[str, str] | None = None,
) -> types_pb2.DeviceSubRequest:
    s = types_pb2.DeviceSubRequest(name=name, device_class_name=class_name, allocation_mode=mode)
    if mode == "ExactCount":
        s.count = count
    for expr in selectors:
        s.selectors.add().cel.expression = expr
    s.tolerations.extend(tolerations)
    if capacity is not None:
        s.capacity.requests.update(capacity)
    return s


def first_available(name: str, *subs: types_pb2.DeviceSubRequest) -> types_pb2.DeviceRequest:
    r = types_pb2.DeviceRequest(name=name)
    r.first_available.extend(subs)
    return r


def claim(
    name: str = "claim-0",
    *requests: types_pb2.DeviceRequest,
    match_attribute: Sequence[tuple[str, Sequence[str]]] = (),
    distinct_attribute: Sequence[tuple[str, Sequence[str]]] = (),
    configs: Sequence[tuple[Sequence[str], str]] = (),
    namespace: str = "default",
) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.name = name
    c.metadata.namespace = namespace
    c.spec.devices.requests.extend(requests or [request()])
    for attribute, reqs in match_attribute:
        c.spec.devices.constraints.add(requests=reqs, match_attribute=attribute)
    for attribute, reqs in distinct_attribute:
        c.spec.devices.constraints.add(requests=reqs, distinct_attribute=attribute)
    for reqs, raw in configs:
        cfg = c.spec.devices.config.add(requests=reqs)
        cfg.opaque.driver = DRIVER
        cfg.opaque.parameters.raw = raw
    return c


def allocated(
    c: types_pb2.ResourceClaim, *devices: tuple[str, str, str], admin: bool = False
) -> types_pb2.ResourceClaim:
    """The claim allocated to (driver, pool, device)s."""
    out = types_pb2.ResourceClaim()
    out.CopyFrom(c)
    for driver, pool, dev in devices:
        r = out.status.allocation.devices.results.add(
            request=REQ, driver=driver, pool=pool, device=dev
        )
        if admin:
            r.admin_access = True
    return out


def toleration(
    key: str = "", operator: str = "Equal", value: str = "", effect: str = ""
) -> types_pb2.DeviceToleration:
    return types_pb2.DeviceToleration(key=key, operator=operator, value=value, effect=effect)


def picked(results: Sequence[types_pb2.AllocationResult] | None) -> list[list[tuple[str, ...]]]:
    """(request, driver, pool, device) per claim, for compact assertions."""
    assert results is not None, "expected an allocation"
    return [
        [(r.request, r.driver, r.pool, r.device) for r in res.devices.results] for res in results
    ]
