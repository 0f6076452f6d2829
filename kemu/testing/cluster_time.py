"""A test's view of the cluster clock (docs/virtual-time.md), for tests on the virtual
clock: what time it is in the cluster, and windows of virtual time.

Two ways to move a virtual clock, after the two ways a test can run one:
- held (rate 0), the test moves it: `advance_to(client, instant)` runs the cluster to
  `instant` and holds it there, the work due then done (`advance_clock`). Exact: a timer is
  checked a moment before and a moment after its instant.
- running (rate max, or a scaled rate), the cluster moves it: `elapse(client, seconds)` waits
  until that much virtual time has passed, for "nothing happens over the window" checks, which
  are then bounded in the cluster's time rather than the host's.

`ClusterClock` is the cluster's time for a recorder's synchronous code (kemu.timeline.record,
kemu.trace.observe): no call per reading.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Final

import anyio
import anyio.abc
import grpc

from kemu.api.v1 import clock_pb2
from kemu.client.interface import ApiClient
from kemu.machinery.virtual_time import ClockMode, ClockSegment, from_proto
from kemu.testing.eventually import eventually

_ANNOUNCE_TIMEOUT = 5.0  # wall seconds

START_SECONDS: Final = 5.0
"""Virtual seconds to give components started while the clock holds (the determinism rule:
one phase for all their timers) to finish starting: their informers' first lists wait for
tokens of their client-side rate limiters once past the burst (the controller-manager's ~47
lists at 20/30, the autoscaler's at 5/10; kemu.client.flowcontrol), which a held clock never
gives. A driver starts them without waiting, `advance_clock(START_SECONDS)`, then waits for
them to be ready."""


def announce_boot(server: str, token: str, *, ttl: float) -> None:
    """Tells the apiserver at `server` (HOST:PORT) that a component reporting `token` in its
    clock session is starting (Clock.ExpectClockSession): the event-driven clock holds until
    it answers idle, or for `ttl` wall seconds. Synchronous: the harness's launches are."""
    with grpc.insecure_channel(server) as channel:
        call = channel.unary_unary(
            "/kemu.api.v1.Clock/ExpectClockSession",
            request_serializer=clock_pb2.ExpectClockSessionRequest.SerializeToString,
            response_deserializer=clock_pb2.ClockStatus.FromString,
        )
        call(
            clock_pb2.ExpectClockSessionRequest(boot_token=token, ttl_seconds=ttl),
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


FOLLOW_INTERVAL: Final = 0.05
"""Wall seconds between two readings of a virtual clock's status by `ClusterClock.follow`."""


class ClusterClock:
    """The cluster's time read without a call, for a recorder that dates what it sees as it
    sees it (a synchronous informer handler cannot await `cluster_now`).

    In real mode the cluster's clock is the host's: `now()` is the wall clock (with the offset
    the apiserver showed, nothing for a cluster on this host). In virtual mode it is the last
    segment the apiserver showed, followed at the wall clock's pace (`ClockSegment.at`), and
    `follow` keeps the segment fresh. At rate max time moves by jumps, each a new segment, so
    `now()` can lag a jump by up to the polling interval: what matters is dated by the
    objects themselves (kemu.timeline.dating); `now()` is for what carries no time. Never
    goes back."""

    def __init__(
        self, status: clock_pb2.ClockStatus, wall: Callable[[], float] = time.time
    ) -> None:
        self._wall = wall
        self._last = 0.0
        self.virtual = False
        self._offset = 0.0
        self._segment: ClockSegment | None = None
        self.update(status)

    def update(self, status: clock_pb2.ClockStatus) -> None:
        """A fresher status (of GetClock)."""
        self.virtual = status.mode == ClockMode.VIRTUAL.value
        if self.virtual and status.HasField("segment"):
            self._segment = from_proto(status.segment)
        else:
            self._segment = None
            self._offset = status.now - self._wall()
        self._last = max(self._last, status.now)

    def now(self) -> float:
        wall = self._wall()
        t = self._segment.at(wall) if self._segment is not None else wall + self._offset
        self._last = max(self._last, t)
        return self._last

    async def follow(
        self,
        client: ApiClient,
        interval: float = FOLLOW_INTERVAL,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Reads the clock's status every `interval` wall seconds until cancelled (in virtual
        mode only: a real clock needs none). GetClock is the clock's own call: it does not
        hold the event-driven clock."""
        task_status.started()
        while self.virtual:
            await anyio.sleep(interval)
            self.update(await client.clock_status())


@asynccontextmanager
async def cluster_clock(client: ApiClient) -> AsyncIterator[ClusterClock]:
    """The cluster's clock (`ClusterClock`), kept fresh while the block runs."""
    clock = ClusterClock(await client.clock_status())
    async with anyio.create_task_group() as tg:
        await tg.start(clock.follow, client)
        try:
            yield clock
        finally:
            tg.cancel_scope.cancel()
