"""A process's steps at one virtual instant (kemu.client.clock.ClockSteps, docs/virtual-time.md):
taken at once unless the cluster clock holds and the process is in session; then only once
released, the report saying which step waits."""

from __future__ import annotations

import anyio
import pytest

from kemu.client.clock import ClockSteps

pytestmark = pytest.mark.anyio


async def test_a_step_out_of_session_is_taken_at_once() -> None:
    steps = ClockSteps()
    with anyio.fail_after(1):
        await steps.take()
    assert steps.waiting == 0


async def test_a_step_at_a_scaled_rate_is_taken_at_once() -> None:
    steps = ClockSteps()
    steps.attach(lambda: False, lambda: None)
    with anyio.fail_after(1):
        await steps.take()


async def test_a_held_step_waits_for_its_release_and_reports_itself() -> None:
    steps = ClockSteps()
    reported: list[int] = []
    steps.attach(lambda: True, lambda: reported.append(steps.waiting))
    taken = anyio.Event()

    async def step() -> None:
        await steps.take()
        taken.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(step)
        await anyio.wait_all_tasks_blocked()
        assert reported == [1] and steps.waiting == 1
        steps.release(2)  # not the one waited for: an old release
        await anyio.wait_all_tasks_blocked()
        assert not taken.is_set()
        steps.release(1)
        with anyio.fail_after(1):
            await taken.wait()
    assert steps.waiting == 0


@pytest.mark.parametrize("end", ["detach", "rate"])
async def test_a_held_step_is_taken_when_the_session_ends_or_the_clock_runs(end: str) -> None:
    steps = ClockSteps()
    holding = True
    steps.attach(lambda: holding, lambda: None)
    async with anyio.create_task_group() as tg:
        tg.start_soon(steps.take)
        await anyio.wait_all_tasks_blocked()
        assert steps.waiting == 1
        if end == "detach":
            steps.detach()
        else:
            holding = False
            steps.rate_changed()
    assert steps.waiting == 0
