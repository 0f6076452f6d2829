"""DRA admin access: a ResourceClaim or ResourceClaimTemplate that asks for `adminAccess` only in
a namespace labelled `resource.kubernetes.io/admin-access: "true"` (upstream
pkg/registry/resource/resourceclaim/strategy.go and resourceclaimtemplate/strategy.go Validate,
through k8s.io/dynamic-resource-allocation/resourceclaim AuthorizedForAdmin). Upstream checks it
in the strategy with a namespace client; kemu's strategies are pure, so the check reads the
namespace from the apiserver's watch cache here. (Upstream also checks a status write that
newly grants adminAccess in `status.allocation.devices.results`, AuthorizedForAdminStatus:
kemu does not, its status writes having no admission step.)"""

from __future__ import annotations

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
