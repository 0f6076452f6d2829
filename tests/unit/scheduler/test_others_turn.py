"""The scheduling loop's turn for the process's other tasks (scheduler/schedule_one.py
`others_turn`): a chain of steps gets through in one turn, an idle loop gives the turn back
at once, a task that never stops is held to the budget."""

from __future__ import annotations

import time

import anyio
import anyio.lowlevel
import pytest

from scheduler.schedule_one import MIN_ROUNDS, others_turn


def _burn(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


@pytest.mark.anyio
async def test_a_chain_of_steps_gets_through_in_one_turn() -> None:
    """A binding cycle's calls, each a few rounds of 100 us of work (the reply's decoding,
    the next request's), all get through in one turn; one round a turn (the loop before)
    moved the chain one step."""
    steps: list[int] = []

    async def chain() -> None:
        for i in range(30):
            await anyio.lowlevel.checkpoint()
            _burn(100e-6)
            steps.append(i)

    async with anyio.create_task_group() as tg:
        tg.start_soon(chain)
        await others_turn(1.0)
        assert len(steps) == 30


@pytest.mark.anyio
async def test_an_idle_loop_gives_the_turn_back_at_once() -> None:
    rounds = 0

    async def counter() -> None:
        nonlocal rounds
        while True:
            await anyio.sleep(3600)
            rounds += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(counter)
        start = time.perf_counter()
        await others_turn(1.0)
        # (a bound for a hang, not for speed: MIN_ROUNDS and a few idle ones)
        assert time.perf_counter() - start < 0.5
        tg.cancel_scope.cancel()
    assert rounds == 0


@pytest.mark.anyio
async def test_a_task_that_never_stops_is_held_to_the_budget() -> None:
    """The scheduling loop gets its turn back once the others have had `budget`."""
    rounds = 0

    async def busy() -> None:
        nonlocal rounds
        while True:
            await anyio.lowlevel.checkpoint()
            _burn(200e-6)
            rounds += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy)
        start = time.perf_counter()
        await others_turn(0.02)
        elapsed = time.perf_counter() - start
        tg.cancel_scope.cancel()
    assert elapsed >= 0.02
    assert rounds > MIN_ROUNDS
