"""Finalizers and the garbage collector on real processes (apiserver + a leader-elected
controller-manager, no scheduler, no kubelet: pods stay unbound, so they go at once).

Owners and dependents are of several kinds (PodDisruptionBudget, Pod, Lease, Node): the
collector is kind-agnostic. The order of deletions is read from the watch history of the
namespace: every event carries the etcd revision of its change, one clock for every kind.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.machinery.update_strategy import has_generation
from kemu.testing import Cluster, eventually, make_node, make_pdb, make_pod, make_priority_class
from kemu.testing.builders import make_lease, owned, owner_reference
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

Pod, Lease, Pdb = types_pb2.Pod, types_pb2.Lease, types_pb2.PodDisruptionBudget
HOLD = "example.com/hold"
KCM = "kcm"
NODE = "gc-node"
TIMEOUT = 20.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("gc")) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager(
            name=KCM,
            leader_elect=True,
            extra_args=[
                "--controllers", "garbagecollector",
                # One worker: a long deletion is slow enough to be interrupted (the SIGKILL test).
                "--concurrent-gc-syncs", "1",
                "--leader-elect-lease-duration", "3s",
                "--leader-elect-renew-deadline", "2s",
                "--leader-elect-retry-period", "500ms",
            ],
        )  # fmt: skip
        c.start_kubelet(NODE)
        yield c


@pytest.fixture
async def client(cluster: Cluster) -> Any:
    async with Client(cluster.server, timeout=10.0) as c:
        yield c


# ---------------------------------------------------------------- helpers


@dataclass(frozen=True)
class Change:
    rv: int
    type: str
    kind: str
    name: str
    deleting: bool


async def history(
    c: Client, ns: str, since: str, kinds: Sequence[type[Message]] = (Pod, Lease, Pdb)
) -> list[Change]:
    """Every change of `kinds` in `ns` after revision `since`, in revision order: a marker
    object created now ends each kind's replay."""
    marker = unique_name("marker")
    for kind in kinds:
        await c.create(_object(kind, marker, ns))
    out: list[Change] = []
    for kind in kinds:
        async with c.watch(kind, ns, resource_version=since) as stream:
            with anyio.fail_after(TIMEOUT):
                async for ev in stream:
                    m = ev.object.metadata  # type: ignore[attr-defined]
                    if m.name == marker:
                        break
                    out.append(
                        Change(
                            int(m.resource_version),
                            ev.type,
                            kind.DESCRIPTOR.name,
                            m.name,
                            m.HasField("deletion_timestamp"),
                        )
                    )
    return sorted(out, key=lambda ch: ch.rv)


def _object(kind: type[Message], name: str, ns: str) -> Message:
    if kind is Pod:
        return make_pod(name).namespace(ns).obj()
    if kind is Lease:
        return make_lease(name, ns)
    return make_pdb(name).namespace(ns).min_available(1).obj()


def deleted_at(changes: list[Change], kind: str, name: str) -> int:
    found = [ch.rv for ch in changes if (ch.kind, ch.name, ch.type) == (kind, name, "DELETED")]
    assert found, f"{kind}/{name} was never deleted"
    return found[0]


def marked_at(changes: list[Change], kind: str, name: str) -> int:
    found = [ch.rv for ch in changes if (ch.kind, ch.name) == (kind, name) and ch.deleting]
    assert found, f"{kind}/{name} never got a deletionTimestamp"
    return found[0]


async def gone(c: Client, kind: type[Message], name: str, ns: str = "") -> bool:
    try:
        await c.get(kind, name, ns)
    except NotFound:
        return True
    return False


async def owner_uids(c: Client, kind: type[Message], name: str, ns: str) -> list[str]:
    obj = await c.get(kind, name, ns)
    return [r.uid for r in obj.metadata.owner_references]  # type: ignore[attr-defined]


async def start_rv(c: Client, ns: str) -> str:
    return (await c.list(Lease, ns)).resource_version


# ---------------------------------------------------------------- finalizers


async def test_finalizers_hold_a_deleted_object_of_every_kind_until_the_last_one_goes(
    client: Client,
) -> None:
    ns = await create_namespace(client, "fin")
    objects: list[Message] = [
        make_pod("p").namespace(ns).obj(),
        make_lease("l", ns),
        make_pdb("b").namespace(ns).min_available(1).obj(),
        make_node(unique_name("node")).obj(),
        make_priority_class(unique_name("pc"), 7).obj(),
    ]
    for obj in objects:
        owned(obj, finalizers=[HOLD, "example.com/second"])
        created = await client.create(obj)
        meta = created.metadata  # type: ignore[attr-defined]
        kind, name = type(obj), meta.name
        kept = await client.delete(kind, name, meta.namespace)
        km = kept.metadata  # type: ignore[attr-defined]
        assert km.HasField("deletion_timestamp"), kind
        # (upstream's markAsDeleting bumps the generation of a kind that has one)
        generation = 2 if has_generation(obj) else 0
        assert (km.deletion_grace_period_seconds, km.generation) == (0, generation), kind
        again = await client.get(kind, name, meta.namespace)
        assert again.metadata.HasField("deletion_timestamp")  # type: ignore[attr-defined]
        await client.patch(kind, name, {"metadata": {"finalizers": [HOLD]}}, meta.namespace)
        assert not await gone(client, kind, name, meta.namespace), kind
        await client.patch(kind, name, {"metadata": {"finalizers": []}}, meta.namespace)
        assert await gone(client, kind, name, meta.namespace), kind


async def test_a_terminated_pod_with_finalizers_stays_after_the_kubelets_delete(
    client: Client,
) -> None:
    ns = await create_namespace(client, "kubelet")
    pod = owned(make_pod("p").namespace(ns).node(NODE).obj(), finalizers=[HOLD])
    await client.create(pod)

    async def running() -> bool:
        return (await client.get(Pod, "p", ns)).status.phase == "Running"

    await eventually(running, timeout=TIMEOUT)
    since = (await client.get(Pod, "p", ns)).metadata.resource_version
    await client.delete(Pod, "p", ns, grace_period_seconds=1)

    async def deleted_by_the_kubelet() -> bool:
        m = (await client.get(Pod, "p", ns)).metadata
        return m.deletion_grace_period_seconds == 0  # the kubelet's grace-0 DELETE

    await eventually(deleted_by_the_kubelet, timeout=TIMEOUT)
    await client.patch(Pod, "p", {"metadata": {"finalizers": []}}, ns)
    assert await gone(client, Pod, "p", ns)
    changes = [ch for ch in await history(client, ns, since, (Pod,)) if ch.name == "p"]
    # Marked, terminated (status), deleted by the kubelet (grace 0), then gone: the kubelet
    # does not keep deleting a pod its finalizers hold (each DELETE is a no-op).
    assert changes[-1].type == "DELETED"
    assert len(changes) < 10, changes


# ---------------------------------------------------------------- propagation


async def test_background_deletes_the_dependents_after_the_owner(client: Client) -> None:
    ns = await create_namespace(client, "bg")
    since = await start_rv(client, ns)
    owner = await client.create(make_pdb("owner").namespace(ns).min_available(1).obj())
    ref = owner_reference(owner, controller=True, block_owner_deletion=True)
    await client.create(owned(make_pod("dep-pod").namespace(ns).obj(), ref))
    await client.create(owned(make_lease("dep-lease", ns), ref))
    await client.create(make_lease("bystander", ns))

    await client.delete(Pdb, "owner", ns)  # Background by default
    assert await gone(client, Pdb, "owner", ns)  # at once: no finalizer
    await eventually(lambda: gone(client, Pod, "dep-pod", ns), timeout=TIMEOUT)
    await eventually(lambda: gone(client, Lease, "dep-lease", ns), timeout=TIMEOUT)

    changes = await history(client, ns, since)
    owner_gone = deleted_at(changes, "PodDisruptionBudget", "owner")
    assert owner_gone < deleted_at(changes, "Pod", "dep-pod")
    assert owner_gone < deleted_at(changes, "Lease", "dep-lease")
    assert not await gone(client, Lease, "bystander", ns)


async def test_foreground_deletes_the_blocking_dependents_first_then_the_owner(
    client: Client,
) -> None:
    ns = await create_namespace(client, "fg")
    since = await start_rv(client, ns)
    owner = await client.create(make_pdb("owner").namespace(ns).min_available(1).obj())
    block = owner_reference(owner, controller=True, block_owner_deletion=True)
    middle = await client.create(owned(make_pod("middle").namespace(ns).obj(), block))
    await client.create(
        owned(make_lease("leaf", ns), owner_reference(middle, block_owner_deletion=True))
    )
    await client.create(owned(make_lease("blocker", ns), block))
    await client.create(owned(make_lease("loose", ns), owner_reference(owner)))  # not blocking

    kept = await client.delete(Pdb, "owner", ns, propagation_policy="Foreground")
    assert list(kept.metadata.finalizers) == ["foregroundDeletion"]
    await eventually(lambda: gone(client, Pdb, "owner", ns), timeout=TIMEOUT)
    dependents: list[tuple[type[Message], str]] = [
        (Pod, "middle"),
        (Lease, "leaf"),
        (Lease, "blocker"),
        (Lease, "loose"),
    ]

    async def dependents_gone() -> bool:
        return all([await gone(client, kind, name, ns) for kind, name in dependents])

    await eventually(dependents_gone, timeout=TIMEOUT)

    changes = await history(client, ns, since)
    owner_marked = marked_at(changes, "PodDisruptionBudget", "owner")
    owner_gone = deleted_at(changes, "PodDisruptionBudget", "owner")
    middle_gone = deleted_at(changes, "Pod", "middle")
    # The owner waits, marked, for its blocking dependents; the middle pod, deleted in the
    # foreground itself (it has a dependent), waits for its leaf.
    assert owner_marked < deleted_at(changes, "Lease", "blocker") < owner_gone
    assert owner_marked < marked_at(changes, "Pod", "middle")
    assert deleted_at(changes, "Lease", "leaf") < middle_gone < owner_gone
    assert owner_marked < deleted_at(changes, "Lease", "loose")


async def test_orphan_keeps_the_dependents_and_strips_the_owner_reference(client: Client) -> None:
    ns = await create_namespace(client, "orphan")
    owner = await client.create(make_pdb("owner").namespace(ns).min_available(1).obj())
    other = await client.create(make_lease("other-owner", ns))
    ref = owner_reference(owner, controller=True, block_owner_deletion=True)
    await client.create(owned(make_pod("dep-pod").namespace(ns).obj(), ref))
    await client.create(owned(make_lease("dep-lease", ns), ref, owner_reference(other)))

    kept = await client.delete(Pdb, "owner", ns, propagation_policy="Orphan")
    assert list(kept.metadata.finalizers) == ["orphan"]
    await eventually(lambda: gone(client, Pdb, "owner", ns), timeout=TIMEOUT)

    # A dependent the collector's graph had not seen yet when it orphaned (the Lease, created
    # just before the delete) loses the reference later, as a dangling one beside a live owner
    # (upstream's attemptToDeleteItem): both are kept, and both lose the owner's reference.
    async def stripped() -> bool:
        assert await owner_uids(client, Pod, "dep-pod", ns) == []
        assert await owner_uids(client, Lease, "dep-lease", ns) == [other.metadata.uid]
        return True

    await eventually(stripped, timeout=TIMEOUT)


async def test_a_dependent_with_two_owners_survives_the_deletion_of_one(client: Client) -> None:
    ns = await create_namespace(client, "two")
    a = await client.create(make_pdb("a").namespace(ns).min_available(1).obj())
    b = await client.create(make_pod("b").namespace(ns).obj())
    await client.create(owned(make_lease("shared", ns), owner_reference(a), owner_reference(b)))
    await client.create(owned(make_lease("only-a", ns), owner_reference(a)))

    await client.delete(Pdb, "a", ns)
    await eventually(lambda: gone(client, Lease, "only-a", ns), timeout=TIMEOUT)

    async def dangling_reference_removed() -> bool:
        return await owner_uids(client, Lease, "shared", ns) == [b.metadata.uid]

    await eventually(dangling_reference_removed, timeout=TIMEOUT)
    await client.delete(Pod, "b", ns)
    await eventually(lambda: gone(client, Lease, "shared", ns), timeout=TIMEOUT)


async def test_a_dependent_of_an_owner_that_never_existed_is_collected(client: Client) -> None:
    ns = await create_namespace(client, "absent")
    real = await client.create(make_lease("real", ns))
    ghost = types_pb2.OwnerReference(
        api_version="v1", kind="Pod", name="ghost", uid="00000000-0000-0000-0000-000000000001"
    )
    impostor = types_pb2.OwnerReference(
        api_version="coordination.k8s.io/v1", kind="Lease", name="real", uid="not-real-uid"
    )
    await client.create(owned(make_lease("of-ghost", ns), ghost))
    await client.create(owned(make_lease("of-impostor", ns), impostor))
    await client.create(owned(make_lease("of-real", ns), owner_reference(real)))
    await eventually(lambda: gone(client, Lease, "of-ghost", ns), timeout=TIMEOUT)
    await eventually(lambda: gone(client, Lease, "of-impostor", ns), timeout=TIMEOUT)
    assert not await gone(client, Lease, "of-real", ns)


# ---------------------------------------------------------------- restarts


async def test_the_collector_finishes_a_foreground_deletion_after_a_sigkill(
    cluster: Cluster, client: Client
) -> None:
    ns = await create_namespace(client, "kill")
    count = 150
    owner = await client.create(make_pdb("owner").namespace(ns).min_available(1).obj())
    keeper = await client.create(make_pdb("keeper").namespace(ns).min_available(1).obj())
    block = owner_reference(owner, block_owner_deletion=True)
    kept_ref = owner_reference(keeper, block_owner_deletion=True)
    async with anyio.create_task_group() as tg:
        for i in range(count):
            tg.start_soon(client.create, owned(make_lease(f"dep-{i:03}", ns), block))
        for i in range(10):
            tg.start_soon(client.create, owned(make_lease(f"kept-{i}", ns), kept_ref))
        tg.start_soon(client.create, owned(make_lease("shared", ns), block, kept_ref))

    await client.delete(Pdb, "owner", ns, propagation_policy="Foreground")

    async def some_deleted() -> int:
        left = len((await client.list(Lease, ns, label_selector="")).items)
        assert left < count + 11
        return left

    await eventually(some_deleted, timeout=TIMEOUT)
    cluster.kill(KCM)
    left_at_kill = len((await client.list(Lease, ns)).items)
    cluster.restart(KCM)

    await eventually(lambda: gone(client, Pdb, "owner", ns), timeout=TIMEOUT * 2)
    leases = {lease.metadata.name: lease for lease in (await client.list(Lease, ns)).items}
    assert sorted(leases) == sorted([*(f"kept-{i}" for i in range(10)), "shared"]), (
        f"{left_at_kill} leases were left at the kill"
    )
    assert [r.uid for r in leases["shared"].metadata.owner_references] == [keeper.metadata.uid]
    assert not await gone(client, Pdb, "keeper", ns)
