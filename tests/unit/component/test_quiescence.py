"""all_tasks_blocked: a process has nothing to do but wait."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import anyio
import pytest

from kemu.component import quiescence
from kemu.component.quiescence import all_tasks_blocked

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["ready queue", "task scan"])
def look(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Both ways of looking: the loop's ready queue, and (a loop without one) its tasks."""
    if request.param == "task scan":
        monkeypatch.setattr(quiescence, "_ready_queue", lambda: None)
    yield request.param


async def test_it_waits_for_a_busy_task_and_returns_once_every_task_waits(look: str) -> None:
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


async def test_a_chain_of_callbacks_is_work_too() -> None:
    # (a future's callback, or gRPC's completion handed over from its thread, runs from the
    # ready queue before any task learns of it)
    loop = asyncio.get_running_loop()
    left = 300

    def step() -> None:
        nonlocal left
        left -= 1
        if left:
            loop.call_soon(step)

    loop.call_soon(step)
    with anyio.fail_after(5):
        await all_tasks_blocked()
    assert left == 0


async def test_a_process_of_thousands_of_tasks_is_not_looked_at_task_by_task(
    look: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a hollow kubelet has thousands of tasks: looking at all of them every millisecond
    # while one is busy was a third of its CPU
    stop = anyio.Event()
    busy_until = anyio.current_time() + 0.2

    async def busy() -> None:
        while True:  # runnable at every turn for 0.2 s
            if anyio.current_time() >= busy_until:
                break
            await asyncio.sleep(0)
        await stop.wait()

    scans = 0
    all_tasks = asyncio.all_tasks

    def counted() -> set[asyncio.Task[object]]:
        nonlocal scans
        scans += 1
        return all_tasks()

    async with anyio.create_task_group() as tg:
        for _ in range(2000):
            tg.start_soon(stop.wait)
        tg.start_soon(busy)
        monkeypatch.setattr(asyncio, "all_tasks", counted)
        with anyio.fail_after(5):
            await all_tasks_blocked()
        monkeypatch.setattr(asyncio, "all_tasks", all_tasks)
        assert anyio.current_time() >= busy_until
        # the task scan: one that found the busy task, one that found none
        assert scans == 0 if look == "ready queue" else scans <= 3
        stop.set()
