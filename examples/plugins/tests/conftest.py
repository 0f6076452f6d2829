"""One event loop for the whole session, as a suite of tests on kemu clusters wants it
(docs/testing.md, "Your own tests on a kemu cluster"): kemu's client is grpc.aio, whose
completion queue serves every loop of the process, and an operation that gRPC's core completes
after its test's loop has closed (a watch ended while its read was under way) would fail the
next test with "Event loop is closed". anyio keeps one loop while a higher-scoped async
fixture lives, so this one keeps it for the session."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"  # (grpc.aio is asyncio's)


@pytest.fixture(scope="session", autouse=True)
async def _one_event_loop(anyio_backend: str) -> AsyncIterator[None]:
    yield
