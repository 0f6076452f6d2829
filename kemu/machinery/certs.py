"""X.509 certificates for the cluster's TLS (issue #60 item 1), made with `cryptography`.

- `new_ca` and `issue`: what `make run` makes, as kubeadm's certs phase does: one CA, the
  apiserver's serving certificate (its SANs: the loopback addresses, `localhost` and the
  `kubernetes.default...` names), and one client certificate per component and for the admin,
  its user the subject's CommonName and its groups the Organizations (upstream's x509
  authenticator, k8s.io/apiserver/pkg/authentication/request/x509: `CommonNameUserConversion`).
- `self_signed_serving`: the pair the apiserver generates under `--cert-dir` when it is given
  no certificate, as upstream's MaybeDefaultWithSelfSignedCerts
  (staging/src/k8s.io/apiserver/pkg/server/options/serving.go) does through client-go's
  certutil.GenerateSelfSignedCertKey: a CA of its own (`<host>-ca@<unix time>`) that signs a
  serving certificate for the host, its IPs and names, the file holding that certificate
  followed by the CA's.

Keys are ECDSA P-256 (upstream's certutil makes RSA 2048 keys; kubeadm has
`--encryption-algorithm` ECDSA-P256 too): quick to make and to handshake with.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

DEFAULT_VALIDITY: Final = datetime.timedelta(days=365)
"""certutil's (and kubeadm's) one year for a leaf certificate."""
_BACKDATE: Final = datetime.timedelta(hours=1)
"""certutil's NotBefore an hour ago, for clocks a little apart."""

IP = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class KeyPair:
    """A certificate (PEM; a serving one may be followed by its CA) and its private key
    (PEM, PKCS#8)."""

    cert: bytes
    key: bytes

    def write(self, cert_file: str | Path, key_file: str | Path) -> None:
        """Both files, the key readable by its owner only."""
        Path(cert_file).parent.mkdir(parents=True, exist_ok=True)
        Path(cert_file).write_bytes(self.cert)
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(self.key)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _name(common_name: str, organizations: Sequence[str] = ()) -> x509.Name:
    return x509.Name(
        [
            *(x509.NameAttribute(NameOID.ORGANIZATION_NAME, o) for o in organizations),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def new_ca(common_name: str, *, validity: datetime.timedelta = 10 * DEFAULT_VALIDITY) -> KeyPair:
    """A self-signed CA (kubeadm's is ten years; so is this one by default)."""
    key = _key()
    name = _name(common_name)
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            _key_usage(signs_certificates=True),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _key_usage(*, signs_certificates: bool) -> x509.KeyUsage:
    """Digital signature (ECDSA keys), and certificate and CRL signing for a CA."""
    return x509.KeyUsage(
        digital_signature=True,
        key_encipherment=False,
        content_commitment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certificates,
        crl_sign=signs_certificates,
        encipher_only=False,
        decipher_only=False,
    )


def issue(
    ca: KeyPair,
    common_name: str,
    *,
    organizations: Sequence[str] = (),
    ips: Sequence[str] = (),
    dns_names: Sequence[str] = (),
    client: bool = True,
    server: bool = False,
    validity: datetime.timedelta = DEFAULT_VALIDITY,
) -> KeyPair:
    """A certificate signed by `ca`: CN `common_name`, O `organizations` (a client's user and
    groups), for client auth, server auth (with `ips` and `dns_names` as its SANs) or both."""
    ca_cert = x509.load_pem_x509_certificate(ca.cert)
    ca_key = serialization.load_pem_private_key(ca.key, password=None)
    if not isinstance(ca_key, ec.EllipticCurvePrivateKey):
        raise ValueError("the CA's key is not an ECDSA key")
    key = _key()
    now = _now()
    usages = [
        *([ExtendedKeyUsageOID.CLIENT_AUTH] if client else []),
        *([ExtendedKeyUsageOID.SERVER_AUTH] if server else []),
    ]
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name, organizations))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            _key_usage(signs_certificates=False),
            critical=True,
        )
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
            critical=False,
        )
    )
    sans: list[x509.GeneralName] = [
        *(x509.IPAddress(ipaddress.ip_address(ip)) for ip in ips),
        *(x509.DNSName(name) for name in dns_names),
    ]
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    return KeyPair(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


LOOPBACK_IPS: Final = ("127.0.0.1", "::1")
APISERVER_DNS_NAMES: Final = (
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
"""kube-apiserver's alternate names for its serving certificate (cmd/kube-apiserver/app
options: `MaybeDefaultWithSelfSignedCerts(advertiseAddress, []string{"kubernetes.default.svc",
"kubernetes.default", "kubernetes"}, ...)` and kubeadm's apiserver certificate, which adds
`...svc.cluster.local` and the host's name); `localhost` as certutil adds it."""


def serving_hosts(host: str) -> tuple[list[str], list[str]]:
    """(IPs, DNS names) a serving certificate for `host` (a --bind-address) names: the
    loopback addresses and the apiserver's names always, `host` itself when it is another
    address or name (0.0.0.0 and :: name no one)."""
    ips = list(LOOPBACK_IPS)
    names = list(APISERVER_DNS_NAMES)
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        if host and host not in names:
            names.append(host)
    else:
        if not ip.is_unspecified and str(ip) not in ips:
            ips.append(str(ip))
    return ips, names


def self_signed_serving(host: str) -> KeyPair:
    """upstream's GenerateSelfSignedCertKey for `host`: a CA `<host>-ca@<unix time>` of its
    own, a serving certificate `<host>@<unix time>` it signs, the certificate file holding
    both (leaf first)."""
    stamp = int(_now().timestamp())
    label = host or "localhost"
    ca = new_ca(f"{label}-ca@{stamp}", validity=DEFAULT_VALIDITY)
    ips, names = serving_hosts(host)
    leaf = issue(ca, f"{label}@{stamp}", ips=ips, dns_names=names, client=False, server=True)
    return KeyPair(leaf.cert + ca.cert, leaf.key)


def subject(cert_pem: bytes) -> tuple[str, tuple[str, ...]]:
    """(CommonName, Organizations) of the first certificate in `cert_pem`: the user and
    groups upstream's x509 authenticator reads from a client certificate."""
    cert = x509.load_pem_x509_certificate(cert_pem)
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cn[0].value) if cn else "", tuple(str(o.value) for o in orgs))
