"""Resource pools as the allocator sees them for one node (upstream structured/internal/
incubating/pools_incubating.go GatherPools, with the experimental variant's ordering of pools
and slices that carry binding conditions after the others, KEP-5007).

A pool is (driver, pool name). Only the slices of its newest generation count. A pool is
*incomplete* while fewer slices of that generation exist than `resourceSliceCount` says (the
driver is publishing); *invalid* on a duplicate device name, a duplicate counter set or a device
consuming a counter set or counter that does not exist. Neither kind is allocated from; a
request for "All" devices fails with an error on either.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kemu.api.v1 import types_pb2
from kemu.scheduling.plugins.helpers import NodeSelectorParseError, node_selector


class AllocationError(Exception):
    """An error that aborts allocation (upstream: Allocate returns an error; the scheduler
    plugin turns it into an Error status, not Unschedulable). The message is upstream's."""


class FailedAllocationOnNode(AllocationError):
    """Not fatal: this node cannot be used, others may (upstream's ErrFailedAllocationOnNode;
    the plugin makes it Unschedulable with this message: only when every node fails is it
    seen)."""


@dataclass(frozen=True, slots=True, order=True)
class PoolID:
    driver: str
    pool: str

    def __str__(self) -> str:
        return f"{self.driver}/{self.pool}"


@dataclass(slots=True)
class Pool:
    id: PoolID
    is_incomplete: bool = False
    is_invalid: bool = False
    invalid_reason: str = ""
    # The pool's device slices relevant for the node (those with devices on it), in order.
    device_slices_targeting_node: list[types_pb2.ResourceSlice] = field(default_factory=list)
    # The pool's other device slices: their allocated devices consume the pool's counters too.
    device_slices_not_targeting_node: list[types_pb2.ResourceSlice] = field(default_factory=list)
    counter_sets: dict[str, types_pb2.CounterSet] = field(default_factory=dict)
    has_binding_conditions: bool = False


def node_matches(
    node: types_pb2.Node,
    node_name: str,
    all_nodes: bool,
    selector: types_pb2.NodeSelector | None,
) -> bool:
    """Whether a slice (or, with perDeviceNodeSelection, a device) is available on `node`
    (upstream NodeMatches): by name, everywhere, or by node selector; nothing set matches
    nothing. A selector that does not parse is an error."""
    if node_name:
        return node.metadata.name == node_name
    if all_nodes:
        return True
    if selector is not None:
        try:
            parsed = node_selector(selector, strict=True)
        except NodeSelectorParseError as e:
            raise AllocationError(f"failed to parse node selector {selector}: {e}") from None
        return parsed.matches(node)
    return False


def _slice_selector(spec: types_pb2.ResourceSliceSpec) -> types_pb2.NodeSelector | None:
    return spec.node_selector if spec.HasField("node_selector") else None


def _device_selector(device: types_pb2.Device) -> types_pb2.NodeSelector | None:
    return device.node_selector if device.HasField("node_selector") else None


def slice_has_binding_conditions(s: types_pb2.ResourceSlice) -> bool:
    return any(d.binding_conditions for d in s.spec.devices)


def gather_pools(
    slices: Sequence[types_pb2.ResourceSlice],
    node: types_pb2.Node,
    *,
    partitionable_devices: bool,
    all_slices: Sequence[types_pb2.ResourceSlice],
) -> list[Pool]:
    return _gather(slices, node, partitionable_devices, all_slices)[0]


class PoolCache:
    """Each node's gathered pools across Allocate calls, valid while the node object and the
    slices for it are the same objects (informer objects are replaced, never changed). Pools
    whose completeness needed the other nodes' slices are not cached. One entry per node."""

    def __init__(self) -> None:
        self._entries: dict[
            tuple[str, bool],
            tuple[types_pb2.Node, tuple[types_pb2.ResourceSlice, ...], list[Pool]],
        ] = {}

    def gather(
        self,
        slices: Sequence[types_pb2.ResourceSlice],
        node: types_pb2.Node,
        *,
        partitionable_devices: bool,
        all_slices: Sequence[types_pb2.ResourceSlice],
    ) -> list[Pool]:
        key = (node.metadata.name, partitionable_devices)
        entry = self._entries.get(key)
        if (
            entry is not None
            and entry[0] is node
            and len(entry[1]) == len(slices)
            and all(a is b for a, b in zip(entry[1], slices, strict=True))
        ):
            return entry[2]
        pools, used_all = _gather(slices, node, partitionable_devices, all_slices)
        if used_all:
            self._entries.pop(key, None)
        else:
            self._entries[key] = (node, tuple(slices), pools)
        return pools


def _gather(
    slices: Sequence[types_pb2.ResourceSlice],
    node: types_pb2.Node,
    partitionable_devices: bool,
    all_slices: Sequence[types_pb2.ResourceSlice],
) -> tuple[list[Pool], bool]:
    """The pools with devices for `node`. `slices` are the candidates (the node's own and the
    shared ones), `all_slices` every slice (for the completeness check of a pool whose other
    slices target other nodes).

    Order: pools without binding conditions first, each group by (driver, pool) (upstream's
    map order is random; kemu's is fixed so that results are reproducible), slices in the
    given order with those carrying binding conditions last."""
    by_pool: dict[PoolID, list[types_pb2.ResourceSlice]] = {}
    for s in slices:
        spec = s.spec
        if not partitionable_devices and (
            spec.HasField("per_device_node_selection") or len(spec.shared_counters) > 0
        ):
            continue
        if spec.shared_counters:
            # Always included: the pool's devices need them wherever they are.
            _add_slice(by_pool, s)
        elif spec.node_name or spec.all_nodes or spec.HasField("node_selector"):
            try:
                match = node_matches(node, spec.node_name, spec.all_nodes, _slice_selector(spec))
            except AllocationError as e:
                raise AllocationError(
                    f"failed to perform node selection for slice {s.metadata.name}: {e}"
                ) from None
            if match:
                _add_slice(by_pool, s)
        elif spec.per_device_node_selection:
            for d in spec.devices:
                try:
                    match = node_matches(node, d.node_name, d.all_nodes, _device_selector(d))
                except AllocationError as e:
                    raise AllocationError(
                        f"failed to perform node selection for device {d.name} in slice "
                        f"{s.metadata.name}: {e}"
                    ) from None
                if match:
                    _add_slice(by_pool, s)
                    break
        # Otherwise: some future way of selecting nodes, unknown here; skipped.

    result: list[Pool] = []
    used_all = False
    for pool_id in sorted(by_pool):
        pool_slices = by_pool[pool_id]
        want = pool_slices[0].spec.pool.resource_slice_count
        if len(pool_slices) == want:
            result.append(_build_pool(pool_id, pool_slices, partitionable_devices, None))
            continue
        # Some slices were left out because they target other nodes: look at all of them.
        used_all = True
        obsolete, all_for_pool = _check_slices_in_pool(
            all_slices, pool_id, pool_slices[0].spec.pool.generation
        )
        if obsolete:
            # A newer generation is being published (none of its slices is for this node).
            continue
        if len(all_for_pool) != want:
            result.append(Pool(id=pool_id, is_incomplete=True))
            continue
        result.append(_build_pool(pool_id, pool_slices, partitionable_devices, all_for_pool))
    # Binding conditions last (stable sort keeps (driver, pool) order within each group).
    result.sort(key=lambda p: p.has_binding_conditions)
    return result, used_all


def _add_slice(
    by_pool: dict[PoolID, list[types_pb2.ResourceSlice]], s: types_pb2.ResourceSlice
) -> None:
    pool_id = PoolID(s.spec.driver, s.spec.pool.name)
    have = by_pool.get(pool_id)
    if have is None:
        by_pool[pool_id] = [s]
        return
    generation = s.spec.pool.generation
    current = have[0].spec.pool.generation
    if generation < current:
        return  # out of date
    if generation > current:
        by_pool[pool_id] = [s]  # newer: replaces the older slices
        return
    have.append(s)


def _check_slices_in_pool(
    slices: Sequence[types_pb2.ResourceSlice], pool_id: PoolID, generation: int
) -> tuple[bool, list[types_pb2.ResourceSlice]]:
    """(obsolete, the pool's slices of `generation`) over every slice."""
    found: list[types_pb2.ResourceSlice] = []
    for s in slices:
        if s.spec.driver != pool_id.driver or s.spec.pool.name != pool_id.pool:
            continue
        if s.spec.pool.generation == generation:
            found.append(s)
        elif s.spec.pool.generation > generation:
            return True, []
    return False, found


def _build_pool(
    pool_id: PoolID,
    slices: list[types_pb2.ResourceSlice],
    partitionable_devices: bool,
    all_for_pool: list[types_pb2.ResourceSlice] | None,
) -> Pool:
    device_slices: list[types_pb2.ResourceSlice] = []
    counter_slices: list[types_pb2.ResourceSlice] = []
    if partitionable_devices:
        for s in slices:
            (counter_slices if s.spec.shared_counters else device_slices).append(s)
    else:
        device_slices = list(slices)
    plain = [s for s in device_slices if not slice_has_binding_conditions(s)]
    binding = [s for s in device_slices if slice_has_binding_conditions(s)]
    device_slices = plain + binding
    has_binding = bool(binding)

    def invalid(reason: str) -> Pool:
        return Pool(
            id=pool_id, is_invalid=True, invalid_reason=reason, has_binding_conditions=has_binding
        )

    reason = _validate_device_names(device_slices)
    if reason:
        return invalid(reason)
    if not partitionable_devices:
        return Pool(
            id=pool_id,
            device_slices_targeting_node=device_slices,
            has_binding_conditions=has_binding,
        )
    counter_sets: dict[str, types_pb2.CounterSet] = {}
    for s in counter_slices:
        for cs in s.spec.shared_counters:
            if cs.name in counter_sets:
                return invalid(f"duplicate counter set name {cs.name}")
            counter_sets[cs.name] = cs
    reason = _validate_counter_consumption(counter_sets, slices)
    if reason:
        return invalid(reason)
    not_targeting: list[types_pb2.ResourceSlice] = []
    if all_for_pool is not None and len(all_for_pool) != len(slices):
        names = {s.metadata.name for s in slices}
        not_targeting = [s for s in all_for_pool if s.metadata.name not in names]
        # Their device names are not checked (upstream does not either); their counters are.
        reason = _validate_counter_consumption(counter_sets, not_targeting)
        if reason:
            return invalid(reason)
    return Pool(
        id=pool_id,
        device_slices_targeting_node=device_slices,
        device_slices_not_targeting_node=not_targeting,
        counter_sets=counter_sets,
        has_binding_conditions=has_binding,
    )


def _validate_device_names(slices: list[types_pb2.ResourceSlice]) -> str:
    seen: set[str] = set()
    for s in slices:
        for d in s.spec.devices:
            if d.name in seen:
                return f"duplicate device name {d.name}"
            seen.add(d.name)
    return ""


def _validate_counter_consumption(
    counter_sets: dict[str, types_pb2.CounterSet], slices: Sequence[types_pb2.ResourceSlice]
) -> str:
    for s in slices:
        for d in s.spec.devices:
            for consumption in d.consumes_counters:
                cs = counter_sets.get(consumption.counter_set)
                if cs is None:
                    return f"counter set {consumption.counter_set} not found"
                for name in consumption.counters:
                    if name not in cs.counters:
                        return f"counter {name} not found in counter set {cs.name}"
    return ""
