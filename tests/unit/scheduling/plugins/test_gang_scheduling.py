"""GangScheduling per emulated version (kemu/scheduling/plugins/gang_scheduling.py) and the pod
groups' membership and state (kemu/scheduling/pod_group_state.py)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import GANG_SCHEDULING, GENERIC_WORKLOAD, FeatureGates
from kemu.component.version import Version
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import gang_scheduling
from kemu.scheduling.plugins.gang_scheduling import PlacementProgress
from kemu.scheduling.pod_group_state import (
    GroupMembership,
    MembershipField,
    PodGroupKey,
    PodGroupStates,
)
from kemu.scheduling.status import Code
from kemu.testing.builders import make_gang_pod_group, make_gang_workload, make_pod
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory, FakeWaitingPod


def _gates(minor: int, *, on: bool = True) -> FeatureGates:
    overrides = {GENERIC_WORKLOAD: on}
    if minor < 37:
        overrides[GANG_SCHEDULING] = on
    return FeatureGates.for_version(Version(1, minor), overrides)


def _plugin(
    minor: int, informers: FakeInformerFactory, *, on: bool = True
) -> tuple[gang_scheduling.GangScheduling, FakeHandle]:
    handle = FakeHandle(informers=informers)
    handle.fake_gates = _gates(minor, on=on)
    handle.pod_groups = PodGroupStates(GroupMembership.of(handle.fake_gates), handle.fake_clock)
    return gang_scheduling.new({}, handle), handle


def _member(name: str, group: str = "pg") -> types_pb2.Pod:
    return make_pod(name).uid(name).pod_group(group).obj()


def test_membership_per_version_and_gate() -> None:
    pod = make_pod("p").pod_group("pg").workload_ref("w", "g", "r1").obj()
    assert GroupMembership.of(_gates(35)).key(pod) == PodGroupKey("default", "w-g-r1", "w", "g")
    assert GroupMembership.of(_gates(36)).key(pod) == PodGroupKey("default", "pg")
    assert GroupMembership.of(_gates(37)).key(pod) == PodGroupKey("default", "pg")
    off = GroupMembership.of(_gates(36, on=False))
    assert off.field is MembershipField.NONE and off.key(pod) is None
    assert GroupMembership.of(_gates(37)).key(make_pod("lonely").obj()) is None
    # A 1.34 scheduler (no GenericWorkload yet) ignores groups, whatever the apiserver serves.
    at_1_34 = GroupMembership.of(FeatureGates.for_version(Version(1, 34)))
    assert at_1_34.key(pod) is None


def test_kep_5836_a_deferred_resize_is_never_a_member() -> None:
    membership = GroupMembership.of(_gates(37), resize_preemption=True)
    pod = make_pod("p").pod_group("pg").node("n1").obj()
    pod.status.conditions.add(type="PodResizePending", status="True", reason="Deferred")
    assert membership.key(pod) is None


def test_state_moves_members_between_unscheduled_assumed_and_assigned() -> None:
    states = PodGroupStates(GroupMembership.of(_gates(36)), FakeHandle().fake_clock)
    a, b = _member("a"), _member("b")
    states.add_pod(a)
    states.add_pod(b)
    group = states.get(PodGroupKey("default", "pg"))
    assert group is not None and group.all_pods_count() == 2
    states.assume_pod(a)
    assert group.assumed_pods() == {"a"} and group.scheduled_pods_count() == 1
    bound = types_pb2.Pod()
    bound.CopyFrom(a)
    bound.spec.node_name = "n1"
    states.update_pod(a, bound)
    assert group.assigned_pods() == {"a"} and group.assumed_pods() == set()
    states.forget_pod(b)
    assert [p.metadata.name for p in group.unscheduled_pods()] == ["b"]
    states.delete_pod(bound)
    states.delete_pod(b)
    assert states.get(PodGroupKey("default", "pg")) is None


def test_1_36_pre_enqueue_waits_for_the_pod_group_then_min_count() -> None:
    informers = FakeInformerFactory()
    plugin, handle = _plugin(36, informers)
    a = _member("a")
    assert handle.pod_groups is not None
    handle.pod_groups.add_pod(a)
    status = plugin.pre_enqueue(a)
    assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == 'waiting for pods\'s pod group "pg" to appear in scheduling queue'
    informers.pod_groups.objs.append(make_gang_pod_group("pg", 2))
    assert plugin.pre_enqueue(a).message() == (
        "waiting for minCount pods from a gang to appear in scheduling queue"
    )
    handle.pod_groups.add_pod(_member("b"))
    assert plugin.pre_enqueue(a).is_success()


def test_1_37_fixes_the_typo_and_has_no_permit() -> None:
    informers = FakeInformerFactory()
    plugin, handle = _plugin(37, informers)
    a = _member("a")
    assert plugin.pre_enqueue(a).message() == (
        'waiting for pod\'s pod group "pg" to appear in scheduling queue'
    )
    informers.pod_groups.objs.append(make_gang_pod_group("pg", 2))
    status, _ = plugin.permit(CycleState(), a, "n1")
    assert status.is_success()


def test_1_35_workload_messages_reserve_and_permit_quorum() -> None:
    informers = FakeInformerFactory()
    plugin, handle = _plugin(35, informers)
    pods = [make_pod(n).uid(n).workload_ref("w", "g").obj() for n in ("a", "b")]
    assert plugin.pre_enqueue(pods[0]).message() == (
        'waiting for pods\'s workload "w" to appear in scheduling queue'
    )
    informers.workloads.objs.append(make_gang_workload("w", {"other": 2}))
    assert plugin.pre_enqueue(pods[0]).message() == (
        'pod group "g" doesn\'t exist for a workload "w"'
    )
    informers.workloads.objs[0] = make_gang_workload("w", {"g": 2})
    assert handle.pod_groups is not None
    for p in pods:
        handle.pod_groups.add_pod(p)
    assert plugin.pre_enqueue(pods[0]).is_success()
    # The first member waits for the group's deadline (5 minutes) and activates the other.
    plugin.reserve(CycleState(), pods[0], "n1")
    status, timeout = plugin.permit(CycleState(), pods[0], "n1")
    assert status.code is Code.WAIT
    assert status.message() == "waiting for minCount pods from a gang to be waiting on permit"
    assert timeout == 300.0
    assert [p.metadata.name for p in handle.activated] == ["b"]
    handle.waiting_pods["a"] = FakeWaitingPod(pods[0], plugins=["GangScheduling"])
    # The deadline is shared: a minute later the next one gets 4 minutes.
    handle.fake_clock.advance(60)
    plugin.reserve(CycleState(), pods[1], "n2")
    plugin.unreserve(CycleState(), pods[1], "n2")
    status, _ = plugin.permit(CycleState(), pods[1], "n2")
    assert status.code is Code.WAIT
    assert timeout_of(handle, PodGroupKey("default", "w-g", "w", "g")) == 240.0
    plugin.reserve(CycleState(), pods[1], "n2")
    status, _ = plugin.permit(CycleState(), pods[1], "n2")
    assert status.is_success()
    assert handle.waiting_pods["a"].allowed_by == ["GangScheduling"]


def timeout_of(handle: FakeHandle, key: PodGroupKey) -> float:
    assert handle.pod_groups is not None
    group = handle.pod_groups.get(key)
    assert group is not None
    return group.scheduling_timeout()


def test_1_36_permit_message_and_fixed_timeout() -> None:
    informers = FakeInformerFactory(pod_groups=[make_gang_pod_group("pg", 2)])
    plugin, handle = _plugin(36, informers)
    a = _member("a")
    assert handle.pod_groups is not None
    handle.pod_groups.add_pod(a)
    handle.pod_groups.assume_pod(a)
    status, timeout = plugin.permit(CycleState(), a, "n1")
    assert (status.code, status.message(), timeout) == (
        Code.WAIT,
        "waiting for minCount pods from a gang to be scheduled",
        300.0,
    )


def test_placement_feasible_messages() -> None:
    informers = FakeInformerFactory(pod_groups=[make_gang_pod_group("pg", 3)])
    plugin, _ = _plugin(36, informers)
    key = PodGroupKey("default", "pg")
    no = plugin.placement_feasible(key, PlacementProgress(remaining=1, scheduled=1))
    assert (no.code, no.message()) == (
        Code.UNSCHEDULABLE,
        "minCount (3) cannot be satisfied: 1 scheduled, 1 remaining",
    )
    wait = plugin.placement_feasible(key, PlacementProgress(remaining=2, scheduled=1))
    assert (wait.code, wait.message()) == (
        Code.WAIT,
        "minCount (3) is not yet satisfied: 1 scheduled, 2 remaining",
    )
    assert plugin.placement_feasible(key, PlacementProgress(0, 3)).is_success()


def test_placement_feasible_of_a_basic_group_counts_one_at_1_37() -> None:
    basic = make_gang_pod_group("pg", 1)
    basic.spec.scheduling_policy.ClearField("gang")
    basic.spec.scheduling_policy.basic.SetInParent()
    key = PodGroupKey("default", "pg")
    plugin_136, _ = _plugin(36, FakeInformerFactory(pod_groups=[basic]))
    assert plugin_136.placement_feasible(key, PlacementProgress(0, 0)).is_success()
    plugin, _ = _plugin(37, FakeInformerFactory(pod_groups=[basic]))
    wait = plugin.placement_feasible(key, PlacementProgress(remaining=2, scheduled=0))
    assert (wait.code, wait.message()) == (
        Code.WAIT,
        "minCount (1) is not yet satisfied: 0 scheduled, 2 remaining",
    )
    no = plugin.placement_feasible(key, PlacementProgress(remaining=0, scheduled=0))
    assert (no.code, no.message()) == (
        Code.UNSCHEDULABLE,
        "minCount (1) cannot be satisfied: 0 scheduled, 0 remaining",
    )
    assert plugin.placement_feasible(key, PlacementProgress(1, 1)).is_success()


def test_hints() -> None:
    old, new = make_gang_pod_group("pg", 3), make_gang_pod_group("pg", 2)
    plugin, _ = _plugin(36, FakeInformerFactory())
    a = _member("a")
    assert plugin.is_schedulable_after_pod_added(a, None, _member("b")) == 1
    assert plugin.is_schedulable_after_pod_added(a, None, _member("c", "other")) == 0
    assert plugin.is_schedulable_after_pod_group_updated(a, old, new) == 1
    assert plugin.is_schedulable_after_pod_group_updated(a, new, old) == 0


def test_gates_off_the_plugin_does_nothing() -> None:
    plugin, _ = _plugin(36, FakeInformerFactory(), on=False)
    assert plugin.pre_enqueue(_member("a")).is_success()
    assert plugin.events_to_register() == []
