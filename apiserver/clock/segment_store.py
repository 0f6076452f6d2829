"""The cluster clock's segment in etcd: one key (`KEY`, outside /registry/: no resource and no
watch cache sees it), so that it outlives an apiserver restart and every apiserver of the cluster
serves the same one. The first apiserver of a fresh cluster writes it; a change is a
compare-and-swap of it; each apiserver follows it through an etcd watch into its own
VirtualClock (which its registry, watch cache and leases read)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import anyio

from apiserver.storage.etcd import EtcdStore, StaleRevision
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import Conflict, Gone, InternalError, Timeout, Unavailable
from kemu.machinery.virtual_time import ClockSegment

logger = logging.getLogger(__name__)

KEY: Final = "/kemu.io/clock"
_CAS_RETRIES: Final = 16
WATCH_RETRY: Final = 0.5  # wall seconds between attempts to watch the key again


def encode(segment: ClockSegment) -> bytes:
    return json.dumps(
        {
            "baseWall": segment.base_wall,
            "baseVirtual": segment.base_virtual,
            "rate": segment.rate,
            "generation": segment.generation,
            "eventDriven": segment.event_driven,
            "advanceUntil": segment.advance_until,
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
            event_driven=bool(raw.get("eventDriven", False)),
            advance_until=float(raw.get("advanceUntil", 0.0)),
        )
    except (ValueError, KeyError, TypeError) as e:
        raise InternalError(f"the cluster clock in etcd ({KEY}) is corrupt: {e}") from None


@dataclass(frozen=True, slots=True)
class _Known:
    segment: ClockSegment
    revision: int


class SegmentStore:
    def __init__(
        self,
        store: EtcdStore,
        clock: VirtualClock,
        *,
        start: float | None,
        wall: Callable[[], float],
    ) -> None:
        """`start`: the virtual time a fresh cluster's clock starts at (None: the wall time)."""
        self._store = store
        self.clock = clock
        self._start = start
        self._wall = wall
        self._known: _Known | None = None
        """The segment in etcd and its mod revision, as last written or seen."""

    async def follow_key(self, revision: int) -> None:
        """Follows the key for ever from `revision` (that of `load_until_done`), loading it
        again whenever the watch ends."""
        while True:
            try:
                async for batch in self._store.watch(KEY, revision + 1):
                    if not isinstance(batch, list):
                        continue
                    for event in batch:
                        if event.key == KEY and event.value is not None:
                            segment = decode(event.value)
                            self.remember(segment, event.revision)
                            self.follow(segment)
                        revision = max(revision, event.revision)
            except (Unavailable, InternalError, Gone) as e:
                # (as the watch cache: any stream etcd or gRPC ended; a compacted
                # revision too, as the current value is what matters)
                logger.warning("watching the cluster clock: %s; watching again", e)
            revision = await self.load_until_done()
            await anyio.sleep(WATCH_RETRY)

    async def load_until_done(self) -> int:
        """`_load`, again every WATCH_RETRY while etcd does not answer (all its members
        restarting, an election): an apiserver waits for etcd rather than exiting, and its
        clock runs on the segment it has meanwhile."""
        while True:
            try:
                return await self.load()
            except (Unavailable, InternalError, Timeout) as e:
                logger.warning("loading the cluster clock: %s; trying again", e)
                await anyio.sleep(WATCH_RETRY)

    async def load(self) -> int:
        kv = await self._store.get(KEY)
        if kv is None:
            wall = self._wall()
            segment = ClockSegment(
                base_wall=wall, base_virtual=self._start if self._start else wall, rate=1.0
            )
            try:
                revision = await self._store.create(KEY, encode(segment))
            except Conflict:  # another apiserver wrote it first
                return await self.load()
            logger.info("virtual clock started at %s, rate 1", rfc3339(segment.base_virtual))
            self.remember(segment, revision)
            self.follow(segment)
            return revision
        segment = decode(kv.value)
        self.remember(segment, kv.mod_revision)
        self.follow(segment)
        return kv.mod_revision

    def follow(self, segment: ClockSegment) -> None:
        previous = self.clock.segment
        if not self.clock.set_segment(segment):
            return
        if (
            previous is not None
            and previous.event_driven
            and segment.event_driven
            and segment.advance_until == previous.advance_until
        ):
            logger.debug("virtual clock jumped to %s", rfc3339(segment.base_virtual))
            return
        logger.info(
            "virtual clock at %s, rate %s%s (generation %d)",
            rfc3339(self.clock.now()),
            segment.rate_text,
            f", advancing to {rfc3339(segment.advance_until)}" if segment.advance_until else "",
            segment.generation,
        )

    async def swap(self, change: Callable[[ClockSegment], ClockSegment | None]) -> ClockSegment:
        """Compare-and-swap of the segment: `change` of the current one (None: no change).
        One transaction when the key is as last seen (this apiserver's own writes and its
        watch keep `_known`); a failed one carries the key as it is for the retry."""
        known = self._known
        for _ in range(_CAS_RETRIES):
            if known is None:
                kv = await self._store.get(KEY)
                if kv is None:
                    raise InternalError(f"the cluster clock ({KEY}) is missing from etcd")
                known = _Known(decode(kv.value), kv.mod_revision)
            segment = change(known.segment)
            if segment is None:
                return known.segment
            try:
                revision = await self._store.update(KEY, encode(segment), known.revision)
            except StaleRevision as e:
                known = _Known(decode(e.current.value), e.current.mod_revision)
                continue
            except Conflict:
                known = None
                continue
            self.remember(segment, revision)
            self.follow(segment)
            return segment
        raise Conflict("the cluster clock changed too often: try again")

    def remember(self, segment: ClockSegment, revision: int) -> None:
        if self._known is None or revision > self._known.revision:
            self._known = _Known(segment, revision)


def rfc3339(t: float) -> str:
    return format_time(timestamp(t), "milli")
