"""DRA end to end on real processes, with the scheduler's DynamicResources plugin
(wave/dra-sched): a kubelet's published devices are allocated by the scheduler, the
kubelet prepares them and answers their binding conditions, the resourceclaim controller
generates and releases the claims (S-DRA-NODE-E2E-1, 2).

Needs the DRA API (wave/dra-api) and the scheduler plugin (wave/dra-sched): skipped until
they are merged."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import NotFound
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.namespaces import create_namespace

pytestmark = [pytest.mark.integration, pytest.mark.anyio]
pytest.importorskip(
    "kemu.machinery.validation.resource", reason="the apiserver validates no resource.k8s.io kind"
)
pytest.importorskip(
    "kemu.scheduling.plugins.dynamic_resources", reason="no DynamicResources scheduler plugin"
)

DRIVER: Final = "gpu.example.com"
SLICES: Final = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  annotations:
    kubelet.kemu.io/prepare-delay: 500ms
    kubelet.kemu.io/binding-delay: 1s
spec:
  driver: {DRIVER}
  devices:
  - name: attached-0
    attributes:
      kind: {{string: attached}}
    bindingConditions: [Attached]
    bindingFailureConditions: [AttachFailed]
  - name: plain-0
    attributes:
      kind: {{string: plain}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("dra-e2e")
    path = Path(root) / "slices.yaml"
    path.write_text(SLICES)
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler()
        c.start_controllermanager(
            extra_args=["--controllers", "garbagecollector,resourceclaim-controller"],
            cluster_cidr=None,
        )
        c.start_kubelet(
            "n1", extra_args=["--dra-slice-file", str(path), "--pod-startup-delay", "100ms"]
        )
        yield c


async def _class_and_template(c: Client, ns: str, kind: str) -> None:
    dc = types_pb2.DeviceClass()
    dc.metadata.name = f"gpu-{kind}"
    dc.spec.selectors.add().cel.expression = f'device.driver == "{DRIVER}"'
    await c.create(dc)
    t = types_pb2.ResourceClaimTemplate()
    t.metadata.name, t.metadata.namespace = "gpu", ns
    r = t.spec.spec.devices.requests.add(name="gpu")
    r.exactly.device_class_name = dc.metadata.name
    r.exactly.selectors.add().cel.expression = f'device.attributes["{DRIVER}"].kind == "{kind}"'
    await c.create(t)


async def _run(c: Client, ns: str, kind: str) -> tuple[types_pb2.Pod, types_pb2.ResourceClaim]:
    await _class_and_template(c, ns, kind)
    spec = make_pod("job").namespace(ns).obj()
    spec.metadata.annotations["kubelet.kemu.io/run-duration"] = "1s"
    spec.spec.resource_claims.add(name="gpu", resource_claim_template_name="gpu")
    await c.create(spec)

    async def running() -> types_pb2.Pod:
        got = await c.get(types_pb2.Pod, "job", ns)
        assert got.status.phase in ("Running", "Succeeded"), got.status
        return got

    pod = await eventually(running, timeout=20)
    assert pod.spec.node_name == "n1"
    name = pod.status.resource_claim_statuses[0].resource_claim_name
    claim = await c.get(types_pb2.ResourceClaim, name, ns)
    return pod, claim


async def _released(c: Client, ns: str, name: str) -> None:
    async def gone() -> bool:
        try:
            await c.get(types_pb2.ResourceClaim, name, ns)
        except NotFound:
            return True
        return False

    await eventually(gone, timeout=10)


async def test_the_scheduler_allocates_a_published_device_the_kubelet_prepares(cluster):
    """S-DRA-NODE-E2E-1."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-plain")
        pod, claim = await _run(c, ns, "plain")
        (result,) = claim.status.allocation.devices.results
        assert (result.driver, result.pool, result.device) == (DRIVER, "n1", "plain-0")
        assert [r.uid for r in claim.status.reserved_for] == [pod.metadata.uid]
        await _released(c, ns, claim.metadata.name)


async def test_the_scheduler_waits_for_the_binding_conditions_the_kubelet_sets(cluster):
    """S-DRA-NODE-E2E-2: the pod is bound once the kubelet's driver reported Attached."""
    async with Client(cluster.server, timeout=10.0) as c:
        ns = await create_namespace(c, "dra-attached")
        _, claim = await _run(c, ns, "attached")
        (result,) = claim.status.allocation.devices.results
        assert result.device == "attached-0"
        (dev,) = claim.status.devices
        assert [(cond.type, cond.status) for cond in dev.conditions] == [("Attached", "True")]
        await _released(c, ns, claim.metadata.name)
