"""A kubelet may write only what is its own (issue #60 item 3), on real processes.

NodeRestriction (`--enable-admission-plugins NodeRestriction`): a real kubelet, claiming its
node's user system:node:<name> in system:nodes, registers its Node, renews its Lease and
reports its pod's status through the plugin; the same user is refused another node's status
and Lease and another node's pod's status, 403 Forbidden with upstream's message on both
edges (gRPC PERMISSION_DENIED carrying it, REST a Status through kubectl's impersonation
headers).

The Node authorizer: its graph kept by watch caches of a real etcd that a real apiserver
writes (the apiserver's WatchCache, in the test's process: `--authorization-mode` comes with
issue #60's RBAC work, which wires the authorizer into the edges): a node cannot get a secret
that no pod of its own references, can once a pod using it is bound to it, and cannot after
that pod is gone.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Iterator

import anyio
import pytest

from apiserver.authorization.authorizer import Verdict
from apiserver.authorization.node import NodeAuthorizer
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import Forbidden
from kemu.machinery.kinds import kind_for_resource
from kemu.machinery.rbac_rules import Attributes
from kemu.machinery.user import node_user
from kemu.testing.builders import make_lease, make_node, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.eventually import eventually
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NODE = "nr-n1"
OTHER = "nr-n2"
TIMEOUT = 30.0


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("node-restriction")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True, extra_args=["--enable-admission-plugins", "NodeRestriction"])
        c.start_kubelet(NODE)
        yield c


@pytest.fixture
async def admin(cluster: Cluster) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as client:
        yield client


async def test_a_kubelet_writes_its_own_node_lease_and_pods_and_not_anothers(
    cluster: Cluster, admin: Client
) -> None:
    # the kubelet itself, as system:node:nr-n1, under NodeRestriction
    async def ready() -> bool:
        node = await admin.get(types_pb2.Node, NODE)
        assert any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
        lease = await admin.get(types_pb2.Lease, NODE, "kube-node-lease")
        return lease.spec.holder_identity == NODE

    await eventually(ready, timeout=TIMEOUT)
    ns = await create_namespace(admin, "nr")
    await admin.create(make_pod("mine").namespace(ns).node(NODE).obj())

    async def running() -> bool:
        pod = await admin.get(types_pb2.Pod, "mine", ns)
        return pod.status.phase == "Running"

    await eventually(running, timeout=TIMEOUT)

    other = await admin.create(make_node(OTHER).obj())
    theirs = await admin.create(make_pod("theirs").namespace(ns).node(OTHER).obj())
    async with Client(cluster.server, timeout=10.0, user=node_user(NODE)) as kubelet:
        other.status.phase = "Running"
        with pytest.raises(Forbidden) as e:
            await kubelet.update_status(other)
        assert e.value.message == (
            f'nodes "{OTHER}" is forbidden: node "{NODE}" is not allowed to modify node "{OTHER}"'
        )
        with pytest.raises(Forbidden) as e:
            await kubelet.create(make_lease(OTHER, "kube-node-lease"))
        assert e.value.message == (
            f'leases.coordination.k8s.io "{OTHER}" is forbidden: can only access node lease '
            "with the same name as the requesting node"
        )
        theirs.status.phase = "Failed"
        with pytest.raises(Forbidden) as e:
            await kubelet.update_status(theirs)
        assert e.value.message == (
            f'pods "theirs" is forbidden: node "{NODE}" can only update pod status for pods '
            "with spec.nodeName set to itself"
        )
        # its own Node: a label of its own namespace yes, a taint no
        own = await kubelet.get(types_pb2.Node, NODE)
        own.metadata.labels["node.kubernetes.io/pool"] = "a"
        own = await kubelet.update(own)
        own.spec.taints.add(key="mine", effect="NoSchedule")
        with pytest.raises(Forbidden) as e:
            await kubelet.update(own)
        assert e.value.message == (
            f'nodes "{NODE}" is forbidden: node "{NODE}" is not allowed to modify taints'
        )
    # nothing of it was written
    assert not (await admin.get(types_pb2.Pod, "theirs", ns)).status.phase == "Failed"
    assert not (await admin.get(types_pb2.Node, NODE)).spec.taints


async def test_the_rest_edge_answers_a_kubelet_403_with_upstreams_status(cluster: Cluster) -> None:
    request = urllib.request.Request(
        f"{cluster.rest_url}/api/v1/nodes/{OTHER}-rest/status",
        data=json.dumps({"status": {"phase": "Running"}}).encode(),
        method="PATCH",
        headers={
            "Content-Type": "application/merge-patch+json",
            "Impersonate-User": f"system:node:{NODE}",
            "Impersonate-Group": "system:nodes",
        },
    )
    async with Client(cluster.server, timeout=10.0) as admin:
        await admin.create(make_node(f"{OTHER}-rest").obj())

    def patch() -> tuple[int, dict[str, object]]:
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read())

    code, status = await anyio.to_thread.run_sync(patch)
    assert code == 403
    assert status["reason"] == "Forbidden"
    assert status["message"] == (
        f'nodes "{OTHER}-rest" is forbidden: node "{NODE}" is not allowed to modify node '
        f'"{OTHER}-rest"'
    )


async def test_the_node_authorizer_follows_the_watch_caches_of_a_real_apiserver(
    cluster: Cluster, admin: Client
) -> None:
    store = EtcdStore([cluster.etcd.url])
    try:
        caches = {r: WatchCache(store, kind_for_resource(r)) for r in ("pods", "persistentvolumes")}
        authorizer = NodeAuthorizer.from_caches(caches, ())
        ns = await create_namespace(admin, "na")
        secret = Attributes(node_user(NODE), "get", "secrets", namespace=ns, name="creds")

        def allowed() -> bool:
            return authorizer.authorize(secret).verdict is Verdict.ALLOW

        async with anyio.create_task_group() as tg:
            for cache in caches.values():
                await tg.start(cache.run)
            pod = make_pod("uses-creds").namespace(ns).obj()
            pod.spec.volumes.add(name="creds").secret.secret_name = "creds"
            await admin.create(pod)
            elsewhere = make_pod("elsewhere").namespace(ns).node(OTHER).obj()
            elsewhere.spec.volumes.add(name="creds").secret.secret_name = "creds"
            await admin.create(elsewhere)

            async def graph_has_elsewhere() -> bool:
                other = Attributes(node_user(OTHER), "get", "secrets", namespace=ns, name="creds")
                return authorizer.authorize(other).allowed

            await eventually(graph_has_elsewhere, timeout=TIMEOUT)
            assert not allowed()  # its pod is not bound to it yet
            await admin.bind(ns, "uses-creds", NODE)

            async def granted() -> bool:
                return allowed()

            await eventually(granted, timeout=TIMEOUT)
            await admin.delete(types_pb2.Pod, "uses-creds", ns, grace_period_seconds=0)

            async def revoked() -> bool:
                return not allowed()

            await eventually(revoked, timeout=TIMEOUT)
            tg.cancel_scope.cancel()
    finally:
        await store.close()


async def test_a_hollow_kubelet_runs_and_deletes_its_nodes_pods_under_node_restriction(
    cluster: Cluster, admin: Client
) -> None:
    """Each hollow node writes as its own user: its status, Lease, pods' status and, once a
    deleted pod has stopped, the pod's removal (NodeRestriction: only pods bound to it)."""
    prefix = "nr-hollow"
    cluster.start_component(
        "kubelet",
        f"kubelet-{prefix}",
        [
            "--server", cluster.server,
            "--nodes", "2",
            "--node-name-prefix", prefix,
            "--capacity", "cpu=1,memory=1Gi,pods=10",
            "--root-dir", "",
        ],
    )  # fmt: skip
    ns = await create_namespace(admin, "nrh")
    names = [f"{prefix}-{i}" for i in range(2)]
    for i, name in enumerate(names):
        await admin.create(make_pod(f"p{i}").namespace(ns).node(name).obj())

    async def running() -> bool:
        for i in range(2):
            pod = await admin.get(types_pb2.Pod, f"p{i}", ns)
            assert pod.status.phase == "Running", (pod.metadata.name, pod.status.phase)
        return True

    await eventually(running, timeout=TIMEOUT)
    for i in range(2):
        await admin.delete(types_pb2.Pod, f"p{i}", ns, grace_period_seconds=1)

    async def removed() -> bool:
        pods = await admin.list(types_pb2.Pod, ns)
        return not pods.items

    await eventually(removed, timeout=TIMEOUT)
    assert "can only delete pods" not in cluster.logs()[f"kubelet-{prefix}"]
