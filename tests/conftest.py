"""Suite-wide pytest configuration: anyio on asyncio. kemu's pytest plugin (the fixtures and the
failure reports, kemu.testing.pytest_plugin) comes with the installed package (pytest11)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    # grpc.aio and aetcd are asyncio-only.
    return "asyncio"


@pytest.fixture(scope="session", autouse=True)
async def _one_event_loop(anyio_backend: str) -> AsyncIterator[None]:
    """Keeps one event loop for the whole session.

    grpc.aio binds its completion queue to the loop that was running when it started; a test
    on a new loop while a channel from an earlier one is still shutting down fails with
    'Event loop is closed'. anyio reuses the runner of a live higher-scoped async fixture, so
    this fixture gives every async test (and fixture) the same loop.
    """
    yield
