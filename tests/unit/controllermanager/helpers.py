"""Waits and settings shared by the controllermanager unit tests."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.lowlevel

from kemu.component.clock import FakeClock
from kemu.testing.eventually import eventually


async def wait_until(check: Callable[[], object], within: float = 2.0) -> None:
    """Polls a synchronous condition (the fake client and clock only ever yield) until it holds."""
    await eventually(check, timeout=within, interval=0.001)


async def settle(rounds: int = 50) -> None:
    """Lets every ready task run."""
    for _ in range(rounds):
        await anyio.lowlevel.checkpoint()


async def advance(clock: FakeClock, seconds: float, step: float = 0.5) -> None:
    """Moves a fake clock forward in steps, letting woken tasks run after each one."""
    await settle()
    remaining = seconds
    while remaining > 1e-9:
        dt = min(step, remaining)
        clock.advance(dt)
        remaining -= dt
        await settle()
