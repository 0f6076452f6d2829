"""Pod groups in the scheduling queue and single-pod preemption inside the group cycle, on real
processes (S-PG-10, S-PG-13, S-PG-14; docs/scheduler.md "Pod groups").

A 1.37 apiserver, a 1.37 scheduler (GenericWorkload: its queue holds a pod group as one entity)
and a 1.36 one with GenericWorkload and GangScheduling but not WorkloadAwarePreemption (a
member that fits nowhere preempts alone, inside the group cycle). Nodes are bare Node objects
(no kubelet): victims have a grace period of 0; "bound" is spec.nodeName set. Metrics are read
from each scheduler's /metrics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GANG_SCHEDULING, GENERIC_WORKLOAD
from kemu.testing import Cluster
from kemu.testing.builders import make_gang_pod_group
from kemu.testing.invariants import record_pods
from kemu.testing.scenarios import Scenario
from tests.integration.scheduler.profile_schedulers import start_profile_scheduler

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PROCESS_137: Final = "scheduler-1-37"
PROFILE_137: Final = "queue-1-37-scheduler"
PROCESS_136: Final = "scheduler-1-36"
PROFILE_136: Final = "member-preemption-1-36-scheduler"
SCHEDULERS: Final[tuple[tuple[str, str, str, dict[str, bool]], ...]] = (
    (PROCESS_137, PROFILE_137, "1.37", {GENERIC_WORKLOAD: True}),
    (PROCESS_136, PROFILE_136, "1.36", {GENERIC_WORKLOAD: True, GANG_SCHEDULING: True}),
)
LOW: Final = 10
HIGH: Final = 1000
WAITING: Final = "pod group is waiting for preemption to complete"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("pod-group-queue"))
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
    s: Scenario, name: str, group: str, profile: str, priority: int = 0, cpu: str = "1"
) -> types_pb2.Pod:
    pod = s.pod(name, priority=priority, cpu=cpu, memory="10").scheduler_name(profile)
    return pod.pod_group(group).grace(0).obj()


async def create_gang(s: Scenario, name: str, min_count: int, priority: int = 0) -> None:
    pg = make_gang_pod_group(name, min_count, s.ns)
    if priority:
        pg.spec.priority_class_name = await s.priority_class(priority)
    await s.client.create(pg)


def samples(cluster: Cluster, process: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The samples of metric `name` (its full sample name) by sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def value(cluster: Cluster, process: str, name: str, **labels: str) -> float:
    return samples(cluster, process, name).get(tuple(sorted(labels.items())), 0.0)


async def test_s_pg_10_1_36_members_preempt_alone_inside_the_group_cycle(
    cluster: Cluster,
) -> None:
    """S-PG-10: 1.36 without WorkloadAwarePreemption. A node of 2 cpu full with two
    low-priority pods (alone, no group); a high-priority gang of 2 (1 cpu each) fits nowhere:
    each member's PostFilter (DefaultPreemption) preempts a victim for it inside the group
    cycle and nominates it; the complete group waits on preemption (every member back to the
    queue nominated to the node, the attempt `waiting_on_preemption`), then binds there;
    binding clears the nominations; the PodGroup ends True/Scheduled."""
    process, profile = PROCESS_136, PROFILE_136
    before = value(
        cluster,
        process,
        "scheduler_podgroup_schedule_attempts_total",
        result="waiting_on_preemption",
        profile=profile,
    )
    preemptions = value(cluster, process, "scheduler_preemption_attempts_total")
    async with Scenario.open(cluster, "s-pg-10") as s:
        n1 = await s.bare_node("n1", cpu="2", memory="1Gi", pods="32")
        for name in ("low-a", "low-b"):
            pod = s.pod(name, priority=LOW, cpu="1", memory="10").scheduler_name(profile)
            await s.create(pod.grace(0))
            assert await s.wait_bound(name) == n1
        async with record_pods(s.client, s.ns) as history:
            await create_gang(s, "high", 2, HIGH)
            for name in ("high-a", "high-b"):
                await s.create(member(s, name, "high", profile, HIGH))
            await s.wait_gone("low-a")
            await s.wait_gone("low-b")
            for name in ("high-a", "high-b"):
                assert await s.wait_bound(name) == n1
        nominated_before_bound = {
            v.pod.metadata.name
            for versions in history.versions.values()
            for v in versions
            if v.pod.status.nominated_node_name == n1 and not v.pod.spec.node_name
        }
        assert nominated_before_bound == {"high-a", "high-b"}

        async def cleared() -> bool:
            pods = await s.pods()
            return not any(pods[n].status.nominated_node_name for n in ("high-a", "high-b"))

        await s.eventually(cleared)

        async def scheduled() -> bool:
            pg = await s.client.get(types_pb2.PodGroup, "high", s.ns)
            return any(
                c.type == "PodGroupScheduled" and c.status == "True" for c in pg.status.conditions
            )

        await s.eventually(scheduled)
    after = value(
        cluster,
        process,
        "scheduler_podgroup_schedule_attempts_total",
        result="waiting_on_preemption",
        profile=profile,
    )
    assert after - before >= 1
    assert value(cluster, process, "scheduler_preemption_attempts_total") - preemptions >= 2


async def test_s_pg_13_1_37_a_gang_queues_and_backs_off_as_one_entity(cluster: Cluster) -> None:
    """S-PG-13: 1.37. A gang of 3 (1 cpu each) on a node of 2 cpu cannot fit: the queue holds
    it as one entity (scheduler_queued_entities{type="podgroup"}), its three pods counted in
    scheduler_pending_pods, and every attempt sends it back whole (backoffQ, then activeQ);
    nothing binds. A second node lets the whole gang bind."""
    process, profile = PROCESS_137, PROFILE_137
    async with Scenario.open(cluster, "s-pg-13") as s:
        await s.bare_node("n1", cpu="2", memory="1Gi", pods="32")
        await create_gang(s, "g", 3)
        names = ("g-a", "g-b", "g-c")
        for name in names:
            await s.create(member(s, name, "g", profile))

        def queued_as_one() -> bool:
            entities = samples(cluster, process, "scheduler_queued_entities")
            groups = sum(v for k, v in entities.items() if ("type", "podgroup") in k)
            pods = samples(cluster, process, "scheduler_pending_pods")
            waiting = sum(v for k, v in pods.items() if dict(k)["queue"] in ("active", "backoff"))
            return groups == 1 and waiting == 3

        await s.eventually(queued_as_one)
        attempts = value(
            cluster,
            process,
            "scheduler_podgroup_schedule_attempts_total",
            result="unschedulable",
            profile=profile,
            type="podgroup",
        )
        assert attempts >= 1
        pods = await s.pods()
        assert not any(pods[n].spec.node_name for n in names)
        await s.bare_node("n2", cpu="2", memory="1Gi", pods="32")
        for name in names:
            await s.wait_bound(name)


async def test_s_pg_14_1_37_members_wait_for_their_pod_group(cluster: Cluster) -> None:
    """S-PG-14: 1.37. Members created before their PodGroup wait in the queue's incomplete
    set (scheduler_pending_pods{queue="incomplete"}), not gated; the PodGroup's creation
    queues them as its entity and they bind."""
    process, profile = PROCESS_137, PROFILE_137
    async with Scenario.open(cluster, "s-pg-14") as s:
        await s.bare_node("n1", cpu="2", memory="1Gi", pods="32")
        for name in ("w-a", "w-b"):
            await s.create(member(s, name, "late", profile))

        def incomplete() -> bool:
            return value(cluster, process, "scheduler_pending_pods", queue="incomplete") == 2

        await s.eventually(incomplete)
        await create_gang(s, "late", 2)
        for name in ("w-a", "w-b"):
            await s.wait_bound(name)
        assert value(cluster, process, "scheduler_pending_pods", queue="incomplete") == 0


@pytest.mark.parametrize(
    ("process", "profile", "preempts"),
    [(PROCESS_136, PROFILE_136, True), (PROCESS_137, PROFILE_137, False)],
    ids=["1.36", "1.37"],
)
async def test_s_pg_15_members_post_filter_by_version(
    cluster: Cluster, process: str, profile: str, preempts: bool
) -> None:
    """S-PG-15: a gang of 2 (1 cpu each) on a node of 1 cpu with nothing to preempt. 1.36
    runs the PostFilter of the member that fits nowhere inside the group cycle (upstream
    schedule_one_podgroup.go runAllPostFilters): its FailedScheduling message carries
    DefaultPreemption's `preemption: ...`. 1.37 runs no member's PostFilter in the pod-group
    algorithm (upstream algorithm_podgroup.go podScheduler.SchedulePod: preemption is the
    group's), so no member's message has it; nothing binds."""
    async with Scenario.open(cluster, f"s-pg-15-{profile}") as s:
        await s.bare_node("n1", cpu="1", memory="1Gi", pods="32")
        await create_gang(s, "g", 2)
        names = ("g-a", "g-b")
        for name in names:
            await s.create(member(s, name, "g", profile))

        async def messages() -> list[str]:
            return [(await s.wait_unschedulable(name, timeout=2)).message for name in names]

        seen = await s.eventually(messages)
        if preempts:

            async def post_filtered() -> bool:
                return any("preemption: " in m for m in await messages())

            assert await s.eventually(post_filtered)
        else:
            assert not any("preemption: " in m for m in seen), seen
            await s.holds(lambda: _no_post_filter_message(s, names, process), seconds=1.0)
        pods = await s.pods()
        assert not any(pods[n].spec.node_name for n in names)


async def _no_post_filter_message(s: Scenario, names: tuple[str, ...], process: str) -> None:
    for name in names:
        cond = await s.wait_unschedulable(name, timeout=2)
        assert "preemption: " not in cond.message, (process, cond.message)
