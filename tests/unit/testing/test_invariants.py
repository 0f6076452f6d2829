"""check_invariants on synthetic histories, one invariant at a time (violation caught, correct
history passes), and the recorder against the FakeClient."""

from __future__ import annotations

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.interface import ADDED, DELETED, MODIFIED
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    FeatureGates,
)
from kemu.component.version import DEFAULT_VERSION
from kemu.machinery.errors import Gone, Unavailable
from kemu.testing.builders import NodeBuilder, PodBuilder, make_node, make_pod
from kemu.testing.eventually import eventually
from kemu.testing.invariants import (
    NodeHistory,
    PodHistory,
    assert_invariants,
    check_invariants,
    record_nodes,
    record_pods,
)

NS = "ns"


class Story:
    """A synthetic pod history: every write gets the next resourceVersion, as etcd's."""

    def __init__(self) -> None:
        self.history = PodHistory(NS)
        self.nodes = NodeHistory()
        self.rv = 0
        self.events: list[types_pb2.Event] = []

    def write(self, pod: types_pb2.Pod | PodBuilder, event_type: str = MODIFIED) -> types_pb2.Pod:
        obj = pod.obj() if isinstance(pod, PodBuilder) else pod
        self.rv += 1
        obj.metadata.namespace = NS
        obj.metadata.uid = obj.metadata.uid or f"uid-{obj.metadata.name}"
        obj.metadata.resource_version = str(self.rv)
        self.history.record(event_type, obj)
        return obj

    def create(self, pod: PodBuilder) -> types_pb2.Pod:
        return self.write(pod, ADDED)

    def update(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        new = types_pb2.Pod()
        new.CopyFrom(pod)
        return new

    def mark_disruption_target(
        self, pod: types_pb2.Pod, reason: str = "PreemptionByScheduler"
    ) -> types_pb2.Pod:
        new = self.update(pod)
        new.status.conditions.add(type="DisruptionTarget", status="True", reason=reason)
        return self.write(new)

    def terminate(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        new = self.update(pod)
        new.metadata.deletion_timestamp.FromSeconds(1_000 + self.rv)
        return self.write(new)

    def remove(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        return self.write(self.update(pod), DELETED)

    def nominate(self, pod: types_pb2.Pod, node: str) -> types_pb2.Pod:
        new = self.update(pod)
        new.status.nominated_node_name = node
        return self.write(new)

    def bind(self, pod: types_pb2.Pod, node: str, *, clear_nnn: bool = True) -> types_pb2.Pod:
        new = self.update(pod)
        new.spec.node_name = node
        new.status.conditions.add(type="PodScheduled", status="True")
        if clear_nnn:
            new.status.nominated_node_name = ""
        return self.write(new)

    def preempt(self, victim: types_pb2.Pod, preemptor: types_pb2.Pod, node: str) -> None:
        """A Preempted event naming `victim` as the scheduler decided on it."""
        ev = types_pb2.Event(
            reason="Preempted",
            type="Normal",
            message=f"Preempted by pod {preemptor.metadata.uid} on node {node}",
            count=1,
        )
        ev.metadata.namespace = NS
        ev.metadata.name = f"{victim.metadata.name}.{len(self.events)}"
        ref = ev.involved_object
        ref.kind, ref.namespace, ref.name = "Pod", NS, victim.metadata.name
        ref.uid, ref.resource_version = victim.metadata.uid, victim.metadata.resource_version
        self.events.append(ev)

    def node(
        self, node: types_pb2.Node | NodeBuilder, event_type: str = MODIFIED
    ) -> types_pb2.Node:
        """A version of a node (created with ADDED), on the pods' resourceVersion clock."""
        obj = node.obj() if isinstance(node, NodeBuilder) else node
        self.rv += 1
        obj.metadata.uid = obj.metadata.uid or f"uid-{obj.metadata.name}"
        obj.metadata.resource_version = str(self.rv)
        self.nodes.record(event_type, obj)
        return obj

    def defer(self, pod: types_pb2.Pod) -> types_pb2.Pod:
        """The kubelet's PodResizePending=True/Deferred (the test plays it)."""
        new = self.update(pod)
        new.status.conditions.add(type="PodResizePending", status="True", reason="Deferred")
        return self.write(new)

    def check(self, *, clearing_gate_on: bool = True, **kwargs: object) -> list[str]:
        return check_invariants(
            self.history.versions,
            self.events,
            clearing_gate_on=clearing_gate_on,
            **kwargs,  # type: ignore[arg-type]
        )

    def check_resize(self, *, gate_on: bool = True, nodes: bool = True) -> list[str]:
        return self.check(
            resize_preemption_gate_on=gate_on, nodes=self.nodes.by_name() if nodes else None
        )


def low(name: str, node: str = "n1") -> PodBuilder:
    return make_pod(name).priority(1).node(node).condition("PodScheduled")


def high(name: str = "p") -> PodBuilder:
    return make_pod(name).priority(100)


def correct_preemption(s: Story) -> tuple[types_pb2.Pod, types_pb2.Pod]:
    """Upstream's sequence: the victim gets DisruptionTarget, is deleted gracefully, the
    preemptor is nominated, then bound once the victim is gone."""
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    v = s.mark_disruption_target(victim)
    v = s.terminate(v)
    preemptor = s.nominate(preemptor, "n1")
    s.remove(v)
    s.bind(preemptor, "n1")
    return victim, preemptor


def test_a_correct_preemption_has_no_violations():
    s = Story()
    correct_preemption(s)
    assert s.check() == []


# ---------------------------------------------------------------- (2)


def test_2_victim_deleted_before_getting_disruption_target_is_caught():
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    v = s.terminate(victim)
    v = s.mark_disruption_target(v)
    s.remove(v)
    [violation] = s.check()
    assert "ns/v" in violation and "terminating" in violation
    assert "DisruptionTarget" in violation


def test_2_victim_deleted_at_once_without_disruption_target_is_caught():
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.remove(victim)
    [violation] = s.check()
    assert "deleted" in violation and "DisruptionTarget" in violation


def test_2_before_1_27_the_victims_reason_is_preemption_by_kube_scheduler():
    """A scheduler emulating 1.25 (gate on) or 1.26 writes PreemptionByKubeScheduler
    (kubernetes#114623 renamed it in 1.27)."""
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    v = s.terminate(s.mark_disruption_target(victim, reason="PreemptionByKubeScheduler"))
    s.remove(v)
    assert s.check(disruption_reason="PreemptionByKubeScheduler") == []
    [violation] = s.check()
    assert "without the condition DisruptionTarget=True reason PreemptionByScheduler" in violation


def test_2_without_pod_disruption_conditions_the_victim_carries_no_condition():
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.remove(s.terminate(victim))
    assert s.check(disruption_reason=None) == []
    s = Story()
    correct_preemption(s)
    [violation] = s.check(disruption_reason=None)
    assert "only with PodDisruptionConditions" in violation


def test_2_victim_held_at_permit_is_exempt():
    s = Story()
    waiting = s.create(make_pod("w").priority(1))  # never bound: rejected at Permit
    preemptor = s.create(high())
    s.preempt(waiting, preemptor, "n1")
    s.remove(waiting)  # deleted later by someone else, without the condition
    assert s.check() == []


def test_2_victims_deleted_by_the_test_itself_can_be_exempted():
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.remove(victim)
    assert s.check(externally_deleted={"v"}) == []
    assert s.check(externally_deleted={"ns/v"}) == []


# ---------------------------------------------------------------- (3)


def test_3_victim_of_equal_priority_is_caught():
    s = Story()
    victim = s.create(low("v").priority(100))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    v = s.terminate(s.mark_disruption_target(victim))
    s.remove(v)
    [violation] = s.check()
    assert "priority 100 is not lower than the preemptor's 100" in violation


def test_3_victim_on_another_node_than_the_event_names_is_caught():
    s = Story()
    victim = s.create(low("v", node="n2"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.remove(s.terminate(s.mark_disruption_target(victim)))
    [violation] = s.check()
    assert "bound to n2, not to the event's node" in violation


def test_3_malformed_preempted_message_is_reported():
    s = Story()
    victim, _ = correct_preemption(s)
    s.events[0].message = "Preempted by somebody"
    [violation] = s.check()
    assert "not 'Preempted by pod <uid> on node <node>'" in violation


def test_3_a_victim_preempted_in_the_schedulers_memory_is_no_violation():
    """1.36+: a victim in PreBind (unbound when chosen) is cancelled in memory, not deleted,
    its event ending "(in kube-scheduler memory)." (kubernetes#135502)."""
    s = Story()
    victim = s.create(make_pod("v").priority(1))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.events[0].message += " (in kube-scheduler memory)."
    preemptor = s.nominate(preemptor, "n1")
    s.bind(preemptor, "n1")
    assert s.check() == []


# ---------------------------------------------------------------- (4)


def test_4_preemptor_with_preemption_policy_never_is_caught():
    s = Story()
    victim = s.create(low("v"))
    preemptor = s.create(high().preemption_policy("Never"))
    s.preempt(victim, preemptor, "n1")
    s.remove(s.terminate(s.mark_disruption_target(victim)))
    [violation] = s.check()
    assert "preemptionPolicy Never" in violation


def test_4_never_pods_may_be_victims_and_may_bind():
    s = Story()
    victim = s.create(low("v").preemption_policy("Never"))
    patient = s.create(make_pod("patient").priority(50).preemption_policy("Never"))
    preemptor = s.create(high())
    s.preempt(victim, preemptor, "n1")
    s.remove(s.terminate(s.mark_disruption_target(victim)))
    s.bind(patient, "n2")
    assert s.check() == []


# ---------------------------------------------------------------- (5)


def first_preemption(s: Story) -> tuple[types_pb2.Pod, types_pb2.Pod]:
    """The preemptor's first preemption on n1: x is terminating there, the preemptor nominated."""
    x = s.create(low("x"))
    preemptor = s.create(high())
    s.preempt(x, preemptor, "n1")
    x = s.terminate(s.mark_disruption_target(x))
    preemptor = s.nominate(preemptor, "n1")
    return x, preemptor


def test_5_new_deletion_while_an_earlier_victim_is_terminating_is_caught():
    s = Story()
    x, preemptor = first_preemption(s)
    late = s.create(low("late"))  # bound to n1 after x began terminating
    s.preempt(late, preemptor, "n1")
    s.terminate(s.mark_disruption_target(late))
    [violation] = s.check()
    assert "ns/late" in violation and "ns/x" in violation and "still held" in violation


def test_5_victims_of_one_preemption_are_deleted_in_parallel():
    s = Story()
    a = s.create(low("a"))
    b = s.create(low("b"))
    preemptor = s.create(high())
    s.preempt(a, preemptor, "n1")
    s.preempt(b, preemptor, "n1")
    a2 = s.terminate(s.mark_disruption_target(a))
    b2 = s.terminate(s.mark_disruption_target(b))
    preemptor = s.nominate(preemptor, "n1")
    s.remove(a2)
    s.remove(b2)
    s.bind(preemptor, "n1")
    assert s.check() == []


def test_5_new_preemption_after_the_earlier_victim_is_gone_is_fine():
    s = Story()
    x, preemptor = first_preemption(s)
    s.remove(x)
    late = s.create(low("late"))
    s.preempt(late, preemptor, "n1")
    s.remove(s.terminate(s.mark_disruption_target(late)))
    assert s.check() == []


def test_5_a_preemptor_not_nominated_to_the_node_may_preempt_there():
    s = Story()
    x = s.create(low("x"))
    other = s.create(high("other").priority(50))
    s.preempt(x, other, "n1")
    s.terminate(s.mark_disruption_target(x))
    late = s.create(low("late"))
    preemptor = s.create(high())  # no nomination: eligible whatever terminates on n1
    s.preempt(late, preemptor, "n1")
    s.terminate(s.mark_disruption_target(late))
    assert s.check() == []


def test_5_a_nomination_cleared_before_the_deletion_proves_nothing():
    s = Story()
    x, preemptor = first_preemption(s)
    late = s.create(low("late"))
    s.nominate(preemptor, "")  # cleared by a higher-priority preemptor, say
    s.preempt(late, preemptor, "n1")
    s.terminate(s.mark_disruption_target(late))
    assert s.check() == []


def test_5_a_nomination_cleared_after_the_victims_last_write_proves_nothing():
    s = Story()
    x, preemptor = first_preemption(s)
    late = s.create(low("late"))
    s.preempt(late, preemptor, "n1")
    s.write(s.update(late))  # say the kubelet's status; the deletion is not recorded yet
    s.nominate(preemptor, "")
    assert s.check() == []


def test_5_terminating_pods_that_finished_do_not_block():
    s = Story()
    x, preemptor = first_preemption(s)
    finished = s.update(x)
    finished.status.phase = "Failed"  # out of the scheduler's informer, though not deleted
    s.write(finished)
    late = s.create(low("late"))
    s.preempt(late, preemptor, "n1")
    s.terminate(s.mark_disruption_target(late))
    assert s.check() == []


def test_5_terminating_pods_of_equal_priority_do_not_block():
    s = Story()
    x = s.create(low("x").priority(100))
    preemptor = s.create(high().priority(100))
    x = s.terminate(s.mark_disruption_target(x))  # preempted by someone else earlier
    preemptor = s.nominate(preemptor, "n1")
    late = s.create(low("late"))
    s.preempt(late, preemptor, "n1")
    s.terminate(s.mark_disruption_target(late))
    assert s.check() == []


# ---------------------------------------------------------------- (7)


def test_7_binding_without_pod_scheduled_is_caught():
    s = Story()
    pod = s.create(make_pod("p"))
    bound = s.update(pod)
    bound.spec.node_name = "n1"
    s.write(bound)
    [violation] = s.check()
    assert "ns/p was bound to n1" in violation and "PodScheduled=True" in violation


def test_7_binding_that_keeps_the_nomination_is_caught_only_with_the_clearing_gate():
    s = Story()
    pod = s.nominate(s.create(make_pod("p")), "n1")
    s.bind(pod, "n1", clear_nnn=False)
    [violation] = s.check(clearing_gate_on=True)
    assert "keeping nominatedNodeName 'n1'" in violation
    assert s.check(clearing_gate_on=False) == []


def test_7_pods_created_bound_are_not_checked():
    s = Story()
    s.create(make_pod("static").node("n1").nominated("n1"))
    assert s.check() == []


# ---------------------------------------------------------------- (9)


def deferred_resize_preemption(
    s: Story, *, victim_node: str = "n1", event_node: str = "n1", never: bool = False
) -> tuple[types_pb2.Pod, types_pb2.Pod]:
    """Upstream's sequence for S-RPE-1: the preemptor, bound to n1 and Deferred, preempts a
    lower-priority pod (DisruptionTarget, graceful delete) and stays as it is: no NNN,
    PodScheduled=True, no write at all."""
    s.node(make_node("n1").capacity(cpu="300m"), ADDED)
    builder = high().node("n1").condition("PodScheduled")
    if never:
        builder.preemption_policy("Never")
    preemptor = s.defer(s.create(builder))
    victim = s.create(low("v", node=victim_node))
    s.preempt(victim, preemptor, event_node)
    s.terminate(s.mark_disruption_target(victim))
    return victim, preemptor


def test_9_a_preemptor_bound_after_the_victims_last_change_is_still_a_resize():
    # End to end: the victim runs unchanged (its decision version is old), then the preemptor is
    # scheduled and bound, its resize is Deferred, and only then the scheduler marks the victim.
    # The preemptor was bound before that first write: a resize preemption, so with the gate
    # off it is a violation (it was missed when the decision version alone was compared).
    s = Story()
    s.node(make_node("n1").capacity(cpu="2"), ADDED)
    victim = s.create(low("v"))
    preemptor = s.bind(s.create(high()), "n1")
    s.preempt(victim, s.defer(preemptor), "n1")
    s.terminate(s.mark_disruption_target(victim))
    [violation] = s.check(clearing_gate_on=True)
    assert (
        "a bound pod preempted with InPlacePodVerticalScalingSchedulerPreemption off" in violation
    )
    assert s.check_resize() == []


def test_9_a_correct_deferred_resize_preemption_has_no_violations():
    s = Story()
    deferred_resize_preemption(s)
    assert s.check_resize() == []


def test_9_a_deferred_pod_that_gets_a_nomination_is_caught():
    s = Story()
    _, preemptor = deferred_resize_preemption(s)
    s.nominate(preemptor, "n1")
    [violation] = s.check_resize()
    assert "ns/p, Deferred on n1" in violation and "got nominatedNodeName 'n1'" in violation


def test_9_a_nomination_kept_from_before_the_binding_is_not_new():
    s = Story()
    s.node(make_node("n1"), ADDED)
    pod = s.nominate(s.create(make_pod("p").priority(100)), "n1")
    pod = s.bind(pod, "n1", clear_nnn=False)  # the apiserver's clearing gate off
    s.defer(pod)
    assert s.check(clearing_gate_on=False, resize_preemption_gate_on=True) == []


def test_9_a_deferred_pod_that_loses_pod_scheduled_is_caught():
    s = Story()
    _, preemptor = deferred_resize_preemption(s)
    failed = s.update(preemptor)
    [cond] = [c for c in failed.status.conditions if c.type == "PodScheduled"]
    cond.status, cond.reason = "False", "Unschedulable"
    s.write(failed)
    [violation] = s.check_resize()
    assert "ns/p, Deferred on n1" in violation and "lost PodScheduled=True" in violation


def test_9_pod_scheduled_and_nomination_of_pods_never_deferred_are_not_checked():
    s = Story()
    pod = s.create(low("bound"))
    failed = s.update(pod)
    del failed.status.conditions[:]
    failed = s.write(failed)
    s.nominate(failed, "n2")
    assert s.check_resize() == []


def test_9_deferred_preemption_on_another_node_is_caught():
    s = Story()
    s.node(make_node("n2").capacity(cpu="300m"), ADDED)
    deferred_resize_preemption(s, victim_node="n2", event_node="n2")
    [violation] = s.check_resize()
    assert "ns/p (bound to n1)" in violation
    assert "the event's node n2 is not the preemptor's own node" in violation


def test_9_deferred_preemption_on_a_node_that_disables_it_is_caught():
    s = Story()
    s.node(make_node("n1").capacity(cpu="300m").disable_resize_preemption("op"), ADDED)
    preemptor = s.create(high().node("n1").condition("PodScheduled"))
    victim = s.create(low("v"))
    s.preempt(victim, s.defer(preemptor), "n1")
    s.terminate(s.mark_disruption_target(victim))
    [violation] = s.check_resize()
    assert "disableResizePreemption was ['op']" in violation
    assert s.check_resize(nodes=False) == []  # without the nodes' history, not checked


def test_9_a_node_that_enabled_it_before_the_decision_may_preempt():
    s = Story()
    node = s.node(make_node("n1").capacity(cpu="300m").disable_resize_preemption("op"), ADDED)
    preemptor = s.create(high().node("n1").condition("PodScheduled"))
    victim = s.create(low("v"))
    enabled = types_pb2.Node()
    enabled.CopyFrom(node)
    enabled.spec.ClearField("pod_preemption_policy")
    s.node(enabled)
    s.preempt(victim, s.defer(preemptor), "n1")
    s.terminate(s.mark_disruption_target(victim))
    assert s.check_resize() == []


def test_9_a_node_that_disabled_it_after_the_victims_write_proves_nothing():
    s = Story()
    victim, _ = deferred_resize_preemption(s)
    s.node(make_node("n1").capacity(cpu="300m").disable_resize_preemption("op"))
    assert s.check_resize() == []


def test_9_deferred_preemptor_with_preemption_policy_never_is_caught_once_by_4():
    s = Story()
    deferred_resize_preemption(s, never=True)
    [violation] = s.check_resize()
    assert "preemptionPolicy Never" in violation


def test_9_any_deferred_preemption_with_the_gate_off_is_caught():
    s = Story()
    deferred_resize_preemption(s)
    [violation] = s.check_resize(gate_on=False)
    assert "a bound pod preempted with InPlacePodVerticalScalingSchedulerPreemption off" in (
        violation
    )


def test_9_ordinary_preemptors_bound_later_are_no_resize_preemptions():
    s = Story()
    correct_preemption(s)
    assert s.check_resize(gate_on=False) == []
    assert s.check_resize(gate_on=True) == []


# ---------------------------------------------------------------- the recorder


@pytest.mark.anyio
async def test_record_pods_records_every_version_of_the_namespace_and_stops_its_watch():
    fake = FakeClient(
        make_pod("a").namespace(NS).obj(), make_pod("elsewhere").namespace("other").obj()
    )
    async with record_pods(fake, NS) as history:
        await fake.create(make_pod("b").namespace(NS).obj())
        await fake.bind(NS, "b", "n1")
        await fake.delete(types_pb2.Pod, "a", NS)
        await history.sync(fake, timeout=5)
        assert fake.open_watches == 1
    assert fake.open_watches == 0
    assert not history.recording
    [a] = history.uids_of("a")
    [b] = history.uids_of("b")
    assert history.uids_of("elsewhere") == []
    assert [v.type for v in history.versions[a]] == [ADDED, MODIFIED, DELETED]
    assert [v.type for v in history.versions[b]] == [ADDED, MODIFIED]
    assert history.versions[b][-1].pod.spec.node_name == "n1"
    seqs = [v.seq for versions in history.versions.values() for v in versions]
    assert sorted(seqs) == list(range(len(seqs)))


def test_lag_accepts_a_history_that_went_past_the_list():
    s = Story()
    a = s.create(make_pod("a"))
    b = s.create(make_pod("b"))
    listed = [s.update(a), s.update(b)]
    list_rv = str(s.rv)
    assert s.history.lag(listed, list_rv) == ""
    s.write(s.update(a))  # changed after the list
    s.remove(b)  # deleted after the list
    s.create(make_pod("c"))  # created after the list
    assert s.history.lag(listed, list_rv) == ""


def test_lag_names_what_is_not_recorded_yet():
    s = Story()
    a = s.create(make_pod("a"))
    newer = s.update(a)
    newer.metadata.resource_version = str(s.rv + 1)
    assert "recorded at resourceVersion 1, listed at 2" in s.history.lag([newer], str(s.rv + 1))
    s.create(make_pod("gone"))
    assert "ns/gone deleted but its deletion not recorded yet" in s.history.lag(
        [s.update(a)], str(s.rv + 1)
    )
    assert "ns/x not recorded yet" in s.history.lag([make_pod("x").namespace(NS).obj()], "9")


@pytest.mark.anyio
async def test_record_nodes_records_the_selected_nodes():
    # (the Node strategy keeps spec.podPreemptionPolicy only with KEP-5836's gate)
    gates = FeatureGates.for_version(
        DEFAULT_VERSION, {IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: True}
    )
    fake = FakeClient(
        make_node("n1").label("scenario", "x").obj(), make_node("other").obj(), gates=gates
    )
    async with record_nodes(fake, "scenario=x") as nodes:
        await fake.create(make_node("n2").label("scenario", "x").obj())
        n1 = await fake.get(types_pb2.Node, "n1")
        n1.spec.pod_preemption_policy.disable_resize_preemption.append("op")
        await fake.update(n1)
        await nodes.sync(fake, timeout=5)
    by_name = nodes.by_name()
    assert set(by_name) == {"n1", "n2"}
    assert [v.type for v in by_name["n1"]] == [ADDED, MODIFIED]
    assert list(by_name["n1"][-1].node.spec.pod_preemption_policy.disable_resize_preemption) == [
        "op"
    ]


@pytest.mark.anyio
async def test_sync_waits_for_a_deletion_the_watch_has_not_delivered():
    fake = FakeClient(make_pod("a").namespace(NS).obj())
    async with record_pods(fake, NS) as history:
        await history.sync(fake, timeout=5)
        fake.hold_watches("pods")
        await fake.delete(types_pb2.Pod, "a", NS)
        synced = anyio.Event()

        async def sync() -> None:
            await history.sync(fake, timeout=5)
            synced.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(sync)
            await anyio.sleep(0.2)
            waited = not synced.is_set()
            fake.release_watches("pods")
        assert waited
        [a] = history.uids_of("a")
        assert history.versions[a][-1].type == DELETED


@pytest.mark.anyio
async def test_a_sync_that_does_not_catch_up_says_where_its_watches_stand():
    fake = FakeClient()
    async with record_pods(fake, NS) as history:
        await eventually(lambda: fake.open_watches == 1, timeout=5, interval=0.01)
        fake.drop_watches()  # one watch ended, its successor open
        await fake.create(make_pod("a").namespace(NS).obj())
        await history.sync(fake, timeout=5)
        fake.hold_watches("pods")
        await fake.create(make_pod("b").namespace(NS).obj())
        with pytest.raises(AssertionError) as failure:
            await history.sync(fake, timeout=0.3)
        fake.release_watches("pods")
    message = str(failure.value)
    assert "ns/b not recorded yet" in message
    [a] = history.uids_of("a")
    rv_a = history.versions[a][0].pod.metadata.resource_version
    assert "1 watches ended; ended: its watch from resourceVersion" in message
    assert "open (to its last event): its watch from resourceVersion" in message
    assert f"to {rv_a} " in message and "(1 events, 0 bookmarks; ended: open)" in message


@pytest.mark.anyio
async def test_record_pods_resumes_a_watch_that_ended_or_lost_its_connection():
    fake = FakeClient()
    async with record_pods(fake, NS) as history:
        await eventually(lambda: fake.open_watches == 1, timeout=5, interval=0.01)
        fake.drop_watches()
        await fake.create(make_pod("a").namespace(NS).obj())
        await eventually(lambda: fake.open_watches == 1, timeout=5, interval=0.01)
        fake.drop_watches(Unavailable("connection lost"))
        await fake.create(make_pod("b").namespace(NS).obj())
        await history.sync(fake, timeout=5)
    assert len(history.uids_of("a")) == len(history.uids_of("b")) == 1
    assert history.error is None
    # Every watch is noted: where it started, the last version it brought, why it ended.
    [a] = history.uids_of("a")
    [b] = history.uids_of("b")
    rv_a = history.versions[a][0].pod.metadata.resource_version
    rv_b = history.versions[b][0].pod.metadata.resource_version
    first, second, third = history.watches
    assert first.events == 0 and first.end == "the server ended it"
    assert (second.from_rv, second.to_rv, second.events) == (first.to_rv, rv_a, 1)
    assert second.end == "Unavailable: connection lost"
    assert (third.from_rv, third.to_rv, third.events, third.end) == (rv_a, rv_b, 1, "stopped")
    assert second.covers(int(rv_a)) and not third.covers(int(rv_a))


@pytest.mark.anyio
async def test_a_watch_gap_makes_assert_invariants_fail_as_incomplete():
    fake = FakeClient()
    async with record_pods(fake, NS) as history:
        await eventually(lambda: fake.open_watches == 1, timeout=5, interval=0.01)
        fake.drop_watches(Gone("too old resource version"))
        await eventually(lambda: history.error is not None, timeout=5, interval=0.01)
        with pytest.raises(AssertionError, match="incomplete"):
            await assert_invariants(fake, history, NS)


@pytest.mark.anyio
async def test_assert_invariants_lists_the_violations_found_through_the_api():
    fake = FakeClient()
    async with record_pods(fake, NS) as history:
        victim = await fake.create(low("v").namespace(NS).obj())
        preemptor = await fake.create(high().namespace(NS).obj())
        await assert_invariants(fake, history, NS)  # nothing preempted yet
        ev = types_pb2.Event(
            reason="Preempted",
            type="Normal",
            message=f"Preempted by pod {preemptor.metadata.uid} on node n1",
        )
        ev.metadata.namespace, ev.metadata.name = NS, "v.1"
        ev.involved_object.kind, ev.involved_object.namespace = "Pod", NS
        ev.involved_object.name, ev.involved_object.uid = "v", victim.metadata.uid
        ev.involved_object.resource_version = victim.metadata.resource_version
        await fake.delete(types_pb2.Pod, "v", NS)  # no DisruptionTarget first
        await fake.create(ev)
        with pytest.raises(AssertionError, match=r"1 invariant violation\(s\):\n- .*ns/v"):
            await assert_invariants(fake, history, NS)


@pytest.mark.anyio
async def test_assert_invariants_must_run_while_recording():
    fake = FakeClient()
    async with record_pods(fake, NS) as history:
        pass
    with pytest.raises(RuntimeError, match="inside the record_pods block"):
        await assert_invariants(fake, history, NS)


@pytest.mark.anyio
async def test_an_error_in_the_block_propagates_unwrapped():
    fake = FakeClient()
    with pytest.raises(KeyError):
        async with record_pods(fake, NS):
            raise KeyError("scenario failed")
    assert fake.open_watches == 0
