"""DRA's node side on real processes (docs/dra.md "Kubelet" and "resourceclaim controller"):
etcd, an apiserver, a controller-manager (garbage collector and resourceclaim-controller) and
kubelets with --dra-slice-file. No scheduler: pods are created bound, and the tests write the
allocation and reservedFor of a claim as the scheduler's PreBind does (as upstream's
controller tests do).

The apiserver's resource.k8s.io validation comes with the DRA API (wave/dra-api): until it is
merged the apiserver refuses these kinds, and the module is skipped."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.machinery.resourceclaim import DELETE_PROTECTION_FINALIZER, POD_CLAIM_NAME_ANNOTATION
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
pytest.importorskip(
    "kemu.machinery.validation.resource", reason="the apiserver validates no resource.k8s.io kind"
)

DRIVER: Final = "gpu.example.com"
PREPARE_DELAY: Final = 1.5
SLICES: Final = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  labels: {{kemu.io/test: dra}}
  annotations:
    kubelet.kemu.io/prepare-delay: {PREPARE_DELAY}s
    kubelet.kemu.io/binding-delay: 200ms
    kubelet.kemu.io/binding-failure-devices: gpu-1
spec:
  driver: {DRIVER}
  devices:
  - name: gpu-0
    attributes:
      model: {{string: a100}}
    capacity:
      memory: {{value: 40Gi}}
    bindingConditions: [Attached]
    bindingFailureConditions: [AttachFailed]
  - name: gpu-1
    bindingConditions: [Attached]
    bindingFailureConditions: [AttachFailed]
  - name: gpu-2
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("dra-node")
    path = Path(root) / "slices.yaml"
    path.write_text(SLICES)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager(
            extra_args=["--controllers", "garbagecollector,resourceclaim-controller"],
            cluster_cidr=None,
        )
        for node in ("n1", "n2"):
            c.start_kubelet(
                node,
                extra_args=["--dra-slice-file", str(path), "--pod-startup-delay", "100ms"],
            )
        yield c


async def _slices(c: Client, node: str) -> list[types_pb2.ResourceSlice]:
    items = (await c.list(types_pb2.ResourceSlice)).items
    return [s for s in items if s.spec.node_name == node]


async def test_a_kubelet_publishes_its_slice_and_the_nodes_deletion_removes_it(cluster):
    """S-DRA-NODE-1: the node's pool once its Node exists (nodeName, pool = node name,
    generation 1, resourceSliceCount 1, owner the Node); the garbage collector deletes the
    slice with the Node (n2: the kubelet does not register again)."""
    async with Client(cluster.server, timeout=10.0) as c:

        async def published() -> types_pb2.ResourceSlice:
            got = await _slices(c, "n2")
            assert len(got) == 1
            return got[0]

        s = await eventually(published, timeout=10)
        node = await c.get(types_pb2.Node, "n2")
        assert s.spec.driver == DRIVER
        assert s.metadata.name.startswith(f"n2-{DRIVER}-")
        assert s.metadata.labels["kemu.io/test"] == "dra"
        assert not s.metadata.annotations
        pool = s.spec.pool
        assert (pool.name, pool.generation, pool.resource_slice_count) == ("n2", 1, 1)
        assert [d.name for d in s.spec.devices] == ["gpu-0", "gpu-1", "gpu-2"]
        (ref,) = s.metadata.owner_references
        assert (ref.kind, ref.name, ref.uid) == ("Node", "n2", node.metadata.uid)
        await c.delete(types_pb2.Node, "n2")

        async def gone() -> bool:
            return await _slices(c, "n2") == []

        await eventually(gone, timeout=10)
        assert len(await _slices(c, "n1")) == 1


def _template(ns: str) -> types_pb2.ResourceClaimTemplate:
    t = types_pb2.ResourceClaimTemplate()
    t.metadata.name, t.metadata.namespace = "gpu", ns
    t.spec.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu.example.com"
    return t


async def _allocate_and_reserve(
    c: Client, claim: types_pb2.ResourceClaim, pod: types_pb2.Pod, device: str
) -> types_pb2.ResourceClaim:
    """The scheduler's PreBind: the finalizer (an update), then allocation and reservedFor."""
    claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
    claim = await c.update(claim)
    claim.status.allocation.devices.results.add(
        request="gpu", driver=DRIVER, pool="n1", device=device
    )
    claim.status.reserved_for.add(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
    return await c.update_status(claim)


async def test_a_pods_generated_claim_is_prepared_then_released_when_it_ends(cluster):
    """S-DRA-CTRL-1, S-DRA-NODE-3, S-DRA-CTRL-3: the controller creates <pod>-gpu-* from the
    template and records it in the pod's status; the pod stays Pending
    (FailedPrepareDynamicResources) until the claim is allocated and reserved for it, then
    runs after the driver's prepare delay; once it has Succeeded the claim is unreserved,
    deallocated and, being generated for it, deleted."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-claims")
        await c.create(_template(ns))
        spec = make_pod("job").namespace(ns).node("n1").obj()
        spec.metadata.annotations["kubelet.kemu.io/run-duration"] = "3s"
        spec.spec.resource_claims.add(name="gpu", resource_claim_template_name="gpu")
        pod = await c.create(spec)

        async def recorded() -> types_pb2.ResourceClaim:
            got = await c.get(types_pb2.Pod, "job", ns)
            assert len(got.status.resource_claim_statuses) == 1
            (status,) = got.status.resource_claim_statuses
            assert status.name == "gpu"
            return await c.get(types_pb2.ResourceClaim, status.resource_claim_name, ns)

        claim = await eventually(recorded, timeout=10)
        assert claim.metadata.name.startswith("job-gpu-")
        assert claim.metadata.annotations[POD_CLAIM_NAME_ANNOTATION] == "gpu"
        assert claim.metadata.owner_references[0].uid == pod.metadata.uid

        async def waiting() -> bool:
            events = (await c.list(types_pb2.Event, ns)).items
            return any(e.reason == "FailedPrepareDynamicResources" for e in events)

        await eventually(waiting, timeout=10)
        assert (await c.get(types_pb2.Pod, "job", ns)).status.phase in ("", "Pending")
        reserved_at = time.time()
        await _allocate_and_reserve(c, claim, pod, "gpu-2")

        async def running() -> types_pb2.Pod:
            got = await c.get(types_pb2.Pod, "job", ns)
            assert got.status.phase == "Running"
            return got

        got = await eventually(running, timeout=10)
        started = got.status.container_statuses[0].state.running.started_at.ToNanoseconds() / 1e9
        assert started - reserved_at >= PREPARE_DELAY  # NodePrepareResources took its delay

        async def released() -> bool:
            try:
                left = await c.get(types_pb2.ResourceClaim, claim.metadata.name, ns)
            except NotFound:
                return True
            raise AssertionError(f"claim still there: {left.status}")

        await eventually(released, timeout=15)
        assert (await c.get(types_pb2.Pod, "job", ns)).status.phase == "Succeeded"


async def test_a_users_claim_is_deallocated_when_its_pod_is_deleted(cluster):
    """S-DRA-CTRL-4: a claim the pod names stays, reserved for nobody, not allocated, without
    the finalizer."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-shared")
        claim = types_pb2.ResourceClaim()
        claim.metadata.name, claim.metadata.namespace = "shared", ns
        claim.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu.example.com"
        claim = await c.create(claim)
        spec = make_pod("user").namespace(ns).node("n1").obj()
        spec.spec.resource_claims.add(name="gpu", resource_claim_name="shared")
        pod = await c.create(spec)
        await _allocate_and_reserve(c, claim, pod, "gpu-2")

        async def running() -> bool:
            return (await c.get(types_pb2.Pod, "user", ns)).status.phase == "Running"

        await eventually(running, timeout=10)
        await c.delete(types_pb2.Pod, "user", ns, grace_period_seconds=0)

        async def released() -> types_pb2.ResourceClaim:
            got = await c.get(types_pb2.ResourceClaim, "shared", ns)
            assert not got.status.reserved_for
            assert not got.status.HasField("allocation")
            assert DELETE_PROTECTION_FINALIZER not in got.metadata.finalizers
            return got

        await eventually(released, timeout=10)


async def test_the_driver_sets_and_fails_binding_conditions(cluster):
    """S-DRA-NODE-4: gpu-0's Attached True, gpu-1's AttachFailed True, in status.devices."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-binding")
        for name, device in (("ok", "gpu-0"), ("bad", "gpu-1")):
            claim = types_pb2.ResourceClaim()
            claim.metadata.name, claim.metadata.namespace = name, ns
            claim.spec.devices.requests.add(name="gpu").exactly.device_class_name = "gpu"
            claim = await c.create(claim)
            r = claim.status.allocation.devices.results.add(
                request="gpu", driver=DRIVER, pool="n1", device=device
            )
            r.binding_conditions.append("Attached")
            r.binding_failure_conditions.append("AttachFailed")
            await c.update_status(claim)

        async def answered(name: str) -> list[tuple[str, str]]:
            got = await c.get(types_pb2.ResourceClaim, name, ns)
            assert len(got.status.devices) == 1, got.status
            (dev,) = got.status.devices
            assert (dev.driver, dev.pool) == (DRIVER, "n1")
            return [(cond.type, cond.status) for cond in dev.conditions]

        assert await eventually(lambda: answered("ok"), timeout=10) == [("Attached", "True")]
        assert await eventually(lambda: answered("bad"), timeout=10) == [("AttachFailed", "True")]


async def test_a_deleted_pods_generated_claim_goes_with_it(cluster):
    """S-DRA-CTRL-6: the pod deleted before its claim was allocated: the garbage collector
    deletes the generated claim through its owner reference."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-gc")
        await c.create(_template(ns))
        spec = make_pod("gone").namespace(ns).node("n1").obj()
        spec.spec.resource_claims.add(name="gpu", resource_claim_template_name="gpu")
        await c.create(spec)

        async def generated() -> list[types_pb2.ResourceClaim]:
            return list((await c.list(types_pb2.ResourceClaim, ns)).items)

        (claim,) = await eventually(generated, timeout=10)
        await c.delete(types_pb2.Pod, "gone", ns, grace_period_seconds=0)

        async def collected() -> bool:
            return not await generated()

        await eventually(collected, timeout=10)
