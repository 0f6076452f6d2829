"""The PersistentVolume controller and the simulated CSI provisioner on real processes
(apiserver + a controller-manager running persistentvolume-binder,
simulated-csi-provisioner, pvc-protection and pv-protection; no scheduler: where the scheduler's volume binding would set
`volume.kubernetes.io/selected-node`, the test writes it).

Static binding picks the smallest fit; a `kemu.io/simulated` claim gets `pvc-<uid>` and both
are Bound; WaitForFirstConsumer waits until a node is selected, then the volume is pinned to
that node's hostname; failNext gives ProvisioningFailed and then success; deleting claims
deletes a Delete volume and leaves a Retain one Released (through the protection finalizers);
a claim a scheduled pod uses is kept until the pod goes; provisionDelay passes in virtual time.

The apiserver must accept the storage kinds (their validation and strategies come with the
storage kinds' part of #34): on a tree without them, creating a PersistentVolume fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_node, make_pod
from kemu.testing.cluster_time import advance_to, cluster_now
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace
from tests.unit.controllermanager.pv_objects import claim, storage_class, volume

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PVC, PV = types_pb2.PersistentVolumeClaim, types_pb2.PersistentVolume
TIMEOUT = 20.0
CONTROLLERS = "persistentvolume-binder,simulated-csi-provisioner,pvc-protection,pv-protection"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("pv")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager(
            extra_args=["--controllers", CONTROLLERS],
            cluster_cidr=None,
        )
        yield c


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as c:
        yield c


async def bound_claim(client: Client, name: str, ns: str) -> types_pb2.PersistentVolumeClaim:
    async def check() -> types_pb2.PersistentVolumeClaim:
        c = await client.get(PVC, name, ns)
        assert c.status.phase == "Bound", f"phase {c.status.phase!r}"
        return c

    return await eventually(check, timeout=TIMEOUT, message=f"claim {ns}/{name} Bound")


async def volume_in_phase(client: Client, name: str, phase: str) -> types_pb2.PersistentVolume:
    async def check() -> types_pb2.PersistentVolume:
        v = await client.get(PV, name)
        assert v.status.phase == phase, f"phase {v.status.phase!r}"
        return v

    return await eventually(check, timeout=TIMEOUT, message=f"volume {name} {phase}")


async def claim_events(client: Client, ns: str, name: str) -> list[types_pb2.Event]:
    events = await client.list(types_pb2.Event, namespace=ns)
    return [e for e in events.items if e.involved_object.name == name]


async def events_recorded(
    client: Client, ns: str, name: str, reasons: set[str]
) -> list[types_pb2.Event]:
    """The events of `name` once every one of `reasons` is among them (an event is written
    after the change it reports)."""

    async def check() -> list[types_pb2.Event]:
        events = await claim_events(client, ns, name)
        assert reasons <= {e.reason for e in events}, [e.reason for e in events]
        return events

    return await eventually(check, timeout=TIMEOUT, message=f"events {sorted(reasons)}")


async def test_an_immediate_claim_binds_to_the_smallest_matching_static_volume(
    client: Client,
) -> None:
    ns = await create_namespace(client, "pv-static")
    cls = unique_name("manual")
    names = {size: unique_name(f"pv-{size.lower()}") for size in ("1Gi", "2Gi", "5Gi")}
    for size, name in names.items():
        await client.create(volume(name, size, storage_class=cls))
    await client.create(storage_class(cls, "kubernetes.io/no-provisioner"))
    # The binder matches Available volumes only (upstream FindMatchingVolume skips the others):
    # a claim made before the smallest one is Available binds to a larger one, upstream too.
    for name in names.values():
        await volume_in_phase(client, name, "Available")
    await client.create(claim("data", "1500Mi", storage_class=cls, namespace=ns))
    bound = await bound_claim(client, "data", ns)
    assert bound.spec.volume_name == names["2Gi"]
    assert dict(bound.status.capacity) == {"storage": "2Gi"}
    assert bound.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    v = await volume_in_phase(client, names["2Gi"], "Bound")
    assert (v.spec.claim_ref.namespace, v.spec.claim_ref.uid) == (ns, bound.metadata.uid)
    for size in ("1Gi", "5Gi"):
        await volume_in_phase(client, names[size], "Available")


async def test_an_immediate_simulated_claim_is_provisioned_and_bound(client: Client) -> None:
    ns = await create_namespace(client, "pv-sim")
    cls = unique_name("fast")
    await client.create(storage_class(cls))
    created = await client.create(claim("data", "2Gi", storage_class=cls, namespace=ns))
    bound = await bound_claim(client, "data", ns)
    name = f"pvc-{created.metadata.uid}"
    assert bound.spec.volume_name == name
    v = await volume_in_phase(client, name, "Bound")
    assert v.spec.csi.driver == "simulated.kemu.io"
    assert v.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "kemu.io/simulated"
    assert v.spec.claim_ref.uid == created.metadata.uid
    await events_recorded(
        client, ns, "data", {"ExternalProvisioning", "Provisioning", "ProvisioningSucceeded"}
    )


async def test_a_wait_for_first_consumer_claim_is_provisioned_on_the_selected_node(
    client: Client,
) -> None:
    ns = await create_namespace(client, "pv-wffc")
    cls = unique_name("local")
    node = unique_name("node")
    await client.create(make_node(node).label("kubernetes.io/hostname", f"host-{node}").obj())
    await client.create(storage_class(cls, binding_mode="WaitForFirstConsumer"))
    created = await client.create(claim("data", "1Gi", storage_class=cls, namespace=ns))

    async def waiting() -> bool:
        return any(
            e.reason == "WaitForFirstConsumer" for e in await claim_events(client, ns, "data")
        )

    await eventually(waiting, timeout=TIMEOUT, message="the WaitForFirstConsumer event")
    pending = await client.get(PVC, "data", ns)
    assert not pending.spec.volume_name
    assert "volume.kubernetes.io/storage-provisioner" not in pending.metadata.annotations
    with pytest.raises(NotFound):
        await client.get(PV, f"pvc-{created.metadata.uid}")
    # What the scheduler's volume binding does once it has picked the node.
    pending.metadata.annotations["volume.kubernetes.io/selected-node"] = node
    await client.update(pending)
    bound = await bound_claim(client, "data", ns)
    v = await client.get(PV, bound.spec.volume_name)
    (term,) = v.spec.node_affinity.required.node_selector_terms
    (expr,) = term.match_expressions
    assert (expr.key, expr.operator, list(expr.values)) == (
        "kubernetes.io/hostname",
        "In",
        [f"host-{node}"],
    )


async def test_fail_next_gives_provisioning_failed_and_then_success(client: Client) -> None:
    ns = await create_namespace(client, "pv-fail")
    cls = unique_name("flaky")
    await client.create(storage_class(cls, parameters={"failNext": "2"}))
    await client.create(claim("data", "1Gi", storage_class=cls, namespace=ns))
    await bound_claim(client, "data", ns)
    events = await events_recorded(client, ns, "data", {"ProvisioningSucceeded"})
    failed = [e for e in events if e.reason == "ProvisioningFailed"]
    assert sum(e.count for e in failed) == 2
    assert all(
        e.type == "Warning"
        and e.message.startswith(f'failed to provision volume with StorageClass "{cls}": ')
        for e in failed
    )


async def test_deleting_claims_deletes_a_delete_volume_and_releases_a_retain_one(
    client: Client,
) -> None:
    ns = await create_namespace(client, "pv-reclaim")
    deleting, retaining = unique_name("delete"), unique_name("retain")
    await client.create(storage_class(deleting))
    await client.create(storage_class(retaining, reclaim="Retain"))
    await client.create(claim("a", "1Gi", storage_class=deleting, namespace=ns))
    await client.create(claim("b", "1Gi", storage_class=retaining, namespace=ns))
    a = (await bound_claim(client, "a", ns)).spec.volume_name
    b = (await bound_claim(client, "b", ns)).spec.volume_name
    await volume_in_phase(client, a, "Bound")
    await volume_in_phase(client, b, "Bound")
    await client.delete(PVC, "a", ns)
    await client.delete(PVC, "b", ns)

    async def deleted() -> bool:
        try:
            await client.get(PV, a)
        except NotFound:
            return True
        return False

    await eventually(deleted, timeout=TIMEOUT, message=f"volume {a} deleted")
    kept = await volume_in_phase(client, b, "Released")
    assert kept.spec.persistent_volume_reclaim_policy == "Retain"


async def test_a_claim_in_use_is_kept_until_its_pod_goes(client: Client) -> None:
    ns = await create_namespace(client, "pv-inuse")
    cls = unique_name("fast")
    await client.create(storage_class(cls))
    await client.create(claim("data", "1Gi", storage_class=cls, namespace=ns))
    volume_name = (await bound_claim(client, "data", ns)).spec.volume_name
    pod = make_pod("user").namespace(ns).node(unique_name("node")).obj()
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "data"
    await client.create(pod)
    # A witness: an unused claim deleted after it. pvc-protection has one worker and a FIFO
    # queue fed by one watch, so once the witness is gone the claim's deletion was handled.
    await client.create(claim("witness", "1Gi", storage_class="", namespace=ns))

    async def protected(name: str) -> bool:
        c = await client.get(PVC, name, ns)
        return "kubernetes.io/pvc-protection" in c.metadata.finalizers

    await eventually(lambda: protected("data"), timeout=TIMEOUT, message="data protected")
    await eventually(lambda: protected("witness"), timeout=TIMEOUT, message="witness protected")
    await client.delete(PVC, "data", ns)
    await client.delete(PVC, "witness", ns)

    async def gone(name: str) -> bool:
        try:
            await client.get(PVC, name, ns)
        except NotFound:
            return True
        return False

    await eventually(lambda: gone("witness"), timeout=TIMEOUT, message="the witness deleted")
    kept = await client.get(PVC, "data", ns)
    assert kept.metadata.HasField("deletion_timestamp")
    assert list(kept.metadata.finalizers) == ["kubernetes.io/pvc-protection"]
    await volume_in_phase(client, volume_name, "Bound")
    await client.delete(types_pb2.Pod, "user", ns, grace_period_seconds=0)

    await eventually(lambda: gone("data"), timeout=TIMEOUT, message="deleted once the pod is gone")

    async def volume_gone() -> bool:
        try:
            await client.get(PV, volume_name)
        except NotFound:
            return True
        return False

    await eventually(volume_gone, timeout=TIMEOUT, message="its Delete volume deleted")


@pytest.fixture(scope="module")
def virtual_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("pv-virtual"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager(
            extra_args=["--controllers", CONTROLLERS],
            cluster_cidr=None,
        )
        yield c


async def test_provision_delay_passes_in_virtual_time(virtual_cluster: Cluster) -> None:
    """provisionDelay 10m: nothing after 9 virtual minutes, Bound after 10, with the clock
    held between advances (no wall time needed)."""
    async with Client(virtual_cluster.server, timeout=10.0) as client:
        await client.set_clock_rate(0)
        ns = await create_namespace(client, "pv-delay")
        cls = unique_name("slow")
        await client.create(storage_class(cls, parameters={"provisionDelay": "10m"}))
        created = await client.create(claim("data", "1Gi", storage_class=cls, namespace=ns))
        start = await cluster_now(client)
        await advance_to(client, start + 9 * 60)
        with pytest.raises(NotFound):
            await client.get(PV, f"pvc-{created.metadata.uid}")
        assert (await client.get(PVC, "data", ns)).status.phase != "Bound"
        await advance_to(client, start + 10 * 60 + 1)
        bound = await bound_claim(client, "data", ns)
        assert bound.spec.volume_name == f"pvc-{created.metadata.uid}"
