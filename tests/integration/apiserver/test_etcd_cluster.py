"""A 3-member etcd cluster under the apiserver (given every member in --etcd-servers): one
member SIGKILLed during writes and restarted on its data dir; the cluster keeps serving on a
quorum of two, no acknowledged write is lost, and the restarted member catches up. A watch on
a member cut from its peers ends ("no leader") instead of staying open and silent."""

from __future__ import annotations

import time
from collections.abc import Callable

import anyio
import pytest

from apiserver.storage.etcd import EtcdStore
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import ApiError, Unavailable
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.etcd import CRASH_CONSISTENT, Etcd
from kemu.testing.faultproxy import FaultProxy, Mode, Rule
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _leader(members: list[Etcd]) -> Etcd:
    ids = {m.status()["member_id"]: m for m in members}
    return ids[members[0].status()["leader"]]


async def _caught_up(restarted: Etcd, others: list[Etcd]) -> None:
    async def same_revision() -> bool:
        mine = restarted.status()["revision"]
        theirs = max(m.status()["revision"] for m in others)
        assert mine == theirs, f"{restarted.name} at revision {mine}, the others at {theirs}"
        return True

    await eventually(same_revision, timeout=20, interval=0.2)


async def test_the_storage_layer_fails_over_between_etcd_members(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd(members=3, extra_args=CRASH_CONSISTENT)
    members = cluster.etcd_members
    store = EtcdStore([m.url for m in members], timeout=5.0)
    acked: dict[str, int] = {}
    failed = 0

    async def write(i: int) -> None:
        nonlocal failed
        key = f"/registry/test/k{i:04d}"
        try:
            acked[key] = await store.create(key, b"v")
        except Unavailable:
            failed += 1  # not acknowledged: may or may not be stored

    try:
        for i in range(50):
            await write(i)
        victim = _leader(members)  # the hardest one: a new leader must be elected
        victim.kill()
        for i in range(50, 150):
            await write(i)
        victim.restart()
        victim.wait_ready(timeout=20)
        for i in range(150, 200):
            await write(i)
        # Written through the two survivors while one member was down: a quorum of two.
        assert sum(1 for k in acked if 50 <= int(k[-4:]) < 150) >= 90, failed
        listed = await store.range("/registry/test/")
        stored = {kv.key: kv.mod_revision for kv in listed.kvs}
        assert {k: stored.get(k) for k in acked} == acked
        await _caught_up(victim, [m for m in members if m is not victim])
    finally:
        await store.close()


async def test_apiserver_on_three_etcd_members_keeps_every_acknowledged_write(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd(members=3, extra_args=CRASH_CONSISTENT)
    cluster.start_apiserver()
    assert cluster.etcd_servers.count(",") == 2
    members = cluster.etcd_members
    acked: dict[str, str] = {}
    failed: list[str] = []
    async with Client(cluster.server, timeout=10.0) as client:
        ns = await create_namespace(client, "etcd3")
        stop = anyio.Event()

        async def writer(worker: int) -> None:
            i = 0
            while not stop.is_set():
                name = f"w{worker}-{i:04d}"
                i += 1
                try:
                    pod = await client.create(make_pod(name).namespace(ns).obj())
                except ApiError as e:
                    failed.append(f"{name}: {e}")
                    continue
                acked[name] = pod.metadata.resource_version

        async with anyio.create_task_group() as tg:
            for worker in range(3):
                tg.start_soon(writer, worker)
            await eventually(lambda: len(acked) >= 30, timeout=20)
            victim = members[1]
            victim.kill()
            before = len(acked)
            # The apiserver keeps writing on the quorum of two while the member is down.
            await eventually(lambda: len(acked) >= before + 30, timeout=20)
            await anyio.to_thread.run_sync(victim.restart)
            await anyio.to_thread.run_sync(lambda: victim.wait_ready(timeout=20))
            after = len(acked)
            await eventually(lambda: len(acked) >= after + 30, timeout=20)
            stop.set()
        stored = {
            p.metadata.name: p.metadata.resource_version
            for p in (await client.list_all(types_pb2.Pod, ns)).items
        }
        lost = {name: rv for name, rv in acked.items() if stored.get(name) != rv}
        assert not lost, f"acknowledged writes lost or changed: {lost} ({len(failed)} failed)"
    await _caught_up(victim, [m for m in members if m is not victim])


async def test_the_storage_layers_watch_on_a_member_cut_from_its_peers_ends_no_leader(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    # Upstream's etcd3 watcher requires a leader (clientv3.WithRequireLeader): etcd ends such a
    # watch once its member has had no leader for three election timeouts, and the watch
    # cache resumes on another member. Without it, a watch on the lone member stays open and
    # silent for the whole cut while the quorum goes on writing.
    # A cluster of its own: a member healed after a cut may time writes out for a while
    # (test_network_faults.py's client fixture), which would reach into the next test.
    cluster = kemu_cluster_factory(proxy=FaultProxy())
    cluster.start_etcd(members=3)
    assert cluster.proxy is not None
    lone, peers = cluster.etcd_members[0], [m.name for m in cluster.etcd_members[1:]]
    store = EtcdStore([lone.url], timeout=5.0)
    rules = [Rule(Mode.CUT, src=lone.name, dst=p) for p in peers]
    rules += [Rule(Mode.CUT, src=p, dst=lone.name) for p in peers]
    try:
        start = await store.current_revision()
        for rule in rules:
            cluster.proxy.add(rule)
        cut = time.monotonic()
        with anyio.fail_after(30), pytest.raises(Unavailable, match="no leader"):
            async for _ in store.watch("/registry/", start + 1):
                pass
        assert time.monotonic() - cut < 30
    finally:
        for rule in rules:
            cluster.proxy.remove(rule)
        await store.close()
