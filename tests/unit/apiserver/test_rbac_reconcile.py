"""The reconciliation of the bootstrap policy (pkg/registry/rbac/reconciliation, as the
apiserver's rbac/bootstrap-roles hook runs it: additive, autoupdate "false" protects)."""

from __future__ import annotations

from typing import TypeVar

from apiserver.authorization.bootstrap_policy import (
    AUTOUPDATE_ANNOTATION,
    cluster_role,
    cluster_role_binding,
    group,
    role_binding,
    rule,
    user,
)
from apiserver.authorization.reconcile import (
    Operation,
    reconcile_binding,
    reconcile_role,
    uncovered,
)
from kemu.api.v1 import types_pb2

M = TypeVar("M", types_pb2.ClusterRole, types_pb2.ClusterRoleBinding)


def _copy(obj: M) -> M:
    out = type(obj)()
    out.CopyFrom(obj)
    return out


def test_a_missing_role_is_created() -> None:
    expected = cluster_role("r", [rule(("get",), ("",), ("pods",))])
    result = reconcile_role(expected, None)
    assert result.operation is Operation.CREATE and result.obj is expected


def test_a_role_that_covers_the_expected_rules_is_left_as_it_is() -> None:
    expected = cluster_role("r", [rule(("get", "list"), ("",), ("pods",))])
    existing = _copy(expected)
    existing.ClearField("rules")
    existing.rules.append(rule(("*",), ("",), ("pods", "services")))
    existing.metadata.labels["mine"] = "yes"
    result = reconcile_role(expected, existing)
    assert result.operation is Operation.NONE and result.obj == existing


def test_missing_rules_are_added_broken_down_and_extra_ones_kept() -> None:
    expected = cluster_role("r", [rule(("get", "list"), ("",), ("pods",))])
    existing = _copy(expected)
    existing.ClearField("rules")
    existing.rules.extend([rule(("get",), ("",), ("pods",)), rule(("delete",), ("",), ("nodes",))])
    result = reconcile_role(expected, existing)
    assert result.operation is Operation.UPDATE and not result.protected
    assert isinstance(result.obj, types_pb2.ClusterRole)
    assert list(result.obj.rules) == [*existing.rules, rule(("list",), ("",), ("pods",))]


def test_the_existing_labels_and_annotations_win_and_missing_ones_are_added() -> None:
    expected = cluster_role("r", labels={"a": "1"})
    existing = _copy(expected)
    existing.metadata.labels["a"] = "mine"
    del existing.metadata.labels["kubernetes.io/bootstrapping"]
    result = reconcile_role(expected, existing)
    assert result.operation is Operation.UPDATE
    assert dict(result.obj.metadata.labels) == {
        "a": "mine",
        "kubernetes.io/bootstrapping": "rbac-defaults",
    }


def test_autoupdate_false_protects_a_role_from_any_write() -> None:
    expected = cluster_role("r", [rule(("get",), ("",), ("pods",))])
    existing = _copy(expected)
    existing.ClearField("rules")
    existing.metadata.annotations[AUTOUPDATE_ANNOTATION] = "false"
    result = reconcile_role(expected, existing)
    assert result.protected and not result.writes


def test_an_aggregated_role_gets_its_missing_selectors_but_keeps_the_controllers_rules() -> None:
    expected = cluster_role("view", aggregate_from="rbac.authorization.k8s.io/aggregate-to-view")
    existing = _copy(expected)
    existing.rules.append(rule(("get",), ("",), ("pods",)))  # (the aggregation controller's)
    assert reconcile_role(expected, existing).operation is Operation.NONE
    existing.aggregation_rule.ClearField("cluster_role_selectors")
    existing.aggregation_rule.cluster_role_selectors.add().match_labels["mine"] = "true"
    result = reconcile_role(expected, existing)
    assert isinstance(result.obj, types_pb2.ClusterRole)
    assert [dict(s.match_labels) for s in result.obj.aggregation_rule.cluster_role_selectors] == [
        {"mine": "true"},
        {"rbac.authorization.k8s.io/aggregate-to-view": "true"},
    ]
    assert list(result.obj.rules) == list(existing.rules)


def test_a_bindings_missing_subjects_are_added_and_extra_ones_kept() -> None:
    expected = cluster_role_binding("b", group("g1"), user("u1"))
    existing = _copy(expected)
    existing.ClearField("subjects")
    existing.subjects.append(user("someone"))
    result = reconcile_binding(expected, existing)
    assert result.operation is Operation.UPDATE
    assert isinstance(result.obj, types_pb2.ClusterRoleBinding)
    assert [s.name for s in result.obj.subjects] == ["someone", "g1", "u1"]
    assert reconcile_binding(expected, _copy(expected)).operation is Operation.NONE


def test_a_binding_to_another_role_is_recreated_unless_protected() -> None:
    expected = role_binding("kube-system", "b", "r", user("u"))
    existing = types_pb2.RoleBinding()
    existing.CopyFrom(expected)
    existing.role_ref.name = "other"
    result = reconcile_binding(expected, existing)
    assert result.operation is Operation.RECREATE and result.writes
    assert isinstance(result.obj, types_pb2.RoleBinding)
    assert result.obj.role_ref.name == "r"
    existing.metadata.annotations[AUTOUPDATE_ANNOTATION] = "false"
    assert not reconcile_binding(expected, existing).writes


def test_covers_knows_stars_subresources_names_and_url_prefixes() -> None:
    owner = [
        rule(("get",), ("*",), ("*/scale",)),
        rule(("*",), ("apps",), ("deployments",)),
        rule(("get",), ("",), ("configmaps",), names=("x",)),
        rule(("get",), urls=("/healthz/*",)),
    ]
    assert not uncovered(
        owner,
        [
            rule(("get",), ("apps",), ("deployments/scale",)),
            rule(("patch", "watch"), ("apps",), ("deployments",)),
            rule(("get",), ("",), ("configmaps",), names=("x",)),
            rule(("get",), urls=("/healthz/etcd",)),
        ],
    )
    assert uncovered(
        owner,
        [
            rule(("get",), ("",), ("configmaps",)),  # (any name: more than "x")
            rule(("get",), ("apps",), ("deployments/status",)),
            rule(("post",), urls=("/healthz/etcd",)),
        ],
    ) == [
        rule(("get",), ("",), ("configmaps",)),
        rule(("get",), ("apps",), ("deployments/status",)),
        rule(("post",), urls=("/healthz/etcd",)),
    ]
