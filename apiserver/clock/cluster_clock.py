"""The cluster clock the apiserver keeps in virtual time (`--clock virtual`; kemu only, see
kemu/machinery/virtual_time.py): its parts are the segment in etcd (segment_store.py), the
other apiservers (peers.py), the components' sessions (sessions.py) and the event-driven
clock (event_driven.py); this is what the Clock service (apiserver/endpoints/clock.py) asks.

The clock's segment is one etcd key (`KEY`, outside /registry/: no resource and no watch cache
sees it), so that it outlives an apiserver restart and every apiserver of the cluster serves
the same one: the first apiserver of a fresh cluster writes it (starting at `--clock-start`,
else at its own start, at rate 1), a rate change is a compare-and-swap of it, and each apiserver
follows it through an etcd watch into its own VirtualClock (which its registry, watch cache and
leases read) and out to the components' clock sessions.

Every component in virtual time holds a session (`session`): the segment goes out to it at
every change, its pending timers come back (`status()` sums them). At rate max the segment
holds between jumps, and `_drive` makes them: once the cluster is quiescent (this apiserver idle,
see activity.py, and every session answering a probe idle with every watch event sent to it
received), it jumps to the earliest timer any process holds, or, while advancing
(`advance`), holds at the end once the work due then is done. docs/virtual-time.md tells
the whole protocol.
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
from anyio.abc import TaskStatus

from apiserver.clock.activity import Activity
from apiserver.clock.event_driven import EventDriven
from apiserver.clock.peers import Peers
from apiserver.clock.segment_store import SegmentStore
from apiserver.clock.sessions import Sessions
from apiserver.storage.etcd import EtcdStore
from kemu.api.v1 import clock_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import Invalid
from kemu.machinery.virtual_time import ClockMode, ClockSegment, check_rate, to_proto

_MAX_ADVANCE: Final = 10 * 365 * 24 * 3600.0


class ClusterClock:
    """The virtual cluster clock of one apiserver: see the module docstring."""

    def __init__(
        self,
        store: EtcdStore,
        clock: VirtualClock,
        *,
        start: float | None = None,
        wall: Callable[[], float] = time.time,
        identity: str = "",
    ) -> None:
        """`start`: the virtual time a fresh cluster's clock starts at (None: the wall time);
        `identity`: this apiserver's (host:port), "" when it is known to be the only one."""
        self.clock = clock
        self._wall = wall
        self.activity = Activity()
        self.segments = SegmentStore(store, clock, start=start, wall=wall)
        self.peers = Peers(store, identity, wall)
        self.sessions = Sessions(clock, self.activity.incarnation, wall)
        self.driver = EventDriven(
            clock, self.segments, self.sessions, self.peers, self.activity, wall
        )

    def watch_quiescence(self, quiet: Callable[[], bool]) -> None:
        """What else the apiserver must be for the cluster to be quiescent (its watch caches
        caught up with its writes, no frame waiting for a watcher): see app.py."""
        self.driver.quiet_check = quiet

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loads (or, on a fresh cluster, writes) the segment, then follows the key and, at
        rate max, moves the clock."""
        revision = await self.segments.load_until_done()
        async with anyio.create_task_group() as tg:
            if self.peers.identity:
                tg.start_soon(self.peers.heartbeat, name="clock apiserver heartbeat")
            tg.start_soon(self.driver.drive, name="event-driven clock")
            task_status.started()
            await self.segments.follow_key(revision)

    async def set_rate(self, rate: float) -> ClockSegment:
        """Continues the clock at `rate` (math.inf: max) from the instant it has reached
        (Invalid for a rate out of range; BadRequest for max with several apiservers)."""
        if rate != math.inf:
            check_rate(rate)
        else:
            await self.peers.check_single_driver()
        return await self.segments.swap(lambda s: s.with_rate(rate, self._wall()))

    async def advance(self, seconds: float) -> ClockSegment:
        """Runs the clock as rate max until `seconds` of virtual time have passed and the
        work due then is done, then holds it; returns the held segment."""
        if not (0 <= seconds <= _MAX_ADVANCE):  # also NaN
            raise Invalid.field(
                "seconds", f"Invalid value: {seconds:g}: must be between 0 and {_MAX_ADVANCE:g}"
            )
        await self.peers.check_single_driver()
        until = self.clock.now() + seconds
        await self.segments.swap(lambda s: s.advancing(until, self._wall()))
        while True:
            changed = self.clock.next_change()
            segment = self.clock.segment
            assert segment is not None
            if not segment.event_driven:
                return segment  # held at `until` (or another rate was set meanwhile)
            await changed.wait()

    async def session(
        self,
        reports: AsyncIterator[clock_pb2.ClockReport],
        send: Callable[[clock_pb2.ClockUpdate], Awaitable[None]],
    ) -> None:
        """One component's session: see Sessions.serve."""
        await self.sessions.serve(reports, send)

    def expect(self, token: str, ttl: float) -> None:
        """A launcher is starting a component: see Sessions.expect."""
        self.sessions.expect(token, ttl)

    def end_sessions(self) -> None:
        """On shutdown: ends every session and refuses new ones (Unavailable), as the
        apiserver ends its watches."""
        self.sessions.end()

    def status(self) -> clock_pb2.ClockStatus:
        segment = self.clock.segment
        out = clock_pb2.ClockStatus(
            mode=ClockMode.VIRTUAL.value,
            now=self.clock.now(),
            timers=self.sessions.timers() + self.clock.timers,
        )
        if segment is not None:
            out.segment.CopyFrom(to_proto(segment))
        out.sessions.extend(self.sessions.reports())
        return out
