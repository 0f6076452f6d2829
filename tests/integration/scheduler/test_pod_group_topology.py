"""Topology-aware workload scheduling on real processes (KEP-5732, S-PG-TAS-*, docs/scheduler.md
"Pod groups"): a PodGroup's spec.schedulingConstraints.topology[0].key keeps the whole group in
one domain of that node label.

One 1.37 apiserver (GenericWorkload and TopologyAwareWorkloadScheduling on, so that it keeps the
field) and three scheduler processes, each with its own profile (a pod picks one by
spec.schedulerName): 1.36 and 1.37 with TopologyAwareWorkloadScheduling, and 1.36 without it.
Nodes are bare Node objects (no kubelet) labelled with a rack key of the scenario's own, so that
the placements of one scenario are its racks only; "bound" is spec.nodeName set.
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
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
)
from kemu.testing import Cluster
from kemu.testing.builders import make_gang_pod_group, make_node
from kemu.testing.scenarios import SCENARIO_LABEL, Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TAS_136: Final = "tas-1-36-scheduler"
TAS_137: Final = "tas-1-37-scheduler"
OFF_136: Final = "tas-off-1-36-scheduler"
TAS: Final = {TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: True}
SCHEDULERS: Final[tuple[tuple[str, str, str, dict[str, bool]], ...]] = (
    ("scheduler-tas-1-36", TAS_136, "1.36", {GENERIC_WORKLOAD: True, GANG_SCHEDULING: True, **TAS}),
    ("scheduler-tas-1-37", TAS_137, "1.37", {GENERIC_WORKLOAD: True, **TAS}),
    ("scheduler-tas-off-1-36", OFF_136, "1.36", {GENERIC_WORKLOAD: True, GANG_SCHEDULING: True}),
)
CONDITION: Final = {TAS_136: "PodGroupScheduled", TAS_137: "PodGroupInitiallyScheduled"}
PROCESS: Final = {TAS_136: "scheduler-tas-1-36", TAS_137: "scheduler-tas-1-37"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("pod-group-topology")
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver(
            feature_gates={GENERIC_WORKLOAD: True, **TAS},
            runtime_config={"scheduling.k8s.io/v1beta1": "true"},
        )
        for process, profile, version, gates in SCHEDULERS:
            path = Path(root) / f"{profile}.yaml"
            path.write_text(
                "apiVersion: kubescheduler.config.k8s.io/v1\n"
                "kind: KubeSchedulerConfiguration\n"
                f"profiles:\n- schedulerName: {profile}\n"
            )
            c.start_scheduler(
                name=process,
                config=str(path),
                emulated_version=version,
                feature_gates=gates,
                extra_args=["--seed", "1"],
            )
        yield c


def rack_key(s: Scenario) -> str:
    """The scenario's own topology key (placements come from every node with the key)."""
    return f"{s.ns}.kemu.io/rack"


async def rack_node(s: Scenario, name: str, rack: str, cpu: str) -> str:
    full = s.node_name(name)
    node = make_node(full).capacity(cpu=cpu, memory="1Gi", pods="32")
    await s.client.create(node.labels({SCENARIO_LABEL: s.ns, rack_key(s): rack}).obj())
    return full


async def topology_group(s: Scenario, name: str, min_count: int) -> None:
    pg = make_gang_pod_group(name, min_count, s.ns)
    pg.spec.scheduling_constraints.topology.add(key=rack_key(s))
    await s.client.create(pg)


def member(s: Scenario, name: str, profile: str, group: str, cpu: str = "1") -> types_pb2.Pod:
    return s.pod(name, cpu=cpu, memory="10").scheduler_name(profile).pod_group(group).obj()


async def filler(s: Scenario, name: str, node: str, cpu: str) -> None:
    """A pod already bound to `node` (it takes room there, nothing more)."""
    await s.create(s.pod(name, cpu=cpu, memory="10").node(s.node_name(node)).obj())


async def racks_of(s: Scenario, names: tuple[str, ...], racks: dict[str, str]) -> set[str]:
    return {racks[await s.wait_bound(name)] for name in names}


async def pod_group_condition(s: Scenario, name: str, type_: str) -> tuple[str, str, str] | None:
    pg = await s.client.get(types_pb2.PodGroup, name, s.ns)
    for c in pg.status.conditions:
        if c.type == type_:
            return c.status, c.reason, c.message
    return None


def placement_samples(cluster: Cluster, profile: str) -> dict[str, float]:
    """1.37's placement counters of `profile` (scheduler_generated_placements_total,
    scheduler_placement_evaluations_total by result)."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(cluster.component(PROCESS[profile]).scrape()):
        for sample in family.samples:
            if sample.labels.get("profile") != profile or not sample.name.endswith("_total"):
                continue
            if sample.name == "scheduler_generated_placements_total":
                out["generated"] = sample.value
            elif sample.name == "scheduler_placement_evaluations_total":
                out[sample.labels["result"]] = sample.value
    return out


@pytest.mark.parametrize("profile", [TAS_136, TAS_137])
async def test_s_pg_tas_1_a_gang_lands_in_one_rack_the_fuller_one(
    cluster: Cluster, profile: str
) -> None:
    """Two racks of three 2-cpu nodes, one cpu already taken in rack-b; a gang of three 1-cpu
    members fits in either rack. Every member goes to one rack, and it is rack-b: with both
    feasible, PlacementScore decides (NodeResourcesFit's bin-packing prefers the fuller one;
    PodGroupPodsCount ties). Pod by pod, LeastAllocated would have spread them. 1.37 counts
    the two placements generated and evaluated feasible (its placement metrics)."""
    before = placement_samples(cluster, profile)
    async with Scenario.open(cluster, "s-pg-tas-1") as s:
        racks: dict[str, str] = {}
        for i, rack in enumerate(("rack-a", "rack-a", "rack-a", "rack-b", "rack-b", "rack-b")):
            racks[await rack_node(s, f"n{i}", rack, cpu="2")] = rack
        await filler(s, "filler", "n3", cpu="1")
        await topology_group(s, "g", 3)
        names = ("a", "b", "c")
        for name in names:
            await s.create(member(s, name, profile, "g"))
        assert await racks_of(s, names, racks) == {"rack-b"}

        async def scheduled() -> bool:
            condition = await pod_group_condition(s, "g", CONDITION[profile])
            assert condition is not None and condition[:2] == ("True", "Scheduled"), condition
            return True

        await s.eventually(scheduled)
    after = placement_samples(cluster, profile)
    if profile == TAS_137:
        assert after["generated"] - before.get("generated", 0) == 2
        assert after["feasible"] - before.get("feasible", 0) == 2
    else:
        assert after == {}  # no placement metrics before 1.37


@pytest.mark.parametrize("profile", [TAS_136, TAS_137])
async def test_s_pg_tas_2_scheduled_members_pin_the_domain(cluster: Cluster, profile: str) -> None:
    """minCount 2: the first two members go to rack-b (the fuller). Then rack-a fills up so
    that it would be the better placement; a third member still goes to rack-b, the only
    placement TopologyPlacementGenerator makes once members run there."""
    async with Scenario.open(cluster, "s-pg-tas-2") as s:
        racks: dict[str, str] = {}
        for i, rack in enumerate(("rack-a", "rack-a", "rack-b", "rack-b")):
            racks[await rack_node(s, f"n{i}", rack, cpu="4")] = rack
        await filler(s, "filler-b", "n2", cpu="2")
        await topology_group(s, "g", 2)
        for name in ("a", "b"):
            await s.create(member(s, name, profile, "g"))
        assert await racks_of(s, ("a", "b"), racks) == {"rack-b"}
        await filler(s, "filler-a0", "n0", cpu="3")
        await filler(s, "filler-a1", "n1", cpu="3")
        await s.create(member(s, "c", profile, "g"))
        assert await racks_of(s, ("c",), racks) == {"rack-b"}


@pytest.mark.parametrize(
    ("profile", "reason"),
    [
        (TAS_136, "pod group is unschedulable"),
        (
            TAS_137,
            "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
            "pod group preemption: not supported with topology constraints",
        ),
    ],
)
async def test_s_pg_tas_3_no_rack_fits_the_group_is_unschedulable(
    cluster: Cluster, profile: str, reason: str
) -> None:
    """Two racks of two 1-cpu nodes and a gang of three 1-cpu members: the cluster has room,
    no rack has. Nothing binds; every member is unschedulable and the PodGroup's condition is
    False/Unschedulable with upstream's `0/2 placements are available, first placement
    status: ...` (the first placement's reason: 1.36's default algorithm status, 1.37's
    GangScheduling PlacementFeasible, then, 1.37's workload-aware preemption being on with
    GenericWorkload, its refusal appended). A third node in rack-a lets the group in there."""
    async with Scenario.open(cluster, "s-pg-tas-3") as s:
        racks: dict[str, str] = {}
        for i, rack in enumerate(("rack-a", "rack-a", "rack-b", "rack-b")):
            racks[await rack_node(s, f"n{i}", rack, cpu="1")] = rack
        await topology_group(s, "g", 3)
        names = ("a", "b", "c")
        for name in names:
            await s.create(member(s, name, profile, "g"))
        for name in names:
            await s.wait_unschedulable(name)
        expected = (
            "False",
            "Unschedulable",
            f"0/2 placements are available, first placement status: {reason}",
        )
        assert await s.eventually(lambda: pod_group_condition(s, "g", CONDITION[profile])) == (
            expected
        )

        async def none_bound() -> None:
            assert not [p for p in (await s.pods()).values() if p.spec.node_name]

        await s.holds(none_bound, seconds=1.0)
        racks[await rack_node(s, "n4", "rack-a", cpu="1")] = "rack-a"
        assert await racks_of(s, names, racks) == {"rack-a"}


async def test_s_pg_tas_gate_off_the_constraint_is_ignored(cluster: Cluster) -> None:
    """1.36 without TopologyAwareWorkloadScheduling: the same group as S-PG-TAS-3 binds across
    both racks (the scheduler does not read schedulingConstraints)."""
    async with Scenario.open(cluster, "s-pg-tas-off") as s:
        racks: dict[str, str] = {}
        for i, rack in enumerate(("rack-a", "rack-a", "rack-b", "rack-b")):
            racks[await rack_node(s, f"n{i}", rack, cpu="1")] = rack
        await topology_group(s, "g", 3)
        names = ("a", "b", "c")
        for name in names:
            await s.create(member(s, name, OFF_136, "g"))
        assert await racks_of(s, names, racks) == {"rack-a", "rack-b"}
