"""ServiceAccount tokens on real processes (issue #60 item 2; upstream's pkg/serviceaccount and
TokenRequest): `kubectl create token` issues one, the apiserver authenticates it on both edges
(`kubectl --token ... auth whoami`, the official Python client, a raw gRPC call), RBAC then
decides for the account's user; a token that does not verify, or whose pod is gone, is 401
(UNAUTHENTICATED on gRPC); with --anonymous-auth=false a request without credentials is 401
too (S-AUTHN-1..4)."""

from __future__ import annotations

import json
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
import pytest
from kubernetes import client as k8s

from kemu.api.v1 import api_pb2
from kemu.machinery.pki import ClusterPki, write_cluster_pki
from kemu.machinery.user import UserInfo
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.ports import LOOPBACK, free_port
from tests.integration.cli.kubectl_env import KUBECTL

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

ACCOUNT = "builder"
ROOT = UserInfo("root", ("system:masters",))


@dataclass(frozen=True)
class Api:
    cluster: Cluster
    rest_url: str
    grpc_server: str
    pki: ClusterPki

    def kubectl(
        self, *args: str, token: str = "", stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        """kubectl as the admin (system:masters' certificate), or with `token` alone."""
        assert KUBECTL is not None
        if token:
            cmd = [KUBECTL, "--server", self.rest_url, "--token", token]
            cmd += ["--certificate-authority", str(self.pki.ca_file), *args]
            config = "/dev/null"
        else:
            cmd, config = [KUBECTL, *args], str(self.pki.kubeconfig("root"))
        env = {"KUBECONFIG": config, "KUBECACHEDIR": str(self.cluster.root / "kube-cache")}
        return subprocess.run(
            cmd, input=stdin, env=env, capture_output=True, text=True, timeout=30, check=False
        )

    def token(self, *args: str) -> str:
        out = self.kubectl("create", "token", ACCOUNT, "-n", "default", *args)
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    def context(self) -> ssl.SSLContext | None:
        if self.rest_url.startswith("http:"):
            return None
        return ssl.create_default_context(cafile=str(self.pki.ca_file))

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.grpc_server)


def _start(c: Cluster, name: str, *extra: str, tls: bool = True) -> Api:
    """An apiserver with RBAC on the module's etcd and ServiceAccount key (tokens of one verify
    on the others); over TLS with a system:masters admin, or (tls False) plaintext: the gRPC
    port over TLS requires a client certificate (kemu/component/secure_serving.py), so a
    token alone reaches it in plaintext only."""
    port, rest_port = free_port(), free_port()
    scheme = "https" if tls else "http"
    grpc_server, rest_url = f"{LOOPBACK}:{port}", f"{scheme}://{LOOPBACK}:{rest_port}"
    users = {"root": ROOT} if tls else {}  # (the admin's kubeconfig: the TLS one's)
    pki = write_cluster_pki(c.root / "pki", rest_url=rest_url, grpc_server=grpc_server, users=users)
    args = ["--etcd-servers", c.etcd_servers, "--port", str(port), "--rest-port", str(rest_port)]
    if tls:
        args += pki.apiserver_args()
    else:
        args += ["--service-account-signing-key-file", str(pki.service_account_key)]
    args += ["--authorization-mode", "RBAC"]
    args += ["--disable-admission-plugins", "ServiceAccount"]
    c.start_component("apiserver", f"apiserver-{name}", [*args, *extra], port=port)
    started = Api(c, rest_url, grpc_server, pki)

    def listening() -> bool:
        # (the REST edge listens just after the gRPC port the readiness wait saw; any answer)
        try:
            urllib.request.urlopen(f"{rest_url}/readyz", timeout=2, context=started.context())
        except urllib.error.HTTPError:
            return True
        except OSError:
            return False
        return True

    eventually_sync(listening, message=f"the REST edge at {rest_url}")
    return started


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    with Cluster(tmp_path_factory.mktemp("tokens")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        yield _start(c, "open")


def _as_admin(api: Api, *args: str) -> None:
    out = api.kubectl(*args)
    assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def account(api: Api) -> str:
    _as_admin(api, "create", "serviceaccount", ACCOUNT, "-n", "default")
    return ACCOUNT


def test_s_authn_1_a_token_is_its_accounts_user_on_rest(api: Api, account: str) -> None:
    token = api.token()
    whoami = api.kubectl("auth", "whoami", "-o", "json", token=token)
    assert whoami.returncode == 0, whoami.stderr
    info = json.loads(whoami.stdout)["status"]["userInfo"]
    assert info["username"] == f"system:serviceaccount:default:{account}"
    assert set(info["groups"]) >= {"system:serviceaccounts", "system:serviceaccounts:default"}
    refused = api.kubectl("get", "pods", "-n", "default", token=token)
    assert refused.returncode != 0
    assert (
        f'User "system:serviceaccount:default:{account}" cannot list resource "pods"'
        in refused.stderr
    )
    _as_admin(
        api, "create", "role", "pod-reader", "-n", "default", "--verb=list", "--resource=pods"
    )
    _as_admin(
        api,
        "create",
        "rolebinding",
        "builder-reads",
        "-n",
        "default",
        "--role",
        "pod-reader",
        f"--serviceaccount=default:{account}",
    )
    configuration = k8s.Configuration(host=api.rest_url)
    configuration.ssl_ca_cert = str(api.pki.ca_file)
    configuration.api_key = {"authorization": f"Bearer {token}"}

    def listed() -> k8s.V1PodList:  # (the binding reaches the RBAC cache through its watch)
        with k8s.ApiClient(configuration) as client:
            try:
                return k8s.CoreV1Api(client).list_namespaced_pod("default")
            except k8s.ApiException as e:
                assert e.status == 403
                raise AssertionError("not yet allowed") from e

    pods = eventually_sync(listed, message="the binding's effect")
    assert pods.items == []


def test_s_authn_2_a_bad_token_is_401_on_both_edges(api: Api, account: str) -> None:
    token = api.token()
    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    out = api.kubectl("get", "pods", token=forged)
    assert out.returncode != 0
    # (kubectl's words for any 401, kubectl/pkg/cmd/util StandardErrorMessage: the Status's
    # message follows in parentheses, "Unauthorized", or client-go's own "the server has
    # asked for the client to provide credentials" when the refusal came to its discovery)
    assert "You must be logged in to the server" in out.stderr, out.stderr
    request = urllib.request.Request(
        f"{api.rest_url}/api/v1/namespaces/default/pods",
        headers={"Authorization": f"Bearer {forged}"},
    )
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(request, timeout=10, context=api.context())
    assert answered.value.code == 401
    status = json.loads(answered.value.read())
    assert (status["reason"], status["message"], status["code"]) == (
        "Unauthorized",
        "Unauthorized",
        401,
    )
    with _start(api.cluster, "plain", tls=False).channel() as channel:
        get = channel.unary_unary(
            "/kemu.api.v1.Api/List", request_serializer=None, response_deserializer=None
        )
        request_bytes = api_pb2.ListRequest(
            resource="pods", namespace="default"
        ).SerializeToString()
        with pytest.raises(grpc.RpcError) as e:
            get(request_bytes, metadata=(("authorization", f"Bearer {forged}"),), timeout=10)
        assert e.value.code() is grpc.StatusCode.UNAUTHENTICATED
        answer = get(request_bytes, metadata=(("authorization", f"Bearer {token}"),), timeout=10)
        assert isinstance(answer, bytes)


def test_s_authn_3_a_token_bound_to_a_pod_ends_with_it(api: Api, account: str) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "holder", "namespace": "default"},
        "spec": {"serviceAccountName": account, "containers": [{"name": "c", "image": "busybox"}]},
    }
    created = api.kubectl("create", "-f", "-", stdin=json.dumps(manifest))
    assert created.returncode == 0, created.stderr
    token = api.token("--bound-object-kind", "Pod", "--bound-object-name", "holder")
    assert api.kubectl("auth", "whoami", token=token).returncode == 0
    _as_admin(api, "delete", "pod", "holder", "-n", "default", "--grace-period", "0", "--force")
    gone = api.kubectl("auth", "whoami", token=token)
    assert gone.returncode != 0 and "Unauthorized" in gone.stderr


def test_s_authn_4_without_anonymous_auth_no_credential_is_401(api: Api) -> None:
    with urllib.request.urlopen(f"{api.rest_url}/version", timeout=10, context=api.context()) as r:
        assert r.status == 200  # (anonymous, allowed: system:public-info-viewer)
    closed = _start(api.cluster, "closed", "--anonymous-auth", "false", tls=False)
    with pytest.raises(urllib.error.HTTPError) as answered:
        urllib.request.urlopen(f"{closed.rest_url}/version", timeout=10, context=closed.context())
    assert answered.value.code == 401
    with closed.channel() as channel:
        version = channel.unary_unary(
            "/kemu.api.v1.Api/Version", request_serializer=None, response_deserializer=None
        )
        with pytest.raises(grpc.RpcError) as e:
            version(api_pb2.VersionRequest().SerializeToString(), timeout=10)
        assert e.value.code() is grpc.StatusCode.UNAUTHENTICATED
