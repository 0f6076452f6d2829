"""all_tasks_blocked: a process has nothing to do but wait."""

from __future__ import annotations

import asyncio

import anyio
import pytest

from kemu.component.quiescence import all_tasks_blocked

pytestmark = pytest.mark.anyio


async def test_it_waits_for_a_busy_task_and_returns_once_every_task_waits() -> None:
    steps = 0
    done = anyio.Event()

    async def busy() -> None:
        nonlocal steps
        for _ in range(200):  # runnable at every turn for 200 turns
            steps += 1
            await asyncio.sleep(0)
        await done.wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(busy)
        with anyio.fail_after(5):
            await all_tasks_blocked()
        assert steps == 200  # it returned only once the busy task waited
        done.set()
