"""Workload-aware preemption (KEP-5710) on real processes: S-PG-7 and S-PG-8 (docs/scheduler.md
"Pod groups").

A 1.37 apiserver, a 1.37 scheduler with GenericWorkload (WorkloadAwarePreemption folded into
it) and a 1.36 one with GenericWorkload, GangScheduling and WorkloadAwarePreemption. Nodes are bare Node objects (no kubelet): the victims have a grace period of 0, so
their deletion is immediate; "bound" is spec.nodeName set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    WORKLOAD_AWARE_PREEMPTION,
)
from kemu.testing import Cluster
from kemu.testing.builders import make_gang_pod_group
from kemu.testing.invariants import record_pods
from kemu.testing.scenarios import Scenario
from tests.integration.scheduler.profile_schedulers import start_profile_scheduler

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PROCESS: Final = "scheduler-1-37"
PROFILE: Final = "wap-1-37-scheduler"
PROCESS_136: Final = "scheduler-1-36"
PROFILE_136: Final = "wap-1-36-scheduler"
SCHEDULERS: Final[tuple[tuple[str, str, str, dict[str, bool]], ...]] = (
    (PROCESS, PROFILE, "1.37", {GENERIC_WORKLOAD: True}),
    (
        PROCESS_136,
        PROFILE_136,
        "1.36",
        {GENERIC_WORKLOAD: True, GANG_SCHEDULING: True, WORKLOAD_AWARE_PREEMPTION: True},
    ),
)
LOW: Final = 10
MID: Final = 100
HIGH: Final = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("pod-group-preemption"))
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(
            feature_gates={GENERIC_WORKLOAD: True},
            runtime_config={"scheduling.k8s.io/v1beta1": "true"},
        )
        for process, profile, version, gates in SCHEDULERS:
            start_profile_scheduler(c, root, process, profile, version, gates)
        yield c


def member(
    s: Scenario, name: str, group: str, priority: int, cpu: str = "1", profile: str = PROFILE
) -> types_pb2.Pod:
    pod = s.pod(name, priority=priority, cpu=cpu, memory="10").scheduler_name(profile)
    return pod.pod_group(group).grace(0).obj()


async def create_gang(
    s: Scenario, name: str, min_count: int, priority: int, *, disrupt_all: bool
) -> None:
    """A gang PodGroup whose priorityClassName gives it `priority` (a group's priority is
    its PodGroup's, resolved by admission as a pod's)."""
    pg = make_gang_pod_group(name, min_count, s.ns)
    pg.spec.priority_class_name = await s.priority_class(priority)
    if disrupt_all:
        pg.spec.disruption_mode.all.SetInParent()
    await s.client.create(pg)


def workload_preemption_attempts(cluster: Cluster, process: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        if family.name == "scheduler_workload_preemption_attempts":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    out[sample.labels["result"]] = sample.value
    return out


@pytest.mark.parametrize(("process", "profile"), [(PROCESS, PROFILE), (PROCESS_136, PROFILE_136)])
async def test_s_pg_7_gang_preempts_a_lower_priority_gang(
    cluster: Cluster, process: str, profile: str
) -> None:
    """1.37 (GenericWorkload) and 1.36 (WorkloadAwarePreemption): a node of 3 cpu full with a low-priority gang of 3 (disruptionMode All, 1 cpu each); a
    high-priority gang of 3 (minCount 3) does not fit: its pod-group cycle preempts the whole
    low gang, nominates each of its members to the node, and once the victims are gone binds
    them there; binding clears the nominations."""
    before = workload_preemption_attempts(cluster, process)
    async with Scenario.open(cluster, "s-pg-7") as s:
        n1 = await s.bare_node("n1", cpu="3", memory="1Gi", pods="32")
        await create_gang(s, "low", 3, LOW, disrupt_all=True)
        low = ("low-a", "low-b", "low-c")
        for name in low:
            await s.create(member(s, name, "low", LOW, profile=profile))
        for name in low:
            assert await s.wait_bound(name) == n1
        async with record_pods(s.client, s.ns) as history:
            await create_gang(s, "high", 3, HIGH, disrupt_all=False)
            high = ("high-a", "high-b", "high-c")
            for name in high:
                await s.create(member(s, name, "high", HIGH, profile=profile))
            for name in low:
                await s.wait_gone(name)
            for name in high:
                assert await s.wait_bound(name) == n1
        nominated_before_bound = {
            v.pod.metadata.name
            for versions in history.versions.values()
            for v in versions
            if v.pod.status.nominated_node_name == n1 and not v.pod.spec.node_name
        }
        assert nominated_before_bound == set(high)

        async def cleared() -> bool:
            pods = await s.pods()
            return all(not pods[name].status.nominated_node_name for name in high)

        await s.eventually(cleared)
        after = workload_preemption_attempts(cluster, process)
        assert after.get("Success", 0) - before.get("Success", 0) >= 1


async def test_s_pg_8_a_disruption_mode_all_victim_goes_whole(cluster: Cluster) -> None:
    """The victim unit: three nodes of 1 cpu, full with a low-priority gang of 2
    (disruptionMode All, one member on each of two nodes) and a pod of a middle priority
    (its own group, Single); a high-priority group of one 1-cpu member needs one node. The
    middle pod is reprieved first (more important), the gang cannot be (the member would not
    fit): the whole gang is preempted, its member on the node the preemptor does not take
    too; the middle pod stays."""
    async with Scenario.open(cluster, "s-pg-8") as s:
        nodes = {await s.bare_node(n, cpu="1", memory="1Gi", pods="32") for n in ("n1", "n2", "n3")}
        await create_gang(s, "low", 2, LOW, disrupt_all=True)
        await s.create(member(s, "low-a", "low", LOW))
        await s.create(member(s, "low-b", "low", LOW))
        low_nodes = {await s.wait_bound("low-a"), await s.wait_bound("low-b")}
        assert len(low_nodes) == 2
        await create_gang(s, "mid", 1, MID, disrupt_all=False)
        await s.create(member(s, "mid-a", "mid", MID))
        mid_node = await s.wait_bound("mid-a")
        assert nodes == low_nodes | {mid_node}
        await create_gang(s, "high", 1, HIGH, disrupt_all=False)
        await s.create(member(s, "high-a", "high", HIGH))
        await s.wait_gone("low-a")
        await s.wait_gone("low-b")
        assert await s.wait_bound("high-a") in low_nodes
        pods = await s.pods()
        assert pods["mid-a"].spec.node_name == mid_node
        assert not pods["mid-a"].metadata.HasField("deletion_timestamp")
