"""The cluster clock the apiserver keeps in virtual time (`--clock virtual`; kemu only, see
kemu/machinery/virtual_time.py).

The clock's segment is one etcd key (`KEY`, outside /registry/: no resource and no watch cache
sees it), so that it outlives an apiserver restart and every apiserver of the cluster serves
the same one: the first apiserver of a fresh cluster writes it (starting at `--clock-start`,
else at its own start, at rate 1), a rate change is a compare-and-swap of it, and each apiserver
follows it through an etcd watch into its own VirtualClock (which its registry, watch cache and
leases read) and out to the components' clock sessions.

The sessions report each component's pending timers; `status()` sums them.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Final

import anyio
from anyio.abc import TaskStatus

from apiserver.storage.etcd import EtcdStore, StaleRevision
from kemu.api.v1 import api_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import Conflict, InternalError, Unavailable
from kemu.machinery.virtual_time import ClockMode, ClockSegment, check_rate

logger = logging.getLogger(__name__)

KEY: Final = "/kemu.io/clock"
_CAS_RETRIES: Final = 16
_WATCH_RETRY: Final = 0.5  # wall seconds between attempts to watch the key again


def encode(segment: ClockSegment) -> bytes:
    return json.dumps(
        {
            "baseWall": segment.base_wall,
            "baseVirtual": segment.base_virtual,
            "rate": segment.rate,
            "generation": segment.generation,
        }
    ).encode()


def decode(data: bytes) -> ClockSegment:
    try:
        raw = json.loads(data)
        return ClockSegment(
            base_wall=float(raw["baseWall"]),
            base_virtual=float(raw["baseVirtual"]),
            rate=float(raw["rate"]),
            generation=int(raw["generation"]),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise InternalError(f"the cluster clock in etcd ({KEY}) is corrupt: {e}") from None


def to_proto(segment: ClockSegment) -> api_pb2.ClockSegment:
    return api_pb2.ClockSegment(
        base_wall=segment.base_wall,
        base_virtual=segment.base_virtual,
        rate=segment.rate,
        generation=segment.generation,
    )


class ClusterClock:
    """The virtual cluster clock of one apiserver: see the module docstring."""

    def __init__(
        self,
        store: EtcdStore,
        clock: VirtualClock,
        *,
        start: float | None = None,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._store = store
        self.clock = clock
        self._start = start
        self._wall = wall
        self._ids = itertools.count()
        self._sessions: dict[int, api_pb2.ClockReport] = {}

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loads (or, on a fresh cluster, writes) the segment, then follows the key."""
        revision = await self._load()
        task_status.started()
        while True:
            try:
                async for batch in self._store.watch(KEY, revision + 1):
                    if not isinstance(batch, list):
                        continue
                    for event in batch:
                        if event.key == KEY and event.value is not None:
                            self._follow(decode(event.value))
                        revision = max(revision, event.revision)
            except Unavailable as e:
                logger.warning("watching the cluster clock: %s; watching again", e)
            # (a compacted revision: the current value is what matters)
            revision = await self._load()
            await anyio.sleep(_WATCH_RETRY)

    async def _load(self) -> int:
        kv = await self._store.get(KEY)
        if kv is None:
            wall = self._wall()
            segment = ClockSegment(
                base_wall=wall, base_virtual=self._start if self._start else wall, rate=1.0
            )
            try:
                revision = await self._store.create(KEY, encode(segment))
            except Conflict:  # another apiserver wrote it first
                return await self._load()
            logger.info("virtual clock started at %s, rate 1", _rfc3339(segment.base_virtual))
            self._follow(segment)
            return revision
        self._follow(decode(kv.value))
        return kv.mod_revision

    def _follow(self, segment: ClockSegment) -> None:
        if self.clock.set_segment(segment):
            logger.info(
                "virtual clock at %s, rate %g (generation %d)",
                _rfc3339(self.clock.now()),
                segment.rate,
                segment.generation,
            )

    async def set_rate(self, rate: float) -> ClockSegment:
        """Continues the clock at `rate` from the instant it has reached (Invalid for a rate
        out of range)."""
        check_rate(rate)
        for _ in range(_CAS_RETRIES):
            kv = await self._store.get(KEY)
            if kv is None:
                raise InternalError(f"the cluster clock ({KEY}) is missing from etcd")
            segment = decode(kv.value).with_rate(rate, self._wall())
            try:
                await self._store.update(KEY, encode(segment), kv.mod_revision)
            except (StaleRevision, Conflict):
                continue
            self._follow(segment)
            return segment
        raise Conflict("the cluster clock changed too often: try again")

    # ------------------------------------------------------------ sessions

    async def session(
        self,
        reports: AsyncIterator[api_pb2.ClockReport],
        send: Callable[[api_pb2.ClockSegment], Awaitable[None]],
    ) -> None:
        """One component's session: `send` the segment now and at every change, and keep its
        last report (its pending timers) until the session ends."""
        sid = next(self._ids)
        self._sessions[sid] = api_pb2.ClockReport()

        async def read_reports() -> None:
            async for report in reports:
                self._sessions[sid] = report
            tg.cancel_scope.cancel()  # the component closed its side

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_reports)
                sent: ClockSegment | None = None
                while True:
                    changed = self.clock.next_change()
                    segment = self.clock.segment
                    if segment is not None and segment != sent:
                        sent = segment
                        await send(to_proto(segment))
                    await changed.wait()
        finally:
            self._sessions.pop(sid, None)

    def status(self) -> api_pb2.ClockStatus:
        segment = self.clock.segment
        out = api_pb2.ClockStatus(
            mode=ClockMode.VIRTUAL.value,
            now=self.clock.now(),
            timers=sum(r.timers for r in self._sessions.values()),
        )
        if segment is not None:
            out.segment.CopyFrom(to_proto(segment))
        out.sessions.extend(r for r in self._sessions.values() if r.component)
        return out


def _rfc3339(t: float) -> str:
    return format_time(timestamp(t), "milli")
