"""DRA objects for tests (DeviceClass, ResourceSlice, ResourceClaim) and what a driver or
the kubelet would write, written by the test instead, as upstream's scheduler integration tests
do (test/integration/scheduler, test/utils/dra): a node's slice created through the client
(until kubelets publish them), a device's binding conditions set True or failed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kemu.api.v1 import types_pb2
from kemu.client.interface import ApiClient
from kemu.testing.scenarios import SCENARIO_LABEL

if TYPE_CHECKING:
    from kemu.testing.scenarios import Scenario


def device_class(name: str, *, selectors: Sequence[str] = ()) -> types_pb2.DeviceClass:
    dc = types_pb2.DeviceClass()
    dc.metadata.name = name
    for expression in selectors:
        dc.spec.selectors.add().cel.expression = expression
    return dc


def resource_slice(
    node: str,
    driver: str,
    devices: Sequence[str],
    *,
    binding_conditions: Sequence[str] = (),
    binding_failure_conditions: Sequence[str] = (),
) -> types_pb2.ResourceSlice:
    """A node-local slice: one pool named after the node, one slice in it, `devices` by name
    (each with the binding conditions given)."""
    s = types_pb2.ResourceSlice()
    s.metadata.name = f"{node}-{driver.replace('/', '-')}"
    s.spec.driver = driver
    s.spec.node_name = node
    s.spec.pool.name = node
    s.spec.pool.generation = 1
    s.spec.pool.resource_slice_count = 1
    for name in devices:
        d = s.spec.devices.add(name=name)
        d.binding_conditions.extend(binding_conditions)
        d.binding_failure_conditions.extend(binding_failure_conditions)
        if binding_conditions:
            d.binds_to_node = True
    return s


def claim(
    namespace: str, name: str, device_class_name: str, *, count: int = 1, request: str = "req-0"
) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.namespace = namespace
    c.metadata.name = name
    r = c.spec.devices.requests.add(name=request)
    r.exactly.device_class_name = device_class_name
    r.exactly.allocation_mode = "ExactCount"
    r.exactly.count = count
    return c


def with_claim(pod: types_pb2.Pod, claim_name: str, entry: str = "dev") -> types_pb2.Pod:
    """The pod uses the claim (spec.resourceClaims and its first container's resources.claims)."""
    pod.spec.resource_claims.add(name=entry, resource_claim_name=claim_name)
    if pod.spec.containers:
        pod.spec.containers[0].resources.claims.add(name=entry)
    return pod


async def set_device_condition(
    api: ApiClient,
    namespace: str,
    name: str,
    condition: str,
    *,
    status: str = "True",
    reason: str = "Test",
    message: str = "",
) -> types_pb2.ResourceClaim:
    """What a driver reports on each allocated device of the claim (status.devices, the
    DRAResourceClaimDeviceStatus field binding conditions are read from)."""
    c = await api.get(types_pb2.ResourceClaim, name, namespace)
    for r in c.status.allocation.devices.results:
        entry = next(
            (
                d
                for d in c.status.devices
                if (d.driver, d.pool, d.device) == (r.driver, r.pool, r.device)
            ),
            None,
        )
        if entry is None:
            entry = c.status.devices.add(driver=r.driver, pool=r.pool, device=r.device)
        kept = [x for x in entry.conditions if x.type != condition]
        del entry.conditions[:]
        entry.conditions.extend(kept)
        cond = entry.conditions.add(type=condition, status=status, reason=reason, message=message)
        cond.last_transition_time.GetCurrentTime()
    return await api.update_status(c)


async def kubelet_publishing(s: Scenario, slice_file: Path, *, within: float) -> str:
    """A kubelet for the scenario's node n1 (4 cpu, the scenario's label) with
    `--dra-slice-file slice_file`, once its ResourceSlices are published; its node's name."""
    full = s.node_name("n1")
    proc = s.cluster.start_kubelet(
        full,
        capacity={"cpu": "4", "memory": "8Gi", "pods": "10"},
        extra_args=[
            "--node-labels",
            f"{SCENARIO_LABEL}={s.ns}",
            "--dra-slice-file",
            str(slice_file),
        ],  # fmt: skip
    )
    s.kubelets.append(proc.name)

    async def published() -> bool:
        slices = (await s.client.list(types_pb2.ResourceSlice)).items
        assert any(x.spec.node_name == full for x in slices), "no slice yet"
        return True

    await s.eventually(published, timeout=within)
    return full
