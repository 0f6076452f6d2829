"""Registration, node status and the node Lease on FakeClient + FakeClock."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import FuncHandler, Informer
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Unavailable
from kemu.testing.builders import make_node
from kemu.testing.fake_time import wait_until
from kubelet.node_status import (
    NODE_LEASE_NAMESPACE,
    NodeAgent,
    next_on_grid,
)
from kubelet.options import allocatable_of, parse_taints
from kubelet.settings import NodeConfig, NodeTiming

from .helpers import advance

pytestmark = pytest.mark.anyio


def config(name: str = "n1") -> NodeConfig:
    capacity = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return NodeConfig(
        name=name,
        capacity=capacity,
        allocatable=allocatable_of(capacity, {"cpu": "100m", "memory": "512Mi"}),
        kubelet_version="v1.37.0",
        labels={"zone": "a"},
        taints=tuple(parse_taints("dedicated=batch:NoSchedule")),
    )


class SlowLeases(FakeClient):
    """Lease writes take `latency` seconds of (fake) time."""

    latency = 0.25

    async def update(self, obj):
        if isinstance(obj, types_pb2.Lease):
            await self.clock.sleep(self.latency)
        return await super().update(obj)


def renew_seconds(lease: types_pb2.Lease) -> float:
    return lease.spec.renew_time.ToMicroseconds() / 1e6


async def mark_ready_unknown(fake: FakeClient, name: str) -> None:
    """What the node lifecycle controller writes when the node went silent (its Ready only)."""
    node = await fake.get(types_pb2.Node, name)
    for c in node.status.conditions:
        if c.type == "Ready":
            c.status = "Unknown"
    await fake.update_status(node)


@dataclass
class Routed:
    """A running agent the node informer tells of its Node's changes, on a fake clock."""

    clock: FakeClock
    fake: FakeClient
    agent: NodeAgent


@asynccontextmanager
async def routed_agent(timing: NodeTiming) -> AsyncIterator[Routed]:
    """A node informer and an agent it tells of the Node's changes, as the kubelet wires
    them, both running until the block ends."""
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    nodes = Informer(fake, types_pb2.Node, clock=clock)
    agent = NodeAgent(fake, config(), clock=clock, timing=timing, lister=nodes.lister)
    nodes.add_event_handler(
        FuncHandler(on_add=agent.node_changed, on_update=lambda _old, new: agent.node_changed(new))
    )
    async with anyio.create_task_group() as tg:
        await tg.start(nodes.run)
        tg.start_soon(agent.run)
        yield Routed(clock, fake, agent)
        tg.cancel_scope.cancel()


async def test_registration_creates_a_ready_node_with_allocatable_labels_and_taints():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    agent = NodeAgent(fake, config(), clock=clock)
    await agent.register()
    node = await fake.get(types_pb2.Node, "n1")
    assert dict(node.status.capacity) == {"cpu": "4", "memory": "8Gi", "pods": "110"}
    assert dict(node.status.allocatable) == {"cpu": "3900m", "memory": "7680Mi", "pods": "110"}
    assert node.metadata.labels["kubernetes.io/hostname"] == "n1"
    assert node.metadata.labels["kubernetes.io/os"] == "linux"
    assert node.metadata.labels["zone"] == "a"
    assert [(t.key, t.value, t.effect) for t in node.spec.taints] == [
        ("dedicated", "batch", "NoSchedule")
    ]
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert (ready.status, ready.reason, ready.message) == (
        "True",
        "KubeletReady",
        "kubelet is posting ready status",
    )
    assert ready.last_heartbeat_time.ToMicroseconds() == int(clock.now() * 1e6)
    assert node.status.node_info.kubelet_version == "v1.37.0"


async def test_reregistration_updates_an_existing_node_and_keeps_its_taints():
    clock = FakeClock()
    existing = (
        make_node("n1")
        .capacity(cpu="1")
        .taint("node.kubernetes.io/unreachable", "", "NoSchedule")
        .condition("Ready", "Unknown", "NodeStatusUnknown")
        .obj()
    )
    fake = FakeClient(existing, clock=clock)
    agent = NodeAgent(fake, config(), clock=clock)
    await agent.register()
    assert fake.verbs("nodes") == ["create", "get", "update", "update_status"]
    node = await fake.get(types_pb2.Node, "n1")
    assert node.metadata.labels["zone"] == "a"
    assert [t.key for t in node.spec.taints] == ["node.kubernetes.io/unreachable"]
    assert dict(node.status.capacity)["cpu"] == "4"
    ready = next(c for c in node.status.conditions if c.type == "Ready")
    assert ready.status == "True"


async def test_registration_waits_for_the_apiserver():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    fake.fail("create", Unavailable("connection refused"), times=3)
    agent = NodeAgent(fake, config(), clock=clock)
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.register_until_done)
        await advance(clock, 5)
        await wait_until(agent.registered.is_set)
    assert fake.verbs("nodes").count("create") == 4


async def test_lease_is_renewed_on_absolute_deadlines_without_drift():
    clock = FakeClock()
    fake = SlowLeases(clock=clock)
    agent = NodeAgent(fake, config(), clock=clock, timing=NodeTiming(lease_renew_interval=10))
    start_wall = clock.now()
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.run)
        await advance(clock, 5, step=0.25)
        renewals: list[float] = []
        for _ in range(6):  # sampled at 5, 15, 25, ...
            lease = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
            renewals.append(renew_seconds(lease))
            await advance(clock, 10, step=0.25)
        tg.cancel_scope.cancel()
    lease = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
    assert lease.spec.holder_identity == "n1"
    assert lease.spec.lease_duration_seconds == 40
    assert [(o.kind, o.name) for o in lease.metadata.owner_references] == [("Node", "n1")]
    offsets = [round(t - start_wall, 3) for t in renewals]
    # Every 10 s although each write takes 0.3 s: a relative sleep would drift to 10.25, 20.5...
    assert offsets == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]


async def test_a_failed_renewal_is_retried_and_the_next_keeps_to_the_grid():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    agent = NodeAgent(fake, config(), clock=clock, timing=NodeTiming(lease_renew_interval=10))
    start = clock.now()
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.run)
        await advance(clock, 9.5)
        fake.fail("update", Unavailable("down"), resource="leases", times=2)
        await advance(clock, 1.2)  # 10: fails, 10.2: fails, 10.6: succeeds
        lease = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
        assert round(renew_seconds(lease) - start, 1) == 10.6
        await advance(clock, 9.5)
        lease = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
        assert round(renew_seconds(lease) - start, 1) == 20.0, "back on the grid"
        tg.cancel_scope.cancel()


async def test_a_lease_someone_else_wrote_is_read_again_and_renewed_at_once():
    # upstream's retryUpdateLease: an OptimisticLockError reads the Lease again
    # (backoffEnsureLease) and updates it at once, keeping what the other writer set.
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    agent = NodeAgent(fake, config(), clock=clock, timing=NodeTiming(lease_renew_interval=10))
    start = clock.now()
    async with anyio.create_task_group() as tg:
        tg.start_soon(agent.run)
        await advance(clock, 5)
        other = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
        other.metadata.annotations["example.com/touched"] = "yes"
        await fake.update(other)
        await advance(clock, 5.05)  # the renewal at 10 conflicts (the agent's copy is stale)
        lease = await fake.get(types_pb2.Lease, "n1", NODE_LEASE_NAMESPACE)
        tg.cancel_scope.cancel()
    assert round(renew_seconds(lease) - start, 2) == 10.0, "no backoff after a Conflict"
    assert lease.metadata.annotations["example.com/touched"] == "yes"
    assert agent.lease_renewals == 2


async def test_hollow_nodes_spread_their_renewals_over_the_interval():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    agents = [
        NodeAgent(fake, config(f"h-{i}"), clock=clock, timing=NodeTiming(lease_renew_interval=8))
        for i in range(4)
    ]
    start = clock.now()
    async with anyio.create_task_group() as tg:
        for i, agent in enumerate(agents):
            tg.start_soon(functools.partial(agent.run, offset=8 * i / 4))
        await advance(clock, 14.5, step=0.25)
        tg.cancel_scope.cancel()
    firsts = []
    for i in range(4):
        lease = await fake.get(types_pb2.Lease, f"h-{i}", NODE_LEASE_NAMESPACE)
        firsts.append(round(renew_seconds(lease) - start, 2))
    # All created at registration, then renewed each at its own offset in the interval.
    assert firsts == [8.0, 10.0, 12.0, 14.0]


async def test_node_status_is_written_only_when_it_changed_or_the_report_is_due():
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    timing = NodeTiming(status_update_frequency=10, status_report_frequency=60)
    nodes = Informer(fake, types_pb2.Node, clock=clock)
    agent = NodeAgent(fake, config(), clock=clock, timing=timing, lister=nodes.lister)
    async with anyio.create_task_group() as tg:
        await tg.start(nodes.run)
        tg.start_soon(agent.run)
        await advance(clock, 35, step=1)
        assert agent.status_writes == 1  # the registration
        # The node lifecycle controller marks it Unknown: the next tick rewrites it.
        await mark_ready_unknown(fake, "n1")
        await advance(clock, 10, step=1)
        assert agent.status_writes == 2
        ready = next(
            c for c in (await fake.get(types_pb2.Node, "n1")).status.conditions if c.type == "Ready"
        )
        assert ready.status == "True"
        await advance(clock, 60, step=1)
        assert agent.status_writes == 3  # the report frequency
        tg.cancel_scope.cancel()


async def test_with_the_nodes_changes_routed_the_checks_that_cannot_write_are_skipped():
    """The kubelet routes the node informer's changes to the agent: the status loop then
    checks only at the ticks where it may write (a change, the report), with the same writes
    at the same ticks as checking every tick."""
    timing = NodeTiming(status_update_frequency=10, status_report_frequency=60)
    async with routed_agent(timing) as r:
        clock, fake, agent = r.clock, r.fake, r.agent
        start = clock.monotonic()  # (the agent starts with the block, at this instant)
        await advance(clock, 35, step=1)
        assert agent.status_writes == 1  # the registration
        assert agent.status_checks == 1  # the first tick only; the others could not write
        await mark_ready_unknown(fake, "n1")
        await advance(clock, 10, step=1)
        assert agent.status_writes == 2  # rewritten at the next tick, as before
        assert agent.status_checks == 2
        written = clock.monotonic()
        await advance(clock, 70 - (written - start), step=1)
        # the report is due 60 s after the last write, at its tick: the only check since
        assert agent.status_writes == 2
        await advance(clock, written - start, step=1)
        assert agent.status_writes == 3
        assert agent.status_checks == 3  # checking every tick made 11


async def test_with_the_nodes_changes_routed_a_failed_status_write_is_retried_at_the_next_tick():
    # (CI: a write that timed out during an etcd fault was not retried until the report was
    # due, and the node stayed Unknown)
    timing = NodeTiming(status_update_frequency=10, status_report_frequency=300)
    async with routed_agent(timing) as r:
        clock, fake, agent = r.clock, r.fake, r.agent
        await advance(clock, 15, step=1)
        assert agent.status_writes == 1  # the registration
        await mark_ready_unknown(fake, "n1")
        fake.fail("update_status", Unavailable("etcd timed out"), resource="nodes", times=1)
        await advance(clock, 10, step=1)
        assert agent.status_writes == 1  # the write failed
        await advance(clock, 10, step=1)
        assert agent.status_writes == 2  # retried at the next tick
        ready = next(
            c for c in (await fake.get(types_pb2.Node, "n1")).status.conditions if c.type == "Ready"
        )
        assert ready.status == "True"


def test_next_on_grid_skips_missed_slots():
    assert next_on_grid(100.0, 10.0, 100.5) == 110.0
    assert next_on_grid(100.0, 10.0, 135.0) == 140.0
    assert next_on_grid(100.0, 10.0, 110.0) == 120.0


def test_taint_flag_parsing():
    taints = parse_taints("a=b:NoSchedule, c:NoExecute")
    assert [(t.key, t.value, t.effect) for t in taints] == [
        ("a", "b", "NoSchedule"),
        ("c", "", "NoExecute"),
    ]
    with pytest.raises(ValueError, match="invalid taint effect"):
        parse_taints("a=b:Sometimes")
    with pytest.raises(ValueError, match="expected KEY"):
        parse_taints("a=b")


async def test_nodes_chained_by_after_are_created_in_their_order_however_slow_each_create() -> None:
    clock = FakeClock()
    fake = FakeClient(clock=clock)
    created: list[str] = []
    create = fake.create

    async def slow_create(obj: Any) -> Any:
        if not isinstance(obj, types_pb2.Node):  # (the Leases)
            return await create(obj)
        # the first node's create is the slowest: unchained, the last would be created first
        await anyio.sleep(0.002 * (5 - int(obj.metadata.name[-1])))
        out = await create(obj)
        created.append(obj.metadata.name)
        return out

    fake.create = slow_create  # type: ignore[method-assign]
    agents = [NodeAgent(fake, config(f"h-{i}"), clock=clock) for i in range(5)]
    limiter = anyio.CapacityLimiter(5)
    async with anyio.create_task_group() as tg:
        previous: anyio.Event | None = None
        for agent in agents:
            tg.start_soon(functools.partial(agent.run, limiter=limiter, after=previous))
            previous = agent.registered
        with anyio.fail_after(5):
            await agents[-1].ready.wait()
        tg.cancel_scope.cancel()
    assert created == [f"h-{i}" for i in range(5)]
