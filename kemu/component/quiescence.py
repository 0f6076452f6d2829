"""Whether a process has nothing to do but wait (for the event-driven virtual clock: see
kemu/client/clock.py)."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Final

_POLL: Final = 0.001
"""Wall seconds between two looks at a process that still has a runnable task."""
_SCAN_SHARE: Final = 4.0
"""After a look at every task that found one runnable, the next look waits at least this many
times as long as that look took: a process of thousands of tasks (a hollow kubelet of 1,000
nodes has ~4,000) spends at most a fifth of its time looking."""


def _runnable(task: asyncio.Task[Any]) -> bool:
    waiter = task._fut_waiter  # type: ignore[attr-defined]
    return not task.done() and (waiter is None or waiter.done())


def _first_runnable(this: asyncio.Task[Any] | None) -> asyncio.Task[Any] | None:
    for task in asyncio.all_tasks():
        if task is not this and _runnable(task):
            return task
    return None


async def all_tasks_blocked() -> None:
    """Returns once every other task of the event loop waits on something (a future: I/O, a
    sleep, an event), as anyio's wait_all_tasks_blocked but looking again every millisecond
    rather than every 100 (the event-driven clock asks after every jump). The task found
    runnable is looked at alone until it blocks; only then are all tasks looked at again."""
    this = asyncio.current_task()
    await asyncio.sleep(0)
    runnable: asyncio.Task[Any] | None = None
    while True:
        if runnable is not None and _runnable(runnable):
            await asyncio.sleep(_POLL)
            continue
        started = time.perf_counter()
        runnable = _first_runnable(this)
        if runnable is None:
            return
        await asyncio.sleep(max(_POLL, _SCAN_SHARE * (time.perf_counter() - started)))
