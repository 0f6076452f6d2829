"""Taint-based eviction and what goes with it, against the fake client and a fake clock: the
taint eviction controller, the node lifecycle controller's MarkPodsNotReady and grace period
by version, and the pod garbage collector's gcTerminated and gcTerminating."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import pytest

from controllermanager import app
from controllermanager.config import NodeLifecycleOptions, PodGCOptions, default_grace_period
from controllermanager.node_lifecycle import (
    NodeLifecycleController,
    pod_not_ready,
)
from controllermanager.options import select_controllers
from controllermanager.podgc import (
    OUT_OF_SERVICE_TAINT_KEY,
    PodGCController,
    terminated_to_delete,
)
from controllermanager.taint_eviction import (
    DELETION_BY_TAINT_MANAGER,
    DELETION_MESSAGE,
    NAME,
    TaintEvictionController,
    matching_tolerations,
    min_toleration_seconds,
)
from kemu.api.v1 import types_pb2
from kemu.client.fake import FakeClient
from kemu.client.informer import InformerFactory
from kemu.component.clock import FakeClock
from kemu.component.version import Version
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import NotFound
from kemu.testing.builders import make_node, make_pod
from kemu.testing.fake_time import advance, settle

pytestmark = pytest.mark.anyio

UNREACHABLE = "node.kubernetes.io/unreachable"


def tol(key: str, seconds: int | None = None, effect: str = "NoExecute") -> types_pb2.Toleration:
    t = types_pb2.Toleration(key=key, operator="Exists", effect=effect)
    if seconds is not None:
        t.toleration_seconds = seconds
    return t


def taint(key: str, effect: str = "NoExecute") -> types_pb2.Taint:
    return types_pb2.Taint(key=key, effect=effect)


# ---------------------------------------------------------------- pure rules


def test_matching_tolerations_and_the_shortest_toleration():
    taints = [taint(UNREACHABLE), taint("other")]
    assert matching_tolerations(taints, [tol(UNREACHABLE, 300)]) is None
    used = matching_tolerations(taints, [tol(UNREACHABLE, 300), tol("", 60)])
    assert used is not None and [t.key for t in used] == [UNREACHABLE, ""]
    assert min_toleration_seconds(used) == 60.0
    assert min_toleration_seconds([tol(UNREACHABLE)]) is None  # forever
    assert min_toleration_seconds([tol(UNREACHABLE, -5), tol("x", 10)]) == 0.0
    assert min_toleration_seconds([]) == 0.0


def test_the_taint_eviction_controller_is_registered_under_upstreams_name():
    assert NAME == "taint-eviction-controller"
    assert NAME in app.CONTROLLERS
    assert select_controllers("*,-taint-eviction-controller", app.CONTROLLERS).keys() == (
        app.CONTROLLERS.keys() - {NAME}
    )


@pytest.mark.parametrize(("minor", "grace"), [(31, 40.0), (32, 50.0), (37, 50.0)])
def test_node_monitor_grace_period_default_by_version(minor: int, grace: float):
    assert default_grace_period(Version(1, minor)) == grace
    assert NodeLifecycleOptions().grace_period(Version(1, minor)) == grace
    assert NodeLifecycleOptions(node_monitor_grace_period=3.0).grace_period(Version(1, 37)) == 3.0


def test_pod_not_ready_sets_ready_false_and_keeps_the_rest():
    p = make_pod("p").node("n1").obj()
    p.status.conditions.add(type="Ready", status="True", reason="r")
    p.status.conditions.add(type="PodScheduled", status="True")
    new = pod_not_ready(p, 1000.0)
    assert new is not None
    ready = {c.type: c for c in new.status.conditions}["Ready"]
    assert (ready.status, ready.reason) == ("False", "r")
    assert ready.last_transition_time == timestamp(1000.0)
    assert pod_not_ready(new, 2000.0) is None
    assert pod_not_ready(make_pod("q").obj(), 0.0) is None


def test_terminated_pods_above_the_threshold_go_evicted_first_then_oldest():
    def finished(name: str, created: float, reason: str = "") -> types_pb2.Pod:
        p = make_pod(name).node("n1").obj()
        p.metadata.creation_timestamp.CopyFrom(timestamp(created))
        p.status.phase = "Succeeded" if not reason else "Failed"
        p.status.reason = reason
        return p

    running = make_pod("running").node("n1").obj()
    running.status.phase = "Running"
    pods = [
        finished("new", 30.0),
        finished("old", 10.0),
        finished("evicted", 40.0, "Evicted"),
        finished("mid", 20.0),
        running,
    ]
    assert [p.metadata.name for p in terminated_to_delete(pods, 2)] == ["evicted", "old"]
    assert terminated_to_delete(pods, 4) == []
    assert terminated_to_delete(pods, 0) == []  # 0 turns gcTerminated off


# ---------------------------------------------------------------- the controllers


@asynccontextmanager
async def running_controller(fake: FakeClient, clock: FakeClock, make) -> AsyncIterator[object]:
    informers = InformerFactory(fake, clock=clock)
    controller = make(informers)
    async with anyio.create_task_group() as tg:
        informers.start(tg)
        await informers.wait_for_cache_sync()
        tg.start_soon(controller.run)
        await settle()
        yield controller
        tg.cancel_scope.cancel()


def evicted(fake: FakeClient) -> list[str]:
    """The pods the controller deleted, in order, as the client saw the calls."""
    return [
        f"{a.namespace}/{a.name}"
        for a in fake.actions
        if (a.verb, a.resource) == ("delete", "pods")
    ]


async def _exists(fake: FakeClient, name: str) -> bool:
    try:
        await fake.get(types_pb2.Pod, name)
    except NotFound:
        return False
    return True


async def test_pods_are_evicted_after_their_toleration_seconds_and_untolerated_ones_at_once():
    clock = FakeClock()
    node = make_node("n1").obj()
    short = make_pod("short").node("n1").obj()
    short.spec.tolerations.append(tol(UNREACHABLE, 10))
    forever = make_pod("forever").node("n1").obj()
    forever.spec.tolerations.append(tol(UNREACHABLE))
    bare = make_pod("bare").node("n1").obj()
    fake = FakeClient(node, short, forever, bare, clock=clock)
    async with running_controller(
        fake, clock, lambda inf: TaintEvictionController(fake, inf, clock)
    ) as tec:
        assert isinstance(tec, TaintEvictionController)
        await settle()
        assert evicted(fake) == []
        tainted = await fake.get(types_pb2.Node, "n1")
        tainted.spec.taints.append(taint(UNREACHABLE))
        await fake.update(tainted)
        await settle(100)
        assert evicted(fake) == ["default/bare"]  # tolerates nothing: at once
        await advance(clock, 9.0)
        assert await _exists(fake, "short")
        await advance(clock, 1.5)
        assert "default/short" in evicted(fake)
        # A graceful delete, as upstream: the pod terminates (its kubelet would finish it).
        assert (await fake.get(types_pb2.Pod, "short")).metadata.HasField("deletion_timestamp")
        await advance(clock, 1000.0, step=10.0)
        assert await _exists(fake, "forever")
        deleted = [a for a in fake.actions if a.verb == "update_status" and a.name == "short"]
        written = deleted[-1].object
        assert isinstance(written, types_pb2.Pod)
        cond = {c.type: c for c in written.status.conditions}["DisruptionTarget"]
        assert (cond.status, cond.reason, cond.message) == (
            "True",
            DELETION_BY_TAINT_MANAGER,
            DELETION_MESSAGE,
        )


async def test_without_pod_disruption_conditions_the_pod_is_only_deleted():
    """upstream addConditionAndDeletePod: the condition only with PodDisruptionConditions."""
    clock = FakeClock()
    node = make_node("n1").obj()
    node.spec.taints.append(taint(UNREACHABLE))
    fake = FakeClient(node, make_pod("bare").node("n1").obj(), clock=clock)
    async with running_controller(
        fake,
        clock,
        lambda inf: TaintEvictionController(fake, inf, clock, disruption_conditions=False),
    ):
        await settle(100)
        assert evicted(fake) == ["default/bare"]
        assert [a for a in fake.actions if a.verb == "update_status"] == []
        pod = await fake.get(types_pb2.Pod, "bare")
        assert pod.metadata.HasField("deletion_timestamp")
        assert not [c for c in pod.status.conditions if c.type == "DisruptionTarget"]


async def test_removing_the_taint_cancels_a_scheduled_eviction():
    clock = FakeClock()
    node = make_node("n1").obj()
    node.spec.taints.append(taint(UNREACHABLE))
    p = make_pod("p").node("n1").obj()
    p.spec.tolerations.append(tol(UNREACHABLE, 10))
    fake = FakeClient(node, p, clock=clock)
    async with running_controller(
        fake, clock, lambda inf: TaintEvictionController(fake, inf, clock)
    ) as tec:
        assert isinstance(tec, TaintEvictionController)
        await settle(100)
        assert list(tec.scheduled) == ["default/p"]
        n = await fake.get(types_pb2.Node, "n1")
        del n.spec.taints[:]
        await fake.update(n)
        await settle(100)
        assert tec.scheduled == {}
        await advance(clock, 20.0)
        assert evicted(fake) == [] and await _exists(fake, "p")


async def test_a_node_going_unknown_marks_its_pods_not_ready():
    clock = FakeClock()
    node = make_node("n1").obj()
    ready = node.status.conditions.add(type="Ready", status="True")
    ready.last_heartbeat_time.CopyFrom(timestamp(clock.now()))
    p = make_pod("p").node("n1").obj()
    p.status.conditions.add(type="Ready", status="True")
    fake = FakeClient(node, p, clock=clock)
    options = NodeLifecycleOptions(node_monitor_period=1.0, node_monitor_grace_period=5.0)
    async with running_controller(
        fake, clock, lambda inf: NodeLifecycleController(fake, inf, clock, options=options)
    ):
        await advance(clock, 7.0, step=0.5)
        got = await fake.get(types_pb2.Pod, "p")
        assert {c.type: c.status for c in got.status.conditions}["Ready"] == "False"
        n = await fake.get(types_pb2.Node, "n1")
        assert (UNREACHABLE, "NoExecute") in {(t.key, t.effect) for t in n.spec.taints}


async def test_pod_gc_deletes_terminating_pods_of_out_of_service_nodes_and_excess_finished_ones():
    clock = FakeClock()
    down = make_node("down").obj()
    down.status.conditions.add(type="Ready", status="Unknown")
    down.spec.taints.append(taint(OUT_OF_SERVICE_TAINT_KEY))
    up = make_node("up").obj()
    up.status.conditions.add(type="Ready", status="True")
    up.spec.taints.append(taint(OUT_OF_SERVICE_TAINT_KEY))  # Ready: not collected
    stuck = make_pod("stuck").node("down").obj()
    other = make_pod("other").node("up").obj()
    finished = []
    for i in range(3):
        f = make_pod(f"done-{i}").node("up").obj()
        f.metadata.creation_timestamp.CopyFrom(timestamp(100.0 + i))
        f.status.phase = "Succeeded"
        finished.append(f)
    fake = FakeClient(down, up, stuck, other, *finished, clock=clock)
    # Bound pods that are deleted stay, terminating, with the fake as with the apiserver.
    for name in ("stuck", "other"):
        await fake.delete(types_pb2.Pod, name, grace_period_seconds=30)
    options = PodGCOptions(gc_check_period=1.0, terminated_pod_gc_threshold=2)
    async with running_controller(
        fake, clock, lambda inf: PodGCController(fake, inf, clock, options=options)
    ) as gc:
        assert isinstance(gc, PodGCController)
        await advance(clock, 1.5, step=0.5)
        assert not await _exists(fake, "stuck")
        assert await _exists(fake, "other")
        assert not await _exists(fake, "done-0")
        assert await _exists(fake, "done-1") and await _exists(fake, "done-2")
        failed = [a for a in fake.actions if a.verb == "update_status" and a.name == "stuck"]
        assert failed and isinstance(failed[-1].object, types_pb2.Pod)
        assert failed[-1].object.status.phase == "Failed"
