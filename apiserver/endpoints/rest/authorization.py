"""authorization.k8s.io/v1: the access reviews and the rules review, answered by the
apiserver's authorizer (what --authorization-mode built: apiserver/authorization/modes.py), as
upstream's REST storages answer them (pkg/registry/authorization/*/rest.go): nothing is stored.

- SelfSubjectAccessReview (`kubectl auth can-i VERB RESOURCE`): may the requester?
- SubjectAccessReview: may spec.user (spec.groups) do it?
- LocalSubjectAccessReview: the same, in the namespace of its path.
- SelfSubjectRulesReview (`kubectl auth can-i --list`): the requester's rules in a namespace
  (the rule resolvers': the modes' alone, without the system:masters short-circuit).

Each answer is status.allowed, status.denied (an authorizer said no), status.reason and
status.evaluationError as upstream's.
"""

from __future__ import annotations

import json
from typing import Any, Final

from apiserver.authorization.authorizer import Authorizer, Verdict
from apiserver.authorization.modes import Authorization
from apiserver.endpoints.rest.discovery import AUTHORIZATION, OtherResource
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import UserInfo

API_VERSION: Final = f"{AUTHORIZATION}/v1"

_ZERO: Final[tuple[Any, ...]] = ("", 0, None, {}, [])


def _review(body: Any, r: OtherResource) -> dict[str, Any]:
    """The request body as a review of kind `r.kind`: a JSON object of that kind (kind and
    apiVersion may be left out), with a `spec` object; BadRequest otherwise."""
    if not isinstance(body, dict):
        raise BadRequest(f"a {r.kind} must be a JSON object")
    kind = body.get("kind", r.kind)
    api_version = body.get("apiVersion", API_VERSION)
    if (kind, api_version) != (r.kind, API_VERSION):
        raise BadRequest(f"not a {r.kind}: {api_version}/{kind}")
    spec = body.get("spec", {})
    if not isinstance(spec, dict):
        raise BadRequest(f"{r.kind}.spec must be a JSON object")
    return body


def _check_metadata(body: dict[str, Any], kind: str) -> list[Cause]:
    """Upstream's ValidateSelfSubjectAccessReview: a review's metadata must be empty (but for
    managedFields, which clients may send); a field at its zero value is empty (kubectl's
    protobuf body carries every string of ObjectMeta)."""
    meta = body.get("metadata") or {}
    if not isinstance(meta, dict):
        raise BadRequest(f"{kind}.metadata must be a JSON object")
    rest = {k: v for k, v in meta.items() if k != "managedFields" and v not in _ZERO}
    if rest:
        shown = json.dumps(rest, separators=(",", ":"))[:256]
        return [Cause("metadata", f"Invalid value: {shown}: must be empty")]
    return []


def _check_spec(spec: dict[str, Any], kind: str, *, subject: bool) -> list[Cause]:
    """ValidateSubjectAccessReviewSpec (ValidateSelfSubjectAccessReviewSpec: `subject`
    False): exactly one of resourceAttributes and nonResourceAttributes; a user or a group."""
    causes = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    for name, value in (("resourceAttributes", resource), ("nonResourceAttributes", non_resource)):
        if value is not None and not isinstance(value, dict):
            raise BadRequest(f"{kind}.spec.{name} must be a JSON object")
    if resource is not None and non_resource is not None:
        causes.append(
            Cause(
                "spec.nonResourceAttributes",
                "Invalid value: cannot be specified in combination with resourceAttributes",
            )
        )
    if resource is None and non_resource is None:
        causes.append(
            Cause(
                "spec.resourceAttributes",
                "Invalid value: exactly one of nonResourceAttributes or resourceAttributes "
                "must be specified",
            )
        )
    if subject:
        user, groups = spec.get("user", ""), spec.get("groups") or []
        if not isinstance(user, str):
            raise BadRequest(f"{kind}.spec.user must be a string")
        if not isinstance(groups, list) or not all(isinstance(g, str) for g in groups):
            raise BadRequest(f"{kind}.spec.groups must be a list of strings")
        if not user and not groups:
            causes.append(
                Cause(
                    "spec.user",
                    'Invalid value: "": at least one of user or group must be specified',
                )
            )
    return causes


def _string(attrs: dict[str, Any], key: str, where: str) -> str:
    value = attrs.get(key, "")
    if not isinstance(value, str):
        raise BadRequest(f"{where}.{key} must be a string")
    return value


def attributes_from(spec: dict[str, Any], user: UserInfo, kind: str) -> Attributes:
    """authorizationutil.AuthorizationAttributesFrom: the review's resource or non-resource
    attributes, asked for `user`."""
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict):
        where = f"{kind}.spec.resourceAttributes"
        return Attributes(
            user,
            _string(resource, "verb", where),
            _string(resource, "resource", where),
            _string(resource, "group", where),
            _string(resource, "subresource", where),
            _string(resource, "namespace", where),
            _string(resource, "name", where),
        )
    non_resource = spec.get("nonResourceAttributes") or {}
    where = f"{kind}.spec.nonResourceAttributes"
    return Attributes(
        user, _string(non_resource, "verb", where), path=_string(non_resource, "path", where)
    )


def _status(authorizer: Authorizer, attrs: Attributes) -> dict[str, Any]:
    """The review's status: the authorizer's decision, reason and error."""
    decision = authorizer.authorize(attrs)
    status: dict[str, Any] = {"allowed": decision.verdict is Verdict.ALLOW}
    if decision.verdict is Verdict.DENY:
        status["denied"] = True
    if decision.reason:
        status["reason"] = decision.reason
    if decision.error:
        status["evaluationError"] = decision.error
    return status


def _answer(review: dict[str, Any], r: OtherResource, status: dict[str, Any]) -> dict[str, Any]:
    meta = dict(review.get("metadata") or {})
    meta["creationTimestamp"] = None
    meta.pop("managedFields", None)
    return {
        "kind": r.kind,
        "apiVersion": API_VERSION,
        "metadata": {k: v for k, v in meta.items() if v not in _ZERO or k == "creationTimestamp"},
        "spec": review.get("spec") or {},
        "status": status,
    }


def access_review(
    body: Any, r: OtherResource, user: UserInfo, authorization: Authorization
) -> dict[str, Any]:
    """The SelfSubjectAccessReview `body` asks for, answered for `user` (the requester);
    Invalid as upstream's ValidateSelfSubjectAccessReview."""
    review = _review(body, r)
    spec = review.get("spec") or {}
    causes = _check_spec(spec, r.kind, subject=False) + _check_metadata(review, r.kind)
    if causes:
        raise Invalid.from_causes(f'{r.kind}.{AUTHORIZATION} ""', causes)
    attrs = attributes_from(spec, user, r.kind)
    return _answer(review, r, _status(authorization.authorizer, attrs))


def _spec_user(spec: dict[str, Any]) -> UserInfo:
    return UserInfo(spec.get("user", ""), tuple(spec.get("groups") or ()))


def subject_access_review(
    body: Any, r: OtherResource, authorization: Authorization
) -> dict[str, Any]:
    """The SubjectAccessReview `body` asks for: may spec.user, in spec.groups (and no more:
    upstream adds nothing to them), do it."""
    review = _review(body, r)
    spec = review.get("spec") or {}
    causes = _check_spec(spec, r.kind, subject=True) + _check_metadata(review, r.kind)
    if causes:
        raise Invalid.from_causes(f'{r.kind}.{AUTHORIZATION} ""', causes)
    attrs = attributes_from(spec, _spec_user(spec), r.kind)
    return _answer(review, r, _status(authorization.authorizer, attrs))


def local_access_review(
    body: Any, r: OtherResource, namespace: str, authorization: Authorization
) -> dict[str, Any]:
    """The LocalSubjectAccessReview `body` asks for in `namespace` (its path's): its
    metadata.namespace and spec.resourceAttributes.namespace must be that namespace
    (pkg/registry/authorization/localsubjectaccessreview/rest.go)."""
    review = _review(body, r)
    spec = review.get("spec") or {}
    meta = review.get("metadata") or {}
    if not isinstance(meta, dict):
        raise BadRequest(f"{r.kind}.metadata must be a JSON object")
    if not namespace:
        raise BadRequest("namespace is required on this type: ")
    if meta.get("namespace", "") != namespace:
        raise BadRequest(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    causes = _check_spec(spec, r.kind, subject=True)
    resource = spec.get("resourceAttributes")
    if isinstance(resource, dict) and resource.get("namespace", "") != namespace:
        raise BadRequest(f"spec.resourceAttributes.namespace must match namespace: {namespace}")
    rest = {
        k: v for k, v in meta.items() if k not in ("namespace", "managedFields") and v not in _ZERO
    }
    if rest:
        shown = json.dumps(rest, separators=(",", ":"))[:256]
        causes.append(
            Cause("metadata", f"Invalid value: {shown}: must be empty except for namespace")
        )
    if causes:
        raise Invalid.from_causes(f'{r.kind}.{AUTHORIZATION} ""', causes)
    attrs = attributes_from(spec, _spec_user(spec), r.kind)
    return _answer(review, r, _status(authorization.authorizer, attrs))


def _rule_json(rule: types_pb2.PolicyRule) -> dict[str, Any]:
    out: dict[str, Any] = {"verbs": list(rule.verbs)}
    if rule.non_resource_urls:
        out["nonResourceURLs"] = list(rule.non_resource_urls)
        return out
    out["apiGroups"] = list(rule.api_groups)
    out["resources"] = list(rule.resources)
    if rule.resource_names:
        out["resourceNames"] = list(rule.resource_names)
    return out


def rules_review(
    body: Any, r: OtherResource, user: UserInfo, authorization: Authorization
) -> dict[str, Any]:
    """The SelfSubjectRulesReview `body` asks for: `user`'s rules in spec.namespace from the
    rule resolvers, incomplete when one says so, their error as evaluationError; BadRequest
    without spec.namespace, as upstream's SelfSubjectRulesReview REST."""
    review = _review(body, r)
    spec = review.get("spec") or {}
    namespace = spec.get("namespace", "")
    if not isinstance(namespace, str):
        raise BadRequest(f"{r.kind}.spec.namespace must be a string")
    if not namespace:
        raise BadRequest("no namespace on request")
    causes = _check_metadata(review, r.kind)
    if causes:
        raise Invalid.from_causes(f'{r.kind}.{AUTHORIZATION} ""', causes)
    rules = authorization.rule_resolver.rules_for(user, namespace)
    status: dict[str, Any] = {
        "resourceRules": [_rule_json(x) for x in rules.resource_rules],
        "nonResourceRules": [_rule_json(x) for x in rules.non_resource_rules],
        "incomplete": rules.incomplete,
    }
    if rules.error:
        status["evaluationError"] = rules.error
    return _answer(review, r, status)
