"""RBAC's decision, as upstream's RBAC authorizer makes it (plugin/pkg/auth/authorizer/rbac/
rbac.go and pkg/apis/rbac/v1/evaluation_helpers.go; the rule resolver of
pkg/registry/rbac/validation/rule.go): a request is allowed when a rule of a role bound to its
user allows it, the ClusterRoleBindings looked at first, then the RoleBindings of the request's
namespace; a binding whose role is missing is passed over and named in the reason.

Pure: the roles and bindings come from a `Policy` (the apiserver's watch caches, or a test's
lists); the caller adds what is outside RBAC (system:masters, the Node authorizer, the union of
`--authorization-mode`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Final, Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery.rbac import GROUP_KIND, SERVICE_ACCOUNT_KIND, USER_KIND
from kemu.machinery.user import UserInfo

ALL: Final = "*"
SERVICE_ACCOUNT_USER_PREFIX: Final = "system:serviceaccount:"
"""A ServiceAccount's user: system:serviceaccount:<namespace>:<name>
(k8s.io/apiserver/pkg/authentication/serviceaccount)."""
ROLE_KIND: Final = "Role"
CLUSTER_ROLE_KIND: Final = "ClusterRole"


@dataclass(frozen=True)
class Attributes:
    """What an authorizer is asked (k8s.io/apiserver/pkg/authorization/authorizer
    AttributesRecord): who, which verb, and the resource (its group, subresource, namespace and
    name) or, for a non-resource request, the path."""

    user: UserInfo
    verb: str
    resource: str = ""
    api_group: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    field_selector: str = ""
    """A list or watch's field selector as the request gave it (AttributesRecord's
    FieldSelectorRequirements: the Node authorizer lets a node list its own pods by
    spec.nodeName); RBAC ignores it."""

    @property
    def is_resource_request(self) -> bool:
        return bool(self.resource)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""
    """The binding that allowed it, or why not when RBAC has something to say (a binding's
    missing role)."""


class Policy(Protocol):
    """The RBAC objects an authorizer reads."""

    def cluster_role_bindings(self) -> Iterable[types_pb2.ClusterRoleBinding]: ...

    def role_bindings(self, namespace: str) -> Iterable[types_pb2.RoleBinding]: ...

    def cluster_role(self, name: str) -> types_pb2.ClusterRole | None: ...

    def role(self, namespace: str, name: str) -> types_pb2.Role | None: ...


# ---------------------------------------------------------------- evaluation_helpers.go


def verb_matches(rule: types_pb2.PolicyRule, verb: str) -> bool:
    return any(v == ALL or v == verb for v in rule.verbs)


def api_group_matches(rule: types_pb2.PolicyRule, group: str) -> bool:
    return any(g == ALL or g == group for g in rule.api_groups)


def resource_matches(rule: types_pb2.PolicyRule, combined: str, subresource: str) -> bool:
    """`combined`: "pods" or "pods/status"; a rule's "*/status" matches any resource's
    status subresource."""
    for r in rule.resources:
        if r == ALL or r == combined:
            return True
        if subresource and len(r) == len(subresource) + 2 and r == "*/" + subresource:
            return True
    return False


def resource_name_matches(rule: types_pb2.PolicyRule, name: str) -> bool:
    return not rule.resource_names or name in rule.resource_names


def non_resource_url_matches(rule: types_pb2.PolicyRule, path: str) -> bool:
    for url in rule.non_resource_urls:
        if url == ALL or url == path:
            return True
        if url.endswith(ALL) and path.startswith(url[:-1]):
            return True
    return False


def rule_allows(attrs: Attributes, rule: types_pb2.PolicyRule) -> bool:
    if attrs.is_resource_request:
        combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
        return (
            verb_matches(rule, attrs.verb)
            and api_group_matches(rule, attrs.api_group)
            and resource_matches(rule, combined, attrs.subresource)
            and resource_name_matches(rule, attrs.name)
        )
    return verb_matches(rule, attrs.verb) and non_resource_url_matches(rule, attrs.path)


# ---------------------------------------------------------------- rule.go


def service_account_user(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_USER_PREFIX}{namespace}:{name}"


def applies_to(user: UserInfo, subject: types_pb2.Subject, namespace: str) -> bool:
    """`namespace`: the binding's ("" for a ClusterRoleBinding): a ServiceAccount subject
    without a namespace means one of the binding's own."""
    if subject.kind == USER_KIND:
        return user.name == subject.name
    if subject.kind == GROUP_KIND:
        return subject.name in user.groups
    if subject.kind == SERVICE_ACCOUNT_KIND:
        sa_namespace = subject.namespace or namespace
        return bool(sa_namespace) and user.name == service_account_user(sa_namespace, subject.name)
    return False


def describe_subject(subject: types_pb2.Subject, binding_namespace: str) -> str:
    if subject.kind == SERVICE_ACCOUNT_KIND:
        return f'{subject.kind} "{subject.name}/{subject.namespace or binding_namespace}"'
    return f'{subject.kind} "{subject.name}"'


def _role_rules(
    policy: Policy, ref: types_pb2.RoleRef, namespace: str
) -> tuple[Iterable[types_pb2.PolicyRule], str]:
    """GetRoleReferenceRules: the rules of the role `ref` names, or an error's text."""
    if ref.kind == ROLE_KIND:
        role = policy.role(namespace, ref.name)
        if role is None:
            return (), f'role.rbac.authorization.k8s.io "{ref.name}" not found'
        return role.rules, ""
    if ref.kind == CLUSTER_ROLE_KIND:
        cluster_role = policy.cluster_role(ref.name)
        if cluster_role is None:
            return (), f'clusterrole.rbac.authorization.k8s.io "{ref.name}" not found'
        return cluster_role.rules, ""
    return (), f"unsupported role reference kind: {ref.kind!r}"


@dataclass(frozen=True)
class Visited:
    """One step of VisitRulesFor: a rule and the binding that grants it (`source`, as
    upstream describes it), or the error of a binding whose role is missing."""

    source: str
    rule: types_pb2.PolicyRule | None = None
    error: str = ""


def visit_rules(policy: Policy, user: UserInfo, namespace: str) -> Iterator[Visited]:
    """VisitRulesFor: each rule that applies to `user` in `namespace`, the
    ClusterRoleBindings' first, and an error for each of its bindings whose role is missing."""
    for crb in policy.cluster_role_bindings():
        subject = next((s for s in crb.subjects if applies_to(user, s, "")), None)
        if subject is None:
            continue
        ref = crb.role_ref
        source = (
            f'ClusterRoleBinding "{crb.metadata.name}" of {ref.kind} "{ref.name}" to '
            f"{describe_subject(subject, '')}"
        )
        rules, error = _role_rules(policy, ref, "")
        if error:
            yield Visited(source, error=error)
        for rule in rules:
            yield Visited(source, rule)
    if not namespace:
        return
    for rb in policy.role_bindings(namespace):
        subject = next((s for s in rb.subjects if applies_to(user, s, namespace)), None)
        if subject is None:
            continue
        ref = rb.role_ref
        source = (
            f'RoleBinding "{rb.metadata.name}/{namespace}" of {ref.kind} "{ref.name}" to '
            f"{describe_subject(subject, namespace)}"
        )
        rules, error = _role_rules(policy, ref, namespace)
        if error:
            yield Visited(source, error=error)
        for rule in rules:
            yield Visited(source, rule)


def authorize(policy: Policy, attrs: Attributes) -> Decision:
    """RBACAuthorizer.Authorize: allowed at the first rule that allows ("RBAC: allowed by
    <binding>"); else no, with the errors met on the way as the reason ("RBAC: ...", an
    aggregate's text)."""
    return decide(visit_rules(policy, attrs.user, attrs.namespace), attrs)


def decide(rules: Iterable[Visited], attrs: Attributes) -> Decision:
    """`authorize` over the rules `visit_rules` gave for the request's user and namespace (a
    caller may keep them while the policy does not change)."""
    errors: list[str] = []
    for visited in rules:
        if visited.rule is not None and rule_allows(attrs, visited.rule):
            return Decision(True, f"RBAC: allowed by {visited.source}")
        if visited.error:
            errors.append(visited.error)
    if not errors:
        return Decision(False)
    joined = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return Decision(False, f"RBAC: {joined}")


def forbidden_message(attrs: Attributes) -> str:
    """responsewriters' forbiddenMessage: what a 403 says after "<resource> is forbidden: "."""
    user = attrs.user.name
    if not attrs.is_resource_request:
        return f'User "{user}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        return (
            f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
            f'"{attrs.api_group}" in the namespace "{attrs.namespace}"'
        )
    return (
        f'User "{user}" cannot {attrs.verb} resource "{resource}" in API group '
        f'"{attrs.api_group}" at the cluster scope'
    )
