"""A component's clock session in virtual time: it keeps the component's VirtualClock on the
cluster clock the apiserver keeps (apiserver/server/clock.py) and reports the component's
pending timers to it (`kemuctl clock` shows their count)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.api.v1 import api_pb2
from kemu.client.backoff import Backoff
from kemu.client.client import Client
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.errors import BadRequest, Unavailable
from kemu.machinery.virtual_time import ClockSegment

logger = logging.getLogger(__name__)

REPORT_DEBOUNCE: Final = 0.05
"""Wall seconds a report waits for more timer changes before it is sent."""


class ClockModeMismatch(Exception):
    """This component runs in virtual time and the apiserver in real time."""


def from_proto(segment: api_pb2.ClockSegment) -> ClockSegment:
    return ClockSegment(
        base_wall=segment.base_wall,
        base_virtual=segment.base_virtual,
        rate=segment.rate,
        generation=segment.generation,
    )


async def follow_cluster_clock(
    client: Client,
    clock: VirtualClock,
    *,
    component: str,
    identity: str,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Keeps `clock` on the cluster clock until cancelled; started once it follows it. While
    the apiserver is away the clock runs on its last segment and the session is opened again
    (wall-time backoff: transport, not behaviour). ClockModeMismatch if the apiserver runs
    in real time."""
    started = False
    backoff = Backoff(0.05, 2.0, jitter=0.5)

    async def reports() -> AsyncIterator[api_pb2.ClockReport]:
        while True:
            timers, deadline = clock.take_timers()
            yield api_pb2.ClockReport(
                component=component,
                identity=identity,
                timers=timers,
                next_deadline=deadline or 0.0,
            )
            await clock.timers_changed.wait()
            await anyio.sleep(REPORT_DEBOUNCE)

    while True:
        try:
            async for segment in client.clock_session(reports()):
                if clock.set_segment(from_proto(segment)) and not started:
                    logger.info("following the cluster clock (rate %g)", segment.rate)
                if not started:
                    started = True
                    task_status.started()
                backoff.reset()
        except BadRequest as e:
            raise ClockModeMismatch(f"--clock virtual: {e.message}") from None
        except Unavailable as e:
            logger.warning("the clock session ended (%s); opening it again", e)
        await anyio.sleep(backoff.next())
