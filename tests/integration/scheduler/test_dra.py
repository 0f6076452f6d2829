"""The scheduler's DynamicResources plugin on real processes (etcd, apiserver, scheduler at 1.37
with its default profile; nodes without kubelets): a pod's claim allocated and reserved in
PreBind, a pod that cannot get a device, two pods racing for one device, binding conditions.

No kubelet publishes slices here and no driver runs: the test creates a node's ResourceSlice
through the client and writes what a driver would (a device's binding conditions), as
upstream's integration tests do (test/integration/scheduler, test/utils/dra).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

import pytest

from kemu.api.v1 import types_pb2
from kemu.ctl.common import Context
from kemu.ctl.why import pod_claims
from kemu.scheduling.plugins.dynamic_resources import DELETE_PROTECTION_FINALIZER
from kemu.testing import Cluster, dra
from kemu.testing.eventually import eventually
from kemu.testing.scenarios import Scenario

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

TIMEOUT: Final = 20.0
DRIVER: Final = "gpu.kemu.test"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("dra-scheduling")) as c:
        c.start_etcd()
        c.start_apiserver()
        # Binding conditions time out after 15 s here (bindingTimeout; upstream's default 600 s).
        config = c.root / "dra-scheduler.yaml"
        config.write_text(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "profiles:\n"
            "- schedulerName: default-scheduler\n"
            "  pluginConfig:\n"
            "  - name: DynamicResources\n"
            "    args:\n"
            "      bindingTimeout: 15s\n"
        )
        c.start_scheduler(config=config)
        yield c


async def gpu_class(s: Scenario) -> str:
    name = f"{s.ns}.gpu"
    await s.client.create(dra.device_class(name))
    return name


async def claim_of(s: Scenario, name: str) -> types_pb2.ResourceClaim:
    return await s.client.get(types_pb2.ResourceClaim, name, s.ns)


async def test_s_dra_sched_1_pod_with_claim_gets_a_device(cluster: Cluster) -> None:
    """S-DRA-SCHED-1: a pod whose claim asks for one device of a class goes to the only node
    whose slice has such a device; PreBind wrote the claim's finalizer, its allocation (the
    device, the node's pool) and reservedFor = the pod, before the binding."""
    async with Scenario.open(cluster, "dra-1") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        n1 = await s.bare_node("n1", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(dra.resource_slice(n1, DRIVER, ["gpu-0"]))
        await s.client.create(dra.claim(s.ns, "c1", cls))
        await s.create(dra.with_claim(s.pod("p1").obj(), "c1"))
        assert await s.wait_bound("p1", timeout=TIMEOUT) == n1
        c = await claim_of(s, "c1")
        [result] = c.status.allocation.devices.results
        assert (result.request, result.driver, result.pool, result.device) == (
            "req-0",
            DRIVER,
            n1,
            "gpu-0",
        )
        pod = await s.get("p1")
        assert [(r.resource, r.name, r.uid) for r in c.status.reserved_for] == [
            ("pods", "p1", pod.metadata.uid)
        ]
        assert DELETE_PROTECTION_FINALIZER in c.metadata.finalizers
        assert n0 != n1
        # kemuctl why pod/p1 reads the claim's allocation from the API.
        [entry] = await pod_claims(Context(client=s.client), pod)
        assert entry["devices"] == [f"req-0: {DRIVER}/{n1}/gpu-0"]
        assert entry["reservedFor"] == ["p1"] and entry["allocated"]


async def test_s_dra_sched_2_no_device_names_the_claim(cluster: Cluster) -> None:
    """S-DRA-SCHED-2: a claim asking for two devices where each node has one: every node's
    Filter says upstream's "cannot allocate all claims" (UnschedulableAndUnresolvable, so no
    preemption); a claim whose class does not exist is refused at PreFilter with upstream's
    "request REQ: device class NAME does not exist"; a pod whose claim does not exist waits at
    PreEnqueue."""
    async with Scenario.open(cluster, "dra-2") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        await s.client.create(dra.claim(s.ns, "two", cls, count=2))
        await s.create(dra.with_claim(s.pod("p-two").obj(), "two"))
        cond = await s.wait_unschedulable("p-two", timeout=TIMEOUT)
        assert "1 cannot allocate all claims" in cond.message, cond.message
        assert "no new claims to deallocate" not in cond.message

        await s.client.create(dra.claim(s.ns, "nocls", f"{s.ns}.missing"))
        await s.create(dra.with_claim(s.pod("p-nocls").obj(), "nocls"))
        cond = await s.wait_unschedulable("p-nocls", timeout=TIMEOUT)
        assert f"request req-0: device class {s.ns}.missing does not exist" in cond.message

        # No claim yet: held at PreEnqueue (no FailedScheduling); the claim's creation lets it in.
        await s.create(dra.with_claim(s.pod("p-later").obj(), "later"))
        await s.client.create(dra.claim(s.ns, "later", cls))
        assert await s.wait_bound("p-later", timeout=TIMEOUT) == n0


async def test_s_dra_sched_3_two_pods_race_for_one_device(cluster: Cluster) -> None:
    """S-DRA-SCHED-3: two pods, each with its own claim of one device, one device in the
    cluster: the first cycle's allocation is in flight (Reserve) while its PreBind writes, so
    the second pod's cycle counts the device as taken and fails; exactly one pod is bound and
    exactly one claim allocated. Deleting the bound pod's claim allocation (what the
    resourceclaim controller does once the pod is gone) requeues the other, which then gets
    the device."""
    async with Scenario.open(cluster, "dra-3") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        for i in (1, 2):
            await s.client.create(dra.claim(s.ns, f"c{i}", cls))
        for i in (1, 2):
            await s.create(dra.with_claim(s.pod(f"p{i}").obj(), f"c{i}"))

        async def one_bound_one_refused() -> tuple[str, str]:
            pods = await s.pods()
            bound = [n for n, p in pods.items() if p.spec.node_name]
            waiting = [
                n
                for n, p in pods.items()
                if any(
                    c.type == "PodScheduled" and c.status == "False" for c in p.status.conditions
                )
            ]
            assert len(bound) == 1 and len(waiting) == 1, (bound, waiting)
            return bound[0], waiting[0]

        winner, loser = await eventually(one_bound_one_refused, timeout=TIMEOUT)
        claims = {n: await claim_of(s, n) for n in ("c1", "c2")}
        allocated = [n for n, c in claims.items() if c.status.HasField("allocation")]
        assert allocated == [f"c{winner[1:]}"]
        # The resourceclaim controller's part once the winner is gone: deallocate its claim.
        await s.client.delete(types_pb2.Pod, winner, s.ns, grace_period_seconds=0)
        c = await claim_of(s, allocated[0])
        c.status.ClearField("allocation")
        c.status.ClearField("reserved_for")
        await s.client.update_status(c)
        assert await s.wait_bound(loser, timeout=TIMEOUT) == n0


async def test_s_dra_sched_4_binding_conditions_wait_then_bind(cluster: Cluster) -> None:
    """S-DRA-SCHED-4 (KEP-5007): the device's slice asks for a binding condition: PreBind
    writes the allocation (with allocationTimestamp and the node pinned), emits
    BindingConditionsPending and waits, the pod showing its nomination (KEP-5278) and unbound;
    once the driver reports the condition True the pod binds."""
    async with Scenario.open(cluster, "dra-4") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(
            dra.resource_slice(
                n0,
                DRIVER,
                ["gpu-0"],
                binding_conditions=["Attached"],
                binding_failure_conditions=["AttachFailed"],
            )
        )
        await s.client.create(dra.claim(s.ns, "c1", cls))
        await s.create(dra.with_claim(s.pod("p1").obj(), "c1"))

        async def waiting() -> types_pb2.ResourceClaim:
            c = await claim_of(s, "c1")
            assert c.status.HasField("allocation")
            p = await s.get("p1")
            assert p.status.nominated_node_name == n0 and not p.spec.node_name
            return c

        c = await eventually(waiting, timeout=TIMEOUT)
        assert c.status.allocation.HasField("allocation_timestamp")
        [r] = c.status.allocation.devices.results
        assert list(r.binding_conditions) == ["Attached"]
        assert await s.events("BindingConditionsPending", "p1")
        await dra.set_device_condition(s.client, s.ns, "c1", "Attached")
        assert await s.wait_bound("p1", timeout=TIMEOUT) == n0


async def test_s_dra_sched_5_binding_failure_condition_fails_prebind(cluster: Cluster) -> None:
    """S-DRA-SCHED-5 (KEP-5007): a bindingFailureCondition True fails PreBind (upstream's
    "claim NAME binding failed: reason=..., message=..."); the pod is retried, Filter finds
    the claim's binding failed ("resourceclaim not available on the node") and PostFilter
    deallocates it ("deallocation of ResourceClaim completed"); the claim is allocated again."""
    async with Scenario.open(cluster, "dra-5") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(
            dra.resource_slice(
                n0,
                DRIVER,
                ["gpu-0"],
                binding_conditions=["Attached"],
                binding_failure_conditions=["AttachFailed"],
            )
        )
        await s.client.create(dra.claim(s.ns, "c1", cls))
        await s.create(dra.with_claim(s.pod("p1").obj(), "c1"))

        async def allocated() -> types_pb2.ResourceClaim:
            c = await claim_of(s, "c1")
            assert c.status.HasField("allocation") and c.status.reserved_for
            return c

        first = await eventually(allocated, timeout=TIMEOUT)
        await dra.set_device_condition(
            s.client, s.ns, "c1", "AttachFailed", reason="NoPath", message="fabric down"
        )

        async def failed_and_retried() -> bool:
            events = [e.message for e in await s.events("FailedScheduling", "p1")]
            assert any(
                'claim c1 binding failed: reason=NoPath, message="fabric down"' in m for m in events
            ), events
            c = await claim_of(s, "c1")
            # deallocated by PostFilter, then allocated afresh (a new timestamp)
            assert (
                not c.status.HasField("allocation")
                or c.status.allocation.allocation_timestamp
                != first.status.allocation.allocation_timestamp
            )
            return True

        await eventually(failed_and_retried, timeout=TIMEOUT)


async def test_s_dra_sched_6_claim_from_a_template(cluster: Cluster) -> None:
    """S-DRA-SCHED-6: a pod whose entry names a ResourceClaimTemplate waits at PreEnqueue until
    its status.resourceClaimStatuses names the generated claim and that claim, owned by the
    pod, exists (the resourceclaim controller's part, written here by the test); the pod's
    update (UpdatePodGeneratedResourceClaim) and the claim's creation let it in, and it gets the
    device."""
    async with Scenario.open(cluster, "dra-6") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        p = s.pod("p").obj()
        p.spec.resource_claims.add(name="gpu", resource_claim_template_name="gpu-template")
        p.spec.containers[0].resources.claims.add(name="gpu")
        created = await s.create(p)
        generated = dra.claim(s.ns, "p-gpu-x7k2q", cls)
        owner = generated.metadata.owner_references.add(
            api_version="v1", kind="Pod", name="p", uid=created.metadata.uid
        )
        owner.controller = True
        await s.client.create(generated)
        assert not (await s.get("p")).spec.node_name
        current = await s.get("p")
        current.status.resource_claim_statuses.add(name="gpu", resource_claim_name="p-gpu-x7k2q")
        await s.client.update_status(current)
        assert await s.wait_bound("p", timeout=TIMEOUT) == n0
        c = await claim_of(s, "p-gpu-x7k2q")
        assert [r.name for r in c.status.reserved_for] == ["p"]


async def test_s_dra_sched_7_two_pods_share_one_claim(cluster: Cluster) -> None:
    """S-DRA-SCHED-7: two pods naming the same claim: the first allocates it; the second finds
    it allocated, goes where its node selector points and is added to reservedFor (structured
    claims are shareable up to 256 consumers)."""
    async with Scenario.open(cluster, "dra-7") as s:
        n0 = await s.bare_node("n0", cpu="4", memory="8Gi", pods="10")
        await s.bare_node("n1", cpu="4", memory="8Gi", pods="10")
        cls = await gpu_class(s)
        await s.client.create(dra.resource_slice(n0, DRIVER, ["gpu-0"]))
        await s.client.create(dra.claim(s.ns, "shared", cls))
        await s.create(dra.with_claim(s.pod("a").obj(), "shared"))
        assert await s.wait_bound("a", timeout=TIMEOUT) == n0
        await s.create(dra.with_claim(s.pod("b").obj(), "shared"))
        assert await s.wait_bound("b", timeout=TIMEOUT) == n0
        c = await claim_of(s, "shared")
        assert sorted(r.name for r in c.status.reserved_for) == ["a", "b"]
        assert len(c.status.allocation.devices.results) == 1
        [term] = c.status.allocation.node_selector.node_selector_terms
        assert [(f.key, list(f.values)) for f in term.match_fields] == [("metadata.name", [n0])]
