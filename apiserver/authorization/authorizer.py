"""The authorizer interface as upstream's (k8s.io/apiserver/pkg/authorization/authorizer
interfaces.go): an authorizer answers a request's Attributes with allow, deny or no opinion,
and lists the rules a user has in a namespace (RuleResolver, for SelfSubjectRulesReview).

`--authorization-mode` names several, tried in order until one allows or denies
(k8s.io/apiserver/pkg/authorization/union: the first decision that is not NoOpinion wins, and
the reasons of those before it are kept). The attributes and RBAC's own evaluation are
kemu/machinery/rbac_rules.py.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Forbidden, Subject
from kemu.machinery.rbac_rules import Attributes, forbidden_message
from kemu.machinery.user import UserInfo


class Verdict(enum.Enum):
    """authorizer.Decision."""

    DENY = "Deny"
    ALLOW = "Allow"
    NO_OPINION = "NoOpinion"


@dataclass(frozen=True)
class Decision:
    verdict: Verdict
    reason: str = ""
    """Why (RBAC's "allowed by ClusterRoleBinding ..."; a denial's cause); SubjectAccessReview's
    status.reason."""
    error: str = ""
    """What went wrong on the way (SubjectAccessReview's status.evaluationError)."""

    @property
    def allowed(self) -> bool:
        return self.verdict is Verdict.ALLOW


NO_OPINION = Decision(Verdict.NO_OPINION)


@dataclass(frozen=True)
class Rules:
    """What RulesFor answers: the user's resource and non-resource rules in a namespace,
    whether the list is incomplete (an authorizer that cannot list its rules, or an error on
    the way) and the error's text."""

    resource_rules: Sequence[types_pb2.PolicyRule] = ()
    non_resource_rules: Sequence[types_pb2.PolicyRule] = ()
    incomplete: bool = False
    error: str = ""


class Authorizer(Protocol):
    def authorize(self, attrs: Attributes) -> Decision:
        """authorizer.Authorizer.Authorize."""
        ...

    def rules_for(self, user: UserInfo, namespace: str) -> Rules:
        """authorizer.RuleResolver.RulesFor."""
        ...


def forbidden(attrs: Attributes, reason: str = "") -> Forbidden:
    """The 403 of a refused request (responsewriters.Forbidden and apierrors.NewForbidden):
    `<resource>[.<group>] "<name>" is forbidden: User "<u>" cannot ...[: <reason>]`, its
    details the group, the resource (as its kind) and the name; a non-resource request's
    `forbidden: User "<u>" cannot get path "/x"`."""
    text = forbidden_message(attrs)
    if reason:
        text = f"{text}: {reason}"
    if not attrs.is_resource_request:
        return Forbidden(f"forbidden: {text}")
    qualified = f"{attrs.resource}.{attrs.api_group}" if attrs.api_group else attrs.resource
    what = f'{qualified} "{attrs.name}"' if attrs.name else qualified
    return Forbidden(
        f"{what} is forbidden: {text}", subject=Subject(attrs.name, attrs.api_group, attrs.resource)
    )
