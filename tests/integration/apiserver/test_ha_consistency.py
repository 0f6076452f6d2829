"""Apiservers side by side, as upstream's HA control plane (issue #59 item 4): two apiservers on
one etcd, clients spread over them, with the consistency upstream's clients get. The scenarios
are S-HA-1..7 of docs/cluster.md "High availability":

- S-HA-1: a write on apiserver A, then a consistent read (resourceVersion "") on B, holds it
  (upstream's cacher waits for its watch cache to reach etcd's current revision: cacher.go
  GetList with ConsistentListFromCache, delegator.go), and so does a list on B not older than
  the write's resourceVersion (the cacher's waitUntilFreshAndBlock);
- S-HA-2: a watch moved from A to B resumes from its last resourceVersion without losing or
  repeating an event (every apiserver's resourceVersions are etcd's revisions);
- S-HA-3: a watch resumed on B from a resourceVersion older than B's window is 410 Gone
  ("too old resource version"), and the client relists;
- S-HA-4: a list at resourceVersion "0" on B is any snapshot B's cache holds (it may lag, it
  is not a consistent read) but a whole one, at the resourceVersion it names;
- S-HA-5: leader election and fencing across A and B (the lease and the fencing guard are
  etcd's: the elector on B sees A's leader; a leader writing through A is fenced as soon as
  the lease moves through B);
- S-HA-6: the virtual clock is one cluster time on both (the segment is one etcd key each
  apiserver follows; a kubelet through B renews its lease in it, as A reads it), and rate max
  is refused while two serve (docs/virtual-time.md);
- S-HA-7: components spread over both (`Cluster.spread_components`: a scheduler on A, kubelets
  on B and A) run pods end to end.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterator

import anyio
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.fencing import Fence, leading_as
from kemu.client.leaderelection import LeaderElectionConfig, LeaderElector, LeadershipLost
from kemu.machinery.errors import BadRequest, Expired, Fenced
from kemu.machinery.fencing import FencingToken
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually, retrying_conflicts
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """etcd and two apiservers, "apiserver-a" (`server`) and "apiserver-b"."""
    with Cluster(tmp_path_factory.mktemp("ha")) as c:
        c.start_etcd()
        c.start_apiserver(name="apiserver-a")
        c.start_apiserver(name="apiserver-b")
        yield c


def _addresses(cluster: Cluster) -> tuple[str, str]:
    a, b = cluster.servers.split(",")
    return a, b


def _rv(obj: types_pb2.Pod) -> int:
    return int(obj.metadata.resource_version)


async def test_s_ha_1_a_write_on_one_apiserver_is_in_a_consistent_read_on_the_other(
    pair: Cluster,
) -> None:
    a, b = _addresses(pair)
    async with Client(a) as on_a, Client(b) as on_b:
        ns = await create_namespace(on_a, "ha-1")
        for i in range(30):
            written = await on_a.create(make_pod(f"p{i}").namespace(ns).obj())
            listed = await on_b.list(types_pb2.Pod, ns)  # resourceVersion "": consistent
            assert {p.metadata.name for p in listed.items} == {f"p{j}" for j in range(i + 1)}
            assert int(listed.resource_version) >= _rv(written)
            assert _rv(await on_b.get(types_pb2.Pod, f"p{i}", ns)) == _rv(written)
            # not older than the write's resourceVersion (a reflector's relist): B's cache
            # waits until it has reached it
            at_least = await on_b.list(
                types_pb2.Pod,
                ns,
                resource_version=str(_rv(written)),
                resource_version_match="NotOlderThan",
            )
            assert f"p{i}" in {p.metadata.name for p in at_least.items}
            assert int(at_least.resource_version) >= _rv(written)
            written.metadata.labels["seen"] = "b"
            updated = await on_b.update(written)  # a write on B, read back on A
            assert (await on_a.get(types_pb2.Pod, f"p{i}", ns)).metadata.labels == {"seen": "b"}
            again = await on_a.list(types_pb2.Pod, ns)
            mine = next(p for p in again.items if p.metadata.name == f"p{i}")
            assert _rv(mine) == _rv(updated)


async def test_s_ha_2_a_watch_moved_to_the_other_apiserver_resumes_without_loss_or_repeats(
    pair: Cluster,
) -> None:
    a, b = _addresses(pair)
    async with Client(a) as on_a, Client(b) as on_b:
        ns = await create_namespace(on_a, "ha-2")
        start = (await on_a.list(types_pb2.Pod, ns)).resource_version
        names = [f"w{i}" for i in range(40)]
        seen: list[tuple[str, int]] = []
        for i, name in enumerate(names[:20]):  # written on both
            await (on_a if i % 2 else on_b).create(make_pod(name).namespace(ns).obj())
        async with on_a.watch(types_pb2.Pod, ns, resource_version=start) as events:
            async for ev in events:
                assert ev.type == "ADDED", ev.type
                seen.append((ev.object.metadata.name, _rv(ev.object)))
                if len(seen) == 10:
                    break  # the watch ends here, as when apiserver A goes away
        for i, name in enumerate(names[20:]):
            await (on_a if i % 2 else on_b).create(make_pod(name).namespace(ns).obj())
        async with on_b.watch(types_pb2.Pod, ns, resource_version=str(seen[-1][1])) as events:
            with anyio.fail_after(20):
                async for ev in events:
                    assert ev.type == "ADDED", ev.type
                    seen.append((ev.object.metadata.name, _rv(ev.object)))
                    if len(seen) == len(names):
                        break
        assert [name for name, _ in seen] == names  # none lost, none repeated, in order
        revisions = [rv for _, rv in seen]
        assert revisions == sorted(set(revisions))


async def test_s_ha_3_a_watch_from_before_the_other_apiservers_window_is_gone(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    """B starts after etcd was compacted past the revision: its cache cannot replay from it,
    so the watch is 410 Gone (upstream's "too old resource version"), and the client relists
    and watches from the list's resourceVersion."""
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    a = cluster.start_apiserver(
        name="apiserver-a", extra_args=["--etcd-compaction-interval", "0.5"]
    )
    async with Client(cluster.server) as on_a:
        ns = await create_namespace(on_a, "ha-3")
        old = await on_a.create(make_pod("old").namespace(ns).obj())
        await on_a.create(make_pod("later").namespace(ns).obj())

        def compacted_past_old() -> bool:
            revisions = [
                int(line.rsplit(" ", 1)[1])
                for line in a.logs().splitlines()
                if "compacted etcd to revision" in line
            ]
            assert revisions and max(revisions) > _rv(old), f"not compacted past it: {revisions}"
            return True

        await eventually(compacted_past_old, timeout=20, interval=0.2)
    cluster.start_apiserver(name="apiserver-b")
    b = _addresses(cluster)[1]
    async with Client(b) as on_b:
        with pytest.raises(Expired) as gone:
            async with on_b.watch(types_pb2.Pod, ns, resource_version=str(_rv(old))) as events:
                async for _ in events:
                    pass
        assert "too old resource version" in str(gone.value)
        relisted = await on_b.list(types_pb2.Pod, ns)
        assert sorted(p.metadata.name for p in relisted.items) == ["later", "old"]
        await on_b.create(make_pod("after").namespace(ns).obj())
        async with on_b.watch(types_pb2.Pod, ns, resource_version=relisted.resource_version) as ev:
            with anyio.fail_after(10):
                first = await anext(aiter(ev))
        assert (first.type, first.object.metadata.name) == ("ADDED", "after")


async def test_s_ha_4_a_list_at_version_0_on_the_other_apiserver_is_a_whole_snapshot(
    pair: Cluster,
) -> None:
    """Not a consistent read: B answers from its cache without asking etcd, so the list may
    lag the write just made on A; whatever it holds is the set of pods at its own
    resourceVersion, and B's consistent read then holds the write."""
    a, b = _addresses(pair)
    before = _consistent_pod_reads(pair, "apiserver-b")
    async with Client(a) as on_a, Client(b) as on_b:
        ns = await create_namespace(on_a, "ha-4")
        created: dict[str, int] = {}
        for i in range(30):
            pod = await on_a.create(make_pod(f"z{i}").namespace(ns).obj())
            created[pod.metadata.name] = _rv(pod)
            snapshot = await on_b.list(types_pb2.Pod, ns, resource_version="0")
            at = int(snapshot.resource_version)
            assert {p.metadata.name for p in snapshot.items} == {
                n for n, rv in created.items() if rv <= at
            }, f"the list at {at} is not the pods written up to it"
        assert _consistent_pod_reads(pair, "apiserver-b") == before  # none was consistent
        fresh = await on_b.list(types_pb2.Pod, ns)
        assert len(fresh.items) == 30
        assert _consistent_pod_reads(pair, "apiserver-b") == before + 1


def _consistent_pod_reads(cluster: Cluster, apiserver: str) -> float:
    """apiserver_watch_cache_consistent_read_total of pods on `apiserver`, every outcome."""
    return sum(
        s.value
        for family in text_string_to_metric_families(cluster.component(apiserver).scrape())
        for s in family.samples
        if s.name == "apiserver_watch_cache_consistent_read_total"
        and s.labels["resource"] == "pods"
    )


async def test_s_ha_5_leader_election_and_fencing_across_two_apiservers(pair: Cluster) -> None:
    """Elector A (through apiserver A) leads with long timers: its renewals would not notice
    a takeover for 20 s; the lease moves through B, and A's next write through A is refused
    in its etcd transaction, which stops A leading; elector B (through B) then leads."""
    a, b = _addresses(pair)
    slow = LeaderElectionConfig(
        lock_namespace="kube-system",
        lock_name="ha-5",
        identity="elector-a",
        lease_duration=30.0,
        renew_deadline=20.0,
        retry_period=5.0,
        fencing=True,
    )
    quick = dataclasses.replace(
        slow, identity="elector-b", lease_duration=3.0, renew_deadline=2.0, retry_period=0.3
    )
    async with Client(a) as on_a, Client(b) as on_b:
        ns = await create_namespace(on_a, "ha-5")
        elector_a, elector_b = LeaderElector(on_a, slow), LeaderElector(on_b, quick)
        a_leads, taken, a_lost, b_leads = (anyio.Event() for _ in range(4))

        async def leading_a() -> None:
            await on_a.create(make_pod("by-a-1").namespace(ns).obj())
            a_leads.set()
            await taken.wait()
            await on_a.create(make_pod("by-a-2").namespace(ns).obj())  # refused: Fenced
            raise AssertionError("a write of an ended term landed")

        async def run_a() -> None:
            with pytest.raises(LeadershipLost):
                await elector_a.run(leading_a)
            a_lost.set()

        async def leading_b() -> None:
            await on_b.create(make_pod("by-b").namespace(ns).obj())
            b_leads.set()
            await anyio.sleep_forever()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_a)
            with anyio.fail_after(20):
                await a_leads.wait()
            tg.start_soon(elector_b.run, leading_b)

            def b_sees_a() -> bool:
                assert elector_b.leader == "elector-a", f"B's elector sees {elector_b.leader!r}"
                return True

            await eventually(b_sees_a, timeout=10)
            assert not elector_b.is_leader()

            async def take() -> None:  # through B, and never renewed: expires after 1 s
                lease = await on_b.get(types_pb2.Lease, "ha-5", "kube-system")
                lease.spec.holder_identity = "intruder"
                lease.spec.lease_transitions += 1
                lease.spec.lease_duration_seconds = 1
                await on_b.update(lease)

            await eventually(retrying_conflicts(take), timeout=10)
            taken.set()
            with anyio.fail_after(10):
                await a_lost.wait()
            with anyio.fail_after(20):
                await b_leads.wait()
            tg.cancel_scope.cancel()
        names = sorted(p.metadata.name for p in (await on_b.list(types_pb2.Pod, ns)).items)
        assert names == ["by-a-1", "by-b"]
        stale = Fence(FencingToken("kube-system", "ha-5", 0, "elector-a", enforce=True))
        with leading_as(stale), pytest.raises(Fenced):
            await on_b.create(make_pod("stale").namespace(ns).obj())


async def test_s_ha_6_the_virtual_clock_is_one_cluster_time_on_both_apiservers(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = kemu_cluster_factory(clock=ClockMode.VIRTUAL)
    cluster.start_etcd()
    cluster.start_apiserver(name="apiserver-a")
    cluster.start_apiserver(name="apiserver-b")
    a, b = _addresses(cluster)
    async with Client(a) as on_a, Client(b) as on_b:
        for setter, follower, rate in ((on_a, on_b, 0.0), (on_b, on_a, 0.0), (on_a, on_b, 7.0)):
            held = (await setter.set_clock_rate(rate)).segment

            async def follows(
                follower: Client = follower, held: object = held
            ) -> tuple[float, float]:
                status = await follower.clock_status()
                assert status.segment == held, f"{status.segment} is not {held}"
                return status.now, status.segment.base_virtual

            now, base = await eventually(follows, timeout=10)
            if rate == 0:  # held: one instant, the same on both
                assert now == base == (await setter.clock_status()).now
        mine, theirs = await on_a.clock_status(), await on_b.clock_status()
        assert mine.segment == theirs.segment and mine.segment.rate == 7.0

        async def ahead_of_wall_time() -> float:
            now = (await on_a.clock_status()).now
            assert now - time.time() > 20, "the cluster clock is not 20 s ahead of the wall yet"
            return now

        await eventually(ahead_of_wall_time, timeout=30, interval=0.3)
        # A kubelet through B keeps its node's lease in the cluster's time, as A reads it.
        cluster.component_server = b
        cluster.start_kubelet("n1")

        async def renewed_in_cluster_time() -> bool:
            lease = await on_a.get(types_pb2.Lease, "n1", "kube-node-lease")
            renewed = lease.spec.renew_time.ToNanoseconds() / 1e9
            now = (await on_a.clock_status()).now
            assert renewed > time.time() + 20, "renewed in wall time, not the cluster's"
            assert now - 11 <= renewed <= now, (renewed, now)  # within its 10 s period
            return True

        await eventually(renewed_in_cluster_time, timeout=30, interval=0.3)

        async def max_refused() -> bool:
            with pytest.raises(BadRequest) as refused:
                await on_a.set_clock_rate(math.inf)
            assert "1 other apiserver(s) serve this one" in str(refused.value)
            return True

        await eventually(max_refused, timeout=15, interval=0.5)


async def test_s_ha_7_a_scheduler_and_kubelets_spread_over_two_apiservers_run_pods(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver(name="apiserver-a")
    cluster.start_apiserver(name="apiserver-b")
    a, b = _addresses(cluster)
    cluster.spread_components()
    cluster.start_scheduler()
    for node in ("n1", "n2", "n3"):
        cluster.start_kubelet(node)

    def server_of(name: str) -> str:
        argv = cluster.processes[name].argv
        return argv[argv.index("--server") + 1]

    # round-robin: each process's first apiserver, the other behind it for failover
    assert [server_of(n) for n in ("scheduler", "kubelet-n1", "kubelet-n2", "kubelet-n3")] == [
        f"{a},{b}", f"{b},{a}", f"{a},{b}", f"{b},{a}",
    ]  # fmt: skip
    async with Client(b) as on_b:
        ns = await create_namespace(on_b, "ha-7")
        names = [f"r{i}" for i in range(12)]
        for name in names:
            await on_b.create(make_pod(name).namespace(ns).req(cpu="100m").obj())

        async def all_running() -> set[str]:
            pods = (await on_b.list(types_pb2.Pod, ns)).items
            waiting = [p.metadata.name for p in pods if p.status.phase != "Running"]
            assert len(pods) == len(names) and not waiting, f"not Running yet: {waiting}"
            return {p.spec.node_name for p in pods}

        nodes = await eventually(all_running, timeout=60, interval=0.3)
        assert nodes <= {"n1", "n2", "n3"}
