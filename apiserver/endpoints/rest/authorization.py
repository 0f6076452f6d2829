"""authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview, which `kubectl
auth can-i VERB RESOURCE` and `kubectl auth can-i --list` create: answered as a cluster without
authorization answers them, by upstream's AlwaysAllow authorizer
(k8s.io/apiserver pkg/authorization/authorizerfactory/builtin.go): every request is allowed,
and the rules of every user are `*` on everything. Nothing is stored (upstream's REST storages
of both reviews are create-only, pkg/registry/authorization/selfsubject*review/rest.go).

kemu has no authentication either: every client is the same anonymous user, whom nothing is
denied.
"""

from __future__ import annotations

import json
from typing import Any, Final

from apiserver.endpoints.rest.discovery import AUTHORIZATION, OtherResource
from kemu.machinery.errors import BadRequest, Cause, Invalid

API_VERSION: Final = f"{AUTHORIZATION}/v1"

# upstream's alwaysAllowAuthorizer.RulesFor
_ALL_RESOURCES: Final = {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}
_ALL_NON_RESOURCES: Final = {"verbs": ["*"], "nonResourceURLs": ["*"]}
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


def access_review(body: Any, r: OtherResource) -> dict[str, Any]:
    """The SelfSubjectAccessReview `body` asks for, answered allowed (AlwaysAllow); Invalid as
    upstream's ValidateSelfSubjectAccessReview when the spec holds not exactly one of
    resourceAttributes and nonResourceAttributes."""
    review = _review(body, r)
    spec = review.get("spec") or {}
    causes = []
    resource, non_resource = spec.get("resourceAttributes"), spec.get("nonResourceAttributes")
    for name, value in (("resourceAttributes", resource), ("nonResourceAttributes", non_resource)):
        if value is not None and not isinstance(value, dict):
            raise BadRequest(f"{r.kind}.spec.{name} must be a JSON object")
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
    causes += _check_metadata(review, r.kind)
    if causes:
        raise Invalid.from_causes(f'{r.kind}.{AUTHORIZATION} ""', causes)
    return {
        "kind": r.kind,
        "apiVersion": API_VERSION,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {"allowed": True},
    }


def rules_review(body: Any, r: OtherResource) -> dict[str, Any]:
    """The SelfSubjectRulesReview `body` asks for: every verb on every resource and
    non-resource URL (AlwaysAllow's rules), complete; BadRequest without spec.namespace, as
    upstream's SelfSubjectRulesReview REST."""
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
    return {
        "kind": r.kind,
        "apiVersion": API_VERSION,
        "metadata": {"creationTimestamp": None},
        "spec": spec,
        "status": {
            "resourceRules": [_ALL_RESOURCES],
            "nonResourceRules": [_ALL_NON_RESOURCES],
            "incomplete": False,
        },
    }
