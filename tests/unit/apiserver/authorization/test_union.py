"""The union of --authorization-mode and its built-in authorizers (apiserver/authorization/
union.py, modes.py), after k8s.io/apiserver/pkg/authorization/union/union_test.go and
pkg/kubeapiserver/options/authorization_test.go; the impersonation and authorization filters
(apiserver/endpoints/filters) and the reviews (apiserver/endpoints/rest/authorization.py)
over an RBAC policy of the test's own."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from apiserver.authorization import modes
from apiserver.authorization.authorizer import Decision, Rules, Verdict, forbidden
from apiserver.authorization.modes import Authorization, ModeError
from apiserver.authorization.rbac import RBACAuthorizer
from apiserver.authorization.union import (
    AlwaysAllow,
    AlwaysDeny,
    PrivilegedGroups,
    Union,
)
from apiserver.endpoints.filters.authorization import authorize
from apiserver.endpoints.identity import Requester
from apiserver.endpoints.inflight import RequestInfo
from apiserver.endpoints.rest import authentication, authorization, discovery
from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.machinery.errors import BadRequest, Forbidden, InternalError, Invalid
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import UserInfo
from tests.unit.machinery.test_rbac_rules import Policy, _rule

JANE = UserInfo("jane", ("system:authenticated",))
ADMIN = UserInfo("root", ("system:masters", "system:authenticated"))
GET_PODS = Attributes(JANE, "get", "pods", namespace="team", name="web")


@dataclass
class _Fixed:
    decision: Decision
    rules: Rules = Rules()
    asked: int = 0

    def authorize(self, attrs: Attributes) -> Decision:
        self.asked += 1
        return self.decision

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return self.rules


def test_the_first_decision_that_is_not_no_opinion_wins_and_the_rest_are_not_asked() -> None:
    first = _Fixed(Decision(Verdict.NO_OPINION, "first: no"))
    deny = _Fixed(Decision(Verdict.DENY, "second: never"))
    last = _Fixed(Decision(Verdict.ALLOW))
    assert Union([first, deny, last]).authorize(GET_PODS) == Decision(Verdict.DENY, "second: never")
    assert (first.asked, deny.asked, last.asked) == (1, 1, 0)


def test_without_a_decision_the_union_keeps_every_reason_and_error() -> None:
    a = _Fixed(Decision(Verdict.NO_OPINION, "a says", "a broke"))
    b = _Fixed(Decision(Verdict.NO_OPINION, "b says", "b broke"))
    assert Union([a, b]).authorize(GET_PODS) == Decision(
        Verdict.NO_OPINION, "a says\nb says", "[a broke, b broke]"
    )
    assert not Union([]).authorize(GET_PODS).allowed


def test_the_union_of_rules_is_every_authorizers_and_incomplete_when_one_is() -> None:
    r1 = _rule(["get"], resources=["pods"])
    r2 = _rule(["get"], urls=["/healthz"])
    a = _Fixed(Decision(Verdict.NO_OPINION), Rules([r1], [], incomplete=True))
    b = _Fixed(Decision(Verdict.NO_OPINION), Rules([], [r2], error="role missing"))
    rules = Union([a, b]).rules_for(JANE, "team")
    assert list(rules.resource_rules) == [r1] and list(rules.non_resource_rules) == [r2]
    assert rules.incomplete and rules.error == "role missing"


def test_always_allow_always_deny_and_the_privileged_group() -> None:
    assert AlwaysAllow().authorize(GET_PODS).allowed
    deny = AlwaysDeny().authorize(GET_PODS)
    assert deny == Decision(Verdict.NO_OPINION, "Everything is forbidden.")
    assert AlwaysDeny().rules_for(JANE, "team") == Rules()
    masters = PrivilegedGroups("system:masters")
    assert not masters.authorize(GET_PODS).allowed
    assert masters.authorize(Attributes(ADMIN, "delete", "nodes", name="n")).allowed


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("", "at least one authorization-mode must be passed"),
        ("RBAC,Bogus", 'authorization-mode "Bogus" is not a valid mode'),
        ("rbac", 'authorization-mode "rbac" is not a valid mode'),
        ("RBAC,RBAC", 'authorization-mode ["RBAC" "RBAC"] has mode specified more than once'),
        ("Webhook", 'authorization-mode "Webhook" is not modelled'),
        ("ABAC", 'authorization-mode "ABAC" is not modelled'),
    ],
)
def test_modes_are_validated_as_upstream(text: str, error: str) -> None:
    with pytest.raises(ModeError, match=error.replace("[", r"\[").replace("]", r"\]")):
        modes.validate(modes.parse_modes(text))


def test_node_is_a_mode_built_with_the_emulated_versions_node_rules() -> None:
    """Node is in the table; at 1.31 (AuthorizeNodeWithSelectors off) a node may list every
    pod (the static rules), from 1.32 only its own (the selector)."""
    assert modes.validate(["Node", "RBAC"]) == ("Node", "RBAC")
    node_user = UserInfo("system:node:n1", ("system:nodes", "system:authenticated"))
    for version, allowed in (("1.31", True), ("1.37", False)):
        built = modes.build(
            ["Node"], {}, modes.Emulated(FeatureGates.default(), Version.parse(version))
        )
        decision = built.authorizer.authorize(Attributes(node_user, "list", "pods"))
        assert decision.allowed is allowed, version


def test_the_default_is_always_allow_and_system_masters_goes_first() -> None:
    assert modes.DEFAULT_MODES == ("AlwaysAllow",)
    built = modes.build(["AlwaysDeny"], {})
    assert not built.always_allow
    assert not built.authorizer.authorize(GET_PODS).allowed
    assert built.authorizer.authorize(Attributes(ADMIN, "get", "pods")).allowed
    # the rule resolvers are the modes' alone: system:masters lists no rules
    rules = built.rule_resolver.rules_for(ADMIN, "team")
    assert not rules.resource_rules and not rules.non_resource_rules
    assert modes.build(modes.DEFAULT_MODES, {}).always_allow


# ---------------------------------------------------------------- RBAC behind the filters


def _policy() -> Policy:
    reader = types_pb2.Role(
        metadata=types_pb2.ObjectMeta(name="reader", namespace="team"),
        rules=[_rule(["get", "list"], resources=["pods"])],
    )
    binding = types_pb2.RoleBinding(
        metadata=types_pb2.ObjectMeta(name="jane-reads", namespace="team"),
        role_ref=types_pb2.RoleRef(
            api_group="rbac.authorization.k8s.io", kind="Role", name="reader"
        ),
        subjects=[types_pb2.Subject(kind="User", name="jane")],
    )
    impersonator = types_pb2.ClusterRole(
        metadata=types_pb2.ObjectMeta(name="as-bob"),
        rules=[
            _rule(["impersonate"], resources=["users"], names=["bob"]),
            _rule(["impersonate"], resources=["groups"], names=["devs"]),
        ],
    )
    can_impersonate = types_pb2.ClusterRoleBinding(
        metadata=types_pb2.ObjectMeta(name="jane-as-bob"),
        role_ref=types_pb2.RoleRef(
            api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="as-bob"
        ),
        subjects=[types_pb2.Subject(kind="User", name="jane")],
    )
    return Policy(
        cluster_roles={"as-bob": impersonator},
        roles={("team", "reader"): reader},
        crbs=[can_impersonate],
        rbs=[binding],
    )


def _rbac() -> Authorization:
    rbac = RBACAuthorizer(_policy())
    return Authorization(
        ("RBAC",), Union([PrivilegedGroups("system:masters"), rbac]), Union([rbac])
    )


def test_the_filter_allows_what_a_binding_grants_and_refuses_the_rest_with_upstreams_status() -> (
    None
):
    authz = _rbac()
    assert authorize(authz, Requester(JANE), RequestInfo("get", "pods", "team", name="web")) == JANE
    with pytest.raises(Forbidden) as e:
        authorize(authz, Requester(JANE), RequestInfo("delete", "pods", "team", name="web"))
    assert e.value.message == (
        'pods "web" is forbidden: User "jane" cannot delete resource "pods" in API group "" '
        'in the namespace "team"'
    )
    assert e.value.subject is not None
    assert (e.value.subject.name, e.value.subject.group, e.value.subject.kind) == (
        "web",
        "",
        "pods",
    )
    with pytest.raises(Forbidden) as e:
        authorize(authz, Requester(JANE), RequestInfo("list", "deployments", "", api_group="apps"))
    assert e.value.message == (
        'deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API '
        'group "apps" at the cluster scope'
    )
    with pytest.raises(Forbidden) as e:
        authorize(authz, Requester(JANE), RequestInfo("get", path="/healthz"))
    assert e.value.message == 'forbidden: User "jane" cannot get path "/healthz"'
    assert authorize(authz, Requester(ADMIN), RequestInfo("delete", "nodes", name="n")) == ADMIN


def test_a_refusal_carries_the_authorizers_reason_and_an_error_is_internal() -> None:
    deny = modes.build(["AlwaysDeny"], {})
    with pytest.raises(Forbidden, match=r"at the cluster scope: Everything is forbidden\.$"):
        authorize(deny, Requester(JANE), RequestInfo("list", "nodes"))
    broken = _Fixed(Decision(Verdict.NO_OPINION, "", "the policy did not load"))
    authz = Authorization(("RBAC",), Union([broken]), Union([broken]))
    with pytest.raises(InternalError, match="the policy did not load"):
        authorize(authz, Requester(JANE), RequestInfo("list", "nodes"))


def test_impersonation_needs_the_impersonate_verb_on_the_user_and_each_group() -> None:
    authz = _rbac()
    as_bob = Requester(JANE, "bob", ("devs",))
    info = RequestInfo("get", path="/version")
    with pytest.raises(Forbidden):  # bob himself may not get /version
        authorize(authz, as_bob, info)
    assert authz.authorizer.authorize(Attributes(JANE, "impersonate", "users", name="bob")).allowed
    with pytest.raises(Forbidden) as e:
        authorize(authz, Requester(JANE, "alice"), info)
    assert e.value.message == (
        'users "alice" is forbidden: User "jane" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )
    with pytest.raises(Forbidden, match='groups "system:masters" is forbidden'):
        authorize(authz, Requester(JANE, "bob", ("system:masters",)), info)
    with pytest.raises(
        Forbidden, match='serviceaccounts "builder" is forbidden: .* in the namespace "ci"'
    ):
        authorize(authz, Requester(JANE, "system:serviceaccount:ci:builder"), info)
    with pytest.raises(BadRequest, match="without impersonating a user"):
        authorize(authz, Requester(JANE, "", ("devs",)), info)
    # acting as oneself asks for nothing (a kubelet names its own node's user)
    get = RequestInfo("get", "pods", "team", name="web")
    assert authorize(authz, Requester(JANE, "jane", ("system:authenticated",)), get) == JANE


# ---------------------------------------------------------------- the reviews


def test_access_reviews_answer_from_the_authorizer() -> None:
    authz = _rbac()
    spec = {"resourceAttributes": {"verb": "get", "resource": "pods", "namespace": "team"}}
    r = discovery.SELF_SUBJECT_ACCESS_REVIEWS
    status = authorization.access_review({"spec": spec}, r, JANE, authz)["status"]
    assert status["allowed"] is True
    assert status["reason"].startswith('RBAC: allowed by RoleBinding "jane-reads/team"')
    other = UserInfo("joe", ("system:authenticated",))
    assert authorization.access_review({"spec": spec}, r, other, authz)["status"] == {
        "allowed": False
    }
    sar = discovery.SUBJECT_ACCESS_REVIEWS
    asked = {"spec": {**spec, "user": "jane"}}
    assert authorization.subject_access_review(asked, sar, authz)["status"]["allowed"] is True
    masters = {"spec": {**spec, "user": "x", "groups": ["system:masters"]}}
    assert authorization.subject_access_review(masters, sar, authz)["status"] == {"allowed": True}
    with pytest.raises(Invalid) as e:
        authorization.subject_access_review({"spec": spec}, sar, authz)
    assert [c.field for c in e.value.causes] == ["spec.user"]
    deny = modes.build(["AlwaysDeny"], {})
    assert authorization.access_review({"spec": spec}, r, JANE, deny)["status"] == {
        "allowed": False,
        "reason": "Everything is forbidden.",
    }


def test_a_local_access_review_is_in_the_namespace_of_its_path() -> None:
    authz = _rbac()
    r = discovery.LOCAL_SUBJECT_ACCESS_REVIEWS
    spec = {
        "user": "jane",
        "resourceAttributes": {"verb": "list", "resource": "pods", "namespace": "team"},
    }
    body = {"metadata": {"namespace": "team"}, "spec": spec}
    answer = authorization.local_access_review(body, r, "team", authz)
    assert answer["status"]["allowed"] is True and answer["metadata"]["namespace"] == "team"
    with pytest.raises(BadRequest, match="must match namespace: other"):
        authorization.local_access_review(body, r, "other", authz)


def test_the_rules_review_lists_the_bound_rules_and_missing_roles() -> None:
    policy = _policy()
    policy.rbs.append(
        types_pb2.RoleBinding(
            metadata=types_pb2.ObjectMeta(name="dangling", namespace="team"),
            role_ref=types_pb2.RoleRef(kind="Role", name="gone"),
            subjects=[types_pb2.Subject(kind="User", name="jane")],
        )
    )
    rbac = RBACAuthorizer(policy)
    authz = Authorization(("RBAC",), Union([rbac]), Union([rbac]))
    r = discovery.SELF_SUBJECT_RULES_REVIEWS
    status = authorization.rules_review({"spec": {"namespace": "team"}}, r, JANE, authz)["status"]
    assert {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]} in status[
        "resourceRules"
    ]
    assert status["nonResourceRules"] == [] and status["incomplete"] is False
    assert status["evaluationError"] == 'role.rbac.authorization.k8s.io "gone" not found'


def test_self_subject_review_names_the_requester() -> None:
    r = discovery.SELF_SUBJECT_REVIEWS[0]
    answer = authentication.self_subject_review({}, r, JANE)
    assert answer["apiVersion"] == "authentication.k8s.io/v1"
    assert answer["status"] == {
        "userInfo": {"username": "jane", "groups": ["system:authenticated"]}
    }
    assert [x.version for x in discovery.others_of("authentication.k8s.io", "v1beta1")] == []


def test_forbidden_of_a_named_group_resource() -> None:
    err = forbidden(Attributes(JANE, "update", "deployments", "apps", "scale", "team", "web"))
    assert err.message.startswith('deployments.apps "web" is forbidden: User "jane" cannot update')
    assert '"deployments/scale"' in err.message


@dataclass
class _Versioned(Policy):
    revision: tuple[int, ...] = (1,)


def test_rbac_keeps_a_users_rules_until_the_policy_changes() -> None:
    policy = _Versioned()
    rbac = RBACAuthorizer(policy)
    assert not rbac.authorize(GET_PODS).allowed
    fresh = _policy()
    policy.roles, policy.rbs = fresh.roles, fresh.rbs
    assert not rbac.authorize(GET_PODS).allowed  # (kept: the policy said it did not change)
    policy.revision = (2,)
    assert rbac.authorize(GET_PODS).allowed
