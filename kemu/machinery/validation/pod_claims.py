"""A pod's Dynamic Resource Allocation fields: spec.resourceClaims and containers'
resources.claims (upstream pkg/apis/core/validation/validation.go validatePodResourceClaims,
validateResourceClaimNames)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from kemu.api.v1 import types_pb2 as pb
from kemu.machinery.convert import message_to_dict
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import duplicate, invalid, required
from kemu.machinery.validation.names import is_dns1123_label, name_is_dns_subdomain


def _shown(claim: pb.PodResourceClaim) -> str:
    return json.dumps(message_to_dict(claim), separators=(",", ":"))


def _dns_label(value: str, path: str) -> list[Cause]:
    return [invalid(path, value, m) for m in is_dns1123_label(value)]


def validate_pod_resource_claims(claims: Sequence[pb.PodResourceClaim], path: str) -> list[Cause]:
    """validatePodResourceClaims (core validation.go): names DNS labels and unique, exactly one
    of resourceClaimName / resourceClaimTemplateName (the generated claim's name: below)."""
    causes: list[Cause] = []
    names: set[str] = set()
    for i, c in enumerate(claims):
        p = f"{path}[{i}]"
        if not c.name:
            causes.append(required(f"{p}.name"))
        elif c.name in names:
            causes.append(duplicate(f"{p}.name", c.name))
        else:
            causes += _dns_label(c.name, f"{p}.name")
            names.add(c.name)
        has_claim = c.HasField("resource_claim_name")
        has_template = c.HasField("resource_claim_template_name")
        if has_claim and has_template:
            causes.append(
                invalid(
                    p,
                    _shown(c),
                    "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be "
                    "specified",
                )
            )
        if not has_claim and not has_template:
            causes.append(
                invalid(
                    p,
                    _shown(c),
                    "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
                )
            )
        if has_claim:
            causes += [
                invalid(f"{p}.resourceClaimName", c.resource_claim_name, m)
                for m in name_is_dns_subdomain(c.resource_claim_name)
            ]
        if has_template:
            causes += [
                invalid(f"{p}.resourceClaimTemplateName", c.resource_claim_template_name, m)
                for m in name_is_dns_subdomain(c.resource_claim_template_name)
            ]
    return causes


def validate_container_claims(
    claims: Sequence[pb.ContainerResourceClaim], pod_claims: set[str], path: str
) -> list[Cause]:
    """validateResourceClaimNames: each names one of the pod's claims, at most once per
    request."""
    causes: list[Cause] = []
    keys: set[str] = set()
    for i, c in enumerate(claims):
        p = f"{path}[{i}]"
        if not c.name:
            causes.append(required(p))
            continue
        key = c.name
        if c.request:
            causes += _dns_label(c.request, f"{p}.request")
            key = f"{c.name}/{c.request}"
        if key in keys:
            causes.append(duplicate(p, key))
        keys.add(key)
        if c.name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += (": " + ", ".join(sorted(pod_claims))) if pod_claims else " which is empty"
            causes.append(Cause(p, f'Not found: "{c.name}": {detail}'))
    return causes


def validate_generated_claim_names(
    pod_name: str, claims: Sequence[pb.PodResourceClaim], path: str
) -> list[Cause]:
    """A template's claim is named <pod>-<claim>: that name must be valid ("final
    ResourceClaim name: ...")."""
    causes: list[Cause] = []
    for i, c in enumerate(claims):
        if not pod_name or not c.HasField("resource_claim_template_name") or not c.name:
            continue
        if is_dns1123_label(c.name):
            continue
        generated = f"{pod_name}-{c.name}"
        causes += [
            invalid(f"{path}[{i}].name", generated, "final ResourceClaim name: " + m)
            for m in name_is_dns_subdomain(generated)
        ]
    return causes
