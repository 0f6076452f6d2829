"""The simulated drivers' answer to binding conditions (DRADeviceBindingConditions, KEP-5007).

A device that lists `bindingConditions` is allocated with them copied into the claim's
allocation result; the scheduler then waits in PreBind until the driver reports every one of
them True in the claim's `status.devices[]` (DRAResourceClaimDeviceStatus), or one of its
`bindingFailureConditions` True (the scheduler then unreserves the pod and tries again), or
the binding timeout passes. A real driver's controller attaches the device meanwhile; kemu's
kubelet plays that part for its drivers' devices on its nodes (pool = node name): after the
slice's `kubelet.kemu.io/binding-delay` from the allocation (its allocationTimestamp, or when
the kubelet first saw it) it writes, for each such device, an entry {driver, pool, device,
shareID} of status.devices whose conditions are the result's bindingConditions, each True, or,
for a device of `kubelet.kemu.io/binding-failure-devices`, its first bindingFailureCondition
True. The entries of other devices are kept. A claim deallocated meanwhile is left alone.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.api.v1 import types_pb2
from kemu.client.informer import Informer
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.convert import timestamp
from kemu.machinery.dra_slice_file import DraDrivers
from kemu.machinery.errors import ApiError, Conflict, NotFound

logger = logging.getLogger(__name__)

BOUND_REASON: Final = "DeviceBound"
BINDING_FAILED_REASON: Final = "DeviceBindingFailed"
_DEVICE_KEY = tuple[str, str, str, str]
"""(driver, pool, device, shareID)."""


def _device_key(
    d: types_pb2.AllocatedDeviceStatus | types_pb2.DeviceRequestAllocationResult,
) -> _DEVICE_KEY:
    return (d.driver, d.pool, d.device, d.share_id)


def _reported(claim: types_pb2.ResourceClaim) -> set[_DEVICE_KEY]:
    """The devices whose status already carries a condition (the driver answered)."""
    return {_device_key(d) for d in claim.status.devices if d.conditions}


class BindingConditionsDriver:
    """Answers the binding conditions of the devices of this process's drivers and nodes."""

    def __init__(
        self,
        client: ApiClient,
        drivers: DraDrivers,
        claims: Informer[types_pb2.ResourceClaim],
        *,
        clock: Clock,
        owns_pool: Callable[[str], bool],
    ) -> None:
        """`owns_pool`: whether a pool name is one of this process's nodes."""
        self._client = client
        self._drivers = drivers
        self._claims = claims
        self._clock = clock
        self._owns_pool = owns_pool
        self._first_seen: dict[str, float] = {}
        """Claim key -> when an allocation without a timestamp was first seen."""
        self.queue = WorkQueue(clock, name="binding conditions")

    def _pending(
        self, claim: types_pb2.ResourceClaim
    ) -> list[types_pb2.DeviceRequestAllocationResult]:
        """The allocated devices of ours that wait for their binding conditions."""
        done = _reported(claim)
        return [
            r
            for r in claim.status.allocation.devices.results
            if r.binding_conditions
            and self._drivers.driver(r.driver) is not None
            and self._owns_pool(r.pool)
            and _device_key(r) not in done
        ]

    def _due(self, key: str, claim: types_pb2.ResourceClaim) -> float:
        """When the driver answers (the latest of its pending devices' delays)."""
        alloc = claim.status.allocation
        if alloc.HasField("allocation_timestamp"):
            start = alloc.allocation_timestamp.ToNanoseconds() / 1e9
        else:
            start = self._first_seen.setdefault(key, self._clock.now())
        delays = []
        for r in self._pending(claim):
            driver = self._drivers.driver(r.driver)
            assert driver is not None
            delays.append(driver.binding(r.device).delay)
        return start + max(delays, default=0.0)

    def on_claim(self, claim: types_pb2.ResourceClaim) -> None:
        key = f"{claim.metadata.namespace}/{claim.metadata.name}"
        if not claim.status.HasField("allocation") or not self._pending(claim):
            self._first_seen.pop(key, None)
            return
        self.queue.add_after(key, max(0.0, self._due(key, claim) - self._clock.now()))

    def on_claim_deleted(self, claim: types_pb2.ResourceClaim) -> None:
        self._first_seen.pop(f"{claim.metadata.namespace}/{claim.metadata.name}", None)

    async def sync(self, key: str) -> None:
        namespace, _, name = key.partition("/")
        claim = self._claims.lister.get(name, namespace)
        if claim is None or not claim.status.HasField("allocation"):
            return
        pending = self._pending(claim)
        if not pending:
            return
        now = self._clock.now()
        due = self._due(key, claim)
        if due > now + 1e-3:
            self.queue.add_after(key, due - now)
            return
        new = types_pb2.ResourceClaim()
        new.CopyFrom(claim)
        for r in pending:
            driver = self._drivers.driver(r.driver)
            assert driver is not None
            fails = driver.binding(r.device).fails and bool(r.binding_failure_conditions)
            entry = next((d for d in new.status.devices if _device_key(d) == _device_key(r)), None)
            if entry is None:
                entry = new.status.devices.add(driver=r.driver, pool=r.pool, device=r.device)
                if r.HasField("share_id"):
                    entry.share_id = r.share_id
            types = [r.binding_failure_conditions[0]] if fails else list(r.binding_conditions)
            for type_ in types:
                c = entry.conditions.add(
                    type=type_,
                    status="True",
                    observed_generation=claim.metadata.generation,
                    reason=BINDING_FAILED_REASON if fails else BOUND_REASON,
                    message=f"kemu's simulated driver {r.driver}",
                )
                c.last_transition_time.CopyFrom(timestamp(now))
            logger.info(
                "claim %s: device %s/%s/%s %s",
                key,
                r.driver,
                r.pool,
                r.device,
                "failed to bind" if fails else "bound",
            )
        try:
            await self._client.update_status(new)
        except NotFound:
            return
        except Conflict:
            self.queue.add(key)  # the informer's newer copy is looked at again
            return
        self._first_seen.pop(key, None)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self.queue.run)
                tg.start_soon(self._worker, name="binding conditions")
                task_status.started()
        finally:
            self.queue.shut_down()

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
                self.queue.forget(key)
            except ApiError as e:
                delay = self.queue.add_rate_limited(key)
                logger.warning(
                    "claim %s: reporting binding conditions failed (%s), retrying in %.1fs",
                    key,
                    e,
                    delay,
                )
            finally:
                self.queue.done(key)
