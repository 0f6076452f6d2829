"""The autoscaler with devices (upstream cluster-autoscaler's DRA support), on real processes:
etcd, the apiserver, the scheduler (DynamicResources), the controller-manager (resourceclaim
controller), the cloud with `gpu` (min 0, max 2; its nodes' kubelets publish four devices of
gpu.example.com through the group's resourceSlices and --dra-slice-file) and the autoscaler at
1.37, on the virtual clock at rate max. One story, in order:

- S-CA-DRA-3: a pod whose claim asks for two GPUs scales `gpu` up from zero (its template
  node carries the group's slices), and runs on the new node with its claim allocated there;
- S-CA-DRA-5: a claim for five GPUs fits no group: NotTriggerScaleUp ("cannot allocate all
  claims"), no scale-up;
- S-CA-DRA-7: the node's devices half allocated (2 of 4): NotUnderutilized, by its devices
  alone (the pod's CPU is 5 % of the node's);
- S-CA-DRA-9 (kubernetes#125491's device form): the first pod gone, a pod in PreBind (nominated
  to the node, not bound, its claim allocated one of the node's devices: a scheduler's binding
  cycle stood in for by writes) keeps the node: BlockedByPod;
- S-CA-DRA-8: its claim released, the node's devices are free: the node is scaled down."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.errors import Conflict
from kemu.machinery.virtual_time import ClockMode
from kemu.testing import Cluster, eventually, make_pod
from kemu.testing.cluster_time import elapse
from kemu.testing.namespaces import create_namespace
from tests.integration.autoscaler.autoscaler_env import (
    Autoscalers,
    cloud_cluster,
    group_nodes,
    nominate,
    open_clients,
    pod_events,
    recorded_pod_events,
    two_more_loops,
    unschedulable,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

GROUP = "gpu"
DRIVER = "gpu.example.com"
UNNEEDED = 2.0
CONFIG = f"""
nodeGroups:
- name: {GROUP}
  minSize: 0
  maxSize: 2
  template:
    capacity: {{cpu: "2", memory: 4Gi, pods: "20"}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
  resourceSlices:
  - apiVersion: resource.k8s.io/v1
    kind: ResourceSlice
    spec:
      driver: {DRIVER}
      devices: [{{name: gpu-0}}, {{name: gpu-1}}, {{name: gpu-2}}, {{name: gpu-3}}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with cloud_cluster(
        tmp_path_factory.mktemp("autoscaler-dra"), CONFIG, clock=ClockMode.VIRTUAL
    ) as c:
        yield c


@pytest.fixture(scope="module")
def autoscaler(cluster: Cluster) -> str:
    return Autoscalers(
        cluster,
        extra_args=[
            "--scale-down-unneeded-time",
            f"{UNNEEDED:g}s",
            "--scale-down-delay-after-add",
            "0s",
            "--node-delete-delay-after-taint",
            "0s",
            # (a node found unremovable while the informers catch up is checked again soon)
            "--unremovable-node-recheck-timeout",
            "1s",
            "-v",
            "4",  # the unremovable nodes' reasons
        ],  # fmt: skip
    ).use("1.37")


@pytest.fixture
async def clients(
    cluster: Cluster, rate_max: None
) -> AsyncIterator[tuple[Client, CloudProviderClient]]:
    async with open_clients(cluster) as c:
        yield c


def gpu_class() -> types_pb2.DeviceClass:
    c = types_pb2.DeviceClass()
    c.metadata.name = "gpu"
    c.spec.selectors.add().cel.expression = f'device.driver == "{DRIVER}"'
    return c


def gpu_claim(ns: str, name: str, count: int) -> types_pb2.ResourceClaim:
    c = types_pb2.ResourceClaim()
    c.metadata.namespace, c.metadata.name = ns, name
    r = c.spec.devices.requests.add(name="gpu")
    r.exactly.device_class_name = "gpu"
    r.exactly.count = count
    return c


def claiming_pod(ns: str, name: str, claim: str) -> types_pb2.Pod:
    pod = make_pod(name).namespace(ns).req(cpu="100m").obj()
    pod.spec.resource_claims.add(name="gpu", resource_claim_name=claim)
    pod.spec.containers[0].resources.claims.add(name="gpu")
    return pod


async def test_s_ca_dra_the_autoscaler_with_devices(
    cluster: Cluster, autoscaler: str, clients: tuple[Client, CloudProviderClient]
) -> None:
    api, cloud = clients
    ns = await create_namespace(api, "dra")
    await api.create(gpu_class())

    # S-CA-DRA-3: scale-up from zero for a pod whose claim only the group's devices satisfy.
    await api.create(gpu_claim(ns, "two", 2))
    await api.create(claiming_pod(ns, "p1", "two"))

    async def running(name: str) -> types_pb2.Pod:
        pod = await api.get(types_pb2.Pod, name, ns)
        assert pod.status.phase == "Running", pod.status
        return pod

    p1 = await eventually(lambda: running("p1"), timeout=30, interval=0.2)
    (node,) = await group_nodes(api, GROUP, 1)
    assert p1.spec.node_name == node.metadata.name
    triggered = await recorded_pod_events(api, ns, "TriggeredScaleUp", ["p1"])
    assert triggered == {"p1": f"pod triggered scale-up: [{{{GROUP} 0->1 (max: 2)}}]"}
    claim = await api.get(types_pb2.ResourceClaim, "two", ns)
    assert {r.pool for r in claim.status.allocation.devices.results} == {node.metadata.name}

    # S-CA-DRA-5: no group has five devices.
    await api.create(gpu_claim(ns, "five", 5))
    await api.create(claiming_pod(ns, "big", "five"))
    await eventually(lambda: unschedulable(api, ns, "big"), timeout=10, interval=0.2)

    async def told_why() -> str:
        msg = (await pod_events(api, ns, "NotTriggerScaleUp")).get("big", "")
        assert msg == "pod didn't trigger scale-up: 1 cannot allocate all claims", msg
        return msg

    await eventually(told_why, timeout=15, interval=0.2)
    assert await cloud.target_size(GROUP) == 1
    await api.delete(types_pb2.Pod, "big", ns, grace_period_seconds=0)

    # S-CA-DRA-7: 2 of 4 devices allocated: not below the 0.5 threshold, whatever the CPU.
    name = node.metadata.name
    await eventually(
        lambda: (
            f"node {name} is not removable: NotUnderutilized (utilization 0.5 "
            f"({DRIVER}/{name} 0.5)" in cluster.logs()[autoscaler]
        ),
        timeout=15,
        interval=0.2,
    )
    await elapse(api, 2 * UNNEEDED)
    await group_nodes(api, GROUP, 1)

    # S-CA-DRA-9: a pod in PreBind holds one of the node's devices (its scheduler's PreBind
    # wrote the claim's allocation and reservation; KEP-5278 published the nomination).
    await api.create(gpu_claim(ns, "one", 1))
    pb = claiming_pod(ns, "binding", "one")
    # (movable as far as the drain rules go: only its devices keep the node)
    pb.metadata.annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] = "true"
    pb = await nominate(api, pb, name, unschedulable=False)

    async def allocated_in_prebind() -> bool:
        # (the latest claim each time: a Conflict with the resourceclaim controller retries)
        held = await api.get(types_pb2.ResourceClaim, "one", ns)
        held.status.allocation.devices.results.add(
            request="gpu", driver=DRIVER, pool=name, device="gpu-3"
        )
        held.status.allocation.node_selector.node_selector_terms.add().match_fields.add(
            key="metadata.name", operator="In", values=[name]
        )
        held.status.reserved_for.add(resource="pods", name="binding", uid=pb.metadata.uid)
        try:
            await api.update_status(held)
        except Conflict as e:
            raise AssertionError(str(e)) from None
        return True

    await eventually(allocated_in_prebind, timeout=10, interval=0.1)
    await api.delete(types_pb2.Pod, "p1", ns, grace_period_seconds=0)
    await eventually(
        lambda: (
            f"node {name} is not removable: BlockedByPod (pod {ns}/binding is being bound"
            in cluster.logs()[autoscaler]
        ),
        timeout=15,
        interval=0.2,
    )
    await elapse(api, 2 * UNNEEDED)
    await group_nodes(api, GROUP, 1)

    # S-CA-DRA-8: the pod gone and its claim released, the node's devices are free.
    await api.delete(types_pb2.Pod, "binding", ns, grace_period_seconds=0)

    async def released() -> bool:
        c = await api.get(types_pb2.ResourceClaim, "one", ns)
        if c.status.HasField("allocation"):  # (else the resourceclaim controller did it)
            c.status.ClearField("allocation")
            del c.status.reserved_for[:]
            try:
                await api.update_status(c)
            except Conflict as e:
                raise AssertionError(str(e)) from None
        c = await api.get(types_pb2.ResourceClaim, "two", ns)
        assert not c.status.HasField("allocation"), c.status  # (the resourceclaim controller)
        return True

    await eventually(released, timeout=15, interval=0.2)

    async def scaled_down() -> bool:
        assert await cloud.target_size(GROUP) == 0
        await group_nodes(api, GROUP, 0)
        return True

    await eventually(scaled_down, timeout=30, interval=0.3)
    await two_more_loops(cluster, autoscaler)
