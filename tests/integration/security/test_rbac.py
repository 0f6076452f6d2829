"""Authorization (issue #60 item 3) with real processes: an apiserver serving TLS with a
cluster's CA and `--authorization-mode RBAC`; a user without a binding is refused with
upstream's 403 by the real kubectl, the official Python client and kemu's gRPC client; a
RoleBinding written by a system:masters user grants it without a restart (the watch cache);
`kubectl auth can-i` (with `--as` too) and `kubectl auth whoami` answer honestly; a client
that impersonates needs the right; AlwaysDeny refuses everyone but system:masters; a bad
--authorization-mode stops the apiserver with one line.

The discovery and review rights every authenticated user has upstream (system:discovery,
system:basic-user, system:public-info-viewer) come from bootstrap roles that are not this
test's subject: the test grants them itself."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio.to_thread
import pytest
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import MaxRetryError

from kemu.api.v1 import types_pb2
from kemu.client.call_stream import Transport
from kemu.client.client import Client
from kemu.machinery import kubeconfig
from kemu.machinery.errors import Forbidden
from kemu.machinery.pki import ClusterPki, write_cluster_pki
from kemu.machinery.user import UserInfo, node_user
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.ports import LOOPBACK, free_port
from tests.integration.cli.kubectl_env import KUBECTL

pytestmark = [pytest.mark.integration]

NAMESPACE = "team"
USERS = {
    "root": UserInfo("root", ("system:masters",)),
    "jane": UserInfo("jane"),
    "joe": UserInfo("joe"),
    "node-a": UserInfo("system:node:node-a", ("system:nodes",)),
}
needs_kubectl = pytest.mark.skipif(KUBECTL is None, reason="kubectl is not on PATH")


@dataclass(frozen=True)
class Secured:
    cluster: Cluster
    pki: ClusterPki

    def config(self, user: str) -> Path:
        return self.pki.kubeconfig(user)

    def api(self, user: str) -> k8s.ApiClient:
        api: k8s.ApiClient = config.new_client_from_config(str(self.config(user)))  # type: ignore[no-untyped-call]
        return api


def _start(c: Cluster, name: str, mode: str) -> ClusterPki:
    port, rest_port = free_port(), free_port()
    pki = write_cluster_pki(
        c.root / f"pki-{name}",
        rest_url=f"https://{LOOPBACK}:{rest_port}",
        grpc_server=f"{LOOPBACK}:{port}",
        users=USERS,
    )
    args = ["--etcd-servers", c.etcd_servers, "--port", str(port), "--rest-port", str(rest_port)]
    args += [*pki.apiserver_args(), "--authorization-mode", mode]
    args += ["--disable-admission-plugins", "ServiceAccount"]
    c.start_component("apiserver", name, args, port=port)
    return pki


def _everyones_rights(api: k8s.ApiClient) -> None:
    """What upstream's system:discovery, system:basic-user and system:public-info-viewer
    give every authenticated user: discovery, the self reviews."""
    rbac = k8s.RbacAuthorizationV1Api(api)
    role = k8s.V1ClusterRole(
        metadata=k8s.V1ObjectMeta(name="test:everyone"),
        rules=[
            k8s.V1PolicyRule(
                verbs=["get"],
                non_resource_urls=["/api", "/api/*", "/apis", "/apis/*", "/version", "/openapi/*"],
            ),
            k8s.V1PolicyRule(
                verbs=["create"],
                api_groups=["authorization.k8s.io"],
                resources=["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            ),
            k8s.V1PolicyRule(
                verbs=["create"],
                api_groups=["authentication.k8s.io"],
                resources=["selfsubjectreviews"],
            ),
        ],
    )
    rbac.create_cluster_role(role)
    rbac.create_cluster_role_binding(
        k8s.V1ClusterRoleBinding(
            metadata=k8s.V1ObjectMeta(name="test:everyone"),
            role_ref=k8s.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="ClusterRole", name="test:everyone"
            ),
            subjects=[
                k8s.RbacV1Subject(
                    api_group="rbac.authorization.k8s.io",
                    kind="Group",
                    name="system:authenticated",
                )
            ],
        )
    )


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with Cluster(tmp_path_factory.mktemp("rbac")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        pki = _start(c, "apiserver", "RBAC")
        s = Secured(c, pki)
        root = s.api("root")
        k8s.CoreV1Api(root).create_namespace(
            k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=NAMESPACE))
        )
        _everyones_rights(root)
        yield s


def _kubectl(s: Secured, user: str, *args: str) -> subprocess.CompletedProcess[str]:
    assert KUBECTL is not None
    env = {
        "KUBECONFIG": str(s.config(user)),
        "KUBECACHEDIR": str(s.cluster.root / f"kube-cache-{user}"),
    }
    return subprocess.run(
        [KUBECTL, *args], env=env, capture_output=True, text=True, timeout=30, check=False
    )


def _bind_pod_reader(api: k8s.ApiClient, user: str) -> None:
    rbac = k8s.RbacAuthorizationV1Api(api)
    rbac.create_namespaced_role(
        NAMESPACE,
        k8s.V1Role(
            metadata=k8s.V1ObjectMeta(name=f"{user}-reads-pods"),
            rules=[k8s.V1PolicyRule(verbs=["get", "list"], api_groups=[""], resources=["pods"])],
        ),
    )
    rbac.create_namespaced_role_binding(
        NAMESPACE,
        k8s.V1RoleBinding(
            metadata=k8s.V1ObjectMeta(name=f"{user}-reads-pods"),
            role_ref=k8s.V1RoleRef(
                api_group="rbac.authorization.k8s.io", kind="Role", name=f"{user}-reads-pods"
            ),
            subjects=[
                k8s.RbacV1Subject(api_group="rbac.authorization.k8s.io", kind="User", name=user)
            ],
        ),
    )


LIST_PODS_FORBIDDEN = (
    'pods is forbidden: User "joe" cannot list resource "pods" in API group "" in the '
    f'namespace "{NAMESPACE}"'
)


@needs_kubectl
def test_kubectl_gets_upstreams_403_until_a_role_binding_grants_it(secured: Secured) -> None:
    """S-AUTHZ-RBAC-1"""
    out = _kubectl(secured, "joe", "get", "pods", "-n", NAMESPACE)
    assert out.returncode == 1
    assert out.stderr.strip().endswith(f"Error from server (Forbidden): {LIST_PODS_FORBIDDEN}")
    can = _kubectl(secured, "joe", "auth", "can-i", "list", "pods", "-n", NAMESPACE)
    assert (can.returncode, can.stdout.strip()) == (1, "no")
    _bind_pod_reader(secured.api("root"), "joe")

    def granted() -> bool:
        out = _kubectl(secured, "joe", "get", "pods", "-n", NAMESPACE)
        assert out.returncode == 0, out.stderr
        return True

    eventually_sync(granted, timeout=10)
    can = _kubectl(secured, "joe", "auth", "can-i", "list", "pods", "-n", NAMESPACE)
    assert (can.returncode, can.stdout.strip()) == (0, "yes")
    can = _kubectl(secured, "joe", "auth", "can-i", "delete", "pods", "-n", NAMESPACE)
    assert (can.returncode, can.stdout.strip()) == (1, "no")
    listed = _kubectl(secured, "joe", "auth", "can-i", "--list", "-n", NAMESPACE)
    assert listed.returncode == 0, listed.stderr
    assert any(line.split()[:1] == ["pods"] for line in listed.stdout.splitlines())


def test_the_python_client_gets_upstreams_status(secured: Secured) -> None:
    """S-AUTHZ-RBAC-2"""
    api = k8s.CoreV1Api(secured.api("jane"))
    with pytest.raises(ApiException) as e:
        api.read_namespaced_pod("web", NAMESPACE)
    assert e.value.status == 403
    status: Any = json.loads(e.value.body or "")
    assert status == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'pods "web" is forbidden: User "jane" cannot get resource "pods" in API '
        f'group "" in the namespace "{NAMESPACE}"',
        "reason": "Forbidden",
        "details": {"name": "web", "kind": "pods"},
        "code": 403,
    }
    with pytest.raises(ApiException) as e:
        k8s.AppsV1Api(secured.api("jane")).list_deployment_for_all_namespaces()
    assert json.loads(e.value.body or "")["message"] == (
        'deployments.apps is forbidden: User "jane" cannot list resource "deployments" in API '
        'group "apps" at the cluster scope'
    )


@pytest.mark.anyio
async def test_grpc_permission_denied_carries_the_status(secured: Secured) -> None:
    """S-AUTHZ-RBAC-3"""
    jane = kubeconfig.load(secured.config("jane"))
    async with Client(jane.grpc_server, tls=jane.tls) as client:
        with pytest.raises(Forbidden) as e:
            await client.get(types_pb2.ConfigMap, "settings", NAMESPACE)
        assert e.value.message == (
            'configmaps "settings" is forbidden: User "jane" cannot get resource "configmaps" '
            f'in API group "" in the namespace "{NAMESPACE}"'
        )
        assert e.value.subject is not None and e.value.subject.kind == "configmaps"
        with pytest.raises(Forbidden, match='cannot watch resource "pods"'):
            async with client.watch(types_pb2.Pod, NAMESPACE) as events:
                async for _ in events:
                    break
    # the Calls stream: the same methods, the same answer
    async with Client(jane.grpc_server, tls=jane.tls, transport=Transport.STREAM) as client:
        with pytest.raises(Forbidden) as e:
            await client.get(types_pb2.ConfigMap, "settings", NAMESPACE)
        assert e.value.message.startswith('configmaps "settings" is forbidden: User "jane"')
    root = kubeconfig.load(secured.config("root"))
    async with Client(root.grpc_server, tls=root.tls) as client:  # system:masters
        await client.list(types_pb2.Pod, NAMESPACE)
    # counted as upstream counts its 403s
    url = secured.cluster.component("apiserver").metrics_url

    def scrape() -> str:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return str(answer.read().decode())

    metrics = await anyio.to_thread.run_sync(scrape)
    assert (
        'apiserver_request_total{code="PERMISSION_DENIED",resource="configmaps",verb="get"} 2.0'
        in metrics
    )


@pytest.mark.anyio
async def test_a_kubelet_acts_as_itself_but_impersonates_no_other_node(secured: Secured) -> None:
    """S-AUTHZ-IMPERSONATE-1: kemu's kubelet names its own node's user (allowed: it asks for
    nothing it has not); another node's user needs the impersonate verb."""
    node = kubeconfig.load(secured.config("node-a"))
    async with Client(node.grpc_server, tls=node.tls) as client:
        itself = client.as_user(node_user("node-a"))
        with pytest.raises(
            Forbidden, match='User "system:node:node-a" cannot get resource "nodes"'
        ):
            await itself.get(types_pb2.Node, "node-a")
        other = client.as_user(node_user("node-b"))
        with pytest.raises(Forbidden) as e:
            await other.get(types_pb2.Node, "node-a")
        assert e.value.message == (
            'users "system:node:node-b" is forbidden: User "system:node:node-a" cannot '
            'impersonate resource "users" in API group "" at the cluster scope'
        )


@needs_kubectl
def test_can_i_as_another_user_and_whoami(secured: Secured) -> None:
    """S-AUTHZ-REVIEW-1: root (system:masters) may impersonate; jane may not."""
    _bind_pod_reader(secured.api("root"), "ann")
    as_ann = _kubectl(
        secured, "root", "auth", "can-i", "get", "pods", "-n", NAMESPACE, "--as", "ann"
    )
    assert (as_ann.returncode, as_ann.stdout.strip()) == (0, "yes")
    as_bob = _kubectl(
        secured, "root", "auth", "can-i", "get", "pods", "-n", NAMESPACE, "--as", "bob"
    )
    assert (as_bob.returncode, as_bob.stdout.strip()) == (1, "no")
    # (kubectl's discovery reads no Status from an aggregated discovery request's 403: it
    # says "unknown"; the official client shows the Status)
    jane = secured.api("jane")
    jane.set_default_header("Impersonate-User", "ann")  # type: ignore[no-untyped-call]
    with pytest.raises(ApiException) as e:
        k8s.CoreV1Api(jane).list_namespaced_pod(NAMESPACE)
    assert json.loads(e.value.body or "")["message"] == (
        'users "ann" is forbidden: User "jane" cannot impersonate resource "users" in API '
        'group "" at the cluster scope'
    )
    who = _kubectl(secured, "jane", "auth", "whoami", "-o", "json")
    assert who.returncode == 0, who.stderr
    review = json.loads(who.stdout)
    assert review["kind"] == "SelfSubjectReview"
    assert review["status"]["userInfo"] == {"username": "jane", "groups": ["system:authenticated"]}
    who = _kubectl(secured, "root", "auth", "whoami", "-o", "json", "--as", "ann")
    assert json.loads(who.stdout)["status"]["userInfo"]["username"] == "ann"


def test_always_deny_refuses_all_but_system_masters(secured: Secured) -> None:
    """S-AUTHZ-MODES-1"""
    pki = _start(secured.cluster, "deny", "AlwaysDeny")
    try:
        jane = config.new_client_from_config(str(pki.kubeconfig("jane")))  # type: ignore[no-untyped-call]

        def refused() -> ApiException:
            # (the REST edge listens a moment after the apiserver is ready)
            try:
                k8s.CoreV1Api(jane).list_namespace()
            except ApiException as e:
                return e
            except MaxRetryError as e:
                raise AssertionError(f"not listening yet: {e}") from None
            raise AssertionError("jane was allowed")

        e = eventually_sync(refused, timeout=10)
        assert json.loads(e.body or "")["message"] == (
            'namespaces is forbidden: User "jane" cannot list resource "namespaces" in API '
            'group "" at the cluster scope: Everything is forbidden.'
        )
        root = config.new_client_from_config(str(pki.kubeconfig("root")))  # type: ignore[no-untyped-call]
        names = [n.metadata.name for n in k8s.CoreV1Api(root).list_namespace().items if n.metadata]
        assert NAMESPACE in names
    finally:
        secured.cluster.terminate("deny")


@pytest.mark.parametrize(
    ("mode", "error"),
    [
        ("RBAC,RBAC", 'authorization-mode ["RBAC" "RBAC"] has mode specified more than once'),
        ("Bogus", 'authorization-mode "Bogus" is not a valid mode'),
        ("Webhook", 'authorization-mode "Webhook" is not modelled'),
    ],
)
def test_a_bad_mode_stops_the_apiserver_with_one_line(mode: str, error: str) -> None:
    """S-AUTHZ-MODES-2"""
    out = subprocess.run(
        [sys.executable, "-m", "apiserver", "--authorization-mode", mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode != 0
    assert out.stderr.count("\n") == 1, out.stderr
    assert out.stderr.startswith("apiserver: error: --authorization-mode: ") and error in out.stderr


def test_subject_access_reviews_through_the_official_client(secured: Secured) -> None:
    """S-AUTHZ-REVIEW-2: SubjectAccessReview and LocalSubjectAccessReview, created by a
    system:masters user, answer for the user they name."""
    _bind_pod_reader(secured.api("root"), "sam")
    authz = k8s.AuthorizationV1Api(secured.api("root"))
    attrs = k8s.V1ResourceAttributes(verb="list", resource="pods", namespace=NAMESPACE)

    def review(user: str) -> k8s.V1SubjectAccessReviewStatus:
        spec = k8s.V1SubjectAccessReviewSpec(user=user, resource_attributes=attrs)
        status = authz.create_subject_access_review(k8s.V1SubjectAccessReview(spec=spec)).status
        assert status is not None
        return status

    granted = review("sam")
    assert granted.allowed is True
    assert granted.reason is not None and 'RoleBinding "sam-reads-pods/team"' in granted.reason
    assert review("nobody").allowed is False
    local = authz.create_namespaced_local_subject_access_review(
        NAMESPACE,
        k8s.V1LocalSubjectAccessReview(
            metadata=k8s.V1ObjectMeta(namespace=NAMESPACE),
            spec=k8s.V1SubjectAccessReviewSpec(user="sam", resource_attributes=attrs),
        ),
    )
    assert local.status is not None and local.status.allowed is True
