"""The PersistentVolume controller (persistentvolume-binder) against the fake client: binding,
phases, waiting for the first consumer, external provisioning, default classes and reclaim."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from google.protobuf.message import Message

from controllermanager.persistentvolume.provisioning import BinderBehaviour
from controllermanager.persistentvolume.pv_controller import PersistentVolumeController
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import DEFAULT_VERSION, Version
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle, wait_until
from tests.unit.controllermanager.pv_objects import claim, storage_class, volume

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, *, version: Version = DEFAULT_VERSION
) -> AsyncIterator[None]:
    informers = InformerFactory(fake, clock=clock)
    behaviour = BinderBehaviour.of(FeatureGates.for_version(version))
    ctrl = PersistentVolumeController(fake, informers, clock, behaviour=behaviour)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(ctrl.run)
        await settle()
        yield
        tg.cancel_scope.cancel()


def pvc(fake: FakeClient, name: str) -> types_pb2.PersistentVolumeClaim:
    """A copy of the stored claim."""
    obj = fake._objects[("persistentvolumeclaims", "default", name)]
    assert isinstance(obj, types_pb2.PersistentVolumeClaim)
    copy = types_pb2.PersistentVolumeClaim()
    copy.CopyFrom(obj)
    return copy


def pv(fake: FakeClient, name: str) -> types_pb2.PersistentVolume | None:
    obj = fake._objects.get(("persistentvolumes", "", name))
    assert obj is None or isinstance(obj, types_pb2.PersistentVolume)
    return obj


def reasons(fake: FakeClient, name: str) -> list[str]:
    return [
        o.reason
        for o in fake._objects.values()
        if isinstance(o, types_pb2.Event) and o.involved_object.name == name
    ]


async def event_message(fake: FakeClient, name: str, reason: str) -> str:
    """The message of the event `reason` on `name`, once written (events are written by the
    recorder's own task, after the write they accompany)."""
    await wait_until(lambda: reason in reasons(fake, name))
    return next(
        o.message
        for o in fake._objects.values()
        if isinstance(o, types_pb2.Event) and o.involved_object.name == name and o.reason == reason
    )


async def test_an_immediate_claim_binds_to_the_smallest_matching_volume() -> None:
    clock = FakeClock()
    objects: list[Message] = [
        storage_class("slow", "example.com/none"),
        volume("v-1gi", "1Gi", storage_class="slow"),
        volume("v-5gi", "5Gi", storage_class="slow"),
        volume("v-2gi", "2Gi", storage_class="slow"),
        claim("data", "1500Mi", storage_class="slow"),
    ]
    fake = FakeClient(*objects, clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: pvc(fake, "data").status.phase == "Bound")
        c = pvc(fake, "data")
        assert c.spec.volume_name == "v-2gi"
        assert c.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
        assert c.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
        assert dict(c.status.capacity) == {"storage": "2Gi"}
        assert list(c.status.access_modes) == ["ReadWriteOnce"]
        await wait_until(lambda: (v := pv(fake, "v-2gi")) is not None and v.status.phase == "Bound")
        v = pv(fake, "v-2gi")
        assert v is not None
        assert (v.spec.claim_ref.name, v.spec.claim_ref.uid) == ("data", c.metadata.uid)
        assert v.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
        for other in ("v-1gi", "v-5gi"):
            o = pv(fake, other)
            assert o is not None and o.status.phase == "Available"
            assert not o.spec.HasField("claim_ref")


async def test_a_claim_of_an_external_provisioner_is_annotated_and_waits() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("fast", "kemu.io/simulated"),
        claim("data", "1Gi", storage_class="fast"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "ExternalProvisioning" in reasons(fake, "data"))
        ann = pvc(fake, "data").metadata.annotations
        assert ann["volume.kubernetes.io/storage-provisioner"] == "kemu.io/simulated"
        assert ann["volume.beta.kubernetes.io/storage-provisioner"] == "kemu.io/simulated"
        assert "'kemu.io/simulated'" in await event_message(fake, "data", "ExternalProvisioning")
        assert pvc(fake, "data").status.phase == "Pending"


async def test_a_wait_for_first_consumer_claim_waits_for_a_selected_node() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("local", binding_mode="WaitForFirstConsumer"),
        volume("v", "1Gi", storage_class="local"),
        claim("data", "1Gi", storage_class="local"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "WaitForFirstConsumer" in reasons(fake, "data"))
        assert await event_message(fake, "data", "WaitForFirstConsumer") == (
            "waiting for first consumer to be created before binding"
        )
        c = pvc(fake, "data")
        assert not c.spec.volume_name, "a static volume is left to the scheduler"
        assert "volume.kubernetes.io/storage-provisioner" not in c.metadata.annotations
        # A pod that uses it and is not scheduled yet.
        pod = make_pod("user").obj()
        vol = pod.spec.volumes.add(name="data")
        vol.persistent_volume_claim.claim_name = "data"
        await fake.create(pod)
        c.metadata.labels["touch"] = "1"
        c = await fake.update(c)
        await wait_until(lambda: "WaitForPodScheduled" in reasons(fake, "data"))
        assert await event_message(fake, "data", "WaitForPodScheduled") == (
            "waiting for pod user to be scheduled"
        )
        # The scheduler picked a node and needs provisioning.
        c.metadata.annotations["volume.kubernetes.io/selected-node"] = "n1"
        await fake.update(c)
        await wait_until(lambda: "ExternalProvisioning" in reasons(fake, "data"))


async def test_a_claim_of_no_class_gets_the_default_class_or_fails_binding() -> None:
    clock = FakeClock()
    fake = FakeClient(claim("orphan", "1Gi"), clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: "FailedBinding" in reasons(fake, "orphan"))
        assert await event_message(fake, "orphan", "FailedBinding") == (
            "no persistent volumes available for this claim and no storage class is set"
        )
        await fake.create(storage_class("standard", default=True))
        await fake.create(claim("later", "1Gi"))
        await wait_until(lambda: pvc(fake, "later").spec.storage_class_name == "standard")
        await wait_until(lambda: "ExternalProvisioning" in reasons(fake, "later"))


async def test_a_missing_class_and_an_in_tree_provisioner_fail_provisioning() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("local", "kubernetes.io/no-provisioner"),
        claim("nowhere", "1Gi", storage_class="missing"),
        claim("intree", "1Gi", storage_class="local"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "ProvisioningFailed" in reasons(fake, "nowhere"))
        assert await event_message(fake, "nowhere", "ProvisioningFailed") == (
            'storageclass.storage.k8s.io "missing" not found'
        )
        await wait_until(lambda: "ProvisioningFailed" in reasons(fake, "intree"))
        assert await event_message(fake, "intree", "ProvisioningFailed") == (
            "no volume plugin matched name: kubernetes.io/no-provisioner"
        )


async def test_a_requested_volume_that_does_not_fit_is_a_mismatch() -> None:
    clock = FakeClock()
    fake = FakeClient(
        volume("small", "1Gi", storage_class="slow"),
        claim("data", "2Gi", storage_class="slow", volume_name="small"),
        volume("right", "2Gi", storage_class="slow"),
        claim("named", "2Gi", storage_class="slow", volume_name="right"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "VolumeMismatch" in reasons(fake, "data"))
        assert await event_message(fake, "data", "VolumeMismatch") == (
            'Cannot bind to requested volume "small": requested PV is too small'
        )
        await wait_until(lambda: pvc(fake, "named").status.phase == "Bound")
        named = pvc(fake, "named")
        assert "pv.kubernetes.io/bound-by-controller" not in named.metadata.annotations


async def bound_pair(
    fake: FakeClient, name: str, *, reclaim: str, host_path: str = "/data/v"
) -> None:
    await fake.create(
        volume(name, "1Gi", storage_class="slow", reclaim=reclaim, host_path=host_path)
    )
    await fake.create(claim(name, "1Gi", storage_class="slow"))
    await wait_until(lambda: pvc(fake, name).status.phase == "Bound")
    await wait_until(lambda: (v := pv(fake, name)) is not None and v.status.phase == "Bound")


async def test_a_deleted_claim_releases_its_volume_by_the_reclaim_policy() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running(fake, clock):
        await bound_pair(fake, "retain", reclaim="Retain")
        await bound_pair(fake, "tmp", reclaim="Delete", host_path="/tmp/data")
        await bound_pair(fake, "elsewhere", reclaim="Delete", host_path="/srv/data")
        await bound_pair(fake, "recycle", reclaim="Recycle")
        for name in ("retain", "tmp", "elsewhere", "recycle"):
            await fake.delete(types_pb2.PersistentVolumeClaim, name, "default")
        await wait_until(lambda: pv(fake, "tmp") is None)
        await wait_until(
            lambda: (v := pv(fake, "elsewhere")) is not None and v.status.phase == "Failed"
        )
        await wait_until(lambda: "VolumeFailedDelete" in reasons(fake, "elsewhere"))
        assert await event_message(fake, "elsewhere", "VolumeFailedDelete") == (
            "host_path deleter only supports /tmp/.+ but received provided /srv/data"
        )
        await wait_until(
            lambda: (v := pv(fake, "recycle")) is not None and v.status.phase == "Failed"
        )
        await wait_until(lambda: "VolumeFailedRecycle" in reasons(fake, "recycle"))
        await wait_until(
            lambda: (v := pv(fake, "retain")) is not None and v.status.phase == "Released"
        )
        retained = pv(fake, "retain")
        assert retained is not None and retained.spec.claim_ref.name == "retain"


async def test_an_externally_provisioned_delete_volume_is_left_to_its_provisioner() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running(fake, clock):
        c = await fake.create(claim("dyn", "1Gi", storage_class="slow"))
        v = volume("pvc-dyn", "1Gi", storage_class="slow", reclaim="Delete", claim=c)
        v.metadata.annotations["pv.kubernetes.io/provisioned-by"] = "kemu.io/simulated"
        await fake.create(v)
        await wait_until(lambda: pvc(fake, "dyn").status.phase == "Bound")
        await fake.delete(types_pb2.PersistentVolumeClaim, "dyn", "default")
        await wait_until(
            lambda: (v := pv(fake, "pvc-dyn")) is not None and v.status.phase == "Released"
        )
        await settle()
        assert pv(fake, "pvc-dyn") is not None
        assert "VolumeFailedDelete" not in reasons(fake, "pvc-dyn")


async def test_a_bound_claim_whose_volume_is_gone_is_lost() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    async with running(fake, clock):
        await bound_pair(fake, "data", reclaim="Retain")
        await fake.delete(types_pb2.PersistentVolume, "data")
        await wait_until(lambda: pvc(fake, "data").status.phase == "Lost")
        await wait_until(lambda: "ClaimLost" in reasons(fake, "data"))
        assert await event_message(fake, "data", "ClaimLost") == (
            "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
        )
        assert not pvc(fake, "data").status.capacity


async def test_before_1_23_only_the_beta_provisioner_annotation_and_the_old_message() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("fast", "example.com/csi"),
        claim("data", "1Gi", storage_class="fast"),
        clock=clock,
    )
    async with running(fake, clock, version=Version(1, 22)):
        await wait_until(lambda: "ExternalProvisioning" in reasons(fake, "data"))
        ann = pvc(fake, "data").metadata.annotations
        assert ann["volume.beta.kubernetes.io/storage-provisioner"] == "example.com/csi"
        assert "volume.kubernetes.io/storage-provisioner" not in ann
        assert await event_message(fake, "data", "ExternalProvisioning") == (
            'waiting for a volume to be created, either by external provisioner "example.com/csi" '
            "or manually created by system administrator"
        )


async def test_without_retroactive_default_storage_class_a_claim_keeps_no_class() -> None:
    """RetroactiveDefaultStorageClass is alpha (off) at 1.25: the claim stays of no class."""
    clock = FakeClock()
    fake = FakeClient(storage_class("standard", default=True), claim("data", "1Gi"), clock=clock)
    async with running(fake, clock, version=Version(1, 25)):
        await wait_until(lambda: "FailedBinding" in reasons(fake, "data"))
        assert not pvc(fake, "data").spec.HasField("storage_class_name")
