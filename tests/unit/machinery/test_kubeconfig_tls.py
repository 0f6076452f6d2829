"""Kubeconfigs with TLS (issue #60 item 1): what kemu writes, read back as client-go would."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from kemu.machinery import kubeconfig
from kemu.machinery.certs import issue, new_ca, self_signed_serving, subject
from kemu.machinery.pki import COMPONENTS, kubelet_user, write_cluster_pki


def test_a_written_kubeconfig_reads_back_with_its_grpc_address_and_credentials(
    tmp_path: Path,
) -> None:
    ca = new_ca("kubernetes")
    pair = issue(ca, "kubernetes-admin", organizations=["kubeadm:cluster-admins"])
    path = kubeconfig.write(
        tmp_path / "k",
        "https://127.0.0.1:6445",
        grpc_server="127.0.0.1:6443",
        ca=ca.cert,
        cert=pair.cert,
        key=pair.key,
    )
    assert path.stat().st_mode & 0o077 == 0  # it holds a key
    config = kubeconfig.load(path)
    assert config.server == "https://127.0.0.1:6445"
    assert config.grpc_server == "127.0.0.1:6443"
    assert config.tls == kubeconfig.ClientTLS(ca.cert, pair.cert, pair.key)
    assert subject(pair.cert) == ("kubernetes-admin", ("kubeadm:cluster-admins",))


def test_a_kubeconfig_without_the_extension_names_the_grpc_port_in_its_url(
    tmp_path: Path,
) -> None:
    path = kubeconfig.write(tmp_path / "k", "https://localhost:7443", ca=b"CA")
    config = kubeconfig.load(path)
    assert config.grpc_server == "localhost:7443"
    assert config.tls == kubeconfig.ClientTLS(b"CA")


def test_plain_http_has_no_tls(tmp_path: Path) -> None:
    config = kubeconfig.load(kubeconfig.write(tmp_path / "k", "http://127.0.0.1:6445"))
    assert config.tls is None and config.grpc_server == "127.0.0.1:6445"


def test_files_are_read_relative_to_the_kubeconfig(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(b"CA")
    (tmp_path / "c.crt").write_bytes(b"CERT")
    (tmp_path / "c.key").write_bytes(b"KEY")
    doc: Any = kubeconfig.kubeconfig("https://127.0.0.1:6443")
    doc["clusters"][0]["cluster"]["certificate-authority"] = "ca.crt"
    doc["users"][0]["user"] = {"client-certificate": "c.crt", "client-key": "c.key"}
    (tmp_path / "k").write_text(json.dumps(doc))
    assert kubeconfig.load(tmp_path / "k").tls == kubeconfig.ClientTLS(b"CA", b"CERT", b"KEY")


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update({"current-context": "nope"}), "no context named 'nope'"),
        (
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority-data": "%%"}),
            "cluster.certificate-authority-data: not base64",
        ),
        (
            lambda d: d["users"][0].update(
                {"user": {"client-certificate-data": base64.b64encode(b"x").decode()}}
            ),
            "user.client-key: needed with the other",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].update({"server": "tcp://x"}),
            "cluster.server: 'tcp://x' is not an http(s) URL",
        ),
        (
            lambda d: d["clusters"][0]["cluster"].update({"certificate-authority": "/none/ca"}),
            "cluster.certificate-authority: No such file or directory: /none/ca",
        ),
    ],
)
def test_a_bad_kubeconfig_is_one_error_naming_the_field(
    tmp_path: Path, edit: object, message: str
) -> None:
    doc = json.loads(json.dumps(kubeconfig.kubeconfig("https://127.0.0.1:6443")))
    edit(doc)  # type: ignore[operator]
    (tmp_path / "k").write_text(json.dumps(doc))
    with pytest.raises(kubeconfig.KubeConfigError) as e:
        kubeconfig.load(tmp_path / "k")
    assert str(e.value) == f"{tmp_path / 'k'}: {message}"


def test_the_self_signed_pair_holds_the_serving_certificate_then_its_ca() -> None:
    pair = self_signed_serving("127.0.0.1")
    assert pair.cert.count(b"BEGIN CERTIFICATE") == 2
    cn, _ = subject(pair.cert)
    assert cn.startswith("127.0.0.1@")


def test_the_cluster_pki_keeps_its_ca_and_names_each_user(tmp_path: Path) -> None:
    users = {**COMPONENTS, "kubelet-node-a": kubelet_user("node-a")}
    pki = write_cluster_pki(
        tmp_path, rest_url="https://127.0.0.1:6445", grpc_server="127.0.0.1:6443", users=users
    )
    ca = pki.ca_file.read_bytes()
    write_cluster_pki(
        tmp_path, rest_url="https://127.0.0.1:6445", grpc_server="127.0.0.1:6443", users=users
    )
    assert pki.ca_file.read_bytes() == ca
    config = kubeconfig.load(pki.kubeconfig("kubelet-node-a"))
    assert config.tls is not None and config.tls.ca == ca and config.tls.cert is not None
    assert subject(config.tls.cert) == ("system:node:node-a", ("system:nodes",))
