"""Pod requests at their allocation, the admission fit with upstream's messages, and the state
an arriving pod starts in."""

from __future__ import annotations

from kemu.machinery.resources import PodResourcesOptions, kubelet_pod_requests
from kemu.testing.builders import make_pod
from kubelet.admission import (
    admit_pod,
    allocation_from_spec,
    fits,
)
from kubelet.runtime import STARTUP_DELAY_ANNOTATION, ContainerAllocation, PodState

GI = 1024**3
NODE = {"cpu": 4000, "memory": 4 * GI, "pods": 110}


def test_requests_add_app_containers_and_sidecars_and_take_the_init_peak():
    pod = (
        make_pod("p")
        .req(cpu="1", memory="1Gi")
        .container("d").req(cpu="500m")
        .init_container("sidecar", restart_policy="Always").req(cpu="250m")
        .init_container("setup").req(cpu="3", memory="512Mi")
        .overhead(cpu="100m")
        .obj()
    )  # fmt: skip
    # app + sidecar = 1750m; init peak = 3000m + 250m sidecar; overhead on top.
    assert kubelet_pod_requests(pod) == {"cpu": 3350, "memory": GI}


def test_requests_count_each_container_at_its_allocation():
    pod = make_pod("p").req(cpu="2", memory="1Gi").obj()
    allocation = {"c": {"cpu": "1", "memory": "1Gi"}}
    assert kubelet_pod_requests(pod, allocation) == {"cpu": 1000, "memory": GI}
    assert allocation_from_spec(pod)["c"].requests == {"cpu": "2", "memory": "1Gi"}


def test_fit_checks_pods_first_then_cpu_then_memory():
    assert fits({"cpu": 1000}, {"cpu": 3000}, 3, NODE).admit
    out = fits({"cpu": 2000, "memory": 8 * GI}, {"cpu": 3000}, 110, NODE)
    assert (out.reason, out.message) == (
        "OutOfpods",
        "Node didn't have enough resource: pods, requested: 1, used: 110, capacity: 110",
    )
    out = fits({"cpu": 2000, "memory": 8 * GI}, {"cpu": 3000}, 3, NODE)
    assert (out.reason, out.message) == (
        "OutOfcpu",
        "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000",
    )
    out = fits({"memory": 1}, {"memory": 4 * GI}, 3, NODE)
    assert out.reason == "OutOfmemory"


def test_unknown_extended_resources_are_ignored_known_ones_checked():
    assert fits({"example.com/gpu": 1}, {}, 0, NODE).admit
    out = fits({"example.com/gpu": 2}, {"example.com/gpu": 1}, 0, {**NODE, "example.com/gpu": 2})
    assert out.reason == "OutOfexample.com/gpu"


def test_admit_pod_starts_a_pod_that_fits_after_its_startup_delay():
    pod = make_pod("p").req(cpu="1").lim(cpu="2").node("n1").obj()
    rt = admit_pod(pod, [{"cpu": 3000}], NODE, now=100.0, startup_delay=0.5)
    assert (rt.state, rt.admitted_at, rt.start_at) == (PodState.STARTING, 100.0, 100.5)
    assert rt.requests == {"cpu": 1000}
    assert rt.allocation["c"] == ContainerAllocation({"cpu": "1"}, {"cpu": "2"})
    annotated = make_pod("q").node("n1").annotation(STARTUP_DELAY_ANNOTATION, "3s").obj()
    assert admit_pod(annotated, [], NODE, now=100.0, startup_delay=0.5).start_at == 103.0


def test_admit_pod_rejects_a_pod_that_does_not_fit_next_to_the_others():
    pod = make_pod("p").req(cpu="2").node("n1").obj()
    rt = admit_pod(pod, [{"cpu": 1000}, {"cpu": 1500}], NODE, now=100.0, startup_delay=0.5)
    assert (rt.state, rt.reason) == (PodState.REJECTED, "OutOfcpu")
    assert rt.message == (
        "Node didn't have enough resource: cpu, requested: 2000, used: 2500, capacity: 4000"
    )
    assert rt.allocation == {}, "a rejected pod holds nothing"


def test_admit_pod_counts_pod_level_requests_with_the_gate():
    """KEP-2837: spec.resources requests replace the containers' sum for cpu and memory
    (upstream's predicateAdmitHandler through the scheduler's NodeInfo), overhead on top."""
    pod = make_pod("p").req(cpu="1").pod_req(cpu="3").overhead(cpu="100m").node("n1").obj()
    rt = admit_pod(pod, [{"cpu": 1000}], NODE, now=100.0, startup_delay=0.5)
    assert (rt.state, rt.reason) == (PodState.REJECTED, "OutOfcpu")
    assert rt.message == (
        "Node didn't have enough resource: cpu, requested: 3100, used: 1000, capacity: 4000"
    )
    fitting = make_pod("q").req(cpu="1").pod_req(cpu="2").node("n1").obj()
    rt = admit_pod(fitting, [{"cpu": 1000}], NODE, now=100.0, startup_delay=0.5)
    assert (rt.state, rt.requests) == (PodState.STARTING, {"cpu": 2000})


def test_a_kubelet_without_pod_level_resources_refuses_a_pod_that_sets_them():
    """podFeaturesAdmitHandler, after the fit (counted by the containers): reason
    PodLevelResourcesNotSupported."""
    ungated = PodResourcesOptions(pod_level_resources=False)
    pod = make_pod("p").req(cpu="1").pod_req(cpu="3").node("n1").obj()
    rt = admit_pod(pod, [{"cpu": 1000}], NODE, now=100.0, startup_delay=0.5, counting=ungated)
    assert (rt.state, rt.reason, rt.message) == (
        PodState.REJECTED,
        "PodLevelResourcesNotSupported",
        "PodLevelResources feature gate is disabled",
    )
    huge = make_pod("h").req(cpu="64").pod_req(cpu="64").node("n1").obj()
    rt = admit_pod(huge, [], NODE, now=100.0, startup_delay=0.5, counting=ungated)
    assert rt.reason == "OutOfcpu", "the fit is checked first"
    plain = make_pod("q").req(cpu="1").node("n1").obj()
    rt = admit_pod(plain, [], NODE, now=100.0, startup_delay=0.5, counting=ungated)
    assert rt.state == PodState.STARTING


def test_admit_pod_does_not_start_a_pod_deleted_before_it_ran():
    pod = make_pod("p").req(cpu="64").node("n1").obj()
    pod.metadata.deletion_timestamp.FromSeconds(90)
    rt = admit_pod(pod, [], NODE, now=100.0, startup_delay=0.5)
    assert (rt.state, rt.finished_at) == (PodState.TERMINATED, 100.0)
