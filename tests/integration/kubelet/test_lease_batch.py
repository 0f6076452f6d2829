"""A hollow kubelet's Lease renewals in batches (kubelet/lease_batch.py, issue #59 item 3) on
real processes in virtual time: etcd, the apiserver, the controller-manager (the node lifecycle
controller at upstream's timers: the node monitor's 5 s period, 50 s grace period) and one
hollow kubelet of 200 nodes renewing its Leases at upstream's period (10 s, a quarter of 40 s).

What the API shows stays upstream's: each renewal is its own write (its own resourceVersion,
renewTime and MODIFIED event), a Conflict on one Lease is that Lease's alone and is retried as
upstream's lease controller retries, and the nodes of a kubelet that stops go Unknown. What the
batch changes is only the calls: the apiserver counts one Lease update per phase of 100 nodes,
not one per renewal."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import AsyncIterator, Iterator

import anyio
import anyio.to_thread
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import BadRequest, Conflict, NotFound
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster
from kemu.testing.cluster_time import START_SECONDS

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODES = 200
PREFIX = "hollow"
KUBELET = "kubelet-hollow"
NODE_LEASE_NAMESPACE = "kube-node-lease"
RENEW_INTERVAL = 10.0
SLACK = (
    0.04 * RENEW_INTERVAL + 0.001
)  # kubelet/node_status.py PERIOD_JITTER (timers served late by it at most)
GRACE = 50.0  # --node-monitor-grace-period's default
PERIOD = 5.0  # --node-monitor-period's default
_UPDATES = re.compile(
    r'^apiserver_request_total\{code="OK",resource="leases",verb="update"\} (\S+)$', re.M
)


def _names() -> list[str]:
    return [f"{PREFIX}-{i}" for i in range(NODES)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("leasebatch"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver()
        yield c


@pytest.fixture(scope="module")
async def c(cluster: Cluster) -> AsyncIterator[Client]:
    """A client of the module's cluster; the clock holds from before the controller-manager
    and the hollow kubelet start (one phase for their timers), and each test moves it."""
    async with Client(cluster.server, timeout=30.0) as client:
        await client.set_clock_rate(0)
        manager = cluster.start_controllermanager(wait=False)
        await client.advance_clock(START_SECONDS)
        await anyio.to_thread.run_sync(manager.wait_ready)
        kubelet = cluster.start_component(
            "kubelet",
            KUBELET,
            [
                "--server", cluster.server,
                "--nodes", str(NODES),
                "--node-name-prefix", PREFIX,
                "--root-dir", "",
                "--node-lease-batch",
            ],
            wait=False,
        )  # fmt: skip
        # (its /readyz: every node registered with its Lease; the clock still holds)
        await anyio.to_thread.run_sync(kubelet.wait_ready)
        yield client


def _lease_updates(cluster: Cluster) -> float:
    match = _UPDATES.search(cluster.component("apiserver").scrape())
    return float(match.group(1)) if match else 0.0


async def _leases(c: Client) -> dict[str, types_pb2.Lease]:
    listed = await c.list_all(types_pb2.Lease, NODE_LEASE_NAMESPACE)
    return {lease.metadata.name: lease for lease in listed.items}


def _renewed(lease: types_pb2.Lease) -> float:
    return lease.spec.renew_time.ToNanoseconds() / 1e9


async def test_every_lease_is_renewed_on_time_each_renewal_its_own_write(
    cluster: Cluster, c: Client
) -> None:
    names = set(_names())
    listed = await c.list(types_pb2.Lease)  # (every namespace: the leaders' Leases too)
    updates_before = await anyio.to_thread.run_sync(_lease_updates, cluster)
    seen: dict[str, list[types_pb2.Lease]] = defaultdict(list)
    others: list[str] = []  # the leaders' renewals (kube-system), one update call each
    strays: list[str] = []
    final: dict[str, str] = {}
    all_seen = anyio.Event()

    def caught_up() -> bool:
        return bool(final) and all(
            seen[name] and seen[name][-1].metadata.resource_version == rv
            for name, rv in final.items()
        )

    async with c.watch(types_pb2.Lease, resource_version=listed.resource_version) as events:

        async def collect() -> None:
            async for event in events:
                meta = event.object.metadata
                if meta.namespace != NODE_LEASE_NAMESPACE:
                    others.append(f"{event.type} {meta.namespace}/{meta.name}")
                elif event.type == "MODIFIED" and meta.name in names:
                    seen[meta.name].append(event.object)
                else:
                    strays.append(f"{event.type} {meta.name}")
                if caught_up():
                    all_seen.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(collect)
            await c.advance_clock(3.5 * RENEW_INTERVAL)
            now = (await c.clock_status()).now
            final.update(
                {
                    name: lease.metadata.resource_version
                    for name, lease in (await _leases(c)).items()
                }
            )
            if caught_up():
                all_seen.set()
            with anyio.fail_after(30):
                await all_seen.wait()  # the watch has sent every Lease's last write
            tg.cancel_scope.cancel()
    updates = await anyio.to_thread.run_sync(_lease_updates, cluster) - updates_before

    assert sorted(seen) == sorted(names)
    assert strays == []
    assert all(o.startswith("MODIFIED ") for o in others), others
    versions: list[int] = []
    renewals = 0
    for name, writes in seen.items():
        # three renewals or four in 35 s (by its phase), 10 s apart, each a write of its own
        times = [_renewed(w) for w in writes]
        assert 3 <= len(writes) <= 4, (name, times)
        gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
        assert all(abs(g - RENEW_INTERVAL) <= SLACK for g in gaps), (name, times)
        assert now - SLACK - RENEW_INTERVAL <= times[-1] <= now, (name, times, now)
        revs = [int(w.metadata.resource_version) for w in writes]
        assert revs == sorted(revs), (name, revs)
        versions.extend(revs)
        renewals += len(writes)
    assert len(set(versions)) == len(versions), "two renewals share a resourceVersion"
    # one Lease update call per phase of 100 nodes due (a retry or two at most): 7, not 700
    assert updates - len(others) <= renewals / 100 + 2, (updates, len(others), renewals)


async def test_a_lease_someone_else_wrote_is_renewed_alone_on_its_retry(
    cluster: Cluster, c: Client
) -> None:
    names = _names()
    victim = names[7]
    lease = await c.get(types_pb2.Lease, victim, NODE_LEASE_NAMESPACE)
    lease.metadata.annotations["example.com/touched"] = "yes"
    touched = await c.update(lease)  # the kubelet's copy is now stale: its next write conflicts
    before = await _leases(c)
    await c.advance_clock(RENEW_INTERVAL)
    after = await _leases(c)

    mine = after[victim]
    assert mine.metadata.annotations["example.com/touched"] == "yes"  # read again, kept
    assert int(mine.metadata.resource_version) > int(touched.metadata.resource_version)
    assert _renewed(mine) > _renewed(before[victim])
    # every other Lease renewed too, the victim's phase (nodes 0..99) at the same instant
    for name in names:
        assert _renewed(after[name]) - _renewed(before[name]) == pytest.approx(
            RENEW_INTERVAL, abs=SLACK
        ), name
    phase = {_renewed(after[name]) for name in names[:100]}
    assert phase == {_renewed(mine)}, phase


async def test_an_update_batch_answers_each_item_as_its_update_would(c: Client) -> None:
    made = []
    for name in ("a", "b"):
        lease = types_pb2.Lease()
        lease.metadata.name, lease.metadata.namespace = name, "default"
        lease.spec.holder_identity = name
        made.append(await c.create(lease))
    fresh, stale = made[0], types_pb2.Lease()
    stale.CopyFrom(made[1])
    stale.metadata.resource_version = str(int(made[1].metadata.resource_version) - 1)
    missing = types_pb2.Lease()
    missing.CopyFrom(fresh)
    missing.metadata.name = "missing"
    fresh.spec.holder_identity = stale.spec.holder_identity = missing.spec.holder_identity = "x"
    ok, conflict, not_found = await c.update_batch([fresh, stale, missing])
    assert isinstance(ok, types_pb2.Lease) and ok.spec.holder_identity == "x"
    assert int(ok.metadata.resource_version) > int(made[0].metadata.resource_version)
    assert isinstance(conflict, Conflict), conflict
    assert isinstance(not_found, NotFound), not_found
    assert (await c.get(types_pb2.Lease, "b", "default")).spec.holder_identity == "b"
    with pytest.raises(BadRequest, match="items: at most 1000 updates"):
        await c.update_batch([fresh] * 1001)


async def test_the_nodes_of_a_stopped_hollow_kubelet_go_unknown(
    cluster: Cluster, c: Client
) -> None:
    await c.advance_clock(PERIOD)
    nodes = (await c.list_all(types_pb2.Node)).items
    assert all(_ready(n) == "True" for n in nodes), "Ready while the kubelet renews"
    cluster.kill(KUBELET)
    # each node renewed within the interval before the kill: its grace lasts 40 s at least
    await c.advance_clock(GRACE - RENEW_INTERVAL - PERIOD)
    nodes = (await c.list_all(types_pb2.Node)).items
    assert all(_ready(n) == "True" for n in nodes), "not before the grace period"
    # and 50 s at most, then a monitor period; the controller-manager writes 200 Nodes'
    # status and taints at its client's QPS (20, burst 30): a minute at most
    await c.advance_clock(RENEW_INTERVAL + 2 * PERIOD)
    for _ in range(12):
        nodes = (await c.list_all(types_pb2.Node)).items
        if all(_ready(n) == "Unknown" for n in nodes):
            break
        await c.advance_clock(PERIOD)
    assert len(nodes) == NODES
    leases = await _leases(c)
    now = (await c.clock_status()).now
    ready = {
        n.metadata.name: _renewed(leases[n.metadata.name]) - now
        for n in nodes
        if _ready(n) != "Unknown"
    }
    assert ready == {}, f"still Ready (their renewals, s before now): {ready}"


def _ready(node: types_pb2.Node) -> str:
    return next((x.status for x in node.status.conditions if x.type == "Ready"), "")
