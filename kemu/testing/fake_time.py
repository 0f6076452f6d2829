"""Waiting in unit tests that run on kemu's FakeClient and FakeClock, where tasks only ever
yield and never wait on real time: let every ready task run, move the fake clock forward in
steps, poll a synchronous condition with a deadline."""

from __future__ import annotations

from collections.abc import Callable

import anyio.lowlevel

from kemu.component.clock import FakeClock
from kemu.testing.eventually import eventually


async def settle(rounds: int = 50) -> None:
    """Lets every ready task run."""
    for _ in range(rounds):
        await anyio.lowlevel.checkpoint()


async def advance(clock: FakeClock, seconds: float, step: float = 0.5) -> None:
    """Moves the fake clock forward in steps of at most `step`, letting woken tasks run after
    each one (a timer due inside a step fires at the step's end)."""
    await settle()
    remaining = seconds
    while remaining > 1e-9:
        dt = min(step, remaining)
        clock.advance(dt)
        remaining -= dt
        await settle()


async def wait_until(check: Callable[[], object], within: float = 10.0) -> None:
    """Polls a synchronous condition, yielding to other tasks, until it holds (real time bounds
    the wait: a condition that never holds fails after `within` seconds; a bound for a hang,
    not for speed: on a loaded 2-core host a whole in-process controller-manager took over 2 s
    to come up)."""
    await eventually(check, timeout=within, interval=0.001)
