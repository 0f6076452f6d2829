"""README's StatefulSet example (examples/statefulset.yaml, issue #34) on real processes, as a
user runs it: `kemuctl apply -f` against a cluster of the default controllers (the
PersistentVolume controller and the simulated CSI provisioner among them), the scheduler's
default profile (VolumeBinding) at kemu's default version (NominatedNodeNameForExpectation on),
two kubelets, on the virtual clock at rate max (the class's 10 s provisioning costs no wall
time). Every pod version is recorded by a watch; the claims end Bound to volumes provisioned on
their pods' nodes, and each pod showed its node as nominatedNodeName while its volume was made
(KEP-5278)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Final

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.interface import DELETED
from kemu.machinery.storage import ANN_DYNAMICALLY_PROVISIONED, ANN_SELECTED_NODE
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually
from kemu.testing.invariants import record_pods
from kemu.testing.namespaces import create_namespace
from kemu.testing.processes import REPO_ROOT, python_env, run_python_module

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

EXAMPLE: Final = Path(REPO_ROOT) / "examples" / "statefulset.yaml"
NODES: Final = ("store-a", "store-b")
HOSTNAME: Final = "kubernetes.io/hostname"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("storage-example"), clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        c.start_controllermanager()
        for node in NODES:
            c.start_kubelet(node, capacity={"cpu": "4", "memory": "8Gi", "pods": "110"})
        yield c


@pytest.fixture
async def api(cluster: Cluster, rate_max: None) -> AsyncIterator[Client]:
    async with Client(cluster.server, timeout=10.0) as client:
        yield client


async def kemuctl(cluster: Cluster, *args: str) -> str:
    env = python_env({"KEMU_SERVER": cluster.server})
    done = await anyio.to_thread.run_sync(lambda: run_python_module("kemu.ctl", args, env=env))
    assert done.returncode == 0, done.stderr
    return done.stdout


async def test_the_statefulset_example_comes_up_with_its_volumes_provisioned(
    cluster: Cluster, api: Client
) -> None:
    ns = await create_namespace(api, "web")
    async with record_pods(api, ns) as history:
        await kemuctl(cluster, "apply", "-n", ns, "-f", str(EXAMPLE))

        async def ready() -> bool:
            s = await api.get(types_pb2.StatefulSet, "web", ns)
            assert s.status.ready_replicas == 3, s.status
            return True

        await eventually(ready, timeout=120)
        await history.sync(api, timeout=30)

    for i in range(3):
        pod = await api.get(types_pb2.Pod, f"web-{i}", ns)
        node = pod.spec.node_name
        assert node in NODES
        claim = await api.get(types_pb2.PersistentVolumeClaim, f"www-web-{i}", ns)
        assert claim.status.phase == "Bound"
        assert claim.metadata.annotations[ANN_SELECTED_NODE] == node
        pv = await api.get(types_pb2.PersistentVolume, claim.spec.volume_name)
        assert pv.metadata.name == f"pvc-{claim.metadata.uid}"
        assert pv.status.phase == "Bound"
        assert pv.metadata.annotations[ANN_DYNAMICALLY_PROVISIONED] == "kemu.io/simulated"
        [term] = pv.spec.node_affinity.required.node_selector_terms
        [req] = term.match_expressions
        assert (req.key, list(req.values)) == (HOSTNAME, [node])
        # KEP-5278: while PreBind waited for the volume, the pod showed its node as the
        # nominated one; the binding cleared it.
        recorded = [v for uid in history.uids_of(f"web-{i}") for v in history.versions[uid]]
        assert all(v.type != DELETED for v in recorded), f"web-{i} was deleted"
        waiting = [v.pod for v in recorded if not v.pod.spec.node_name]
        assert any(v.status.nominated_node_name == node for v in waiting), [
            v.status.nominated_node_name for v in waiting
        ]
        assert not pod.status.nominated_node_name
        reasons = [
            e.reason
            for e in (await api.list(types_pb2.Event, ns)).items
            if e.involved_object.name == f"www-web-{i}"
        ]
        assert "Provisioning" in reasons and "ProvisioningSucceeded" in reasons, reasons

    table = await kemuctl(cluster, "get", "pvc", "-n", ns)
    assert table.count("Bound") == 3, table
