"""Pod groups and gang scheduling on real processes (S-PG-*, docs/scheduler.md "Pod groups").

Two clusters: a 1.37 apiserver with a scheduler process per flavour that reads its
spec.schedulingGroup, each with its own profile (a pod picks one by spec.schedulerName): 1.36
(GenericWorkload + GangScheduling: a PodGroup), 1.37 (GenericWorkload) and 1.36 with the gates
off; and a 1.35 apiserver with a 1.35 scheduler (a Workload's pod group, spec.workloadRef,
which only a 1.35 apiserver serves). Nodes are bare Node objects (no kubelet): "bound" is
spec.nodeName set.
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
from kemu.testing.builders import make_gang_pod_group, make_gang_workload
from kemu.testing.invariants import record_pods
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

GANG_135: Final = "gang-1-35-scheduler"
GANG_136: Final = "gang-1-36-scheduler"
GANG_137: Final = "gang-1-37-scheduler"
OFF_136: Final = "gates-off-1-36-scheduler"
GATES_ON: Final = {GENERIC_WORKLOAD: True, GANG_SCHEDULING: True}
SCHEDULERS: Final[tuple[tuple[str, str, str, dict[str, bool]], ...]] = (
    ("scheduler-1-36", GANG_136, "1.36", GATES_ON),
    ("scheduler-1-37", GANG_137, "1.37", {GENERIC_WORKLOAD: True}),
    ("scheduler-1-36-off", OFF_136, "1.36", {}),
)
NNN_WAIT: Final = "waiting for minCount pods from a gang"


def config(profile: str) -> str:
    return f"""\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: {profile}
"""


def _start_scheduler(
    c: Cluster, root: Path, process: str, profile: str, version: str, gates: dict[str, bool]
) -> None:
    path = root / f"{profile}.yaml"
    path.write_text(config(profile))
    c.start_scheduler(
        name=process,
        config=str(path),
        emulated_version=version,
        feature_gates=gates,
        extra_args=["--seed", "1"],
    )


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("pod-groups")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(
            feature_gates={GENERIC_WORKLOAD: True},
            runtime_config={"scheduling.k8s.io/v1beta1": "true"},
        )
        for process, profile, version, gates in SCHEDULERS:
            _start_scheduler(c, Path(root), process, profile, version, gates)
        yield c


@pytest.fixture(scope="module")
def cluster_135(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """1.35: spec.workloadRef exists at a 1.35 apiserver only."""
    root = tmp_path_factory.mktemp("pod-groups-1-35")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(
            emulated_version="1.35",
            feature_gates={GENERIC_WORKLOAD: True},
            runtime_config={"scheduling.k8s.io/v1alpha1": "true"},
        )
        _start_scheduler(c, Path(root), "scheduler-1-35", GANG_135, "1.35", GATES_ON)
        yield c


@pytest.fixture
def cluster_of(request: pytest.FixtureRequest) -> Cluster:
    """The cluster of the test's `profile` parameter."""
    profile = request.getfixturevalue("profile")
    name = "cluster_135" if profile == GANG_135 else "cluster"
    cluster: Cluster = request.getfixturevalue(name)
    return cluster


def member(s: Scenario, name: str, profile: str, group: str, cpu: str = "100m") -> types_pb2.Pod:
    pod = s.pod(name, cpu=cpu, memory="10").scheduler_name(profile)
    if profile == GANG_135:
        pod.workload_ref("w", group)
    else:
        pod.pod_group(group)
    return pod.obj()


async def create_group(s: Scenario, profile: str, group: str, min_count: int) -> None:
    if profile == GANG_135:
        await s.client.create(make_gang_workload("w", {group: min_count}, s.ns))
    else:
        await s.client.create(make_gang_pod_group(group, min_count, s.ns))


async def bound(s: Scenario) -> dict[str, str]:
    return {name: p.spec.node_name for name, p in (await s.pods()).items() if p.spec.node_name}


@pytest.mark.parametrize("profile", [GANG_135, GANG_136, GANG_137])
async def test_s_pg_1_gang_held_until_its_third_member_exists(
    cluster_of: Cluster, profile: str
) -> None:
    async with Scenario.open(cluster_of, "s-pg-1") as s:
        await s.bare_node("n1", cpu="4", memory="1Gi", pods="32")
        await create_group(s, profile, "g", 3)
        for name in ("a", "b"):
            await s.create(member(s, name, profile, "g"))

        async def none_bound() -> None:
            assert await bound(s) == {}

        await s.holds(none_bound, seconds=2.0)
        await s.create(member(s, "c", profile, "g"))
        for name in ("a", "b", "c"):
            assert await s.wait_bound(name) == s.node_name("n1")


async def test_s_pg_2_1_35_gang_that_cannot_fit_binds_none_and_s_pg_4_nnn_while_waiting(
    cluster_135: Cluster,
) -> None:
    """1.35, room for two of three: two members are reserved and wait at Permit with their
    nominatedNodeName set (KEP-5278), the third is unschedulable; nothing binds. A node for
    the third completes the gang; binding clears the nominations."""
    profile = GANG_135
    async with Scenario.open(cluster_135, "s-pg-2") as s:
        await s.bare_node("n1", cpu="500m", memory="1Gi", pods="32")
        await create_group(s, profile, "g", 3)
        for name in ("a", "b", "c"):
            await s.create(member(s, name, profile, "g", cpu="200m"))

        async def two_wait_with_nnn() -> bool:
            pods = await s.pods()
            waiting = [p for p in pods.values() if p.status.nominated_node_name]
            assert len(waiting) == 2, {n: p.status.nominated_node_name for n, p in pods.items()}
            assert all(p.status.nominated_node_name == s.node_name("n1") for p in waiting)
            return True

        await s.eventually(two_wait_with_nnn)

        async def none_bound() -> None:
            assert await bound(s) == {}

        await s.holds(none_bound, seconds=2.0)
        await s.bare_node("n2", cpu="500m", memory="1Gi", pods="32")
        for name in ("a", "b", "c"):
            await s.wait_bound(name)

        async def nnn_cleared() -> bool:
            return all(not p.status.nominated_node_name for p in (await s.pods()).values())

        await s.eventually(nnn_cleared)


async def pod_group_condition(s: Scenario, name: str, type_: str) -> tuple[str, str] | None:
    pg = await s.client.get(types_pb2.PodGroup, name, s.ns)
    for c in pg.status.conditions:
        if c.type == type_:
            return c.status, c.reason
    return None


def podgroup_attempts(cluster: Cluster, process: str, profile: str) -> dict[str, float]:
    """scheduler_podgroup_schedule_attempts_total of `profile`, by result."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(cluster.component(process).scrape()):
        if family.name != "scheduler_podgroup_schedule_attempts":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("profile") == profile:
                out[sample.labels["result"]] = sample.value
    return out


@pytest.mark.parametrize(
    ("profile", "process", "condition", "waits_at_permit"),
    [
        (GANG_136, "scheduler-1-36", "PodGroupScheduled", True),
        (GANG_137, "scheduler-1-37", "PodGroupInitiallyScheduled", False),
    ],
)
async def test_s_pg_2_group_cycle_binds_none_and_s_pg_4_nnn_at_permit(
    cluster: Cluster, profile: str, process: str, condition: str, waits_at_permit: bool
) -> None:
    """1.36+, room for two of three: the pod-group cycle rejects the whole group (nobody is
    reserved or waits), each member PodScheduled=False, the PodGroup's condition (1.36
    PodGroupScheduled, 1.37 PodGroupInitiallyScheduled) False/Unschedulable. With a node for
    the third the group is placed and binds; the condition turns True/Scheduled. At 1.36 the
    members wait at GangScheduling's Permit for the last one with their nominatedNodeName set
    (KEP-5278); 1.37 has no such Permit, so no nomination is written."""
    before = podgroup_attempts(cluster, process, profile)
    async with Scenario.open(cluster, "s-pg-2") as s:
        async with record_pods(s.client, s.ns) as history:
            await s.bare_node("n1", cpu="500m", memory="1Gi", pods="32")
            await create_group(s, profile, "g", 3)
            for name in ("a", "b", "c"):
                await s.create(member(s, name, profile, "g", cpu="200m"))
            for name in ("a", "b", "c"):
                await s.wait_unschedulable(name)
            assert await s.eventually(lambda: pod_group_condition(s, "g", condition)) == (
                "False",
                "Unschedulable",
            )

            async def none_bound() -> None:
                assert await bound(s) == {}
                assert all(not p.status.nominated_node_name for p in (await s.pods()).values())

            await s.holds(none_bound, seconds=2.0)
            await s.bare_node("n2", cpu="500m", memory="1Gi", pods="32")
            for name in ("a", "b", "c"):
                await s.wait_bound(name)
            assert await s.eventually(lambda: pod_group_condition(s, "g", condition)) == (
                "True",
                "Scheduled",
            )
        nominated_before_bound = {
            v.pod.metadata.name
            for versions in history.versions.values()
            for v in versions
            if v.pod.status.nominated_node_name and not v.pod.spec.node_name
        }
        if waits_at_permit:
            # The first two in the cycle's order waited at Permit for the third.
            assert len(nominated_before_bound) >= 2, nominated_before_bound
        else:
            assert nominated_before_bound == set()
        assert all(not p.status.nominated_node_name for p in (await s.pods()).values())
        after = podgroup_attempts(cluster, process, profile)
        assert after.get("scheduled", 0) - before.get("scheduled", 0) == 1
        assert after.get("unschedulable", 0) - before.get("unschedulable", 0) >= 1


async def test_s_pg_6_gates_off_the_group_is_ignored(cluster: Cluster) -> None:
    async with Scenario.open(cluster, "s-pg-6") as s:
        await s.bare_node("n1", cpu="4", memory="1Gi", pods="32")
        # No PodGroup object at all, minCount never met: each pod is scheduled alone.
        await s.create(member(s, "a", OFF_136, "g"))
        assert await s.wait_bound("a") == s.node_name("n1")


async def test_s_pg_3_scheduler_killed_while_members_wait_at_permit(cluster_135: Cluster) -> None:
    """1.35 (where members wait at Permit until the gang is complete): two of three members
    wait at Permit (their nominations set) when the scheduler is SIGKILLed; after its restart
    no partial gang is bound, and once the third fits the gang binds whole."""
    profile = GANG_135
    cluster = cluster_135
    async with Scenario.open(cluster, "s-pg-3") as s:
        await s.bare_node("n1", cpu="500m", memory="1Gi", pods="32")
        await create_group(s, profile, "g", 3)
        for name in ("a", "b", "c"):
            await s.create(member(s, name, profile, "g", cpu="200m"))

        async def two_nominated() -> bool:
            pods = await s.pods()
            return sum(1 for p in pods.values() if p.status.nominated_node_name) == 2

        await s.eventually(two_nominated)
        cluster.kill("scheduler-1-35")
        cluster.restart("scheduler-1-35")

        async def none_bound() -> None:
            assert await bound(s) == {}

        await s.holds(none_bound, seconds=2.0)
        await s.bare_node("n2", cpu="500m", memory="1Gi", pods="32")
        for name in ("a", "b", "c"):
            await s.wait_bound(name)


async def test_s_pg_9_a_member_preempted_while_the_others_wait_at_permit(
    cluster_135: Cluster,
) -> None:
    """1.35: two of three members wait at Permit (nominated), the third does not fit. A
    higher-priority pod preempts one waiting member: preemption rejects a victim that waits
    at Permit instead of deleting it (pkg/scheduler/framework/preemption prepareCandidate), so
    it is unreserved, its nominatedNodeName cleared, and it goes back to the queue; the other
    member keeps waiting at Permit with its nomination (GangScheduling has no group-wide
    reaction: it waits for the group's deadline); nothing of the gang is bound."""
    profile = GANG_135
    async with Scenario.open(cluster_135, "s-pg-9") as s:
        n1 = await s.bare_node("n1", cpu="500m", memory="1Gi", pods="32")
        await create_group(s, profile, "g", 3)
        for name in ("a", "b", "c"):
            await s.create(member(s, name, profile, "g", cpu="200m"))

        async def two_waiting() -> list[str]:
            pods = await s.pods()
            waiting = sorted(n for n, p in pods.items() if p.status.nominated_node_name == n1)
            assert len(waiting) == 2, {n: p.status.nominated_node_name for n, p in pods.items()}
            return waiting

        waiting = await s.eventually(two_waiting)
        high = s.pod("high", priority=1000, cpu="300m", memory="10").scheduler_name(profile)
        await s.create(high)
        assert await s.wait_bound("high") == n1

        async def one_left_waiting() -> tuple[str, str]:
            pods = await s.pods()
            still = [n for n in waiting if pods[n].status.nominated_node_name == n1]
            rejected = [n for n in waiting if not pods[n].status.nominated_node_name]
            assert len(still) == 1 and len(rejected) == 1, {
                n: p.status.nominated_node_name for n, p in pods.items()
            }
            return still[0], rejected[0]

        still, rejected = await s.eventually(one_left_waiting)
        pods = await s.pods()
        assert not pods[rejected].metadata.HasField("deletion_timestamp")
        assert {n: p.spec.node_name for n, p in pods.items() if p.spec.node_name} == {"high": n1}
