"""How kemu's errors travel over gRPC: shared by the apiserver's edge and kemu.client.

A server error becomes a gRPC status code plus trailing metadata carrying the typed reason
and, for Invalid, the field causes; the client rebuilds the same exception class from them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

import grpc

from kemu.machinery.errors import (
    ApiError,
    Cause,
    InternalError,
    TooManyRequests,
    error_for_reason,
)

REASON_KEY: Final = "kemu-reason"
CAUSES_KEY: Final = "kemu-causes"
# Seconds the client should wait before trying again: the REST edge's Retry-After header.
RETRY_AFTER_KEY: Final = "retry-after"

STATUS_CODES: Final[dict[str, grpc.StatusCode]] = {
    "NotFound": grpc.StatusCode.NOT_FOUND,
    "AlreadyExists": grpc.StatusCode.ALREADY_EXISTS,
    "Conflict": grpc.StatusCode.ABORTED,
    "Fenced": grpc.StatusCode.ABORTED,
    "Invalid": grpc.StatusCode.INVALID_ARGUMENT,
    "BadRequest": grpc.StatusCode.INVALID_ARGUMENT,
    "Forbidden": grpc.StatusCode.PERMISSION_DENIED,
    "Gone": grpc.StatusCode.OUT_OF_RANGE,
    "Expired": grpc.StatusCode.OUT_OF_RANGE,
    "TooManyRequests": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "ServiceUnavailable": grpc.StatusCode.UNAVAILABLE,
    "InternalError": grpc.StatusCode.INTERNAL,
    "Timeout": grpc.StatusCode.DEADLINE_EXCEEDED,
}

# Used when a status carries no kemu reason (raised by gRPC itself, not by the server).
_REASON_BY_CODE: Final[dict[grpc.StatusCode, str]] = {
    grpc.StatusCode.UNAVAILABLE: "ServiceUnavailable",
    grpc.StatusCode.DEADLINE_EXCEEDED: "Timeout",
    grpc.StatusCode.NOT_FOUND: "NotFound",
    grpc.StatusCode.INVALID_ARGUMENT: "BadRequest",
    grpc.StatusCode.RESOURCE_EXHAUSTED: "TooManyRequests",
    grpc.StatusCode.CANCELLED: "ServiceUnavailable",
}


def status_of(err: ApiError) -> tuple[grpc.StatusCode, str, tuple[tuple[str, str], ...]]:
    """(code, details, trailing metadata) for a server-side error."""
    reason = err.wire_reason()
    code = STATUS_CODES.get(reason, grpc.StatusCode.INTERNAL)
    md: list[tuple[str, str]] = [(REASON_KEY, reason)]
    if err.causes:
        md.append(
            (CAUSES_KEY, json.dumps([{"field": c.field, "message": c.message} for c in err.causes]))
        )
    if isinstance(err, TooManyRequests) and err.retry_after_seconds > 0:
        md.append((RETRY_AFTER_KEY, str(err.retry_after_seconds)))
    return code, err.message, tuple(md)


def error_from_status(
    code: grpc.StatusCode, details: str | None, metadata: Iterable[tuple[str, str | bytes]] | None
) -> ApiError:
    """Rebuilds the typed error from a gRPC status (client side)."""
    md = {k: v.decode() if isinstance(v, bytes) else v for k, v in (metadata or ())}
    reason = md.get(REASON_KEY) or _REASON_BY_CODE.get(code)
    message = details or code.name
    if reason is None:
        return InternalError(f"{code.name}: {message}")
    causes: list[Cause] = []
    raw = md.get(CAUSES_KEY)
    if raw:
        try:
            causes = [Cause(str(c["field"]), str(c["message"])) for c in json.loads(raw)]
        except (ValueError, KeyError, TypeError):
            causes = []
    return error_for_reason(reason, message, causes, _seconds(md.get(RETRY_AFTER_KEY)))


def _seconds(raw: str | None) -> int:
    """A retry-after hint in whole seconds; 0 (no hint) when absent or malformed."""
    try:
        return max(int(raw or 0), 0)
    except ValueError:
        return 0
