"""The storage admission plugins on real processes (issue #58 item 1), with no
controller-manager running, so that what the create response holds is the apiserver's:
- DefaultStorageClass: a claim of no class gets the default StorageClass (kubectl 1.32 on the
  REST edge and the gRPC edge), the newest of several from 1.26; an apiserver emulating 1.25 on
  the same etcd refuses the claim while two classes are default (upstream plugin/pkg/admission/
  storage/storageclass/setdefault/admission.go, pkg/volume/util GetDefaultClass);
- StorageObjectInUseProtection: a new claim has kubernetes.io/pvc-protection, a new volume
  kubernetes.io/pv-protection (plugin/pkg/admission/storage/storageobjectinuseprotection)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import Forbidden
from kemu.testing.cluster import Cluster
from kemu.testing.names import unique_name
from kemu.testing.namespaces import create_namespace
from kemu.testing.ports import LOOPBACK
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl
from tests.unit.controllermanager.pv_objects import claim, storage_class

pytestmark = [
    pytest.mark.integration,
    pytest.mark.anyio,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]

APISERVER_1_25 = "apiserver-1-25"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("default-sc")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_apiserver(name=APISERVER_1_25, emulated_version="1.25")
        c.write_kubeconfig()
        yield c


def test_s_sto_pro_1_new_claims_and_volumes_carry_their_protection_finalizer(
    cluster: Cluster,
) -> None:
    kubectl = Kubectl(cluster)
    ns = kubectl.namespace("pro")
    claim_yaml = (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\n"
        "spec: {storageClassName: '', accessModes: [ReadWriteOnce],"
        " resources: {requests: {storage: 1Gi}}}\n"
    )
    volume_yaml = (
        f"apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {unique_name('pv')}}}\n"
        "spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce],"
        " hostPath: {path: /tmp/pv}}\n"
    )
    finalizers = "jsonpath={.metadata.finalizers}"
    made = kubectl.run("create", "-n", ns, "-f", "-", "-o", finalizers, stdin=claim_yaml)
    assert made.stdout == '["kubernetes.io/pvc-protection"]'
    made = kubectl.run("create", "-f", "-", "-o", finalizers, stdin=volume_yaml)
    assert made.stdout == '["kubernetes.io/pv-protection"]'


def kubectl_claim_class(kubectl: Kubectl, ns: str, name: str) -> str:
    """Creates a claim of no class with kubectl; the class of the create's response."""
    manifest = (
        f"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}}}\n"
        "spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n"
    )
    done = kubectl.run(
        "create", "-n", ns, "-f", "-", "-o", "jsonpath={.spec.storageClassName}", stdin=manifest
    )
    return done.stdout


async def test_s_sto_dsc_1_a_claim_of_no_class_gets_the_newest_default_class_and_1_25_refuses(
    cluster: Cluster,
) -> None:
    kubectl = Kubectl(cluster)
    old, new = unique_name("a-old"), unique_name("b-new")
    async with Client(cluster.server, timeout=10.0) as client:
        ns = await create_namespace(client, "dsc")
        # no default class yet: the claim keeps no class
        assert kubectl_claim_class(kubectl, ns, "before") == ""
        await client.create(storage_class(old, default=True))
        assert kubectl_claim_class(kubectl, ns, "one-default") == old
        await client.create(storage_class(new, default=True))
        assert kubectl_claim_class(kubectl, ns, "two-defaults") == new
        # a claim asking for no class ("") is left alone, on the gRPC edge too
        empty = await client.create(claim("empty", "1Gi", storage_class="", namespace=ns))
        assert empty.spec.HasField("storage_class_name") and empty.spec.storage_class_name == ""
        stored = await client.get(types_pb2.PersistentVolumeClaim, "two-defaults", ns)
        assert stored.spec.storage_class_name == new
    server_1_25 = f"{LOOPBACK}:{cluster.component(APISERVER_1_25).port}"
    async with Client(server_1_25, timeout=10.0) as client:
        with pytest.raises(Forbidden) as refused:
            await client.create(claim("at-1-25", "1Gi", namespace=ns))
        assert "Internal error occurred: 2 default StorageClasses were found" in str(refused.value)
        # with one default left, 1.25 defaults the claim too
        await client.delete(types_pb2.StorageClass, new)
        kept = await client.create(claim("at-1-25", "1Gi", namespace=ns))
        assert kept.spec.storage_class_name == old
