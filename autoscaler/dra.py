"""The autoscaler's own Dynamic Resource Allocation rules (the simulation itself runs the
scheduler's DynamicResources plugin: kemu.scheduling.simulator, kemu.scheduling.dra_snapshot).

- Readiness (upstream processors/customresources/dra_processor.go,
  FilterOutNodesWithUnreadyResources): a registered node of a group whose template publishes
  ResourceSlices, but that has not published a pool of the same driver with the same device
  names for each of the template's pools, counts as not ready: it is left out of the
  simulation and its group counts it as upcoming (the template stands in for it), so that a
  pod waiting for its devices does not scale the group up again.
- Utilization (upstream simulator/dynamicresources/utils/utilization.go): per driver and pool
  of the node's local slices (the newest generation, all its slices: else "newest generation:
  %d, slice count: %d - found only %d slices"), allocated devices over devices; partitionable
  devices (consumesCounters) by the most used counter of each counter set, averaged over the
  sets; a pool with both kinds, the two weighted by their device counts. The node's DRA
  utilization is the highest pool's, named `<driver>/<pool>`. Every claim of a pod on the node
  must be allocated ("claim %s/%s not allocated"); devices allocated with admin access do not
  count.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from autoscaler.clusterstate import GroupState
from autoscaler.templates import TemplateNodeInfo
from kemu.api.v1 import types_pb2
from kemu.machinery.quantity import Quantity
from kemu.scheduling.dra_snapshot import DraSnapshot

logger = logging.getLogger(__name__)


class UtilizationError(Exception):
    """Upstream CalculateDynamicResourceUtilization's errors (the node is then skipped)."""


def _by_driver_and_pool(
    slices: Iterable[types_pb2.ResourceSlice],
) -> dict[str, dict[str, list[types_pb2.ResourceSlice]]]:
    out: dict[str, dict[str, list[types_pb2.ResourceSlice]]] = {}
    for s in slices:
        out.setdefault(s.spec.driver, {}).setdefault(s.spec.pool.name, []).append(s)
    return out


def current_generation(
    slices: Sequence[types_pb2.ResourceSlice],
) -> list[types_pb2.ResourceSlice]:
    """The pool's slices of its newest generation; UtilizationError when some are missing
    (upstream allCurrentGenSlices)."""
    newest = max((s.spec.pool.generation for s in slices), default=0)
    current = [s for s in slices if s.spec.pool.generation == newest]
    if not current:
        return []
    want = current[0].spec.pool.resource_slice_count
    if len(current) != want:
        raise UtilizationError(
            f"newest generation: {newest}, slice count: {want} - found only {len(current)} slices"
        )
    return current


def _devices_by_pool(slices: Iterable[types_pb2.ResourceSlice]) -> dict[tuple[str, str], set[str]]:
    """(driver, pool) -> the device names of the pool's last slice, as upstream's
    getDevicesBySpecs keeps them."""
    return {(s.spec.driver, s.spec.pool.name): {d.name for d in s.spec.devices} for s in slices}


def node_has_unready_devices(
    node: str, template: TemplateNodeInfo, dra: DraSnapshot
) -> tuple[bool, str]:
    """Whether `node` lacks a pool of its template: each template pool must be matched by a
    pool of the node, of the same driver with the same device names, each node pool matching
    one template pool (upstream isEqualResourceSlices); and the first driver lacking one."""
    published = _devices_by_pool(dra.node_slices(node))
    for (driver, _), devices in sorted(_devices_by_pool(template.resource_slices).items()):
        match = next(
            (key for key, have in published.items() if key[0] == driver and have == devices),
            None,
        )
        if match is None:
            return True, driver
        del published[match]
    return False, ""


def filter_out_nodes_with_unready_devices(
    nodes: Sequence[types_pb2.Node],
    groups: Mapping[str, GroupState],
    templates: Mapping[str, TemplateNodeInfo],
    dra: DraSnapshot,
) -> list[types_pb2.Node]:
    """`nodes` without those whose devices are not all published yet; those are also taken
    out of their group's registered nodes, so that the group counts them as upcoming."""
    unready: set[str] = set()
    for g in groups.values():
        template = templates.get(g.id)
        if template is None or not template.resource_slices:
            continue
        kept = []
        for n in g.nodes:
            missing, driver = node_has_unready_devices(n.metadata.name, template, dra)
            if missing:
                unready.add(n.metadata.name)
                logger.info(
                    "node %s of group %s: the pools of driver %s are not all published yet: "
                    "counted as upcoming",
                    n.metadata.name,
                    g.id,
                    driver,
                )
            else:
                kept.append(n)
        g.nodes = kept
    return [n for n in nodes if n.metadata.name not in unready]


# ------------------------------------------------------------------ utilization


@dataclass(frozen=True)
class DraUtilization:
    """The highest pool utilization of a node and its name `<driver>/<pool>` (upstream
    HighestDynamicResourceUtilization)."""

    resource: str
    value: float


def _allocated_devices(
    claims: Iterable[types_pb2.ResourceClaim],
) -> dict[tuple[str, str], set[str]]:
    out: dict[tuple[str, str], set[str]] = {}
    for claim in claims:
        if not claim.status.HasField("allocation"):
            raise UtilizationError(
                f"claim {claim.metadata.namespace}/{claim.metadata.name} not allocated"
            )
        for r in claim.status.allocation.devices.results:
            if r.admin_access:
                continue
            out.setdefault((r.driver, r.pool), set()).add(r.device)
    return out


def _partitionable_utilization(
    allocated: Sequence[types_pb2.Device],
    total: Sequence[types_pb2.Device],
    slices: Sequence[types_pb2.ResourceSlice],
) -> float:
    sets = {c.counter_set for d in total for c in d.consumes_counters}
    if not sets:
        return 0.0
    available: dict[str, dict[str, Quantity]] = {}
    for s in slices:
        for cs in s.spec.shared_counters:
            have = available.setdefault(cs.name, {})
            for name, counter in cs.counters.items():
                v = Quantity.parse(counter.value)
                have[name] = have[name] + v if name in have else v
    consumed: dict[str, dict[str, Quantity]] = {}
    for d in allocated:
        for c in d.consumes_counters:
            have = consumed.setdefault(c.counter_set, {})
            for name, counter in c.counters.items():
                v = Quantity.parse(counter.value)
                have[name] = have[name] + v if name in have else v
    out = 0.0
    for set_name, counters in available.items():
        highest = 0.0
        for name, total_value in counters.items():
            if total_value.is_zero():
                continue
            used = consumed.get(set_name, {}).get(name)
            if used is not None:
                highest = max(highest, used.value() / total_value.value())
        out += highest / len(sets)
    return out


def pool_utilization(
    devices: Sequence[types_pb2.Device],
    allocated_names: set[str],
    slices: Sequence[types_pb2.ResourceSlice],
) -> float:
    """One pool's utilization (upstream calculatePoolUtil)."""
    atomic = [d for d in devices if not d.consumes_counters]
    partitionable = [d for d in devices if d.consumes_counters]
    allocated_atomic = [d for d in atomic if d.name in allocated_names]
    allocated_part = [d for d in partitionable if d.name in allocated_names]
    atomic_util = len(allocated_atomic) / len(atomic) if atomic else 0.0
    if not allocated_part:
        return atomic_util
    part_util = _partitionable_utilization(allocated_part, partitionable, slices)
    if not allocated_atomic:
        return part_util
    n_part = len({c.counter_set for d in partitionable for c in d.consumes_counters})
    n_atomic = len(atomic)
    total = n_part + n_atomic
    return part_util * n_part / total + atomic_util * n_atomic / total


def dynamic_resource_utilization(
    slices: Sequence[types_pb2.ResourceSlice], claims: Iterable[types_pb2.ResourceClaim]
) -> dict[str, dict[str, float]]:
    """Driver -> pool -> utilization of the node's local `slices`, given the claims of the
    pods on the node (upstream CalculateDynamicResourceUtilization); UtilizationError."""
    allocated = _allocated_devices(claims)
    out: dict[str, dict[str, float]] = {}
    for driver, pools in _by_driver_and_pool(slices).items():
        out[driver] = {}
        for pool, pool_slices in pools.items():
            try:
                current = current_generation(pool_slices)
            except UtilizationError as e:
                raise UtilizationError(f'pool "{pool}" error: {e}') from None
            devices = [d for s in current for d in s.spec.devices]
            names = allocated.get((driver, pool), set())
            out[driver][pool] = pool_utilization(devices, names, current)
    return out


def highest_dynamic_resource_utilization(
    slices: Sequence[types_pb2.ResourceSlice], claims: Iterable[types_pb2.ResourceClaim]
) -> DraUtilization:
    """The pool with the highest utilization (ties: the last in driver, pool order)."""
    best = DraUtilization("", 0.0)
    for driver, pools in sorted(dynamic_resource_utilization(slices, claims).items()):
        for pool, value in sorted(pools.items()):
            if value >= best.value:
                best = DraUtilization(f"{driver}/{pool}", value)
    return best


# ------------------------------------------------------------------ pods in PreBind


def pod_binding_with_devices(
    pods: Iterable[types_pb2.Pod], node: str, dra: DraSnapshot
) -> types_pb2.Pod | None:
    """A pod counted on `node` that is not bound yet (nominated there: the scheduler's binding
    cycle runs, KEP-5278 publishes the nomination before PreBind) and whose claims already
    have devices of the node allocated (kubernetes#125491's device form): such a node is not
    removed, since the pod is about to run there on those devices."""
    pools = {(s.spec.driver, s.spec.pool.name) for s in dra.node_slices(node)}
    if not pools:
        return None
    for pod in pods:
        if pod.spec.node_name:
            continue
        for claim in dra.pod_claims(pod):
            if not claim.status.HasField("allocation"):
                continue
            if any((r.driver, r.pool) in pools for r in claim.status.allocation.devices.results):
                return pod
    return None
