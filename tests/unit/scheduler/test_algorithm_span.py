"""What scheduler_scheduling_algorithm_duration_seconds covers, as upstream's
SchedulingAlgorithmLatency: from the cycle's start (before its CycleState) to the end of
SchedulePod; when SchedulePod fails with a FitError, to the end of PostFilter."""

from __future__ import annotations

import time

import pytest

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.scheduling.interface import CycleState, NodeToStatus
from kemu.scheduling.status import Status
from kemu.scheduling.types import PodInfo, PostFilterResult
from kemu.testing.builders import make_pod
from tests.unit.scheduler.harness import Env, env, settle
from tests.unit.scheduling.deferred_builders import SCHEDULER

pytestmark = pytest.mark.anyio

GATES = FeatureGates.default()


def _pod(name: str, cpu: str) -> types_pb2.Pod:
    return make_pod(name).req(cpu=cpu).scheduler_name(SCHEDULER).obj()


def _observed(e: Env) -> tuple[float, float]:
    """(count, sum) of the histogram."""
    (family,) = e.metrics.scheduling_algorithm_duration.collect()
    values = {s.name: s.value for s in family.samples}
    prefix = "scheduler_scheduling_algorithm_duration_seconds"
    return values[prefix + "_count"], values[prefix + "_sum"]


def _clock(e: Env) -> FakeClock:
    clock = e.scheduler.clock
    assert isinstance(clock, FakeClock)
    return clock


async def test_the_span_starts_before_the_cycle_state() -> None:
    async with env(GATES) as e:
        e.node("n1", cpu="4")
        e.add(_pod("p", "1"))
        await settle()
        original = e.scheduler.new_cycle_state

        def slow_state(pod_info: PodInfo) -> CycleState:
            _clock(e).advance(0.25)
            return original(pod_info)

        e.scheduler.new_cycle_state = slow_state  # type: ignore[method-assign]
        await e.cycle()
        assert e.where("p") != "unschedulable"
        assert _observed(e) == (1.0, 0.25)


async def test_after_a_fit_error_the_span_covers_post_filter() -> None:
    async with env(GATES) as e:
        e.node("n1", cpu="1")
        e.add(_pod("big", "2"))
        await settle()
        original = e.fwk.run_post_filter_plugins

        async def slow_post_filter(
            state: CycleState, pod: types_pb2.Pod, statuses: NodeToStatus
        ) -> tuple[PostFilterResult | None, Status]:
            _clock(e).advance(0.5)
            return await original(state, pod, statuses)

        e.fwk.run_post_filter_plugins = slow_post_filter  # type: ignore[method-assign]
        await e.cycle()
        assert e.where("big") == "unschedulable"
        assert _observed(e) == (1.0, 0.5)


async def test_the_threads_cpu_over_the_span_is_counted_beside_it() -> None:
    """kemu's scheduler_kemu_scheduling_algorithm_cpu_seconds_total: the CPU the scheduler's
    thread spent in the spans, so that a bench can tell the cycle's work from the time the
    process waited for a core."""
    async with env(GATES) as e:
        e.node("n1", cpu="4")
        e.add(_pod("p", "1"))
        await settle()
        original = e.scheduler.new_cycle_state
        spent = 0.0

        def busy_state(pod_info: PodInfo) -> CycleState:
            nonlocal spent
            begin = time.thread_time()
            while time.thread_time() - begin < 0.02:  # 20 ms of this thread's CPU
                pass
            spent = time.thread_time() - begin
            return original(pod_info)

        e.scheduler.new_cycle_state = busy_state  # type: ignore[method-assign]
        await e.cycle()
        assert e.where("p") != "unschedulable"
        assert _observed(e)[0] == 1.0
        (family,) = e.metrics.scheduling_algorithm_cpu.collect()
        (cpu,) = (s.value for s in family.samples if s.name.endswith("_total"))
        assert spent <= cpu < spent + 0.05
