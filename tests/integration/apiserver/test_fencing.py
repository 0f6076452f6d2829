"""Fencing tokens on a real apiserver and etcd (kemu.machinery.fencing, docs/controller-manager.md
"Leader election and fencing"): a write made as leader carries its lease term; enforced, a
write of an ended term is refused in the write's own etcd transaction with a 409 naming the
lease and its holder, on both edges, and the refusal stops the elector leading; not enforced
(upstream's behaviour), it lands and the apiserver logs it as a stale leader write."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import anyio
import anyio.to_thread
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.fencing import Fence, leading_as
from kemu.client.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from kemu.machinery.errors import BadRequest, Conflict, Fenced
from kemu.machinery.fencing import ENFORCE_KEY, TOKEN_KEY, FencingToken
from kemu.testing import Cluster, make_pod, make_replica_set
from kemu.testing.eventually import eventually
from kemu.testing.namespaces import ensure_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NS = "fencing"
LOCK = "kube-system"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("fencing")) as c:
        c.start_etcd()
        c.start_apiserver(rest=True)
        c.start_kubelet("n1", capacity={"cpu": "1", "memory": "4Gi", "pods": "10"})
        c.start_controllermanager()
        yield c


async def _lease(client: Client, name: str, holder: str, transitions: int) -> types_pb2.Lease:
    """Creates or moves the lease `name` to `holder` at `transitions` (as a takeover would)."""
    lease = types_pb2.Lease(
        metadata=types_pb2.ObjectMeta(name=name, namespace=LOCK),
        spec=types_pb2.LeaseSpec(
            holder_identity=holder, lease_duration_seconds=15, lease_transitions=transitions
        ),
    )
    try:
        current = await client.get(types_pb2.Lease, name, LOCK)
    except Exception:
        return await client.create(lease)
    current.spec.CopyFrom(lease.spec)
    return await client.update(current)


async def test_an_enforced_token_of_an_ended_term_is_refused_naming_the_lease_and_holder(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        term = await _lease(client, "lock-a", "a", 0)
        fence = Fence(FencingToken.of(term, enforce=True))
        with leading_as(fence):
            created = await client.create(make_pod("a-1").namespace(NS).obj())
        assert not fence.lost.is_set()

        await _lease(client, "lock-a", "b", 1)  # b takes over while a does not know
        with leading_as(fence):
            with pytest.raises(Fenced) as refused:
                await client.create(make_pod("a-2").namespace(NS).obj())
            for write in (
                client.patch(types_pb2.Pod, "a-1", {"metadata": {"labels": {"x": "y"}}}, NS),
                client.delete(types_pb2.Pod, "a-1", NS),
                client.bind(NS, "a-1", "n1"),
            ):
                with pytest.raises(Fenced):
                    await write
        message = str(refused.value)
        assert "lease kube-system/lock-a is held by b (leaseTransitions 1)" in message, message
        assert "a (leaseTransitions 0)" in message, message
        assert fence.lost.is_set() and fence.refusal is not None
        # Nothing of the refused writes landed; a write made by no leader still does.
        pod = await client.get(types_pb2.Pod, "a-1", NS)
        assert pod.metadata.resource_version == created.metadata.resource_version
        assert not pod.spec.node_name and not pod.metadata.HasField("deletion_timestamp")
        assert [p.metadata.name for p in (await client.list(types_pb2.Pod, NS)).items] == ["a-1"]
        await client.delete(types_pb2.Pod, "a-1", NS)

        # The new holder's term passes.
        with leading_as(Fence(FencingToken("kube-system", "lock-a", 1, "b", enforce=True))):
            await client.create(make_pod("b-1").namespace(NS).obj())


async def test_a_refused_write_is_a_409_conflict_status_on_the_rest_edge(cluster: Cluster) -> None:
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        await _lease(client, "lock-r", "b", 3)
    body = json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "r-1"},
         "spec": {"containers": [{"name": "c", "image": "i"}]}}
    ).encode()  # fmt: skip

    def post(headers: dict[str, str]) -> tuple[int, dict[str, object]]:
        req = urllib.request.Request(
            f"{cluster.rest_url}/api/v1/namespaces/{NS}/pods",
            data=body,
            headers={"Content-Type": "application/json", **headers},
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    code, status = await anyio.to_thread.run_sync(
        post, {TOKEN_KEY: "kube-system/lock-r/2/a", ENFORCE_KEY: "true"}
    )
    assert code == 409 and status["reason"] == "Conflict", status
    assert "lease kube-system/lock-r is held by b (leaseTransitions 3)" in str(status["message"])
    code, status = await anyio.to_thread.run_sync(post, {TOKEN_KEY: "kube-system/lock-r"})
    assert code == 400 and TOKEN_KEY in str(status["message"]), status
    code, _ = await anyio.to_thread.run_sync(post, {TOKEN_KEY: "kube-system/lock-r/3/b"})
    assert code == 201


async def test_a_node_lease_has_no_holder_record_so_a_token_naming_one_is_refused(
    cluster: Cluster,
) -> None:
    """kube-node-lease holds the kubelets' heartbeats, never a lock: no record is kept."""
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        lease = await client.get(types_pb2.Lease, "n1", "kube-node-lease")
        token = FencingToken.of(lease, enforce=True)
        with leading_as(Fence(token)), pytest.raises(Fenced) as err:
            await client.create(make_pod("nl-1").namespace(NS).obj())
        assert "is held by nobody (no holder record)" in str(err.value)


async def test_a_malformed_token_is_a_bad_request_naming_the_header(cluster: Cluster) -> None:
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        bad = FencingToken(
            "kube-system", "lock-x", -1, "a", enforce=True
        )  # "kube-system/lock-x/-1/a"
        with leading_as(Fence(bad)), pytest.raises(BadRequest) as err:
            await client.create(make_pod("m-1").namespace(NS).obj())
        assert TOKEN_KEY in str(err.value)


async def test_without_enforcement_a_stale_write_lands_as_upstream_and_is_logged(
    cluster: Cluster,
) -> None:
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        term = await _lease(client, "lock-s", "a", 5)
        await _lease(client, "lock-s", "b", 6)
        fence = Fence(FencingToken.of(term, enforce=False))
        with leading_as(fence):
            created = await client.create(make_pod("s-1").namespace(NS).obj())
        assert created.metadata.resource_version and not fence.lost.is_set()

    def logged() -> bool:
        text = cluster.processes["apiserver"].logs()
        line = f"stale leader write: create pods {NS}/s-1 at revision {created.metadata.resource_version}"
        assert line in text, "no stale-write line yet"
        assert (
            "by a (leaseTransitions 5) of lease kube-system/lock-s, held by b (leaseTransitions 6)"
            in text
        )
        return True

    await eventually(logged, timeout=10)


async def test_the_first_refused_write_stops_the_elector_leading(cluster: Cluster) -> None:
    """Long lease timers: the renew loop would not notice the takeover for 20 s; the refusal
    of the leader's next write stops it at once."""
    config = LeaderElectionConfig(
        lock_namespace=LOCK,
        lock_name="lock-e",
        identity="elector-a",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=5.0,
        fencing=True,
    )
    async with Client(cluster.server) as client, Client(cluster.server) as other:
        await ensure_namespace(client, NS)
        elector = LeaderElector(client, config)
        took_over = anyio.Event()
        writes: list[str] = []

        async def leading() -> None:
            await client.create(make_pod("e-1").namespace(NS).obj())
            writes.append("e-1")
            await took_over.wait()
            await client.create(make_pod("e-2").namespace(NS).obj())
            writes.append("e-2")

        async def take_over() -> None:
            await eventually(elector.is_leader, timeout=10)
            lease = await other.get(types_pb2.Lease, "lock-e", LOCK)
            lease.spec.holder_identity = "elector-b"
            lease.spec.lease_transitions += 1
            await other.update(lease)
            took_over.set()

        started = time.monotonic()
        lost: LeadershipLost | None = None
        async with anyio.create_task_group() as tg:
            tg.start_soon(take_over)
            try:
                await elector.run(leading)
            except LeadershipLost as e:
                lost = e
        assert lost is not None, "the elector went on leading"
        assert time.monotonic() - started < 10
        assert writes == ["e-1"] and not elector.is_leader()
        with pytest.raises(Exception) as gone:
            await client.get(types_pb2.Pod, "e-2", NS)
        assert not isinstance(gone.value, Conflict)
        lease = await other.get(types_pb2.Lease, "lock-e", LOCK)
        assert lease.spec.holder_identity == "elector-b", "the stopped leader released b's lease"


async def test_a_pod_a_stale_leader_binds_onto_a_full_node_is_rejected_and_replaced(
    cluster: Cluster,
) -> None:
    """What upstream guarantees around its unfenced window: the apiserver lets the stale
    binding through (logged), the kubelet's admission rejects the pod (OutOfcpu), and its
    ReplicaSet replaces it."""
    async with Client(cluster.server) as client:
        await ensure_namespace(client, NS)
        await client.create(make_pod("full").namespace(NS).req(cpu="1").node("n1").obj())

        async def running() -> bool:
            pod = await client.get(types_pb2.Pod, "full", NS)
            assert pod.status.phase == "Running", pod.status.phase
            return True

        await eventually(running, timeout=20)
        rs = make_replica_set("web").namespace(NS).req(cpu="500m").obj()
        await client.create(rs)

        async def pending() -> str:
            pods = await client.list(types_pb2.Pod, NS, label_selector="app=web")
            assert len(pods.items) == 1, pods.items
            return pods.items[0].metadata.name

        name = await eventually(pending, timeout=20)
        term = await _lease(client, "lock-k", "a", 0)
        await _lease(client, "lock-k", "b", 1)
        with leading_as(Fence(FencingToken.of(term, enforce=False))):
            await client.bind(NS, name, "n1")

        async def rejected_and_replaced() -> bool:
            pod = await client.get(types_pb2.Pod, name, NS)
            assert pod.status.phase == "Failed" and pod.status.reason == "OutOfcpu", pod.status
            pods = await client.list(types_pb2.Pod, NS, label_selector="app=web")
            others = [p for p in pods.items if p.metadata.name != name]
            assert len(others) == 1 and not others[0].spec.node_name, others
            return True

        await eventually(rejected_and_replaced, timeout=30)
    text = cluster.processes["apiserver"].logs()
    assert f"stale leader write: update pods {NS}/{name} at revision" in text
