"""Pod QoS class, as upstream ComputePodQOS."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, compute_qos_class, qos_class

Res = dict[str, dict[str, str]]


def pod(*containers: Res, init: tuple[Res, ...] = ()) -> types_pb2.Pod:
    p = types_pb2.Pod()
    for field, specs in (("containers", containers), ("init_containers", init)):
        for i, res in enumerate(specs):
            c = getattr(p.spec, field).add(name=f"{field}-{i}")
            c.resources.requests.update(res.get("requests", {}))
            c.resources.limits.update(res.get("limits", {}))
    return p


FULL = {"cpu": "1", "memory": "1Gi"}


@pytest.mark.parametrize(
    ("p", "expected"),
    [
        (pod({}), BEST_EFFORT),
        (pod({"requests": {"cpu": "0"}}), BEST_EFFORT),
        (
            pod({"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}),
            BEST_EFFORT,
        ),
        (pod({"requests": {"cpu": "100m"}}), BURSTABLE),
        (pod({"requests": FULL, "limits": FULL}), GUARANTEED),
        (pod({"limits": FULL}), GUARANTEED),  # requests default to limits
        (pod({"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": FULL}), GUARANTEED),
        (pod({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": FULL}), BURSTABLE),
        (pod({"limits": {"cpu": "1"}}), BURSTABLE),  # memory limit missing
        (pod({"limits": FULL}, {}), BURSTABLE),  # one container without limits
        (pod({"limits": FULL}, {"limits": FULL}), GUARANTEED),
        (pod({"limits": FULL}, init=({"limits": FULL},)), GUARANTEED),
        (pod({"limits": FULL}, init=({"requests": {"cpu": "1"}},)), BURSTABLE),
        (pod({}, init=({"requests": {"memory": "1"}},)), BURSTABLE),
        (
            pod({"limits": {**FULL, "example.com/gpu": "1"}, "requests": {"cpu": "1"}}),
            GUARANTEED,  # only cpu and memory count
        ),
    ],
)
def test_compute_qos_class(p: types_pb2.Pod, expected: str) -> None:
    assert compute_qos_class(p) == expected
    assert qos_class(p) == expected


def test_status_qos_class_wins_as_in_get_pod_qos() -> None:
    p = pod({"limits": FULL})
    p.status.qos_class = BURSTABLE
    assert qos_class(p) == BURSTABLE
    assert compute_qos_class(p) == GUARANTEED


def test_pod_level_resources_decide_when_the_gate_is_on() -> None:
    p = pod({"requests": {"cpu": "100m"}})
    p.spec.resources.limits.update(FULL)
    assert compute_qos_class(p) == BURSTABLE
    assert compute_qos_class(p, pod_level_resources=True) == GUARANTEED
    p.spec.resources.requests["cpu"] = "500m"
    assert compute_qos_class(p, pod_level_resources=True) == BURSTABLE
    q = pod({"limits": FULL})
    q.spec.resources.SetInParent()
    assert compute_qos_class(q, pod_level_resources=True) == GUARANTEED  # not set: containers


def test_resize_changing_qos_is_detectable() -> None:
    before = pod({"limits": FULL})
    after = pod({"limits": FULL, "requests": {"cpu": "500m", "memory": "1Gi"}})
    assert compute_qos_class(before) != compute_qos_class(after)
