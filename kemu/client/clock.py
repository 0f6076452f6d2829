"""A component's clock session in virtual time: it keeps the component's VirtualClock on the
cluster clock the apiserver keeps (apiserver/clock/cluster_clock.py) and reports the component's
pending timers to it (`kemuctl clock` shows their count)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.api.v1 import clock_pb2
from kemu.client.backoff import Backoff
from kemu.client.client import Client
from kemu.component.quiescence import all_tasks_blocked
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import ApiError, BadRequest
from kemu.machinery.virtual_time import (
    BOOT_TOKEN_ENV,
    CLOCK_CALL_KEY,
    CLOCK_IDENTITY_KEY,
    REAL_TIME_CLOCK,
    ClockMode,
    ReceivedCalls,
    clock_caller,
    from_proto,
)

logger = logging.getLogger(__name__)

REPORT_DEBOUNCE: Final = 0.05
"""Wall seconds a report waits for more timer changes before it is sent."""
PROBE_PATIENCE: Final = 0.5
"""Wall seconds a probe's answer waits for the process to be idle before it says busy."""
IN_FLIGHT_PATIENCE: Final = 0.02
"""Wall seconds a probe's answer waits for the process's calls in flight to end before it
answers idle with them counted (held on the apiserver's timers, they end only once the clock
moves; a call served at once ends within it, and the round squares without a probe more)."""
IDLE_POLL: Final = 0.001
"""Wall seconds between two looks at a process whose calls are in flight."""


@dataclass
class PeerCalls:
    """Calls between two components that do not go through the apiserver (the autoscaler's
    to the cloud): the caller counts those it made (tagged with `identity`, its clock
    session's, set once that session starts, and with their number) and those it gave up on
    before their answer, the callee those it served by caller and the lowest and highest
    number among them, and the event-driven clock's driver checks that they square
    (kemu.machinery.virtual_time.calls_square: a call on its way, or served after the callee
    answered a probe, is work the apiserver cannot see)."""

    identity: str = ""
    sent: int = 0
    abandoned: int = 0
    served_calls: ReceivedCalls = field(default_factory=ReceivedCalls)

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """A call's metadata (counting it as made), empty before a clock session."""
        if not self.identity:
            return ()
        self.sent += 1
        return ((CLOCK_IDENTITY_KEY, self.identity), (CLOCK_CALL_KEY, str(self.sent)))

    def served(self, metadata: Iterable[tuple[str, str | bytes]]) -> None:
        """A call served, with its metadata (untagged: not a component in session)."""
        caller, number = clock_caller(metadata)
        if caller:
            self.served_calls.add(caller, number)


class ClockModeMismatch(Exception):
    """This component runs in virtual time and the apiserver in real time."""


async def follow_cluster_clock(
    client: Client,
    clock: VirtualClock,
    *,
    component: str,
    identity: str,
    busy: Callable[[], bool] = lambda: False,
    ready: Callable[[], bool] = lambda: True,
    peers: PeerCalls | None = None,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Keeps `clock` on the cluster clock until cancelled; started once it follows it. While
    the apiserver is away the clock runs on its last segment and the session is opened again
    (wall-time backoff: transport, not behaviour). ClockModeMismatch if the apiserver runs
    in real time.

    The client's calls and watches are tagged with `identity` from then on, and each probe
    of the event-driven clock is answered once the process is idle (every other task
    blocked and `busy()` False: work the clock cannot see, such as the cloud's kubelets
    booting), or busy after PROBE_PATIENCE, with the calls made, those in flight and watch
    events received so far, the calls to and from other components (`peers`) and
    the pending timers; the process's steps at one instant (`clock.steps`) are released
    through it."""
    started = False
    steps = clock.steps
    backoff = Backoff(0.05, 2.0, jitter=0.5)
    client.clock_identity = identity
    if peers is not None:
        peers.identity = identity
    answers, outgoing = anyio.create_memory_object_stream[clock_pb2.ClockReport](16)

    # (announced by its launcher: until this session answers idle and `ready()`, the clock
    # holds for its boot)
    boot_token = os.environ.get(BOOT_TOKEN_ENV, "")
    booted = not boot_token
    apiserver = ""
    """The incarnation of the apiserver the session is with (its first update says)."""

    def report(probe: int = 0, idle: bool = False) -> clock_pb2.ClockReport:
        nonlocal booted
        if not booted:
            # Its boot waits on the clock, which must move, while calls wait their latency
            # here (--apiserver-latency) or, idle with calls in flight, on the apiserver's
            # timers (--etcd-latency: such an answer squares only then)
            booted = ready() or client.latency_waits > 0 or (idle and client.requests_in_flight > 0)
        timers, deadline = clock.take_timers()
        return clock_pb2.ClockReport(
            boot_token=boot_token,
            # An idle process whose start waits for tokens of its client-side rate limiter
            # (the informers' lists beyond the burst) waits on its clock's timers: its boot
            # needs time to pass, so it no longer holds the clock (kemu.client.flowcontrol).
            ready=booted or client.waiting_for_tokens > 0,
            component=component,
            identity=identity,
            timers=timers,
            next_deadline=deadline or 0.0,
            probe=probe,
            idle=idle,
            events_received=client.events_received.get(apiserver, 0),
            requests_sent=client.requests_sent,
            requests_abandoned=client.requests_abandoned,
            requests_in_flight=client.requests_in_flight,
            peer_calls_sent=peers.sent if peers is not None else 0,
            peer_calls_abandoned=peers.abandoned if peers is not None else 0,
            peer_calls_received=peers.served_calls.count if peers is not None else {},
            peer_calls_last=peers.served_calls.last if peers is not None else {},
            peer_calls_first=peers.served_calls.first if peers is not None else {},
            step=steps.waiting,
        )

    async def reports() -> AsyncIterator[clock_pb2.ClockReport]:
        yield report()
        while True:
            # an answer to a probe goes at once; a change of timers within REPORT_DEBOUNCE
            changed = clock.timers_changed
            item = None
            with anyio.move_on_after(REPORT_DEBOUNCE):
                item = await outgoing.receive()
            if item is not None:
                yield item
            elif changed.is_set():
                yield report()

    async def answer(probe: int) -> None:
        idle = False
        asked = anyio.current_time()

        def settled() -> bool:
            # Calls in flight do not keep it busy past IN_FLIGHT_PATIENCE: its report counts
            # them, and they square only when the apiserver holds each of them on a timer of
            # its clock (--etcd-latency; apiserver/clock/activity.py)
            waited = anyio.current_time() - asked
            return not busy() and (client.requests_in_flight == 0 or waited >= IN_FLIGHT_PATIENCE)

        with anyio.move_on_after(PROBE_PATIENCE):
            while True:
                # (the cheap looks first: a look at every task waits for calls to end)
                if settled():
                    await all_tasks_blocked()
                    if settled():
                        idle = True
                        break
                await anyio.sleep(IDLE_POLL)
        # (the report is made at once: nothing runs between the look and the counts it
        # sends; a busy process answers busy rather than nothing: no answer means frozen)
        await answers.send(report(probe, idle=idle))

    def holding() -> bool:
        segment = clock.segment
        return segment is not None and segment.rate == 0

    def step_changed() -> None:
        # (at once, as a probe's answer: the driver waits for it; a full queue has a probe's
        # answer on its way, which says it too)
        with contextlib.suppress(anyio.WouldBlock):
            answers.send_nowait(report())

    async with anyio.create_task_group() as tg:
        while True:
            try:
                # (a unary call first: its answer is certain, a refused stream's may not be)
                status = await client.clock_status()
                if status.mode != ClockMode.VIRTUAL.value:
                    raise ClockModeMismatch(f"--clock virtual: {REAL_TIME_CLOCK}")
                async for update in client.clock_session(reports()):
                    if update.apiserver:
                        apiserver = update.apiserver
                        continue
                    if update.probe:
                        tg.start_soon(answer, update.probe)
                        continue
                    if update.release:
                        steps.release(update.release)
                        continue
                    segment = update.segment
                    taken = clock.set_segment(from_proto(segment))
                    steps.attach(holding, step_changed)
                    if taken:
                        steps.rate_changed()
                    if taken and not started:
                        logger.info(
                            "following the cluster clock (rate %s)",
                            "max" if segment.event_driven else f"{segment.rate:g}",
                        )
                    if not started:
                        started = True
                        task_status.started()
                    backoff.reset()
            except BadRequest as e:
                raise ClockModeMismatch(f"--clock virtual: {e.message}") from None
            except ApiError as e:
                logger.warning("the clock session ended (%s); opening it again", e)
            steps.detach()
            await anyio.sleep(backoff.next())
