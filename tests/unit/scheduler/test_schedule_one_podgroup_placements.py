"""The pod-group cycle's placement algorithm (KEP-5732, scheduler/schedule_one_podgroup.py
pod_group_scheduling_placement_algorithm) over the scheduler's real pieces and a FakeClient
(tests/unit/scheduler/harness.py): what the real-process tests (S-PG-TAS-*) do not reach."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)
from kemu.component.version import Version
from kemu.scheduling.config import config_from_dict, scheduler_registry
from kemu.scheduling.framework_handle import FrameworkOptions
from kemu.scheduling.runtime import Framework
from kemu.testing.builders import make_gang_pod_group, make_node, make_pod
from tests.unit.scheduler.harness import Env, env, settle

pytestmark = pytest.mark.anyio

RACK = "example.com/rack"


def gates(minor: int) -> FeatureGates:
    overrides = {GENERIC_WORKLOAD: True, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: True}
    if minor < 37:
        overrides[GANG_SCHEDULING] = True
    return FeatureGates.for_version(Version(1, minor), overrides)


def member(name: str) -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(name)
        .scheduler_name("default-scheduler")
        .pod_group("g")
        .req(cpu="1")
        .obj()
    )


def group(key: str) -> types_pb2.PodGroup:
    pg = make_gang_pod_group("g", 2)
    pg.spec.scheduling_constraints.topology.add(key=key)
    return pg


async def message(e: Env, minor: int) -> str:
    pg = await e.client.get(types_pb2.PodGroup, "g", "default")
    kind = "PodGroupInitiallyScheduled" if minor >= 37 else "PodGroupScheduled"
    return next(c.message for c in pg.status.conditions if c.type == kind)


async def bound(e: Env) -> dict[str, str]:
    pods = (await e.client.list(types_pb2.Pod, "default")).items
    return {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}


@pytest.mark.parametrize("minor", [36, 37])
async def test_a_key_no_node_has_leaves_no_placement(minor: int) -> None:
    async with env(gates(minor)) as e:
        e.client.add(make_node("n1").capacity(cpu="4", memory="1Gi", pods="10").obj())
        e.client.add(group("example.com/nowhere"))
        for name in ("a", "b"):
            e.add(member(name))
        await settle()
        await e.cycle()
        assert await bound(e) == {}
        assert (await message(e, minor)).startswith("0/0 placements are available")


@pytest.mark.parametrize("minor", [36, 37])
async def test_the_group_goes_to_the_rack_that_fits_it(minor: int) -> None:
    async with env(gates(minor)) as e:
        for name, rack, cpu in (("n1", "a", "1"), ("n2", "a", "1"), ("n3", "b", "2")):
            node = make_node(name).capacity(cpu=cpu, memory="1Gi", pods="10").label(RACK, rack)
            e.client.add(node.obj())
        e.client.add(group(RACK))
        for name in ("a", "b"):
            e.add(member(name))
        await settle()
        await e.cycle()
        await settle()
        # Both racks fit two 1-cpu members; rack-b's one node is fuller once they are in
        # (MostAllocated over the rack): both go to n3.
        assert await bound(e) == {"a": "n3", "b": "n3"}


async def test_1_36_refuses_a_second_placement_generate_plugin() -> None:
    config = config_from_dict(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"plugins": {"placementGenerate": {"enabled": [{"name": "NodePoolPlacement"}]}}}
            ],
        }
    )
    with pytest.raises(ValueError, match="at most one placement generate plugin is allowed"):
        Framework(
            config.profiles[0], scheduler_registry(), options=FrameworkOptions(gates=gates(36))
        )
    fwk = Framework(
        config.profiles[0], scheduler_registry(), options=FrameworkOptions(gates=gates(37))
    )
    assert [p.name() for p in fwk.placement_generate_plugins()] == [
        "TopologyPlacementGenerator",
        "NodePoolPlacement",
    ]
