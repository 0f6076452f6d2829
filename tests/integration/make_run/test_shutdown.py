"""`make run`'s Ctrl-C on real processes: honcho sends SIGTERM to every process at once and
SIGKILLs what is still running 5 s later. Every component must be gone well before that, with
exit code 0 and no traceback, even though the apiserver drains at the same moment as its
clients release their leases and close their watches."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.testing import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.processes import url_ok

pytestmark = [pytest.mark.integration]

# honcho's kill timeout is 5 s; leave a margin for a loaded machine.
EXIT_BOUND = 4.0


def _leading(cluster: Cluster, name: str, lease: str) -> bool:
    return (
        f'leader_election_master_status{{name="{lease}"}} 1.0' in cluster.component(name).scrape()
    )


def test_sigterm_to_every_process_at_once_exits_cleanly_within_the_bound(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    cluster.start_scheduler(leader_elect=True)
    cluster.start_controllermanager(leader_elect=True)
    cluster.start_kubelet("n1")

    def leaders() -> bool:
        return _leading(cluster, "scheduler", "kube-scheduler") and _leading(
            cluster, "controllermanager", "kube-controller-manager"
        )

    eventually_sync(leaders, timeout=20)
    assert url_ok(cluster.component("kubelet-n1").readyz_url)

    procs = list(cluster.processes.values())
    start = time.monotonic()
    for proc in procs:  # as honcho does: every process, at once
        assert proc.pid is not None
        os.killpg(proc.pid, signal.SIGTERM)
    while any(p.running for p in procs) and time.monotonic() - start < EXIT_BOUND:
        time.sleep(0.02)
    took = {p.name: p.returncode for p in procs}
    still_running = [p.name for p in procs if p.running]
    elapsed = time.monotonic() - start
    for proc in procs:
        proc.stopped_deliberately = True  # the cluster's stop() must not report them again
    assert not still_running, (
        f"still running {EXIT_BOUND:g}s after SIGTERM (honcho would SIGKILL them): "
        f"{still_running}; exit codes so far: {took}"
    )
    components = [p for p in procs if p.name != "etcd"]
    assert {p.name: p.returncode for p in components} == {p.name: 0 for p in components}, (
        f"exit codes after SIGTERM (all gone in {elapsed:.2f}s)"
    )
    for proc in components:
        log = proc.logs()
        assert "Traceback" not in log, f"{proc.name} logged a traceback:\n{proc.log_tail(60)}"
        assert "did not stop within" not in log, proc.log_tail(30)
    # etcd stopping with the apiserver is expected then, not worth a warning.
    drain = cluster.component("apiserver").logs().split("draining: no new calls", 1)[1]
    assert " lost etcd " not in drain, drain


@pytest.mark.anyio
async def test_a_leader_stopped_while_the_apiserver_runs_releases_its_lease(
    kemu_cluster_factory: Callable[[], Cluster],
) -> None:
    cluster = kemu_cluster_factory()
    cluster.start_etcd()
    cluster.start_apiserver()
    cluster.start_scheduler(leader_elect=True)
    eventually_sync(lambda: _leading(cluster, "scheduler", "kube-scheduler"), timeout=20)

    assert cluster.terminate("scheduler", timeout=EXIT_BOUND) == 0
    assert "released lease kube-system/kube-scheduler" in cluster.component("scheduler").logs()

    async with Client(cluster.server) as c:
        lease = await c.get(types_pb2.Lease, "kube-scheduler", "kube-system")
    assert lease.spec.holder_identity == ""  # a successor need not wait for it to expire
