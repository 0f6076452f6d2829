"""The scheduling loop and the rest of the scheduler's event loop. Upstream runs its binding
cycles and informers on goroutines beside scheduleOne; kemu's share one asyncio loop, so
`Scheduler.run` gives them a turn once its own has lasted `turn_seconds` (TURN_SECONDS).
Without that, a queue of thousands of pods ran back to back for seconds with no pod bound
and no event seen (bench/README, "PreemptionAsync")."""

from __future__ import annotations

import anyio
import pytest

from kemu.component.featuregate import FeatureGates
from kemu.scheduling.interface import QueuedPodInfo
from kemu.testing.builders import make_pod
from tests.unit.scheduler.harness import env, settle
from tests.unit.scheduling.deferred_builders import SCHEDULER

pytestmark = pytest.mark.anyio

PODS = 16  # on two nodes of 10 pods each


async def _binds_seen_by_each_cycle(turn_seconds: float) -> list[int]:
    """Queues PODS pods, runs the loop until all are bound; for each cycle, how many
    bindings the API had received when it began."""
    async with env(FeatureGates.default(), turn_seconds=turn_seconds) as e:
        e.node("n1", cpu=str(PODS))
        e.node("n2", cpu=str(PODS))
        for i in range(PODS):
            e.add(make_pod(f"p{i}").req(cpu="1").scheduler_name(SCHEDULER).obj())
        await settle()
        assert len(e.queued()["active"]) == PODS
        seen: list[int] = []
        cycle = e.scheduler.schedule_one

        async def counted(qpi: QueuedPodInfo) -> None:
            seen.append(sum(1 for a in e.client.actions if a.verb == "bind"))
            await cycle(qpi)

        e.scheduler.schedule_one = counted  # type: ignore[method-assign]
        async with anyio.create_task_group() as tg:
            tg.start_soon(e.scheduler.run)
            with anyio.fail_after(10):
                while sum(1 for a in e.client.actions if a.verb == "bind") < PODS:
                    await settle()
                    await anyio.sleep(0.01)
            e.queue.close()
        return seen


async def test_with_its_turn_over_after_every_cycle_the_pods_bind_while_others_queue() -> None:
    seen = await _binds_seen_by_each_cycle(turn_seconds=0.0)
    assert len(seen) == PODS
    # the first pod's binding was received before the last pod's cycle, and every few
    # cycles another
    assert seen[-1] >= PODS // 2
    assert seen == sorted(seen)


async def test_within_its_turn_the_loop_runs_cycles_back_to_back() -> None:
    seen = await _binds_seen_by_each_cycle(turn_seconds=3600.0)
    assert seen == [0] * PODS
