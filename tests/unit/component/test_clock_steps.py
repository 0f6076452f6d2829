"""A process's steps at one virtual instant (kemu.component.clock_steps, docs/virtual-time.md):
taken at once unless the cluster clock holds and the process is in session; then only once
released, the report saying which step waits; several waiting are released one at a time, a
binding cycle's look before a scheduling cycle."""

from __future__ import annotations

import anyio
import pytest

from kemu.component.clock_steps import ClockSteps, StepOrder

CYCLE = StepOrder.SCHEDULING_CYCLE

pytestmark = pytest.mark.anyio


async def test_a_step_out_of_session_is_taken_at_once() -> None:
    steps = ClockSteps()
    with anyio.fail_after(1):
        await steps.take(CYCLE)
    assert steps.waiting == 0


async def test_a_step_at_a_scaled_rate_is_taken_at_once() -> None:
    steps = ClockSteps()
    steps.attach(lambda: False, lambda: None)
    with anyio.fail_after(1):
        await steps.take(CYCLE)


async def test_a_held_step_waits_for_its_release_and_reports_itself() -> None:
    steps = ClockSteps()
    reported: list[int] = []
    steps.attach(lambda: True, lambda: reported.append(steps.waiting))
    taken = anyio.Event()

    async def step() -> None:
        await steps.take(CYCLE)
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
        tg.start_soon(steps.take, CYCLE)
        await anyio.wait_all_tasks_blocked()
        assert steps.waiting == 1
        if end == "detach":
            steps.detach()
        else:
            holding = False
            steps.rate_changed()
    assert steps.waiting == 0


async def test_steps_waiting_together_are_released_one_at_a_time_binding_cycles_first() -> None:
    """Two tasks of one process waiting at one instant (a scheduling cycle's pop, then a
    binding cycle's PreBind poll): the report names the binding cycle's step first, and each
    release lets one go. Before, the second take replaced the first's event: the first
    waited for good."""
    steps = ClockSteps()
    reported: list[int] = []
    steps.attach(lambda: True, lambda: reported.append(steps.waiting))
    taken: list[str] = []

    async def step(name: str, order: StepOrder) -> None:
        await steps.take(order)
        taken.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(step, "pop", CYCLE)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(step, "poll", StepOrder.BINDING_CYCLE)
        await anyio.wait_all_tasks_blocked()
        assert reported == [1, 2] and steps.waiting == 2
        steps.release(1)  # the report before the poll's (an old release): not the next
        await anyio.wait_all_tasks_blocked()
        assert taken == []
        steps.release(2)
        await anyio.wait_all_tasks_blocked()
        assert taken == ["poll"] and steps.waiting == 1 and reported[-1] == 1
        steps.release(1)
    assert taken == ["poll", "pop"] and steps.waiting == 0


async def test_a_cancelled_first_step_reports_the_next() -> None:
    steps = ClockSteps()
    reported: list[int] = []
    steps.attach(lambda: True, lambda: reported.append(steps.waiting))
    poll = anyio.CancelScope()

    async def cancelled_poll() -> None:
        with poll:
            await steps.take(StepOrder.BINDING_CYCLE)

    async with anyio.create_task_group() as tg:
        tg.start_soon(steps.take, CYCLE)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(cancelled_poll)
        await anyio.wait_all_tasks_blocked()
        assert steps.waiting == 2
        poll.cancel()
        await anyio.wait_all_tasks_blocked()
        assert steps.waiting == 1 and reported[-1] == 1
        steps.detach()
    assert steps.waiting == 0
