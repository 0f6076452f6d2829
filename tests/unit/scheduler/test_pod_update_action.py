"""pod_update_action's resize test (upstream extractPodScaleDown and extractPodScaleUp): the
shortcut that skips computing the requests when nothing they are computed from changed gives the
same answer as computing them, on random pairs of pods (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.events import ActionType
from kemu.scheduling.pod_info import same_requests_inputs
from kemu.scheduling.types import pod_requests
from kemu.testing.builders import make_pod
from scheduler.event_handlers import pod_update_action
from scheduler.queue.pod_events import resize_actions

CPU = st.sampled_from(["", "100m", "200m"])


@st.composite
def pods(draw: st.DrawFn) -> types_pb2.Pod:
    b = make_pod("p").uid("u").node("n0")
    cpu = draw(CPU)
    if cpu:
        b = b.req(cpu=cpu)
    if draw(st.booleans()):
        b = b.overhead(cpu="10m")
    pod = b.obj()
    allocated = draw(CPU)
    if allocated:
        cs = pod.status.container_statuses.add()
        cs.name = pod.spec.containers[0].name
        cs.allocated_resources["cpu"] = allocated
        actual = draw(CPU)
        if actual:
            cs.resources.requests["cpu"] = actual
    if draw(st.booleans()):
        c = pod.status.conditions.add()
        c.type = "PodResizePending"
        c.status = "True"
        c.reason = draw(st.sampled_from(["Infeasible", "Deferred"]))
    if draw(st.booleans()):
        c = pod.status.conditions.add()
        c.type, c.status = "DisruptionTarget", "True"
    if draw(st.booleans()):
        pod.metadata.labels["x"] = "y"
    return pod


@settings(max_examples=300, deadline=None)
@given(old=pods(), new=pods())
def test_resize_actions_with_the_shortcut_are_the_computed_ones(
    old: types_pb2.Pod, new: types_pb2.Pod
) -> None:
    for in_place in (True, False):
        counting = PodResourcesOptions(use_status_resources=in_place)
        computed_old, _ = pod_requests(old, counting)
        computed_new, _ = pod_requests(new, counting)
        names = {*computed_old.names(), *computed_new.names()}
        down = any(computed_new.get(n) < computed_old.get(n) for n in names)
        up = any(computed_new.get(n) > computed_old.get(n) for n in names)
        got = resize_actions(new, old, counting)
        assert bool(got & ActionType.UPDATE_POD_SCALE_DOWN) == down
        assert bool(got & ActionType.UPDATE_POD_SCALE_UP) == up
    if same_requests_inputs(old, new):
        assert pod_requests(old) == pod_requests(new)


def test_an_update_of_conditions_only_is_not_a_scale_down() -> None:
    old = make_pod("p").uid("u").node("n0").req(cpu="100m").obj()
    new = types_pb2.Pod()
    new.CopyFrom(old)
    c = new.status.conditions.add()
    c.type, c.status = "DisruptionTarget", "True"
    assert same_requests_inputs(old, new)
    assert pod_update_action(old, new) == ActionType.UPDATE_POD_OTHER
    new.spec.containers[0].resources.requests["cpu"] = "50m"
    assert not same_requests_inputs(old, new)
    assert pod_update_action(old, new) & ActionType.UPDATE_POD_SCALE_DOWN


def test_a_request_going_up_is_a_scale_up() -> None:
    """KEP-5836's UpdatePodScaleUp (noderesources/fit.go as merged by kubernetes#140000)."""
    old = make_pod("p").uid("u").node("n0").req(cpu="100m", memory="1Gi").obj()
    new = types_pb2.Pod()
    new.CopyFrom(old)
    new.spec.containers[0].resources.requests["cpu"] = "250m"
    assert pod_update_action(old, new) == ActionType.UPDATE_POD_SCALE_UP
    new.spec.containers[0].resources.requests["memory"] = "512Mi"
    both = ActionType.UPDATE_POD_SCALE_UP | ActionType.UPDATE_POD_SCALE_DOWN
    assert pod_update_action(old, new) == both
