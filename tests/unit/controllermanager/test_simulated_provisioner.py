"""The simulated CSI provisioner (kemu.io/simulated) with the PersistentVolume controller,
against the fake client and a fake clock: provisioning and binding, each class parameter
(provisionDelay on the clock, failNext with backoff, failureRate seeded, topologyKey), the
reschedule on a missing node, and deletion of released Delete volumes."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from google.protobuf.message import Message

from controllermanager.config import SimulatedProvisionerOptions
from controllermanager.persistentvolume.pv_controller import PersistentVolumeController
from controllermanager.persistentvolume.simulated_provisioner import (
    ProvisioningError,
    SimulatedProvisioner,
    parse_parameters,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.testing.builders import make_node
from kemu.testing.fake_time import advance, settle, wait_until
from tests.unit.controllermanager.pv_objects import claim, storage_class
from tests.unit.controllermanager.test_pv_controller import event_message, pv, pvc, reasons

pytestmark = pytest.mark.anyio

WFFC = "WaitForFirstConsumer"


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, seed: int = 0
) -> AsyncIterator[SimulatedProvisioner]:
    informers = InformerFactory(fake, clock=clock)
    binder = PersistentVolumeController(fake, informers, clock)
    provisioner = SimulatedProvisioner(
        fake, informers, clock, options=SimulatedProvisionerOptions(seed=seed)
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(binder.run)
        tg.start_soon(provisioner.run)
        await settle()
        yield provisioner
        tg.cancel_scope.cancel()


def uid(fake: FakeClient, name: str) -> str:
    return pvc(fake, name).metadata.uid


def count(fake: FakeClient, name: str, reason: str) -> int:
    return sum(
        o.count
        for o in fake._objects.values()
        if isinstance(o, types_pb2.Event) and o.involved_object.name == name and o.reason == reason
    )


async def test_an_immediate_claim_is_provisioned_and_bound() -> None:
    clock = FakeClock()
    objects: list[Message] = [
        storage_class("fast", parameters={"csi.storage.k8s.io/fstype": "xfs"}),
        claim("data", "3Gi", storage_class="fast"),
    ]
    fake = FakeClient(*objects, clock=clock)
    async with running(fake, clock):
        await wait_until(lambda: pvc(fake, "data").status.phase == "Bound")
        name = f"pvc-{uid(fake, 'data')}"
        assert pvc(fake, "data").spec.volume_name == name
        v = pv(fake, name)
        assert v is not None
        await wait_until(lambda: (w := pv(fake, name)) is not None and w.status.phase == "Bound")
        assert v.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "kemu.io/simulated"
        assert dict(v.spec.capacity) == {"storage": "3Gi"}
        assert list(v.spec.access_modes) == ["ReadWriteOnce"]
        assert v.spec.persistent_volume_reclaim_policy == "Delete"
        assert v.spec.storage_class_name == "fast"
        assert (v.spec.csi.driver, v.spec.csi.fs_type) == ("simulated.kemu.io", "xfs")
        assert not v.spec.HasField("node_affinity")
        assert v.spec.claim_ref.uid == uid(fake, "data")
        assert await event_message(fake, "data", "Provisioning") == (
            'External provisioner is provisioning volume for claim "default/data"'
        )
        assert await event_message(fake, "data", "ProvisioningSucceeded") == (
            f"Successfully provisioned volume {name}"
        )


async def test_provision_delay_follows_the_clock() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("slow", parameters={"provisionDelay": "1m30s"}),
        claim("data", "1Gi", storage_class="slow"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "Provisioning" in reasons(fake, "data"))
        await advance(clock, 89.5, step=10)
        assert pv(fake, f"pvc-{uid(fake, 'data')}") is None, "not before the delay"
        await advance(clock, 1.0)
        await wait_until(lambda: pvc(fake, "data").status.phase == "Bound")
        assert count(fake, "data", "Provisioning") == 1


async def test_fail_next_fails_the_first_attempts_then_backs_off_and_succeeds() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("flaky", parameters={"failNext": "2"}),
        claim("data", "1Gi", storage_class="flaky"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: count(fake, "data", "ProvisioningFailed") == 1)
        assert await event_message(fake, "data", "ProvisioningFailed") == (
            'failed to provision volume with StorageClass "flaky": rpc error: code = Internal '
            "desc = simulated provisioning failure (failNext 1 of 2)"
        )
        # Backoff 1 s, then 2 s: the third attempt at 3 s succeeds.
        await advance(clock, 1.0, step=0.25)
        await wait_until(lambda: count(fake, "data", "ProvisioningFailed") == 2)
        await advance(clock, 1.75, step=0.25)
        assert pv(fake, f"pvc-{uid(fake, 'data')}") is None, "still backing off"
        await advance(clock, 0.5, step=0.25)
        await wait_until(lambda: pvc(fake, "data").status.phase == "Bound")
        await wait_until(lambda: count(fake, "data", "Provisioning") == 3)
        assert count(fake, "data", "ProvisioningFailed") == 2
        # The class's next claim is not failed any more.
        await fake.create(claim("next", "1Gi", storage_class="flaky"))
        await wait_until(lambda: pvc(fake, "next").status.phase == "Bound")
        assert "ProvisioningFailed" not in reasons(fake, "next")


async def test_failure_rate_draws_from_a_source_seeded_per_class() -> None:
    def outcomes(seed: int, rate: str) -> list[bool]:
        provisioner = SimulatedProvisioner(
            FakeClient(),
            InformerFactory(FakeClient()),
            FakeClock(),
            options=SimulatedProvisionerOptions(seed=seed),
        )
        cls = storage_class("flaky", parameters={"failureRate": rate})
        cls.metadata.uid = "class-uid"
        params = parse_parameters(dict(cls.parameters))
        out = []
        for _ in range(40):
            try:
                provisioner._simulate_outcome(cls, params)
                out.append(True)
            except ProvisioningError:
                out.append(False)
        return out

    rng = random.Random("7/flaky")
    assert outcomes(7, "0.5") == [rng.random() >= 0.5 for _ in range(40)]
    assert outcomes(7, "0.5") == outcomes(7, "0.5")
    assert outcomes(7, "0.5") != outcomes(8, "0.5")
    assert all(outcomes(7, "0"))
    assert not any(outcomes(7, "1"))


def test_bad_parameters_are_refused_naming_the_parameter() -> None:
    for params, text in [
        ({"provisionDelay": "10"}, "parameter provisionDelay"),
        ({"failureRate": "1.5"}, "parameter failureRate"),
        ({"failNext": "-1"}, "parameter failNext"),
        ({"topologyKey": ""}, "parameter topologyKey"),
        ({"speed": "fast"}, "unknown parameter 'speed'"),
    ]:
        with pytest.raises(ProvisioningError, match=text):
            parse_parameters(params)
    assert parse_parameters({"provisionDelay": "1.5s"}).provision_delay == 1.5


async def test_a_bad_parameter_is_reported_as_provisioning_failed() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("bad", parameters={"failureRate": "often"}),
        claim("data", "1Gi", storage_class="bad"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: "ProvisioningFailed" in reasons(fake, "data"))
        assert "code = InvalidArgument desc = parameter failureRate" in await event_message(
            fake, "data", "ProvisioningFailed"
        )


async def test_the_volume_is_pinned_to_the_selected_node_by_the_topology_key() -> None:
    clock = FakeClock()
    node = (
        make_node("n1")
        .label("kubernetes.io/hostname", "host-1")
        .label("topology.kubernetes.io/zone", "zone-a")
        .obj()
    )
    fake = FakeClient(
        node,
        storage_class("local", binding_mode=WFFC),
        storage_class(
            "zonal", binding_mode=WFFC, parameters={"topologyKey": "topology.kubernetes.io/zone"}
        ),
        storage_class("racked", binding_mode=WFFC, parameters={"topologyKey": "example.com/rack"}),
        claim("by-host", "1Gi", storage_class="local", selected_node="n1"),
        claim("by-zone", "1Gi", storage_class="zonal", selected_node="n1"),
        claim("no-rack", "1Gi", storage_class="racked", selected_node="n1"),
        clock=clock,
    )
    async with running(fake, clock):
        for name, key, value in [
            ("by-host", "kubernetes.io/hostname", "host-1"),
            ("by-zone", "topology.kubernetes.io/zone", "zone-a"),
        ]:
            await wait_until(lambda n=name: pvc(fake, n).status.phase == "Bound")  # type: ignore[misc]
            v = pv(fake, f"pvc-{uid(fake, name)}")
            assert v is not None
            (term,) = v.spec.node_affinity.required.node_selector_terms
            (expr,) = term.match_expressions
            assert (expr.key, expr.operator, list(expr.values)) == (key, "In", [value])
        await wait_until(lambda: "ProvisioningFailed" in reasons(fake, "no-rack"))
        assert 'node "n1" has no label "example.com/rack"' in await event_message(
            fake, "no-rack", "ProvisioningFailed"
        )


async def test_a_selected_node_that_does_not_exist_is_rescheduled() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("local", binding_mode=WFFC),
        claim("data", "1Gi", storage_class="local", selected_node="gone"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(
            lambda: (
                "volume.kubernetes.io/selected-node" not in pvc(fake, "data").metadata.annotations
            )
        )
        assert await event_message(fake, "data", "ProvisioningFailed") == 'node "gone" not found'
        assert pvc(fake, "data").status.phase == "Pending"


async def test_a_released_volume_is_deleted_by_delete_and_kept_by_retain() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("gone-with-claim"),
        storage_class("kept", reclaim="Retain"),
        claim("a", "1Gi", storage_class="gone-with-claim"),
        claim("b", "1Gi", storage_class="kept"),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: pvc(fake, "a").status.phase == "Bound")
        await wait_until(lambda: pvc(fake, "b").status.phase == "Bound")
        a, b = f"pvc-{uid(fake, 'a')}", f"pvc-{uid(fake, 'b')}"
        await fake.delete(types_pb2.PersistentVolumeClaim, "a", "default")
        await fake.delete(types_pb2.PersistentVolumeClaim, "b", "default")
        await wait_until(lambda: pv(fake, a) is None)
        await wait_until(lambda: (v := pv(fake, b)) is not None and v.status.phase == "Released")
        await settle()
        assert pv(fake, b) is not None


async def test_a_claim_deleted_during_its_provision_delay_gets_no_volume() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("slow", parameters={"provisionDelay": "30s"}),
        claim("data", "1Gi", storage_class="slow"),
        clock=clock,
    )
    async with running(fake, clock) as provisioner:
        await wait_until(lambda: "Provisioning" in reasons(fake, "data"))
        name = f"pvc-{uid(fake, 'data')}"
        await fake.delete(types_pb2.PersistentVolumeClaim, "data", "default")
        await wait_until(lambda: not provisioner._attempts)
        await advance(clock, 31, step=5)
        assert pv(fake, name) is None


async def test_capacity_is_printed_in_bytes_and_a_selector_is_refused() -> None:
    clock = FakeClock()
    fake = FakeClient(
        storage_class("fast"),
        claim("decimal", "1G", storage_class="fast"),
        claim("picky", "1Gi", storage_class="fast", selector={"tier": "gold"}),
        clock=clock,
    )
    async with running(fake, clock):
        await wait_until(lambda: pvc(fake, "decimal").status.phase == "Bound")
        v = pv(fake, f"pvc-{uid(fake, 'decimal')}")
        assert v is not None and dict(v.spec.capacity) == {"storage": "1000000000"}
        assert await event_message(fake, "picky", "ProvisioningFailed") == (
            'failed to provision volume with StorageClass "fast": claim Selector is not supported'
        )
        assert pv(fake, f"pvc-{uid(fake, 'picky')}") is None
