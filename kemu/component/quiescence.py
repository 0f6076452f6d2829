"""Whether a process has nothing to do but wait (for the event-driven virtual clock: see
kemu/client/clock.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from typing import Final

_POLL: Final = 0.001
"""Wall seconds between two looks at a process that still has something to run."""
_SCAN_SHARE: Final = 4.0
"""(Without a ready queue to read.) After a look at every task that found one runnable, the
next look waits at least this many times as long as that look took: a process of thousands of
tasks (a hollow kubelet of 1,000 nodes has ~4,000) spends at most a fifth of its time
looking."""


def _runnable(task: asyncio.Task[object]) -> bool:
    waiter = task._fut_waiter  # type: ignore[attr-defined]
    return not task.done() and (waiter is None or waiter.done())


def _first_runnable(this: asyncio.Task[object] | None) -> asyncio.Task[object] | None:
    for task in asyncio.all_tasks():
        if task is not this and _runnable(task):
            return task
    return None


def _ready_queue() -> Iterable[asyncio.Handle] | None:
    """The running loop's ready queue (CPython's asyncio loops have one), else None."""
    ready: Iterable[asyncio.Handle] | None = getattr(asyncio.get_running_loop(), "_ready", None)
    return ready


def _any_ready(ready: Iterable[asyncio.Handle]) -> bool:
    return any(not handle.cancelled() for handle in ready)


async def all_tasks_blocked() -> None:
    """Returns once every other task of the event loop waits on something (a future: I/O, a
    sleep, an event), as anyio's wait_all_tasks_blocked but looking again every millisecond
    rather than every 100 (the event-driven clock asks after every jump).

    asyncio's loop runs what is ready from its ready queue: a task that can go on, or a
    future's callback that will let one go on, is a handle there. So the look is at that queue
    (the handles of one turn of the loop, not the process's thousands of tasks); a loop
    without one (not CPython's) has its tasks looked at, one found runnable alone until it
    blocks."""
    this = asyncio.current_task()
    await asyncio.sleep(0)
    ready = _ready_queue()
    if ready is not None:
        # (polled: nothing signals that the queue ran empty)
        while True:
            if not _any_ready(ready):
                return
            await asyncio.sleep(_POLL)
    runnable: asyncio.Task[object] | None = None
    while True:
        if runnable is not None and _runnable(runnable):
            await asyncio.sleep(_POLL)
            continue
        started = time.perf_counter()
        runnable = _first_runnable(this)
        if runnable is None:
            return
        await asyncio.sleep(max(_POLL, _SCAN_SHARE * (time.perf_counter() - started)))
