"""The simulated usage of a running pod's containers (kemu.machinery.usage), which
metrics.k8s.io serves, and the validation of its annotations."""

from __future__ import annotations

import pytest

from kemu.machinery.usage import (
    CPU_USAGE_ANNOTATION,
    MEMORY_USAGE_ANNOTATION,
    ContainerUsage,
    pod_usage,
)
from kemu.machinery.validation.pod import validate_pod, validate_usage_annotations
from kemu.testing.builders import make_pod


def test_each_container_uses_half_its_requests_by_default() -> None:
    pod = (
        make_pod("p").req(cpu="300m", memory="64Mi")
        .container("b").req(cpu="1", memory="1001")
        .container("none")
        .init_container("init").req(cpu="4")
        .init_container("sidecar", restart_policy="Always").req(cpu="10m", memory="2Mi")
        .obj()
    )  # fmt: skip
    assert pod_usage(pod) == [
        ContainerUsage("c", 150, 32 * 2**20),
        ContainerUsage("b", 500, 500),  # integers, rounded down
        ContainerUsage("none", 0, 0),
        ContainerUsage("sidecar", 5, 2**20),  # a sidecar runs; an init container does not
    ]


def test_the_size_the_kubelet_reports_counts_over_the_spec_after_a_resize() -> None:
    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()
    status = pod.status.container_statuses.add(name="c")
    status.resources.requests.update({"cpu": "200m", "memory": "128Mi"})
    assert pod_usage(pod) == [ContainerUsage("c", 100, 64 * 2**20)]


def test_annotations_set_the_pods_total_split_evenly_over_its_containers() -> None:
    pod = (
        make_pod("p").req(cpu="1", memory="1Gi")
        .container("b").container("d")
        .annotation(CPU_USAGE_ANNOTATION, "1001m")
        .obj()
    )  # fmt: skip
    usage = pod_usage(pod)
    assert [u.cpu_millis for u in usage] == [334, 334, 333]  # the remainder to the first
    assert [u.memory_bytes for u in usage] == [2**29, 0, 0]  # memory: still half the requests
    pod.metadata.annotations[MEMORY_USAGE_ANNOTATION] = "3Gi"
    assert [u.memory_bytes for u in pod_usage(pod)] == [2**30] * 3


def test_an_annotation_that_is_not_a_quantity_is_ignored_when_read() -> None:
    pod = make_pod("p").req(cpu="1").annotation(CPU_USAGE_ANNOTATION, "lots").obj()
    assert pod_usage(pod) == [ContainerUsage("c", 500, 0)]


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        (CPU_USAGE_ANNOTATION, "lots", 'Invalid value: "lots": must be a quantity'),
        (MEMORY_USAGE_ANNOTATION, "-1Mi", 'Invalid value: "-1Mi": must be greater than or equal'),
    ],
)
def test_pod_validation_names_a_bad_usage_annotation(key: str, value: str, message: str) -> None:
    causes = validate_pod(make_pod("p").annotation(key, value).obj())
    assert [c.field for c in causes] == [f"metadata.annotations[{key}]"]
    assert causes[0].message.startswith(message)
    assert validate_usage_annotations({key: "250m"}) == []
