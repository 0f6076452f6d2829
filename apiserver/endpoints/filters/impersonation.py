"""Upstream's impersonation filter (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go):
a request that asks to act as another user (Impersonate-User and Impersonate-Group on REST,
`impersonate-user` and `impersonate-group` metadata on gRPC) is allowed to only when its
authenticated user may `impersonate` each of them: the user (resource `users`, or
`serviceaccounts` in its namespace for system:serviceaccount:<ns>:<name>) and each group
(resource `groups`), all in the core API group and named by resourceNames.

kemu's own clients ask to act as themselves: a kubelet with its node's certificate sends its
node's user (kemu.client's `as_user`, so that a plaintext kubelet is named too). A request
that asks for its authenticated user's own name and groups asks for nothing it has not:
it is not checked, and acts as its authenticated user. A hollow kubelet process of several
nodes with one certificate impersonates the others: its user needs a ClusterRole that grants
`impersonate` on their users (resourceNames) and on the group system:nodes.
"""

from __future__ import annotations

from typing import Final

from apiserver.authorization.authorizer import Authorizer, forbidden
from apiserver.endpoints.identity import Requester
from kemu.machinery.errors import ApiError, BadRequest, InternalError
from kemu.machinery.rbac_rules import SERVICE_ACCOUNT_USER_PREFIX, Attributes
from kemu.machinery.user import AUTHENTICATED, UserInfo

IMPERSONATE: Final = "impersonate"


def _user_attributes(actor: UserInfo, name: str) -> Attributes:
    if name.startswith(SERVICE_ACCOUNT_USER_PREFIX):
        namespace, _, sa = name[len(SERVICE_ACCOUNT_USER_PREFIX) :].partition(":")
        if namespace and sa:
            return Attributes(actor, IMPERSONATE, "serviceaccounts", namespace=namespace, name=sa)
    return Attributes(actor, IMPERSONATE, "users", name=name)


def _as_itself(requester: Requester) -> bool:
    me = requester.authenticated
    own = {*me.groups, AUTHENTICATED}
    return requester.impersonate_user == me.name and set(requester.impersonate_groups) <= own


def check(authorizer: Authorizer, requester: Requester) -> UserInfo:
    """The user `requester`'s request acts as; Forbidden naming the first impersonation its
    authenticated user may not make (and upstream's reason), BadRequest for groups without
    a user."""
    if not requester.impersonating or _as_itself(requester):
        return requester.authenticated
    if not requester.impersonate_user:
        shown = " ".join(requester.impersonate_groups)
        raise BadRequest(f"requested [{shown}] without impersonating a user")
    actor = requester.authenticated
    wanted = [_user_attributes(actor, requester.impersonate_user)]
    wanted += [
        Attributes(actor, IMPERSONATE, "groups", name=g) for g in requester.impersonate_groups
    ]
    for attrs in wanted:
        decision = authorizer.authorize(attrs)
        if not decision.allowed:
            error: ApiError = (
                InternalError(decision.error)
                if decision.error
                else forbidden(attrs, decision.reason)
            )
            raise error
    return requester.user
