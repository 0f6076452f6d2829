"""DefaultPreemption scenarios of reference §6 (S-PRE-*) on real processes: etcd, apiserver,
controller-manager (PDB status), two schedulers (asynchronous preemption on, as at 1.37, and off)
and one real kubelet per node, so that victims terminate gracefully."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kemu.testing import Cluster
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

SYNC_SCHEDULER = "sync-scheduler"
SYNC_PROFILE = f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {SYNC_SCHEDULER}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("preemption")
    sync_config = root / "sync.yaml"
    sync_config.write_text(SYNC_PROFILE)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_controllermanager()
        c.start_scheduler(extra_args=["--seed", "1"])
        c.start_scheduler(
            name="scheduler-sync",
            config=str(sync_config),
            feature_gates={"SchedulerAsyncPreemption": False},
            extra_args=["--seed", "1"],
        )
        yield c


@pytest.mark.parametrize("scheduler", ["default-scheduler", SYNC_SCHEDULER])
async def test_s_pre_1_basic_preemption(cluster: Cluster, scheduler: str) -> None:
    async with Scenario.open(cluster, "s-pre-1") as s:
        await s.nodes("node1", cpu="500m", memory="500", pods="32")
        await s.run(
            s.pod("victim-pod", priority=100, cpu="400m", memory="200").scheduler_name(scheduler)
        )
        await s.create(
            s.pod("preemptor-pod", priority=300, cpu="300m", memory="200").scheduler_name(scheduler)
        )
        await s.wait_nominated("preemptor-pod", "node1")
        await s.wait_gone("victim-pod")
        assert await s.wait_bound("preemptor-pod") == s.node_name("node1")
        preempted = await s.events("Preempted", "victim-pod")
        assert preempted and preempted[0].message.startswith("Preempted by pod ")
