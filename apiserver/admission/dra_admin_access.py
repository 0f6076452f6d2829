"""DRA admin access: a ResourceClaim or ResourceClaimTemplate that asks for `adminAccess` only in
a namespace labelled `resource.kubernetes.io/admin-access: "true"` (upstream
pkg/registry/resource/resourceclaim/strategy.go and resourceclaimtemplate/strategy.go Validate,
through k8s.io/dynamic-resource-allocation/resourceclaim AuthorizedForAdmin). Upstream checks it
in the strategy with a namespace client; kemu's strategies are pure, so the check reads the
namespace from the apiserver's watch cache here; a status write that newly grants adminAccess
in `status.allocation.devices.results` is checked as upstream's AuthorizedForAdminStatus
(`validate_admin_access_status`, from the status subresource's handler)."""

from __future__ import annotations

from collections.abc import Callable

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.dra import ADMIN_ACCESS_FORBIDDEN, ADMIN_ACCESS_LABEL, uses_admin_access
from kemu.machinery.errors import Invalid
from kemu.machinery.validation.field import forbidden


def admin_access_spec(obj: Message) -> types_pb2.ResourceClaimSpec | None:
    """The claim spec of a claim or template, when it asks for admin access."""
    if isinstance(obj, types_pb2.ResourceClaim):
        spec = obj.spec
    elif isinstance(obj, types_pb2.ResourceClaimTemplate):
        spec = obj.spec.spec
    else:
        return None
    return spec if uses_admin_access(spec) else None


def validate_admin_access(obj: Message, namespace: types_pb2.Namespace | None) -> None:
    """Invalid unless the namespace carries the admin-access label: Forbidden at the first
    request asking for it, at upstream's path `spec.devices.requests[i].adminAccess` (for a
    template too: AuthorizedForAdmin is given the requests only)."""
    spec = admin_access_spec(obj)
    if spec is None:
        return
    if namespace is not None and namespace.metadata.labels.get(ADMIN_ACCESS_LABEL) == "true":
        return
    first = uses_admin_access(spec)[0]
    causes = [forbidden(f"spec.devices.requests[{first}].adminAccess", ADMIN_ACCESS_FORBIDDEN)]
    kind = type(obj).__name__
    raise Invalid.from_causes(f'{kind} "{obj.metadata.name}"', causes)  # type: ignore[attr-defined]


def _first_granted(status: types_pb2.ResourceClaimStatus) -> int | None:
    if not status.HasField("allocation"):
        return None
    for i, r in enumerate(status.allocation.devices.results):
        if r.admin_access:
            return i
    return None


def validate_admin_access_status(
    new: Message, old: Message, namespace_of: Callable[[str], types_pb2.Namespace | None]
) -> None:
    """AuthorizedForAdminStatus: an allocation result granting admin access that the stored
    claim did not have needs the namespace's label; Forbidden at
    `status.allocation.devices.results[i].adminAccess`."""
    if not isinstance(new, types_pb2.ResourceClaim) or not isinstance(old, types_pb2.ResourceClaim):
        return
    if _first_granted(old.status) is not None:
        return  # the allocation is immutable: granted before
    index = _first_granted(new.status)
    if index is None:
        return
    namespace = namespace_of(new.metadata.namespace)
    if namespace is not None and namespace.metadata.labels.get(ADMIN_ACCESS_LABEL) == "true":
        return
    path = f"status.allocation.devices.results[{index}].adminAccess"
    raise Invalid.from_causes(
        f'ResourceClaim "{new.metadata.name}"', [forbidden(path, ADMIN_ACCESS_FORBIDDEN)]
    )
