"""What every controller of the controller-manager gets and provides.

As upstream's kube-controller-manager: each controller is registered by name with an init
function (see controllermanager.app.CONTROLLERS). The manager calls every enabled init function
with one shared `ControllerContext`; an init function asks the shared informer factory for the
informers it needs, adds its event handlers and returns the controller without starting
anything. The manager then starts the informers, waits until they are synced, and runs every
controller's `run()` in one task group. `run()` works until cancelled; an exception from it is
a bug and stops the process.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Protocol

import anyio
from prometheus_client import CollectorRegistry

from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.component.featuregate import FeatureGates
from kemu.machinery.errors import ApiError


@dataclass(frozen=True)
class ControllerContext:
    client: ApiClient
    informers: InformerFactory
    clock: Clock
    gates: FeatureGates
    registry: CollectorRegistry | None = None
    """Where a controller registers its Prometheus metrics (None: no metrics)."""


class Controller(Protocol):
    @property
    def name(self) -> str: ...

    async def run(self) -> None:
        """Reconciles until cancelled; called once the informers have synced."""
        ...


ControllerInit = Callable[[ControllerContext], Controller]


async def process_work_items(
    queue: WorkQueue,
    sync: Callable[[str], Awaitable[None]],
    what: str,
    logger: logging.Logger,
) -> None:
    """One worker of a controller (client-go's processNextWorkItem loop): syncs each key the
    queue hands out; an API error requeues the key rate-limited and is logged as "error
    `what` KEY, requeuing", success forgets its failures. Returns when the queue shuts down."""
    while (key := await queue.get()) is not None:
        try:
            await sync(key)
        except ApiError as e:
            logger.warning("error %s %s, requeuing: %s", what, key, e)
            queue.add_rate_limited(key)
        else:
            queue.forget(key)
        finally:
            queue.done(key)


Task = tuple[str, Callable[[], Coroutine[object, object, None]]]
"""A task of a running controller: its name and what it runs."""


def workers(
    name: str, count: int, work: Callable[[], Coroutine[object, object, None]]
) -> list[Task]:
    """`count` tasks running `work`, named "`name` worker i"."""
    return [(f"{name} worker {i}", work) for i in range(count)]


class Syncing(Protocol):
    """What a controller waits for before it starts: an informer's first sync."""

    async def wait_for_sync(self) -> None: ...


async def run_controller(
    title: str,
    logger: logging.Logger,
    *,
    synced: Sequence[Syncing],
    queues: Sequence[WorkQueue],
    tasks: Sequence[Task],
    on_synced: Callable[[], None] | None = None,
) -> None:
    """A controller's `run()`, as each of upstream's controllers' Run: logs "starting
    `title`", waits until the `synced` informers' caches have synced (WaitForNamedCacheSync),
    calls `on_synced`, then runs the `queues`' timers and the `tasks` (workers, periodic
    loops, the event recorder) until cancelled; on the way out the queues shut down (their
    workers return) and "`title` stopped" is logged."""
    logger.info("starting %s", title)
    for informer in synced:
        await informer.wait_for_sync()
    if on_synced is not None:
        on_synced()
    try:
        async with anyio.create_task_group() as tg:
            for queue in queues:
                tg.start_soon(queue.run, name=f"{queue.name} queue timer")
            for name, work in tasks:
                tg.start_soon(work, name=name)
    finally:
        for queue in queues:
            queue.shut_down()
        logger.info("%s stopped", title)
