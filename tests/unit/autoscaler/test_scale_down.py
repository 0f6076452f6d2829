"""Scale-down on the fake client and a fake cloud: the drainability rules, utilization,
unneeded timing, min size, cooldowns, bulk deletion of empty nodes, drain through evictions,
the autoscaler's taints (and their clean-up on the first loop), nominated pods (S-CA-1/S-CA-2's
scale-down half by version) and expendable pods (S-CA-3)."""

from __future__ import annotations

import dataclasses
import random

import anyio
import pytest
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry

from autoscaler.clusterstate import DELETING
from autoscaler.config import AutoscalingOptions
from autoscaler.expander import LEAST_WASTE, Expander
from autoscaler.metrics import Metrics
from autoscaler.scaledown.eligibility import SCALE_DOWN_DISABLED
from autoscaler.scaledown.options import ScaleDownOptions
from autoscaler.scaledown.rules import SAFE_TO_EVICT
from autoscaler.scaledown.scale_down import ScaleDownSummary
from autoscaler.scaledown.taints import DELETION_CANDIDATE_TAINT, TO_BE_DELETED_TAINT
from autoscaler.static_autoscaler import ListerRegistry, LoopResult, Reporting, StaticAutoscaler
from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.component.clock import FakeClock
from kemu.component.version import Version
from kemu.machinery.errors import Invalid, TooManyRequests, Unavailable
from kemu.scheduling.dra_snapshot import SimulationDraManager
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.testing.builders import PodBuilder, make_pdb, make_pod
from tests.unit.autoscaler.fakes import FakeCloud, FakeGroup, template

pytestmark = pytest.mark.anyio

GROUP = "pool-a"
UNNEEDED = 60.0


def custom_pod(name: str) -> PodBuilder:
    """A running pod controlled by a kind upstream does not know as replicated."""
    return (
        make_pod(name)
        .namespace("default")
        .uid(f"uid-{name}")
        .req(cpu="500m")
        .owner("Rollout", "r", "uid-r")
        .grace(0)
        .phase("Running")
    )


def rs_pod(name: str, node: str, cpu: str = "500m") -> PodBuilder:
    """A running ReplicaSet pod that terminates at once (grace 0: no kubelet here)."""
    return (
        make_pod(name)
        .namespace("default")
        .uid(f"uid-{name}")
        .req(cpu=cpu)
        .node(node)
        .owner("ReplicaSet", "rs", "uid-rs")
        .grace(0)
        .phase("Running")
    )


class Env:
    """A StaticAutoscaler over a FakeClient (nodes, pods, PDBs, taints, evictions) and a
    FakeCloud group of `size` registered nodes; deletions go on right after the taint unless
    `delay_after_taint` (--node-delete-delay-after-taint) is given; `expendable_cutoff` is
    --expendable-pods-priority-cutoff."""

    def __init__(
        self,
        size: int = 2,
        *,
        min_size: int = 0,
        version: str = "1.37",
        scale_down: ScaleDownOptions | None = None,
        delay_after_taint: float = 0.0,
        expendable_cutoff: int = -10,
    ) -> None:
        self.clock = FakeClock()
        self.cloud = FakeCloud(FakeGroup(GROUP, min_size, 10, template(GROUP)))
        self.client = FakeClient(clock=self.clock)
        self.events: list[tuple[str, str, str]] = []
        self.registry = CollectorRegistry()
        self.nodes: list[types_pb2.Node] = []
        self.pods: list[types_pb2.Pod] = []
        self.pdbs: list[types_pb2.PodDisruptionBudget] = []
        self.claims: list[types_pb2.ResourceClaim] = []
        self.slices: list[types_pb2.ResourceSlice] = []
        self.classes: list[types_pb2.DeviceClass] = []
        registry = in_tree_registry()
        opts = dataclasses.replace(
            scale_down or ScaleDownOptions(unneeded_time=UNNEEDED, delay_after_add=0.0),
            node_delete_delay_after_taint=delay_after_taint,
        )
        self.autoscaler = StaticAutoscaler(
            AutoscalingOptions(
                version=Version.parse(version),
                scale_down=opts,
                expendable_pods_priority_cutoff=expendable_cutoff,
            ),
            self.cloud,
            Framework(
                default_profile(registry),
                registry,
                options=FrameworkOptions(dra_manager=SimulationDraManager()),
            ),
            ListerRegistry(
                nodes=lambda: self.nodes,
                pods=lambda: self.pods,
                pdbs=lambda: self.pdbs,
                resource_claims=lambda: self.claims,
                resource_slices=lambda: self.slices,
                device_classes=lambda: self.classes,
            ),
            Reporting(self, Metrics(self.registry)),
            clock=self.clock,
            expander=Expander(LEAST_WASTE, rng=random.Random(1)),
            client=self.client,
        )
        if size:
            self.grow(size)

    def grow(self, n: int) -> None:
        """`n` more instances, registered as Ready Nodes."""
        g = self.cloud.groups[GROUP]
        before = {i.id for i in g.instances}
        for _ in range(n):
            g.instances.append(cloud_pb2.Instance(id=f"kemu://{GROUP}/{GROUP}-{g.counter}"))
            g.counter += 1
        for node in self.cloud.register(GROUP):
            if node.spec.provider_id not in before:
                self.client.add(node)

    def event(
        self,
        obj: Message,
        event_type: str,
        reason: str,
        action: str,
        message: str,
        *,
        related: Message | None = None,
    ) -> None:
        name = obj.metadata.name  # type: ignore[attr-defined]
        self.events.append((name, reason, message))

    def add(self, *objs: Message) -> None:
        for obj in objs:
            self.client.add(obj)

    async def loop(self) -> LoopResult:
        self.nodes = list((await self.client.list(types_pb2.Node)).items)
        self.pods = list((await self.client.list_all(types_pb2.Pod)).items)
        self.pdbs = list((await self.client.list_all(types_pb2.PodDisruptionBudget)).items)
        self.claims = list((await self.client.list_all(types_pb2.ResourceClaim)).items)
        self.slices = list((await self.client.list(types_pb2.ResourceSlice)).items)
        self.classes = list((await self.client.list(types_pb2.DeviceClass)).items)
        return await self.autoscaler.run_once()

    async def summary(self) -> ScaleDownSummary:
        result = await self.loop()
        assert result.scale_down is not None
        return result.scale_down

    def deleted(self) -> list[object]:
        return [n for op, _, n in self.cloud.calls if op == "delete"]

    async def node(self, name: str) -> types_pb2.Node:
        return await self.client.get(types_pb2.Node, name)

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.registry.get_sample_value(name, labels or {})


def unremovable(summary: ScaleDownSummary) -> dict[str, str]:
    return dict(summary.unremovable)


async def test_an_underused_node_is_unneeded_then_drained_and_deleted() -> None:
    env = Env(2)
    env.add(rs_pod("a", "pool-a-0").obj(), rs_pod("b", "pool-a-1", cpu="1500m").obj())
    s = await env.summary()
    assert [u.name for u in s.unneeded] == ["pool-a-0"]
    assert s.unneeded[0].since == env.clock.now()
    assert unremovable(s) == {"pool-a-0": "NotUnneededLongEnough", "pool-a-1": "NotUnderutilized"}
    assert env.metric("cluster_autoscaler_unneeded_nodes_count") == 1
    # The soft taint marks the candidate.
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == [DELETION_CANDIDATE_TAINT]
    env.clock.advance(UNNEEDED - 1)
    s = await env.summary()
    assert s.started == () and env.deleted() == []
    env.clock.advance(1)
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert env.deleted() == [["pool-a-0"]]
    assert [p.metadata.name for p in (await env.client.list(types_pb2.Pod, "default")).items] == [
        "b"
    ]
    taints = {t.key: t for t in (await env.node("pool-a-0")).spec.taints}
    assert taints[TO_BE_DELETED_TAINT].effect == "NoSchedule"
    assert taints[TO_BE_DELETED_TAINT].value == str(int(env.clock.now()))
    assert ("pool-a-0", "ScaleDown", "marked the node as toBeDeleted/unschedulable") in env.events
    assert ("a", "ScaleDown", "deleting pod for node scale down") in env.events
    assert ("pool-a-0", "ScaleDown", "node removed by cluster autoscaler") in env.events
    assert (
        env.metric("cluster_autoscaler_scaled_down_nodes_total", {"reason": "underutilized"}) == 1
    )
    assert s.last_scale_down_time == env.clock.now()


async def test_empty_nodes_go_in_bulk_up_to_max_empty_bulk_delete() -> None:
    env = Env(4, scale_down=ScaleDownOptions(unneeded_time=0, max_empty_bulk_delete=3))
    s = await env.summary()
    assert len(s.started) == 3
    assert env.deleted() == [sorted(s.started)]
    assert ("pool-a-0", "ScaleDownEmpty", "removing empty node 'pool-a-0'") in env.events
    assert env.metric("cluster_autoscaler_scaled_down_nodes_total", {"reason": "empty"}) == 3


async def test_min_size_is_kept() -> None:
    env = Env(3, min_size=2, scale_down=ScaleDownOptions(unneeded_time=0))
    s = await env.summary()
    assert len(s.started) == 1
    assert sorted(unremovable(s).values()) == ["NodeGroupMinSizeReached"] * 2


@pytest.mark.parametrize(
    ("pod", "reason"),
    [
        (make_pod("bare").namespace("default").req(cpu="100m"), "BlockedByPod"),
        (rs_pod("nse", "").annotation(SAFE_TO_EVICT, "false"), "BlockedByPod"),
        (custom_pod("custom"), "BlockedByPod"),  # --skip-nodes-with-custom-controller-pods
        (rs_pod("sys", "").namespace("kube-system"), "BlockedByPod"),
        (
            make_pod("bare-ok")
            .namespace("default")
            .req(cpu="100m")
            .annotation(SAFE_TO_EVICT, "true"),
            None,
        ),
        (rs_pod("low", "").priority(-20), None),
    ],
)
async def test_drainability_rules(pod: PodBuilder, reason: str | None) -> None:
    env = Env(2)
    env.add(pod.node("pool-a-0").phase("Running").obj())
    s = await env.summary()
    if reason is None:
        assert "pool-a-0" in {u.name for u in s.unneeded}
    else:
        assert unremovable(s)["pool-a-0"] == reason


async def test_a_pdb_without_disruptions_allowed_blocks() -> None:
    # (Rechecked every loop: this is about the budget, not the recheck timeout.)
    opts = ScaleDownOptions(
        unneeded_time=UNNEEDED, delay_after_add=0.0, unremovable_node_recheck_timeout=0
    )
    env = Env(2, scale_down=opts)
    env.add(rs_pod("a", "pool-a-0").label("app", "a").obj())
    pdb = make_pdb("a").namespace("default").selector(app="a").min_available(1).obj()
    pdb.status.disruptions_allowed = 0
    env.add(pdb)
    s = await env.summary()
    assert unremovable(s)["pool-a-0"] == "BlockedByPod"
    # A budget of one lets one node go, not two that both need it.
    pdb = await env.client.get(types_pb2.PodDisruptionBudget, "a", "default")
    pdb.status.disruptions_allowed = 1
    await env.client.update_status(pdb)
    env.add(rs_pod("b", "pool-a-1").label("app", "a").obj())
    env.grow(1)
    s = await env.summary()
    assert len({u.name for u in s.unneeded} & {"pool-a-0", "pool-a-1"}) == 1, s
    assert "BlockedByPod" in unremovable(s).values()


async def test_a_node_found_unremovable_is_not_checked_again_until_the_recheck_timeout() -> None:
    env = Env(1, scale_down=ScaleDownOptions(unneeded_time=0, unremovable_node_recheck_timeout=60))
    env.add(rs_pod("a", "pool-a-0").annotation(SAFE_TO_EVICT, "false").obj())
    s = await env.summary()
    assert unremovable(s)["pool-a-0"] == "BlockedByPod"
    await env.client.delete(types_pb2.Pod, "a", "default")
    # Nothing blocks it any more, but it was found unremovable 30 s ago: not checked.
    env.clock.advance(30)
    s = await env.summary()
    assert unremovable(s)["pool-a-0"] == "RecentlyUnremovable"
    assert env.deleted() == []
    env.clock.advance(31)
    s = await env.summary()
    assert "pool-a-0" not in unremovable(s)
    assert env.deleted() == [["pool-a-0"]]


async def test_no_place_to_move_pods_keeps_the_node() -> None:
    env = Env(2)
    env.add(rs_pod("a", "pool-a-0", cpu="900m").obj(), rs_pod("b", "pool-a-1", cpu="900m").obj())
    s = await env.summary()
    # One of the two may go (its pod fits the other), not both.
    assert len(s.unneeded) == 1
    assert "NoPlaceToMovePods" in unremovable(s).values()


async def test_scale_down_disabled_annotation() -> None:
    env = Env(1)
    node = await env.node("pool-a-0")
    node.metadata.annotations[SCALE_DOWN_DISABLED] = "true"
    await env.client.update(node)
    s = await env.summary()
    assert unremovable(s) == {"pool-a-0": "ScaleDownDisabledAnnotation"}


async def test_delay_after_add_and_no_scale_down_in_a_loop_that_scaled_up() -> None:
    env = Env(1, scale_down=ScaleDownOptions(unneeded_time=0, delay_after_add=30))
    env.add(
        make_pod("pending")
        .namespace("default")
        .uid("uid-p")
        .req(cpu="1900m")
        .condition("PodScheduled", "False", "Unschedulable")
        .node_selector({"kubernetes.io/hostname": "nowhere"})
        .obj()
    )
    # The pod fits no template either (selector): no scale-up, scale-down runs.
    result = await env.loop()
    assert result.scale_up is not None and result.scale_up.option is None
    assert result.scale_down is not None and result.scale_down.started == ("pool-a-0",)
    env2 = Env(1, scale_down=ScaleDownOptions(unneeded_time=0, delay_after_add=30))
    env2.add(
        make_pod("pending")
        .namespace("default")
        .uid("uid-p")
        .req(cpu="1900m")
        .condition("PodScheduled", "False", "Unschedulable")
        .obj()
    )
    env2.add(rs_pod("a", "pool-a-0", cpu="1900m").obj())
    result = await env2.loop()
    assert result.scale_up is not None and result.scale_up.option is not None
    assert result.scale_down is None
    await env2.client.delete(types_pb2.Pod, "pending", "default")
    await env2.client.delete(types_pb2.Pod, "a", "default")
    s = await env2.summary()
    assert s.in_cooldown and "--scale-down-delay-after-add" in s.cooldown_reason
    assert s.started == ()
    env2.clock.advance(30)
    env2.cloud.register(GROUP)
    s = await env2.summary()
    assert not s.in_cooldown


@pytest.mark.parametrize("version", ["1.37", "1.36"])
async def test_s_ca_1_a_pod_in_prebind_with_nnn_spares_its_node_from_1_37(version: str) -> None:
    env = Env(1, version=version, scale_down=ScaleDownOptions(unneeded_time=0))
    # Binding: no PodScheduled condition yet, nominatedNodeName set (KEP-5278).
    env.add(
        make_pod("binding")
        .namespace("default")
        .uid("uid-binding")
        .req(cpu="1500m")
        .owner("ReplicaSet", "rs", "uid-rs")
        .nominated("pool-a-0")
        .obj()
    )
    s = await env.summary()
    if version == "1.37":
        assert s.started == ()
        assert unremovable(s) == {"pool-a-0": "NotUnderutilized"}
    else:
        assert s.started == ("pool-a-0",)


def _preemptor(node: str) -> types_pb2.Pod:
    return (
        make_pod("preemptor")
        .namespace("default")
        .uid("uid-pre")
        .req(cpu="100m")
        .priority(100)
        .owner("ReplicaSet", "rs", "uid-rs")
        .nominated(node)
        .condition("PodScheduled", "False", "Unschedulable")
        .obj()
    )


@pytest.mark.parametrize("version", ["1.37", "1.36"])
async def test_s_ca_2_a_preemptor_nominated_node_counts_as_used(version: str) -> None:
    """Both versions count an unschedulable, non-expendable preemptor on its nominated node:
    it must fit elsewhere for the node to go, as a bound pod must; alone in the group, it
    has nowhere to go (upstream has no rule that spares the node for it)."""
    env = Env(1, version=version, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(_preemptor("pool-a-0"))
    s = await env.summary()
    assert s.started == ()
    assert unremovable(s) == {"pool-a-0": "NoPlaceToMovePods"}


async def test_a_node_a_pod_is_nominated_to_goes_when_the_pod_fits_elsewhere() -> None:
    """No sparing: with room for the preemptor on pool-a-1 (0.6 used), pool-a-0 (the
    preemptor's 0.05 only) is unneeded and removed; the preemptor is not evicted (it is not
    bound there: the drain evicts the pods bound to the node)."""
    env = Env(2, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(rs_pod("steady", "pool-a-1", cpu="1200m").obj(), _preemptor("pool-a-0"))
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert unremovable(s) == {"pool-a-1": "NotUnderutilized"}
    assert (await env.client.get(types_pb2.Pod, "preemptor", "default")) is not None


async def test_s_ca_3_a_node_of_expendable_pods_only_is_empty() -> None:
    env = Env(1, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(rs_pod("low", "pool-a-0", cpu="1500m").priority(-20).obj())
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert ("pool-a-0", "ScaleDownEmpty", "removing empty node 'pool-a-0'") in env.events


async def test_s_ca_3_a_drained_pod_may_move_into_the_room_of_expendable_pods() -> None:
    """pool-a-0 (2 cpu) is full: an expendable pod (1 cpu, priority -20) and a 1-cpu one
    (utilization 0.5, not underutilized); pool-a-1 runs a 900m pod (0.45). pool-a-1's pod fits
    pool-a-0 only where the expendable pod runs: upstream's snapshot leaves expendable pods
    out (RunOnce, and the scale-down actuator's createSnapshot), so pool-a-1 is removable and
    drained; at a cutoff below -20 the expendable pod counts, and the pod has nowhere to go."""
    for cutoff, started in ((-10, ("pool-a-1",)), (-30, ())):
        env = Env(2, scale_down=ScaleDownOptions(unneeded_time=0), expendable_cutoff=cutoff)
        env.add(
            rs_pod("cheap", "pool-a-0", cpu="1").priority(-20).obj(),
            rs_pod("kept", "pool-a-0", cpu="1").obj(),
            rs_pod("moved", "pool-a-1", cpu="900m").obj(),
        )
        s = await env.summary()
        assert s.started == started, (cutoff, unremovable(s))


async def _set_unready(env: Env, name: str) -> None:
    node = await env.node(name)
    for cond in node.status.conditions:
        if cond.type == "Ready":
            cond.status, cond.reason = "False", "KubeletNotReady"
    await env.client.update_status(node)


async def test_an_unready_node_is_held_to_the_utilization_threshold() -> None:
    """Upstream's eligibility: readiness picks only the waiting time (--scale-down-unready-
    time). pool-a-0 is ready at 0.6; unready pool-a-1 at 0.8 is NotUnderutilized as a ready
    node would be (not simulated), and unready pool-a-2 at 0.15 is unneeded (its pod fits
    pool-a-0) and removed after the unready time, not the unneeded time."""
    env = Env(3, scale_down=ScaleDownOptions(unneeded_time=600, unready_time=0))
    env.add(
        rs_pod("steady", "pool-a-0", cpu="1200m").obj(),
        rs_pod("busy", "pool-a-1", cpu="1600m").obj(),
        rs_pod("idle", "pool-a-2", cpu="300m").obj(),
    )
    for name in ("pool-a-1", "pool-a-2"):
        await _set_unready(env, name)
    s = await env.summary()
    assert unremovable(s) == {"pool-a-0": "NotUnderutilized", "pool-a-1": "NotUnderutilized"}
    assert s.started == ("pool-a-2",)


async def test_scale_down_unready_disabled_keeps_unready_nodes() -> None:
    env = Env(1, scale_down=ScaleDownOptions(unneeded_time=0, unready_enabled=False))
    await _set_unready(env, "pool-a-0")
    s = await env.summary()
    assert unremovable(s) == {"pool-a-0": "ScaleDownUnreadyDisabled"}
    assert s.started == ()


async def test_a_node_being_deleted_is_reported_so_before_its_annotation() -> None:
    """Upstream's order of the checks: CurrentlyBeingDeleted, then the scale-down-disabled
    annotation, then NotAutoscaled, ScaleDownUnreadyDisabled and NotUnderutilized."""
    env = Env(1)
    node = await env.node("pool-a-0")
    node.metadata.annotations[SCALE_DOWN_DISABLED] = "true"
    node.spec.taints.add(key=TO_BE_DELETED_TAINT, value="1", effect="NoSchedule")
    await env.client.update(node)
    env.cloud.groups[GROUP].instances[0].status.instance_state = DELETING
    s = await env.summary()
    assert unremovable(s) == {"pool-a-0": "CurrentlyBeingDeleted"}


async def test_the_first_loop_removes_leftover_taints() -> None:
    env = Env(2)
    for name in ("pool-a-0", "pool-a-1"):
        node = await env.node(name)
        node.spec.taints.add(key=TO_BE_DELETED_TAINT, value="1", effect="NoSchedule")
        node.spec.taints.add(key=DELETION_CANDIDATE_TAINT, value="1", effect="PreferNoSchedule")
        await env.client.update(node)
    env.add(rs_pod("a", "pool-a-1", cpu="1500m").obj())
    await env.loop()
    assert [t.key for t in (await env.node("pool-a-1")).spec.taints] == []
    # pool-a-0 is unneeded: the soft taint comes back (the next loop sees it gone).
    await env.loop()
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == [DELETION_CANDIDATE_TAINT]


async def test_the_first_loop_keeps_the_taint_of_a_node_the_cloud_is_deleting() -> None:
    """A previous autoscaler asked the cloud to delete pool-a-0 and died: the cloud is still
    deleting its instance, so its ToBeDeleted taint stays (without it the scheduler would bind
    pods to a node about to go); pool-a-1's leftover taint goes."""
    env = Env(2)
    for name in ("pool-a-0", "pool-a-1"):
        node = await env.node(name)
        node.spec.taints.add(key=TO_BE_DELETED_TAINT, value="1", effect="NoSchedule")
        await env.client.update(node)
    env.cloud.groups[GROUP].instances[0].status.instance_state = DELETING
    env.add(rs_pod("a", "pool-a-1", cpu="1500m").obj())
    await env.loop()
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == [TO_BE_DELETED_TAINT]
    assert [t.key for t in (await env.node("pool-a-1")).spec.taints] == []
    assert env.deleted() == []


async def test_an_empty_node_bound_to_after_its_taint_is_kept() -> None:
    """The scheduler binds pods to an empty node right after the autoscaler tainted it (its
    cache had not seen the taint): after --node-delete-delay-after-taint the autoscaler reads
    the node's pods again, keeps the node and removes its taint."""
    env = Env(2, scale_down=ScaleDownOptions(unneeded_time=0), delay_after_taint=5.0)
    env.add(rs_pod("a", "pool-a-1", cpu="1500m").obj())
    async with anyio.create_task_group() as tg:
        tg.start_soon(env.loop)
        await anyio.wait_all_tasks_blocked()
        assert env.clock.sleepers == 1
        assert TO_BE_DELETED_TAINT in [t.key for t in (await env.node("pool-a-0")).spec.taints]
        env.add(rs_pod("late", "pool-a-0").obj())
        env.clock.advance(4.9)
        await anyio.wait_all_tasks_blocked()
        assert env.deleted() == []
        env.clock.advance(0.1)
    assert env.deleted() == []
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == []
    assert env.autoscaler.scale_down is not None
    assert env.autoscaler.scale_down.actuator.deleting == {}


async def test_an_empty_node_still_empty_after_the_delay_is_deleted() -> None:
    env = Env(2, scale_down=ScaleDownOptions(unneeded_time=0), delay_after_taint=5.0)
    env.add(rs_pod("a", "pool-a-1", cpu="1500m").obj())
    async with anyio.create_task_group() as tg:
        tg.start_soon(env.loop)
        await anyio.wait_all_tasks_blocked()
        assert env.clock.sleepers == 1
        assert env.deleted() == []
        env.clock.advance(5)
    assert env.deleted() == [["pool-a-0"]]


async def test_a_drain_starts_after_the_delay_and_evicts_what_was_bound_since() -> None:
    env = Env(2, scale_down=ScaleDownOptions(unneeded_time=0), delay_after_taint=5.0)
    env.add(rs_pod("a", "pool-a-0").obj(), rs_pod("b", "pool-a-1", cpu="1500m").obj())
    async with anyio.create_task_group() as tg:
        tg.start_soon(env.loop)
        await anyio.wait_all_tasks_blocked()
        assert env.clock.sleepers == 1
        env.add(rs_pod("late", "pool-a-0").obj())
        env.clock.advance(5)
    assert env.deleted() == [["pool-a-0"]]
    left = (await env.client.list(types_pb2.Pod, "default")).items
    assert [p.metadata.name for p in left] == ["b"]


async def test_a_delete_the_cloud_took_in_without_answering_keeps_the_taint() -> None:
    """DeleteNodes fails (Unavailable) but the cloud lists the instance as deleting: the node
    keeps its taint (the scheduler stays away) and counts as being deleted until the instance
    is gone; a refused DeleteNodes (instance not deleting) removes the taint as before."""
    env = Env(3, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(rs_pod("a", "pool-a-1", cpu="1500m").obj(), rs_pod("b", "pool-a-2", cpu="1500m").obj())
    env.cloud.lost_delete_answer = Unavailable("connection reset")
    s = await env.summary()
    assert s.started == ("pool-a-0",) and env.deleted() == [["pool-a-0"]]
    env.cloud.lost_delete_answer = None
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == [TO_BE_DELETED_TAINT]
    assert any(e[:2] == ("pool-a-0", "ScaleDownFailed") for e in env.events)
    env.clock.advance(ScaleDownOptions().delay_after_failure)
    s = await env.summary()
    assert s.deleting == ("pool-a-0",) and s.started == ()
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == [TO_BE_DELETED_TAINT]
    # The instance goes: the deletion is over.
    env.cloud.groups[GROUP].instances.pop(0)
    await env.client.delete(types_pb2.Node, "pool-a-0")
    s = await env.summary()
    assert s.deleting == ()
    # A refusal: the cloud is not deleting pool-a-1 (its pod gone): the taint is removed.
    await env.client.delete(types_pb2.Pod, "a", "default")
    env.cloud.failures["delete_nodes"] = Invalid.field("nodes", "min size reached")
    env.clock.advance(ScaleDownOptions().delay_after_failure)
    s = await env.summary()
    assert s.started == ("pool-a-1",)
    assert [t.key for t in (await env.node("pool-a-1")).spec.taints] == []
    assert s.deleting == ()


async def test_a_failed_drain_removes_the_taint_and_backs_off() -> None:
    opts = ScaleDownOptions(unneeded_time=0, max_pod_eviction_time=0, eviction_retry_time=1)
    env = Env(2, scale_down=opts)
    env.add(rs_pod("a", "pool-a-0").obj())
    env.client.fail("evict", TooManyRequests("Cannot evict pod"), resource="pods")
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert env.deleted() == []
    assert [t.key for t in (await env.node("pool-a-0")).spec.taints] == []
    assert any(e[1] == "ScaleDownFailed" for e in env.events)
    s = await env.summary()
    assert s.in_cooldown and "--scale-down-delay-after-failure" in s.cooldown_reason


async def test_non_empty_candidates_are_capped_per_loop() -> None:
    env = Env(3, scale_down=ScaleDownOptions(unneeded_time=UNNEEDED, non_empty_candidates_count=1))
    env.add(rs_pod("a", "pool-a-0").obj(), rs_pod("b", "pool-a-1").obj())
    s = await env.summary()
    # pool-a-2 is empty (no simulation); one of the two others is simulated, not both.
    assert {u.name for u in s.unneeded} == {"pool-a-0", "pool-a-2"}
    assert unremovable(s)["pool-a-1"] == "NotUnneededOtherReason"


def ds_pod(name: str, node: str, **annotations: str) -> types_pb2.Pod:
    pod = (
        make_pod(name)
        .namespace("default")
        .uid(f"uid-{name}")
        .req(cpu="100m")
        .node(node)
        .owner("DaemonSet", "ds", "uid-ds")
        .grace(0)
        .phase("Running")
        .obj()
    )
    pod.metadata.annotations.update(annotations)
    return pod


def evicted(env: Env) -> list[str]:
    return [a.name for a in env.client.actions if a.verb == "evict"]


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ({}, ["ds-drained"]),  # upstream's defaults: occupied true, empty false
        (
            {"daemonset_eviction_for_empty_nodes": True},
            ["ds-empty", "ds-drained"],
        ),
        ({"daemonset_eviction_for_occupied_nodes": False}, []),
    ],
)
async def test_daemonset_pods_are_evicted_best_effort_as_the_flags_say(
    flags: dict[str, bool], expected: list[str]
) -> None:
    env = Env(3, scale_down=ScaleDownOptions(unneeded_time=0, **flags))
    # pool-a-0: empty but for a DaemonSet pod; pool-a-1: drained (its ReplicaSet pod moves to
    # pool-a-2), then its DaemonSet pod; pool-a-2 keeps a big pod.
    env.add(
        ds_pod("ds-empty", "pool-a-0"),
        ds_pod("ds-drained", "pool-a-1"),
        rs_pod("a", "pool-a-1", cpu="300m").obj(),
        rs_pod("big", "pool-a-2", cpu="1500m").obj(),
    )
    s = await env.summary()
    assert set(s.started) == {"pool-a-0", "pool-a-1"}, s
    got = [n for n in evicted(env) if n.startswith("ds-")]
    assert sorted(got) == sorted(expected)
    # After the other pods: the ReplicaSet pod's eviction comes first.
    if "ds-drained" in got:
        assert evicted(env).index("a") < evicted(env).index("ds-drained")


async def test_the_enable_ds_eviction_annotation_overrides_the_flag() -> None:
    env = Env(1, scale_down=ScaleDownOptions(unneeded_time=0))
    env.add(
        ds_pod("ds", "pool-a-0", **{"cluster-autoscaler.kubernetes.io/enable-ds-eviction": "true"})
    )
    s = await env.summary()
    assert s.started == ("pool-a-0",)
    assert evicted(env) == ["ds"]


async def test_custom_controller_pods_move_with_skip_nodes_with_custom_controller_pods_false() -> (
    None
):
    opts = ScaleDownOptions(unneeded_time=UNNEEDED, skip_nodes_with_custom_controller_pods=False)
    env = Env(2, scale_down=opts)
    env.add(custom_pod("custom").node("pool-a-0").obj())
    s = await env.summary()
    assert "pool-a-0" in {u.name for u in s.unneeded}
