"""Upstream's authorization filter (k8s.io/apiserver/pkg/endpoints/filters/authorization.go):
a request runs only when the apiserver's authorizer allows its attributes; otherwise 403
Forbidden with upstream's message (responsewriters.Forbidden), or 500 when the authorizer
failed. Both edges call `authorize` after priority and fairness admitted the request (as
upstream's chain orders them) with the RequestInfo they resolved."""

from __future__ import annotations

from apiserver.authorization.authorizer import forbidden
from apiserver.authorization.modes import Authorization
from apiserver.endpoints import identity
from apiserver.endpoints.filters import impersonation
from apiserver.endpoints.inflight import RequestInfo
from kemu.machinery.errors import InternalError
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import UserInfo


def attributes(info: RequestInfo, user: UserInfo) -> Attributes:
    """The authorizer's attributes of a request (filters.GetAuthorizerAttributes)."""
    if not info.is_resource_request:
        return Attributes(user, info.verb, path=info.path)
    return Attributes(
        user,
        info.verb,
        info.resource,
        info.api_group,
        info.subresource,
        info.namespace,
        info.name,
        field_selector=info.field_selector,
    )


def authorize(
    authorization: Authorization, requester: identity.Requester, info: RequestInfo
) -> UserInfo:
    """The user the request acts as, when it may make it (impersonation, then the request
    itself); Forbidden (or BadRequest, InternalError) otherwise."""
    authorizer = authorization.authorizer
    user = impersonation.check(authorizer, requester)
    attrs = attributes(info, user)
    decision = authorizer.authorize(attrs)
    if decision.allowed:
        return user
    if decision.error:
        raise InternalError(decision.error)
    raise forbidden(attrs, decision.reason)
