"""Extended resources backed by DRA (DRAExtendedResource, GA at 1.37) on real processes:
etcd, apiserver, the scheduler at 1.37 and one kubelet publishing two devices
(--dra-slice-file), whose node has no `example.com/gpu` in its allocatable.

S-DRA-EXT-1: a pod requesting `example.com/gpu: 1`, with a DeviceClass whose
extendedResourceName is example.com/gpu, passes NodeResourcesFit (the node lacks the resource,
a class backs it) and gets a device through the scheduler's special claim: created in PreBind
as `<pod>-extended-resources-*`, annotated resource.kubernetes.io/extended-resource-claim
"true", owned by the pod, allocated and reserved for it, named with its request mapping in
pod.status.extendedResourceClaimStatus; the kubelet prepares it and runs the pod (upstream
pkg/scheduler/framework/plugins/dynamicresources/extendedresources.go).
S-DRA-EXT-2: a resource no class backs and the node lacks: "Insufficient example.com/fpga"
(NodeResourcesFit, as before).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.resourceclaim import (
    DELETE_PROTECTION_FINALIZER,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION,
)
from kemu.testing import Cluster, dra
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT: Final = 15.0
DRIVER: Final = "gpu.kemu.test"
GPU: Final = "example.com/gpu"
SLICE: Final = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
spec:
  driver: {DRIVER}
  devices:
  - name: gpu-0
  - name: gpu-1
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("dra-extended")
    (Path(root) / "slice.yaml").write_text(SLICE)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        yield c


async def gpu_node(s: Scenario) -> str:
    return await dra.kubelet_publishing(s, s.cluster.root / "slice.yaml", within=TIMEOUT)


def requesting(s: Scenario, name: str, resource: str) -> types_pb2.Pod:
    pod = s.pod(name).obj()
    c = pod.spec.containers[0]
    c.resources.requests[resource] = "1"
    c.resources.limits[resource] = "1"
    return pod


async def test_s_dra_ext_1_extended_resource_through_the_special_claim(cluster: Cluster) -> None:
    """S-DRA-EXT-1."""
    async with Scenario.open(cluster, "dra-ext-1") as s:
        node = await gpu_node(s)
        dc = dra.device_class(f"{s.ns}.gpu", selectors=[f'device.driver == "{DRIVER}"'])
        dc.spec.extended_resource_name = GPU
        await s.client.create(dc)
        await s.create(requesting(s, "p", GPU))
        assert await s.wait_bound("p", timeout=TIMEOUT) == node

        async def running() -> types_pb2.Pod:
            p = await s.get("p")
            assert p.status.phase == "Running", p.status.phase
            return p

        pod = await s.eventually(running, timeout=TIMEOUT)
        status = pod.status.extended_resource_claim_status
        name = status.resource_claim_name
        assert name.startswith("p-extended-resources-"), status
        [mapping] = status.request_mappings
        assert (mapping.container_name, mapping.resource_name, mapping.request_name) == (
            pod.spec.containers[0].name,
            GPU,
            "container-0-request-0",
        )
        claim = await s.client.get(types_pb2.ResourceClaim, name, s.ns)
        assert claim.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] == "true"
        assert DELETE_PROTECTION_FINALIZER in claim.metadata.finalizers
        [owner] = claim.metadata.owner_references
        assert (owner.kind, owner.uid, owner.controller) == ("Pod", pod.metadata.uid, True)
        [req] = claim.spec.devices.requests
        assert (req.name, req.exactly.device_class_name, req.exactly.count) == (
            "container-0-request-0",
            dc.metadata.name,
            1,
        )
        [result] = claim.status.allocation.devices.results
        assert (result.driver, result.pool) == (DRIVER, node)
        assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]


async def test_s_dra_ext_2_unbacked_extended_resource_is_insufficient(cluster: Cluster) -> None:
    """S-DRA-EXT-2."""
    async with Scenario.open(cluster, "dra-ext-2") as s:
        await gpu_node(s)
        await s.create(requesting(s, "p", "example.com/fpga"))
        cond = await s.wait_unschedulable("p", timeout=TIMEOUT)
        assert "Insufficient example.com/fpga" in cond.message, cond.message
