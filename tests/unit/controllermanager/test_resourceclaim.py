"""resourceclaim-controller against the fake client (S-DRA-CTRL-*): claims generated from
templates, the pod's status, a pod waiting for its template, reservations of finished pods
dropped and the claim deallocated, unused generated claims deleted, metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from prometheus_client import CollectorRegistry

from controllermanager import resourceclaim
from controllermanager.app import CONTROLLERS, drop_unavailable
from controllermanager.resourceclaim import ResourceClaimController, generate_name
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import DYNAMIC_RESOURCE_ALLOCATION, FeatureGates
from kemu.component.version import Version
from kemu.machinery.resourceclaim import DELETE_PROTECTION_FINALIZER, POD_CLAIM_NAME_ANNOTATION
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle

pytestmark = pytest.mark.anyio

NS = "default"


def template(name: str) -> types_pb2.ResourceClaimTemplate:
    t = types_pb2.ResourceClaimTemplate()
    t.metadata.name, t.metadata.namespace = name, NS
    t.spec.metadata.labels["team"] = "a"
    t.spec.metadata.annotations["note"] = "x"
    r = t.spec.spec.devices.requests.add(name="gpu")
    r.exactly.device_class_name = "gpu.example.com"
    return t


def pod_with_template(name: str, tmpl: str = "gpu", *, node: str = "") -> types_pb2.Pod:
    b = make_pod(name)
    if node:
        b = b.node(node)
    pod = b.obj()
    pod.spec.resource_claims.add(name="gpu", resource_claim_template_name=tmpl)
    return pod


async def claims(fake: FakeClient) -> list[types_pb2.ResourceClaim]:
    return list((await fake.list(types_pb2.ResourceClaim, NS)).items)


@asynccontextmanager
async def running(
    fake: FakeClient, clock: FakeClock, registry: CollectorRegistry | None = None
) -> AsyncIterator[ResourceClaimController]:
    informers = InformerFactory(fake, clock=clock)
    controller = ResourceClaimController(
        fake,
        informers,
        clock,
        recorder=EventRecorder(fake, "resource_claim", clock=clock),
        registry=registry,
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield controller
        tg.cancel_scope.cancel()


def test_generate_name_cuts_both_parts_in_proportion():
    assert generate_name("web-0", "gpu") == "web-0-gpu-"
    long = generate_name("p" * 60, "c" * 20)
    assert long == "p" * 41 + "-" + "c" * 13  # upstream adds no hyphen after a cut


async def test_a_claim_is_generated_from_the_template_and_recorded_in_the_pod_status():
    """S-DRA-CTRL-1."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    registry = CollectorRegistry()
    await fake.create(template("gpu"))
    pod = await fake.create(pod_with_template("web-0"))
    async with running(fake, clock, registry):
        await settle()
        await settle()
        (claim,) = await claims(fake)
        assert claim.metadata.name.startswith("web-0-gpu-")
        assert claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
        assert claim.metadata.annotations["note"] == "x"
        assert claim.metadata.labels["team"] == "a"
        (ref,) = claim.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid, ref.controller, ref.block_owner_deletion) == (
            "Pod",
            "web-0",
            pod.metadata.uid,
            True,
            True,
        )
        assert claim.spec.devices.requests[0].exactly.device_class_name == "gpu.example.com"
        got = await fake.get(types_pb2.Pod, "web-0", NS)
        (status,) = got.status.resource_claim_statuses
        assert (status.name, status.resource_claim_name) == ("gpu", claim.metadata.name)
        # A second sync creates nothing more.
        await fake.update(got)
        await settle()
        assert len(await claims(fake)) == 1
        assert (
            registry.get_sample_value(
                "resourceclaim_controller_creates_total",
                {"status": "success", "admin_access": "false"},
            )
            == 1
        )
        assert (
            registry.get_sample_value(
                "resourceclaim_controller_resource_claims",
                {
                    "allocated": "false",
                    "admin_access": "false",
                    "source": "resource_claim_template",
                },
            )
            == 1
        )


async def test_a_pod_whose_template_is_missing_waits_for_it():
    """S-DRA-CTRL-2: FailedResourceClaimCreation, then the claim once the template exists."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    await fake.create(pod_with_template("web-0", "later"))
    async with running(fake, clock):
        await settle()
        assert not await claims(fake)
        events = (await fake.list(types_pb2.Event, NS)).items
        assert any(
            e.reason == "FailedResourceClaimCreation"
            and e.message.startswith('PodResourceClaim gpu: resource claim template "later"')
            for e in events
        ), events
        await fake.create(template("later"))
        await settle()
        assert len(await claims(fake)) == 1


async def _allocated_reserved(fake: FakeClient, pod: types_pb2.Pod) -> types_pb2.ResourceClaim:
    """What the scheduler's PreBind writes: the finalizer, then allocation and reservedFor."""
    (claim,) = await claims(fake)
    claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
    claim = await fake.update(claim)
    r = claim.status.allocation.devices.results.add(
        request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0"
    )
    del r
    claim.status.reserved_for.add(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
    return await fake.update_status(claim)


async def test_a_finished_pods_claim_is_unreserved_deallocated_and_deleted():
    """S-DRA-CTRL-3: the pod Succeeded: reservedFor emptied, allocation cleared, finalizer
    removed, and the generated claim deleted."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    await fake.create(template("gpu"))
    pod = await fake.create(pod_with_template("web-0", node="n1"))
    async with running(fake, clock):
        await settle()
        await settle()
        await _allocated_reserved(fake, pod)
        await settle()
        (claim,) = await claims(fake)
        assert len(claim.status.reserved_for) == 1  # the pod runs: kept
        pod = await fake.get(types_pb2.Pod, "web-0", NS)
        pod.status.phase = "Succeeded"
        await fake.update_status(pod)
        await settle()
        assert not await claims(fake)


async def test_a_users_claim_is_unreserved_and_deallocated_when_its_pod_goes():
    """S-DRA-CTRL-4: a claim the pod names (not generated) stays, deallocated, without the
    finalizer, once its only consumer is deleted."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    claim = types_pb2.ResourceClaim()
    claim.metadata.name, claim.metadata.namespace = "shared", NS
    claim.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu.example.com"
    await fake.create(claim)
    b = make_pod("web-0").node("n1").obj()
    b.spec.resource_claims.add(name="gpu", resource_claim_name="shared")
    pod = await fake.create(b)
    async with running(fake, clock):
        await _allocated_reserved(fake, pod)
        await settle()
        await fake.delete(types_pb2.Pod, "web-0", NS, grace_period_seconds=0)
        await settle()
        (left,) = await claims(fake)
        assert not left.status.reserved_for
        assert not left.status.HasField("allocation")
        assert DELETE_PROTECTION_FINALIZER not in left.metadata.finalizers


async def test_a_bound_pods_allocated_claim_is_reserved_for_it():
    """S-DRA-CTRL-5: a pod bound without the scheduler has its allocated claim reserved."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    claim = types_pb2.ResourceClaim()
    claim.metadata.name, claim.metadata.namespace = "pre", NS
    claim.status.allocation.devices.results.add(request="gpu", driver="d", pool="n1", device="a")
    created = await fake.create(claim)
    created.status.allocation.devices.results.add(request="gpu", driver="d", pool="n1", device="a")
    await fake.update_status(created)
    b = make_pod("web-0").node("n1").obj()
    b.spec.resource_claims.add(name="gpu", resource_claim_name="pre")
    pod = await fake.create(b)
    async with running(fake, clock):
        await settle()
        (got,) = await claims(fake)
        assert [r.uid for r in got.status.reserved_for] == [pod.metadata.uid]


@pytest.mark.parametrize(("enabled", "present"), [(True, True), (False, False)])
def test_the_controller_needs_dynamic_resource_allocation(enabled, present):
    gates = FeatureGates.for_version(Version(1, 33), {DYNAMIC_RESOURCE_ALLOCATION: enabled})
    assert (resourceclaim.NAME in drop_unavailable(CONTROLLERS, gates)) is present
