"""apiregistration.k8s.io/v1 APIServices (upstream
staging/src/k8s.io/kube-aggregator/pkg/apis/apiregistration/validation/validation.go)."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause
from kemu.machinery.validation.container import is_valid_port_num
from kemu.machinery.validation.field import invalid, required
from kemu.machinery.validation.meta import validate_object_meta
from kemu.machinery.validation.names import is_dns1035_label, is_dns1123_subdomain
from kemu.machinery.validation.rbac import is_valid_path_segment_name


def validate_api_service(svc: types_pb2.APIService) -> list[Cause]:
    """ValidateAPIService: named version.group, priorities in range, a local one (no
    service) without TLS settings, a remote one's service reference."""
    causes = validate_object_meta(
        svc.metadata, namespaced=False, name_fn=is_valid_path_segment_name
    )
    spec = svc.spec
    expected = f"{spec.version}.{spec.group}"
    if svc.metadata.name != expected:
        causes.append(
            invalid(
                "metadata.name",
                svc.metadata.name,
                f'must be `spec.version+"."+spec.group`: "{expected}"',
            )
        )
    if not spec.version:
        causes.append(required("spec.version"))
    else:
        causes.extend(
            invalid("spec.version", spec.version, m) for m in is_dns1035_label(spec.version)
        )
    if spec.group:
        causes.extend(
            invalid("spec.group", spec.group, m) for m in is_dns1123_subdomain(spec.group)
        )
    if not 0 < spec.group_priority_minimum <= 20000:
        causes.append(
            invalid(
                "spec.groupPriorityMinimum",
                spec.group_priority_minimum,
                "must be positive and less than 20000",
            )
        )
    if not 0 < spec.version_priority <= 1000:
        causes.append(
            invalid(
                "spec.versionPriority",
                spec.version_priority,
                "must be positive and less than 1000",
            )
        )
    if not spec.HasField("service"):
        if spec.ca_bundle:
            causes.append(
                invalid(
                    "spec.caBundle",
                    len(spec.ca_bundle),
                    "local APIServices may not have a caBundle",
                )
            )
        if spec.insecure_skip_tls_verify:
            causes.append(
                invalid(
                    "spec.insecureSkipTLSVerify",
                    True,
                    "local APIServices may not have insecureSkipTLSVerify",
                )
            )
        return causes
    ref = spec.service
    if not ref.namespace:
        causes.append(required("spec.service.namespace"))
    if not ref.name:
        causes.append(required("spec.service.name"))
    if ref.HasField("port"):
        causes.extend(
            invalid("spec.service.port", ref.port, m) for m in is_valid_port_num(ref.port)
        )
    return causes
