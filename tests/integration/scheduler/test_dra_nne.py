"""KEP-5278 with claims (issue #56 item 3) on real processes (etcd, apiserver, scheduler at
1.37; nodes without kubelets): when the nomination and the claim's allocation are published,
relative to each other, to a slow volume's PreBind, to a wait at Permit, and across a
scheduler restart.

Upstream's order, as its code is at 1.37 (pkg/scheduler/schedule_one.go bindingCycle; the
default profile of pkg/scheduler/apis/config/v1/default_plugins.go): the nomination is PATCHed
once PreBindPreFlight says PreBind has work (DynamicResources says so for any pod with
claims), before WaitOnPermit; the PreBind plugins then run one after another in the profile's
order, VolumeBinding before DynamicResources, so a slow volume delays the claim's allocation
(the KEP's "Handling ResourceClaim status updates" names this as the gap still open). The
order of writes is read from resourceVersions (one etcd revision for every kind).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Final

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.interface import DELETED
from kemu.machinery.storage import ANN_SELECTED_NODE
from kemu.testing import Cluster, dra, storage
from kemu.testing.eventually import eventually
from kemu.testing.invariants import PodHistory, record_pods
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT: Final = 20.0
DRIVER: Final = "gpu.kemu.test"
PROVISIONER: Final = "provisioner.kemu.test"
CSI_DRIVER: Final = "csi.kemu.test"
PERMIT_WAIT: Final = "scheduling.kemu.io/permit-wait"
PERMIT: Final = "scheduling.kemu.io/permit"

_CONFIG: Final = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: permit
  plugins:
    permit:
      enabled:
      - name: WaitingPermit
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("dra-nne")) as c:
        c.start_etcd()
        c.start_apiserver()
        config = c.root / "scheduler.yaml"
        config.write_text(_CONFIG)
        c.start_scheduler(config=config)
        yield c


def rv(obj: types_pb2.Pod | types_pb2.ResourceClaim | types_pb2.PersistentVolumeClaim) -> int:
    return int(obj.metadata.resource_version)


def first_rv(history: PodHistory, name: str, check: Callable[[types_pb2.Pod], bool]) -> int:
    """The resourceVersion of the pod's first recorded version for which `check` holds."""
    for uid in history.uids_of(name):
        for v in history.versions[uid]:
            if v.type != DELETED and check(v.pod):
                return rv(v.pod)
    raise AssertionError(f"no version of {name} matched")


async def test_s_nne_dra_1_claim_published_after_a_slow_volume(cluster: Cluster) -> None:
    """S-NNE-DRA-1: a pod with a WaitForFirstConsumer volume (an external provisioner) and a
    device claim. The nomination is published first; while VolumeBinding's PreBind waits for
    the provisioner the claim is still unallocated (upstream's sequential PreBind); once the
    volume is bound, DynamicResources' PreBind writes the claim, then the pod is bound and the
    binding clears the nomination: NNN < volume bound < claim allocated < pod bound."""
    async with Scenario.open(cluster, "dra-nne-1") as s, record_pods(s.client, s.ns) as history:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        api = s.client
        cls = f"{s.ns}.gpu"
        await api.create(dra.device_class(cls))
        await api.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        await api.create(dra.claim(s.ns, "dev", cls))
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        pod = dra.with_claim(s.pod("p").obj(), "dev")
        pod.spec.volumes.add(name="v").persistent_volume_claim.claim_name = "data"
        await s.create(pod)

        async def in_volume_pre_bind() -> bool:
            pvc = await api.get(types_pb2.PersistentVolumeClaim, "data", s.ns)
            assert pvc.metadata.annotations.get(ANN_SELECTED_NODE) == n0
            p = await s.get("p")
            assert p.status.nominated_node_name == n0 and not p.spec.node_name
            return True

        await eventually(in_volume_pre_bind, timeout=TIMEOUT)
        # The nomination only: the claim waits for VolumeBinding's PreBind.
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert not dev.status.HasField("allocation") and not dev.status.reserved_for
        assert await storage.provision_when_selected(api, s.ns, "data", CSI_DRIVER) == n0
        assert await s.wait_bound("p", timeout=TIMEOUT) == n0

        await history.sync(api, timeout=TIMEOUT)
        nominated = first_rv(history, "p", lambda p: p.status.nominated_node_name == n0)
        bound = first_rv(history, "p", lambda p: bool(p.spec.node_name))
        pvc = await api.get(types_pb2.PersistentVolumeClaim, "data", s.ns)
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert dev.status.allocation.devices.results[0].device == "gpu-0"
        assert nominated < rv(pvc) < rv(dev) < bound, (nominated, rv(pvc), rv(dev), bound)
        assert not (await s.get("p")).status.nominated_node_name


async def test_s_nne_dra_2_waiting_at_permit_has_the_nomination_only(cluster: Cluster) -> None:
    """S-NNE-DRA-2 (the KEP: "pods waiting on WaitOnPermit would have only nominations
    published, and not ResourceClaim statuses"): a pod with a claim held at Permit shows its
    nomination while its claim stays unallocated (the allocation is in flight in the scheduler,
    so another pod's cycle cannot take the device); released, it gets the claim and binds."""
    async with Scenario.open(cluster, "dra-nne-2") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        api = s.client
        cls = f"{s.ns}.gpu"
        await api.create(dra.device_class(cls))
        await api.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        for name in ("dev", "dev2"):
            await api.create(dra.claim(s.ns, name, cls))
        held = s.pod("held").annotation(PERMIT_WAIT, "30s").obj()
        held.spec.scheduler_name = "permit"
        await s.create(dra.with_claim(held, "dev"))
        await s.wait_nominated("held", "n0", timeout=TIMEOUT)
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert not dev.status.HasField("allocation")
        # The in-flight allocation keeps the only device from a second pod meanwhile.
        await s.create(dra.with_claim(s.pod("other").obj(), "dev2"))
        cond = await s.wait_unschedulable("other", timeout=TIMEOUT)
        assert "cannot allocate all claims" in cond.message, cond.message
        p = await s.get("held")
        p.metadata.annotations[PERMIT] = "allow"
        await api.update(p)
        assert await s.wait_bound("held", timeout=TIMEOUT) == n0
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert [r.name for r in dev.status.reserved_for] == ["held"]


async def test_s_nne_dra_3_restart_finds_the_claims_allocation(cluster: Cluster) -> None:
    """S-NNE-DRA-3 (KEP-5278 story 2, "Scheduler can resume its work after restart"): a pod
    whose device has a binding condition waits in PreBind with its nomination and its claim
    allocated and reserved; the scheduler is killed there. A second pod wanting the same kind
    of device is created; the restarted scheduler reads the allocation from its informer
    (nothing in flight survives a restart): the second pod finds no free device, the first pod
    keeps its claim (reserved for it, pinned to its node) and binds once the driver reports the
    condition. (It restarts the module's scheduler: after the tests that do not.)"""
    cl = cluster
    async with Scenario.open(cl, "dra-nne-3") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        api = s.client
        cls = f"{s.ns}.gpu"
        await api.create(dra.device_class(cls))
        await api.create(
            dra.resource_slice(
                n0,
                DRIVER,
                ["gpu-0"],
                binding_conditions=["Attached"],
                binding_failure_conditions=["AttachFailed"],
            )
        )
        for name in ("dev", "dev2"):
            await api.create(dra.claim(s.ns, name, cls))
        await s.create(dra.with_claim(s.pod("first").obj(), "dev"))

        async def in_pre_bind() -> types_pb2.ResourceClaim:
            c = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
            assert c.status.HasField("allocation") and c.status.reserved_for
            p = await s.get("first")
            assert p.status.nominated_node_name == n0 and not p.spec.node_name
            return c

        before = await eventually(in_pre_bind, timeout=TIMEOUT)
        cl.kill("scheduler")
        await s.create(dra.with_claim(s.pod("a-second").obj(), "dev2"))
        await anyio.to_thread.run_sync(cl.restart, "scheduler")
        cond = await s.wait_unschedulable("a-second", timeout=TIMEOUT)
        assert "cannot allocate all claims" in cond.message, cond.message
        await dra.set_device_condition(api, s.ns, "dev", "Attached")
        assert await s.wait_bound("first", timeout=TIMEOUT) == n0
        after = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        # The same allocation: not deallocated and allocated again.
        assert after.status.allocation == before.status.allocation
        assert not (await s.get("a-second")).spec.node_name


async def test_s_nne_dra_4_killed_between_the_nomination_and_the_claim(cluster: Cluster) -> None:
    """S-NNE-DRA-4: the scheduler dies after publishing the nomination and before writing the
    claim (its PreBind was waiting for a volume): the allocation in flight dies with it, the
    claim stays unallocated and nothing holds the device but the nomination. Restarted, the
    scheduler tries the nominated node first (KEP-1923), allocates the claim afresh there once
    the volume is bound, and binds the pod. (Last in the module: it restarts the scheduler.)"""
    async with Scenario.open(cluster, "dra-nne-4") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        api = s.client
        cls = f"{s.ns}.gpu"
        await api.create(dra.device_class(cls))
        await api.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        await api.create(dra.claim(s.ns, "dev", cls))
        sc = storage.storage_class(f"{s.ns}-wffc", PROVISIONER)
        await api.create(sc)
        await api.create(storage.claim(s.ns, "data", sc.metadata.name))
        pod = dra.with_claim(s.pod("p").obj(), "dev")
        pod.spec.volumes.add(name="v").persistent_volume_claim.claim_name = "data"
        await s.create(pod)
        await s.wait_nominated("p", "n0", timeout=TIMEOUT)

        async def volume_selected() -> bool:
            pvc = await api.get(types_pb2.PersistentVolumeClaim, "data", s.ns)
            assert pvc.metadata.annotations.get(ANN_SELECTED_NODE) == n0
            return True

        await eventually(volume_selected, timeout=TIMEOUT)  # VolumeBinding's PreBind waits
        cluster.kill("scheduler")
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert not dev.status.HasField("allocation")
        assert (await s.get("p")).status.nominated_node_name == n0
        assert await storage.provision_when_selected(api, s.ns, "data", CSI_DRIVER) == n0
        await anyio.to_thread.run_sync(cluster.restart, "scheduler")
        assert await s.wait_bound("p", timeout=TIMEOUT) == n0
        dev = await api.get(types_pb2.ResourceClaim, "dev", s.ns)
        assert [r.name for r in dev.status.reserved_for] == ["p"]
