"""Small builders and waits for the kemu.client unit tests."""

from __future__ import annotations

from collections.abc import Callable

import anyio
import anyio.lowlevel

from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.testing.eventually import eventually


def pod(
    name: str, namespace: str = "default", *, labels: dict[str, str] | None = None, node: str = ""
) -> types_pb2.Pod:
    p = types_pb2.Pod(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))
    p.metadata.labels.update(labels or {})
    p.spec.node_name = node
    p.spec.containers.add(name="c", image="img").resources.requests["cpu"] = "100m"
    return p


def node(name: str) -> types_pb2.Node:
    return types_pb2.Node(metadata=types_pb2.ObjectMeta(name=name))


async def wait_until(check: Callable[[], object], within: float = 2.0) -> None:
    """Polls a synchronous condition, yielding to other tasks, until it holds."""
    await eventually(check, timeout=within, interval=0.001)


async def settle(rounds: int = 50) -> None:
    """Lets every ready task run (the fake client and clock only ever yield, never wait)."""
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
