"""The controller-manager on real processes: the disruption controller keeps PDB status true,
eviction honours it, and leader election hands the work over when the leader dies."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.component.featuregate import SCHEDULER_ASYNC_PREEMPTION
from kemu.machinery.errors import TooManyRequests
from kemu.testing import Cluster, eventually, make_pdb, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]


ELECTION = [
    "--leader-elect-lease-duration", "3s",
    "--leader-elect-renew-deadline", "2s",
    "--leader-elect-retry-period", "500ms",
]  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("kcm")) as c:
        c.start_etcd()
        c.start_apiserver()
        # Pods here are bound to node names that do not exist; pod GC would remove them. A
        # 3 s lease (upstream's 15 s is the default): the standby takes over within seconds.
        args = ["--controllers", "*,-podgc", *ELECTION]
        c.start_controllermanager(name="kcm-a", leader_elect=True, extra_args=args)
        c.start_controllermanager(name="kcm-b", leader_elect=True, extra_args=args)
        yield c


async def _running_ready_pod(c: Client, ns: str, name: str, labels: dict[str, str]) -> None:
    await c.create(make_pod(name).namespace(ns).labels(labels).obj())
    await c.bind(ns, name, "node-1")
    await c.patch(
        types_pb2.Pod,
        name,
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        ns,
        subresource="status",
    )


def _status_is(
    c: Client, ns: str, *, healthy: int, desired: int, expected: int, allowed: int
) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        pdb = await c.get(types_pb2.PodDisruptionBudget, "pdb", ns)
        st = pdb.status
        assert (
            st.current_healthy,
            st.desired_healthy,
            st.expected_pods,
            st.disruptions_allowed,
        ) == (
            healthy,
            desired,
            expected,
            allowed,
        )
        assert st.observed_generation == pdb.metadata.generation
        return True

    return check


async def test_disruption_controller_keeps_pdb_status_and_eviction_honours_it(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "pdb")
        for name in ("a", "b", "c"):
            await _running_ready_pod(c, ns, name, {"app": "web"})
        await c.create(make_pdb("pdb").namespace(ns).selector(app="web").min_available(2).obj())
        await eventually(_status_is(c, ns, healthy=3, desired=2, expected=3, allowed=1), timeout=10)

        await c.evict(ns, "a")  # allowed: one disruption
        # The eviction used the disruption; the controller counts the terminating pod out.
        await eventually(_status_is(c, ns, healthy=2, desired=2, expected=3, allowed=0), timeout=10)
        with pytest.raises(TooManyRequests):
            await c.evict(ns, "b")
        assert not (await c.get(types_pb2.Pod, "b", ns)).metadata.HasField("deletion_timestamp")

        # A new ready pod makes room again.
        await _running_ready_pod(c, ns, "d", {"app": "web"})
        await eventually(_status_is(c, ns, healthy=3, desired=2, expected=4, allowed=1), timeout=10)
        await c.evict(ns, "b")


async def test_percentage_max_unavailable(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "pdb")
        for i in range(4):
            await _running_ready_pod(c, ns, f"p{i}", {"app": "db"})
        await c.create(
            make_pdb("pdb").namespace(ns).selector(app="db").max_unavailable("50%").obj()
        )
        await eventually(_status_is(c, ns, healthy=4, desired=2, expected=4, allowed=2), timeout=10)


async def test_version_lists_the_controller_managers(cluster):
    async with Client(cluster.server, timeout=10.0) as c:

        async def both_registered() -> bool:
            info = await c.version()
            kcm = [x for x in info.components if x.component == "kube-controller-manager"]
            assert len(kcm) == 2, [x.identity for x in info.components]
            assert all(x.emulated_version == "1.37" for x in kcm)
            assert any(g.name == SCHEDULER_ASYNC_PREEMPTION for g in kcm[0].feature_gates)
            return True

        await eventually(both_registered, timeout=15)


async def test_leader_killed_the_standby_takes_over(cluster):
    async with Client(cluster.server, timeout=10.0) as c:
        lease = await c.get(types_pb2.Lease, "kube-controller-manager", "kube-system")
        leader = lease.spec.holder_identity
        assert leader
        victim = None
        for name in ("kcm-a", "kcm-b"):
            if 'leader_election_master_status{name="kube-controller-manager"} 1.0' in (
                cluster.component(name).scrape()
            ):
                victim = name
        assert victim is not None, leader
        cluster.kill(victim)

        async def taken_over() -> bool:
            now = await c.get(types_pb2.Lease, "kube-controller-manager", "kube-system")
            assert now.spec.holder_identity and now.spec.holder_identity != leader
            return True

        await eventually(taken_over, timeout=30)
        # The new leader reconciles: a PDB created now gets its status.
        ns = await create_namespace(c, "pdb")
        await _running_ready_pod(c, ns, "x", {"app": "x"})
        await c.create(make_pdb("pdb").namespace(ns).selector(app="x").min_available(0).obj())
        await eventually(_status_is(c, ns, healthy=1, desired=0, expected=1, allowed=1), timeout=15)
        cluster.restart(victim)
