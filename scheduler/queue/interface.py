"""What the scheduler's cycles and event handlers need of the scheduling queue (upstream
internal/queue SchedulingQueue). PriorityQueue is the implementation."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ActionType, ClusterEvent
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.status import Status
from kemu.scheduling.types import PodInfo
from scheduler.queue.pod_events import PreEnqueueCheck
from scheduler.queue.pod_group_entity import QueuedPodGroupInfo


class SchedulingQueue(Protocol):
    # Informer events.
    def add(self, pod: types_pb2.Pod) -> None: ...

    def update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None: ...

    def delete(self, pod: types_pb2.Pod) -> None: ...

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None: ...

    def assigned_pod_added(self, pod: types_pb2.Pod) -> None: ...

    def assigned_pod_updated(
        self, old: types_pb2.Pod, new: types_pb2.Pod, event: ClusterEvent | ActionType
    ) -> None: ...

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: object = None,
        new_obj: object = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """`old_obj`/`new_obj` are the event's objects (a Pod, a Node, ... or None), as
        upstream's interface{} arguments handed to the plugins' queueing hints."""
        ...

    # The scheduling cycle: every pop is paired with done.
    async def pop(self) -> QueuedPodInfo | None: ...

    def pop_specific_pod(self, pod: types_pb2.Pod) -> QueuedPodInfo | None:
        """Takes `pod` out of the queue, in flight as a pop would (upstream PopSpecificPod,
        the pod-group cycle collecting a group's members); None if it is not queued."""
        ...

    def done(self, uid: str) -> None: ...

    def add_unschedulable_if_not_present(
        self, qpi: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None: ...

    def add_attempted_pod_group_if_needed(self, entity: QueuedPodGroupInfo, status: Status) -> None:
        """A popped pod group's attempt is over (1.37): the group back to the queue with the
        members that came back or arrived meanwhile (upstream AddAttemptedPodGroupIfNeeded)."""
        ...

    def scheduling_cycle(self) -> int: ...

    # PodGroups observed (1.37: members wait for theirs before they queue).
    def add_pod_group(self, pg: types_pb2.PodGroup) -> None: ...

    def delete_pod_group(self, pg: types_pb2.PodGroup) -> None: ...

    # CompositePodGroups observed (their trees' members wait for the root).
    def add_composite_pod_group(self, cpg: types_pb2.CompositePodGroup) -> None: ...

    def close(self) -> None: ...

    # The nominator it holds (PodNominator).
    def add_nominated_pod(self, pod_info: PodInfo, nominated_node_name: str | None) -> None: ...

    def delete_nominated_pod_if_exists(self, pod: types_pb2.Pod) -> None: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...
