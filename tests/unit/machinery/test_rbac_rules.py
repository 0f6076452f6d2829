"""RBAC's decision (kemu/machinery/rbac_rules.py), after upstream's
pkg/apis/rbac/v1/evaluation_helpers.go and plugin/pkg/auth/authorizer/rbac/rbac_test.go."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.rbac_rules import (
    Attributes,
    Decision,
    authorize,
    forbidden_message,
    rule_allows,
    visit_rules,
)
from kemu.machinery.user import UserInfo

ALICE = UserInfo("alice", ("devs", "system:authenticated"))
SA = UserInfo("system:serviceaccount:team:builder", ("system:serviceaccounts",))


def _rule(
    verbs: Iterable[str],
    groups: Iterable[str] = ("",),
    resources: Iterable[str] = (),
    names: Iterable[str] = (),
    urls: Iterable[str] = (),
) -> types_pb2.PolicyRule:
    return types_pb2.PolicyRule(
        verbs=list(verbs),
        api_groups=list(groups) if resources else [],
        resources=list(resources),
        resource_names=list(names),
        non_resource_urls=list(urls),
    )


@dataclass
class Policy:
    cluster_roles: dict[str, types_pb2.ClusterRole] = field(default_factory=dict)
    roles: dict[tuple[str, str], types_pb2.Role] = field(default_factory=dict)
    crbs: list[types_pb2.ClusterRoleBinding] = field(default_factory=list)
    rbs: list[types_pb2.RoleBinding] = field(default_factory=list)

    def cluster_role_bindings(self) -> Iterable[types_pb2.ClusterRoleBinding]:
        return self.crbs

    def role_bindings(self, namespace: str) -> Iterable[types_pb2.RoleBinding]:
        return [b for b in self.rbs if b.metadata.namespace == namespace]

    def cluster_role(self, name: str) -> types_pb2.ClusterRole | None:
        return self.cluster_roles.get(name)

    def role(self, namespace: str, name: str) -> types_pb2.Role | None:
        return self.roles.get((namespace, name))

    def add_cluster_role(self, name: str, *rules: types_pb2.PolicyRule) -> None:
        self.cluster_roles[name] = types_pb2.ClusterRole(
            metadata=types_pb2.ObjectMeta(name=name), rules=list(rules)
        )

    def add_role(self, namespace: str, name: str, *rules: types_pb2.PolicyRule) -> None:
        self.roles[(namespace, name)] = types_pb2.Role(
            metadata=types_pb2.ObjectMeta(name=name, namespace=namespace), rules=list(rules)
        )

    def bind(
        self, name: str, kind: str, role: str, *subjects: types_pb2.Subject, namespace: str = ""
    ) -> None:
        ref = types_pb2.RoleRef(api_group="rbac.authorization.k8s.io", kind=kind, name=role)
        meta = types_pb2.ObjectMeta(name=name, namespace=namespace)
        if namespace:
            self.rbs.append(types_pb2.RoleBinding(metadata=meta, role_ref=ref, subjects=subjects))
        else:
            self.crbs.append(
                types_pb2.ClusterRoleBinding(metadata=meta, role_ref=ref, subjects=subjects)
            )


def _user(name: str) -> types_pb2.Subject:
    return types_pb2.Subject(kind="User", api_group="rbac.authorization.k8s.io", name=name)


def _group(name: str) -> types_pb2.Subject:
    return types_pb2.Subject(kind="Group", api_group="rbac.authorization.k8s.io", name=name)


def _sa(name: str, namespace: str = "") -> types_pb2.Subject:
    return types_pb2.Subject(kind="ServiceAccount", name=name, namespace=namespace)


@pytest.mark.parametrize(
    ("rule", "attrs", "allowed"),
    [
        (_rule(["get"], resources=["pods"]), dict(verb="get", resource="pods"), True),
        (_rule(["get"], resources=["pods"]), dict(verb="list", resource="pods"), False),
        (_rule(["*"], resources=["pods"]), dict(verb="delete", resource="pods"), True),
        (_rule(["get"], ["apps"], ["pods"]), dict(verb="get", resource="pods"), False),
        (_rule(["get"], ["*"], ["*"]), dict(verb="get", resource="x", api_group="y"), True),
        # a subresource is its own resource, "*/status" any resource's status
        (_rule(["get"], resources=["pods"]), dict(verb="get", resource="pods", subresource="log"), False),
        (_rule(["get"], resources=["pods/log"]), dict(verb="get", resource="pods", subresource="log"), True),
        (_rule(["patch"], resources=["*/status"]), dict(verb="patch", resource="nodes", subresource="status"), True),
        (_rule(["patch"], resources=["*/status"]), dict(verb="patch", resource="nodes"), False),
        (_rule(["get"], resources=["*"]), dict(verb="get", resource="pods", subresource="exec"), True),
        # resourceNames: only requests that name one of them (a list names none)
        (_rule(["get"], resources=["secrets"], names=["a"]), dict(verb="get", resource="secrets", name="a"), True),
        (_rule(["get"], resources=["secrets"], names=["a"]), dict(verb="get", resource="secrets", name="b"), False),
        (_rule(["list"], resources=["secrets"], names=["a"]), dict(verb="list", resource="secrets"), False),
        # non-resource URLs: exact, or a prefix ending in *
        (_rule(["get"], urls=["/healthz"]), dict(verb="get", path="/healthz"), True),
        (_rule(["get"], urls=["/healthz"]), dict(verb="get", path="/healthz/etcd"), False),
        (_rule(["get"], urls=["/healthz*"]), dict(verb="get", path="/healthz/etcd"), True),
        (_rule(["get"], urls=["*"]), dict(verb="get", path="/metrics"), True),
        (_rule(["get"], urls=["/metrics"]), dict(verb="get", resource="metrics"), False),
    ],
)  # fmt: skip
def test_a_rule_allows_as_upstreams_evaluation_helpers(
    rule: types_pb2.PolicyRule, attrs: dict[str, str], allowed: bool
) -> None:
    assert rule_allows(Attributes(ALICE, **attrs), rule) is allowed


def test_cluster_bindings_grant_everywhere_role_bindings_in_their_namespace() -> None:
    p = Policy()
    p.add_cluster_role("view", _rule(["get", "list"], resources=["pods"]))
    p.add_role("team", "editor", _rule(["create"], resources=["pods"]))
    p.bind("devs-view", "ClusterRole", "view", _group("devs"))
    p.bind("alice-edit", "Role", "editor", _user("alice"), namespace="team")
    assert authorize(p, Attributes(ALICE, "list", "pods", namespace="other")) == Decision(
        True,
        'RBAC: allowed by ClusterRoleBinding "devs-view" of ClusterRole "view" to Group "devs"',
    )
    assert authorize(p, Attributes(ALICE, "create", "pods", namespace="team")) == Decision(
        True, 'RBAC: allowed by RoleBinding "alice-edit/team" of Role "editor" to User "alice"'
    )
    assert not authorize(p, Attributes(ALICE, "create", "pods", namespace="other")).allowed
    assert not authorize(p, Attributes(ALICE, "create", "pods")).allowed  # cluster scope
    assert not authorize(p, Attributes(UserInfo("bob"), "list", "pods", namespace="x")).allowed


def test_a_role_binding_may_grant_a_cluster_roles_rules_in_its_namespace_only() -> None:
    p = Policy()
    p.add_cluster_role("edit", _rule(["*"], resources=["configmaps"]))
    p.bind("b", "ClusterRole", "edit", _user("alice"), namespace="team")
    assert authorize(p, Attributes(ALICE, "delete", "configmaps", namespace="team")).allowed
    assert not authorize(p, Attributes(ALICE, "delete", "configmaps", namespace="x")).allowed


def test_a_service_account_subject_defaults_to_the_bindings_namespace() -> None:
    p = Policy()
    p.add_cluster_role("view", _rule(["list"], resources=["pods"]))
    p.bind("local", "ClusterRole", "view", _sa("builder"), namespace="team")
    assert authorize(p, Attributes(SA, "list", "pods", namespace="team")) == Decision(
        True,
        'RBAC: allowed by RoleBinding "local/team" of ClusterRole "view" to '
        'ServiceAccount "builder/team"',
    )
    # in a ClusterRoleBinding a ServiceAccount needs its namespace
    q = Policy(cluster_roles=p.cluster_roles)
    q.bind("no-ns", "ClusterRole", "view", _sa("builder"))
    assert not authorize(q, Attributes(SA, "list", "pods", namespace="team")).allowed
    q.bind("with-ns", "ClusterRole", "view", _sa("builder", "team"))
    assert authorize(q, Attributes(SA, "list", "pods", namespace="x")).allowed


def test_a_binding_to_a_missing_role_is_passed_over_and_named_in_the_reason() -> None:
    p = Policy()
    p.add_cluster_role("view", _rule(["list"], resources=["pods"]))
    p.bind("gone", "ClusterRole", "nope", _user("alice"))
    p.bind("gone-too", "Role", "missing", _user("alice"), namespace="team")
    p.bind("ok", "ClusterRole", "view", _user("alice"))
    assert authorize(p, Attributes(ALICE, "list", "pods", namespace="team")).allowed
    assert authorize(p, Attributes(ALICE, "delete", "pods", namespace="team")) == Decision(
        False,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, '
        'role.rbac.authorization.k8s.io "missing" not found]',
    )
    assert authorize(p, Attributes(ALICE, "delete", "pods")) == Decision(
        False, 'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found'
    )


def test_the_rules_visited_are_the_cluster_bindings_then_the_namespaces() -> None:
    p = Policy()
    p.add_cluster_role("a", _rule(["get"], resources=["a"]))
    p.add_role("ns", "b", _rule(["get"], resources=["b"]))
    p.bind("rb", "Role", "b", _user("alice"), namespace="ns")
    p.bind("crb", "ClusterRole", "a", _user("alice"))
    assert [list(v.rule.resources) for v in visit_rules(p, ALICE, "ns") if v.rule] == [
        ["a"],
        ["b"],
    ]


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        (
            Attributes(ALICE, "list", "pods", namespace="default"),
            'User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
        ),
        (
            Attributes(ALICE, "patch", "nodes", subresource="status", name="n1"),
            'User "alice" cannot patch resource "nodes/status" in API group "" at the cluster scope',
        ),
        (
            Attributes(ALICE, "create", "deployments", api_group="apps", namespace="x"),
            'User "alice" cannot create resource "deployments" in API group "apps" in the namespace "x"',
        ),
        (Attributes(ALICE, "get", path="/metrics"), 'User "alice" cannot get path "/metrics"'),
    ],
)  # fmt: skip
def test_the_forbidden_message_is_upstreams(attrs: Attributes, message: str) -> None:
    assert forbidden_message(attrs) == message
