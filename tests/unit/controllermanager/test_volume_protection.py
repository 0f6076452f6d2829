"""pvc-protection and pv-protection against the fake client: the finalizers are added to the
objects that lack them, and removed from an object being deleted once nothing uses it (a claim:
no scheduled pod names it; a volume: not Bound)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager.persistentvolume.protection import (
    PVCProtectionController,
    PVProtectionController,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.storage import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle, wait_until
from tests.unit.controllermanager.pv_objects import claim, volume
from tests.unit.controllermanager.test_pv_controller import pv, pvc

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    controllers: list[PVCProtectionController | PVProtectionController] = [
        PVCProtectionController(fake, informers, clock),
        PVProtectionController(fake, informers, clock),
    ]
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        for c in controllers:
            tg.start_soon(c.run)
        await settle()
        yield
        tg.cancel_scope.cancel()


def claim_exists(fake: FakeClient, name: str) -> bool:
    return ("persistentvolumeclaims", "default", name) in fake._objects


def pod_using(name: str, claim_name: str, node: str = "") -> types_pb2.Pod:
    builder = make_pod(name)
    if node:
        builder = builder.node(node)
    pod = builder.obj()
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = claim_name
    return pod


async def test_a_claim_in_use_by_a_scheduled_pod_is_kept_until_the_pod_goes() -> None:
    clock = FakeClock()
    fake = FakeClient(
        claim("used", "1Gi"),
        claim("unused", "1Gi"),
        claim("pending-pod", "1Gi"),
        pod_using("runner", "used", node="n1"),
        pod_using("waiter", "pending-pod"),
        clock=clock,
    )
    async with running(fake, clock):
        for name in ("used", "unused", "pending-pod"):
            await wait_until(
                lambda n=name: PVC_PROTECTION_FINALIZER in pvc(fake, n).metadata.finalizers  # type: ignore[misc]
            )
        for name in ("used", "unused", "pending-pod"):
            await fake.delete(types_pb2.PersistentVolumeClaim, name, "default")
        # Unused, or used by a pod no kubelet runs yet: gone.
        await wait_until(lambda: not claim_exists(fake, "unused"))
        await wait_until(lambda: not claim_exists(fake, "pending-pod"))
        await settle()
        kept = pvc(fake, "used")
        assert kept.metadata.HasField("deletion_timestamp")
        assert list(kept.metadata.finalizers) == [PVC_PROTECTION_FINALIZER]
        await fake.delete(types_pb2.Pod, "runner", "default", grace_period_seconds=0)
        await wait_until(lambda: not claim_exists(fake, "used"))


async def test_a_bound_volume_is_kept_until_it_is_no_longer_bound() -> None:
    clock = FakeClock()
    fake = FakeClient(
        volume("bound", "1Gi", phase="Bound"),
        volume("free", "1Gi"),
        clock=clock,
    )
    async with running(fake, clock):
        for name in ("bound", "free"):
            await wait_until(
                lambda n=name: (
                    (v := pv(fake, n)) is not None  # type: ignore[misc]
                    and PV_PROTECTION_FINALIZER in v.metadata.finalizers
                )
            )
            await fake.delete(types_pb2.PersistentVolume, name)
        await wait_until(lambda: pv(fake, "free") is None)
        await settle()
        kept = pv(fake, "bound")
        assert kept is not None and kept.metadata.HasField("deletion_timestamp")
        released = types_pb2.PersistentVolume()
        released.CopyFrom(kept)
        released.status.phase = "Released"
        await fake.update_status(released)
        await wait_until(lambda: pv(fake, "bound") is None)
