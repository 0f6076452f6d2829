"""The components' clock sessions with one apiserver: every component in virtual time holds one
(Clock.ClockSession); the segment goes out to it at every change and the event-driven clock's
probes, its reports come back (its pending timers, its counts of calls and events); and the
components a launcher announced as booting (Clock.ExpectClockSession)."""

from __future__ import annotations

import itertools
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from kemu.api.v1 import clock_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import Invalid, Unavailable
from kemu.machinery.virtual_time import ClockSegment, to_proto

logger = logging.getLogger(__name__)

PROBE_TIMEOUT: Final = 5.0  # wall seconds a probe waits for a session's answer
_SETTLE: Final = 0.002  # wall seconds before the driver looks again at a session not reading
_MAX_BOOT_TTL: Final = 3600.0  # wall seconds an announced component may take to boot, at most


@dataclass(eq=False)
class Session:
    """One component's clock session: its identity, its last report and answers to probes."""

    outbound: MemoryObjectSendStream[clock_pb2.ClockUpdate]
    identity: str = ""
    component: str = ""
    report: clock_pb2.ClockReport = field(default_factory=clock_pb2.ClockReport)
    answers: dict[int, clock_pb2.ClockReport] = field(default_factory=dict)
    responsive: bool = True
    """False once it left a probe unanswered (frozen or hung): not waited for until it
    answers again."""
    sent_generation: int = 0
    """The generation of the last segment sent to it."""
    awaiting: bool = False
    """A probe was sent to it that it has not answered yet."""

    def send_segment(self, segment: ClockSegment) -> None:
        """Queues `segment` for it unless it has it (WouldBlock when its queue is full)."""
        if segment.generation > self.sent_generation:
            self.outbound.send_nowait(clock_pb2.ClockUpdate(segment=to_proto(segment)))
            self.sent_generation = segment.generation


class Sessions:
    def __init__(self, clock: VirtualClock, incarnation: str, wall: Callable[[], float]) -> None:
        """`incarnation`: the apiserver's (a new one at each start), sent first on a session."""
        self._clock = clock
        self._incarnation = incarnation
        self._wall = wall
        self._ids = itertools.count()
        self._probes = itertools.count(1)
        self.live: dict[int, Session] = {}
        self._answered = anyio.Event()
        self._ended = False
        self._expected: dict[str, float] = {}  # boot token -> wall deadline
        self._stepped = anyio.Event()

    async def serve(
        self,
        reports: AsyncIterator[clock_pb2.ClockReport],
        send: Callable[[clock_pb2.ClockUpdate], Awaitable[None]],
    ) -> None:
        """One component's session: `send` the segment now and at every change, and the
        probes of the event-driven clock; keep its reports until the session ends."""
        if self._ended:
            raise Unavailable("the apiserver is shutting down")
        sid = next(self._ids)
        outbound, pending = anyio.create_memory_object_stream[clock_pb2.ClockUpdate](64)
        # (first: which apiserver this is, whose watch events the component reports)
        outbound.send_nowait(clock_pb2.ClockUpdate(apiserver=self._incarnation))
        session = self.live[sid] = Session(outbound)

        async def read_reports() -> None:
            async for report in reports:
                session.identity = report.identity or session.identity
                session.component = report.component or session.component
                session.report = report
                if report.probe:
                    self.answer(session, report)
                if report.step:
                    stepped, self._stepped = self._stepped, anyio.Event()
                    stepped.set()
            tg.cancel_scope.cancel()  # the component closed its side

        async def segments() -> None:
            while True:
                changed = self._clock.next_change()
                segment = self._clock.segment
                if segment is not None and segment.generation > session.sent_generation:
                    await outbound.send(clock_pb2.ClockUpdate(segment=to_proto(segment)))
                    session.sent_generation = max(session.sent_generation, segment.generation)
                await changed.wait()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(read_reports)
                tg.start_soon(segments)
                async with pending:
                    async for update in pending:
                        await send(update)
                tg.cancel_scope.cancel()  # ended (end_sessions)
        finally:
            self.live.pop(sid, None)
            answered, self._answered = self._answered, anyio.Event()
            answered.set()  # a driver waiting for this session's answer stops waiting

    def expect(self, token: str, ttl: float) -> None:
        """A launcher is starting a component that will report `token` in its session: the
        event-driven clock holds until that session answers a probe idle (its boot done), or
        for `ttl` wall seconds (a process that died while booting); `ttl` 0 withdraws the
        announcement (the launcher saw the process fail)."""
        if not token:
            raise Invalid.field("bootToken", "Required value")
        if ttl == 0:
            self._expected.pop(token, None)
            return
        if not (0 < ttl <= _MAX_BOOT_TTL):  # also NaN
            raise Invalid.field(
                "ttlSeconds",
                f"Invalid value: {ttl:g}: must be above 0 and at most {_MAX_BOOT_TTL:g}",
            )
        self._expected[token] = self._wall() + ttl

    def booting(self) -> bool:
        """Whether an announced component has not finished booting (expired ones dropped)."""
        if not self._expected:
            return False
        now = self._wall()
        for token, deadline in list(self._expected.items()):
            if deadline <= now:
                del self._expected[token]
                logger.warning(
                    "event-driven clock: the component announced as %s opened no clock "
                    "session in time: going on without it",
                    token,
                )
        return bool(self._expected)

    def next_step(self) -> anyio.Event:
        """Set when a session next reports a step it waits to take."""
        return self._stepped

    def waiting_steps(self) -> list[Session]:
        """The sessions whose last report waits to take a step."""
        return [s for s in self.live.values() if s.report.step]

    def release(self, session: Session, step: int) -> bool:
        """Lets `session` take its step `step` (False: its queue is full, or it has ended)."""
        try:
            session.outbound.send_nowait(clock_pb2.ClockUpdate(release=step))
        except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False
        # (its next report says whether it took it: until then it is not waiting)
        session.report.step = 0
        return True

    def end(self) -> None:
        """On shutdown: ends every session and refuses new ones (Unavailable), as the
        apiserver ends its watches."""
        self._ended = True
        for session in list(self.live.values()):
            session.outbound.close()

    def frozen(self) -> set[str]:
        """The identities of the sessions left out as frozen or hung (a probe unanswered):
        what is waiting to be sent to them is no work the clock waits for."""
        return {s.identity for s in self.live.values() if not s.responsive and s.identity}

    def timers(self) -> int:
        """The pending timers the sessions last reported."""
        return sum(s.report.timers for s in self.live.values())

    def reports(self) -> list[clock_pb2.ClockReport]:
        """The last report of each session that said which component it is."""
        return [s.report for s in self.live.values() if s.component]

    def answer(self, session: Session, report: clock_pb2.ClockReport) -> None:
        """`session` answered the probe `report.probe`."""
        session.answers[report.probe] = report
        session.responsive = True
        session.awaiting = False
        answered, self._answered = self._answered, anyio.Event()
        answered.set()

    async def probe(
        self, sessions: list[Session], latest: dict[Session, clock_pb2.ClockReport]
    ) -> bool:
        """Probes `sessions` and puts their answers in `latest`; False when one cannot be
        probed (ending, or not reading). A session that leaves the probe unanswered for
        PROBE_TIMEOUT is frozen or hung: left out from then on, until it answers again."""
        probe = next(self._probes)
        segment = self._clock.segment
        for s in sessions:
            try:
                # (the segment first: a probe answered on the last one would report the
                # timers the jump has just ended)
                if segment is not None:
                    s.send_segment(segment)
                if s.responsive or not s.awaiting:
                    # (a frozen one has a probe already: its answer, when it comes, says
                    # it runs again)
                    s.outbound.send_nowait(clock_pb2.ClockUpdate(probe=probe))
                    s.awaiting = True
            except (anyio.WouldBlock, anyio.BrokenResourceError, anyio.ClosedResourceError):
                # (and never a loop that does not yield: the driver runs again only after
                # a moment)
                await anyio.sleep(_SETTLE)
                return False
        awaited = [s for s in sessions if s.responsive]
        with anyio.move_on_after(PROBE_TIMEOUT):
            while any(probe not in s.answers for s in awaited if s in self.live.values()):
                await self._answered.wait()
        for s in sessions:
            answer = s.answers.pop(probe, None)
            for old in [k for k in s.answers if k < probe]:
                del s.answers[old]
            if answer is not None:
                latest[s] = answer
                if answer.idle and answer.ready and answer.boot_token:
                    self._expected.pop(answer.boot_token, None)  # its boot is done
            elif s.responsive and s in self.live.values():
                # Frozen (SIGSTOP) or hung (a busy process answers busy): time goes on
                # without it, as it would for a process paused in a real cluster; it counts
                # again once it answers.
                s.responsive = False
                latest.pop(s, None)
                logger.info(
                    "event-driven clock: %s (%s) left a probe unanswered for %gs: going on "
                    "without it until it answers",
                    s.component,
                    s.identity,
                    PROBE_TIMEOUT,
                )
                # Nor does its announced boot hold the clock any longer (frozen before it
                # answered idle, it would until the announcement's ttl): its session is
                # there, and counts again, busy or idle, once it answers.
                if self._expected.pop(s.report.boot_token, None) is not None:
                    logger.info(
                        "event-driven clock: no longer waiting for the boot of %s (%s)",
                        s.component,
                        s.identity,
                    )
            else:
                latest.pop(s, None)
        return True
