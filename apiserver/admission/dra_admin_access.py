"""DRA admin access: a ResourceClaim or ResourceClaimTemplate that asks for `adminAccess` only in
a namespace labelled `resource.kubernetes.io/admin-access: "true"` (upstream
pkg/registry/resource/resourceclaim/strategy.go and resourceclaimtemplate/strategy.go Validate,
through k8s.io/dynamic-resource-allocation/resourceclaim AuthorizedForAdmin). Upstream checks it
in the strategy with a namespace client; kemu's strategies are pure, so the check reads the
namespace from the apiserver's watch cache here."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.dra import ADMIN_ACCESS_FORBIDDEN, ADMIN_ACCESS_LABEL, uses_admin_access
from kemu.machinery.errors import Invalid
from kemu.machinery.validation.field import forbidden


def admin_access_spec(obj: Message) -> tuple[types_pb2.ResourceClaimSpec, str] | None:
    """The claim spec of a claim or template and its path, when it asks for admin access."""
    if isinstance(obj, types_pb2.ResourceClaim):
        spec, path = obj.spec, "spec"
    elif isinstance(obj, types_pb2.ResourceClaimTemplate):
        spec, path = obj.spec.spec, "spec.spec"
    else:
        return None
    return (spec, path) if uses_admin_access(spec) else None


def validate_admin_access(obj: Message, namespace: types_pb2.Namespace | None) -> None:
    """Invalid (Forbidden at each request's exactly.adminAccess) unless the namespace carries
    the admin-access label."""
    found = admin_access_spec(obj)
    if found is None:
        return
    if namespace is not None and namespace.metadata.labels.get(ADMIN_ACCESS_LABEL) == "true":
        return
    spec, path = found
    causes = [
        forbidden(f"{path}.devices.requests[{i}].exactly.adminAccess", ADMIN_ACCESS_FORBIDDEN)
        for i in uses_admin_access(spec)
    ]
    kind = type(obj).__name__
    raise Invalid.from_causes(f'{kind} "{obj.metadata.name}"', causes)  # type: ignore[attr-defined]
