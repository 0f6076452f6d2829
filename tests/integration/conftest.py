"""Fixtures for integration tests: real etcd, apiserver and components.

`kemu_cluster` (function scope) is a running cluster shaped by the test's
`@pytest.mark.kemu(...)`; `kemu_cluster_factory` builds empty clusters under the test's tmp_path
for tests that start their own processes; both always stop them, and the log of every process
of a failed test is added to its report (see kemu.testing.pytest_plugin, which also provides
`rng`). Mark the tests `@pytest.mark.integration`.

    @pytest.mark.integration
    @pytest.mark.kemu(nodes=2, gates={"SchedulerAsyncPreemption": True})
    def test_preemption_nominates_the_node(kemu_cluster): ...

    @pytest.mark.integration
    def test_preemption_nominates_the_node(kemu_cluster_factory):
        cluster = kemu_cluster_factory()
        cluster.start_etcd()
        cluster.start_apiserver(feature_gates={"SchedulerAsyncPreemption": True})
        cluster.start_scheduler()
        cluster.start_kubelet("n1")
        ...

Sharing one cluster across a module's tests saves the start-up per test. Use a module-scoped
sync fixture (sync, so that there is no event-loop scope to match with the tests; async tests
reach the cluster over the network through `cluster.server`), and keep the tests independent
by giving each its own objects: a namespace from `create_namespace(client, prefix)` (the
apiserver refuses objects in a namespace that does not exist) or names from
`unique_name(prefix)`. The failure
hook finds the shared `Cluster` among the test's fixture values and prints its logs too.

    @pytest.fixture(scope="module")
    def cluster(tmp_path_factory):
        with Cluster(tmp_path_factory.mktemp("cluster")) as c:
            c.start_etcd()
            c.start_apiserver()
            c.start_scheduler()
            c.start_kubelet("n1")
            yield c

    @pytest.mark.integration
    @pytest.mark.anyio
    async def test_pod_is_bound(cluster):
        async with Client(cluster.server) as c:
            ns = await create_namespace(c, "ns")
            await c.create(make_pod("p").namespace(ns).obj())
        await eventually(bound, timeout=10)

A test that waits on the cluster's timers (grace periods, the autoscaler's, the node
monitor's) runs on the virtual clock (issue #30): `Cluster(root, clock=ClockMode.VIRTUAL)`,
then either the module's tests request `rate_max` (the event-driven clock: timers fire as soon
as the cluster is idle; windows with kemu.testing.cluster_time.elapse), or they hold the clock
and move it themselves (`set_clock_rate(0)`, then cluster_time.advance_to).
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator

import pytest

from kemu.client.client import Client
from kemu.testing import Cluster

# The fixtures (kemu_cluster, kemu_cluster_factory, rng) and the log-printing hook come from
# kemu.testing.pytest_plugin, installed with kemu (its pytest11 entry point).


@pytest.fixture(scope="module")
async def rate_max(cluster: Cluster) -> AsyncIterator[None]:
    """The module's `cluster` (on the virtual clock) at rate max for the whole module (a
    virtual cluster starts at rate 1)."""
    async with Client(cluster.server) as api:
        await api.set_clock_rate(math.inf)
        yield
