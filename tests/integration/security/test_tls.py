"""TLS on both edges (issue #60 item 1), with real processes: an apiserver serving its gRPC
port and REST edge over TLS with a cluster's CA (kemu.machinery.pki, as `make run`), a
scheduler and a kubelet connecting with their own certificates through --kubeconfig, the
real kubectl, the official Python client and kemuctl through the admin's kubeconfig; clients
without the CA (or without a certificate on the gRPC port) refused; the bare plaintext start
unchanged on loopback and refused elsewhere; --cert-dir's self-signed pair."""

from __future__ import annotations

import json
import shutil
import ssl
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from kubernetes import client as k8s
from kubernetes import config

from kemu.client.client import Client
from kemu.machinery import kubeconfig
from kemu.machinery.certs import KeyPair, issue
from kemu.machinery.errors import Unavailable
from kemu.machinery.pki import COMPONENTS, ClusterPki, kubelet_user, write_cluster_pki
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import REPO_ROOT
from tests.integration.cli.kubectl_env import KUBECTL

pytestmark = [pytest.mark.integration]

NODE = "tls-n1"


@dataclass(frozen=True)
class Secure:
    cluster: Cluster
    pki: ClusterPki
    grpc_server: str
    rest_url: str

    @property
    def admin(self) -> Path:
        return self.pki.kubeconfig("admin")


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secure]:
    with Cluster(tmp_path_factory.mktemp("tls")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        port, rest_port = free_port(), free_port()
        grpc_server, rest_url = f"{LOOPBACK}:{port}", f"https://{LOOPBACK}:{rest_port}"
        users = {**COMPONENTS, f"kubelet-{NODE}": kubelet_user(NODE)}
        pki = write_cluster_pki(
            c.root / "pki", rest_url=rest_url, grpc_server=grpc_server, users=users
        )
        args = ["--etcd-servers", c.etcd_servers, "--port", str(port)]
        args += ["--rest-port", str(rest_port), *pki.apiserver_args()]
        args += ["--disable-admission-plugins", "ServiceAccount"]  # (no controller-manager)
        c.start_component("apiserver", "apiserver", args, port=port)
        # no --server: the address comes from the kubeconfig, as the Procfile's
        c.start_component(
            "scheduler", "scheduler", ["--kubeconfig", str(pki.kubeconfig("scheduler"))]
        )
        c.start_component(
            "kubelet",
            f"kubelet-{NODE}",
            [
                "--kubeconfig", str(pki.kubeconfig(f"kubelet-{NODE}")),
                "--node-name", NODE,
                "--capacity", "cpu=4,memory=8Gi,pods=110",
                "--root-dir", str(c.root / "kubelet"),
            ],
        )  # fmt: skip
        yield Secure(c, pki, grpc_server, rest_url)


def _kubectl(s: Secure, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {"KUBECONFIG": str(config), "KUBECACHEDIR": str(s.cluster.root / "kube-cache")}
    return subprocess.run(
        [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def _kemuctl(config: Path | None, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {"PATH": "/usr/bin:/bin", **env}
    if config is not None:
        environ["KUBECONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "kemu.ctl", *args],
        cwd=REPO_ROOT / "tests",  # (no .kemu/kubeconfig there)
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _without_ca(s: Secure, name: str) -> Path:
    """The admin's kubeconfig with its CA data removed (the system's roots then)."""
    doc: Any = json.loads(s.admin.read_text())
    del doc["clusters"][0]["cluster"]["certificate-authority-data"]
    path = s.cluster.root / name
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)")
def test_kubectl_over_tls_sees_the_kubelet_that_joined_with_its_certificate(
    secure: Secure,
) -> None:
    out = _kubectl(secure, secure.admin, "get", "nodes", "-o", "name")
    assert out.returncode == 0, out.stderr
    assert f"node/{NODE}" in out.stdout.split()


@pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)")
def test_kubectl_without_the_ca_is_refused(secure: Secure) -> None:
    out = _kubectl(secure, _without_ca(secure, "no-ca-kubectl"), "get", "nodes")
    assert out.returncode != 0
    assert "certificate signed by unknown authority" in out.stderr


def test_the_python_client_over_tls_with_the_kubeconfig(secure: Secure) -> None:
    api = k8s.CoreV1Api(config.new_client_from_config(str(secure.admin)))  # type: ignore[no-untyped-call]
    assert NODE in [n.metadata.name for n in api.list_node().items if n.metadata]


def test_the_rest_edge_refuses_a_client_that_does_not_trust_its_ca(secure: Secure) -> None:
    with pytest.raises(OSError, match="CERTIFICATE_VERIFY_FAILED"):
        urllib.request.urlopen(f"{secure.rest_url}/version", timeout=5)
    trusted = ssl.create_default_context(cafile=str(secure.pki.ca_file))
    with urllib.request.urlopen(f"{secure.rest_url}/version", timeout=5, context=trusted) as r:
        assert json.load(r)["gitVersion"].startswith("v1.")


@pytest.mark.anyio
async def test_a_scheduler_with_its_certificate_schedules_a_pod(secure: Secure) -> None:
    config = kubeconfig.load(secure.admin)
    async with Client(config.grpc_server, tls=config.tls) as client:
        pod = make_pod("tls-web").namespace("default").req(cpu="100m").obj()
        await client.create(pod)

        async def scheduled() -> bool:
            got = await client.get(type(pod), "tls-web", "default")
            assert got.spec.node_name == NODE
            return True

        await eventually(scheduled, timeout=30)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "case", ["no CA", "no client certificate", "plaintext"], ids=lambda c: c.replace(" ", "-")
)
async def test_a_grpc_client_without_the_ca_or_a_certificate_is_refused(
    secure: Secure, case: str
) -> None:
    config = kubeconfig.load(secure.admin)
    assert config.tls is not None
    tls = {
        "no CA": kubeconfig.ClientTLS(None, config.tls.cert, config.tls.key),
        "no client certificate": kubeconfig.ClientTLS(config.tls.ca),
        "plaintext": None,
    }[case]
    async with Client(config.grpc_server, tls=tls, timeout=5, wait_for_server=False) as client:
        with pytest.raises(Unavailable):
            await client.version()


def test_kemuctl_uses_the_kubeconfig_and_refuses_one_without_the_ca(secure: Secure) -> None:
    ok = _kemuctl(secure.admin, "get", "nodes")
    assert ok.returncode == 0, ok.stderr
    assert NODE in ok.stdout
    ok = _kemuctl(None, "--kubeconfig", str(secure.admin), "get", "nodes")
    assert ok.returncode == 0, ok.stderr
    refused = _kemuctl(_without_ca(secure, "no-ca-kemuctl"), "get", "nodes")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: cannot reach the kemu apiserver at ")
    assert "CERTIFICATE_VERIFY_FAILED" in refused.stderr and refused.stderr.count("\n") == 1


def test_a_bare_plaintext_apiserver_still_serves_on_loopback(secure: Secure) -> None:
    c = secure.cluster
    plain = c.start_apiserver(name="plain")  # no TLS flags: plaintext on 127.0.0.1
    out = _kemuctl(None, "--server", f"{LOOPBACK}:{plain.port}", "get", "nodes")
    assert out.returncode == 0, out.stderr
    assert NODE in out.stdout
    c.terminate("plain")


@pytest.mark.parametrize("module", ["apiserver", "cloud"])
def test_plaintext_on_a_non_loopback_address_is_refused_in_one_line(
    tmp_path: Path, module: str
) -> None:
    config = tmp_path / "cloud.yaml"
    shutil.copy(REPO_ROOT / "hack" / "cloud.yaml", config)
    extra = ["--config", str(config), "--state-dir", str(tmp_path)] if module == "cloud" else []
    out = subprocess.run(
        [sys.executable, "-m", module, "--bind-address", "0.0.0.0", *extra],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 1
    assert out.stderr.startswith(
        f"{module}: error: --bind-address: refusing to serve plaintext on non-loopback "
        "address 0.0.0.0: give "
    )
    assert "--allow-insecure-bind" in out.stderr and out.stderr.count("\n") == 1


@pytest.mark.anyio
async def test_cert_dir_makes_a_self_signed_pair_that_a_client_trusting_it_reaches(
    secure: Secure, tmp_path: Path
) -> None:
    c = secure.cluster
    port = free_port()
    args = ["--etcd-servers", c.etcd_servers, "--port", str(port), "--cert-dir", str(tmp_path)]
    c.start_component("apiserver", "self-signed", args, port=port)
    chain = (tmp_path / "apiserver.crt").read_bytes()
    assert chain.count(b"BEGIN CERTIFICATE") == 2  # the serving certificate, then its CA
    async with Client(f"{LOOPBACK}:{port}", tls=kubeconfig.ClientTLS(chain), timeout=10) as client:
        assert (await client.version()).server.emulated_version
    c.terminate("self-signed")


def _exempt(s: Secure) -> float:
    """Requests API Priority and Fairness dispatched under the `exempt` FlowSchema (the
    group system:masters, which no process of the cluster is in)."""
    total = 0.0
    for line in s.cluster.component("apiserver").scrape().splitlines():
        if line.startswith("apiserver_flowcontrol_dispatched_requests_total{") and (
            'flow_schema="exempt"' in line
        ):
            total += float(line.rsplit(" ", 1)[1])
    return total


@pytest.mark.anyio
async def test_a_verified_client_certificate_is_the_calls_user_on_both_edges(
    secure: Secure, tmp_path: Path
) -> None:
    """CN the user, O the groups (upstream's x509 authenticator): a certificate in
    system:masters is served by the exempt FlowSchema, on the gRPC port and the REST edge,
    though its user agent names no component (which would be anonymous: global-default)."""
    ca_dir = secure.pki.dir
    ca = KeyPair(secure.pki.ca_file.read_bytes(), (ca_dir / "ca.key").read_bytes())
    pair = issue(ca, "tls-master", organizations=["system:masters"])
    before = _exempt(secure)
    async with Client(
        secure.grpc_server,
        user_agent="tls-test",
        tls=kubeconfig.ClientTLS(ca.cert, pair.cert, pair.key),
    ) as client:
        for _ in range(3):
            await client.version()
    after_grpc = _exempt(secure)
    assert after_grpc >= before + 3
    pair.write(tmp_path / "c.crt", tmp_path / "c.key")
    context = ssl.create_default_context(cafile=str(secure.pki.ca_file))
    context.load_cert_chain(tmp_path / "c.crt", tmp_path / "c.key")
    for _ in range(2):
        assert (
            await anyio.to_thread.run_sync(_get, f"{secure.rest_url}/api/v1/nodes", context) == 200
        )
    assert _exempt(secure) >= after_grpc + 2


def _get(url: str, context: ssl.SSLContext) -> int:
    with urllib.request.urlopen(url, timeout=5, context=context) as answer:
        return int(answer.status)


@pytest.mark.anyio
async def test_a_client_of_several_tls_apiservers_verifies_the_one_that_answers(
    secure: Secure,
) -> None:
    """--server A,B over TLS: the channel's target (ipv4:A,B) names no host, so the name
    verified is the first server's; the first one here is down, the second answers."""
    c = secure.cluster
    port = free_port()
    args = ["--etcd-servers", c.etcd_servers, "--port", str(port), *secure.pki.apiserver_args()]
    c.start_component("apiserver", "tls-b", args, port=port)
    config = kubeconfig.load(secure.admin)
    servers = f"{LOOPBACK}:{free_port()},{LOOPBACK}:{port}"
    async with Client(servers, tls=config.tls, timeout=20) as client:
        assert (await client.version()).server.emulated_version
    c.terminate("tls-b")
