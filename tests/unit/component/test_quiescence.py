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


async def test_a_runnable_task_is_watched_alone_until_it_waits(
    monkeypatch: pytest.MonkeyPatch,
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
        monkeypatch.undo()
        assert anyio.current_time() >= busy_until
        assert scans <= 3  # one that found the busy task, one that found none
        stop.set()
