"""kube-controller-manager's --use-service-account-credentials on real processes (issue #60
item 3; upstream's DynamicControllerClientBuilder, staging/src/k8s.io/controller-manager/pkg/
clientbuilder/client_builder_dynamic.go): under `--authorization-mode Node,RBAC` over TLS, each
controller acts as its kube-system ServiceAccount with a token its process requests over the
gRPC edge (serviceaccounts/token, `CreateToken`), so RBAC gives it its system:controller: role
and nothing of the process's own (system:kube-controller-manager cannot create pods); the
token is renewed before it expires on the cluster's clock. S-AUTHZ-KCM-1 and -2 (docs/security.md).

And the gRPC edge's order: a call that presents a bearer token over a channel with a client
certificate is the token's user (gRPC's Python server requires a certificate where upstream
would only ask for one: apiserver/endpoints/identity.py), S-AUTHN-5.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest

from kemu.api.v1 import api_pb2, types_pb2
from kemu.client.client import Client
from kemu.client.credentials import ServiceAccountTokens
from kemu.component.clock import RealClock
from kemu.machinery import kubeconfig
from kemu.machinery.errors import Forbidden, Invalid, NotFound
from kemu.machinery.pki import COMPONENTS, ClusterPki, write_cluster_pki
from kemu.machinery.user import UserInfo
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_pod, make_replica_set
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.namespaces import create_namespace
from kemu.testing.ports import LOOPBACK, free_port

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

ROOT = UserInfo("root", ("system:masters",))
TIMEOUT = 30.0
TOKEN_LIFE = 3600
"""A token's (upstream's default; the controller-manager's, client_builder_dynamic.go)."""


@dataclass(frozen=True)
class Secured:
    cluster: Cluster
    server: str
    pki: ClusterPki

    def tls(self, name: str) -> kubeconfig.ClientTLS:
        config = kubeconfig.load(self.pki.kubeconfig(name))
        assert config.tls is not None
        return config.tls

    def client(self, name: str = "root") -> Client:
        return Client(self.server, tls=self.tls(name), timeout=10.0)


def _secured(c: Cluster) -> Secured:
    """An apiserver over TLS under Node,RBAC, and a controller-manager with its certificate
    (system:kube-controller-manager) and --use-service-account-credentials."""
    port = free_port()
    server = f"{LOOPBACK}:{port}"
    users = {"root": ROOT, "controllermanager": COMPONENTS["controllermanager"]}
    pki = write_cluster_pki(
        c.root / "pki",
        rest_url=f"https://{LOOPBACK}:{free_port()}",
        grpc_server=server,
        users=users,
    )
    args = ["--etcd-servers", c.etcd_servers, "--port", str(port), *pki.apiserver_args()]
    args += ["--authorization-mode", "Node,RBAC", "--disable-admission-plugins", "ServiceAccount"]
    c.start_component("apiserver", "apiserver", args, port=port)
    c.start_component(
        "controllermanager",
        "controllermanager",
        [
            "--kubeconfig", str(pki.kubeconfig("controllermanager")),
            "--use-service-account-credentials",
            "--controllers", "replicaset,serviceaccount",
        ],
    )  # fmt: skip
    return Secured(c, server, pki)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    # (virtual time: a token's life passes in seconds; the rest is the same on either clock)
    with Cluster(tmp_path_factory.mktemp("kcm-credentials"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd(unsafe_no_fsync=True)
        yield _secured(c)


@pytest.fixture
async def root(secured: Secured) -> AsyncIterator[Client]:
    async with secured.client() as client:
        yield client


async def _replicas_run(root: Client, ns: str, name: str) -> None:
    await root.create(make_replica_set(name).replicas(2).namespace(ns).obj())

    async def created() -> bool:
        pods = await root.list(types_pb2.Pod, ns, label_selector=f"app={name}")
        assert len(pods.items) == 2, [p.metadata.name for p in pods.items]
        return True

    await eventually(created, timeout=TIMEOUT)


async def test_each_controller_acts_as_its_service_account(secured: Secured, root: Client) -> None:
    """S-AUTHZ-KCM-1: the ReplicaSet's pods are created though the process's own user may not
    create pods: the replicaset controller acted as its ServiceAccount, which it created."""
    ns = await create_namespace(root, "kcm-sa")
    async with secured.client("controllermanager") as process:
        with pytest.raises(Forbidden) as err:
            await process.create(make_pod("direct").namespace(ns).obj())
    assert 'User "system:kube-controller-manager" cannot create resource "pods"' in str(err.value)
    await _replicas_run(root, ns, "web")
    account = await root.get(types_pb2.ServiceAccount, "replicaset-controller", "kube-system")
    assert account.metadata.name == "replicaset-controller"


async def test_the_controllers_token_is_renewed_before_it_expires(
    secured: Secured, root: Client
) -> None:
    """S-AUTHZ-KCM-2: a token's life later on the cluster's clock, the controllers still
    write: each asked for another token before its own expired."""
    ns = await create_namespace(root, "kcm-renew")
    await _replicas_run(root, ns, "before")
    await root.advance_clock(TOKEN_LIFE + 60.0, timeout=120)
    await root.set_clock_rate(1.0)
    await _replicas_run(root, ns, "after")
    log = secured.cluster.component("controllermanager").logs()
    assert log.count("requested a token for kube-system/replicaset-controller") >= 2, log[-3000:]


async def test_a_token_over_a_certificate_channel_is_the_tokens_user(
    secured: Secured, root: Client
) -> None:
    """S-AUTHN-5: the gRPC edge takes the call's bearer token before its channel's
    certificate (root's, in system:masters): an account no RoleBinding names is refused."""
    ns = await create_namespace(root, "kcm-token")
    await root.create(
        types_pb2.ServiceAccount(metadata=types_pb2.ObjectMeta(name="nobody", namespace=ns))
    )
    tokens = ServiceAccountTokens(root, ns, "nobody", RealClock())
    async with secured.client() as channel:
        as_account = channel.with_credentials(tokens)
        with pytest.raises(Forbidden) as err:
            await as_account.list(types_pb2.Pod, ns)
        assert f'User "system:serviceaccount:{ns}:nobody" cannot list resource "pods"' in str(
            err.value
        )
        assert (await channel.list(types_pb2.Pod, ns)).items is not None  # (root, no token)


async def test_create_token_answers_as_the_rest_edge(secured: Secured, root: Client) -> None:
    """CreateToken: upstream's TokenRequest rules (an hour by default, at least ten minutes;
    the account must exist)."""
    ns = await create_namespace(root, "kcm-create-token")
    await root.create(
        types_pb2.ServiceAccount(metadata=types_pb2.ObjectMeta(name="sa", namespace=ns))
    )
    request = api_pb2.TokenRequest(metadata=types_pb2.ObjectMeta(name="sa", namespace=ns))
    answer = await root.create_token(request)
    assert answer.status.token.count(".") == 2  # (a JWT)
    assert answer.spec.expiration_seconds == TOKEN_LIFE
    life = answer.status.expiration_timestamp.seconds - (await root.clock_status()).now
    assert TOKEN_LIFE - 100 < life <= TOKEN_LIFE + 1, life
    short = api_pb2.TokenRequest()
    short.CopyFrom(request)
    short.spec.expiration_seconds = 60
    with pytest.raises(Invalid) as invalid:
        await root.create_token(short)
    assert "spec.expirationSeconds" in str(invalid.value)
    missing = api_pb2.TokenRequest(metadata=types_pb2.ObjectMeta(name="ghost", namespace=ns))
    with pytest.raises(NotFound):
        await root.create_token(missing)
