"""The authorizers of `--authorization-mode` tried in order
(k8s.io/apiserver/pkg/authorization/union/union.go), and the built-in ones every apiserver has
(k8s.io/apiserver/pkg/authorization/authorizerfactory/builtin.go): AlwaysAllow, AlwaysDeny and
the privileged group (system:masters) that pkg/kubeapiserver/authorizer puts first."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from apiserver.authorization.authorizer import (
    NO_OPINION,
    Authorizer,
    Decision,
    Rules,
    Verdict,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.rbac_rules import ALL, Attributes
from kemu.machinery.user import UserInfo

SYSTEM_PRIVILEGED_GROUP: Final = "system:masters"
"""k8s.io/apiserver/pkg/authentication/user SystemPrivilegedGroup."""


class Union:
    """The first authorizer whose decision is not NoOpinion decides; without one, NoOpinion
    with every reason met on the way, one a line, and every error (an aggregate). RulesFor:
    every authorizer's rules, incomplete when one says so."""

    def __init__(self, authorizers: Sequence[Authorizer]) -> None:
        self.authorizers = tuple(authorizers)

    def authorize(self, attrs: Attributes) -> Decision:
        reasons: list[str] = []
        errors: list[str] = []
        for authorizer in self.authorizers:
            decision = authorizer.authorize(attrs)
            if decision.error:
                errors.append(decision.error)
            if decision.reason:
                reasons.append(decision.reason)
            if decision.verdict is not Verdict.NO_OPINION:
                return decision
        return Decision(Verdict.NO_OPINION, "\n".join(reasons), _aggregate(errors))

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        resource: list[types_pb2.PolicyRule] = []
        non_resource: list[types_pb2.PolicyRule] = []
        incomplete = False
        errors: list[str] = []
        for authorizer in self.authorizers:
            rules = authorizer.rules_for(user, namespace)
            resource += rules.resource_rules
            non_resource += rules.non_resource_rules
            incomplete = incomplete or rules.incomplete
            if rules.error:
                errors.append(rules.error)
        return Rules(resource, non_resource, incomplete, _aggregate(errors))


def _aggregate(errors: list[str]) -> str:
    """utilerrors.NewAggregate's text: one error as is, several as [a, b]."""
    if len(errors) <= 1:
        return "".join(errors)
    return "[" + ", ".join(errors) + "]"


class AlwaysAllow:
    """Every request allowed; every user's rules `*` (alwaysAllowAuthorizer)."""

    def authorize(self, attrs: Attributes) -> Decision:
        return Decision(Verdict.ALLOW)

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules(
            [types_pb2.PolicyRule(verbs=[ALL], api_groups=[ALL], resources=[ALL])],
            [types_pb2.PolicyRule(verbs=[ALL], non_resource_urls=[ALL])],
        )


class AlwaysDeny:
    """No opinion on anything, "Everything is forbidden." (alwaysDenyAuthorizer: with nothing
    after it the union's NoOpinion is a refusal); no rules."""

    def authorize(self, attrs: Attributes) -> Decision:
        return Decision(Verdict.NO_OPINION, "Everything is forbidden.")

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules()


class PrivilegedGroups:
    """Allows a member of one of `groups`, no opinion otherwise (privilegedGroupAuthorizer;
    it lists no rules: pkg/kubeapiserver/authorizer/config.go adds it to the authorizers
    only, not to the rule resolvers)."""

    def __init__(self, *groups: str) -> None:
        self.groups = frozenset(groups)

    def authorize(self, attrs: Attributes) -> Decision:
        if self.groups.intersection(attrs.user.groups):
            return Decision(Verdict.ALLOW)
        return NO_OPINION

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        return Rules()
