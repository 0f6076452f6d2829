"""The DRA ops of `python -m bench scheduler_perf` (upstream test/integration/scheduler_perf/
dra.go): createResourceDriver's ResourceSlices and allocResourceClaims' direct allocation with
kemu's structured allocator (kemu.scheduling.dra), the one upstream's op runs
(staging/src/k8s.io/dynamic-resource-allocation/structured).

dra/'s other objects (DeviceClasses, ResourceClaims, ResourceClaimTemplates, ResourceSlices of
the 1.37 files, DeviceTaintRules) are created by createAny from the files' templates."""

from __future__ import annotations

import fnmatch
import logging
import random
from collections.abc import Sequence
from typing import Final

from bench.scheduler_perf_workloads import AllocResourceClaims, CreateResourceDriver
from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.component.featuregate import DRA_DEVICE_TAINT_RULES, FeatureGates
from kemu.scheduling.dra.allocator import AllocatedState, Allocator, Features, new_cel_cache
from kemu.scheduling.dra.cel_cache import CelCache
from kemu.scheduling.dra.taints import apply_taint_rules

logger = logging.getLogger(__name__)

# upstream's resourceSlice(): every device's attributes and capacity.
DEVICE_MODEL: Final = "A100"
DEVICE_FAMILY: Final = "GPU"
DEVICE_DRIVER_VERSION: Final = "1.2.3"
NUMA_ATTRIBUTE: Final = "dra.example.com/numa"
DEVICE_MEMORY: Final = "1Gi"


class AllocationFailed(RuntimeError):
    """allocResourceClaims found no node for a claim (upstream's "Could not allocate claim")."""


def matching_nodes(pattern: str, names: Sequence[str]) -> list[str]:
    """The node names the glob `pattern` matches (Go's filepath.Match: `*`, `?`, `[...]`;
    node names have no separator), in order."""
    return [n for n in names if fnmatch.fnmatchcase(n, pattern)]


def driver_slice(driver: str, node: str, devices: int) -> types_pb2.ResourceSlice:
    """upstream's resourceSlice(driverName, nodeName, capacity): the node's slice, named after
    it, pool = the node (one slice), devices instance-0..devices-1 with attributes model "A100",
    family "GPU", driverVersion version "1.2.3", dra.example.com/numa = the device's index, and
    capacity memory 1Gi. upstream's last version of the op (1.34-1.36) also set
    bindsToNode/bindingConditions ["DeviceAttached"]/bindingFailureConditions
    ["AttachmentFailed"], which with 1.36's default-on DRADeviceBindingConditions hold every
    pod in PreBind until an updateDeviceConditions op the files using this op do not have;
    kemu's devices have no binding conditions, as the op's devices before 1.34."""
    s = types_pb2.ResourceSlice()
    s.metadata.name = node
    s.spec.driver = driver
    s.spec.node_name = node
    s.spec.pool.name = node
    s.spec.pool.resource_slice_count = 1
    for i in range(devices):
        d = s.spec.devices.add(name=f"instance-{i}")
        d.attributes["model"].string_value = DEVICE_MODEL
        d.attributes["family"].string_value = DEVICE_FAMILY
        d.attributes["driverVersion"].version_value = DEVICE_DRIVER_VERSION
        d.attributes[NUMA_ATTRIBUTE].int_value = i
        d.capacity["memory"].value = DEVICE_MEMORY
    return s


async def create_resource_driver(
    client: ApiClient, op: CreateResourceDriver, node_names: Sequence[str]
) -> int:
    """upstream's createResourceDriverOp.run: one slice per node of the run matching the op's
    glob (upstream lists the cluster's nodes: the run's are all of them); how many."""
    nodes = matching_nodes(op.nodes, node_names)
    logger.info(
        "creating resource driver %r for %d nodes matching %r", op.driver_name, len(nodes), op.nodes
    )
    for name in nodes:
        await client.create(driver_slice(op.driver_name, name, op.max_claims_per_node))
    return len(nodes)


async def alloc_resource_claims(
    client: ApiClient,
    op: AllocResourceClaims,
    gates: FeatureGates,
    rng: random.Random,
    cel: CelCache | None = None,
) -> int:
    """upstream's allocResourceClaimsOp.run: the claims of the op's namespace (all when "")
    listed once; each one not allocated yet is given to the structured allocator with what
    the claims allocated so far use, tried on the nodes in a random order, and the first
    node's result written to its status (allocation only, no reservedFor), one claim after
    the other. The nodes, classes and slices (with the DeviceTaintRules applied when the
    gate is on) are read once: upstream assumes them fixed. How many claims were allocated;
    AllocationFailed (upstream's Fatalf "Could not allocate claim %d out of %d") when a
    claim fits nowhere. `cel`: the selector cache (default: kemu's CEL environment for the
    gates' features, as the scheduler's)."""
    claims = list((await client.list_all(types_pb2.ResourceClaim, op.namespace)).items)
    logger.info("allocating %d ResourceClaims", len(claims))
    nodes = list((await client.list_all(types_pb2.Node)).items)
    classes = {c.metadata.name: c for c in (await client.list_all(types_pb2.DeviceClass)).items}
    slices: list[types_pb2.ResourceSlice] = list(
        (await client.list_all(types_pb2.ResourceSlice)).items
    )
    if gates.enabled(DRA_DEVICE_TAINT_RULES):
        rules = (await client.list_all(types_pb2.DeviceTaintRule)).items
        slices = apply_taint_rules(slices, rules)
    features = Features.from_gates(gates)
    cache = cel if cel is not None else new_cel_cache(features)
    # upstream lists the allocated claims of every namespace from its claim cache, which
    # holds the allocations written here too: the state grows with each one.
    others = (await client.list_all(types_pb2.ResourceClaim)).items
    mine = {(c.metadata.namespace, c.metadata.name) for c in claims}
    state = AllocatedState.from_claims(
        [c for c in others if (c.metadata.namespace, c.metadata.name) not in mine],
        consumable_capacity=features.consumable_capacity,
    )
    for c in claims:
        if c.status.HasField("allocation"):
            for r in c.status.allocation.devices.results:
                state.add_result(r, consumable_capacity=features.consumable_capacity)
    done = 0
    for i, claim in enumerate(claims):
        if claim.status.HasField("allocation"):
            continue
        allocator = Allocator(features, [claim], state, classes, slices, cache)
        rng.shuffle(nodes)
        for node in nodes:
            result = allocator.allocate(node)
            if result is None:
                continue
            claim.status.allocation.CopyFrom(result[0])
            written = await client.update_status(claim)
            for r in written.status.allocation.devices.results:
                if not r.admin_access:
                    state.add_result(r, consumable_capacity=features.consumable_capacity)
            done += 1
            break
        else:
            raise AllocationFailed(f"Could not allocate claim {i} out of {len(claims)}")
    return done
