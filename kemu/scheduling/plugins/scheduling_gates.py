"""SchedulingGates: keeps a pod out of activeQ while spec.schedulingGates is non-empty
(upstream schedulinggates/scheduling_gates.go).

PreEnqueue answers UnschedulableAndUnresolvable "waiting for scheduling gates: [a b]" (the
gates in spec order, as Go prints a string slice); the queue keeps such a pod gated. When an
update of the pod itself removes its last gate, the hint queues it.
"""

from __future__ import annotations

from typing import Final

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import (
    EnqueueExtensions,
    Handle,
    PluginArgs,
    PreEnqueuePlugin,
)
from kemu.scheduling.status import SUCCESS, Status, unresolvable

NAME: Final = "SchedulingGates"


class SchedulingGates(PreEnqueuePlugin, EnqueueExtensions):
    NAME = NAME

    def name(self) -> str:
        return NAME

    def pre_enqueue(self, pod: types_pb2.Pod) -> Status:
        if not pod.spec.scheduling_gates:
            return SUCCESS
        gates = " ".join(g.name for g in pod.spec.scheduling_gates)
        return unresolvable(f"waiting for scheduling gates: [{gates}]")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_gates_eliminated,
            )
        ]

    def is_schedulable_after_gates_eliminated(
        self, pod: types_pb2.Pod, old: object, new: object
    ) -> QueueingHint:
        """Queue only the gated pod itself, and only once it has no gate left."""
        if not isinstance(new, types_pb2.Pod) or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.SKIP
        return QueueingHint.SKIP if new.spec.scheduling_gates else QueueingHint.QUEUE


def new(args: PluginArgs, handle: Handle) -> SchedulingGates:
    return SchedulingGates()
