"""Network and time faults on real processes, through the cluster's fault proxy (three etcd
members, an apiserver, a controller-manager with a short node-monitor grace period, one
kubelet): each one as upstream behaves under it, and healed."""

from __future__ import annotations

import signal
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.chaos.netfaults import NetworkFaults
from kemu.chaos.recorder import LeaseRecorder
from kemu.chaos.schedule import Action, Fault
from kemu.client.client import Client
from kemu.client.informer import Informer
from kemu.machinery.errors import (
    AlreadyExists,
    ApiError,
    InternalError,
    Timeout,
    Unavailable,
)
from kemu.machinery.latency import Latency
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.etcd import Etcd
from kemu.testing.faultproxy import FaultProxy, Mode, Rule
from kemu.testing.invariants import record_nodes
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import url_ok

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NS = "netfaults"
NODE = "nf-n1"
KUBELET = f"kubelet-{NODE}"
GRACE = 3.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("netfaults"), proxy=FaultProxy()) as c:
        # etcd at info: a failure's logs show the members' elections and slow requests.
        c.start_etcd(members=3, extra_args=["--log-level", "info"])
        c.start_apiserver()
        c.start_controllermanager(
            extra_args=[
                "--node-monitor-period",
                "250ms",
                "--node-monitor-grace-period",
                f"{GRACE}s",
            ]
        )
        c.start_kubelet(NODE, extra_args=["--node-lease-renew-interval", "500ms"])
        yield c


@pytest.fixture
async def client(cluster: Cluster) -> AsyncIterator[Client]:
    assert cluster.proxy is not None
    cluster.proxy.heal()
    async with Client(cluster.server, timeout=10.0) as c:
        await ensure_namespace(c, NS)
        # Each test starts from a healthy cluster. A fault an earlier test healed can leave
        # the node Unknown for a while: writes that timed out on an etcd member cut from its
        # peers (a third of them, round robin) included lease renewals, and the node is Ready
        # again only at the kubelet's next node status. And every etcd member answers a
        # linearizable read (its /health): CI run T saw a member, healed after a cut, keep a
        # stream to the leader down for seconds afterwards, so that the apiserver's writes
        # through it timed out in the next test (the node's lease renewals among them).
        await eventually(lambda: anyio.to_thread.run_sync(_members_healthy, cluster), timeout=30)
        await eventually(_until("True", c, types_pb2.Node, NODE), timeout=30)
        yield c
    cluster.proxy.heal()


def _healthy(member: Etcd) -> bool:
    try:
        return member.healthy()  # etcd 3.5's /health: a linearizable read through the member
    except OSError:  # its 1 s timeout
        return False


def _members_healthy(cluster: Cluster) -> bool:
    sick = [m.name for m in cluster.etcd_members if not _healthy(m)]
    assert not sick, f"etcd members without a leader or a quorum read: {sick}"
    return True


async def _ready(
    client: Client, kind: type[types_pb2.Node] | type[types_pb2.Pod], name: str
) -> str:
    obj = await client.get(kind, name, NS if kind is types_pb2.Pod else "")
    return next((c.status for c in obj.status.conditions if c.type == "Ready"), "")


def _until(
    want: str, client: Client, kind: type[types_pb2.Node] | type[types_pb2.Pod], name: str
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        got = await _ready(client, kind, name)
        assert got == want, f"{kind.__name__} {name} Ready={got}, want {want}"
        return True

    return check


async def test_a_partitioned_kubelet_goes_unknown_its_pods_not_ready_and_both_come_back(
    cluster: Cluster, client: Client
) -> None:
    assert cluster.proxy is not None
    await client.create(make_pod("on-n1").namespace(NS).node(NODE).obj())
    await eventually(_until("True", client, types_pb2.Pod, "on-n1"), timeout=20)
    await eventually(_until("True", client, types_pb2.Node, NODE), timeout=20)

    cut = Rule(Mode.CUT, src=KUBELET)
    cluster.proxy.add(cut)
    await eventually(_until("Unknown", client, types_pb2.Node, NODE), timeout=GRACE + 10)
    await eventually(_until("False", client, types_pb2.Pod, "on-n1"), timeout=10)
    assert cluster.processes[KUBELET].running  # cut off, not dead

    cluster.proxy.remove(cut)
    await eventually(_until("True", client, types_pb2.Node, NODE), timeout=30)
    await eventually(_until("True", client, types_pb2.Pod, "on-n1"), timeout=30)


async def test_an_apiserver_cut_from_etcd_fails_readyz_and_its_calls_then_recovers(
    cluster: Cluster, client: Client
) -> None:
    assert cluster.proxy is not None
    readyz = cluster.component("apiserver").readyz_url
    cut = Rule(Mode.CUT, src="apiserver")
    cluster.proxy.add(cut)
    try:
        await eventually(lambda: not url_ok(readyz), timeout=10)
        with pytest.raises(ApiError):
            async with Client(cluster.server, timeout=2.0) as short:
                await short.create(make_pod("while-cut").namespace(NS).obj())
    finally:
        cluster.proxy.remove(cut)
    await eventually(lambda: url_ok(readyz), timeout=15)
    await client.create(make_pod("after-cut").namespace(NS).obj())


async def test_an_etcd_member_cut_from_its_peers_falls_behind_and_catches_up(
    cluster: Cluster, client: Client
) -> None:
    assert cluster.proxy is not None
    members = cluster.etcd_members
    lone, peers = members[0], [m.name for m in members[1:]]
    # The peers are told apart by their requests' X-Server-From (etcd.peer_source).
    for p in peers:
        assert cluster.proxy.connections(src=p, dst=lone.name) > 0
        assert cluster.proxy.connections(src=lone.name, dst=p) > 0
    rules = [Rule(Mode.CUT, src=lone.name, dst=p) for p in peers]
    rules += [Rule(Mode.CUT, src=p, dst=lone.name) for p in peers]
    for rule in rules:
        cluster.proxy.add(rule)
    try:
        assert cluster.proxy.connections(src=lone.name, dst=peers[0]) == 0
        assert cluster.proxy.connections(src=peers[1], dst=lone.name) == 0
        # The apiserver keeps writing through the two members that keep a quorum; a write
        # it sends to the lone member fails (no leader there: Unavailable, or etcd's request
        # timeout passes, 6 s: an internal error; upstream's apiserver balances over the
        # members the same way), and is tried again. Each attempt is given 1.5 s (a create
        # through the quorum takes milliseconds): about half of them land on the lone member,
        # and at etcd's 6 s a create could fail four times in a row within 30 s (CI saw it).
        for i in range(5):
            await eventually(_create(client.one_attempt(1.5), f"quorum{i}"), timeout=30)
        # The five writes reached the quorum and not the lone member (which may still apply
        # what it had received before the cut: compared with the others, not with itself).
        others = max(m.status()["revision"] for m in members[1:])
        assert others - lone.status()["revision"] >= 5
    finally:
        for rule in rules:
            cluster.proxy.remove(rule)

    def caught_up() -> bool:
        assert lone.status()["revision"] >= others
        return True

    await eventually(caught_up, timeout=20)


def _create(client: Client, name: str) -> Callable[[], Awaitable[bool]]:
    async def attempt() -> bool:
        try:
            await client.create(make_pod(name).namespace(NS).obj())
        except AlreadyExists:
            pass  # an earlier attempt that timed out was committed after all
        except (Unavailable, InternalError, Timeout) as e:  # (Timeout: the client's deadline)
            raise AssertionError(str(e)) from e
        return True

    return attempt


async def test_a_delay_adds_to_every_etcd_round_trip(cluster: Cluster, client: Client) -> None:
    assert cluster.proxy is not None
    await client.create(make_pod("warm").namespace(NS).obj())
    delay = Rule(Mode.DELAY, src="apiserver", delay=0.15)
    cluster.proxy.add(delay)
    try:
        started = time.monotonic()
        await client.create(make_pod("slow").namespace(NS).obj())
        assert time.monotonic() - started >= 0.3  # at least one round trip of 2 x 0.15 s
    finally:
        cluster.proxy.remove(delay)


@pytest.mark.parametrize("role", ["apiserver", "etcd"])
async def test_a_latency_fault_slows_every_round_trip_on_its_links_then_heals(
    cluster: Cluster, client: Client, role: str
) -> None:
    """Issue #58 item 4: the chaos fault `latency` (schedule.py) through the fault proxy:
    "latency apiserver" on every link to the apiservers (a client dialing through the proxy
    as a component does), "latency etcd" on the apiserver's links to etcd."""
    assert cluster.proxy is not None
    notes: list[str] = []
    faults = NetworkFaults(cluster, notes.append, LeaseRecorder(), client)
    latency = Latency.parse("uniform:300ms-400ms")
    fault = Fault(0.0, Action.LATENCY, role, down=3.0, pick=7, latency=latency)
    targets = ["apiserver"] if role == "apiserver" else [m.name for m in cluster.etcd_members]
    through_proxy = cluster.proxy.link("latency-test", "apiserver", cluster.server)
    async with Client(through_proxy, timeout=10.0) as component:
        await component.create(make_pod(f"warm-{role}").namespace(NS).obj())
        async with anyio.create_task_group() as tg:
            tg.start_soon(anyio.to_thread.run_sync, faults.inject, fault, targets)
            await eventually(lambda: bool(cluster.proxy and cluster.proxy.rules), timeout=5)
            started = time.monotonic()
            await component.create(make_pod(f"slow-{role}").namespace(NS).obj())
            assert time.monotonic() - started >= 0.3  # a round trip of 0.3 s at least
        assert cluster.proxy.rules == []  # healed after `down`
        started = time.monotonic()
        await component.create(make_pod(f"fast-{role}").namespace(NS).obj())
        assert time.monotonic() - started < 0.3
    assert notes[0].startswith(f"latency {role}: +uniform:300ms-400ms per round trip")
    assert notes[-1] == f"latency {role} over"


async def test_dropped_watches_are_watched_again_and_informers_miss_nothing(
    cluster: Cluster, client: Client
) -> None:
    informer = Informer(client, types_pb2.Pod, namespace=NS)
    async with anyio.create_task_group() as tg:
        await tg.start(informer.run)
        apiserver = cluster.component("apiserver")

        def watches() -> float:
            return sum(
                float(line.rsplit(" ", 1)[1])
                for line in apiserver.scrape().splitlines()
                if line.startswith('apiserver_request_total{code="OK",resource="pods",verb="watch"')
            )

        before = watches()
        lists = informer.lists
        apiserver.send_signal(signal.SIGUSR1)
        await client.create(make_pod("after-drop").namespace(NS).obj())

        def rewatched() -> bool:
            assert watches() > before
            assert informer.lister.get("after-drop", NS) is not None
            return True

        await eventually(rewatched, timeout=15)
        assert informer.lists == lists  # resumed from its resourceVersion, no relist
        assert apiserver.running
        tg.cancel_scope.cancel()


async def test_a_kubelet_clock_ahead_keeps_its_node_ready_and_set_back_it_recovers(
    cluster: Cluster, client: Client
) -> None:
    """The node lifecycle controller counts a lease renewal only when its renewTime is later
    than the last one seen (upstream's tryUpdateNodeHealth), on its own clock: a kubelet whose
    clock runs ahead stays Ready; set right again, its renewals look old (its node may go
    Unknown), until its next node status brings a new heartbeat and it is Ready again."""
    lease_before = await client.get(types_pb2.Lease, NODE, "kube-node-lease")
    cluster.skew_clock(KUBELET, 240.0)
    try:

        async def renewed_ahead() -> bool:
            lease = await client.get(types_pb2.Lease, NODE, "kube-node-lease")
            assert lease.metadata.resource_version != lease_before.metadata.resource_version
            assert lease.spec.renew_time.ToSeconds() > time.time() + 200
            return True

        await eventually(renewed_ahead, timeout=10)
        # A grace period and more passes, recorded: the node is Ready in every version.
        async with record_nodes(client) as nodes:
            await anyio.sleep(GRACE + 1)
        readiness = [
            next((c.status for c in v.node.status.conditions if c.type == "Ready"), "")
            for v in nodes.by_name()[NODE]
        ]
        assert readiness and set(readiness) == {"True"}, readiness
    finally:
        cluster.skew_clock(KUBELET, 0.0)
    await eventually(_until("True", client, types_pb2.Node, NODE), timeout=30)
