"""client-go's token bucket (util/flowcontrol/throttle.go over x/time/rate) on a fake clock,
and the real Client's waits for tokens: which calls take one, what the waits show."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

import anyio
import grpc.aio
import pytest
from prometheus_client import CollectorRegistry

from kemu.api.v1 import api_pb2_grpc, types_pb2
from kemu.client.client import Client
from kemu.client.flowcontrol import (
    RATE_LIMITER_METRIC,
    ClientLimits,
    Throttle,
    TokenBucketRateLimiter,
    measure_waits,
)
from kemu.component.client_connection import UNLIMITED, ClientConnection
from kemu.component.clock import FakeClock, RealClock

from .test_client import _Servicer

pytestmark = pytest.mark.anyio


def test_the_bucket_starts_full_then_spaces_tokens_by_one_over_qps() -> None:
    clock = FakeClock(monotonic=100.0)
    bucket = TokenBucketRateLimiter(2.0, 3, clock)
    assert [bucket.reserve() for _ in range(5)] == [100.0, 100.0, 100.0, 100.5, 101.0]
    clock.advance(10.0)  # refilled, up to burst only
    assert [bucket.reserve() for _ in range(4)] == [110.0, 110.0, 110.0, 110.5]


def test_a_cancelled_reservation_gives_its_token_back() -> None:
    clock = FakeClock(monotonic=0.0)
    bucket = TokenBucketRateLimiter(1.0, 1, clock)
    assert bucket.reserve() == 0.0
    due = bucket.reserve()
    assert due == 1.0
    bucket.cancel(due)  # the last one: all of it comes back
    assert bucket.reserve() == 1.0


async def test_waits_sleep_on_the_clock_in_reservation_order() -> None:
    clock = FakeClock(monotonic=0.0)
    bucket = TokenBucketRateLimiter(2.0, 1, clock)
    done: list[tuple[int, float]] = []

    async def take(i: int) -> None:
        await bucket.wait()
        done.append((i, clock.monotonic()))

    async with anyio.create_task_group() as tg:
        for i in range(3):
            tg.start_soon(take, i)
        await anyio.wait_all_tasks_blocked()
        assert done == [(0, 0.0)] and clock.sleepers == 2
        for _ in range(2):
            clock.advance(0.5)
            await anyio.wait_all_tasks_blocked()
    assert done == [(0, 0.0), (1, 0.5), (2, 1.0)]


def test_rest_config_defaults_and_a_negative_qps() -> None:
    assert ClientConnection(0, 0).limits() == (5.0, 10)
    assert ClientConnection(50, 100).limits() == (50.0, 100)
    assert ClientConnection(-1, 100).limits() is None
    assert ClientLimits(UNLIMITED, FakeClock(), host="h", registry=None).new() is None
    with pytest.raises(ValueError, match="--kube-api-burst: Invalid value: -1: must be non"):
        ClientConnection(5, -1).check("--kube-api-qps", "--kube-api-burst")
    with pytest.raises(ValueError, match="kubeAPIQPS: -2 must not be a negative number"):
        ClientConnection(-2, 1).check("kubeAPIQPS", "kubeAPIBurst", negative_qps=False)


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, _Servicer]]:
    srv = grpc.aio.server()
    servicer = _Servicer()
    api_pb2_grpc.add_ApiServicer_to_server(servicer, srv)  # type: ignore[no-untyped-call]
    port = srv.add_insecure_port("127.0.0.1:0")
    await srv.start()
    try:
        yield f"127.0.0.1:{port}", servicer
    finally:
        await srv.stop(None)


def _histogram(registry: CollectorRegistry, verb: str, host: str) -> tuple[float, float]:
    count = registry.get_sample_value(f"{RATE_LIMITER_METRIC}_count", {"verb": verb, "host": host})
    total = registry.get_sample_value(f"{RATE_LIMITER_METRIC}_sum", {"verb": verb, "host": host})
    return count or 0.0, total or 0.0


async def test_unary_calls_and_retries_take_tokens_watches_do_not(
    server: tuple[str, _Servicer],
) -> None:
    address, servicer = server
    registry = CollectorRegistry()
    limits = ClientLimits(ClientConnection(20.0, 2), RealClock(), host=address, registry=registry)
    async with Client(address, timeout=5.0, limits=limits) as client:
        assert isinstance(client.throttle, Throttle)
        assert client.sibling().throttle is not client.throttle
        async with client.watch(types_pb2.Pod) as events:  # (no token)
            await events.__anext__()
        start = anyio.current_time()
        with measure_waits() as waits:
            for _ in range(4):
                await client.get(types_pb2.Pod, "a")
        # 2 at once (the burst), then one every 1/20 s: the 4th no earlier than 0.1 s after
        # the 1st. The waits themselves are shorter by the time the calls took (the bucket
        # refills meanwhile), so only their presence is certain.
        assert anyio.current_time() - start >= 0.09
        assert waits.seconds > 0
        count, _ = _histogram(registry, "GET", address)
        assert count == 4
        servicer.refuse_patches = 1  # a 429 with Retry-After: the retry takes a token too
        await client.patch(types_pb2.Pod, "p", {"metadata": {"labels": {"a": "b"}}})
        count, _ = _histogram(registry, "PATCH", address)
        assert count == 2


async def test_a_long_wait_logs_upstreams_line_once_and_the_metric_shows_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(monotonic=0.0)
    registry = CollectorRegistry()
    throttle = ClientLimits(ClientConnection(0.5, 1), clock, host="h:1", registry=registry).new()
    assert throttle is not None
    caplog.set_level(logging.INFO, logger="kemu.client.flowcontrol")
    async with anyio.create_task_group() as tg:
        for _ in range(3):
            tg.start_soon(throttle.wait, "POST", "Bind")
        await anyio.wait_all_tasks_blocked()
        for _ in range(2):
            clock.advance(2.0)
            await anyio.wait_all_tasks_blocked()
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert lines == [
        "Waited for 2s due to client-side throttling, not priority and fairness, request: POST:Bind"
    ]
    assert _histogram(registry, "POST", "h:1") == (3.0, 6.0)


async def test_a_components_clients_share_the_throttled_log_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    clock = FakeClock(monotonic=0.0)
    limits = ClientLimits(ClientConnection(0.5, 1), clock, host="h:1", registry=None)
    first, second = limits.new(), limits.new()
    assert first is not None and second is not None
    caplog.set_level(logging.INFO, logger="kemu.client.flowcontrol")
    async with anyio.create_task_group() as tg:
        for throttle in (first, first, second, second):
            tg.start_soon(throttle.wait, "GET", "List pods")
        await anyio.wait_all_tasks_blocked()
        clock.advance(2.0)
        await anyio.wait_all_tasks_blocked()
    lines = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(lines) == 1  # two 2 s waits, one line: once every 10 s for the component
