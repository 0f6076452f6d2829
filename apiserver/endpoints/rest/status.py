"""Upstream's metav1.Status bodies for errors and successes of the REST edge."""

from __future__ import annotations

from kemu.machinery.errors import ApiError, TooManyRequests
from kemu.machinery.jsonvalue import JSONObject


def retry_after(err: ApiError) -> int:
    """The seconds a client should wait before retrying `err`; 0 for none (upstream's
    ErrorNegotiated sets the `Retry-After` header from details.retryAfterSeconds)."""
    return err.retry_after_seconds if isinstance(err, TooManyRequests) else 0


def failure(err: ApiError) -> JSONObject:
    """The Status a failed request answers with; its `code` is the HTTP status."""
    body: JSONObject = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": err.message,
        "reason": err.reason,
        "code": err.code,
    }
    details: JSONObject = {}
    if err.subject is not None:
        # upstream's StatusDetails: name, group (omitted when empty), kind
        details["name"] = err.subject.name
        if err.subject.group:
            details["group"] = err.subject.group
        details["kind"] = err.subject.kind
    if err.causes:
        details["causes"] = [
            {"reason": c.reason, "message": c.message, "field": c.field} for c in err.causes
        ]
    if retry_after(err):
        details["retryAfterSeconds"] = retry_after(err)
    if details:
        body["details"] = details
    return body


def success(code: int = 200, details: JSONObject | None = None) -> JSONObject:
    body: JSONObject = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": code,
    }
    if details:
        body["details"] = details
    return body
