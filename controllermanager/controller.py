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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from prometheus_client import CollectorRegistry

from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.component.featuregate import FeatureGates


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
