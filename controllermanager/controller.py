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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

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
