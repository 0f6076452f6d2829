"""apps/v1 defaulting, validation, the pod-template hash and surge/unavailable arithmetic."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.machinery.update_strategy import bumps_generation
from kemu.machinery.validation.objects import validate_object
from kemu.testing.builders import make_deployment, make_replica_set


def _fields(obj: types_pb2.Deployment | types_pb2.ReplicaSet, old=None) -> list[str]:
    return [c.field for c in validate_object(obj, old=old)]


def test_deployment_defaults_are_upstreams() -> None:
    d = types_pb2.Deployment()
    apps.set_defaults_deployment(d)
    assert d.spec.replicas == 1
    assert d.spec.strategy.type == "RollingUpdate"
    assert d.spec.strategy.rolling_update.max_surge.str_val == "25%"
    assert d.spec.strategy.rolling_update.max_unavailable.str_val == "25%"
    assert d.spec.revision_history_limit == 10
    assert d.spec.progress_deadline_seconds == 600
    recreate = types_pb2.Deployment()
    recreate.spec.strategy.type = "Recreate"
    recreate.spec.replicas = 0
    apps.set_defaults_deployment(recreate)
    assert recreate.spec.replicas == 0  # an explicit 0 stays
    assert not recreate.spec.strategy.HasField("rolling_update")
    rs = types_pb2.ReplicaSet()
    apps.set_defaults_replica_set(rs)
    assert rs.spec.replicas == 1


def test_valid_workloads_pass() -> None:
    assert _fields(make_deployment("web").replicas(3).obj()) == []
    assert _fields(make_replica_set("web").replicas(0).obj()) == []
    assert _fields(make_deployment("web").recreate().obj()) == []


def test_selector_must_be_non_empty_and_match_the_template() -> None:
    d = make_deployment("web").obj()
    d.spec.template.metadata.labels["app"] = "other"
    assert _fields(d) == ["spec.template.metadata.labels"]
    d.spec.selector.ClearField("match_labels")
    assert "spec.selector" in _fields(d)
    d.spec.ClearField("selector")
    assert _fields(d) == ["spec.selector"]
    rs = make_replica_set("web").obj()
    rs.spec.ClearField("template")
    assert _fields(rs) == ["spec.template"]


def test_replicas_strategy_and_deadlines_are_checked() -> None:
    d = make_deployment("web").replicas(-1).obj()
    assert _fields(d) == ["spec.replicas"]
    d = make_deployment("web").rolling_update(0, 0).obj()
    assert _fields(d) == ["spec.strategy.rollingUpdate.maxUnavailable"]
    d = make_deployment("web").rolling_update("200%", "101%").obj()
    assert _fields(d) == ["spec.strategy.rollingUpdate.maxUnavailable"]  # surge may exceed 100%
    d = make_deployment("web").rolling_update("x", 1).obj()
    assert _fields(d) == ["spec.strategy.rollingUpdate.maxSurge"]
    d = make_deployment("web").recreate().obj()
    d.spec.strategy.rolling_update.max_surge.int_val = 1
    assert _fields(d) == ["spec.strategy.rollingUpdate"]
    d = make_deployment("web").obj()
    d.spec.strategy.type = "BlueGreen"
    assert _fields(d) == ["spec.strategy.type"]
    d = make_deployment("web").min_ready_seconds(10).progress_deadline_seconds(10).obj()
    assert _fields(d) == ["spec.progressDeadlineSeconds"]
    d = make_deployment("web").revision_history_limit(-1).obj()
    assert _fields(d) == ["spec.revisionHistoryLimit"]


def test_template_restart_policy_must_be_always() -> None:
    d = make_deployment("web").obj()
    d.spec.template.spec.restart_policy = "Never"
    assert _fields(d) == ["spec.template.spec.restartPolicy"]
    d.spec.template.spec.restart_policy = "Always"
    d.spec.template.spec.containers[0].resources.requests["cpu"] = "lots"
    assert _fields(d) == ["spec.template.spec.containers[0].resources.requests[cpu]"]


def test_selector_is_immutable() -> None:
    old = make_deployment("web").obj()
    new = make_deployment("web").selector(app="web", tier="x").obj()
    assert _fields(new, old=old) == ["spec.selector"]


def test_generation_bumps_on_spec_and_deployment_annotations() -> None:
    old = make_deployment("web").obj()
    new = make_deployment("web").replicas(2).obj()
    assert bumps_generation(old, new)
    annotated = make_deployment("web").obj()
    annotated.metadata.annotations["a"] = "b"
    assert bumps_generation(old, annotated)
    rs, rs_annotated = make_replica_set("r").obj(), make_replica_set("r").obj()
    rs_annotated.metadata.annotations["a"] = "b"
    assert not bumps_generation(rs, rs_annotated)
    status_only = make_deployment("web").obj()
    status_only.status.replicas = 3
    assert not bumps_generation(old, status_only)


@pytest.mark.parametrize(
    ("surge", "unavailable", "desired", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailability down
        ("25%", "25%", 1, (1, 0)),
        (0, 0, 5, (0, 1)),  # never both 0
        (2, "50%", 3, (2, 1)),
        ("0%", "0%", 4, (0, 1)),
    ],
)
def test_resolve_fenceposts(surge, unavailable, desired, expected) -> None:
    d = make_deployment("web").rolling_update(surge, unavailable).obj()
    ru = d.spec.strategy.rolling_update
    assert apps.resolve_fenceposts(ru.max_surge, ru.max_unavailable, desired) == expected


def test_max_unavailable_is_zero_for_recreate_and_capped_by_replicas() -> None:
    assert apps.max_unavailable(make_deployment("w").recreate().replicas(5).obj()) == 0
    assert apps.max_unavailable(make_deployment("w").rolling_update(0, 9).replicas(3).obj()) == 3
    assert apps.max_surge(make_deployment("w").rolling_update(0, 9).replicas(3).obj()) == 0


def test_pod_template_hash_is_stable_ignores_its_label_and_changes_with_the_template() -> None:
    t = make_deployment("web").obj().spec.template
    h = apps.compute_hash(t, None)
    assert h == apps.compute_hash(t, None)
    assert set(h) <= set("bcdfghjklmnpqrstvwxz2456789")
    labelled = types_pb2.PodTemplateSpec()
    labelled.CopyFrom(t)
    labelled.metadata.labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = h
    assert apps.compute_hash(labelled, None) == h
    assert apps.equal_ignore_hash(t, labelled)
    changed = make_deployment("web").image("nginx:1.27").obj().spec.template
    assert apps.compute_hash(changed, None) != h
    assert not apps.equal_ignore_hash(t, changed)
    assert apps.compute_hash(t, 1) != h  # a collision count moves the hash
