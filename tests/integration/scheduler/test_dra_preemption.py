"""DRA-aware preemption (KEP-5690, gate DRAPreemption, alpha and off at 1.37) on real
processes: etcd, apiserver, the controller-manager's resourceclaim controller, one kubelet per
scenario publishing one device (--dra-slice-file), and two schedulers at 1.37: the default one
with DRAPreemption on, "no-dra-preemption" with it off (upstream's default).

S-DRA-PREEMPT-1: a high-priority pod whose claim needs the only device, held by a low-priority
pod's claim, preempts that pod; the victim terminates, the resourceclaim controller takes it out
of reservedFor and deallocates the claim, and the preemptor gets the device (upstream
test/integration/dra preemption test, testDirectClaimPreemption).
S-DRA-PREEMPT-2: without the gate (1.37's default, 1.34-1.36 have none), "cannot allocate all
claims" is UnschedulableAndUnresolvable: nothing is preempted and the pod stays pending with
"Preemption is not helpful for scheduling" (testPreemptionDisabled).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import DRA_PREEMPTION
from kemu.testing import Cluster, dra
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT: Final = 15.0
DRIVER: Final = "gpu.kemu.test"
NO_PREEMPTION: Final = "no-dra-preemption"
LOW, HIGH = 100, 1000
SLICE: Final = f"""\
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
spec:
  driver: {DRIVER}
  devices:
  - name: gpu-0
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("dra-preemption")
    (Path(root) / "slice.yaml").write_text(SLICE)
    off = Path(root) / "off.yaml"
    off.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        f"- schedulerName: {NO_PREEMPTION}\n"
    )
    with Cluster(root) as c:
        c.start_etcd()
        c.start_apiserver()
        c.start_scheduler(feature_gates={DRA_PREEMPTION: True})
        c.start_scheduler(name="scheduler-off", config=off)
        c.start_controllermanager(
            extra_args=["--controllers", "resourceclaim-controller"], cluster_cidr=None
        )
        yield c


async def node_with_one_device(s: Scenario) -> str:
    """A kubelet whose node publishes one device of DRIVER (the scenario's label on it)."""
    return await dra.kubelet_publishing(s, s.cluster.root / "slice.yaml", within=TIMEOUT)


async def claimed_pod(
    s: Scenario, name: str, cls: str, priority: int, scheduler: str = ""
) -> types_pb2.Pod:
    await s.client.create(dra.claim(s.ns, f"{name}-claim", cls))
    pod = s.pod(name, priority=priority, shutdown="200ms").obj()
    if scheduler:
        pod.spec.scheduler_name = scheduler
    return await s.create(dra.with_claim(pod, f"{name}-claim"))


async def test_s_dra_preempt_1_victims_device_freed(cluster: Cluster) -> None:
    """S-DRA-PREEMPT-1."""
    async with Scenario.open(cluster, "dra-pre-1") as s:
        node = await node_with_one_device(s)
        cls = f"{s.ns}.gpu"
        await s.client.create(dra.device_class(cls))
        await claimed_pod(s, "low", cls, LOW)
        assert await s.wait_bound("low", timeout=TIMEOUT) == node
        await claimed_pod(s, "high", cls, HIGH)
        assert await s.wait_bound("high", timeout=TIMEOUT) == node
        await s.wait_gone("low", timeout=TIMEOUT)
        victim = await s.client.get(types_pb2.ResourceClaim, "low-claim", s.ns)
        assert not victim.status.HasField("allocation")
        assert not victim.status.reserved_for
        won = await s.client.get(types_pb2.ResourceClaim, "high-claim", s.ns)
        [result] = won.status.allocation.devices.results
        assert (result.pool, result.device) == (node, "gpu-0")
        preempted = [e for e in await s.events("Preempted") if e.involved_object.name == "low"]
        assert preempted, "no Preempted event for the victim"


async def test_s_dra_preempt_2_no_preemption_without_the_gate(cluster: Cluster) -> None:
    """S-DRA-PREEMPT-2."""
    async with Scenario.open(cluster, "dra-pre-2") as s:
        node = await node_with_one_device(s)
        cls = f"{s.ns}.gpu"
        await s.client.create(dra.device_class(cls))
        await claimed_pod(s, "low", cls, LOW, NO_PREEMPTION)
        assert await s.wait_bound("low", timeout=TIMEOUT) == node
        await claimed_pod(s, "high", cls, HIGH, NO_PREEMPTION)
        cond = await s.wait_unschedulable("high", timeout=TIMEOUT)
        assert cond.reason == "Unschedulable"
        # (the other scenario's node is in the count too: "didn't match Pod's node
        # affinity/selector")
        assert "1 cannot allocate all claims" in cond.message, cond.message
        assert "still not schedulable, preemption: " in cond.message, cond.message
        # (upstream's doubled period)
        assert cond.message.endswith("Preemption is not helpful for scheduling.."), cond.message

        async def nothing_preempted() -> None:
            assert not (await s.get("low")).metadata.HasField("deletion_timestamp")
            assert not (await s.get("high")).status.nominated_node_name

        await s.holds(nothing_preempted, seconds=1.0)
