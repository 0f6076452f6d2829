"""A leader that loses its lease gets back in line without taking the local cluster down
(issue #28 item 5): the component stops leading and starts again from nothing, in the same
process (kemu.component.runner.RestartInPlace), a candidate that leads again once the lease is
free. Upstream's components exit there and are restarted by what runs them; under honcho an
exiting process stops every other one."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster, make_pod
from kemu.testing.eventually import eventually, retrying_conflicts

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ELECTION = [
    "--leader-elect-lease-duration", "2s",
    "--leader-elect-renew-deadline", "1s",
    "--leader-elect-retry-period", "200ms",
]  # fmt: skip
LEADER = 'leader_election_master_status{name="kube-scheduler"} 1.0'


async def test_a_scheduler_whose_lease_is_taken_restarts_in_place_and_leads_again(
    kemu_cluster_factory: Callable[..., Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    cluster.start_kubelet("n1")
    scheduler = cluster.start_scheduler(leader_elect=True, extra_args=ELECTION)
    proc = cluster.processes["scheduler"]
    pid = proc.pid

    def leading() -> bool:
        assert LEADER in scheduler.scrape(), "not leading"
        return True

    await eventually(leading, timeout=20)
    async with Client(cluster.server) as client:

        async def take() -> None:
            # (the leader renews every 200ms: a renewal between the read and the write is a
            # Conflict, and the lease is read again)
            lease = await client.get(types_pb2.Lease, "kube-scheduler", "kube-system")
            lease.spec.holder_identity = "intruder"
            lease.spec.lease_transitions += 1
            await client.update(lease)  # and never renewed: it expires after 2s

        await eventually(retrying_conflicts(take), timeout=10)

        def restarted() -> bool:
            log = proc.logs()
            assert "starting again as a fresh process" in log, "no restart yet"
            assert log.count("starting kube-scheduler") == 2, "not started again yet"
            # (its metrics endpoint listens a moment after the start line: scraped before
            # that, the connection is refused)
            assert log.count("serving metrics and health") == 2, "not serving again yet"
            return True

        await eventually(restarted, timeout=20)
        assert proc.running and proc.pid == pid
        await eventually(leading, timeout=20)
        await client.create(make_pod("after").obj())

        async def bound() -> bool:
            pod = await client.get(types_pb2.Pod, "after")
            assert pod.spec.node_name == "n1", pod.spec.node_name
            return True

        await eventually(bound, timeout=20)
        lease = await client.get(types_pb2.Lease, "kube-scheduler", "kube-system")
        assert lease.spec.holder_identity not in ("", "intruder")
