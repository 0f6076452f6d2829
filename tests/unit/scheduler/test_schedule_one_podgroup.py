"""The pod-group scheduling cycle (scheduler/schedule_one_podgroup.py) at 1.36 and 1.37, over
the scheduler's real pieces and a FakeClient (tests/unit/scheduler/harness.py)."""

from __future__ import annotations

import re

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import (
    GANG_SCHEDULING,
    GENERIC_WORKLOAD,
    POD_GROUP_PREEMPTION_POLICY,
    WORKLOAD_AWARE_PREEMPTION,
    FeatureGates,
)
from kemu.component.version import Version
from kemu.scheduling.plugins.default_preemption import MEMBER_NOT_ELIGIBLE_WAP, DefaultPreemption
from kemu.scheduling.status import Code, Status
from kemu.testing.builders import make_gang_pod_group, make_pod
from tests.unit.scheduler.harness import Env, env, settle

pytestmark = pytest.mark.anyio


def gates(minor: int) -> FeatureGates:
    overrides = {GENERIC_WORKLOAD: True}
    if minor < 37:
        overrides[GANG_SCHEDULING] = True
    return FeatureGates.for_version(Version(1, minor), overrides)


def condition_type(minor: int) -> str:
    return "PodGroupInitiallyScheduled" if minor >= 37 else "PodGroupScheduled"


def member(name: str, group: str = "g", cpu: str = "200m", priority: int = 0) -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(name)
        .scheduler_name("default-scheduler")
        .pod_group(group)
        .req(cpu=cpu)
        .priority(priority)
        .obj()
    )


async def condition(e: Env, minor: int) -> tuple[str, str, str] | None:
    pg = await e.client.get(types_pb2.PodGroup, "g", "default")
    for c in pg.status.conditions:
        if c.type == condition_type(minor):
            return c.status, c.reason, c.message
    return None


def attempts(e: Env, result: str) -> float:
    metrics = e.scheduler.pod_group_metrics
    assert metrics is not None
    for family in metrics.schedule_attempts.collect():
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels["result"] == result:
                return sample.value
    return 0.0


async def bound(e: Env) -> dict[str, str]:
    pods = (await e.client.list(types_pb2.Pod, "default")).items
    return {p.metadata.name: p.spec.node_name for p in pods if p.spec.node_name}


@pytest.mark.parametrize("minor", [36, 37])
async def test_one_cycle_places_the_whole_group(minor: int) -> None:
    async with env(gates(minor)) as e:
        e.node("n1", cpu="1")
        e.client.add(make_gang_pod_group("g", 3))
        for name in ("a", "b", "c"):
            e.add(member(name))
        await settle()
        await e.cycle()  # one pop: the group's other members come with it
        assert e.queued() == {"active": [], "backoff": [], "unschedulable": []}
        await settle()
        assert await bound(e) == {"a": "n1", "b": "n1", "c": "n1"}
        assert await condition(e, minor) == ("True", "Scheduled", "")
        assert attempts(e, "scheduled") == 1


@pytest.mark.parametrize(
    ("minor", "group_message", "member_message"),
    [
        (
            36,
            "pod group is unschedulable",
            r'one or more plugins asked to wait and no plugin rejected pod "\w"',
        ),
        (
            37,
            # (workload-aware preemption, on at 1.37, found nothing to preempt)
            "minCount (3) cannot be satisfied: 2 scheduled, 0 remaining, "
            "pod group preemption: No preemption victims found for incoming preemptor",
            r"minCount \(3\) (is not yet|cannot be) satisfied: \d scheduled, \d remaining",
        ),
    ],
)
async def test_a_group_that_does_not_fit_goes_back_whole(
    minor: int, group_message: str, member_message: str
) -> None:
    async with env(gates(minor)) as e:
        e.node("n1", cpu="500m")
        e.client.add(make_gang_pod_group("g", 3))
        for name in ("a", "b", "c"):
            e.add(member(name))
        await settle()
        await e.cycle()
        await settle()
        assert await bound(e) == {}
        # Nothing stays assumed: the cycle was a simulation.
        assert not any(e.cached(n) for n in ("a", "b", "c"))
        queued = e.queued()
        assert sorted(queued["unschedulable"] + queued["backoff"]) == ["a", "b", "c"]
        assert await condition(e, minor) == ("False", "Unschedulable", group_message)
        assert attempts(e, "unschedulable") == 1
        messages = {
            name: msg
            for name, _, reason, _, msg in e.recorder.messages
            if reason == "FailedScheduling"
        }
        # Two were placed (their message says why the group was not complete); the one the
        # node had no room left for has its own.
        placed = sorted(n for n, m in messages.items() if re.fullmatch(member_message, m))
        assert len(placed) == 2, messages
        (left,) = {"a", "b", "c"} - set(placed)
        assert messages[left].startswith("0/1 nodes are available"), messages


async def test_members_are_tried_by_priority_then_age() -> None:
    """Room for one: the higher-priority member is the one placed (the group is Basic)."""
    async with env(gates(36)) as e:
        e.node("n1", cpu="200m")
        pg = make_gang_pod_group("g", 1)
        pg.spec.scheduling_policy.ClearField("gang")
        pg.spec.scheduling_policy.basic.SetInParent()
        e.client.add(pg)
        e.add(member("low", priority=1))
        e.add(member("high", priority=10))
        await settle()
        await e.cycle()
        await settle()
        assert await bound(e) == {"high": "n1"}


# ---------------------------------------------------------------- workload-aware preemption


def preemption_gates(minor: int, **extra: bool) -> FeatureGates:
    overrides = {GENERIC_WORKLOAD: True, **extra}
    if minor < 37:
        overrides[GANG_SCHEDULING] = True
    return FeatureGates.for_version(Version(1, minor), overrides)


def prioritized_group(name: str, min_count: int, priority: int) -> types_pb2.PodGroup:
    pg = make_gang_pod_group(name, min_count)
    pg.spec.priority = priority
    return pg


async def fill_with_low_gang(e: Env) -> None:
    """n1 (1 cpu) full with the bound members of a low-priority gang, disruptionMode All."""
    e.node("n1", cpu="1")
    low = prioritized_group("low", 2, 1)
    low.spec.disruption_mode.all.SetInParent()
    e.client.add(low)
    for name in ("low-a", "low-b"):
        pod = member(name, "low", cpu="500m", priority=1)
        pod.spec.node_name = "n1"
        pod.spec.termination_grace_period_seconds = 0  # (deleted at once: no kubelet)
        e.add(pod)


def preemption_attempts(e: Env) -> dict[str, float]:
    metrics = e.scheduler.pod_group_metrics
    assert metrics is not None
    out: dict[str, float] = {}
    for family in metrics.workload_preemption_attempts.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                out[sample.labels["result"]] = sample.value
    return out


@pytest.mark.parametrize(
    ("minor", "overrides"),
    [(36, {WORKLOAD_AWARE_PREEMPTION: True}), (37, {})],
)
async def test_a_gang_preempts_a_lower_priority_gang_and_is_nominated(
    minor: int, overrides: dict[str, bool]
) -> None:
    async with env(preemption_gates(minor, **overrides)) as e:
        await fill_with_low_gang(e)
        e.client.add(prioritized_group("g", 2, 100))
        for name in ("a", "b"):
            e.add(member(name, cpu="500m", priority=100))
        await settle()
        await e.cycle()
        await settle()
        assert await e.get("low-a") is None and await e.get("low-b") is None
        for name in ("a", "b"):
            pod = await e.get(name)
            assert pod is not None and pod.status.nominated_node_name == "n1"
            assert not pod.spec.node_name
        assert await condition(e, minor) == (
            "False",
            "Unschedulable",
            "pod group is waiting for preemption to complete",
        )
        assert attempts(e, "waiting_on_preemption") == 1
        assert preemption_attempts(e) == {"Success": 1.0}
        # The victims' deletions moved the members (to backoffQ); once their backoff is
        # over, the next cycle binds them on n1.
        queued = e.queued()
        assert sorted(queued["active"] + queued["backoff"]) == ["a", "b"], queued
        e.scheduler.clock.advance(11)  # type: ignore[attr-defined]
        e.queue.flush_backoff_q_completed()
        await e.cycle()
        await settle()
        assert await bound(e) == {"a": "n1", "b": "n1"}


def single_pod_preemption_attempts(e: Env) -> float:
    """scheduler_preemption_attempts_total (DefaultPreemption's PostFilter)."""
    for family in e.metrics.preemption_attempts.collect():
        for sample in family.samples:
            if sample.name.endswith("_total"):
                return sample.value
    return 0.0


def failed_scheduling(e: Env) -> dict[str, str]:
    return {
        name: msg for name, _, reason, _, msg in e.recorder.messages if reason == "FailedScheduling"
    }


async def test_s_pg_10_1_36_members_preempt_alone_and_the_group_waits() -> None:
    """1.36 without WorkloadAwarePreemption: each member that fits nowhere runs
    DefaultPreemption's PostFilter inside the group cycle (real preemption, victims one by
    one), is assumed on its nominated node for the next members, and the complete group
    waits for the preemption: every member back nominated to n1, the PodGroup
    False/Unschedulable `pod group is waiting for preemption to complete`."""
    async with env(preemption_gates(36)) as e:
        await fill_with_low_gang(e)
        e.client.add(prioritized_group("g", 2, 100))
        for name in ("a", "b"):
            e.add(member(name, cpu="500m", priority=100))
        await settle()
        await e.cycle()
        await settle()
        assert await e.get("low-a") is None and await e.get("low-b") is None
        for name in ("a", "b"):
            pod = await e.get(name)
            assert pod is not None and pod.status.nominated_node_name == "n1"
            assert not pod.spec.node_name
        assert await condition(e, 36) == (
            "False",
            "Unschedulable",
            "pod group is waiting for preemption to complete",
        )
        assert attempts(e, "waiting_on_preemption") == 1
        assert preemption_attempts(e) == {}  # no workload-aware preemption
        assert single_pod_preemption_attempts(e) == 2  # one PostFilter per member
        messages = failed_scheduling(e)
        assert messages["a"] == "0/1 nodes are available: 1 Insufficient cpu.", messages
        e.scheduler.clock.advance(11)  # type: ignore[attr-defined]
        e.queue.flush_backoff_q_completed()
        e.queue.flush_unschedulable_pods_leftover()
        await e.cycle()
        await settle()
        assert await bound(e) == {"a": "n1", "b": "n1"}
        assert await condition(e, 36) == ("True", "Scheduled", "")


async def test_s_pg_11_1_36_an_incomplete_group_clears_the_nominations() -> None:
    """1.36 without WorkloadAwarePreemption, a gang of 3 where preemption makes room for two:
    the first two members' PostFilters preempt (upstream deletes the victims there and
    then), the third fits nowhere even with preemption; no Permit says Success, so the group
    is unschedulable and the members that required preemption go back with their Permit's
    message and no nomination."""
    async with env(preemption_gates(36)) as e:
        await fill_with_low_gang(e)
        e.client.add(prioritized_group("g", 3, 100))
        for name in ("a", "b", "c"):
            e.add(member(name, cpu="500m", priority=100))
        await settle()
        await e.cycle()
        await settle()
        assert await e.get("low-a") is None and await e.get("low-b") is None
        for name in ("a", "b", "c"):
            pod = await e.get(name)
            assert pod is not None and not pod.status.nominated_node_name, name
        group = await condition(e, 36)
        assert group is not None and group[:2] == ("False", "Unschedulable")
        assert attempts(e, "unschedulable") == 1
        messages = failed_scheduling(e)
        waited = [n for n, m in messages.items() if "asked to wait" in m]
        assert len(waited) == 2, messages


@pytest.mark.parametrize(
    ("minor", "overrides", "post_filters"),
    # (1.37 runs no member's PostFilter in the pod-group algorithm)
    [(36, {WORKLOAD_AWARE_PREEMPTION: True}, 2), (37, {}, 0)],
)
async def test_s_pg_12_with_workload_aware_preemption_members_do_not_preempt_alone(
    minor: int, overrides: dict[str, bool], post_filters: int
) -> None:
    """With workload-aware preemption on, 1.36 runs each member's own PostFilter, which refuses
    (upstream DefaultPreemption.PostFilter, `preemption: not eligible due to workload aware
    preemption enabled`); 1.37 runs none (upstream algorithm_podgroup.go podScheduler:
    preemption is the group's); the group's PodGroupPostFilter preempts instead."""
    async with env(preemption_gates(minor, **overrides)) as e:
        await fill_with_low_gang(e)
        e.client.add(prioritized_group("g", 2, 100))
        for name in ("a", "b"):
            e.add(member(name, cpu="500m", priority=100))
        await settle()
        await e.cycle()
        await settle()
        assert preemption_attempts(e) == {"Success": 1.0}
        assert single_pod_preemption_attempts(e) == post_filters
        plugin = e.scheduler.profiles["default-scheduler"].plugin("DefaultPreemption")
        assert isinstance(plugin, DefaultPreemption)
        pod = await e.get("a")
        assert pod is not None
        refusal = Status(Code.UNSCHEDULABLE, (MEMBER_NOT_ELIGIBLE_WAP,))
        assert plugin.pod_group_member_refusal(pod) == refusal


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            "never",
            "pod group preemption: not eligible due to preemptionPolicy=Never.",
        ),
        (
            "topology",
            "pod group preemption: not supported with topology constraints",
        ),
    ],
)
async def test_a_group_that_may_not_preempt(change: str, message: str) -> None:
    async with env(preemption_gates(37, **{POD_GROUP_PREEMPTION_POLICY: True})) as e:
        await fill_with_low_gang(e)
        pg = prioritized_group("g", 2, 100)
        if change == "never":
            pg.spec.preemption_policy = "Never"
        else:
            pg.spec.scheduling_constraints.topology.add(key="topology.kubernetes.io/zone")
        e.client.add(pg)
        for name in ("a", "b"):
            e.add(member(name, cpu="500m", priority=100))
        await settle()
        await e.cycle()
        await settle()
        assert await e.get("low-a") is not None and await e.get("low-b") is not None
        cond = await condition(e, 37)
        assert cond is not None and cond[2].endswith(message), cond


# ------------------------------------------------- victim units for a single pod's preemption


def bound_member(e: Env, name: str, group: str, node: str, priority: int, cpu: str = "1") -> None:
    pod = member(name, group, cpu=cpu, priority=priority)
    pod.spec.node_name = node
    pod.spec.termination_grace_period_seconds = 0
    e.add(pod)


def loose(name: str, priority: int, cpu: str = "1") -> types_pb2.Pod:
    return (
        make_pod(name)
        .uid(name)
        .scheduler_name("default-scheduler")
        .req(cpu=cpu)
        .priority(priority)
        .obj()
    )


async def test_s_pg_8_a_single_pod_preempting_an_all_group_takes_its_pods_on_every_node() -> None:
    async with env(preemption_gates(37)) as e:
        e.node("n1", cpu="1")
        e.node("n2", cpu="1")
        low = prioritized_group("low", 2, 1)
        low.spec.disruption_mode.all.SetInParent()
        e.client.add(low)
        bound_member(e, "low-a", "low", "n1", 1)
        bound_member(e, "low-b", "low", "n2", 1)
        e.add(loose("p", 100))
        await settle()
        await e.cycle()
        await settle()
        # p needs one node; the victim is the whole group, its pod on the other node too.
        assert await e.get("low-a") is None and await e.get("low-b") is None
        p = await e.get("p")
        assert p is not None and p.status.nominated_node_name in ("n1", "n2")


async def test_s_pg_8_a_single_mode_pod_is_a_victim_at_its_pod_group_priority() -> None:
    async with env(preemption_gates(37)) as e:
        e.node("n1", cpu="1")
        e.client.add(prioritized_group("single", 1, 200))  # Single (the default)
        bound_member(e, "s-a", "single", "n1", 1)  # its own priority: 1
        e.add(loose("p", 100))
        await settle()
        await e.cycle()
        await settle()
        # At the PodGroup's priority (200) the pod is no victim for p (100).
        assert await e.get("s-a") is not None
        p = await e.get("p")
        assert p is not None and not p.status.nominated_node_name


async def test_a_stale_copy_never_turns_a_written_true_back_to_false() -> None:
    """The informer's copy of a group may not show yet the True the previous cycle wrote (a
    CompositePodGroup tree's next cycle follows within milliseconds): the condition patch is
    pinned to the copy's resourceVersion, the Conflict reads the group again, and the True
    stays; an up-to-date copy is written at once."""
    from scheduler.schedule_one_podgroup import patch_group_condition

    kind = condition_type(37)
    async with env(gates(37)) as e:
        stored = e.client.add(make_gang_pod_group("g", 2))
        assert isinstance(stored, types_pb2.PodGroup)
        stale = types_pb2.PodGroup()
        stale.CopyFrom(stored)
        await patch_group_condition(e.scheduler, stored, kind, ("True", "Scheduled", ""))
        assert await condition(e, 37) == ("True", "Scheduled", "")
        unschedulable = ("False", "Unschedulable", "no pods were schedulable")
        await patch_group_condition(e.scheduler, stale, kind, unschedulable)
        assert await condition(e, 37) == ("True", "Scheduled", "")
        # A group never scheduled: its current copy's False is written.
        other = e.client.add(make_gang_pod_group("h", 2))
        assert isinstance(other, types_pb2.PodGroup)
        await patch_group_condition(e.scheduler, other, kind, unschedulable)
        current = await e.client.get(types_pb2.PodGroup, "h", "default")
        assert [(c.status, c.reason) for c in current.status.conditions] == [
            ("False", "Unschedulable")
        ]
