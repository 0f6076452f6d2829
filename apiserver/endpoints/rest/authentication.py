"""authentication.k8s.io SelfSubjectReview (`kubectl auth whoami`; KEP-3325: v1alpha1 1.26,
v1beta1 1.27, v1 1.28): the requester's user as the apiserver authenticated it (after
impersonation), as pkg/registry/authentication/selfsubjectreview/rest.go answers. Nothing is
stored."""

from __future__ import annotations

from typing import Any

from apiserver.endpoints.rest.discovery import OtherResource
from kemu.machinery.errors import BadRequest
from kemu.machinery.user import UserInfo


def self_subject_review(body: Any, r: OtherResource, user: UserInfo) -> dict[str, Any]:
    """The review of `user`: status.userInfo's username and groups (kemu's users have no
    uid and no extra)."""
    api_version = f"{r.group}/{r.version}"
    if not isinstance(body, dict):
        raise BadRequest(f"a {r.kind} must be a JSON object")
    kind, sent = body.get("kind", r.kind), body.get("apiVersion", api_version)
    if (kind, sent) != (r.kind, api_version):
        raise BadRequest(f"not a {r.kind}: {sent}/{kind}")
    user_info: dict[str, Any] = {"username": user.name}
    if user.groups:
        user_info["groups"] = list(user.groups)
    return {
        "kind": r.kind,
        "apiVersion": api_version,
        "metadata": {"creationTimestamp": None},
        "status": {"userInfo": user_info},
    }
