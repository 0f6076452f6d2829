"""What a profile's plugins get through their Handle (upstream's framework.Handle, implemented
by frameworkImpl in pkg/scheduler/framework/runtime/framework.go): the API client, the clock,
the gates, the event recorder, the snapshot, the nominator, informers, waiting pods, the
preemption executor, background work, metrics and the random source. The Framework
(kemu.scheduling.runtime) is this handle plus the plugins it runs.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Final

from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.component.featuregate import FeatureGates
from kemu.scheduling.dra_manager import DraManager
from kemu.scheduling.interface import (
    EventRecorder,
    InformerFactory,
    NoEvents,
    PluginMetrics,
    PodNominator,
    PreemptionExecutor,
    PreemptionExecutorFactory,
    SchedulingApi,
    SharedLister,
)
from kemu.scheduling.pod_group_state import PodGroupStates
from kemu.scheduling.pods_in_pre_bind import PodInPreBind, PodsInPreBindMap
from kemu.scheduling.waiting_pods import WaitingPod, WaitingPodsMap

__all__ = ["NO_OPTIONS", "ExtensionPointObserver", "FrameworkHandle", "FrameworkOptions"]

# observe(extension_point, status, profile, seconds)
ExtensionPointObserver = Callable[[str, str, str, float], None]


@dataclass(frozen=True)
class FrameworkOptions:
    """What a profile's plugins get through their Handle, and where the Framework reports
    (upstream's frameworkruntime Options: WithClientSet, WithEventRecorder,
    WithInformerFactory, WithMetricsRecorder, WithWaitingPods, ...). Left out: no API client
    (simulations), the real clock, the default gates, no events, no informers, waiting pods
    of the framework's own, no metrics, an unseeded random source, no preemption writes."""

    client: SchedulingApi | None = None
    clock: Clock | None = None
    gates: FeatureGates | None = None
    event_recorder: EventRecorder | None = None
    informer_factory: InformerFactory | None = None
    waiting_pods: WaitingPodsMap | None = None
    """Shared by the profiles of one scheduler."""
    pods_in_pre_bind: PodsInPreBindMap | None = None
    """Shared by the profiles of one scheduler, as `waiting_pods`."""
    observe: ExtensionPointObserver | None = None
    """Each extension point's duration (see the module docstring)."""
    metrics: PluginMetrics | None = None
    rng: random.Random | None = None
    preemption_executor: PreemptionExecutorFactory | None = None
    pod_group_states: PodGroupStates | None = None
    """The scheduler's pod groups (kemu.scheduling.pod_group_state); None: no groups."""
    dra_manager: DraManager | None = None
    """The scheduler's claims, slices and classes (kemu.scheduling.dra_manager), shared by its
    profiles so that an allocation in flight in one is seen by the others."""


NO_OPTIONS: Final = FrameworkOptions()


class FrameworkHandle:
    """The Handle part of a profile's Framework; see the module docstring."""

    def __init__(
        self,
        profile_name: str,
        options: FrameworkOptions,
        *,
        nominator: PodNominator | None,
        snapshot: SharedLister | None,
    ) -> None:
        self._profile_name = profile_name
        self._client = options.client
        self._clock: Clock = options.clock or RealClock()
        self._gates = options.gates or FeatureGates.default()
        self._event_recorder: EventRecorder = options.event_recorder or NoEvents()
        self._nominator = nominator
        self._informer_factory = options.informer_factory
        self._snapshot = snapshot
        waiting_pods = options.waiting_pods
        self._waiting_pods = waiting_pods if waiting_pods is not None else WaitingPodsMap()
        pre_bind = options.pods_in_pre_bind
        self._pods_in_pre_bind = pre_bind if pre_bind is not None else PodsInPreBindMap()
        self._observe = options.observe
        self._metrics = options.metrics
        self._rng = options.rng or random.Random()
        self._pod_group_states = options.pod_group_states
        self._dra_manager = options.dra_manager
        # Set by the scheduler: its queue's Activate, and the task group of background work.
        self._pod_activator: Callable[[Iterable[types_pb2.Pod]], None] | None = None
        self._background: TaskGroup | None = None
        # The scheduler's API writes for preemption (None in simulations), built by the
        # Framework once it is a whole Handle.
        self._preemption_executor: PreemptionExecutor | None = None

    # ------------------------------------------------------------ Handle

    @property
    def client(self) -> SchedulingApi:
        if self._client is None:
            raise RuntimeError(f"framework {self._profile_name!r} has no API client")
        return self._client

    @property
    def clock(self) -> Clock:
        return self._clock

    @property
    def gates(self) -> FeatureGates:
        return self._gates

    @property
    def event_recorder(self) -> EventRecorder:
        return self._event_recorder

    def snapshot_shared_lister(self) -> SharedLister:
        if self._snapshot is None:
            raise RuntimeError("no snapshot yet: the scheduler sets one each cycle")
        return self._snapshot

    def set_snapshot(self, snapshot: SharedLister) -> None:
        self._snapshot = snapshot

    def nominator(self) -> PodNominator | None:
        return self._nominator

    def set_nominator(self, nominator: PodNominator | None) -> None:
        self._nominator = nominator

    def informer_factory(self) -> InformerFactory | None:
        return self._informer_factory

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        return self._waiting_pods.get(uid)

    def iterate_over_waiting_pods(self) -> Iterable[WaitingPod]:
        return iter(self._waiting_pods)

    def get_pod_in_pre_bind(self, uid: str) -> PodInPreBind | None:
        return self._pods_in_pre_bind.get(uid)

    def add_pod_in_pre_bind(self, uid: str) -> PodInPreBind:
        """Registers the pod's PreBind (the binding cycle, when PreBind has work)."""
        return self._pods_in_pre_bind.add(uid)

    def remove_pod_in_pre_bind(self, uid: str) -> None:
        self._pods_in_pre_bind.remove(uid)

    def preemption_executor(self) -> PreemptionExecutor | None:
        return self._preemption_executor

    def shared_dra_manager(self) -> DraManager | None:
        return self._dra_manager

    def pod_group_states(self) -> PodGroupStates | None:
        return self._pod_group_states

    def reject_waiting_pod(self, uid: str) -> bool:
        wp = self._waiting_pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None:
        if self._pod_activator is not None:
            self._pod_activator(pods)

    def set_pod_activator(self, activator: Callable[[Iterable[types_pb2.Pod]], None]) -> None:
        self._pod_activator = activator

    def spawn(self, fn: Callable[[], Coroutine[Any, Any, None]], name: str) -> None:
        if self._background is None:
            raise RuntimeError(f"framework {self._profile_name!r} has no background task group")
        self._background.start_soon(fn, name=name)

    def set_background(self, tg: TaskGroup | None) -> None:
        """The task group `spawn` starts tasks in (the scheduler's, while it runs)."""
        self._background = tg

    @property
    def metrics(self) -> PluginMetrics | None:
        return self._metrics

    @property
    def rng(self) -> random.Random:
        return self._rng
