"""The kubelet's claims (kubelet.dra_manager, kubelet.dra_driver) on the fake client: a pod
with a claim waits until the claim is allocated and reserved for it, NodePrepareResources
takes the driver's delay on the cluster's clock, and the drivers answer binding conditions
(S-DRA-NODE-3, S-DRA-NODE-4, S-DRA-NODE-5)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.component.options import ComponentOptions
from kemu.component.runner import ComponentContext, run_component_async
from kemu.testing.builders import make_pod
from kemu.testing.fake_time import settle, wait_until
from kubelet import app, options
from kubelet.runtime import PodRuntime, PodState

from .helpers import advance

pytestmark = pytest.mark.anyio

SLICES = """\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  annotations:
    kubelet.kemu.io/prepare-delay: 2s
    kubelet.kemu.io/binding-delay: 3s
    kubelet.kemu.io/binding-failure-devices: gpu-1
spec:
  driver: gpu.example.com
  devices:
  - name: gpu-0
    bindingConditions: [Attached]
    bindingFailureConditions: [AttachFailed]
  - name: gpu-1
    bindingConditions: [Attached]
    bindingFailureConditions: [AttachFailed]
  - name: gpu-2
"""


@dataclass
class Env:
    fake: FakeClient
    clock: FakeClock
    registry: CollectorRegistry

    def operations(self, name: str, *, error: bool = False) -> float:
        value = self.registry.get_sample_value(
            "dra_operations_duration_seconds_count",
            {"operation_name": name, "is_error": str(error).lower()},
        )
        return value or 0.0

    def in_use(self, driver: str) -> float | None:
        return self.registry.get_sample_value("dra_resource_claims_in_use", {"driver_name": driver})


@asynccontextmanager
async def kubelet(tmp_path) -> AsyncIterator[Env]:
    path = tmp_path / "slices.yaml"
    path.write_text(SLICES)
    args = options.build_parser().parse_args(
        ["--node-name", "n1", "--dra-slice-file", str(path), "--root-dir", ""]
    )
    settings = options.settings_from_args(args, "v1.37.0")
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    opts = ComponentOptions.for_tests("kubelet", shutdown_grace_period=5)
    box: list[ComponentContext] = []
    async with anyio.create_task_group() as tg:

        async def body(ctx: ComponentContext) -> None:
            box.append(ctx)
            await app.serve(fake, settings, ctx)

        tg.start_soon(
            functools.partial(
                run_component_async, "kubelet", opts, body, clock=clock, handle_signals=False
            )
        )
        await wait_until(lambda: box)
        for _ in range(300):
            if box[0].checks.is_ready():
                break
            await advance(clock, 0.01, step=0.01)
        yield Env(fake, clock, box[0].registry)
        box[0].request_stop()


def claim(name: str) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.name, c.metadata.namespace = name, "default"
    c.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu"
    return c


async def allocate(
    env: Env, name: str, device: str, *, pod: types_pb2.Pod | None, conditions: bool = False
) -> types_pb2.ResourceClaim:
    """What the scheduler's PreBind writes (allocation, and reservedFor with a pod)."""
    c = await env.fake.get(types_pb2.ResourceClaim, name, "default")
    r = c.status.allocation.devices.results.add(
        request="gpu", driver="gpu.example.com", pool="n1", device=device
    )
    if conditions:
        r.binding_conditions.append("Attached")
        r.binding_failure_conditions.append("AttachFailed")
    if pod is not None:
        c.status.reserved_for.add(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
    return await env.fake.update_status(c)


async def phase(env: Env, name: str) -> str:
    return (await env.fake.get(types_pb2.Pod, name, "default")).status.phase


async def test_a_pod_waits_for_its_claim_then_for_the_drivers_prepare_delay(tmp_path):
    """S-DRA-NODE-3: Pending with FailedPrepareDynamicResources while its claim is not
    reserved for it; then the driver's 2 s prepare delay and the 0.5 s start-up delay on the
    cluster clock; UnprepareResources when it ends."""
    async with kubelet(tmp_path) as env:
        await env.fake.create(claim("c"))
        spec = make_pod("p").node("n1").obj()
        spec.spec.resource_claims.add(name="gpu", resource_claim_name="c")
        pod = await env.fake.create(spec)
        await advance(env.clock, 3)
        waiting = await env.fake.get(types_pb2.Pod, "p", "default")
        assert waiting.status.phase == "Pending"
        (cs,) = waiting.status.container_statuses
        assert cs.state.waiting.reason == "ContainerCreating"  # kubectl: ContainerCreating
        conditions = {c.type: (c.status, c.reason) for c in waiting.status.conditions}
        assert conditions["PodReadyToStartContainers"] == ("False", "")
        assert conditions["Ready"] == ("False", "ContainersNotReady")
        events = (await env.fake.list(types_pb2.Event, "default")).items
        assert any(
            e.reason == "FailedPrepareDynamicResources"
            and e.message.startswith("Failed to prepare dynamic resources: pod p (")
            and "is not allowed to use ResourceClaim c" in e.message
            for e in events
        ), [e.message for e in events]
        await allocate(env, "c", "gpu-2", pod=pod)
        await settle()
        start = env.clock.now()
        await advance(env.clock, 2.0, step=0.25)
        assert await phase(env, "p") == "Pending"  # prepared at +2 s, containers at +2.5 s
        await advance(env.clock, 0.75, step=0.25)
        got = await env.fake.get(types_pb2.Pod, "p", "default")
        assert got.status.phase == "Running"
        started = got.status.container_statuses[0].state.running.started_at.ToNanoseconds() / 1e9
        assert 2.5 <= started - start <= 2.75 + 1e-3
        assert env.operations("PrepareResources") == 1
        assert env.operations("PrepareResources", error=True) >= 1
        assert env.operations("UnprepareResources") == 0
        assert env.in_use("gpu.example.com") == env.in_use("<any>") == 1
        await env.fake.delete(types_pb2.Pod, "p", "default", grace_period_seconds=0)
        await advance(env.clock, 1)
        assert env.operations("UnprepareResources") == 1
        assert env.in_use("<any>") == 0


async def test_an_unknown_driver_is_not_registered(tmp_path):
    async with kubelet(tmp_path) as env:
        await env.fake.create(claim("c"))
        spec = make_pod("p").node("n1").obj()
        spec.spec.resource_claims.add(name="gpu", resource_claim_name="c")
        pod = await env.fake.create(spec)
        c = await env.fake.get(types_pb2.ResourceClaim, "c", "default")
        c.status.allocation.devices.results.add(
            request="gpu", driver="other.example.com", pool="n1", device="x"
        )
        c.status.reserved_for.add(resource="pods", name="p", uid=pod.metadata.uid)
        await env.fake.update_status(c)
        await advance(env.clock, 1)
        events = (await env.fake.list(types_pb2.Event, "default")).items
        assert any("DRA driver other.example.com is not registered" in e.message for e in events)
        assert await phase(env, "p") == "Pending"


async def test_the_driver_sets_or_fails_binding_conditions_after_its_delay(tmp_path):
    """S-DRA-NODE-4: gpu-0's Attached True 3 s after the allocation; gpu-1 (a failing
    device) gets AttachFailed True instead."""
    async with kubelet(tmp_path) as env:
        for name, device in (("ok", "gpu-0"), ("bad", "gpu-1")):
            await env.fake.create(claim(name))
            await allocate(env, name, device, pod=None, conditions=True)
        await settle()
        await advance(env.clock, 2.5)
        ok = await env.fake.get(types_pb2.ResourceClaim, "ok", "default")
        assert not ok.status.devices
        await advance(env.clock, 1.0)
        ok = await env.fake.get(types_pb2.ResourceClaim, "ok", "default")
        (dev,) = ok.status.devices
        assert (dev.driver, dev.pool, dev.device) == ("gpu.example.com", "n1", "gpu-0")
        assert [(c.type, c.status) for c in dev.conditions] == [("Attached", "True")]
        bad = await env.fake.get(types_pb2.ResourceClaim, "bad", "default")
        (dev,) = bad.status.devices
        assert [(c.type, c.status) for c in dev.conditions] == [("AttachFailed", "True")]


async def test_the_claim_of_dra_backed_extended_resources_is_prepared_too(tmp_path):
    """S-DRA-NODE-6: a pod whose extended resources the scheduler backed with a claim
    (status.extendedResourceClaimStatus, DRAExtendedResource) waits for that claim too."""
    async with kubelet(tmp_path) as env:
        spec = make_pod("p").node("n1").obj()
        spec.status.extended_resource_claim_status.resource_claim_name = "p-extended-resources"
        pod = await env.fake.create(spec)
        c = claim("p-extended-resources")
        ref = c.metadata.owner_references.add(
            api_version="v1", kind="Pod", name="p", uid=pod.metadata.uid
        )
        ref.controller = True
        await env.fake.create(c)
        await advance(env.clock, 1)
        assert await phase(env, "p") == "Pending"
        await allocate(env, "p-extended-resources", "gpu-2", pod=pod)
        await advance(env.clock, 3)
        assert await phase(env, "p") == "Running"


def test_a_preparing_pod_is_checkpointed_with_its_claims():
    rt = PodRuntime("u", "default", "p", PodState.PREPARING, admitted_at=1.0, start_at=1.5)
    rt.prepared_at = 3.0
    rt.prepared_claims = {"claim-uid": ["gpu.example.com"]}
    back = PodRuntime.from_json(rt.to_json())
    assert back == rt
    assert back.next_deadline() == 3.0
