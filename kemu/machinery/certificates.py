"""certificates.k8s.io/v1 CertificateSigningRequests: the strategies' rules (upstream
pkg/registry/certificates/certificates/strategy.go). A create records the requesting user
(kemu has no authentication: every client is the anonymous user); the /approval
subresource writes only the conditions, /status the rest of the status; a condition's
timestamps are filled by the server (populateConditionTimestamps)."""

from __future__ import annotations

from typing import Final

from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2

APPROVED: Final = "Approved"
DENIED: Final = "Denied"
FAILED: Final = "Failed"
ANONYMOUS_USER: Final = "system:anonymous"
ANONYMOUS_GROUPS: Final = ("system:unauthenticated",)


def prepare_for_create(csr: types_pb2.CertificateSigningRequest) -> None:
    """csrStrategy.PrepareForCreate: the user's identity written over what was sent, the
    status cleared."""
    spec = csr.spec
    spec.username = ANONYMOUS_USER
    spec.uid = ""
    del spec.groups[:]
    spec.groups.extend(ANONYMOUS_GROUPS)
    csr.ClearField("status")


def prepare_for_update(
    new: types_pb2.CertificateSigningRequest, old: types_pb2.CertificateSigningRequest
) -> None:
    """csrStrategy.PrepareForUpdate: a main-resource update keeps the stored status."""
    new.status.CopyFrom(old.status)


def _populate_timestamps(
    new: types_pb2.CertificateSigningRequest,
    old: types_pb2.CertificateSigningRequest,
    now: Timestamp,
) -> None:
    for c in new.status.conditions:
        if not c.HasField("last_update_time"):
            c.last_update_time.CopyFrom(now)
        if not c.HasField("last_transition_time"):
            before = next(
                (
                    o.last_transition_time
                    for o in old.status.conditions
                    if o.type == c.type
                    and o.status == c.status
                    and o.HasField("last_transition_time")
                ),
                now,
            )
            c.last_transition_time.CopyFrom(before)


def prepare_for_status_update(
    written: types_pb2.CertificateSigningRequest,
    old: types_pb2.CertificateSigningRequest,
    now: Timestamp,
) -> None:
    """csrStatusStrategy.PrepareForUpdate: the status sent, but Approved and Denied
    conditions are the stored ones (only /approval changes them)."""
    kept = [c for c in old.status.conditions if c.type in (APPROVED, DENIED)]
    others = [c for c in written.status.conditions if c.type not in (APPROVED, DENIED)]
    del written.status.conditions[:]
    written.status.conditions.extend(kept + others)
    _populate_timestamps(written, old, now)


def prepare_for_approval(
    sent: types_pb2.CertificateSigningRequest,
    old: types_pb2.CertificateSigningRequest,
    now: Timestamp,
) -> types_pb2.CertificateSigningRequest:
    """csrApprovalStrategy.PrepareForUpdate: the stored object with the conditions sent."""
    out = types_pb2.CertificateSigningRequest()
    out.CopyFrom(old)
    del out.status.conditions[:]
    out.status.conditions.extend(sent.status.conditions)
    out.metadata.resource_version = sent.metadata.resource_version
    _populate_timestamps(out, old, now)
    return out
