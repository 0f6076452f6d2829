"""kemu.machinery.resources: what a pod needs, rule by rule (upstream component-helpers
resource.PodRequests / PodLimits, the scheduler's CalculateResource, the kubelet's view)."""

from __future__ import annotations

import dataclasses

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.machinery.resources import (
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    SCHEDULER_DEFAULTS,
    PodResourcesOptions,
    is_pod_resize_deferred,
    is_pod_resize_infeasible,
    kubelet_pod_requests,
    kubelet_pod_requests_from_status,
    max_resources,
    pod_limits,
    pod_requests,
    scheduler_pod_requests,
)
from kemu.testing.builders import make_pod

MI = 1024**2
GI = 1024**3
WITH_STATUS = PodResourcesOptions(use_status_resources=True)
PER_CONTAINER = PodResourcesOptions(use_status_resources=True, per_container_max=True)


def status(
    pod: types_pb2.Pod,
    name: str,
    *,
    allocated: dict[str, str] | None = None,
    actual: dict[str, str] | None = None,
    actual_limits: dict[str, str] | None = None,
    init: bool = False,
) -> types_pb2.ContainerStatus:
    """A container status reporting allocated and actual (status.resources) sizes."""
    statuses = pod.status.init_container_statuses if init else pod.status.container_statuses
    cs = statuses.add(name=name)
    cs.allocated_resources.update(allocated or {})
    if actual is not None or actual_limits is not None:
        cs.resources.SetInParent()
        cs.resources.requests.update(actual or {})
        cs.resources.limits.update(actual_limits or {})
    return cs


def resize_pending(pod: types_pb2.Pod, reason: str) -> None:
    pod.status.conditions.add(type="PodResizePending", status="True", reason=reason)


# ---------------------------------------------------------------- the spec


def test_app_containers_add_up() -> None:
    pod = make_pod("p").req(cpu="500m", memory="1Gi").container("d").req(cpu="250m").obj()
    assert pod_requests(pod) == {"cpu": 750, "memory": GI}


def test_no_requests_is_nothing() -> None:
    assert pod_requests(make_pod("p").obj()) == {}


def test_extended_resources_are_counted_as_integers() -> None:
    pod = make_pod("p").req({"example.com/gpu": "2"}, ephemeral_storage="1Gi").obj()
    assert pod_requests(pod) == {"example.com/gpu": 2, "ephemeral-storage": GI}


def test_init_containers_count_at_their_peak_against_the_app_containers() -> None:
    # Init containers run one at a time before the app containers: the pod needs the larger.
    pod = (
        make_pod("p")
        .req(cpu="1", memory="100Mi")
        .init_container("i1")
        .req(cpu="2", memory="50Mi")
        .init_container("i2")
        .req(cpu="500m", memory="300Mi")
        .obj()
    )
    assert pod_requests(pod) == {"cpu": 2000, "memory": 300 * MI}


def test_sidecars_add_to_the_app_containers_and_to_later_init_containers() -> None:
    # KEP-753: sidecar s (200m) keeps running, so init i (1) runs next to it (1200m), and the
    # app containers (500m) run next to it too (700m): the pod needs 1200m.
    pod = (
        make_pod("p")
        .req(cpu="500m")
        .init_container("s", restart_policy="Always")
        .req(cpu="200m")
        .init_container("i")
        .req(cpu="1")
        .obj()
    )
    assert pod_requests(pod) == {"cpu": 1200}


def test_an_init_container_before_a_sidecar_runs_without_it() -> None:
    pod = (
        make_pod("p")
        .req(cpu="500m")
        .init_container("i")
        .req(cpu="800m")
        .init_container("s", restart_policy="Always")
        .req(cpu="200m")
        .obj()
    )
    assert pod_requests(pod) == {"cpu": 800}  # max(800, 200 + 500)
    pod.spec.init_containers[0].resources.requests["cpu"] = "600m"
    assert pod_requests(pod) == {"cpu": 700}


def test_overhead_is_added_to_requests() -> None:
    pod = make_pod("p").req(cpu="500m").overhead(cpu="100m", memory="64Mi").obj()
    assert pod_requests(pod) == {"cpu": 600, "memory": 64 * MI}
    assert pod_requests(pod, PodResourcesOptions(exclude_overhead=True)) == {"cpu": 500}


def test_overhead_is_added_only_to_limits_that_are_set() -> None:
    pod = make_pod("p").req(cpu="500m").lim(cpu="1").overhead(cpu="100m", memory="64Mi").obj()
    assert pod_limits(pod) == {"cpu": 1100}  # memory stays unlimited


def test_limits_follow_the_sidecar_rules() -> None:
    pod = (
        make_pod("p")
        .lim(cpu="1")
        .init_container("s", restart_policy="Always")
        .lim(cpu="500m")
        .init_container("i")
        .lim(cpu="2")
        .obj()
    )
    assert pod_limits(pod) == {"cpu": 2500}


def test_pod_level_requests_replace_the_containers_only_with_the_gate() -> None:
    pod = make_pod("p").req(cpu="1", memory="1Gi").container("d").req(cpu="1").obj()
    pod.spec.resources.requests.update({"cpu": "3", "ephemeral-storage": "1Gi"})
    pod.spec.resources.limits["memory"] = "4Gi"
    ungated = PodResourcesOptions(pod_level_resources=False)
    assert pod_requests(pod, ungated) == {"cpu": 2000, "memory": GI}
    # Only cpu, memory and hugepages are pod-level resources (upstream's zero value honours
    # them: SkipPodLevelResources false).
    assert pod_requests(pod) == {"cpu": 3000, "memory": GI}
    assert pod_limits(pod) == {"memory": 4 * GI}


# ---------------------------------------------------------------- in-place resize


def resized(spec: str, *, allocated: str, actual: str | None) -> types_pb2.Pod:
    pod = make_pod("p").req(cpu=spec, memory="1Gi").obj()
    status(
        pod,
        "c",
        allocated={"cpu": allocated, "memory": "1Gi"},
        actual=None if actual is None else {"cpu": actual, "memory": "1Gi"},
    )
    return pod


def test_without_status_resources_only_the_spec_counts() -> None:
    assert pod_requests(resized("3", allocated="1", actual="1")) == {"cpu": 3000, "memory": GI}
    assert pod_requests(resized("500m", allocated="1", actual="1")) == {"cpu": 500, "memory": GI}


def test_a_pending_upsize_counts_at_its_desired_size() -> None:
    # desired > allocated: the scheduler reserves the resize on the node (component-helpers resource.PodRequests, staging/src/k8s.io/component-helpers/resource/helpers.go).
    assert pod_requests(resized("3", allocated="1", actual="1"), WITH_STATUS)["cpu"] == 3000


def test_a_downsize_counts_at_the_allocated_or_actual_size_until_actuated() -> None:
    # desired < allocated: the containers still hold their old size.
    assert pod_requests(resized("500m", allocated="1", actual="1"), WITH_STATUS)["cpu"] == 1000
    # Allocated but not actuated yet: the actual (old) size still counts.
    assert pod_requests(resized("500m", allocated="500m", actual="1"), WITH_STATUS)["cpu"] == 1000


def test_an_allocated_upsize_counts_before_it_is_actuated() -> None:
    assert pod_requests(resized("2", allocated="2", actual="1"), WITH_STATUS)["cpu"] == 2000


def test_actual_is_read_from_allocated_when_the_kubelet_reports_no_resources() -> None:
    assert pod_requests(resized("500m", allocated="1", actual=None), WITH_STATUS)["cpu"] == 1000


def test_an_infeasible_resize_leaves_the_desired_size_out() -> None:
    pod = resized("3", allocated="1", actual="1")
    resize_pending(pod, "Infeasible")
    assert is_pod_resize_infeasible(pod) and not is_pod_resize_deferred(pod)
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 1000, "memory": GI}
    # ... and counts a downsize's old size all the same.
    down = resized("500m", allocated="1", actual="1")
    resize_pending(down, "Infeasible")
    assert pod_requests(down, WITH_STATUS)["cpu"] == 1000


def test_a_deferred_resize_is_still_reserved() -> None:
    pod = resized("3", allocated="1", actual="1")
    resize_pending(pod, "Deferred")
    assert is_pod_resize_deferred(pod) and not is_pod_resize_infeasible(pod)
    assert pod_requests(pod, WITH_STATUS)["cpu"] == 3000


def test_sizes_are_summed_before_the_maximum_is_taken() -> None:
    # cpu moves from container a to b: desired a=1,b=2; allocated and actual a=2,b=1. Each
    # sum is 3: the pod never holds more (a per-container maximum would say 4, upstream <1.37).
    pod = make_pod("p").container("a").req(cpu="1").container("b").req(cpu="2").obj()
    del pod.spec.containers[0]  # the builder's default container "c"
    status(pod, "a", allocated={"cpu": "2"}, actual={"cpu": "2"})
    status(pod, "b", allocated={"cpu": "1"}, actual={"cpu": "1"})
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 3000}


def moved_cpu() -> types_pb2.Pod:
    """cpu moves from container a to b: desired a=1 b=2; allocated and actual a=2 b=1."""
    pod = make_pod("p").container("a").req(cpu="1").container("b").req(cpu="2").obj()
    del pod.spec.containers[0]  # the builder's default container "c"
    status(pod, "a", allocated={"cpu": "2"}, actual={"cpu": "2"})
    status(pod, "b", allocated={"cpu": "1"}, actual={"cpu": "1"})
    return pod


@pytest.mark.parametrize(
    ("version", "per_container_max"), [((1, 21), True), ((1, 36), True), ((1, 37), False)]
)
def test_the_aggregation_rule_changed_in_1_37(
    version: tuple[int, int], per_container_max: bool
) -> None:
    assert VersionRules.at(Version(*version)).per_container_max is per_container_max


@pytest.mark.parametrize(("minor", "cpu"), [(36, 4000), (37, 3000)])
def test_the_emulated_version_decides_where_the_maximum_is_taken(minor: int, cpu: int) -> None:
    opts = PodResourcesOptions(
        use_status_resources=True,
        per_container_max=VersionRules.at(Version(1, minor)).per_container_max,
    )
    assert pod_requests(moved_cpu(), opts) == {"cpu": cpu}


def test_per_container_a_container_counts_at_its_largest_size() -> None:
    assert pod_requests(resized("3", allocated="1", actual="1"), PER_CONTAINER)["cpu"] == 3000
    assert pod_requests(resized("500m", allocated="1", actual="1"), PER_CONTAINER)["cpu"] == 1000
    assert pod_requests(resized("500m", allocated="500m", actual="1"), PER_CONTAINER)["cpu"] == 1000
    assert pod_requests(resized("2", allocated="2", actual="1"), PER_CONTAINER)["cpu"] == 2000


def test_per_container_an_infeasible_resize_leaves_the_desired_size_out() -> None:
    pod = resized("3", allocated="1", actual="1")
    resize_pending(pod, "Infeasible")
    assert pod_requests(pod, PER_CONTAINER) == {"cpu": 1000, "memory": GI}


def test_per_container_reads_a_status_only_when_it_reports_resources() -> None:
    # Upstream <=1.36: `cs.Resources != nil`; otherwise the spec, even below the allocation.
    assert pod_requests(resized("500m", allocated="1", actual=None), PER_CONTAINER)["cpu"] == 500
    assert pod_requests(make_pod("p").req(cpu="2").obj(), PER_CONTAINER) == {"cpu": 2000}


def test_per_container_sidecars_read_their_status_plain_init_containers_do_not() -> None:
    pod = (
        make_pod("p")
        .req(cpu="500m")
        .init_container("i")
        .req(cpu="1")
        .init_container("s", restart_policy="Always")
        .req(cpu="50m")
        .obj()
    )
    status(pod, "c", allocated={"cpu": "500m"}, actual={"cpu": "500m"})
    status(pod, "i", allocated={"cpu": "3"}, actual={"cpu": "3"}, init=True)
    status(pod, "s", allocated={"cpu": "100m"}, actual={"cpu": "100m"}, init=True)
    # App 500m + sidecar max(50m, 100m); the plain init container at its spec (1).
    assert pod_requests(pod, PER_CONTAINER) == {"cpu": 1000}
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 3000}  # 1.37 reads its status too


def test_per_container_limits() -> None:
    pod = make_pod("p").container("a").lim(cpu="1").container("b").lim(cpu="2").obj()
    del pod.spec.containers[0]
    status(pod, "a", allocated={}, actual={}, actual_limits={"cpu": "2"})
    status(pod, "b", allocated={}, actual={}, actual_limits={"cpu": "1"})
    assert pod_limits(pod, PER_CONTAINER) == {"cpu": 4000}
    assert pod_limits(pod, WITH_STATUS) == {"cpu": 3000}
    resize_pending(pod, "Infeasible")
    assert pod_limits(pod, PER_CONTAINER) == {"cpu": 3000}  # the actual limits only


def test_a_pod_without_statuses_counts_at_its_spec() -> None:
    pod = make_pod("p").req(cpu="2").obj()
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 2000}


def test_init_container_statuses_count_too() -> None:
    pod = (
        make_pod("p")
        .req(cpu="500m")
        .init_container("s", restart_policy="Always")
        .req(cpu="300m")
        .obj()
    )
    status(pod, "c", allocated={"cpu": "500m"}, actual={"cpu": "500m"})
    status(pod, "s", allocated={"cpu": "100m"}, actual={"cpu": "100m"}, init=True)
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 800}  # the sidecar's desired upsize
    pod.spec.init_containers[0].resources.requests["cpu"] = "50m"
    assert pod_requests(pod, WITH_STATUS) == {"cpu": 600}  # its old size until actuated


def test_limits_with_status_resources() -> None:
    pod = make_pod("p").lim(cpu="2").obj()
    status(pod, "c", allocated={}, actual={}, actual_limits={"cpu": "1"})
    assert pod_limits(pod, WITH_STATUS) == {"cpu": 2000}
    pod.spec.containers[0].resources.limits["cpu"] = "500m"
    assert pod_limits(pod, WITH_STATUS) == {"cpu": 1000}
    resize_pending(pod, "Infeasible")
    pod.spec.containers[0].resources.limits["cpu"] = "4"
    assert pod_limits(pod, WITH_STATUS) == {"cpu": 1000}


# ---------------------------------------------------------------- the scheduler's view


def test_scheduler_counts_with_status_resources_when_the_gate_is_on() -> None:
    pod = resized("3", allocated="1", actual="1")
    assert scheduler_pod_requests(pod)[0]["cpu"] == 3000
    resize_pending(pod, "Infeasible")
    assert scheduler_pod_requests(pod)[0]["cpu"] == 1000
    assert scheduler_pod_requests(pod, PodResourcesOptions())[0]["cpu"] == 3000


@pytest.mark.parametrize(("minor", "cpu"), [(36, 4000), (37, 3000)])
def test_scheduler_counts_with_the_emulated_versions_rule(minor: int, cpu: int) -> None:
    pod = moved_cpu()
    requests, non_zero = scheduler_pod_requests(
        pod,
        PodResourcesOptions(
            use_status_resources=True,
            per_container_max=VersionRules.at(Version(1, minor)).per_container_max,
        ),
    )
    assert requests == {"cpu": cpu}
    assert non_zero == {"cpu": cpu, "memory": 2 * DEFAULT_MEMORY_REQUEST}
    # Without the gate neither rule reads the status: the spec's 3 cpu.
    assert scheduler_pod_requests(pod, PodResourcesOptions(per_container_max=True))[0] == {
        "cpu": 3000
    }


def test_containers_without_requests_score_at_the_non_zero_defaults() -> None:
    pod = make_pod("p").container("d").req(cpu="250m").obj()
    requests, non_zero = scheduler_pod_requests(pod)
    assert requests == {"cpu": 250}
    assert non_zero == {
        "cpu": DEFAULT_MILLI_CPU_REQUEST + 250,
        "memory": 2 * DEFAULT_MEMORY_REQUEST,
    }


def test_an_explicit_zero_request_is_not_replaced_by_the_default() -> None:
    # Upstream's NonMissingContainerRequests: only a request that is absent gets the default.
    pod = make_pod("p").req(cpu="0", memory="0").obj()
    requests, non_zero = scheduler_pod_requests(pod)
    assert requests == non_zero == {"cpu": 0, "memory": 0}


def test_non_zero_requests_follow_init_sidecar_and_overhead_rules() -> None:
    pod = (
        make_pod("p")
        .req(cpu="100m", memory="100Mi")
        .init_container("i")
        .req(cpu="2")
        .overhead(cpu="10m")
        .obj()
    )
    _, non_zero = scheduler_pod_requests(pod)
    # The init container names no memory: it is scored at 200Mi, more than the app's 100Mi.
    assert non_zero == {"cpu": 2010, "memory": DEFAULT_MEMORY_REQUEST}


def test_pod_level_requests_leave_the_defaults_only_for_what_they_miss() -> None:
    pod = make_pod("p").obj()
    pod.spec.resources.requests["cpu"] = "1"
    requests, non_zero = scheduler_pod_requests(
        pod, dataclasses.replace(SCHEDULER_DEFAULTS, pod_level_resources=True)
    )
    assert requests == {"cpu": 1000}
    assert non_zero == {"cpu": 1000, "memory": DEFAULT_MEMORY_REQUEST}


# ---------------------------------------------------------------- the kubelet's view


def test_kubelet_counts_a_new_pod_at_its_spec() -> None:
    pod = make_pod("p").req(cpu="1").init_container("s", restart_policy="Always").req(cpu="1")
    assert kubelet_pod_requests(pod.overhead(cpu="100m").obj()) == {"cpu": 2100}


def test_kubelet_counts_pod_level_requests_with_the_gate_overhead_on_top() -> None:
    pod = make_pod("p").req(cpu="1", memory="1Gi").pod_req(cpu="3").overhead(cpu="100m").obj()
    ungated = PodResourcesOptions(pod_level_resources=False)
    assert kubelet_pod_requests(pod, opts=ungated) == {"cpu": 1100, "memory": GI}
    assert kubelet_pod_requests(pod) == {"cpu": 3100, "memory": GI}
    # An allocation or a running size of the containers does not move the pod-level cpu.
    allocation = {"c": {"cpu": "2", "memory": "1Gi"}}
    assert kubelet_pod_requests(pod, allocation, allocation)["cpu"] == 3100


def test_kubelet_counts_its_allocation_not_the_desired_size() -> None:
    pod = resized("3", allocated="1", actual="1")
    resize_pending(pod, "Deferred")
    allocation = {"c": {"cpu": "1", "memory": "1Gi"}}
    assert kubelet_pod_requests(pod, allocation) == {"cpu": 1000, "memory": GI}


def test_kubelet_counts_the_actual_size_while_it_is_larger() -> None:
    pod = make_pod("p").req(cpu="500m").obj()
    assert kubelet_pod_requests(pod, {"c": {"cpu": "500m"}}, {"c": {"cpu": "1"}}) == {"cpu": 1000}
    assert kubelet_pod_requests(pod, {"c": {"cpu": "2"}}, {"c": {"cpu": "1"}}) == {"cpu": 2000}


def test_kubelet_takes_the_larger_of_the_sums() -> None:
    pod = make_pod("p").container("a").req(cpu="1").container("b").req(cpu="1").obj()
    allocated = {"a": {"cpu": "2"}, "b": {"cpu": "1"}}
    actual = {"a": {"cpu": "1"}, "b": {"cpu": "2"}}
    assert kubelet_pod_requests(pod, allocated, actual) == {"cpu": 3000}


@pytest.mark.parametrize(("minor", "cpu"), [(36, 4000), (37, 3000)])
def test_kubelet_counts_with_the_emulated_versions_rule(minor: int, cpu: int) -> None:
    # A resize moved cpu from a to b: allocated a=1 b=2, still running at a=2 b=1.
    pod = make_pod("p").container("a").req(cpu="1").container("b").req(cpu="2").obj()
    del pod.spec.containers[0]
    allocated = {"a": {"cpu": "1"}, "b": {"cpu": "2"}}
    actual = {"a": {"cpu": "2"}, "b": {"cpu": "1"}}
    per_container_max = VersionRules.at(Version(1, minor)).per_container_max
    got = kubelet_pod_requests(
        pod, allocated, actual, opts=PodResourcesOptions(per_container_max=per_container_max)
    )
    assert got == {"cpu": cpu}
    # Not resizing: both rules count the allocation.
    assert kubelet_pod_requests(
        pod, allocated, opts=PodResourcesOptions(per_container_max=per_container_max)
    ) == {"cpu": 3000}


def test_kubelet_per_container_counts_a_plain_init_container_at_its_allocation() -> None:
    pod = make_pod("p").req(cpu="1").init_container("i").req(cpu="3").overhead(cpu="10m").obj()
    allocated = {"c": {"cpu": "1"}, "i": {"cpu": "2"}}
    actual = {"c": {"cpu": "1500m"}, "i": {"cpu": "4"}}
    assert kubelet_pod_requests(
        pod, allocated, actual, opts=PodResourcesOptions(per_container_max=True)
    ) == {"cpu": 2010}


def test_kubelet_view_from_the_status_leaves_a_pending_desired_size_out() -> None:
    # Deferred 1 -> 3 cpu: the scheduler reserves 3, the kubelet holds 1.
    pod = resized("3", allocated="1", actual="1")
    resize_pending(pod, "Deferred")
    assert kubelet_pod_requests_from_status(pod) == {"cpu": 1000, "memory": GI}
    assert scheduler_pod_requests(pod)[0] == {"cpu": 3000, "memory": GI}


def test_kubelet_view_from_the_status_takes_the_larger_of_allocated_and_actual() -> None:
    # Being scaled down: allocated 1, still running at 2.
    assert kubelet_pod_requests_from_status(resized("1", allocated="1", actual="2")) == {
        "cpu": 2000,
        "memory": GI,
    }
    # Not actuated yet: runs at its allocation.
    assert kubelet_pod_requests_from_status(resized("500m", allocated="2", actual=None)) == {
        "cpu": 2000,
        "memory": GI,
    }


def test_kubelet_view_from_the_status_counts_a_pod_without_statuses_at_its_spec() -> None:
    pod = make_pod("p").req(cpu="1").overhead(cpu="100m").obj()
    assert kubelet_pod_requests_from_status(pod) == {"cpu": 1100}
    # A container whose status reports no allocation stays at its spec too.
    pod = make_pod("p").req(cpu="1").container("d").req(cpu="2").obj()
    status(pod, "c", allocated={"cpu": "500m"}, actual={"cpu": "500m"})
    status(pod, "d")
    assert kubelet_pod_requests_from_status(pod) == {"cpu": 2500}


def test_kubelet_view_from_the_status_reads_init_container_statuses() -> None:
    pod = make_pod("p").req(cpu="1").init_container("s", restart_policy="Always").req(cpu="2")
    obj = pod.obj()
    status(obj, "c", allocated={"cpu": "1"}, actual={"cpu": "1"})
    status(obj, "s", allocated={"cpu": "500m"}, actual={"cpu": "500m"}, init=True)
    assert kubelet_pod_requests_from_status(obj) == {"cpu": 1500}


@pytest.mark.parametrize(
    ("lists", "want"),
    [
        (({"cpu": 1},), {"cpu": 1}),
        (({"cpu": 1}, {"cpu": 2, "memory": 3}), {"cpu": 2, "memory": 3}),
        (({"cpu": 5}, {}, {"memory": 1}), {"cpu": 5, "memory": 1}),
    ],
)
def test_max_resources(lists: tuple[dict[str, int], ...], want: dict[str, int]) -> None:
    assert max_resources(*lists) == want
