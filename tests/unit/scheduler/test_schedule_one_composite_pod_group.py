"""The pod-group cycle of a CompositePodGroup tree (scheduler/schedule_one_composite_pod_group.py)
over the scheduler's real pieces and a FakeClient (tests/unit/scheduler/harness.py)."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    COMPOSITE_POD_GROUP,
    GENERIC_WORKLOAD,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    FeatureGates,
)
from kemu.component.version import Version
from kemu.testing.builders import make_gang_pod_group, make_pod
from tests.unit.scheduler.harness import Env, env, settle

pytestmark = pytest.mark.anyio

GATES = FeatureGates.for_version(
    Version(1, 37),
    {GENERIC_WORKLOAD: True, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: True, COMPOSITE_POD_GROUP: True},
)


def cpg(name: str, min_groups: int, priority: int | None = None) -> types_pb2.CompositePodGroup:
    out = types_pb2.CompositePodGroup()
    out.metadata.name, out.metadata.namespace = name, "default"
    out.spec.scheduling_policy.gang.min_group_count = min_groups
    if priority is not None:
        out.spec.priority = priority
    return out


def child(name: str, min_count: int, parent: str = "root") -> types_pb2.PodGroup:
    pg = make_gang_pod_group(name, min_count)
    pg.spec.parent_composite_pod_group_name = parent
    return pg


def member(name: str, group: str, cpu: str = "200m", priority: int = 0) -> types_pb2.Pod:
    pod = make_pod(name).uid(name).scheduler_name("default-scheduler").pod_group(group)
    return pod.req(cpu=cpu).priority(priority).obj()


async def conditions(e: Env) -> dict[str, tuple[str, str, str]]:
    out: dict[str, tuple[str, str, str]] = {}
    groups: list[types_pb2.PodGroup | types_pb2.CompositePodGroup] = [
        *(await e.client.list(types_pb2.CompositePodGroup, "default")).items,
        *(await e.client.list(types_pb2.PodGroup, "default")).items,
    ]
    for obj in groups:
        for c in obj.status.conditions:
            out[obj.metadata.name] = (c.status, c.reason, c.message)
    return out


async def bound(e: Env) -> dict[str, str]:
    pods = (await e.client.list(types_pb2.Pod, "default")).items
    return {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}


async def test_a_cpg_gang_places_its_whole_tree_in_one_cycle() -> None:
    async with env(GATES) as e:
        e.node("n1", cpu="1")
        e.client.add(cpg("root", 2))
        e.client.add(child("a", 2))
        e.client.add(child("b", 2))
        for name, group in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")):
            e.add(member(name, group))
        await settle()
        await e.cycle()  # one pop: the whole tree comes with it
        assert e.queued() == {"active": [], "backoff": [], "unschedulable": []}
        await settle()
        assert set(await bound(e)) == {"a1", "a2", "b1", "b2"}
        got = await conditions(e)
        assert got["root"][:2] == ("True", "Scheduled")
        assert got["a"][:2] == got["b"][:2] == ("True", "Scheduled")


async def test_a_failed_parent_fails_the_child_that_fit() -> None:
    """Room for child a only: a succeeds alone but the CPG's minGroupCount fails, and its
    failure becomes a's (upstream completeCompositePodGroupAlgorithmResultMap): nothing binds,
    nothing stays assumed."""
    async with env(GATES) as e:
        e.node("n1", cpu="500m")
        e.client.add(cpg("root", 2))
        e.client.add(child("a", 2))
        e.client.add(child("b", 2))
        for name, group in (("a1", "a"), ("a2", "a"), ("b1", "b"), ("b2", "b")):
            e.add(member(name, group, cpu="250m"))
        await settle()
        await e.cycle()
        await settle()
        assert await bound(e) == {}
        assert not any(e.cached(n) for n in ("a1", "a2", "b1", "b2"))
        got = await conditions(e)
        assert got["root"][:2] == ("False", "Unschedulable")
        assert got["root"][2].startswith("0/1 placements are available, first placement status: ")
        assert "minCount (2) cannot be satisfied: 1 scheduled, 0 remaining" in got["root"][2]
        assert got["a"] == got["root"]  # the parent's status


async def test_a_tree_whose_priorities_differ_is_refused_with_upstreams_error() -> None:
    async with env(GATES) as e:
        e.node("n1", cpu="1")
        e.client.add(cpg("root", 1, priority=5))
        e.client.add(child("a", 1))
        e.add(member("a1", "a"))
        await settle()
        await e.cycle()
        await settle()
        assert await bound(e) == {}
        got = await conditions(e)
        message = (
            "all pod groups in a hierarchy should have the same priority as the root pod "
            'group\'s priority, got 0 ("default/a") and 5 ("default/root")'
        )
        assert got["root"] == ("False", "SchedulerError", message)
        assert got["a"] == ("False", "SchedulerError", message)
