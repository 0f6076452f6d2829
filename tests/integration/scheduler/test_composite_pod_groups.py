"""CompositePodGroup trees (KEP-6012, gate CompositePodGroup) on real processes: S-PG-CPG-*
(docs/scheduler.md "Pod groups").

A 1.37 apiserver serving CompositePodGroups (GenericWorkload, TopologyAwareWorkloadScheduling,
CompositePodGroup), a 1.37 scheduler with the same gates and a 1.37 scheduler with
GenericWorkload only (the tree ignored). Nodes are bare Node objects (no kubelet): "bound" is
spec.nodeName set; the victims have a grace period of 0.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    COMPOSITE_POD_GROUP,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
)
from kemu.testing import Cluster
from kemu.testing.builders import make_gang_pod_group, make_node
from kemu.testing.eventually import eventually
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario
from tests.integration.scheduler.profile_schedulers import start_profile_scheduler

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

GATES: Final = {
    GENERIC_WORKLOAD: True,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: True,
    COMPOSITE_POD_GROUP: True,
}
PROCESS: Final = "scheduler-cpg"
PROFILE: Final = "cpg-scheduler"
OFF: Final = "cpg-off-scheduler"
SCHEDULERS: Final[tuple[tuple[str, str, dict[str, bool]], ...]] = (
    (PROCESS, PROFILE, GATES),
    ("scheduler-cpg-off", OFF, {GENERIC_WORKLOAD: True}),
)
CPG_CONDITION: Final = "CompositePodGroupInitiallyScheduled"
PG_CONDITION: Final = "PodGroupInitiallyScheduled"
LOW: Final = 10
HIGH: Final = 1000


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = Path(tmp_path_factory.mktemp("composite-pod-groups"))
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(feature_gates=GATES, runtime_config={"api/all": "true"})
        for process, profile, gates in SCHEDULERS:
            start_profile_scheduler(c, root, process, profile, "1.37", gates)
        yield c


async def create_cpg(
    s: Scenario,
    name: str,
    min_group_count: int | None,
    priority: int | None = None,
    *,
    disrupt_all: bool = False,
) -> None:
    """A root CompositePodGroup: a gang of `min_group_count` children, Basic when None."""
    cpg = types_pb2.CompositePodGroup()
    cpg.metadata.name, cpg.metadata.namespace = name, s.ns
    cpg.spec.workload_ref.workload_name, cpg.spec.workload_ref.template_name = "w", name
    if min_group_count is None:
        cpg.spec.scheduling_policy.basic.SetInParent()
    else:
        cpg.spec.scheduling_policy.gang.min_group_count = min_group_count
    if priority is not None:
        cpg.spec.priority_class_name = await s.priority_class(priority)
    if disrupt_all:
        cpg.spec.disruption_mode.all.SetInParent()
    await s.client.create(cpg)


async def create_child(
    s: Scenario,
    name: str,
    parent: str,
    min_count: int,
    priority: int | None = None,
) -> None:
    """A gang PodGroup under `parent`."""
    pg = make_gang_pod_group(name, min_count, s.ns)
    pg.spec.parent_composite_pod_group_name = parent
    pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name = "w", name
    if priority is not None:
        pg.spec.priority_class_name = await s.priority_class(priority)
    await s.client.create(pg)


def member(
    s: Scenario, name: str, group: str, cpu: str, profile: str = PROFILE, priority: int = 0
) -> types_pb2.Pod:
    pod = s.pod(name, cpu=cpu, memory="10", priority=priority or None)
    return pod.scheduler_name(profile).pod_group(group).grace(0).obj()


async def bound(s: Scenario) -> dict[str, str]:
    return {name: p.spec.node_name for name, p in (await s.pods()).items() if p.spec.node_name}


async def condition(
    s: Scenario, kind: type[types_pb2.PodGroup] | type[types_pb2.CompositePodGroup], name: str
) -> tuple[str, str, str] | None:
    obj = await s.client.get(kind, name, s.ns)
    type_ = CPG_CONDITION if kind is types_pb2.CompositePodGroup else PG_CONDITION
    for c in obj.status.conditions:
        if c.type == type_:
            return c.status, c.reason, c.message
    return None


def cpg_attempts(cluster: Cluster) -> dict[str, float]:
    """scheduler_podgroup_schedule_attempts_total{type="compositepodgroup"} by result."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(cluster.component(PROCESS).scrape()):
        if family.name != "scheduler_podgroup_schedule_attempts":
            continue
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("type") == "compositepodgroup":
                out[sample.labels["result"]] = sample.value
    return out


async def test_s_pg_cpg_1_gang_of_two_child_gangs_is_all_or_nothing(cluster: Cluster) -> None:
    """A CPG gang (minGroupCount 2) of two child gangs (minCount 2 each): the members are held
    at PreEnqueue until both children have their pods (the tree's quorum); with room for one
    child only nothing binds (the CPG's condition False/Unschedulable `minCount (2) cannot be
    satisfied: ...`); once both fit, all four bind in one cycle and the CPG and both
    PodGroups turn True/Scheduled."""
    before = cpg_attempts(cluster)
    async with Scenario.open(cluster, "s-pg-cpg-1") as s:
        await s.bare_node("n1", cpu="1", memory="1Gi", pods="32")
        await create_cpg(s, "root", 2)
        await create_child(s, "a", "root", 2)
        await create_child(s, "b", "root", 2)
        for name in ("a1", "a2"):
            await s.create(member(s, name, "a", cpu="500m"))

        async def none_bound() -> None:
            assert await bound(s) == {}

        # Child a is complete, b has no pod: the tree has not met its quorum.
        await s.holds(none_bound, seconds=1.5)
        assert await condition(s, types_pb2.CompositePodGroup, "root") is None
        for name in ("b1", "b2"):
            await s.create(member(s, name, "b", cpu="500m"))
        cpg = await s.eventually(lambda: condition(s, types_pb2.CompositePodGroup, "root"))
        assert cpg is not None and cpg[:2] == ("False", "Unschedulable"), cpg
        assert "minCount (2) cannot be satisfied" in cpg[2], cpg
        await s.holds(none_bound, seconds=1.0)
        await s.bare_node("n2", cpu="1", memory="1Gi", pods="32")
        for name in ("a1", "a2", "b1", "b2"):
            await s.wait_bound(name)

        async def scheduled() -> bool:
            states = [
                await condition(s, types_pb2.CompositePodGroup, "root"),
                await condition(s, types_pb2.PodGroup, "a"),
                await condition(s, types_pb2.PodGroup, "b"),
            ]
            return all(c is not None and c[:2] == ("True", "Scheduled") for c in states)

        assert await s.eventually(scheduled)

    # (the attempt is counted once its conditions are written, which the test may see first)
    def counted() -> dict[str, float]:
        after = cpg_attempts(cluster)
        assert after.get("scheduled", 0) - before.get("scheduled", 0) == 1, after
        return after

    after = await eventually(counted, timeout=10)
    assert after.get("unschedulable", 0) - before.get("unschedulable", 0) >= 1


async def test_s_pg_cpg_2_basic_cpg_schedules_its_children_independently(
    cluster: Cluster,
) -> None:
    """A Basic CPG of two child gangs with room for one: the child that fits binds, the other
    stays unschedulable; the CPG (one child scheduled is its Basic quorum) is True/Scheduled."""
    async with Scenario.open(cluster, "s-pg-cpg-2") as s:
        await s.bare_node("n1", cpu="1", memory="1Gi", pods="32")
        await create_cpg(s, "root", None)
        await create_child(s, "a", "root", 2)
        await create_child(s, "b", "root", 2)
        for name in ("a1", "a2"):
            await s.create(member(s, name, "a", cpu="500m"))
        for name in ("b1", "b2"):
            await s.create(member(s, name, "b", cpu="600m"))
        for name in ("a1", "a2"):
            assert await s.wait_bound(name) == s.node_name("n1")
        for name in ("b1", "b2"):
            await s.wait_unschedulable(name)
        cpg = await s.eventually(lambda: condition(s, types_pb2.CompositePodGroup, "root"))
        assert cpg is not None and cpg[:2] == ("True", "Scheduled"), cpg
        pg_b = await s.eventually(lambda: condition(s, types_pb2.PodGroup, "b"))
        assert pg_b is not None and pg_b[:2] == ("False", "Unschedulable"), pg_b
        assert set(await bound(s)) == {"a1", "a2"}


async def test_s_pg_cpg_3_higher_cpg_preempts_a_lower_cpg_tree_as_one_unit(
    cluster: Cluster,
) -> None:
    """Nodes of 2 and 1 cpu full with a low-priority CPG tree whose root has disruptionMode
    All (three 1-cpu pods in two child gangs): one victim unit (upstream
    getHighestAllAncestor). A high-priority CPG gang of two 1-cpu pods preempts as one
    preemptor: room for it needs two pods gone, but the whole low tree goes, its pod on
    the other node too; both high pods bind, the high CPG turns True/Scheduled."""
    async with Scenario.open(cluster, "s-pg-cpg-3") as s:
        await s.bare_node("n1", cpu="2", memory="1Gi", pods="32")
        await s.bare_node("n2", cpu="1", memory="1Gi", pods="32")
        await create_cpg(s, "low", 2, LOW, disrupt_all=True)
        low = {"low-a": 2, "low-b": 1}
        for child, pods in low.items():
            await create_child(s, child, "low", pods, LOW)
            for i in range(pods):
                await s.create(member(s, f"{child}-{i}", child, cpu="1", priority=LOW))
        low_pods = [f"{child}-{i}" for child, pods in low.items() for i in range(pods)]
        for name in low_pods:
            await s.wait_bound(name)
        await create_cpg(s, "high", 2, HIGH)
        for child in ("high-a", "high-b"):
            await create_child(s, child, "high", 1, HIGH)
            await s.create(member(s, f"{child}-0", child, cpu="1", priority=HIGH))
        for name in low_pods:
            await s.wait_gone(name)
        for child in ("high-a", "high-b"):
            await s.wait_bound(f"{child}-0")

        async def scheduled() -> bool:
            c = await condition(s, types_pb2.CompositePodGroup, "high")
            return c is not None and c[:2] == ("True", "Scheduled")

        assert await s.eventually(scheduled)


async def test_s_pg_cpg_4_gate_off_the_parent_is_ignored(cluster: Cluster) -> None:
    """With CompositePodGroup off the scheduler ignores a PodGroup's parent: a gang of one
    under a CPG that does not exist binds alone; the scheduler with the gate on holds its
    twin (`waiting for composite pod group "ghost" tree to meet quorum`)."""
    async with Scenario.open(cluster, "s-pg-cpg-4") as s:
        n1 = await s.bare_node("n1", cpu="1", memory="1Gi", pods="32")
        await create_child(s, "off", "ghost", 1)
        await create_child(s, "on", "ghost", 1)
        await s.create(member(s, "off-0", "off", cpu="100m", profile=OFF))
        await s.create(member(s, "on-0", "on", cpu="100m"))
        assert await s.wait_bound("off-0") == n1

        async def on_held() -> None:
            assert "on-0" not in await bound(s)

        await s.holds(on_held, seconds=1.5)


async def test_s_pg_cpg_5_topology_constraints_at_both_levels(cluster: Cluster) -> None:
    """A CPG gang constrained to one zone of two child gangs each constrained to one rack
    (TopologyAwareWorkloadScheduling with CompositePodGroup): zone-a has one rack of room for
    one child, zone-b two: the CPG's placements are its zones, each child's the racks of the
    zone being tried; the tree lands in zone-b, one child per rack."""
    async with Scenario.open(cluster, "s-pg-cpg-5") as s:
        racks = {"a1": "zone-a", "b1": "zone-b", "b2": "zone-b"}
        for rack, zone in racks.items():
            labels = {
                SCENARIO_LABEL: s.ns,
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/rack": rack,
            }
            node = make_node(s.node_name(rack)).capacity(cpu="1", memory="1Gi", pods="32")
            await s.client.create(node.labels(labels).obj())
        cpg = types_pb2.CompositePodGroup()
        cpg.metadata.name, cpg.metadata.namespace = "root", s.ns
        cpg.spec.workload_ref.workload_name, cpg.spec.workload_ref.template_name = "w", "root"
        cpg.spec.scheduling_policy.gang.min_group_count = 2
        cpg.spec.scheduling_constraints.topology.add(key="topology.kubernetes.io/zone")
        await s.client.create(cpg)
        for child in ("x", "y"):
            pg = make_gang_pod_group(child, 2, s.ns)
            pg.spec.parent_composite_pod_group_name = "root"
            pg.spec.workload_ref.workload_name, pg.spec.workload_ref.template_name = "w", child
            pg.spec.scheduling_constraints.topology.add(key="topology.kubernetes.io/rack")
            await s.client.create(pg)
        for child in ("x", "y"):
            for i in range(2):
                await s.create(member(s, f"{child}{i}", child, cpu="500m"))
        nodes = {name: await s.wait_bound(name) for name in ("x0", "x1", "y0", "y1")}
        assert nodes["x0"] == nodes["x1"] and nodes["y0"] == nodes["y1"], nodes
        assert {nodes["x0"], nodes["y0"]} == {s.node_name("b1"), s.node_name("b2")}, nodes


def samples(cluster: Cluster, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """The scheduler's samples of metric `name` (its full sample name) by sorted labels."""
    out: dict[tuple[tuple[str, str], ...], float] = {}
    for family in text_string_to_metric_families(cluster.component(PROCESS).scrape()):
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def by_type(values: dict[tuple[tuple[str, str], ...], float], type_: str) -> float:
    return sum(v for k, v in values.items() if ("type", type_) in k)


def queue_counts_of(cluster: Cluster) -> tuple[float, float, float]:
    """The queue's compositepodgroup and podgroup entities, and its pods (every queue but
    incomplete and pending)."""
    entities = samples(cluster, "scheduler_queued_entities")
    waiting = samples(cluster, "scheduler_pending_pods")
    queued = sum(v for k, v in waiting.items() if dict(k)["queue"] not in ("incomplete", "pending"))
    return by_type(entities, "compositepodgroup"), by_type(entities, "podgroup"), queued


async def test_s_pg_cpg_6_a_tree_is_queued_and_backed_off_as_one_entity(cluster: Cluster) -> None:
    """S-PG-CPG-6: 1.37 keys the queue's entity of a CompositePodGroup tree by its root
    (upstream workloadForest.getRootLookupInfo; getLeafPodGroups gathers the leaves'
    members): a CPG gang of two child gangs (4 pods) that cannot fit is one entity
    (`scheduler_queued_entities{type="compositepodgroup"}` 1, no `podgroup` entity, its 4 pods
    in `scheduler_pending_pods`), each rejected attempt sends the whole tree back
    (`scheduler_queue_incoming_entities_total{type="compositepodgroup"}`); a second node lets
    the tree bind whole. Members whose root is not observed yet wait `incomplete` until the
    root CompositePodGroup is created."""
    async with Scenario.open(cluster, "s-pg-cpg-6") as s:
        # (the module's earlier scenarios may leave pods and entities of their own in the queue)
        def waiting_incomplete() -> float:
            return samples(cluster, "scheduler_pending_pods").get((("queue", "incomplete"),), 0.0)

        base_incomplete = waiting_incomplete()
        await s.bare_node("n1", cpu="1", memory="1Gi", pods="32")
        await create_child(s, "a", "root", 2)
        await create_child(s, "b", "root", 2)
        pods = ("a1", "a2", "b1", "b2")
        for name in pods:
            await s.create(member(s, name, name[0], cpu="500m"))

        def incomplete() -> bool:
            return waiting_incomplete() == base_incomplete + 4

        await s.eventually(incomplete)
        incoming = "scheduler_queue_incoming_entities_total"
        before = by_type(samples(cluster, incoming), "compositepodgroup")
        base = queue_counts_of(cluster)
        await create_cpg(s, "root", 2)

        def queued_as_one() -> bool:
            trees, groups, pods_queued = queue_counts_of(cluster)
            return (trees, groups, pods_queued) == (base[0] + 1, base[1], base[2] + 4)

        await s.eventually(queued_as_one)

        def requeued() -> bool:
            # queued once on the root's creation, then again after each rejected attempt
            return by_type(samples(cluster, incoming), "compositepodgroup") - before >= 2

        await s.eventually(requeued)
        assert await bound(s) == {}
        await s.bare_node("n2", cpu="1", memory="1Gi", pods="32")
        for name in pods:
            await s.wait_bound(name)
        assert queue_counts_of(cluster)[0] == base[0]
        assert waiting_incomplete() == base_incomplete
