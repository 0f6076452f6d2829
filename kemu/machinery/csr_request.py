"""What `kubectl describe csr` reads from a CertificateSigningRequest's PEM request (Go's
x509.ParseCertificateRequest, the parts kubectl prints): the subject's attributes and the
subject alternative names of the extensionRequest attribute. A minimal DER reader (PKCS #10,
RFC 2986; GeneralNames, RFC 5280); a request it cannot read raises ValueError."""

from __future__ import annotations

import base64
import ipaddress
from dataclasses import dataclass, field
from typing import Final

_OIDS: Final = {
    "2.5.4.3": "CN",
    "2.5.4.5": "SERIALNUMBER",
    "2.5.4.6": "C",
    "2.5.4.7": "L",
    "2.5.4.8": "ST",
    "2.5.4.9": "STREET",
    "2.5.4.10": "O",
    "2.5.4.11": "OU",
    "2.5.4.17": "POSTALCODE",
}
_EXTENSION_REQUEST: Final = "1.2.840.113549.1.9.14"
_SUBJECT_ALT_NAME: Final = "2.5.29.17"


@dataclass
class Request:
    subject: dict[str, list[str]] = field(default_factory=dict)
    """Attribute (CN, O, OU, C, L, ST, STREET, POSTALCODE, SERIALNUMBER) -> values."""
    dns_names: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    uris: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)


def _tlv(data: bytes, pos: int) -> tuple[int, bytes, int]:
    """(tag, content, next position) of the DER element at `pos`."""
    if pos + 2 > len(data):
        raise ValueError("truncated DER")
    tag = data[pos]
    length = data[pos + 1]
    pos += 2
    if length & 0x80:
        n = length & 0x7F
        length = int.from_bytes(data[pos : pos + n], "big")
        pos += n
    end = pos + length
    if end > len(data):
        raise ValueError("truncated DER")
    return tag, data[pos:end], end


def _items(data: bytes) -> list[tuple[int, bytes]]:
    out = []
    pos = 0
    while pos < len(data):
        tag, content, pos = _tlv(data, pos)
        out.append((tag, content))
    return out


def _oid(content: bytes) -> str:
    parts = [content[0] // 40, content[0] % 40]
    value = 0
    for b in content[1:]:
        value = (value << 7) | (b & 0x7F)
        if not b & 0x80:
            parts.append(value)
            value = 0
    return ".".join(str(p) for p in parts)


def der_of(pem: bytes) -> bytes:
    text = pem.decode("ascii", errors="replace")
    lines = [ln for ln in text.splitlines() if ln and not ln.startswith("-----")]
    if not lines:
        raise ValueError("PEM block type must be CERTIFICATE REQUEST")
    return base64.b64decode("".join(lines))


def parse(pem: bytes) -> Request:
    out = Request()
    ((_, csr),) = _items(der_of(pem))[:1]
    (_, info), *_ = _items(csr)
    parts = _items(info)
    if len(parts) < 3:
        raise ValueError("malformed certificate request")
    for _, rdn in _items(parts[1][1]):
        for _, atv in _items(rdn):
            (_, oid), (_, value) = _items(atv)[:2]
            name = _OIDS.get(_oid(oid))
            if name is not None:
                out.subject.setdefault(name, []).append(value.decode(errors="replace"))
    for tag, attrs in parts[3:]:
        if tag != 0xA0:
            continue
        for _, attr in _items(attrs):
            (_, oid), (_, values) = _items(attr)[:2]
            if _oid(oid) != _EXTENSION_REQUEST:
                continue
            for _, exts in _items(values):
                for _, ext in _items(exts):
                    fields = _items(ext)
                    if _oid(fields[0][1]) == _SUBJECT_ALT_NAME:
                        _general_names(fields[-1][1], out)
    return out


def _general_names(octets: bytes, out: Request) -> None:
    ((_, names),) = _items(octets)[:1]
    for tag, value in _items(names):
        kind = tag & 0x1F
        if kind == 2:
            out.dns_names.append(value.decode(errors="replace"))
        elif kind == 1:
            out.emails.append(value.decode(errors="replace"))
        elif kind == 6:
            out.uris.append(value.decode(errors="replace"))
        elif kind == 7:
            out.ips.append(str(ipaddress.ip_address(value)))
