"""certificates.k8s.io/v1 CertificateSigningRequests (upstream
pkg/apis/certificates/validation/validation.go): the request a PEM "CERTIFICATE REQUEST"
block, a qualified signerName, known usages without duplicates, at least 10 minutes of
expiration; Approved and Denied exclusive, never removed once added."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.certificates import APPROVED, DENIED, FAILED
from kemu.machinery.errors import Cause
from kemu.machinery.validation.field import duplicate, forbidden, invalid, not_supported, required
from kemu.machinery.validation.meta import validate_object_meta
from kemu.machinery.validation.names import is_dns1123_subdomain
from kemu.machinery.validation.rbac import is_valid_path_segment_name

KEY_USAGES: Final = (
    "signing",
    "digital signature",
    "content commitment",
    "key encipherment",
    "key agreement",
    "data encipherment",
    "cert sign",
    "crl sign",
    "encipher only",
    "decipher only",
    "any",
    "server auth",
    "client auth",
    "code signing",
    "email protection",
    "s/mime",
    "ipsec end system",
    "ipsec tunnel",
    "ipsec user",
    "timestamping",
    "ocsp signing",
    "microsoft sgc",
    "netscape sgc",
)
_PEM: Final = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n(.*?)-----END \1-----", re.DOTALL)
_MIN_EXPIRATION: Final = 600


def _request(request: bytes) -> list[Cause]:
    """validateCSR: one PEM block of type CERTIFICATE REQUEST (kemu does not parse the DER:
    it issues nothing)."""
    if not request:
        return [required("spec.request")]
    block = _PEM.search(request)
    if block is None:
        return [invalid("spec.request", "<request>", "PEM block type must be CERTIFICATE REQUEST")]
    if block.group(1) != b"CERTIFICATE REQUEST":
        return [invalid("spec.request", "<request>", "PEM block type must be CERTIFICATE REQUEST")]
    try:
        base64.b64decode(b"".join(block.group(2).split()), validate=True)
    except (binascii.Error, ValueError):
        return [invalid("spec.request", "<request>", "asn1: syntax error: data truncated")]
    return []


def _signer_name(name: str) -> list[Cause]:
    """ValidateSignerName: a domain and a path (example.com/signer-name)."""
    path = "spec.signerName"
    if not name:
        return [required(path)]
    domain, slash, rest = name.partition("/")
    if not slash or not rest:
        return [
            invalid(
                path,
                name,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            )
        ]
    return [invalid(path, name, m) for m in is_dns1123_subdomain(domain)]


def _usages(usages: Sequence[str]) -> list[Cause]:
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, u in enumerate(usages):
        if u not in KEY_USAGES:
            causes.append(not_supported(f"spec.usages[{i}]", u, KEY_USAGES))
        if u in seen:
            causes.append(duplicate(f"spec.usages[{i}]", u))
        seen.add(u)
    return causes


def _conditions(csr: types_pb2.CertificateSigningRequest) -> list[Cause]:
    """validateConditions: known types True only, one of each, Approved xor Denied."""
    causes: list[Cause] = []
    seen: set[str] = set()
    for i, c in enumerate(csr.status.conditions):
        p = f"status.conditions[{i}]"
        if not c.type:
            causes.append(required(f"{p}.type"))
        if c.type in (APPROVED, DENIED, FAILED):
            if c.status != "True":
                causes.append(not_supported(f"{p}.status", c.status, ["True"]))
        elif c.status not in ("True", "False", "Unknown"):
            causes.append(not_supported(f"{p}.status", c.status, ["False", "True", "Unknown"]))
        if c.type in seen:
            causes.append(duplicate(f"{p}.type", c.type))
        seen.add(c.type)
    if APPROVED in seen and DENIED in seen:
        causes.append(
            invalid(
                "status.conditions",
                "",
                "Approved and Denied conditions are mutually exclusive",
            )
        )
    return causes


def validate_csr(csr: types_pb2.CertificateSigningRequest) -> list[Cause]:
    causes = validate_object_meta(
        csr.metadata, namespaced=False, name_fn=is_valid_path_segment_name
    )
    spec = csr.spec
    causes.extend(_request(spec.request))
    causes.extend(_signer_name(spec.signer_name))
    if not spec.usages:
        causes.append(required("spec.usages"))
    causes.extend(_usages(spec.usages))
    if spec.HasField("expiration_seconds") and spec.expiration_seconds < _MIN_EXPIRATION:
        causes.append(
            invalid(
                "spec.expirationSeconds",
                spec.expiration_seconds,
                "may not specify a duration less than 600 seconds (10 minutes)",
            )
        )
    causes.extend(_conditions(csr))
    return causes


def validate_csr_update(
    new: types_pb2.CertificateSigningRequest, old: types_pb2.CertificateSigningRequest
) -> list[Cause]:
    """ValidateCertificateSigningRequestUpdate: the spec is immutable; Approved, Denied and
    Failed conditions are never removed; an issued certificate never changes."""
    causes: list[Cause] = []
    if new.spec != old.spec:
        causes.append(invalid("spec", "", "field is immutable"))
    new_types = {c.type for c in new.status.conditions}
    for t in (APPROVED, DENIED, FAILED):
        if any(c.type == t for c in old.status.conditions) and t not in new_types:
            causes.append(
                forbidden("status.conditions", f'updates may not remove a condition of type "{t}"')
            )
    if old.status.certificate and new.status.certificate != old.status.certificate:
        causes.append(
            forbidden("status.certificate", "updates may not modify existing certificate content")
        )
    return causes
