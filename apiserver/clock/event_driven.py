"""The event-driven clock (rate max, and `advance`): the segment holds between jumps, and the
driver makes them: once the cluster is quiescent (this apiserver idle, see activity.py, and every
session answering a probe idle with every watch event sent to it received), it jumps to the
earliest timer any process holds, or, while advancing, holds at the end once the work due then
is done. docs/virtual-time.md tells why that is quiescence."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import anyio
import anyio.lowlevel

from apiserver.clock.activity import Activity
from apiserver.clock.peers import Peers
from apiserver.clock.segment_store import WATCH_RETRY, SegmentStore, rfc3339
from apiserver.clock.sessions import PROBE_TIMEOUT, Session, Sessions
from kemu.api.v1 import clock_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import ApiError
from kemu.machinery.virtual_time import ClockSegment, calls_square

logger = logging.getLogger(__name__)

_SETTLE: Final = 0.002  # wall seconds between two looks at a busy cluster (rate max)
_REPROBES: Final = 64  # probes of the sessions whose answers do not square, at most, per look
_IDLE_RECHECK: Final = 0.05  # wall seconds between looks at a cluster without timers


class EventDriven:
    def __init__(
        self,
        clock: VirtualClock,
        segments: SegmentStore,
        sessions: Sessions,
        peers: Peers,
        activity: Activity,
        wall: Callable[[], float],
    ) -> None:
        self._clock = clock
        self._segments = segments
        self._sessions = sessions
        self._peers = peers
        self.activity = activity
        self._wall = wall
        self._warned_others = False
        self.quiet_check: Callable[[], bool] = lambda: True
        """What else the apiserver must be for the cluster to be quiescent (its watch caches
        caught up with its writes, no frame waiting for a watcher): see app.py."""

    def _locally_quiet(self) -> bool:
        a = self.activity
        return a.serving == 0 and a.sending == 0 and self.quiet_check()

    async def drive(self) -> None:
        """At rate max: whenever the cluster is quiescent, jump to the earliest timer any
        process holds (or to the end of an advance, and hold there)."""
        while True:
            segment = self._clock.segment
            held = segment is not None and segment.rate == 0
            if segment is None or not (
                segment.event_driven or (held and self._sessions.waiting_steps())
            ):
                await _first_of(self._clock.next_change(), self._sessions.next_step())
                continue
            if self._peers.others:
                # (no order among the steps: every one taken at once)
                for session in self._sessions.waiting_steps():
                    self._sessions.release(session, session.report.step)
                # (set at max before another apiserver came: none of them drives; the
                # clock holds until the rate is changed or the others are gone)
                if not self._warned_others:
                    logger.warning(
                        "event-driven clock: %d other apiserver(s) serve the cluster: not "
                        "moving the clock (rate max needs one apiserver)",
                        self._peers.others,
                    )
                    self._warned_others = True
                with anyio.move_on_after(_IDLE_RECHECK):
                    await self._sessions.next_step().wait()
                continue
            self._warned_others = False
            quiet, deadline = await self.quiescence()
            if not quiet:
                continue
            if await self._release_step():
                continue
            if not segment.event_driven:
                continue
            try:
                await self._step(segment, deadline)
            except ApiError as e:
                # etcd away (a restart, an election) or another writer racing: the clock
                # holds where it is, and the next quiescence moves it
                logger.warning("event-driven clock: %s; trying again", e)
                await anyio.sleep(WATCH_RETRY)

    async def _release_step(self) -> bool:
        """The cluster being quiescent: lets the first process waiting to take a step take
        it (the order rule at one instant, docs/virtual-time.md: one step of the cluster at
        a time, the processes in the order of their component and identity); False when
        none waits."""
        waiting = sorted(self._sessions.waiting_steps(), key=lambda s: (s.component, s.identity))
        if not waiting:
            return False
        session = waiting[0]
        if not self._sessions.release(session, session.report.step):
            await anyio.sleep(_SETTLE)
        return True

    async def _step(self, segment: ClockSegment, deadline: float | None) -> None:
        """One move of the event-driven clock, the cluster being quiescent with its earliest
        timer at `deadline`."""
        now = self._clock.now()
        until = segment.advance_until
        if until and now >= until and (deadline is None or deadline > now):
            # the end of the advance, and the work due then is done: hold
            held = await self._segments.swap(
                lambda s: (
                    s.with_rate(0.0, self._wall()) if s.generation == segment.generation else None
                )
            )
            logger.info("virtual clock advanced to %s: holding", rfc3339(held.base_virtual))
            return
        targets = [t for t in (deadline, until or None) if t is not None]
        if not targets:  # nothing will happen by itself: look again in a moment
            await anyio.sleep(_IDLE_RECHECK)
            return
        target = min(targets)
        if target <= now:
            await anyio.sleep(_SETTLE)  # due already: its work is starting
            return
        await self._segments.swap(
            lambda s: s.jumped(target, self._wall()) if s.generation == segment.generation else None
        )

    async def quiescence(self) -> tuple[bool, float | None]:
        """Whether the cluster is quiescent, and then its earliest timer (None: none):
        probes every session (each answers once its process is idle, with the calls it made
        and the watch events it received), waits for this apiserver to be idle too, and
        checks that every call made was received and every event sent was received: nothing
        is in flight between any two processes. A session whose answer does not square with
        the apiserver's counts (an event was on its way to it, or it made a call since) is
        probed again, alone: the others did nothing since their answers and were sent
        nothing, or their counts would not square either. docs/virtual-time.md tells why
        that is quiescence."""
        outside = self.activity.outside
        latest: dict[Session, clock_pb2.ClockReport] = {}
        to_probe = list(self._sessions.live.values())
        for _ in range(_REPROBES):
            if not await self._sessions.probe(to_probe, latest):
                return False, None
            if any(not answer.idle for answer in latest.values()):
                break
            await self._locally_idle()
            to_probe = [s for s, answer in latest.items() if not self._squares(s, answer)]
            if not to_probe and not _peer_calls_square(latest):
                # a call between two components (the autoscaler's to the cloud) was on its
                # way, or served after its callee answered: both sides again
                to_probe = [
                    s
                    for s, answer in latest.items()
                    if answer.peer_calls_sent or answer.peer_calls_received
                ]
            if not to_probe:
                break
        a = self.activity
        if (
            to_probe
            or any(not answer.idle for answer in latest.values())
            or a.outside != outside
            or not self._locally_quiet()
            # a component announced as starting has not answered idle yet (its boot is work
            # no session shows; the probes go on, so that its first idle answer is seen)
            or self._sessions.booting()
        ):
            await anyio.sleep(_SETTLE)
            return False, None
        deadlines = [answer.next_deadline for answer in latest.values() if answer.timers]
        own = self._clock.next_deadline()
        if own is not None:
            deadlines.append(own)
        return True, min(deadlines) if deadlines else None

    def _squares(self, session: Session, answer: clock_pb2.ClockReport) -> bool:
        """Whether the apiserver received every call the session's answer counts, and no
        other, the session received every watch event sent to it, and its calls in flight
        are those this apiserver holds on a timer (activity.py's parked_calls)."""
        a = self.activity
        identity = session.identity
        return (
            answer.events_received == a.sent.get(identity, 0)
            and answer.requests_in_flight == a.parked_calls.get(identity, 0)
            and calls_square(
                answer.requests_sent,
                answer.requests_abandoned,
                a.calls.count.get(identity, 0),
                a.calls.first.get(identity, 0),
                a.calls.last.get(identity, 0),
            )
        )

    async def _locally_idle(self) -> None:
        """Returns once this apiserver serves no request and has nothing to send (or after
        PROBE_TIMEOUT: the caller looks again)."""
        # (the apiserver's own tasks woken by the last jump take their first step before the
        # look: from then their work is counted, Activity.own_work)
        await anyio.lowlevel.checkpoint()
        waited = 0
        with anyio.move_on_after(PROBE_TIMEOUT):
            while not self._locally_quiet():
                waited += 1
                if waited % 500 == 0:
                    a = self.activity
                    logger.debug(
                        "event-driven clock: waiting for this apiserver: %d requests, %d watch "
                        "streams sending, caught up and nothing buffered: %s",
                        a.serving,
                        a.sending,
                        self.quiet_check(),
                    )
                # (woken by the end of a request; the watch caches' catching up is looked
                # at again)
                with anyio.move_on_after(_SETTLE):
                    await self.activity.next_change().wait()


def _peer_calls_square(latest: dict[Session, clock_pb2.ClockReport]) -> bool:
    """Every call a component in session made to another (not the apiserver) was served by
    one that answered, and no more (calls_square)."""
    received: dict[str, int] = {}
    first: dict[str, int] = {}
    last: dict[str, int] = {}
    for answer in latest.values():
        for caller, n in answer.peer_calls_received.items():
            received[caller] = received.get(caller, 0) + n
        for caller, number in answer.peer_calls_first.items():
            first[caller] = min(first.get(caller, number), number)
        for caller, number in answer.peer_calls_last.items():
            last[caller] = max(last.get(caller, 0), number)
    return all(
        calls_square(
            answer.peer_calls_sent,
            answer.peer_calls_abandoned,
            received.get(s.identity, 0),
            first.get(s.identity, 0),
            last.get(s.identity, 0),
        )
        for s, answer in latest.items()
        if answer.peer_calls_sent or s.identity in received
    )


async def _first_of(*events: anyio.Event) -> None:
    """Returns once one of `events` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
