"""An update's PodInfo reuses the previous one's computed values only when nothing they are
computed from changed, and is then equal, slot by slot, to a PodInfo built from the new pod
(hypothesis, over random pairs of pods and both ways of counting requests); the cache counts
an updated pod as a cache that only ever saw the new pod does."""

from __future__ import annotations

from functools import partial

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions
from kemu.scheduling.pod_info import REUSABLE, refreshed_pod_info, same_computed_inputs
from kemu.scheduling.types import PodInfo
from kemu.testing.builders import make_node, make_pod
from scheduler.cache import Cache

CPU = st.sampled_from(["", "100m", "200m"])


@st.composite
def pods(draw: st.DrawFn) -> types_pb2.Pod:
    b = make_pod("p").uid("u").node("n0")
    cpu = draw(CPU)
    if cpu:
        b = b.req(cpu=cpu)
    if draw(st.booleans()):
        b = b.port(80, draw(st.sampled_from([0, 8080])))
    if draw(st.booleans()):
        b = b.init_container("side", restart_policy="Always").req(cpu="10m")
    if draw(st.booleans()):
        b = b.overhead(cpu="10m")
    if draw(st.booleans()):
        b = b.priority(draw(st.sampled_from([0, 5])))
    if draw(st.booleans()):
        b = b.affinity({"app": draw(st.sampled_from(["a", "b"]))}, "zone")
    if draw(st.booleans()):
        b = b.anti_affinity({"app": "a"}, "zone", weight=draw(st.sampled_from([1, 2])))
    pod = b.obj()
    if draw(st.booleans()):
        pod.spec.resources.requests["cpu"] = "300m"
    for statuses, name in (
        (pod.status.container_statuses, pod.spec.containers[0].name),
        (pod.status.init_container_statuses, "side"),
    ):
        allocated = draw(CPU)
        if draw(st.booleans()):
            cs = statuses.add()
            cs.name = name
            cs.ready = draw(st.booleans())  # changes nothing counted
            cs.restart_count = draw(st.sampled_from([0, 1]))
            if allocated:
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
        pod.status.phase = "Running"
        pod.status.start_time.seconds = draw(st.sampled_from([1, 2]))
    if draw(st.booleans()):
        pod.metadata.labels["x"] = draw(st.sampled_from(["y", "z"]))
    if draw(st.booleans()):
        pod.status.nominated_node_name = "n1"
    return pod


def slots(pi: PodInfo) -> dict[str, object]:
    pi.meta_view()
    pi.start_time_ns()
    return {name: getattr(pi, name) for name in PodInfo.__slots__}


def test_pod_info_has_the_slots_the_reuse_knows() -> None:
    """A slot added to PodInfo turns the reuse off; this test says which list to extend."""
    assert REUSABLE, "PodInfo's slots changed: update kemu/scheduling/pod_info.py"


@settings(max_examples=150, deadline=None)
@given(old=pods(), new=pods(), in_place=st.booleans(), per_container_max=st.booleans())
def test_a_reused_pod_info_is_the_one_built_from_the_new_pod(
    old: types_pb2.Pod, new: types_pb2.Pod, in_place: bool, per_container_max: bool
) -> None:
    factory = partial(
        PodInfo,
        counting=PodResourcesOptions(
            use_status_resources=in_place, per_container_max=per_container_max
        ),
    )
    prev = factory(old)
    got = refreshed_pod_info(prev, new, factory)
    want = factory(new)
    assert got.pod is new
    reused = got.requests is prev.requests and got.host_ports is prev.host_ports
    if same_computed_inputs(old, new):
        assert reused
    assert slots(got) == slots(want)


def test_a_status_only_update_reuses_and_a_resize_recomputes() -> None:
    old = make_pod("p").uid("u").node("n0").req(cpu="100m").port(80, 8080).obj()
    new = types_pb2.Pod()
    new.CopyFrom(old)
    c = new.status.conditions.add()
    c.type, c.status = "DisruptionTarget", "True"
    new.metadata.labels["l"] = "v"
    prev = PodInfo(old)
    got = refreshed_pod_info(prev, new, PodInfo)
    assert got.host_ports is prev.host_ports
    assert got.meta_view().labels == {"l": "v"}
    resized = types_pb2.Pod()
    resized.CopyFrom(new)
    cs = resized.status.container_statuses.add()
    cs.name = resized.spec.containers[0].name
    cs.allocated_resources["cpu"] = "300m"
    again = refreshed_pod_info(got, resized, PodInfo)
    assert again.host_ports is not prev.host_ports
    assert again.requests.milli_cpu == 300


def one_node_cache() -> Cache:
    c = Cache(FakeClock(), counting=SCHEDULER_DEFAULTS)
    c.add_node(make_node("n0").obj())
    return c


def assert_counted_alike(cache: Cache, fresh: Cache) -> None:
    """`cache` counts node n0's pods as `fresh`, which only ever saw the final pods, does."""
    got, want = cache.dump().nodes["n0"], fresh.dump().nodes["n0"]
    assert got.requested == want.requested
    assert got.non_zero_requested == want.non_zero_requested
    assert [slots(pi) for pi in got.pods] == [slots(pi) for pi in want.pods]
    assert [pi.uid for pi in got.pods_with_affinity] == [pi.uid for pi in want.pods_with_affinity]


@settings(max_examples=60, deadline=None)
@given(old=pods(), new=pods())
def test_the_cache_counts_an_updated_pod_as_the_new_pod(
    old: types_pb2.Pod, new: types_pb2.Pod
) -> None:
    updated, fresh = one_node_cache(), one_node_cache()
    updated.add_pod(old)
    updated.update_pod(old, new)
    fresh.add_pod(new)
    assert_counted_alike(updated, fresh)


@settings(max_examples=60, deadline=None)
@given(assumed=pods(), bound=pods())
def test_the_cache_counts_a_confirmed_assumed_pod_as_the_bound_pod(
    assumed: types_pb2.Pod, bound: types_pb2.Pod
) -> None:
    """The informer's Add of an assumed pod (the binding's result) reuses the assumed pod's
    PodInfo values when the pod's computed inputs did not move, else recomputes."""
    confirmed, fresh = one_node_cache(), one_node_cache()
    confirmed.assume_pod(assumed)
    confirmed.finish_binding(assumed)
    confirmed.add_pod(bound)
    fresh.add_pod(bound)
    assert not confirmed.is_assumed_pod(bound)
    assert_counted_alike(confirmed, fresh)


def test_a_confirmed_assumed_pod_keeps_the_values_its_pod_info_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    cache = one_node_cache()
    built: list[types_pb2.Pod] = []
    factory = cache.pod_info

    def counted(pod: types_pb2.Pod) -> PodInfo:
        built.append(pod)
        return factory(pod)

    monkeypatch.setattr(cache, "pod_info", counted)
    assumed = make_pod("p").uid("u").node("n0").req(cpu="100m", memory="1Gi").obj()
    cache.assume_pod(assumed)
    bound = types_pb2.Pod()
    bound.CopyFrom(assumed)
    bound.metadata.resource_version = "7"  # the binding's write
    cache.add_pod(bound)
    assert built == [assumed]  # the confirmation computed nothing again
    (after,) = cache.dump().nodes["n0"].pods
    assert after.pod is bound
    moved = types_pb2.Pod()
    moved.CopyFrom(bound)
    moved.spec.containers[0].resources.requests["cpu"] = "200m"
    cache.update_pod(bound, moved)
    assert built == [assumed, moved]
    (again,) = cache.dump().nodes["n0"].pods
    assert again.requests.milli_cpu == 200
