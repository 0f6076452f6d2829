"""The autoscaler's simulations with volumes (issue #34): the default profile's VolumeBinding
runs its PreFilter and Filter on the informers' claims, PVs and classes, as upstream's
SchedulerBasedPredicateChecker does on the shared informers' listers.

- Scale-up: a pending pod's WaitForFirstConsumer claim is provisionable on a group's template
  only where the class's allowedTopologies match the template's labels (upstream binder's
  checkVolumeProvisions), a bound claim's volume must reach the template (its node affinity);
  a claim no class can provision triggers nothing. The estimator packs pods with a claim each
  as pods without; a ReadWriteOncePod claim two pods share is one pod's (VolumeRestrictions on
  the simulated snapshot). Nothing is assumed or written (no Reserve/PreBind).
- Scale-down: a pod whose claim is bound to a PV pinned to its node fits no other node
  ("node(s) had volume node affinity conflict"), so its node is not removable; a PV reachable
  from the zone lets the pod move to a node of that zone.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest
from google.protobuf.message import Message

from autoscaler.scale_up import NOT_TRIGGER_SCALE_UP
from autoscaler.scaledown.removal import simulate_removal
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.machinery.storage import ANN_SELECTED_NODE
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.plugins.volumes import STORAGE_KINDS
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.simulator import ClusterSnapshot, PredicateChecker
from kemu.testing import storage
from kemu.testing.builders import make_node, make_pod
from tests.unit.autoscaler.fakes import FakeGroup, template
from tests.unit.autoscaler.test_static_autoscaler import Env, unschedulable
from tests.unit.scheduling.plugins.volume_fakes import bound_claim, unbound_claim

pytestmark = pytest.mark.anyio

ZONE = "topology.kubernetes.io/zone"
SIMULATED = "kemu.io/simulated"


@asynccontextmanager
async def informers(*objs: Message) -> AsyncIterator[tuple[InformerFactory, FakeClient]]:
    """Synced storage informers over a FakeClient holding `objs`, as the autoscaler starts
    them (autoscaler/app.py)."""
    clock = FakeClock()
    client = FakeClient(clock=clock)
    for obj in objs:
        client.add(obj)
    factory = InformerFactory(client, clock=clock)
    for kind in STORAGE_KINDS:
        factory.informer(kind)
    async with anyio.create_task_group() as tg:
        factory.start(tg)
        await factory.wait_for_cache_sync()
        yield factory, client
        tg.cancel_scope.cancel()


def zonal_class(name: str, *zones: str, provisioner: str = SIMULATED) -> types_pb2.StorageClass:
    sc = storage.storage_class(name, provisioner)
    if zones:
        term = sc.allowed_topologies.add()
        term.match_label_expressions.add(key=ZONE, values=list(zones))
    return sc


def zone_group(zone: str, max_size: int = 3) -> FakeGroup:
    return FakeGroup(zone, 0, max_size, template(zone, **{ZONE: zone}))


def with_claim(pod: types_pb2.Pod, claim: str) -> types_pb2.Pod:
    pod.spec.volumes.add(name="data").persistent_volume_claim.claim_name = claim
    return pod


@pytest.mark.parametrize("zone", ["zone-a", "zone-b"])
async def test_a_wait_for_first_consumer_claim_scales_up_the_group_its_class_can_reach(
    zone: str,
) -> None:
    """Upstream checkVolumeProvisions on the template node: the class's allowedTopologies
    name one zone, so the other zone's template is refused and that zone grows; the claim is
    left as it was (the simulation assumes nothing and writes nothing)."""
    objs = (zonal_class("zonal", zone), unbound_claim("data", "zonal"))
    async with informers(*objs) as (factory, client):
        pod = with_claim(unschedulable("p").namespace("default").obj(), "data")
        env = Env(zone_group("zone-a"), zone_group("zone-b"), pods=[pod], informers=factory)
        await env.loop()
        assert env.increases() == [(zone, 1)]
        assert set(client.verbs()) <= {"list", "watch"}
        claim = await client.get(types_pb2.PersistentVolumeClaim, "data", "default")
        assert ANN_SELECTED_NODE not in claim.metadata.annotations


@pytest.mark.parametrize("by", ["node affinity", "label"])
@pytest.mark.parametrize("zone", ["zone-a", "zone-b"])
async def test_a_claim_bound_to_a_zonal_volume_scales_up_the_group_of_its_zone(
    zone: str, by: str
) -> None:
    """A bound claim's volume must reach the template: its node affinity against the
    template's labels (VolumeBinding, the binder's checkBoundClaims) or its zone label
    (VolumeZone): the volume's zone grows, the other does not."""
    pv = pv_in("zonal", zone=zone) if by == "node affinity" else pv_in("zonal")
    if by == "label":
        pv.metadata.labels[ZONE] = zone
    async with informers(pv, bound_claim("data", "zonal", "zonal")) as (factory, _):
        pod = with_claim(unschedulable("p").namespace("default").obj(), "data")
        env = Env(zone_group("zone-a"), zone_group("zone-b"), pods=[pod], informers=factory)
        await env.loop()
        assert env.increases() == [(zone, 1)]


async def test_a_claim_no_class_can_provision_triggers_nothing() -> None:
    """A class without a provisioner (kubernetes.io/no-provisioner) and no PV: the binder
    finds nothing to bind on the template, so the pod says why and no group grows."""
    objs = (storage.storage_class("local"), unbound_claim("data", "local"))
    async with informers(*objs) as (factory, _):
        pod = with_claim(unschedulable("p").namespace("default").obj(), "data")
        env = Env(zone_group("zone-a"), pods=[pod], informers=factory)
        await env.loop()
        assert env.increases() == []
        assert env.events == [
            (
                "p",
                NOT_TRIGGER_SCALE_UP,
                "pod didn't trigger scale-up: 1 node(s) didn't find available persistent "
                "volumes to bind",
            )
        ]


async def test_pods_with_a_claim_each_are_packed_by_their_requests() -> None:
    """Each pod's claim is provisioned for that pod: three 1-cpu pods with a claim each need
    two 2-cpu nodes, as without claims (nothing carries one pod's claim over to the next)."""
    claims = [unbound_claim(f"data-{i}", "zonal") for i in range(3)]
    async with informers(zonal_class("zonal", "zone-a"), *claims) as (factory, _):
        pods = [
            with_claim(unschedulable(f"p{i}").namespace("default").obj(), f"data-{i}")
            for i in range(3)
        ]
        env = Env(zone_group("zone-a", 5), pods=pods, informers=factory)
        await env.loop()
        assert env.increases() == [("zone-a", 2)]


@pytest.mark.parametrize(
    ("claims", "access_mode", "nodes"),
    [
        (("data-0", "data-1"), "ReadWriteOnce", 2),  # a claim each
        (("data", "data"), "ReadWriteOnce", 2),  # shared: the scheduler would share it too
        (("data", "data"), "ReadWriteOncePod", 1),  # one pod at most: the second waits
    ],
)
async def test_the_estimate_counts_a_shared_read_write_once_pod_claim_once(
    claims: tuple[str, str], access_mode: str, nodes: int
) -> None:
    """Two 1500m pods (one per 2-cpu node): with a claim each, or sharing a ReadWriteOnce
    claim, they need two nodes; sharing a ReadWriteOncePod claim, the second conflicts with
    the first placed in the simulation (VolumeRestrictions on the simulated snapshot), so
    one node."""
    made = []
    for name in sorted(set(claims)):
        c = unbound_claim(name, "zonal")
        c.spec.access_modes[:] = [access_mode]
        made.append(c)
    async with informers(zonal_class("zonal", "zone-a"), *made) as (factory, _):
        pods = [
            with_claim(unschedulable(f"p{i}", "1500m").namespace("default").obj(), name)
            for i, name in enumerate(claims)
        ]
        env = Env(zone_group("zone-a", 5), pods=pods, informers=factory)
        await env.loop()
        assert env.increases() == [("zone-a", nodes)]


def node(name: str, zone: str) -> types_pb2.Node:
    return make_node(name).label(ZONE, zone).capacity(cpu="2", memory="4Gi", pods=20).obj()


def pv_in(name: str, *, node_name: str = "", zone: str = "") -> types_pb2.PersistentVolume:
    pv = storage.volume(name, "zonal", node=node_name)
    if zone:
        term = pv.spec.node_affinity.required.node_selector_terms.add()
        term.match_expressions.add(key=ZONE, operator="In", values=[zone])
    pv.status.phase = "Bound"
    return pv


@pytest.mark.parametrize(
    ("pv", "moves_to"),
    [
        (pv_in("pinned", node_name="n1"), None),
        (pv_in("zonal", zone="zone-a"), "n2"),
    ],
)
async def test_a_pod_whose_volume_is_pinned_to_its_node_cannot_move(
    pv: types_pb2.PersistentVolume, moves_to: str | None
) -> None:
    """The drain simulation re-runs the Filters on the other nodes: a claim bound to a PV
    whose node affinity names n1 fits neither n2 (same zone) nor n3; a PV of zone-a fits
    n2."""
    claim = bound_claim("data", pv.metadata.name, "zonal")
    async with informers(claim, pv) as (factory, _):
        registry = in_tree_registry()
        checker = PredicateChecker(
            Framework(
                default_profile(registry),
                registry,
                options=FrameworkOptions(informer_factory=factory),
            )
        )
        pod = with_claim(make_pod("p").namespace("default").uid("p").node("n1").obj(), "data")
        nodes = [node("n1", "zone-a"), node("n2", "zone-a"), node("n3", "zone-b")]
        snapshot = ClusterSnapshot.from_objects([pod], nodes)
        sim, placed, why = simulate_removal(checker, snapshot, "n1", [pod], lambda _: True)
        if moves_to is None:
            assert sim is None
            assert "node(s) had volume node affinity conflict" in why, why
        else:
            assert sim is not None, why
            assert placed == {"default/p": moves_to}
