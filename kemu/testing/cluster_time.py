"""A test's view of the cluster clock (docs/virtual-time.md), for tests on the virtual
clock: what time it is in the cluster, and windows of virtual time.

Two ways to move a virtual clock, after the two ways a test can run one:
- held (rate 0), the test moves it: `advance_to(client, instant)` runs the cluster to
  `instant` and holds it there, the work due then done (`advance_clock`). Exact: a timer is
  checked a moment before and a moment after its instant.
- running (rate max, or a scaled rate), the cluster moves it: `elapse(client, seconds)` waits
  until that much virtual time has passed, for "nothing happens over the window" checks, which
  are then bounded in the cluster's time rather than the host's.
"""

from __future__ import annotations

import grpc

from kemu.api.v1 import api_pb2
from kemu.client.interface import ApiClient
from kemu.testing.eventually import eventually

_ANNOUNCE_TIMEOUT = 5.0  # wall seconds


def announce_boot(server: str, token: str, *, ttl: float) -> None:
    """Tells the apiserver at `server` (HOST:PORT) that a component reporting `token` in its
    clock session is starting (Api.ExpectClockSession): the event-driven clock holds until
    it answers idle, or for `ttl` wall seconds. Synchronous: the harness's launches are."""
    with grpc.insecure_channel(server) as channel:
        call = channel.unary_unary(
            "/kemu.api.v1.Api/ExpectClockSession",
            request_serializer=api_pb2.ExpectClockSessionRequest.SerializeToString,
            response_deserializer=api_pb2.ClockStatus.FromString,
        )
        call(
            api_pb2.ExpectClockSessionRequest(boot_token=token, ttl_seconds=ttl),
            timeout=_ANNOUNCE_TIMEOUT,
        )


async def cluster_now(client: ApiClient) -> float:
    """The cluster's time, in seconds since the epoch (virtual time in virtual mode)."""
    return (await client.clock_status()).now


async def advance_to(client: ApiClient, instant: float) -> None:
    """Runs the cluster until virtual time `instant` (the work due then done) and holds the
    clock there; at once if the clock is past it."""
    await client.advance_clock(max(0.0, instant - await cluster_now(client)))


async def elapse(client: ApiClient, seconds: float, *, timeout: float = 60.0) -> float:  # noqa: ASYNC109
    """Waits until `seconds` of the cluster's time have passed from now, as the running clock
    moves; the cluster's time then. `timeout` is wall seconds (a held clock never gets
    there: AssertionError)."""
    until = await cluster_now(client) + seconds

    async def passed() -> float:
        now = await cluster_now(client)
        assert now >= until, f"the cluster's clock is at {now:.3f}, waiting for {until:.3f}"
        return now

    return await eventually(passed, timeout=timeout, interval=0.05)
