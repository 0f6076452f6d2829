"""The node lifecycle controller against the fake client and a fake clock: silent kubelets,
Unknown conditions, unreachable taints, recovery, bare nodes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import app, options, podgc
from controllermanager.config import NodeLifecycleOptions
from controllermanager.controller import ControllerContext
from controllermanager.node_lifecycle import (
    NAME,
    NODE_LEASE_NAMESPACE,
    NODE_STATUS_UNKNOWN_MESSAGE,
    NODE_STATUS_UNKNOWN_REASON,
    NodeLifecycleController,
    reconcile_taints,
    wanted_taints,
)
from controllermanager.options import configurations_from_args
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.machinery.errors import Conflict
from kemu.machinery.taints import TAINT_NODE_NOT_READY, TAINT_NODE_UNREACHABLE
from kemu.testing.builders import make_node
from kemu.testing.fake_time import advance, settle, wait_until

pytestmark = pytest.mark.anyio

GRACE = 40.0
PERIOD = 5.0
UNREACHABLE = {(TAINT_NODE_UNREACHABLE, "NoSchedule"), (TAINT_NODE_UNREACHABLE, "NoExecute")}


@asynccontextmanager
async def running(fake: FakeClient, clock: FakeClock) -> AsyncIterator[NodeLifecycleController]:
    informers = InformerFactory(fake, clock=clock)
    nlc = NodeLifecycleController(
        fake,
        informers,
        clock,
        options=NodeLifecycleOptions(node_monitor_period=PERIOD, node_monitor_grace_period=GRACE),
    )
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(nlc.run)
        await settle()
        yield nlc
        tg.cancel_scope.cancel()


class Kubelet:
    """What a kubelet writes: its Node with a Ready condition and heartbeat, and its Lease.
    `skew` shifts the kubelet's wall clock against the controller's."""

    def __init__(self, clock: FakeClock, client: FakeClient, name: str, skew: float = 0.0):
        self.clock = clock
        self.client = client
        self.name = name
        self.skew = skew

    def _now(self) -> float:
        return self.clock.now() + self.skew

    def register(self, *, lease: bool = True, memory_pressure: bool = True) -> None:
        node = make_node(self.name).capacity(cpu="4").taint("user", "x", "NoSchedule").obj()
        ready = node.status.conditions.add(type="Ready", status="True", reason="KubeletReady")
        ready.last_heartbeat_time.FromNanoseconds(int(self._now() * 1e9))
        if memory_pressure:
            mp = node.status.conditions.add(type="MemoryPressure", status="False")
            mp.last_heartbeat_time.CopyFrom(ready.last_heartbeat_time)
        self.client.add(node)
        if lease:
            lease_obj = types_pb2.Lease()
            lease_obj.metadata.name = self.name
            lease_obj.metadata.namespace = NODE_LEASE_NAMESPACE
            lease_obj.spec.holder_identity = self.name
            lease_obj.spec.renew_time.FromNanoseconds(int(self._now() * 1e9))
            self.client.add(lease_obj)

    async def renew(self) -> None:
        lease = await self.client.get(types_pb2.Lease, self.name, NODE_LEASE_NAMESPACE)
        lease.spec.renew_time.FromNanoseconds(int(self._now() * 1e9))
        await self.client.update(lease)

    async def post_ready(self) -> None:
        """Posts Ready=True (and MemoryPressure=False) with a fresh heartbeat."""
        node = await self.client.get(types_pb2.Node, self.name)
        for cond in node.status.conditions:
            status = "True" if cond.type == "Ready" else "False"
            if cond.status != status:
                cond.last_transition_time.FromNanoseconds(int(self._now() * 1e9))
            cond.status = status
            cond.reason = "KubeletReady" if cond.type == "Ready" else ""
            cond.message = ""
            cond.last_heartbeat_time.FromNanoseconds(int(self._now() * 1e9))
        await self.client.update_status(node)


def node_of(fake: FakeClient, name: str) -> types_pb2.Node:
    node = fake._objects[("nodes", "", name)]
    assert isinstance(node, types_pb2.Node)
    return node


def ready_status(fake: FakeClient, name: str) -> str:
    return next(c.status for c in node_of(fake, name).status.conditions if c.type == "Ready")


def own_taints(fake: FakeClient, name: str) -> set[tuple[str, str]]:
    return {
        (t.key, t.effect)
        for t in node_of(fake, name).spec.taints
        if t.key in (TAINT_NODE_UNREACHABLE, TAINT_NODE_NOT_READY)
    }


def node_writes(fake: FakeClient) -> list[str]:
    return [
        a.verb for a in fake.actions if a.resource == "nodes" and a.verb not in ("list", "watch")
    ]


def events(fake: FakeClient) -> list[types_pb2.Event]:
    return [o for o in fake._objects.values() if isinstance(o, types_pb2.Event)]


async def test_a_silent_node_becomes_unknown_with_both_unreachable_taints() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    kubelet = Kubelet(clock, fake, "n1")
    kubelet.register()
    heartbeat = node_of(fake, "n1").status.conditions[0].last_heartbeat_time
    async with running(fake, clock):
        await advance(clock, GRACE)
        assert ready_status(fake, "n1") == "True", "not before the grace period has passed"
        assert own_taints(fake, "n1") == set()

        await advance(clock, PERIOD)
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)
        node = node_of(fake, "n1")
        ready, memory = node.status.conditions
        assert (ready.type, ready.status, ready.reason, ready.message) == (
            "Ready",
            "Unknown",
            NODE_STATUS_UNKNOWN_REASON,
            NODE_STATUS_UNKNOWN_MESSAGE,
        )
        assert ready.last_heartbeat_time == heartbeat, "the heartbeat is the kubelet's"
        assert ready.last_transition_time.ToSeconds() == int(clock.now())
        assert (memory.type, memory.status, memory.reason) == (
            "MemoryPressure",
            "Unknown",
            NODE_STATUS_UNKNOWN_REASON,
        )
        assert [c.type for c in node.status.conditions] == ["Ready", "MemoryPressure"]
        taints = {(t.key, t.effect): t for t in node.spec.taints}
        assert ("user", "NoSchedule") in taints, "other taints are kept"
        assert taints[(TAINT_NODE_UNREACHABLE, "NoExecute")].time_added.ToSeconds() == int(
            clock.now()
        )
        await wait_until(lambda: len(events(fake)) == 1)
        (event,) = events(fake)
        assert (event.reason, event.involved_object.kind, event.involved_object.name) == (
            "NodeNotReady",
            "Node",
            "n1",
        )

        # Nothing more to write while it stays silent.
        writes = len(node_writes(fake))
        await advance(clock, 3 * PERIOD)
        assert len(node_writes(fake)) == writes


async def test_lease_renewals_keep_a_node_ready_whatever_its_clock_says() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    # The kubelet's clock is an hour behind: only changes of its renewTime count.
    kubelet = Kubelet(clock, fake, "n1", skew=-3600)
    kubelet.register()
    async with running(fake, clock):
        for _ in range(12):
            await advance(clock, 10)
            await kubelet.renew()
            assert ready_status(fake, "n1") == "True"
        assert own_taints(fake, "n1") == set()
        assert "update_status" not in node_writes(fake)

        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: ready_status(fake, "n1") == "Unknown")


async def test_passes_at_which_no_node_can_be_silent_are_skipped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = FakeClock()
    passes: list[float] = []
    monitor = NodeLifecycleController.monitor_node_health

    def counted(self: NodeLifecycleController) -> None:
        passes.append(clock.monotonic())
        monitor(self)

    monkeypatch.setattr(NodeLifecycleController, "monitor_node_health", counted)
    fake = FakeClient(clock=clock)
    kubelet = Kubelet(clock, fake, "n1")
    kubelet.register()
    async with running(fake, clock):
        for _ in range(12):
            await advance(clock, 10)
            await kubelet.renew()
        # A pass every 5 s would be 25; one is due only where the last renewal seen could be
        # GRACE old, and each renewal moves that on: none but the one at the start.
        assert [t - passes[0] for t in passes] == [0.0], passes
        assert ready_status(fake, "n1") == "True"

        # Silent from 120: marked at the same tick as with a pass every PERIOD (the first
        # past 120 + GRACE), and then no pass while no node can go silent.
        await advance(clock, GRACE)
        assert ready_status(fake, "n1") == "True"
        await advance(clock, PERIOD)
        await wait_until(lambda: ready_status(fake, "n1") == "Unknown")
        marked = len(passes)
        await advance(clock, 10 * PERIOD)
        assert len(passes) <= marked + 1, passes[marked:]

        # Heard from again: monitored again.
        await kubelet.renew()
        await kubelet.post_ready()
        await wait_until(lambda: ready_status(fake, "n1") == "True")
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: ready_status(fake, "n1") == "Unknown")


async def test_heartbeats_alone_keep_a_node_without_a_lease_ready() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    kubelet = Kubelet(clock, fake, "n1")
    kubelet.register(lease=False)
    async with running(fake, clock):
        for _ in range(6):
            await advance(clock, 20)
            assert ready_status(fake, "n1") == "True"
            await kubelet.post_ready()
        assert own_taints(fake, "n1") == set()
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: ready_status(fake, "n1") == "Unknown")
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)


async def test_a_node_that_comes_back_loses_the_taints() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    kubelet = Kubelet(clock, fake, "n1")
    kubelet.register()
    async with running(fake, clock):
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)

        # A renewal alone does not make it Ready: the taints follow the Ready condition.
        await kubelet.renew()
        await advance(clock, PERIOD)
        assert own_taints(fake, "n1") == UNREACHABLE

        await kubelet.post_ready()
        await wait_until(lambda: own_taints(fake, "n1") == set())
        assert ready_status(fake, "n1") == "True"
        assert [(t.key, t.effect) for t in node_of(fake, "n1").spec.taints] == [
            ("user", "NoSchedule")
        ]

        # Healthy again: it stays Ready while it renews, and goes Unknown again once silent.
        for _ in range(6):
            await advance(clock, 10)
            await kubelet.renew()
        assert ready_status(fake, "n1") == "True"
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)


async def test_a_node_its_kubelet_reports_not_ready_gets_the_not_ready_taints() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    kubelet = Kubelet(clock, fake, "n1")
    kubelet.register()
    async with running(fake, clock):
        node = await fake.get(types_pb2.Node, "n1")
        node.status.conditions[0].status = "False"
        node.status.conditions[0].reason = "KubeletNotReady"
        await fake.update_status(node)
        not_ready = {(TAINT_NODE_NOT_READY, "NoSchedule"), (TAINT_NODE_NOT_READY, "NoExecute")}
        await wait_until(lambda: own_taints(fake, "n1") == not_ready)

        # Then silent: the not-ready taints are swapped for the unreachable ones.
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)


async def test_bare_nodes_are_left_alone() -> None:
    clock = FakeClock()
    fake = FakeClient(
        make_node("bare").capacity(cpu="4").obj(),
        make_node("static-ready").capacity(cpu="4").ready().obj(),
        make_node("static-not-ready").capacity(cpu="4").ready(False).obj(),
        clock=clock,
    )
    async with running(fake, clock) as nlc:
        await advance(clock, 5 * GRACE, step=PERIOD)
        assert node_writes(fake) == []
        assert nlc.health == {}
        assert ready_status(fake, "static-ready") == "True"


async def test_a_conflicting_write_is_retried_on_a_fresh_copy() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    Kubelet(clock, fake, "n1").register()
    fake.fail("update_status", Conflict("the object has been modified"), times=1)
    async with running(fake, clock):
        await advance(clock, GRACE + PERIOD)
        await wait_until(lambda: own_taints(fake, "n1") == UNREACHABLE)
        assert ready_status(fake, "n1") == "Unknown"
        verbs = node_writes(fake)
        assert verbs[:4] == ["update_status", "get", "update_status", "update"], verbs


async def test_a_deleted_node_is_forgotten() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    Kubelet(clock, fake, "n1").register()
    async with running(fake, clock) as nlc:
        await wait_until(lambda: "n1" in nlc.health)
        await fake.delete(types_pb2.Node, "n1")
        await wait_until(lambda: nlc.health == {})


def test_taint_reconciliation_keeps_other_taints_and_their_times() -> None:
    now = 1_700_000_000.0
    old = types_pb2.Taint(key=TAINT_NODE_UNREACHABLE, effect="NoExecute")
    old.time_added.FromSeconds(123)
    taints = [
        types_pb2.Taint(key="user", effect="NoExecute"),
        types_pb2.Taint(key=TAINT_NODE_NOT_READY, effect="NoSchedule"),
        old,
    ]
    result = reconcile_taints(taints, wanted_taints("Unknown"), now)
    assert result is not None
    assert [(t.key, t.effect, t.time_added.seconds) for t in result] == [
        ("user", "NoExecute", 0),
        (TAINT_NODE_UNREACHABLE, "NoExecute", 123),
        (TAINT_NODE_UNREACHABLE, "NoSchedule", 0),
    ]
    assert reconcile_taints(result, wanted_taints("Unknown"), now) is None
    assert reconcile_taints(taints[:1], wanted_taints("True"), now) is None
    cleared = reconcile_taints(result, wanted_taints("True"), now)
    assert cleared is not None and [(t.key, t.effect) for t in cleared] == [("user", "NoExecute")]


# ---------------------------------------------------------------- flags


def test_flags_configure_both_controllers() -> None:
    args = options.build_parser().parse_args([])
    assert (args.node_monitor_period, args.node_monitor_grace_period) == (5.0, None)
    assert args.pod_gc_quarantine == 40.0
    args = options.build_parser().parse_args(
        ["--node-monitor-period", "500ms", "--node-monitor-grace-period", "3s",
         "--pod-gc-quarantine", "2s"]
    )  # fmt: skip
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    ctx = ControllerContext(
        client=fake,
        informers=InformerFactory(fake, clock=clock),
        clock=clock,
        gates=FeatureGates.default(),
    )
    configured = app.configure_controllers(app.CONTROLLERS, configurations_from_args(args))
    nlc = configured[NAME](ctx)
    assert isinstance(nlc, NodeLifecycleController)
    assert nlc.options == NodeLifecycleOptions(0.5, 3.0)
    gc = configured[podgc.NAME](ctx)
    assert isinstance(gc, podgc.PodGCController)
    assert gc.options.quarantine == 2.0


def test_a_zero_monitor_period_is_a_flag_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        app.main(["--node-monitor-period", "0s"])
    assert exc.value.code == 1
    assert "--node-monitor-period must be greater than 0" in capsys.readouterr().err
