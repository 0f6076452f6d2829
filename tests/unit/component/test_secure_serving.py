"""The serving flags (issue #60 item 1): upstream's TLS flags, --cert-dir's self-signed pair,
and plaintext refused off loopback."""

from __future__ import annotations

import argparse
import ssl
from pathlib import Path

import pytest

from kemu.component.secure_serving import (
    ServingError,
    add_secure_serving_flags,
    check_plaintext_bind,
    secure_serving_from_args,
)
from kemu.machinery.certs import new_ca


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_secure_serving_flags(parser, pair_name="apiserver")
    return parser.parse_args(argv)


def test_no_flags_is_plaintext() -> None:
    assert not secure_serving_from_args(_parse(), pair_name="apiserver").enabled


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--tls-cert-file", "a.crt"], "--tls-private-key-file: required with --tls-cert-file"),
        (
            ["--tls-private-key-file", "a.key"],
            "--tls-cert-file: required with --tls-private-key-file",
        ),
        (["--client-ca-file", "ca.crt"], "--client-ca-file: needs TLS"),
    ],
)
def test_flags_that_do_not_go_together_are_refused_naming_the_flag(
    argv: list[str], message: str
) -> None:
    with pytest.raises(ServingError, match=message):
        secure_serving_from_args(_parse(*argv), pair_name="apiserver")


def test_cert_dir_generates_a_self_signed_pair_once(tmp_path: Path) -> None:
    serving = secure_serving_from_args(_parse("--cert-dir", str(tmp_path)), pair_name="apiserver")
    done = serving.maybe_default_with_self_signed_certs("127.0.0.1")
    assert done.cert_file == str(tmp_path / "apiserver.crt")
    first = Path(done.cert_file).read_bytes()
    again = serving.maybe_default_with_self_signed_certs("127.0.0.1")
    assert Path(again.cert_file).read_bytes() == first  # kept, as upstream's
    assert isinstance(done.ssl_context(), ssl.SSLContext)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_plaintext_on_loopback_is_allowed(host: str) -> None:
    check_plaintext_bind(host, flag="--bind-address", allowed=False)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.0.0.1", "::", "example.com"])
def test_plaintext_off_loopback_is_refused_unless_allowed(host: str) -> None:
    with pytest.raises(ServingError) as e:
        check_plaintext_bind(host, flag="--bind-address", allowed=False)
    assert str(e.value).startswith(
        f"--bind-address: refusing to serve plaintext on non-loopback address {host}: "
    )
    assert "--allow-insecure-bind" in str(e.value)
    check_plaintext_bind(host, flag="--bind-address", allowed=True)


def test_the_rest_edge_trusts_client_certificates_of_the_client_ca_only(tmp_path: Path) -> None:
    ca = new_ca("client-ca")
    (tmp_path / "ca.crt").write_bytes(ca.cert)
    args = _parse("--cert-dir", str(tmp_path), "--client-ca-file", str(tmp_path / "ca.crt"))
    serving = secure_serving_from_args(args, pair_name="apiserver")
    context = serving.maybe_default_with_self_signed_certs("127.0.0.1").ssl_context()
    assert context.verify_mode == ssl.CERT_OPTIONAL  # asked for, verified when given
    assert [c["subject"] for c in context.get_ca_certs()] == [((("commonName", "client-ca"),),)]
    assert not context.check_hostname
