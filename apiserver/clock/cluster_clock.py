"""The cluster clock the apiserver keeps in virtual time (`--clock virtual`; kemu only, see
kemu/machinery/virtual_time.py).

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

import itertools
import json
import logging
import math
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from apiserver.clock.activity import Activity
from apiserver.storage.etcd import EtcdStore, StaleRevision
from kemu.api.v1 import clock_pb2
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.convert import format_time, timestamp
from kemu.machinery.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Gone,
    InternalError,
    Invalid,
    Timeout,
    Unavailable,
)
from kemu.machinery.virtual_time import (
    ClockMode,
    ClockSegment,
    calls_square,
    check_rate,
    to_proto,
)

logger = logging.getLogger(__name__)

KEY: Final = "/kemu.io/clock"
_CAS_RETRIES: Final = 16
_WATCH_RETRY: Final = 0.5  # wall seconds between attempts to watch the key again
_SETTLE: Final = 0.002  # wall seconds between two looks at a busy cluster (rate max)
_PROBE_TIMEOUT: Final = 5.0  # wall seconds a probe waits for a session's answer
_REPROBES: Final = 64  # probes of the sessions whose answers do not square, at most, per look
_MAX_BOOT_TTL: Final = 3600.0  # wall seconds an announced component may take to boot, at most
_PEER_HEARTBEAT: Final = 2.0  # wall seconds between two writes of an apiserver's PEERS key
_PEER_EXPIRY: Final = 6.0  # wall seconds after which a PEERS key no longer counts
PEERS: Final = "/kemu.io/clock-apiservers/"
"""One key per apiserver serving the virtual cluster (its host:port), its last heartbeat's
wall time: the event-driven clock needs to be the only one."""
_IDLE_RECHECK: Final = 0.05  # wall seconds between looks at a cluster without timers
_MAX_ADVANCE: Final = 10 * 365 * 24 * 3600.0


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


@dataclass(eq=False)
class _Session:
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
        self._store = store
        self._identity = identity
        self._others = 0  # other apiservers serving the cluster, as last seen (PEERS)
        self._warned_others = False
        self.clock = clock
        self._start = start
        self._wall = wall
        self._ids = itertools.count()
        self._sessions: dict[int, _Session] = {}
        self._answered = anyio.Event()
        self.activity = Activity()
        self._quiet_check: Callable[[], bool] = lambda: True
        self._probes = itertools.count(1)
        self._ended = False
        self._expected: dict[str, float] = {}  # boot token -> wall deadline
        self._known: _Known | None = None
        """The segment in etcd and its mod revision, as last written or seen."""

    def watch_quiescence(self, quiet: Callable[[], bool]) -> None:
        """What else the apiserver must be for the cluster to be quiescent (its watch caches
        caught up with its writes, no frame waiting for a watcher): see app.py."""
        self._quiet_check = quiet

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Loads (or, on a fresh cluster, writes) the segment, then follows the key and, at
        rate max, moves the clock."""
        revision = await self._load_until_done()
        async with anyio.create_task_group() as tg:
            if self._identity:
                tg.start_soon(self._heartbeat, name="clock apiserver heartbeat")
            tg.start_soon(self._drive, name="event-driven clock")
            task_status.started()
            while True:
                try:
                    async for batch in self._store.watch(KEY, revision + 1):
                        if not isinstance(batch, list):
                            continue
                        for event in batch:
                            if event.key == KEY and event.value is not None:
                                segment = decode(event.value)
                                self._remember(segment, event.revision)
                                self._follow(segment)
                            revision = max(revision, event.revision)
                except (Unavailable, InternalError, Gone) as e:
                    # (as the watch cache: any stream etcd or gRPC ended; a compacted
                    # revision too, as the current value is what matters)
                    logger.warning("watching the cluster clock: %s; watching again", e)
                revision = await self._load_until_done()
                await anyio.sleep(_WATCH_RETRY)

    async def _load_until_done(self) -> int:
        """`_load`, again every _WATCH_RETRY while etcd does not answer (all its members
        restarting, an election): an apiserver waits for etcd rather than exiting, and its
        clock runs on the segment it has meanwhile."""
        while True:
            try:
                return await self._load()
            except (Unavailable, InternalError, Timeout) as e:
                logger.warning("loading the cluster clock: %s; trying again", e)
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
            self._remember(segment, revision)
            self._follow(segment)
            return revision
        segment = decode(kv.value)
        self._remember(segment, kv.mod_revision)
        self._follow(segment)
        return kv.mod_revision

    def _follow(self, segment: ClockSegment) -> None:
        previous = self.clock.segment
        if not self.clock.set_segment(segment):
            return
        if (
            previous is not None
            and previous.event_driven
            and segment.event_driven
            and segment.advance_until == previous.advance_until
        ):
            logger.debug("virtual clock jumped to %s", _rfc3339(segment.base_virtual))
            return
        logger.info(
            "virtual clock at %s, rate %s%s (generation %d)",
            _rfc3339(self.clock.now()),
            segment.rate_text,
            f", advancing to {_rfc3339(segment.advance_until)}" if segment.advance_until else "",
            segment.generation,
        )

    async def _swap(self, change: Callable[[ClockSegment], ClockSegment | None]) -> ClockSegment:
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
            self._remember(segment, revision)
            self._follow(segment)
            return segment
        raise Conflict("the cluster clock changed too often: try again")

    def _remember(self, segment: ClockSegment, revision: int) -> None:
        if self._known is None or revision > self._known.revision:
            self._known = _Known(segment, revision)

    # ------------------------------------------------------------ apiservers

    async def _heartbeat(self) -> None:
        """Keeps this apiserver's key under PEERS current and counts the others' (wall
        time: transport, not behaviour), until cancelled; then removes the key."""
        # (never fatal: etcd away or a race with another writer only delays the next beat)
        try:
            while True:
                try:
                    await self._heartbeat_once()
                except ApiError as e:
                    logger.debug("clock heartbeat: %s", e)
                await anyio.sleep(_PEER_HEARTBEAT)
        finally:
            with anyio.move_on_after(2, shield=True):
                key = PEERS + self._identity
                try:
                    kv = await self._store.get(key)
                    if kv is not None:
                        await self._store.delete(key, kv.mod_revision)
                except ApiError:
                    pass

    async def _heartbeat_once(self) -> None:
        key = PEERS + self._identity
        value = repr(self._wall()).encode()
        kv = await self._store.get(key)
        if kv is None:
            await self._store.create(key, value)
        else:
            await self._store.update(key, value, kv.mod_revision)
        await self._count_others()

    async def _count_others(self) -> int:
        """The other apiservers whose PEERS key is current (and remembers the count)."""
        now = self._wall()
        own = PEERS + self._identity
        listed = await self._store.range(PEERS)
        self._others = sum(
            1
            for kv in listed.kvs
            if kv.key != own and now - float(kv.value.decode() or 0) < _PEER_EXPIRY
        )
        return self._others

    async def _check_single_driver(self) -> None:
        """The event-driven clock counts the work of this apiserver's clock sessions and
        requests only: with several apiservers serving the cluster it cannot know the cluster
        is quiescent (not supported yet: docs/virtual-time.md)."""
        others = await self._count_others() if self._identity else 0
        if others:
            raise BadRequest(
                "the event-driven clock (rate max, advance) needs a cluster served by one "
                f"apiserver: {others} other apiserver(s) serve this one; a scaled rate "
                "(kemuctl clock rate N) works with several"
            )

    async def set_rate(self, rate: float) -> ClockSegment:
        """Continues the clock at `rate` (math.inf: max) from the instant it has reached
        (Invalid for a rate out of range; BadRequest for max with several apiservers)."""
        if rate != math.inf:
            check_rate(rate)
        else:
            await self._check_single_driver()
        return await self._swap(lambda s: s.with_rate(rate, self._wall()))

    async def advance(self, seconds: float) -> ClockSegment:
        """Runs the clock as rate max until `seconds` of virtual time have passed and the
        work due then is done, then holds it; returns the held segment."""
        if not (0 <= seconds <= _MAX_ADVANCE):  # also NaN
            raise Invalid.field(
                "seconds", f"Invalid value: {seconds:g}: must be between 0 and {_MAX_ADVANCE:g}"
            )
        await self._check_single_driver()
        until = self.clock.now() + seconds
        await self._swap(lambda s: s.advancing(until, self._wall()))
        while True:
            changed = self.clock.next_change()
            segment = self.clock.segment
            assert segment is not None
            if not segment.event_driven:
                return segment  # held at `until` (or another rate was set meanwhile)
            await changed.wait()

    # ------------------------------------------------------------ sessions

    async def session(
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
        outbound.send_nowait(clock_pb2.ClockUpdate(apiserver=self.activity.incarnation))
        session = self._sessions[sid] = _Session(outbound)

        async def read_reports() -> None:
            async for report in reports:
                session.identity = report.identity or session.identity
                session.component = report.component or session.component
                session.report = report
                if report.probe:
                    session.answers[report.probe] = report
                    session.responsive = True
                    session.awaiting = False
                    answered, self._answered = self._answered, anyio.Event()
                    answered.set()
            tg.cancel_scope.cancel()  # the component closed its side

        async def segments() -> None:
            while True:
                changed = self.clock.next_change()
                segment = self.clock.segment
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
            self._sessions.pop(sid, None)
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

    def _booting(self) -> bool:
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

    def end_sessions(self) -> None:
        """On shutdown: ends every session and refuses new ones (Unavailable), as the
        apiserver ends its watches."""
        self._ended = True
        for session in list(self._sessions.values()):
            session.outbound.close()

    def status(self) -> clock_pb2.ClockStatus:
        segment = self.clock.segment
        out = clock_pb2.ClockStatus(
            mode=ClockMode.VIRTUAL.value,
            now=self.clock.now(),
            timers=sum(s.report.timers for s in self._sessions.values()) + self.clock.timers,
        )
        if segment is not None:
            out.segment.CopyFrom(to_proto(segment))
        out.sessions.extend(s.report for s in self._sessions.values() if s.component)
        return out

    # ------------------------------------------------------------ rate max

    def _locally_quiet(self) -> bool:
        a = self.activity
        return a.requests == 0 and a.sending == 0 and self._quiet_check()

    async def _drive(self) -> None:
        """At rate max: whenever the cluster is quiescent, jump to the earliest timer any
        process holds (or to the end of an advance, and hold there)."""
        while True:
            segment = self.clock.segment
            if segment is None or not segment.event_driven:
                await self.clock.next_change().wait()
                continue
            if self._others:
                # (set at max before another apiserver came: none of them drives; the
                # clock holds until the rate is changed or the others are gone)
                if not self._warned_others:
                    logger.warning(
                        "event-driven clock: %d other apiserver(s) serve the cluster: not "
                        "moving the clock (rate max needs one apiserver)",
                        self._others,
                    )
                    self._warned_others = True
                await anyio.sleep(_IDLE_RECHECK)
                continue
            self._warned_others = False
            quiet, deadline = await self._quiescence()
            if not quiet:
                continue
            try:
                await self._step(segment, deadline)
            except ApiError as e:
                # etcd away (a restart, an election) or another writer racing: the clock
                # holds where it is, and the next quiescence moves it
                logger.warning("event-driven clock: %s; trying again", e)
                await anyio.sleep(_WATCH_RETRY)

    async def _step(self, segment: ClockSegment, deadline: float | None) -> None:
        """One move of the event-driven clock, the cluster being quiescent with its earliest
        timer at `deadline`."""
        now = self.clock.now()
        until = segment.advance_until
        if until and now >= until and (deadline is None or deadline > now):
            # the end of the advance, and the work due then is done: hold
            held = await self._swap(
                lambda s: (
                    s.with_rate(0.0, self._wall()) if s.generation == segment.generation else None
                )
            )
            logger.info("virtual clock advanced to %s: holding", _rfc3339(held.base_virtual))
            return
        targets = [t for t in (deadline, until or None) if t is not None]
        if not targets:  # nothing will happen by itself: look again in a moment
            await anyio.sleep(_IDLE_RECHECK)
            return
        target = min(targets)
        if target <= now:
            await anyio.sleep(_SETTLE)  # due already: its work is starting
            return
        await self._swap(
            lambda s: s.jumped(target, self._wall()) if s.generation == segment.generation else None
        )

    async def _quiescence(self) -> tuple[bool, float | None]:
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
        latest: dict[_Session, clock_pb2.ClockReport] = {}
        to_probe = list(self._sessions.values())
        for _ in range(_REPROBES):
            if not await self._probe(to_probe, latest):
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
            or self._booting()
        ):
            await anyio.sleep(_SETTLE)
            return False, None
        deadlines = [answer.next_deadline for answer in latest.values() if answer.timers]
        own = self.clock.next_deadline()
        if own is not None:
            deadlines.append(own)
        return True, min(deadlines) if deadlines else None

    def _squares(self, session: _Session, answer: clock_pb2.ClockReport) -> bool:
        """Whether the apiserver received every call the session's answer counts, and no
        other, and the session received every watch event sent to it."""
        a = self.activity
        identity = session.identity
        return answer.events_received == a.sent.get(identity, 0) and calls_square(
            answer.requests_sent,
            answer.requests_abandoned,
            a.calls.count.get(identity, 0),
            a.calls.first.get(identity, 0),
            a.calls.last.get(identity, 0),
        )

    async def _probe(
        self, sessions: list[_Session], latest: dict[_Session, clock_pb2.ClockReport]
    ) -> bool:
        """Probes `sessions` and puts their answers in `latest`; False when one cannot be
        probed (ending, or not reading). A session that leaves the probe unanswered for
        _PROBE_TIMEOUT is frozen or hung: left out from then on, until it answers again."""
        probe = next(self._probes)
        segment = self.clock.segment
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
        with anyio.move_on_after(_PROBE_TIMEOUT):
            while any(probe not in s.answers for s in awaited if s in self._sessions.values()):
                await self._answered.wait()
        for s in sessions:
            answer = s.answers.pop(probe, None)
            for old in [k for k in s.answers if k < probe]:
                del s.answers[old]
            if answer is not None:
                latest[s] = answer
                if answer.idle and answer.ready and answer.boot_token:
                    self._expected.pop(answer.boot_token, None)  # its boot is done
            elif s.responsive and s in self._sessions.values():
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
                    _PROBE_TIMEOUT,
                )
            else:
                latest.pop(s, None)
        return True

    async def _locally_idle(self) -> None:
        """Returns once this apiserver serves no request and has nothing to send (or after
        _PROBE_TIMEOUT: the caller looks again)."""
        waited = 0
        with anyio.move_on_after(_PROBE_TIMEOUT):
            while not self._locally_quiet():
                waited += 1
                if waited % 500 == 0:
                    a = self.activity
                    logger.debug(
                        "event-driven clock: waiting for this apiserver: %d requests, %d watch "
                        "streams sending, caught up and nothing buffered: %s",
                        a.requests,
                        a.sending,
                        self._quiet_check(),
                    )
                # (woken by the end of a request; the watch caches' catching up is looked
                # at again)
                with anyio.move_on_after(_SETTLE):
                    await self.activity.next_change().wait()


def _peer_calls_square(latest: dict[_Session, clock_pb2.ClockReport]) -> bool:
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


def _rfc3339(t: float) -> str:
    return format_time(timestamp(t), "milli")
