"""pod_update_action's scale-down test (upstream extractPodScaleDown): the shortcut that skips
computing the requests when nothing they are computed from changed gives the same answer as
computing them, on random pairs of pods (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kemu.api.v1 import types_pb2
from kemu.machinery.resources import PodResourcesOptions
from kemu.scheduling.events import ActionType
from kemu.scheduling.pod_info import same_requests_inputs
from kemu.scheduling.types import pod_requests
from kemu.testing.builders import make_pod
from scheduler.event_handlers import (
    _requests_went_down,
    pod_update_action,
    requests_went_down_computed,
)
from scheduler.queue.pod_events import _is_scaled_down

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
def test_scale_down_with_the_shortcut_is_the_computed_one(
    old: types_pb2.Pod, new: types_pb2.Pod
) -> None:
    assert _requests_went_down(old, new) == requests_went_down_computed(old, new)
    # The queue's own scale-down test (unscheduled pods' updates) takes the same shortcut.
    for in_place in (True, False):
        counting = PodResourcesOptions(use_status_resources=in_place)
        computed_old, _ = pod_requests(old, counting)
        computed_new, _ = pod_requests(new, counting)
        computed = any(
            computed_new.get(name) < computed_old.get(name) for name in computed_old.names()
        )
        assert _is_scaled_down(new, old, counting) == computed
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
