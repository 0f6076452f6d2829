"""Suite-wide pytest configuration: anyio on asyncio for every async test."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    # grpc.aio and aetcd are asyncio-only.
    return "asyncio"
