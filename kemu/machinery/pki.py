"""A cluster's certificates and kubeconfigs, as kubeadm's `certs` and `kubeconfig` phases make
them (issue #60 item 1): what `make run` and the tests' secure clusters use.

Under DIR: `ca.crt`/`ca.key` (kept from an earlier run when both are there, so kubeconfigs
copied elsewhere keep working), `apiserver.crt`/`apiserver.key` (the serving pair: the
loopback addresses and the `kubernetes.default...` names), `sa.key`/`sa.pub` (the RSA pair
that signs and verifies ServiceAccount tokens, kept too), and one kubeconfig per identity,
`<name>.kubeconfig`, with the CA's data, the REST edge's URL, the gRPC address (its
`kemu.io/grpc` extension) and the identity's client certificate: CN its user, O its groups,
as upstream's x509 authenticator reads them. The identities are upstream's: kubeadm's
admin.conf (`kubernetes-admin` in `kubeadm:cluster-admins` since 1.29), the scheduler and
controller-manager's system users, a kubelet's `system:node:<node>` in `system:nodes`, and the
autoscaler and the cloud provider as the kube-system ServiceAccounts their manifests use (the
users kemu's apiserver already names them by: apiserver/endpoints/identity.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kemu.machinery import kubeconfig
from kemu.machinery.certs import KeyPair, issue, new_ca, serving_hosts
from kemu.machinery.user import NODE_USER_PREFIX, NODES_GROUP, UserInfo

CA_NAME: Final = "kubernetes"
"""kubeadm's CA's CommonName."""
SERVING_PAIR: Final = "apiserver"


def _service_account(namespace: str, name: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
    )


ADMIN: Final = UserInfo("kubernetes-admin", ("kubeadm:cluster-admins",))
SUPER_ADMIN: Final = UserInfo("kubernetes-super-admin", ("system:masters",))
"""kubeadm's super-admin.conf (1.29+): in system:masters, which no RBAC binding can take away;
make run's add-ons are written with it (kemu.makerun.addons), as kubeadm writes the
kubeadm:cluster-admins binding with it."""
COMPONENTS: Final[Mapping[str, UserInfo]] = {
    "admin": ADMIN,
    "super-admin": SUPER_ADMIN,
    "scheduler": UserInfo("system:kube-scheduler"),
    "controllermanager": UserInfo("system:kube-controller-manager"),
    "autoscaler": _service_account("kube-system", "cluster-autoscaler"),
    "cloud": _service_account("kube-system", "cloud-controller-manager"),
}
"""Kubeconfig name -> the user its certificate names (a kubelet's: `kubelet_user`)."""


def kubelet_user(node: str) -> UserInfo:
    return UserInfo(NODE_USER_PREFIX + node, (NODES_GROUP,))


@dataclass(frozen=True)
class ClusterPki:
    """Where the files are."""

    dir: Path

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.crt"

    @property
    def serving_cert(self) -> Path:
        return self.dir / f"{SERVING_PAIR}.crt"

    @property
    def serving_key(self) -> Path:
        return self.dir / f"{SERVING_PAIR}.key"

    @property
    def service_account_key(self) -> Path:
        """The ServiceAccount token signing key (kubeadm's sa.key; its public half sa.pub)."""
        return self.dir / "sa.key"

    @property
    def service_account_public_key(self) -> Path:
        return self.dir / "sa.pub"

    def kubeconfig(self, name: str) -> Path:
        return self.dir / f"{name}.kubeconfig"

    def kubelet_serving(self, node: str) -> tuple[Path, Path]:
        """(certificate, key) of `node`'s kubelet serving pair (`write_kubelet_serving`)."""
        return self.dir / f"kubelet-{node}-serving.crt", self.dir / f"kubelet-{node}-serving.key"

    def kubelet_serving_args(self, node: str) -> list[str]:
        """The kubelet's --tls-cert-file and --tls-private-key-file for that pair."""
        cert, key = self.kubelet_serving(node)
        return ["--tls-cert-file", str(cert), "--tls-private-key-file", str(key)]

    def apiserver_args(self) -> list[str]:
        """The apiserver's TLS and ServiceAccount token flags for this PKI (kubeadm's)."""
        return [
            "--tls-cert-file", str(self.serving_cert),
            "--tls-private-key-file", str(self.serving_key),
            "--client-ca-file", str(self.ca_file),
            "--service-account-signing-key-file", str(self.service_account_key),
            "--service-account-key-file", str(self.service_account_public_key),
        ]  # fmt: skip


def _ca(pki: ClusterPki) -> KeyPair:
    key = pki.dir / "ca.key"
    if pki.ca_file.is_file() and key.is_file():
        return KeyPair(pki.ca_file.read_bytes(), key.read_bytes())
    ca = new_ca(CA_NAME)
    ca.write(pki.ca_file, key)
    return ca


def _service_account_keys(pki: ClusterPki) -> None:
    """kubeadm's sa.key and sa.pub: an RSA pair, kept across runs (tokens issued before a
    restart still verify)."""
    if pki.service_account_key.is_file() and pki.service_account_public_key.is_file():
        return
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pki.service_account_key.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    pki.service_account_key.chmod(0o600)
    pki.service_account_public_key.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )


def write_kubelet_serving(pki: ClusterPki, node: str, ips: Sequence[str]) -> tuple[Path, Path]:
    """`node`'s kubelet serving pair, signed by the cluster's CA for the node's addresses `ips`,
    as upstream's kubernetes.io/kubelet-serving signer issues one for a kubelet's CSR (CN
    system:node:<node>, O system:nodes; pkg/kubelet/certificate/kubelet.go
    NewKubeletServerCertificateManager); its files (`ClusterPki.kubelet_serving`)."""
    user = kubelet_user(node)
    pair = issue(_ca(pki), user.name, organizations=user.groups, ips=ips, client=False, server=True)
    cert, key = pki.kubelet_serving(node)
    pair.write(cert, key)
    return cert, key


def write_cluster_pki(
    directory: str | Path,
    *,
    rest_url: str,
    grpc_server: str,
    users: Mapping[str, UserInfo],
    host: str = "127.0.0.1",
) -> ClusterPki:
    """The CA, the apiserver's serving pair for `host` and a kubeconfig per `users` entry
    (name -> user) under `directory` (module docstring)."""
    pki = ClusterPki(Path(directory))
    pki.dir.mkdir(parents=True, exist_ok=True)
    ca = _ca(pki)
    _service_account_keys(pki)
    ips, names = serving_hosts(host)
    serving = issue(ca, "kube-apiserver", ips=ips, dns_names=names, client=False, server=True)
    serving.write(pki.serving_cert, pki.serving_key)
    for name, user in users.items():
        pair = issue(ca, user.name, organizations=user.groups)
        kubeconfig.write(
            pki.kubeconfig(name),
            rest_url,
            grpc_server=grpc_server,
            ca=ca.cert,
            cert=pair.cert,
            key=pair.key,
        )
    return pki
