"""Consistent lists (resourceVersion ""), as upstream's cacher serves them
(k8s.io/apiserver/pkg/storage/cacher/delegator.go, KEP-2340): from ConsistentListFromCache
(beta, on, 1.31) the watch cache answers once it has reached etcd's current revision, counted in
apiserver_watch_cache_consistent_read_total; before, etcd answers. Either way a list made right
after a write holds it: the read is consistent."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


def _consistent_reads(cluster: Cluster) -> dict[tuple[str, str, str], float]:
    return {
        (s.labels["resource"], s.labels["success"], s.labels["fallback"]): s.value
        for family in text_string_to_metric_families(cluster.component("apiserver").scrape())
        for s in family.samples
        if s.name == "apiserver_watch_cache_consistent_read_total"
    }


@pytest.mark.parametrize(
    ("version", "from_cache"), [("1.30", False), ("1.31", True), ("1.37", True)]
)
async def test_a_list_at_the_latest_version_holds_the_write_before_it(
    kemu_cluster_factory: Callable[[], Cluster], version: str, from_cache: bool
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver(emulated_version=version)
    async with Client(cluster.server) as client:
        for i in range(20):
            await client.create(make_pod(f"p{i}").obj())
            listed = await client.list(types_pb2.Pod, "default")
            assert {p.metadata.name for p in listed.items} == {f"p{j}" for j in range(i + 1)}
        # a page of a consistent list, and a list at "0", are not consistent reads
        await client.list(types_pb2.Pod, "default", limit=5)
        await client.list(types_pb2.Pod, "default", resource_version="0")
    reads = _consistent_reads(cluster)
    if from_cache:
        assert reads == {("pods", "true", "false"): 20.0}
    else:
        assert reads == {}
