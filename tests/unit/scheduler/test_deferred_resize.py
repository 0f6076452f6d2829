"""KEP-5836 in the scheduler process (KEP-5836's design, keps/sig-scheduling/5836-*; test/integration/scheduler/preemption/deferred_resize_preemption_test.go S-RPE-1, -3, -4, -6,
-7, -8; invariant 9 of kemu.testing.invariants): the event handlers put a bound pod with a Deferred resize into the
queue and take it out again, its cycle never assumes, nominates or writes PodScheduled=False,
it always goes back to the queue, and only events on its own node bring it back.

The real pieces as scheduler/app.py wires them (informers over kemu's FakeClient, Cache,
PriorityQueue with the profile's queueing hints, EventHandlers, the default profile's Framework
with the preemption executor, Scheduler); only the event recorder is a fake.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.eviction import DISRUPTION_TARGET
from kemu.scheduling.plugins import deferred_pod_scheduling, node_resources_fit
from kemu.testing.builders import make_node
from tests.unit.scheduler.harness import Env, env, settle
from tests.unit.scheduling.deferred_builders import (
    preemptor,
    resize_gates,
    running,
    with_deferral,
    without_deferral,
)


def s_rpe_1(client: FakeClient) -> None:
    """Node 300m/300; victim-1 low 200m/100; the preemptor high, 300m/100 wanted, 100m held."""
    client.add(make_node("node1").capacity(cpu="300m", memory="300", pods="10").obj())
    client.add(running("victim-1", "node1", cpu="200m", priority=0))
    client.add(preemptor())


# ---------------------------------------------------------------- item 1: the handlers (S-RPE-8)


async def test_s_rpe_8_a_deferred_pod_present_at_start_up_is_queued_and_cached() -> None:
    async with env(setup=s_rpe_1) as e:
        assert e.queued() == {"active": ["preemptor"], "backoff": [], "unschedulable": []}
        assert e.cached("preemptor") and e.cached("victim-1")


@pytest.mark.parametrize(
    "gates",
    [
        pytest.param(resize_gates(False), id="gate-off"),
        pytest.param(resize_gates(True, Version(1, 36)), id="before-1.37"),
    ],
)
async def test_without_the_gate_an_assigned_pod_never_enters_the_queue(
    gates: FeatureGates,
) -> None:
    async with env(gates, setup=s_rpe_1) as e:
        assert len(e.queue) == 0 and e.queue.len_in_flight() == 0
        assert e.cached("preemptor")
        await e.update_status(without_deferral(preemptor()))
        await e.update_status(preemptor())
        await settle()
        assert len(e.queue) == 0


async def test_a_pod_of_another_scheduler_is_not_queued() -> None:
    def setup(client: FakeClient) -> None:
        client.add(make_node("node1").capacity(cpu="300m", memory="300").obj())
        other = preemptor()
        other.spec.scheduler_name = "other-scheduler"
        client.add(other)

    async with env(setup=setup) as e:
        assert len(e.queue) == 0 and e.cached("preemptor")


async def test_s_rpe_8_an_update_that_defers_queues_and_one_that_clears_dequeues() -> None:
    def setup(client: FakeClient) -> None:
        client.add(make_node("node1").capacity(cpu="300m", memory="300").obj())
        client.add(running("pod", "node1", cpu="100m"))

    async with env(setup=setup) as e:
        assert len(e.queue) == 0
        deferred = with_deferral(running("pod", "node1", cpu="100m"))
        await e.update_status(deferred)
        await settle()
        assert e.where("pod") == "active"
        await e.update_status(running("pod", "node1", cpu="100m"))  # condition gone
        await settle()
        assert len(e.queue) == 0 and e.cached("pod")


async def test_s_rpe_8_deleting_the_deferred_pod_removes_it_from_queue_and_cache() -> None:
    async with env(setup=s_rpe_1) as e:
        await e.client.delete(types_pb2.Pod, "preemptor", "default", grace_period_seconds=0)
        await settle()
        assert len(e.queue) == 0 and not e.cached("preemptor")


async def test_an_update_of_a_queued_deferred_pod_reaches_the_queues_copy() -> None:
    async with env(setup=s_rpe_1) as e:
        await e.patch_spec_cpu("preemptor", "250m")
        await settle()
        queued = e.queue.get_pod("default", "preemptor")
        assert queued is not None
        assert queued.pod.spec.containers[0].resources.requests["cpu"] == "250m"


# ---------------------------------------------------------------- items 4-6: the cycle


async def test_s_rpe_1_the_cycle_preempts_the_victim_and_requeues_without_nnn() -> None:
    async with env(setup=s_rpe_1) as e:
        assert await e.cycle() == "preemptor"
        # The victim: DisruptionTarget, then a graceful DELETE.
        assert ("patch", "victim-1", "status") in e.writes()
        assert ("delete", "victim-1", "") in e.writes()
        patch: Any = e.patches("victim-1")[0]
        assert any(c["type"] == DISRUPTION_TARGET for c in patch["status"]["conditions"])
        # The preemptor: no write at all (no NNN, no PodScheduled=False), back in the pool.
        assert [w for w in e.writes() if w[1] == "preemptor"] == []
        assert (
            e.queue.nominator.nominated_node_name(
                (await e.get("preemptor")).metadata.uid  # type: ignore[union-attr]
            )
            is None
        )
        assert e.where("preemptor") == "unschedulable"
        assert e.cached("preemptor")
        pod = await e.get("preemptor")
        assert pod is not None and pod.status.nominated_node_name == ""
        assert [(c.type, c.status) for c in pod.status.conditions if c.type == "PodScheduled"] == [
            ("PodScheduled", "True")
        ]
        assert not [ev for ev in e.recorder.events if ev == ("preemptor", "FailedScheduling")]


async def test_s_rpe_1_the_victims_deletion_brings_the_pod_back_and_it_is_parked() -> None:
    async with env(setup=s_rpe_1) as e:
        await e.cycle()
        # The fake API deletes bound pods gracefully; the kubelet would finish it.
        await e.client.delete(types_pb2.Pod, "victim-1", "default", grace_period_seconds=0)
        await settle()
        assert e.where("preemptor") in ("active", "backoff")
        e.scheduler.clock.advance(11)  # type: ignore[attr-defined]
        e.queue.flush_backoff_q_completed()
        e.client.clear_actions()
        assert await e.cycle() == "preemptor"
        # It fits now: parked by DeferredPodScheduling's Permit, never bound, never assumed.
        assert e.writes() == []
        assert e.where("preemptor") == "unschedulable"
        assert not e.cache.is_assumed_pod(await e.get("preemptor"))  # type: ignore[arg-type]
        qpi = e.queue.get_pod("default", "preemptor")
        assert qpi is not None and qpi.unschedulable_plugins == {deferred_pod_scheduling.NAME}


async def test_s_rpe_3_preemption_policy_never_evicts_nothing_and_stays_queued() -> None:
    def setup(client: FakeClient) -> None:
        client.add(make_node("node1").capacity(cpu="300m", memory="300", pods="10").obj())
        client.add(running("victim-1", "node1", cpu="200m", priority=0))
        p = preemptor()
        p.spec.preemption_policy = "Never"
        client.add(p)

    async with env(setup=setup) as e:
        await e.cycle()
        assert e.writes() == []
        assert e.where("preemptor") == "unschedulable"


async def test_s_rpe_4_a_resize_that_fits_is_parked_with_no_write() -> None:
    def setup(client: FakeClient) -> None:
        client.add(make_node("node1").capacity(cpu="300m", memory="300", pods="10").obj())
        client.add(preemptor())

    async with env(setup=setup) as e:
        await e.cycle()
        assert e.writes() == []
        assert e.where("preemptor") == "unschedulable"
        assert e.queue.len_in_flight() == 0


async def test_s_rpe_5_a_node_that_disables_resize_preemption_evicts_nothing() -> None:
    def setup(client: FakeClient) -> None:
        client.add(
            make_node("node1")
            .capacity(cpu="300m", memory="300", pods="10")
            .disable_resize_preemption("test-operator")
            .obj()
        )
        client.add(running("victim-1", "node1", cpu="200m", priority=0))
        client.add(preemptor())

    async with env(setup=setup) as e:
        await e.cycle()
        assert e.writes() == []
        assert e.where("preemptor") == "unschedulable"


async def test_a_deferred_pod_whose_condition_cleared_in_flight_is_not_requeued() -> None:
    async with env(setup=s_rpe_1) as e:
        qpi = await e.queue.pop()
        assert qpi is not None
        await e.update_status(without_deferral(preemptor()))
        await settle()
        await e.scheduler.schedule_one(qpi)
        await settle()
        assert len(e.queue) == 0 and e.queue.len_in_flight() == 0


# ---------------------------------------------------------------- item 7: requeue (S-RPE-6/7)


def s_rpe_6(client: FakeClient) -> None:
    """node1 200m: other-pod high 200m, the deferred pod low 100m wanted, 50m held; node2 500m
    with irrelevant-pod 200m."""
    client.add(make_node("node1").capacity(cpu="200m", memory="1Gi", pods="10").obj())
    client.add(make_node("node2").capacity(cpu="500m", memory="1Gi", pods="10").obj())
    client.add(running("other-pod", "node1", cpu="200m", priority=2000))
    client.add(preemptor("deferred", cpu="100m", actual_cpu="50m", priority=0))
    client.add(running("irrelevant-pod", "node2", cpu="200m"))


@asynccontextmanager
async def parked(setup: object = s_rpe_6) -> AsyncIterator[Env]:
    async with env(setup=setup) as e:
        assert await e.cycle() == "deferred"
        assert e.where("deferred") == "unschedulable"
        qpi = e.queue.get_pod("default", "deferred")
        assert qpi is not None
        assert node_resources_fit.NAME in qpi.unschedulable_plugins
        yield e


async def test_s_rpe_6_pods_resized_or_relabelled_elsewhere_do_not_requeue() -> None:
    async with parked() as e:
        await e.actuate_cpu("irrelevant-pod", "100m")
        await settle()
        assert e.where("deferred") == "unschedulable"
        other = await e.get("other-pod")
        assert other is not None
        other.metadata.labels["new"] = "label"
        await e.client.update(other)
        await settle()
        assert e.where("deferred") == "unschedulable"
        await e.client.delete(types_pb2.Pod, "irrelevant-pod", "default", grace_period_seconds=0)
        await settle()
        assert e.where("deferred") == "unschedulable"


@pytest.mark.parametrize("trigger", ["other-scaled-down", "other-deleted", "own-scaled-down"])
async def test_s_rpe_6_events_on_its_own_node_requeue(trigger: str) -> None:
    async with parked() as e:
        if trigger == "other-scaled-down":
            await e.actuate_cpu("other-pod", "100m")
        elif trigger == "other-deleted":
            await e.client.delete(types_pb2.Pod, "other-pod", "default", grace_period_seconds=0)
        else:
            await e.patch_spec_cpu("deferred", "80m")
        await settle()
        assert e.where("deferred") in ("active", "backoff")


async def test_s_rpe_6_node_allocatable_growth_requeues_on_its_own_node_only() -> None:
    async with parked() as e:
        node2 = await e.client.get(types_pb2.Node, "node2")
        node2.status.allocatable["cpu"] = "1000m"
        await e.client.update_status(node2)
        await settle()
        assert e.where("deferred") == "unschedulable"
        node1 = await e.client.get(types_pb2.Node, "node1")
        node1.status.allocatable["cpu"] = "1000m"
        await e.client.update_status(node1)
        await settle()
        assert e.where("deferred") in ("active", "backoff")


def s_rpe_7(client: FakeClient) -> None:
    """S-RPE-6's setup with node1 disabling resize preemption from the start."""
    client.add(
        make_node("node1")
        .capacity(cpu="200m", memory="1Gi", pods="10")
        .disable_resize_preemption("test-operator")
        .obj()
    )
    client.add(make_node("node2").capacity(cpu="500m", memory="1Gi", pods="10").obj())
    client.add(running("victim", "node1", cpu="100m", priority=0))
    client.add(preemptor("deferred", cpu="150m", actual_cpu="50m", priority=1000))


async def test_s_rpe_7_only_re_enabling_preemption_on_its_own_node_requeues() -> None:
    async with env(setup=s_rpe_7) as e:
        assert await e.cycle() == "deferred"
        assert e.writes() == [] and e.where("deferred") == "unschedulable"

        async def set_policy(name: str, *owners: str) -> None:
            node = await e.client.get(types_pb2.Node, name)
            del node.spec.pod_preemption_policy.disable_resize_preemption[:]
            node.spec.pod_preemption_policy.disable_resize_preemption.extend(owners)
            if not owners:
                node.spec.ClearField("pod_preemption_policy")
            await e.client.update(node)
            await settle()

        await set_policy("node2", "someone")
        await set_policy("node2")
        assert e.where("deferred") == "unschedulable"
        await set_policy("node1", "test-operator", "another")
        assert e.where("deferred") == "unschedulable"
        await set_policy("node1")
        assert e.where("deferred") in ("active", "backoff")


def test_a_node_preemption_policy_change_is_upstreams_update_node_preemption_policy() -> None:
    from kemu.scheduling.events import ActionType
    from scheduler.event_handlers import node_update_action

    old = make_node("n").obj()
    new = make_node("n").disable_resize_preemption("x").obj()
    assert node_update_action(old, new) == ActionType.UPDATE_NODE_PREEMPTION_POLICY
    assert node_update_action(new, old) == ActionType.UPDATE_NODE_PREEMPTION_POLICY
