"""The one error hierarchy of kemu.

Servers raise these; the apiserver's gRPC edge turns them into a status code plus the typed
reason in trailing metadata, and kemu.client turns that back into the same class. Nothing else
in kemu deals in gRPC status codes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Final


@dataclass(frozen=True)
class Cause:
    """One invalid field: `field` is a Kubernetes field path such as spec.containers[0].name."""

    field: str
    message: str
    reason: str = "FieldValueInvalid"
    """upstream's CauseType (FieldValueInvalid; FieldManagerConflict for server-side apply)."""


@dataclass(frozen=True)
class Subject:
    """What an error is about: upstream's StatusDetails name, group and kind (for NotFound,
    AlreadyExists and Conflict the kind is the resource, "deployments"; for Invalid the Kind,
    "Deployment": apimachinery pkg/api/errors/errors.go)."""

    name: str
    group: str
    kind: str


@dataclass
class ApiError(Exception):
    """Base of every error that crosses the API. `reason` names the Kubernetes StatusReason."""

    message: str
    causes: list[Cause] = field(default_factory=list)
    subject: Subject | None = None
    """The object the error is about (the Status's details), when the raiser knows it."""

    reason: ClassVar[str] = "InternalError"
    code: ClassVar[int] = 500
    wire_name: ClassVar[str] = ""
    """The name the error travels under on kemu's gRPC wire when it is not its reason (two
    errors with one Kubernetes reason)."""

    @classmethod
    def wire_reason(cls) -> str:
        return cls.wire_name or cls.reason

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message


class NotFound(ApiError):
    reason = "NotFound"
    code = 404


class AlreadyExists(ApiError):
    reason = "AlreadyExists"
    code = 409


class Conflict(ApiError):
    reason = "Conflict"
    code = 409


class Fenced(ApiError):
    """A write made as leader in a lease term that has ended, refused by the apiserver
    (kemu.machinery.fencing; kemu only). Upstream's status is a 409 Conflict, but it is not a
    resourceVersion or uid precondition failure, so it is not a Conflict: a caller that reads
    Conflict as "the object changed under me" must not take it for one."""

    reason = "Conflict"
    code = 409
    wire_name: ClassVar[str] = "Fenced"


class Invalid(ApiError):
    """The object or request is malformed; `causes` name the offending fields."""

    reason = "Invalid"
    code = 422

    @classmethod
    def field(cls, path: str, message: str) -> Invalid:
        return cls(f"{path}: {message}", [Cause(path, message)])

    @classmethod
    def from_causes(cls, what: str, causes: list[Cause], subject: Subject | None = None) -> Invalid:
        detail = "; ".join(f"{c.field}: {c.message}" for c in causes)
        return cls(f"{what} is invalid: {detail}", list(causes), subject)


class BadRequest(ApiError):
    reason = "BadRequest"
    code = 400


class Unauthorized(ApiError):
    """A credential no authenticator accepts, or none where anonymous requests are refused
    (upstream's unauthorized handler: always the message "Unauthorized", the cause in the
    apiserver's log only)."""

    reason = "Unauthorized"
    code = 401


class Forbidden(ApiError):
    reason = "Forbidden"
    code = 403


class Gone(ApiError):
    """The requested resourceVersion is older than what storage still has (compacted)."""

    reason = "Gone"
    code = 410


class Expired(Gone):
    """A watch from a resourceVersion older than the watch cache's window (upstream
    NewResourceExpired: reason Expired, code 410). A Gone: clients relist."""

    reason = "Expired"


class TooManyRequests(ApiError):
    """`retry_after_seconds` > 0 tells the client when to try again (upstream's
    NewTooManyRequests: Status details.retryAfterSeconds and the `Retry-After` header); a
    client retries a TooManyRequests only when it carries one, as client-go's checkWait."""

    reason = "TooManyRequests"
    code = 429

    retry_after_seconds: int = 0

    @classmethod
    def retry_after(cls, message: str, seconds: int) -> TooManyRequests:
        err = cls(message)
        err.retry_after_seconds = seconds
        return err


class Unavailable(ApiError):
    """The server or its storage cannot be reached; callers may retry."""

    reason = "ServiceUnavailable"
    code = 503


class InternalError(ApiError):
    reason = "InternalError"
    code = 500


class Timeout(ApiError):
    reason = "Timeout"
    code = 504


ERROR_CLASSES: Final[dict[str, type[ApiError]]] = {
    cls.wire_reason(): cls
    for cls in (
        NotFound,
        AlreadyExists,
        Conflict,
        Fenced,
        Invalid,
        BadRequest,
        Unauthorized,
        Forbidden,
        Gone,
        Expired,
        TooManyRequests,
        Unavailable,
        InternalError,
        Timeout,
    )
}


def error_for_reason(
    reason: str, message: str, causes: list[Cause] | None = None, retry_after_seconds: int = 0
) -> ApiError:
    """Rebuilds the error a server raised from its wire reason (used by the client)."""
    cls = ERROR_CLASSES.get(reason, InternalError)
    err = cls(message, list(causes or []))
    if retry_after_seconds > 0 and isinstance(err, TooManyRequests):
        err.retry_after_seconds = retry_after_seconds
    return err
