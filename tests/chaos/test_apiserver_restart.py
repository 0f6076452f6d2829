"""The apiserver and etcd die and come back: nothing stored is lost, clients reconnect, watches
resume (or relist when their resourceVersion was compacted away)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.informer import Informer
from kemu.machinery.errors import Gone
from kemu.testing import eventually, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.namespaces import ensure_namespace

pytestmark = [pytest.mark.integration, pytest.mark.chaos, pytest.mark.anyio]

NS = "chaos"


async def _names(client: Client) -> set[str]:
    return {p.metadata.name for p in (await client.list_all(types_pb2.Pod, NS)).items}


def _converged(informer: Informer[types_pb2.Pod], client: Client) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        stored = {
            p.metadata.name: p.metadata.resource_version
            for p in (await client.list_all(types_pb2.Pod, NS)).items
        }
        cached = {p.metadata.name: p.metadata.resource_version for p in informer.lister.list(NS)}
        assert cached == stored
        return True

    return check


async def _churn(client: Client, prefix: str) -> None:
    """Creates, updates and deletes, so that a resumed watch has all three to deliver."""
    for i in range(5):
        await client.create(make_pod(f"{prefix}{i}").namespace(NS).obj())
    p = await client.get(types_pb2.Pod, f"{prefix}0", NS)
    p.metadata.labels["changed"] = "yes"
    await client.update(p)
    await client.delete(types_pb2.Pod, f"{prefix}1", NS)


async def test_apiserver_sigkill_restart_loses_nothing_and_watches_resume(kemu_cluster_factory):
    cluster: Cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    async with Client(cluster.server, timeout=30.0) as client, anyio.create_task_group() as tg:
        await ensure_namespace(client, NS)
        for i in range(20):
            await client.create(make_pod(f"before{i}").namespace(NS).obj())
        informer = Informer(client, types_pb2.Pod, namespace=NS)
        await tg.start(informer.run)
        await eventually(_converged(informer, client), timeout=10)

        cluster.kill("apiserver")
        cluster.restart("apiserver")
        await _churn(client, "after")

        assert {f"before{i}" for i in range(20)} <= await _names(client)
        await eventually(_converged(informer, client), timeout=15)
        # The restarted cache replays history, so the informer resumed without a relist.
        assert informer.lists == 1
        tg.cancel_scope.cancel()


async def test_etcd_sigkill_restart_on_the_same_data_keeps_everything(kemu_cluster_factory):
    cluster: Cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    async with Client(cluster.server, timeout=30.0) as client, anyio.create_task_group() as tg:
        await ensure_namespace(client, NS)
        for i in range(10):
            await client.create(make_pod(f"before{i}").namespace(NS).obj())
        informer = Informer(client, types_pb2.Pod, namespace=NS)
        await tg.start(informer.run)

        cluster.kill("etcd")
        cluster.restart("etcd")
        await _churn(client, "after")

        names = await _names(client)
        assert {f"before{i}" for i in range(10)} <= names
        assert {"after0", "after2", "after3", "after4"} <= names and "after1" not in names
        await eventually(_converged(informer, client), timeout=20)
        tg.cancel_scope.cancel()


async def test_watch_from_a_compacted_revision_is_gone_and_informers_relist(kemu_cluster_factory):
    cluster: Cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    # A second apiserver on the same etcd keeps the cluster writable while the first is down.
    other = cluster.start_apiserver(name="apiserver-b")
    other_server = f"127.0.0.1:{other.port}"
    async with (
        Client(cluster.server, timeout=30.0) as client,
        Client(other_server, timeout=30.0) as writer,
        anyio.create_task_group() as tg,
    ):
        await ensure_namespace(client, NS)
        first = await client.create(make_pod("first").namespace(NS).obj())
        informer = Informer(client, types_pb2.Pod, namespace=NS)
        await tg.start(informer.run)
        await eventually(_converged(informer, client), timeout=10)

        cluster.kill("apiserver")
        await _churn(writer, "gone")
        revision = (await writer.list(types_pb2.Pod, NS)).resource_version
        cluster.etcd.etcdctl("compact", revision)
        cluster.restart("apiserver")

        with pytest.raises(Gone):
            async with client.watch(
                types_pb2.Pod, NS, resource_version=first.metadata.resource_version
            ) as events:
                await anext(events)
        await eventually(_converged(informer, client), timeout=20)
        assert informer.lists == 2  # the resume was Gone, so it relisted once
        assert informer.lister.get("gone1", NS) is None
        changed = informer.lister.get("gone0", NS)
        assert changed is not None and changed.metadata.labels["changed"] == "yes"
        tg.cancel_scope.cancel()
