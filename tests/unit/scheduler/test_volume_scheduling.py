"""The volume plugins in the scheduler's pieces (tests/unit/scheduler/harness.py: informers,
queue with the profile's hints, EventHandlers with the storage informers, the default profile):
a claim's update requeues only the pods that use it (upstream's EventsToRegister and hints), and
a WaitForFirstConsumer claim goes through Reserve, KEP-5278's nominatedNodeName, PreBind's
selected-node write and wait, to the binding once the claim is bound."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.machinery.storage import ANN_BIND_COMPLETED, ANN_SELECTED_NODE
from kemu.testing import storage
from kemu.testing.builders import make_pod
from tests.unit.scheduler.harness import Env, env, settle
from tests.unit.scheduling.deferred_builders import SCHEDULER

PROVISIONER = "csi.example.com"


def pod(name: str, claim: str) -> types_pb2.Pod:
    p = make_pod(name).namespace("default").req(cpu="100m").scheduler_name(SCHEDULER).obj()
    p.spec.volumes.add(name="data").persistent_volume_claim.claim_name = claim
    return p


async def bind_claim(e: Env, name: str, pv: str) -> None:
    """The PV controller's bind of the claim (its volumeName and bind-completed)."""
    c = await e.client.get(types_pb2.PersistentVolumeClaim, name, "default")
    c.spec.volume_name = pv
    c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
    await e.client.update(c)


async def test_a_claim_update_requeues_only_its_pods() -> None:
    def setup(client: object) -> None:
        assert hasattr(client, "add")
        client.add(storage.storage_class("immediate", wait_for_first_consumer=False))
        client.add(storage.claim("default", "mine", "immediate"))
        client.add(storage.claim("default", "other", "immediate"))

    async with env(FeatureGates.default(), setup=setup) as e:
        e.node("n1", cpu="4", memory="8Gi")
        await settle()
        e.add(pod("p", "mine"))
        await settle()
        assert await e.cycle() == "p"
        assert e.where("p") == "unschedulable"
        assert any(
            "pod has unbound immediate PersistentVolumeClaims" in m[4] for m in e.recorder.messages
        )
        await bind_claim(e, "other", "pv-other")
        await settle()
        assert e.where("p") == "unschedulable"
        await bind_claim(e, "mine", "pv-mine")
        await settle()
        assert e.where("p") in ("active", "backoff")


async def test_wait_for_first_consumer_claim_is_provisioned_before_binding() -> None:
    def setup(client: object) -> None:
        assert hasattr(client, "add")
        client.add(storage.storage_class("dynamic", PROVISIONER))
        client.add(storage.claim("default", "data", "dynamic"))

    async with env(FeatureGates.default(), setup=setup) as e:
        e.node("n1", cpu="4", memory="8Gi")
        await settle()
        e.add(pod("p", "data"))
        await settle()
        assert await e.cycle() == "p"
        # PreBind wrote the selected node and polls; KEP-5278 showed the NNN before it.
        claim = await e.client.get(types_pb2.PersistentVolumeClaim, "data", "default")
        assert claim.metadata.annotations[ANN_SELECTED_NODE] == "n1"
        waiting = await e.get("p")
        assert waiting is not None and not waiting.spec.node_name
        assert waiting.status.nominated_node_name == "n1"
        pv = storage.volume("pv", "dynamic", node="n1", driver=PROVISIONER)
        e.client.add(pv)
        await bind_claim(e, "data", "pv")
        await settle()
        e.scheduler.clock.advance(1.0)  # type: ignore[attr-defined]
        await settle()
        bound = await e.get("p")
        assert bound is not None and bound.spec.node_name == "n1"
