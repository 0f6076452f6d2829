"""Upstream's resize details the kubelet reproduces: the retry timer (30 s after start, then 3
minutes after a node's last retry), the RestartContainer resize policy, observedGeneration
(PodObservedGenerationTracking), and no container resources without in-place resize."""

from __future__ import annotations

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.testing.builders import make_pod
from kubelet.app import pod_worker_options
from kubelet.pod_workers import differs_semantically
from kubelet.resize_action import containers_to_restart
from kubelet.resize_retry import (
    DEFAULT_RETRY_PERIOD,
    INITIAL_RETRY_DELAY,
    TRIGGER_PERIODIC,
    RetryTimer,
)
from kubelet.runtime import SHUTDOWN_DURATION_ANNOTATION, ContainerAllocation, PodRuntime
from kubelet.settings import PodWorkerOptions

from .helpers import advance, running_workers
from .test_allocation import NODE, PENDING, allocated, conditions, pod, resize, settled_pod, start

pytestmark = pytest.mark.anyio


# ---------------------------------------------------------------- the retry timer


def test_the_retry_timer_fires_30s_after_start_then_3m_after_each_retry():
    assert (INITIAL_RETRY_DELAY, DEFAULT_RETRY_PERIOD) == (30.0, 180.0)
    timer = RetryTimer(period=DEFAULT_RETRY_PERIOD)
    timer.start(["n1", "n2"], now=100.0)
    assert timer.next_deadline() == 130.0
    assert timer.due(129.9) == []
    timer.reset("n1", now=120.0)  # a retry of n1 (any trigger)
    assert (timer.deadline("n1"), timer.deadline("n2")) == (300.0, 130.0)
    assert timer.due(130.0) == ["n2"]
    timer.reset("unknown", now=0.0)  # not started: ignored
    assert timer.deadline("unknown") is None
    # A period shorter than the initial delay (tests) is used from the start.
    short = RetryTimer(period=2.0)
    short.start(["n1"], now=0.0)
    assert short.deadline("n1") == 2.0


async def test_a_deferred_resize_is_retried_periodically_3m_after_the_last_retry():
    """Room that no event announces (here: the node grows) is found by the periodic retry,
    which the resize's own retry (pod_updated) pushed to 3 minutes after it."""
    async with running_workers(nodes={"n1": dict(NODE)}) as env:
        await start(env, pod("a"), pod("b"), pod("c"))
        manager = env.workers.allocation_manager
        t0 = env.clock.monotonic()
        await resize(env, "a", "3", "1Gi")  # 3 + 2 > 4: Deferred
        assert conditions(await settled_pod(env, "a"))[PENDING].reason == "Deferred"
        deadline = manager.timer.deadline("n1")
        assert deadline is not None and deadline == pytest.approx(t0 + DEFAULT_RETRY_PERIOD, 0.01)
        env.node().allocatable["cpu"] = 8000
        await advance(env.clock, 60.0, step=1.0)  # past the initial 30 s: nothing yet
        assert allocated(await settled_pod(env, "a"))["cpu"] == "1"
        await advance(env.clock, DEFAULT_RETRY_PERIOD - 60.0 + 1.0, step=1.0)
        a = await settled_pod(env, "a")
        assert allocated(a)["cpu"] == "3" and PENDING not in conditions(a)
        assert manager.deferred_resizes_accepted == {TRIGGER_PERIODIC: 1}


async def test_status_only_changes_do_not_retry_but_spec_and_label_changes_do():
    a = make_pod("a").req(cpu="1").node("n1").obj()
    b = types_pb2.Pod()
    b.CopyFrom(a)
    b.status.phase = "Running"
    assert not differs_semantically(a, b)
    b.metadata.labels["x"] = "y"
    assert differs_semantically(a, b)


# ---------------------------------------------------------------- RestartContainer


def _alloc(cpu_req: str, cpu_lim: str | None, mem_req: str, mem_lim: str | None):
    requests = {"cpu": cpu_req, "memory": mem_req}
    limits = {k: v for k, v in (("cpu", cpu_lim), ("memory", mem_lim)) if v is not None}
    return ContainerAllocation(requests, limits)


def _with_policy(cpu: str, memory: str) -> types_pb2.Pod:
    p = make_pod("p").req(cpu="1", memory="1Gi").node("n1").obj()
    c = p.spec.containers[0]
    c.resize_policy.add(resource_name="cpu", restart_policy=cpu)
    c.resize_policy.add(resource_name="memory", restart_policy=memory)
    return p


def test_containers_to_restart_follow_the_resize_policy_per_resource():
    p = _with_policy("NotRequired", "RestartContainer")
    old = {"c": _alloc("1", None, "1Gi", "1Gi")}
    assert containers_to_restart(p, old, {"c": _alloc("2", None, "1Gi", "1Gi")}) == []
    assert containers_to_restart(p, old, {"c": _alloc("1", None, "1Gi", "2Gi")}) == ["c"]
    # A memory request alone never restarts (upstream compares the memory limit only).
    assert containers_to_restart(p, old, {"c": _alloc("1", None, "2Gi", "1Gi")}) == []
    # The same quantity spelled differently is no change.
    assert containers_to_restart(p, old, {"c": _alloc("1000m", None, "1Gi", "1024Mi")}) == []
    cpu_restarts = _with_policy("RestartContainer", "NotRequired")
    assert containers_to_restart(cpu_restarts, old, {"c": _alloc("2", None, "1Gi", "1Gi")}) == ["c"]
    no_policy = make_pod("p").req(cpu="1").node("n1").obj()
    assert containers_to_restart(no_policy, old, {"c": _alloc("2", None, "1Gi", "2Gi")}) == []


async def test_a_restart_container_resize_restarts_the_container_and_counts_it():
    async with running_workers(nodes={"n1": NODE}) as env:
        p = _with_policy("RestartContainer", "NotRequired")
        p.metadata.name = "r"
        await start(env, p)
        before = (await settled_pod(env, "r")).status.container_statuses[0]
        assert before.restart_count == 0
        await advance(env.clock, 5.0, step=1.0)
        await resize(env, "r", "2", "1Gi")
        await advance(env.clock, 1.0)  # the actuation delay
        after = (await settled_pod(env, "r")).status.container_statuses[0]
        assert after.restart_count == 1
        assert after.state.running.started_at.ToNanoseconds() > (
            before.state.running.started_at.ToNanoseconds()
        )
        assert dict(after.resources.requests)["cpu"] == "2"
        rt = env.workers.runtime((await env.pod("r")).metadata.uid)
        assert rt is not None and rt.to_json()["restarts"] == {"c": 1}
        assert not before.HasField("last_state")
        # issue #57: lastState is the previous instance's end, as upstream's kubelet reports
        # it (exit 0: kemu's containers exit on SIGTERM at once), and it is checkpointed
        last = after.last_state.terminated
        assert (last.exit_code, last.reason) == (0, "Completed")
        assert last.started_at == before.state.running.started_at
        assert last.finished_at == after.state.running.started_at
        assert PodRuntime.from_json(rt.to_json()).last_terminated == rt.last_terminated


async def test_last_state_of_a_container_that_ignores_sigterm_is_killed():
    async with running_workers(nodes={"n1": NODE}) as env:
        p = _with_policy("RestartContainer", "NotRequired")
        p.metadata.name = "r"
        p.metadata.annotations[SHUTDOWN_DURATION_ANNOTATION] = "never"
        await start(env, p)
        await resize(env, "r", "2", "1Gi")
        await advance(env.clock, 1.0)
        after = (await settled_pod(env, "r")).status.container_statuses[0]
        last = after.last_state.terminated
        assert (after.restart_count, last.exit_code, last.reason) == (1, 137, "Error")


# ---------------------------------------------------------------- observedGeneration


def _observed(p: types_pb2.Pod) -> dict[str, int]:
    return {c.type: c.observed_generation for c in p.status.conditions}


async def test_observed_generation_follows_a_resize():
    async with running_workers(nodes={"n1": NODE}) as env:
        await start(env, pod("a"))
        a = await settled_pod(env, "a")
        assert a.metadata.generation == 1 and a.status.observed_generation == 1
        assert _observed(a)["Ready"] == 1
        await resize(env, "a", "2", "1Gi")
        a = await settled_pod(env, "a")
        assert a.metadata.generation == 2 and a.status.observed_generation == 2
        assert _observed(a)["Ready"] == 2
        assert _observed(a)["PodResizeInProgress"] == 2


async def test_without_the_gate_no_observed_generation_is_reported():
    async with running_workers(
        nodes={"n1": NODE}, options=PodWorkerOptions(startup_delay=0.5, observed_generation=False)
    ) as env:
        await start(env, pod("a"))
        await resize(env, "a", "2", "1Gi")
        a = await settled_pod(env, "a")
        assert a.status.observed_generation == 0
        assert set(_observed(a).values()) == {0}


async def test_without_in_place_resize_no_container_resources_are_reported():
    options = pod_worker_options(
        PodWorkerOptions(startup_delay=0.5),
        FeatureGates.for_version(Version(1, 34), {"InPlacePodVerticalScaling": False}),
    )
    assert not options.report_resources and not options.in_place_resize
    async with running_workers(nodes={"n1": NODE}, options=options) as env:
        await start(env, pod("a"))
        (cs,) = (await settled_pod(env, "a")).status.container_statuses
        assert cs.state.HasField("running")
        assert not cs.HasField("resources") and not cs.allocated_resources


@pytest.mark.parametrize(("minor", "tracked"), [(33, False), (34, True), (37, True)])
def test_observed_generation_by_emulated_version(minor: int, tracked: bool):
    gates = FeatureGates.for_version(Version(1, minor))
    assert pod_worker_options(PodWorkerOptions(), gates).observed_generation is tracked
