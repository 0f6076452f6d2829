"""DeferredPodScheduling (KEP-5836, KEP-5836's DeferredPodScheduling plugin, pkg/scheduler/framework/plugins/deferredpodscheduling): PreFilter, Filter, Permit and the
queueing hints, with the gate on and off; and the plugins that Skip a Deferred pod at
PreFilter so that its cycle is about resources on its own node only."""

from __future__ import annotations

from types import ModuleType

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.scheduling.events import ActionType
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins import (
    deferred_pod_scheduling,
    inter_pod_affinity,
    node_affinity,
    node_name,
    node_unschedulable,
    node_volume_limits,
    taint_toleration,
    volume_binding,
    volume_restrictions,
    volume_zone,
)
from kemu.scheduling.plugins.deferred_pod_scheduling import (
    ERR_REASON_DIFFERENT_NODE,
    ERR_REASON_NODE_DISABLES_RESIZE_PREEMPTION,
    WAITING_FOR_KUBELET,
    DeferredPodScheduling,
)
from kemu.scheduling.status import Code
from kemu.scheduling.types import NodeInfo, PreFilterResult
from kemu.testing.builders import make_node, make_pod
from tests.unit.scheduling.deferred_builders import preemptor, resize_gates, running
from tests.unit.scheduling.plugins.fakes import FakeHandle, FakeInformerFactory
from tests.unit.scheduling.plugins.volume_fakes import bound_claim

Q, S = "QUEUE", "SKIP"


def handle(on: bool = True, version: Version | None = None) -> FakeHandle:
    h = FakeHandle()
    h.fake_gates = resize_gates(on) if version is None else resize_gates(on, version)
    return h


def plugin(on: bool = True) -> DeferredPodScheduling:
    return deferred_pod_scheduling.new({}, handle(on))


def node(name: str = "node1", *disabled_by: str) -> types_pb2.Node:
    b = make_node(name).capacity(cpu="300m", memory="300", pods="10")
    if disabled_by:
        b = b.disable_resize_preemption(*disabled_by)
    return b.obj()


def ordinary() -> types_pb2.Pod:
    return make_pod("new").req(cpu="100m").obj()


# ---------------------------------------------------------------- PreFilter / Filter / Permit


def test_pre_filter_skips_unless_the_gate_is_on_and_the_pod_is_deferred() -> None:
    state = CycleState()
    assert plugin(on=True).pre_filter(state, preemptor(), [])[1].code is Code.SUCCESS
    assert plugin(on=True).pre_filter(state, ordinary(), [])[1].code is Code.SKIP
    assert plugin(on=True).pre_filter(state, running("r", "node1", cpu="1"), [])[1].is_skip()
    assert plugin(on=False).pre_filter(state, preemptor(), [])[1].code is Code.SKIP


def test_the_gate_does_not_exist_before_1_37_so_the_plugin_is_a_no_op() -> None:
    p = deferred_pod_scheduling.new({}, handle(on=True, version=Version(1, 36)))
    assert not p.enabled
    assert p.pre_filter(CycleState(), preemptor(), [])[1].is_skip()
    assert p.permit(CycleState(), preemptor(), "node1")[0].is_success()


def test_filter_accepts_the_pods_own_node_with_resize_preemption_enabled() -> None:
    assert plugin().filter(CycleState(), preemptor(), NodeInfo(node())).is_success()


def test_filter_rejects_another_node_unresolvably() -> None:
    st = plugin().filter(CycleState(), preemptor(), NodeInfo(node("node2")))
    assert (st.code, st.reasons) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (ERR_REASON_DIFFERENT_NODE,),
    )


def test_s_rpe_5_filter_rejects_a_node_that_disables_resize_preemption() -> None:
    st = plugin().filter(CycleState(), preemptor(), NodeInfo(node("node1", "test-operator")))
    assert st.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == (ERR_REASON_NODE_DISABLES_RESIZE_PREEMPTION,)


def test_filter_of_an_unknown_node_is_an_error() -> None:
    assert plugin().filter(CycleState(), preemptor(), NodeInfo()).is_error()


def test_filter_and_permit_leave_other_pods_and_the_gate_off_alone() -> None:
    disabled = NodeInfo(node("node2", "x"))
    assert plugin().filter(CycleState(), ordinary(), disabled).is_success()
    assert plugin(on=False).filter(CycleState(), preemptor(), disabled).is_success()
    assert plugin().permit(CycleState(), ordinary(), "node1")[0].is_success()
    assert plugin(on=False).permit(CycleState(), preemptor(), "node1")[0].is_success()


def test_s_rpe_4_permit_parks_a_deferred_pod_that_fits() -> None:
    st, timeout = plugin().permit(CycleState(), preemptor(), "node1")
    assert (st.code, st.reasons, timeout) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        (WAITING_FOR_KUBELET,),
        0.0,
    )


# ---------------------------------------------------------------- queueing hints (S-RPE-7)


def test_it_registers_node_preemption_policy_updates_and_node_adds() -> None:
    events = [(e.event.resource.value, e.event.action) for e in plugin().events_to_register()]
    assert events == [
        ("Node", ActionType.UPDATE_NODE_PREEMPTION_POLICY),
        ("Node", ActionType.ADD),
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        pytest.param(node("node1", "a"), node("node1"), Q, id="re-enabled-on-own-node"),
        pytest.param(node("node1"), node("node1", "a"), S, id="disabled-on-own-node"),
        pytest.param(node("node1", "a"), node("node1", "a", "b"), S, id="still-disabled"),
        pytest.param(node("node2", "a"), node("node2"), S, id="re-enabled-on-another-node"),
    ],
)
def test_s_rpe_7_node_policy_hint(old: types_pb2.Node, new: types_pb2.Node, expected: str) -> None:
    assert plugin().is_schedulable_after_node_change(preemptor(), old, new).name == expected


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        pytest.param(node("node1"), Q, id="own-node-enabled"),
        pytest.param(node("node1", "a"), S, id="own-node-disabled"),
        pytest.param(node("node2"), S, id="another-node"),
    ],
)
def test_node_add_hint(new: types_pb2.Node, expected: str) -> None:
    assert plugin().is_schedulable_after_node_add(preemptor(), None, new).name == expected


def test_hints_skip_pods_that_are_not_deferred_and_with_the_gate_off() -> None:
    old, new = node("node1", "a"), node("node1")
    assert plugin().is_schedulable_after_node_change(ordinary(), old, new).name == S
    assert plugin(on=False).is_schedulable_after_node_change(preemptor(), old, new).name == S
    assert plugin(on=False).is_schedulable_after_node_add(preemptor(), None, new).name == S


def test_args_are_rejected() -> None:
    with pytest.raises(ValueError, match="unknown field"):
        deferred_pod_scheduling.new({"x": 1}, handle())


# ---------------------------------------------------------------- the plugins that Skip


@pytest.mark.parametrize(
    "module", [volume_binding, volume_restrictions, volume_zone, node_volume_limits]
)
def test_the_volume_plugins_skip_a_deferred_pod_at_pre_filter(module: ModuleType) -> None:
    """KEP-5836: a deferred resize is about resources on the pod's own node; the volume
    plugins Skip it with the gate on (with it off they run as for any pod with claims:
    test_volume_restrictions.py shows the conflict that made)."""
    pod = preemptor()
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = "data"
    claim = bound_claim("data", "pv1", access_modes=("ReadWriteOncePod",))
    claim.metadata.namespace = pod.metadata.namespace
    for on in (True, False):
        h = handle(on=on)
        h.informers = FakeInformerFactory(claims=[claim])
        plugin = module.new({}, h)
        assert plugin.skip_deferred is on
        if on:
            assert plugin.pre_filter(CycleState(), pod, [])[1].is_skip(), module.NAME


SKIPPING = {
    node_unschedulable.NAME: node_unschedulable.new,
    taint_toleration.NAME: taint_toleration.new,
    node_affinity.NAME: node_affinity.new,
    inter_pod_affinity.NAME: inter_pod_affinity.new,
}


@pytest.mark.parametrize("name", sorted(SKIPPING))
def test_plugins_irrelevant_to_resources_skip_a_deferred_pod_at_pre_filter(name: str) -> None:
    # Terms that make NodeAffinity and InterPodAffinity work for the pod otherwise.
    pod = preemptor()
    pod.spec.node_selector["zone"] = "a"
    term = make_pod("t").anti_affinity({"app": "x"}, "kubernetes.io/hostname").obj()
    pod.spec.affinity.CopyFrom(term.spec.affinity)
    on = SKIPPING[name]({}, handle(on=True))
    off = SKIPPING[name]({}, handle(on=False))
    assert on.pre_filter(CycleState(), pod, [])[1].is_skip()
    assert not off.pre_filter(CycleState(), pod, [])[1].is_skip()


@pytest.mark.parametrize("name", [node_unschedulable.NAME, taint_toleration.NAME])
def test_filter_only_plugins_got_a_pre_filter_that_passes_every_other_pod(name: str) -> None:
    p = SKIPPING[name]({}, handle(on=True))
    result, status = p.pre_filter(CycleState(), ordinary(), [])
    assert (result, status.code) == (None, Code.SUCCESS)


def test_node_name_restricts_a_deferred_pods_cycle_to_its_node() -> None:
    p = node_name.new({}, handle())
    result, status = p.pre_filter(CycleState(), preemptor(), [])
    assert status.is_success() and result == PreFilterResult(frozenset({"node1"}))
    assert p.filter(CycleState(), preemptor(), NodeInfo(node("node1"))).is_success()
    assert p.filter(CycleState(), preemptor(), NodeInfo(node("node2"))).code is (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )
