"""The scale-up loop on a fake cloud: unschedulable pods, expendable pods, nominatedNodeName by
version (S-CA-2, S-CA-3), fitting existing and upcoming nodes, bin-packing, max size, the
provisioning timeout and back-off, events and metrics."""

from __future__ import annotations

import random
from collections.abc import Sequence

import anyio
import pytest
from google.protobuf.message import Message
from prometheus_client import CollectorRegistry

from autoscaler.config import AutoscalingOptions
from autoscaler.decisions import LoopDecisionLog
from autoscaler.expander import LEAST_WASTE, Expander
from autoscaler.metrics import Metrics
from autoscaler.scale_up import NOT_TRIGGER_SCALE_UP, TRIGGERED_SCALE_UP
from autoscaler.static_autoscaler import ListerRegistry, LoopResult, Reporting, StaticAutoscaler
from autoscaler.status import StatusWriter
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.clock import FakeClock
from kemu.component.version import Version
from kemu.scheduling.dra_snapshot import SimulationDraManager
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.profile import default_profile
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.testing.builders import PodBuilder, make_daemon_set, make_node, make_pod
from kemu.testing.eventually import eventually
from tests.unit.autoscaler.fakes import FakeCloud, FakeGroup, template

pytestmark = pytest.mark.anyio


def unschedulable(name: str, cpu: str = "1", *, priority: int = 0) -> PodBuilder:
    return (
        make_pod(name)
        .uid(f"uid-{name}")
        .req(cpu=cpu)
        .priority(priority)
        .condition("PodScheduled", "False", "Unschedulable")
    )


def static_node(name: str, cpu: str = "2") -> types_pb2.Node:
    return make_node(name).capacity(cpu=cpu, memory="4Gi", pods=20).ready().obj()


class Env:
    """A StaticAutoscaler over lists the test edits, a FakeCloud and recorded events."""

    def __init__(
        self,
        *groups: FakeGroup,
        version: str = "1.37",
        nodes: Sequence[types_pb2.Node] = (),
        pods: Sequence[types_pb2.Pod] = (),
        daemonsets: Sequence[types_pb2.DaemonSet] = (),
        claims: Sequence[types_pb2.ResourceClaim] = (),
        slices: Sequence[types_pb2.ResourceSlice] = (),
        classes: Sequence[types_pb2.DeviceClass] = (),
        recorder: object | None = None,
        informers: InformerFactory | None = None,
        decisions: LoopDecisionLog | None = None,
        status_client: ApiClient | None = None,
        **options: object,
    ) -> None:
        """`decisions`: the loop's record (--record-decisions); `status_client`: where the
        status ConfigMap is written (--write-status-configmap), nowhere without one."""
        self.cloud = FakeCloud(*groups)
        self.nodes = list(nodes)
        self.pods = list(pods)
        self.daemonsets = list(daemonsets)
        self.claims = list(claims)
        self.slices = list(slices)
        self.classes = list(classes)
        self.events: list[tuple[str, str, str]] = []
        self.clock = FakeClock()
        self.registry = CollectorRegistry()
        registry = in_tree_registry()
        self.autoscaler = StaticAutoscaler(
            AutoscalingOptions(version=Version.parse(version), **options),  # type: ignore[arg-type]
            self.cloud,
            Framework(
                default_profile(registry),
                registry,
                options=FrameworkOptions(
                    informer_factory=informers, dra_manager=SimulationDraManager()
                ),
            ),
            ListerRegistry(
                nodes=lambda: self.nodes,
                pods=lambda: self.pods,
                daemonsets=lambda: self.daemonsets,
                resource_claims=lambda: self.claims,
                resource_slices=lambda: self.slices,
                device_classes=lambda: self.classes,
            ),
            Reporting(
                recorder or self,  # type: ignore[arg-type]
                Metrics(self.registry),
                status=None
                if status_client is None
                else StatusWriter(status_client, self.clock, lambda: self.nodes),
                decisions=decisions,
            ),
            clock=self.clock,
            expander=Expander(LEAST_WASTE, rng=random.Random(1)),
        )

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
        assert isinstance(obj, types_pb2.Pod)
        self.events.append((obj.metadata.name, reason, message))

    async def loop(self) -> LoopResult:
        return await self.autoscaler.run_once()

    def increases(self) -> list[tuple[str, object]]:
        return [(g, d) for op, g, d in self.cloud.calls if op == "increase"]

    def metric(self, name: str, labels: dict[str, str] | None = None) -> float | None:
        return self.registry.get_sample_value(name, labels or {})


def pool(max_size: int = 3, cpu: str = "2", name: str = "pool-a", **labels: str) -> FakeGroup:
    return FakeGroup(name, 0, max_size, template(name, cpu=cpu, **labels))


async def test_pods_that_fit_nowhere_scale_up_by_bin_packing() -> None:
    env = Env(pool(5), pods=[unschedulable(f"p{i}").obj() for i in range(3)])
    await env.loop()
    # Two 1-cpu pods per 2-cpu node: 3 pods need 2 nodes.
    assert env.increases() == [("pool-a", 2)]
    triggered = [e for e in env.events if e[1] == TRIGGERED_SCALE_UP]
    assert sorted(e[0] for e in triggered) == ["p0", "p1", "p2"]
    assert triggered[0][2] == "pod triggered scale-up: [{pool-a 0->2 (max: 5)}]"
    assert env.metric("cluster_autoscaler_scaled_up_nodes_total") == 2
    assert env.metric("cluster_autoscaler_unschedulable_pods_count", {"type": "unschedulable"}) == 3


async def test_upcoming_nodes_are_capacity_so_a_second_loop_does_not_scale_up_again() -> None:
    env = Env(pool(5), pods=[unschedulable(f"p{i}").obj() for i in range(3)])
    await env.loop()
    result = await env.loop()
    assert env.increases() == [("pool-a", 2)]
    assert result.scale_up is None
    assert set(result.placements.values()) == {
        "template-node-for-pool-a-upcoming-0",
        "template-node-for-pool-a-upcoming-1",
    }
    assert env.metric("cluster_autoscaler_nodes_count", {"state": "notStarted"}) == 2
    # Once registered, the nodes are ordinary nodes; nothing is upcoming.
    env.nodes = env.cloud.register("pool-a")
    result = await env.loop()
    assert env.increases() == [("pool-a", 2)]
    assert result.groups["pool-a"].upcoming == 0
    assert env.metric("cluster_autoscaler_nodes_count", {"state": "ready"}) == 2


async def test_scale_up_never_goes_above_max_size() -> None:
    env = Env(pool(2), pods=[unschedulable(f"p{i}", "1500m").obj() for i in range(4)])
    await env.loop()
    assert env.increases() == [("pool-a", 2)]
    # A loop that scales up tells only the pods it helped (upstream's
    # EventingScaleUpStatusProcessor skips NotTriggerScaleUp then).
    assert {e[1] for e in env.events} == {TRIGGERED_SCALE_UP}
    assert len(env.events) == 2
    env.events.clear()
    await env.loop()
    assert env.increases() == [("pool-a", 2)]
    not_triggered = {e[0]: e[2] for e in env.events if e[1] == NOT_TRIGGER_SCALE_UP}
    assert len(not_triggered) == 2 and len(env.events) == 2
    assert set(not_triggered.values()) == {
        "pod didn't trigger scale-up: 1 max node group size reached"
    }


async def test_pods_that_fit_existing_nodes_are_placed_there_and_remembered() -> None:
    env = Env(
        pool(3),
        nodes=[static_node("n1")],
        pods=[unschedulable("a", "1500m").obj(), unschedulable("b", "1500m").obj()],
    )
    result = await env.loop()
    # One of them fits n1 in simulation and holds its room there: the other needs a node.
    assert list(result.placements.values()) == ["n1"]
    assert env.increases() == [("pool-a", 1)]
    snapshot = env.autoscaler.last_snapshot
    assert snapshot is not None
    n1 = snapshot.get("n1")
    assert n1 is not None and len(n1.pods) == 1


async def test_a_pod_too_big_for_every_template_gets_the_filter_reason() -> None:
    env = Env(pool(3), pods=[unschedulable("big", "3").obj()])
    result = await env.loop()
    assert env.increases() == []
    assert result.scale_up is not None and result.scale_up.option is None
    assert env.events == [
        ("big", NOT_TRIGGER_SCALE_UP, "pod didn't trigger scale-up: 1 Insufficient cpu")
    ]


async def test_templates_carry_their_daemonset_pods_in_the_estimate() -> None:
    """Upstream TemplateNodeInfoFromNodeGroupTemplate forces DaemonSets: two 800m pods share
    a 2-cpu template alone, but not beside a 500m daemon pod (2 nodes, not 1)."""
    agent = make_daemon_set("agent").req(cpu="500m").obj()
    env = Env(pool(5), pods=[unschedulable(f"p{i}", "800m").obj() for i in range(2)])
    await env.loop()
    assert env.increases() == [("pool-a", 1)]
    env = Env(
        pool(5),
        pods=[unschedulable(f"p{i}", "800m").obj() for i in range(2)],
        daemonsets=[agent],
    )
    await env.loop()
    assert env.increases() == [("pool-a", 2)]


async def test_a_pod_that_fits_a_template_only_without_its_daemons_triggers_no_scale_up() -> None:
    env = Env(
        pool(3),
        pods=[unschedulable("big", "1800m").obj()],
        daemonsets=[make_daemon_set("agent").req(cpu="500m").obj()],
    )
    result = await env.loop()
    assert env.increases() == []
    assert result.scale_up is not None and result.scale_up.option is None
    assert env.events == [
        ("big", NOT_TRIGGER_SCALE_UP, "pod didn't trigger scale-up: 1 Insufficient cpu")
    ]


async def test_only_the_daemonsets_that_would_run_on_a_template_count() -> None:
    """A DaemonSet whose node selector the template does not match, or whose pod does not
    tolerate the template's taint, adds nothing (NodeShouldRunDaemonPod)."""
    env = Env(
        pool(3),
        pods=[unschedulable("big", "1800m").obj()],
        daemonsets=[
            make_daemon_set("gpu-agent").req(cpu="500m").node_selector(gpu="yes").obj(),
        ],
    )
    await env.loop()
    assert env.increases() == [("pool-a", 1)]


async def test_upcoming_nodes_carry_the_daemon_pods_of_their_template() -> None:
    env = Env(
        pool(5),
        pods=[unschedulable("p0", "1").obj()],
        daemonsets=[make_daemon_set("agent").req(cpu="500m").obj()],
    )
    await env.loop()
    assert env.increases() == [("pool-a", 1)]
    # The upcoming node holds the daemon pod and p0: a 1-cpu pod no longer fits beside them.
    env.pods.append(unschedulable("p1", "1").obj())
    result = await env.loop()
    assert result.placements == {"default/p0": "template-node-for-pool-a-upcoming-0"}
    assert env.increases() == [("pool-a", 1), ("pool-a", 1)]
    snapshot = env.autoscaler.last_snapshot
    assert snapshot is not None
    upcoming = snapshot.get("template-node-for-pool-a-upcoming-0")
    assert upcoming is not None
    assert sorted(p.pod.metadata.name for p in upcoming.pods) == [
        "agent-pod-template-node-for-pool-a-upcoming-0",
        "p0",
    ]


async def test_node_selector_picks_the_group_whose_template_matches() -> None:
    env = Env(
        pool(3, name="plain"),
        pool(3, name="ssd", disk="ssd"),
        pods=[unschedulable("p").node_selector(disk="ssd").obj()],
    )
    await env.loop()
    assert env.increases() == [("ssd", 1)]


async def test_s_ca_3_expendable_pods_trigger_nothing() -> None:
    env = Env(pool(3), pods=[unschedulable("low", priority=-20).obj()])
    result = await env.loop()
    assert env.increases() == []
    assert [p.metadata.name for p in result.pods.expendable] == ["low"]
    assert env.events == []
    # The cutoff is a flag: below -30, the same pod is an ordinary one.
    env = Env(
        pool(3),
        pods=[unschedulable("low", priority=-20).obj()],
        expendable_pods_priority_cutoff=-30,
    )
    await env.loop()
    assert env.increases() == [("pool-a", 1)]


async def test_s_ca_3_the_room_of_expendable_pods_is_free_to_the_simulation() -> None:
    """Upstream's RunOnce leaves expendable pods out of the cluster snapshot
    (FilterOutExpendablePods before initializeClusterSnapshot): a pending pod that fits n1
    only where an expendable pod runs fits it in simulation (the scheduler will preempt the
    expendable pod), so it triggers no scale-up; below a lower cutoff the same bound pod
    counts, and the pending one needs a node."""
    bound = make_pod("cheap").uid("uid-cheap").req(cpu="1500m").priority(-20).node("n1").obj()
    bound.status.phase = "Running"
    env = Env(pool(3), nodes=[static_node("n1")], pods=[bound, unschedulable("p", "1500m").obj()])
    result = await env.loop()
    assert result.placements == {"default/p": "n1"}
    assert env.increases() == []
    snapshot = env.autoscaler.last_snapshot
    assert snapshot is not None
    n1 = snapshot.get("n1")
    assert n1 is not None and [pi.pod.metadata.name for pi in n1.pods] == ["p"]

    env = Env(
        pool(3),
        nodes=[static_node("n1")],
        pods=[bound, unschedulable("p", "1500m").obj()],
        expendable_pods_priority_cutoff=-30,
    )
    await env.loop()
    assert env.increases() == [("pool-a", 1)]


def preemptor(nominated: str) -> types_pb2.Pod:
    return unschedulable("preemptor", "1500m", priority=100).nominated(nominated).obj()


@pytest.mark.parametrize("version", ["1.36", "1.37"])
async def test_s_ca_2_preemptor_waiting_for_victims_causes_no_scale_up(version: str) -> None:
    victim = (
        make_pod("victim").uid("v").req(cpu="1500m").priority(1).node("n1").phase("Running").obj()
    )
    env = Env(pool(3), version=version, nodes=[static_node("n1")], pods=[victim, preemptor("n1")])
    result = await env.loop()
    assert env.increases() == []
    assert [(p.metadata.name, n) for p, n in result.pods.nominated] == [("preemptor", "n1")]
    snapshot = env.autoscaler.last_snapshot
    assert snapshot is not None
    n1 = snapshot.get("n1")
    # Counted on its node (with the victim still there): the node is in use.
    assert n1 is not None and sorted(pi.pod.metadata.name for pi in n1.pods) == [
        "preemptor",
        "victim",
    ]


@pytest.mark.parametrize(("version", "increases"), [("1.36", [("pool-a", 1)]), ("1.37", [])])
async def test_s_ca_2_nominated_node_gone(version: str, increases: list[object]) -> None:
    """Before kubernetes/autoscaler#9607 a pod nominated to a node that is gone is an ordinary
    unschedulable pod; from 1.37 a pod with NNN never triggers a scale-up."""
    env = Env(pool(3), version=version, pods=[preemptor("gone")])
    await env.loop()
    assert env.increases() == increases


@pytest.mark.parametrize(("version", "increases"), [("1.36", []), ("1.37", [("pool-a", 1)])])
async def test_binding_cycle_nnn_pod_holds_its_node_from_1_37(
    version: str, increases: list[object]
) -> None:
    """KEP-5278: a pod in PreBind carries NNN but is not marked unschedulable. From 1.37 it is
    counted on its node, so a pending pod that would fit there only without it scales up;
    before, the node looks free and the pending pod is placed there in simulation."""
    binding = make_pod("binding").uid("b").req(cpu="1500m").nominated("n1").obj()
    env = Env(
        pool(3),
        version=version,
        nodes=[static_node("n1")],
        pods=[binding, unschedulable("pending", "1500m").obj()],
    )
    await env.loop()
    assert env.increases() == increases


async def test_pods_younger_than_the_new_pod_scale_up_delay_wait() -> None:
    p = unschedulable("young").obj()
    env = Env(pool(3), pods=[p], new_pod_scale_up_delay=30.0)
    p.metadata.creation_timestamp.seconds = int(env.clock.now()) - 10
    result = await env.loop()
    assert env.increases() == []
    assert [x.metadata.name for x in result.pods.too_young] == ["young"]
    env.clock.advance(25)
    await env.loop()
    assert env.increases() == [("pool-a", 1)]


async def test_instance_not_ready_in_time_is_deleted_and_the_group_backed_off() -> None:
    env = Env(
        pool(3),
        pods=[unschedulable("p").obj()],
        max_node_provision_time=60.0,
        initial_node_group_backoff_duration=300.0,
    )
    await env.loop()
    assert env.increases() == [("pool-a", 1)]
    env.clock.advance(30)
    await env.loop()
    assert env.cloud.groups["pool-a"].instances  # not yet
    env.clock.advance(31)
    env.events.clear()
    await env.loop()
    assert ("delete", "pool-a", ["pool-a-0"]) in env.cloud.calls
    assert env.increases() == [("pool-a", 1)]
    assert env.events == [
        (
            "p",
            NOT_TRIGGER_SCALE_UP,
            "pod didn't trigger scale-up: 1 in backoff after failed scale-up",
        )
    ]
    assert env.metric("cluster_autoscaler_failed_scale_ups_total", {"reason": "timeout"}) == 1
    env.clock.advance(301)
    await env.loop()
    assert env.increases() == [("pool-a", 1), ("pool-a", 1)]
    # This one comes up: the scale-up is fulfilled and the back-off forgotten.
    env.nodes = env.cloud.register("pool-a")
    await env.loop()
    assert env.autoscaler.cluster_state.backoff.backed_off("pool-a", 0) is None
    assert env.autoscaler.cluster_state.backoff.backoff("pool-a", "x", 1000) == 1000 + 300


async def test_instance_creation_error_deletes_it_and_tries_another_group() -> None:
    broken = pool(3, name="a-broken")
    broken.error = "OUT_OF_CAPACITY"
    env = Env(broken, pool(3, name="b-fine", cpu="4"), pods=[unschedulable("p").obj()])
    # least-waste prefers the 2-cpu group for a 1-cpu pod.
    await env.loop()
    assert env.increases() == [("a-broken", 1)]
    await env.loop()
    assert ("delete", "a-broken", ["a-broken-0"]) in env.cloud.calls
    assert env.increases() == [("a-broken", 1), ("b-fine", 1)]


async def test_events_reach_the_api_through_the_event_recorder() -> None:
    client = FakeClient()
    clock = FakeClock()
    recorder = EventRecorder(client, "cluster-autoscaler", clock=clock)
    env = Env(pool(3), pods=[unschedulable("p").obj()], recorder=recorder)
    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        await env.loop()

        async def written() -> list[types_pb2.Event]:
            return (await client.list(types_pb2.Event, "default")).items

        events = await eventually(written, timeout=5)
        tg.cancel_scope.cancel()
    assert [(e.reason, e.involved_object.name) for e in events] == [(TRIGGERED_SCALE_UP, "p")]
    assert events[0].source.component == "cluster-autoscaler"
