"""Serving TLS with upstream's flags, and plaintext only where it is safe (issue #60 item 1).

The flags are upstream's SecureServingOptions and ClientCertAuthenticationOptions
(staging/src/k8s.io/apiserver/pkg/server/options/serving.go, authentication.go):

- `--tls-cert-file`, `--tls-private-key-file`: the serving certificate (followed by its
  intermediates) and its key;
- `--cert-dir`: where the pair `<pair name>.crt`/`.key` is when no files are given, generated
  there, self-signed, when it is not (serving.go `MaybeDefaultWithSelfSignedCerts`: "Generated
  self-signed cert (...)"); upstream's default is /var/run/kubernetes, kemu's none (below);
- `--client-ca-file`: the CA(s) whose client certificates the server verifies.

What differs from upstream, on purpose: upstream's apiserver always serves TLS (it removed its
insecure port in 1.20 and the flags in 1.24). A kemu component given none of these flags serves
plaintext, as it always has, so that scripts and tests that start one by hand keep working;
but only on a loopback address: plaintext on any other address is refused at start unless
`--allow-insecure-bind` says so (`check_plaintext_bind`). The flag's word is upstream's for
plaintext serving (`--insecure-port`, `--insecure-bind-address`, InsecureServingOptions); it
has no upstream counterpart because upstream has no plaintext serving left to allow.

gRPC's Python server can either require a client certificate or not ask for one
(`require_client_auth`): with `--client-ca-file` the gRPC edge requires one signed by that CA
(every kemu component has one); the REST edge asks for one and verifies it when given, as
upstream's (tls.RequestClientCert; a request without one is anonymous), so that kubectl with
a token or none still connects.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import ssl
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Final

from kemu.machinery.certs import self_signed_serving

logger = logging.getLogger(__name__)

ALLOW_INSECURE_BIND: Final = "--allow-insecure-bind"


class ServingError(ValueError):
    """A serving flag that cannot be used; the message names the flag."""


@dataclass(frozen=True)
class SecureServing:
    """The serving flags as given (no TLS: every field empty)."""

    cert_file: str = ""
    key_file: str = ""
    cert_dir: str = ""
    client_ca_file: str = ""
    pair_name: str = "apiserver"

    @property
    def enabled(self) -> bool:
        return bool(self.cert_file or self.cert_dir)

    def maybe_default_with_self_signed_certs(self, host: str) -> SecureServing:
        """upstream's MaybeDefaultWithSelfSignedCerts: with no --tls-cert-file, the pair in
        --cert-dir, generated there for `host` (and the loopback names) when it is missing."""
        if self.cert_file or not self.cert_dir:
            return self
        cert = Path(self.cert_dir) / f"{self.pair_name}.crt"
        key = Path(self.cert_dir) / f"{self.pair_name}.key"
        if not (cert.is_file() and key.is_file()):
            try:
                Path(self.cert_dir).mkdir(parents=True, exist_ok=True)
                self_signed_serving(host).write(cert, key)
            except OSError as e:
                raise ServingError(f"--cert-dir: {e.strerror}: {self.cert_dir}") from None
            logger.info("Generated self-signed cert (%s, %s)", cert, key)
        return replace(self, cert_file=str(cert), key_file=str(key))

    def read(self) -> tuple[bytes, bytes, bytes | None]:
        """(certificate chain, key, client CA or None) as PEM; ServingError naming the flag."""
        return (
            _read(self.cert_file, "--tls-cert-file"),
            _read(self.key_file, "--tls-private-key-file"),
            _read(self.client_ca_file, "--client-ca-file") if self.client_ca_file else None,
        )

    def ssl_context(self) -> ssl.SSLContext:
        """The REST edge's: TLS 1.2 and up (upstream's default minimum), the client's
        certificate asked for and verified against --client-ca-file when given."""
        # (not create_default_context: it would trust the system's CAs for client certificates
        # too; upstream verifies them against --client-ca-file only)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as e:
            raise ServingError(
                f"--tls-cert-file/--tls-private-key-file: {self.cert_file}, {self.key_file}: {e}"
            ) from None
        if self.client_ca_file:
            try:
                context.load_verify_locations(cafile=self.client_ca_file)
            except (OSError, ssl.SSLError) as e:
                raise ServingError(f"--client-ca-file: {self.client_ca_file}: {e}") from None
            context.verify_mode = ssl.CERT_OPTIONAL
        context.set_alpn_protocols(["http/1.1"])
        return context


def _read(path: str, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise ServingError(f"{flag}: {e.strerror}: {path}") from None


def add_secure_serving_flags(parser: argparse.ArgumentParser, *, pair_name: str) -> None:
    """upstream's four flags (module docstring); --allow-insecure-bind is every component's
    (kemu.component.options)."""
    group = parser.add_argument_group("secure serving (TLS; none of them: plaintext)")
    group.add_argument(
        "--tls-cert-file",
        default="",
        metavar="FILE",
        help="the x509 certificate the server serves (the CA's after the server's); with none, "
        "--cert-dir's",
    )
    group.add_argument(
        "--tls-private-key-file",
        default="",
        metavar="FILE",
        help="the x509 private key matching --tls-cert-file",
    )
    group.add_argument(
        "--cert-dir",
        default="",
        metavar="DIR",
        help="the directory where the TLS certs are located: with no --tls-cert-file, "
        f"{pair_name}.crt and {pair_name}.key there, generated self-signed when missing "
        "(kemu's default none: plaintext)",
    )
    group.add_argument(
        "--client-ca-file",
        default="",
        metavar="FILE",
        help="verify client certificates signed by one of these authorities (needs TLS)",
    )


def secure_serving_from_args(args: argparse.Namespace, *, pair_name: str) -> SecureServing:
    """The flags `add_secure_serving_flags` added, checked together; ServingError naming the
    flag."""
    serving = SecureServing(
        args.tls_cert_file, args.tls_private_key_file, args.cert_dir, args.client_ca_file, pair_name
    )
    if bool(serving.cert_file) != bool(serving.key_file):
        missing = "--tls-private-key-file" if serving.cert_file else "--tls-cert-file"
        given = "--tls-cert-file" if serving.cert_file else "--tls-private-key-file"
        raise ServingError(f"{missing}: required with {given}")
    if serving.client_ca_file and not serving.enabled:
        raise ServingError(
            "--client-ca-file: needs TLS (--tls-cert-file and --tls-private-key-file, or --cert-dir)"
        )
    return serving


def is_loopback(host: str) -> bool:
    """`host` names this machine's loopback only (an IP in 127/8 or ::1, or `localhost`)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_plaintext_bind(host: str, *, flag: str, allowed: bool, tls: bool = True) -> None:
    """ServingError (one line naming `flag`) for plaintext on a non-loopback `host` unless
    `allowed` (--allow-insecure-bind); `tls` False: the server has no TLS flags to suggest."""
    if allowed or is_loopback(host):
        return
    remedy = (
        f"give TLS (--tls-cert-file and --tls-private-key-file, or --cert-dir) or {ALLOW_INSECURE_BIND}"
        if tls
        else f"give {ALLOW_INSECURE_BIND}"
    )
    raise ServingError(
        f"{flag}: refusing to serve plaintext on non-loopback address {host}: {remedy}"
    )


def add_allow_insecure_bind_flag(parser: argparse.ArgumentParser) -> None:
    """--allow-insecure-bind, which every component has (kemu.component.options adds it)."""
    parser.add_argument(
        ALLOW_INSECURE_BIND,
        action="store_true",
        help="kemu only: serve plaintext on a non-loopback address (--bind-address, "
        "--metrics-bind-address; refused without it)",
    )
