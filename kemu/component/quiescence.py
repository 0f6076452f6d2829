"""Whether a process has nothing to do but wait (for the event-driven virtual clock: see
kemu/client/clock.py)."""

from __future__ import annotations

import asyncio
from typing import Final

_POLL: Final = 0.001
"""Wall seconds between two looks at a process that still has a runnable task."""


async def all_tasks_blocked() -> None:
    """Returns once every other task of the event loop waits on something (a future: I/O, a
    sleep, an event), as anyio's wait_all_tasks_blocked but looking again every millisecond
    rather than every 100 (the event-driven clock asks after every jump)."""
    this = asyncio.current_task()
    await asyncio.sleep(0)
    while True:
        for task in asyncio.all_tasks():
            if task is this:
                continue
            waiter = task._fut_waiter  # type: ignore[attr-defined]
            if waiter is None or waiter.done():
                await asyncio.sleep(_POLL)
                break
        else:
            return
