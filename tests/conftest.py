"""Suite-wide pytest configuration: anyio on asyncio, and the multi-process harness plugin."""

from __future__ import annotations

import pytest

pytest_plugins = ["kemu.testing.pytest_plugin"]


@pytest.fixture
def anyio_backend() -> str:
    # grpc.aio and aetcd are asyncio-only.
    return "asyncio"
