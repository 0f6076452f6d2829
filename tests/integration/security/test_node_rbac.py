"""`--authorization-mode Node,RBAC` with NodeRestriction, as kubeadm (so kind) runs them, on
real processes over TLS: a kubelet with its own certificate (system:node:<name> in
system:nodes) registers, keeps its Lease and runs the pods bound to it; it reads the secret
of a pod bound to it and not another's (403 with upstream's message); RBAC, not the Node
authorizer, answers for everyone else (a user without a binding refused, system:masters
allowed).

Issue #60's kubelet side: a kubelet with --dra-slice-file publishes its node's ResourceSlices,
prepares a pod's claim (a GET of the claim, never a list) and keeps its identity for the
Version RPC on its node Lease, and a hollow kubelet process of three nodes (its own
certificate's user with RBAC for its shared watches, impersonating each node) does the same for
each node: none of them is refused anything over the run (their logs hold no Forbidden)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery import kubeconfig
from kemu.machinery.errors import Forbidden, NotFound
from kemu.machinery.hollow_kubelet import hollow_kubelet_rbac
from kemu.machinery.pki import ClusterPki, kubelet_user, write_cluster_pki
from kemu.machinery.resourceclaim import DELETE_PROTECTION_FINALIZER
from kemu.machinery.user import UserInfo
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.ports import LOOPBACK, free_port

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODE, OTHER = "n1", "n2"
ROOT = UserInfo("root", ("system:masters",))
NOBODY = UserInfo("nobody", ())
HOLLOW = UserInfo("kemu:hollow-kubelet", ())
"""A hollow kubelet process's certificate: not a node (its nodes are impersonated)."""
HOLLOW_PREFIX: Final = "hollow"
HOLLOW_NODES: Final = tuple(f"{HOLLOW_PREFIX}-{i}" for i in range(3))
DRIVER: Final = "gpu.example.com"
SLICES: Final = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
spec:
  driver: {DRIVER}
  devices:
  - name: gpu-0
  - name: gpu-1
"""
FORBIDDEN: Final = "orbidden"
"""(Forbidden, forbidden: a refusal as a kubelet logs it)"""


@dataclass(frozen=True)
class Secured:
    cluster: Cluster
    pki: ClusterPki

    def client(self, name: str) -> Client:
        config = kubeconfig.load(self.pki.kubeconfig(name))
        return Client(config.grpc_server, tls=config.tls, timeout=10)


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    with Cluster(tmp_path_factory.mktemp("node-rbac")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        port, rest_port = free_port(), free_port()
        users = {
            "root": ROOT,
            "nobody": NOBODY,
            f"kubelet-{NODE}": kubelet_user(NODE),
            f"kubelet-{OTHER}": kubelet_user(OTHER),
            "hollow": HOLLOW,
        }
        pki = write_cluster_pki(
            c.root / "pki",
            rest_url=f"https://{LOOPBACK}:{rest_port}",
            grpc_server=f"{LOOPBACK}:{port}",
            users=users,
        )
        args = ["--etcd-servers", c.etcd_servers, "--port", str(port)]
        args += ["--rest-port", str(rest_port), *pki.apiserver_args()]
        args += ["--authorization-mode", "Node,RBAC"]
        args += ["--enable-admission-plugins", "NodeRestriction"]
        args += ["--disable-admission-plugins", "ServiceAccount"]  # (no controller-manager)
        c.start_component("apiserver", "apiserver", args, port=port)
        slices = Path(c.root) / "slices.yaml"
        slices.write_text(SLICES)
        for node in (NODE, OTHER):
            c.start_component(
                "kubelet",
                f"kubelet-{node}",
                [
                    "--kubeconfig", str(pki.kubeconfig(f"kubelet-{node}")),
                    "--node-name", node,
                    "--capacity", "cpu=4,memory=8Gi,pods=110",
                    "--root-dir", str(c.root / f"kubelet-{node}"),
                    "--dra-slice-file", str(slices),
                ],
            )  # fmt: skip
        yield Secured(c, pki)


def _pod(name: str, node: str, secret: str) -> types_pb2.Pod:
    pod = make_pod(name).namespace("default").obj()
    pod.spec.node_name = node
    pod.spec.volumes.add(name="s").secret.secret_name = secret
    return pod


async def test_s_authz_node_1_kubelets_run_their_pods_under_node_and_rbac(
    secured: Secured,
) -> None:
    async with secured.client("root") as root:
        for secret in ("mine", "theirs"):
            obj = types_pb2.Secret(metadata=types_pb2.ObjectMeta(name=secret, namespace="default"))
            obj.string_data["k"] = "v"
            await root.create(obj)
        await root.create(_pod("on-n1", NODE, "mine"))
        await root.create(_pod("on-n2", OTHER, "theirs"))

        async def running() -> bool:
            for name in ("on-n1", "on-n2"):
                pod = await root.get(types_pb2.Pod, name, "default")
                assert pod.status.phase == "Running", (name, pod.status.phase)
            for node in (NODE, OTHER):
                lease = await root.get(types_pb2.Lease, node, "kube-node-lease")
                assert lease.spec.holder_identity == node
            return True

        await eventually(running, timeout=60)
    async with secured.client(f"kubelet-{NODE}") as kubelet:
        mine = await kubelet.get(types_pb2.Secret, "mine", "default")
        assert mine.metadata.name == "mine"
        with pytest.raises(Forbidden) as refused:
            await kubelet.get(types_pb2.Secret, "theirs", "default")
        assert refused.value.message == (
            'secrets "theirs" is forbidden: User "system:node:n1" cannot get resource '
            '"secrets" in API group "" in the namespace "default": no relationship found '
            "between node 'n1' and this object"
        )
        with pytest.raises(Forbidden) as refused:
            await kubelet.get(types_pb2.Node, OTHER, "")
        assert "node 'n1' cannot read 'n2', only its own Node object" in refused.value.message
    async with secured.client("root") as root:
        other = await root.get(types_pb2.Node, OTHER, "")
    other.metadata.labels["stolen"] = "yes"
    async with secured.client(f"kubelet-{NODE}") as kubelet:
        with pytest.raises(Forbidden) as refused:
            await kubelet.update(other)
        assert 'node "n1" is not allowed to modify node "n2"' in refused.value.message
    async with secured.client("nobody") as nobody:
        with pytest.raises(Forbidden) as refused:
            await nobody.list(types_pb2.Pod, "default")
        assert 'User "nobody" cannot list resource "pods"' in refused.value.message


async def test_s_authz_node_2_a_batch_is_authorized_item_by_item(secured: Secured) -> None:
    """UpdateBatch (kemu's, issue #59: a hollow kubelet's Leases in one call) authorizes each
    item as its own Update would be: a kubelet renews its own Lease and is refused another
    node's, in one call."""
    async with secured.client("root") as root:
        leases = [await root.get(types_pb2.Lease, n, "kube-node-lease") for n in (NODE, OTHER)]
    for lease in leases:
        lease.spec.renew_time.seconds += 1  # (a renewal: an update that changes nothing is none)
    async with secured.client(f"kubelet-{NODE}") as kubelet:
        mine, theirs = await kubelet.update_batch(leases)
    assert isinstance(mine, types_pb2.Lease)
    assert mine.metadata.resource_version != leases[0].metadata.resource_version
    assert isinstance(theirs, Forbidden)
    assert 'User "system:node:n1" cannot update resource "leases"' in theirs.message


async def _slices_of(root: Client, node: str) -> list[types_pb2.ResourceSlice]:
    listed = await root.list(types_pb2.ResourceSlice, field_selector=f"spec.nodeName={node}")
    return list(listed.items)


async def _allocated_to(
    root: Client, claim: types_pb2.ResourceClaim, pod: types_pb2.Pod, node: str
) -> None:
    """The scheduler's PreBind: the finalizer, the allocation and reservedFor, then the
    binding."""
    claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
    claim = await root.update(claim)
    claim.status.allocation.devices.results.add(
        request="gpu", driver=DRIVER, pool=node, device="gpu-1"
    )
    claim.status.reserved_for.add(resource="pods", name=pod.metadata.name, uid=pod.metadata.uid)
    await root.update_status(claim)
    await root.bind(pod.metadata.namespace, pod.metadata.name, node)


async def _pod_with_claim(root: Client, name: str) -> types_pb2.Pod:
    claim = types_pb2.ResourceClaim()
    claim.metadata.name, claim.metadata.namespace = name, "default"
    claim.spec.devices.requests.add(name="gpu").exactly.device_class_name = DRIVER
    await root.create(claim)
    spec = make_pod(name).namespace("default").obj()
    spec.spec.resource_claims.add(name="gpu", resource_claim_name=name)
    return await root.create(spec)


async def _runs(root: Client, name: str) -> None:
    async def running() -> bool:
        pod = await root.get(types_pb2.Pod, name, "default")
        assert pod.status.phase == "Running", (name, pod.status.phase)
        return True

    await eventually(running, timeout=60)


async def _kubelets_listed(root: Client, nodes: tuple[str, ...]) -> None:
    """The Version RPC lists a kubelet for each node (its Lease carries its identity)."""

    async def listed() -> bool:
        info = await root.version()
        kubelets = {c.identity: c for c in info.components if c.component == "kubelet"}
        for node in nodes:
            assert node in kubelets, sorted(kubelets)
            assert kubelets[node].emulated_version == "1.37"
            assert kubelets[node].feature_gates
        return True

    await eventually(listed, timeout=30)


async def test_s_authz_node_3_a_kubelet_publishes_its_slices_and_prepares_a_claim(
    secured: Secured,
) -> None:
    """Its slices (created as its node, listed and watched with spec.nodeName=<node>), a pod's
    claim prepared (the claim got, never listed), its identity on its node Lease: nothing of
    it refused."""
    async with secured.client("root") as root:

        async def published() -> types_pb2.ResourceSlice:
            (s,) = await _slices_of(root, NODE)
            return s

        s = await eventually(published, timeout=30)
        assert [d.name for d in s.spec.devices] == ["gpu-0", "gpu-1"]
        assert s.metadata.owner_references[0].name == NODE
        pod = await _pod_with_claim(root, "with-gpu")
        claim = await root.get(types_pb2.ResourceClaim, "with-gpu", "default")
        await _allocated_to(root, claim, pod, NODE)
        await _runs(root, "with-gpu")
        await _kubelets_listed(root, (NODE, OTHER))
        lease = await root.get(types_pb2.Lease, NODE, "kube-node-lease")
        assert lease.spec.holder_identity == NODE
        assert lease.spec.lease_duration_seconds == 40
        assert lease.metadata.owner_references[0].kind == "Node"
        with pytest.raises(NotFound):
            await root.get(types_pb2.Lease, f"kubelet-{NODE}", "kube-system")
    logs = secured.cluster.logs()
    for node in (NODE, OTHER):
        assert FORBIDDEN not in logs[f"kubelet-{node}"], logs[f"kubelet-{node}"]


async def test_s_authz_node_4_a_hollow_kubelets_nodes_each_act_as_their_node(
    secured: Secured,
) -> None:
    """A hollow kubelet of three nodes: each registers, renews its Lease, publishes its slices
    and runs and removes its pods (one with a claim) as its node's user; the Version RPC lists
    the process's kubelet; nothing refused."""
    async with secured.client("root") as root:
        for obj in hollow_kubelet_rbac(HOLLOW.name, HOLLOW_NODES):
            await root.create(obj)
        secured.cluster.start_component(
            "kubelet",
            "kubelet-hollow",
            [
                "--kubeconfig", str(secured.pki.kubeconfig("hollow")),
                "--nodes", str(len(HOLLOW_NODES)),
                "--node-name-prefix", HOLLOW_PREFIX,
                "--capacity", "cpu=1,memory=1Gi,pods=10",
                "--root-dir", "",
                "--dra-slice-file", str(Path(secured.cluster.root) / "slices.yaml"),
            ],
        )  # fmt: skip

        async def published() -> bool:
            for node in HOLLOW_NODES:
                assert len(await _slices_of(root, node)) == 1, node
                lease = await root.get(types_pb2.Lease, node, "kube-node-lease")
                assert lease.spec.holder_identity == node
            return True

        await eventually(published, timeout=60)
        for node in HOLLOW_NODES[1:]:
            await root.create(make_pod(f"on-{node}").namespace("default").node(node).obj())
        pod = await _pod_with_claim(root, "hollow-gpu")
        claim = await root.get(types_pb2.ResourceClaim, "hollow-gpu", "default")
        await _allocated_to(root, claim, pod, HOLLOW_NODES[0])
        for name in ("hollow-gpu", *(f"on-{n}" for n in HOLLOW_NODES[1:])):
            await _runs(root, name)
        await _kubelets_listed(root, HOLLOW_NODES[:1])
        for node in HOLLOW_NODES[1:]:
            await root.delete(types_pb2.Pod, f"on-{node}", "default", grace_period_seconds=1)

        async def removed() -> bool:
            names = {p.metadata.name for p in (await root.list(types_pb2.Pod, "default")).items}
            return not names & {f"on-{n}" for n in HOLLOW_NODES[1:]}

        await eventually(removed, timeout=30)
    log = secured.cluster.logs()["kubelet-hollow"]
    assert FORBIDDEN not in log, log
