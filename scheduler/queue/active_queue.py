"""In-flight pods and the events that arrive while they are being scheduled (upstream
active_queue.go inFlightPods/inFlightEvents).

A pod is in flight from Pop until Done: through its scheduling cycle and its binding cycle. When
it comes back unschedulable, the queue replays the queueing hints of its rejecting plugins over
every event received since it was popped, so an event that arrived during the cycle (a node
added while the pod was being filtered) is not lost.

Events and pops share one sequence; an event is kept while some in-flight pod was popped before
it. The list is bounded: past `max_events` the oldest event is dropped and every pod popped
before it is treated as having missed an event (it goes back to the backoff/active queue
rather than the unschedulable pool).
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

from kemu.api.v1 import types_pb2
from kemu.scheduling.events import ClusterEvent


@dataclass(frozen=True, slots=True)
class InFlightEvent:
    seq: int
    event: ClusterEvent
    old_obj: object
    new_obj: object


@dataclass(slots=True)
class _InFlightPod:
    seq: int
    pod: types_pb2.Pod  # as popped
    latest: types_pb2.Pod | None = None  # the newest object an update delivered meanwhile
    deleted: bool = False  # deleted from the cluster while in flight


class InFlightTracker:
    def __init__(self, max_events: int = 10_000) -> None:
        self._max_events = max_events
        self._seq = itertools.count(1)
        self._pods: dict[str, _InFlightPod] = {}
        # (seq, uid) in the order the pods were added: the head, once entries of pods no
        # longer in flight are dropped, is the oldest pod in flight (amortised O(1) in done).
        self._order: deque[tuple[int, str]] = deque()
        self._events: deque[InFlightEvent] = deque()
        self._dropped_seq = 0  # the newest event dropped because the list was full

    def __contains__(self, uid: str) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def pods(self) -> list[types_pb2.Pod]:
        return [p.pod for p in self._pods.values()]

    def events(self) -> list[InFlightEvent]:
        return list(self._events)

    def add_pod(self, pod: types_pb2.Pod) -> bool:
        """Marks the pod in flight; False when it already is (a pod tracked twice is a bug)."""
        uid = pod.metadata.uid
        if uid in self._pods:
            return False
        seq = next(self._seq)
        self._pods[uid] = _InFlightPod(seq, pod)
        self._order.append((seq, uid))
        return True

    def done(self, uid: str) -> None:
        """Ends the pod's flight and forgets events no in-flight pod needs; idempotent."""
        if self._pods.pop(uid, None) is None:
            return
        if not self._pods:
            self._events.clear()
            self._order.clear()
            return
        order = self._order
        while True:
            seq, head = order[0]
            entry = self._pods.get(head)
            if entry is not None and entry.seq == seq:
                break
            order.popleft()
        oldest = seq
        while self._events and self._events[0].seq < oldest:
            self._events.popleft()

    def add_event(self, event: ClusterEvent, old_obj: object, new_obj: object) -> bool:
        """Records a cluster event if any pod is in flight."""
        if not self._pods:
            return False
        self._append(event, old_obj, new_obj)
        return True

    def add_pod_events(
        self, old_pod: types_pb2.Pod | None, new_pod: types_pb2.Pod, events: list[ClusterEvent]
    ) -> bool:
        """Records the pod's own update events if that pod is in flight."""
        if new_pod.metadata.uid not in self._pods:
            return False
        for event in events:
            self._append(event, old_pod, new_pod)
        return True

    def set_latest(self, pod: types_pb2.Pod) -> None:
        """Remembers the newest object of an in-flight pod an update delivered."""
        entry = self._pods.get(pod.metadata.uid)
        if entry is not None:
            entry.latest = pod

    def mark_deleted(self, uid: str) -> bool:
        entry = self._pods.get(uid)
        if entry is None:
            return False
        entry.deleted = True
        return True

    def is_deleted(self, uid: str) -> bool:
        entry = self._pods.get(uid)
        return entry is not None and entry.deleted

    def latest(self, uid: str) -> types_pb2.Pod | None:
        entry = self._pods.get(uid)
        return None if entry is None else entry.latest

    def events_for(self, uid: str) -> list[InFlightEvent] | None:
        """Events received since the pod was popped; None when the pod is not in flight or
        some of those events were dropped."""
        entry = self._pods.get(uid)
        if entry is None or self._dropped_seq > entry.seq:
            return None
        return [e for e in self._events if e.seq > entry.seq]

    def _append(self, event: ClusterEvent, old_obj: object, new_obj: object) -> None:
        self._events.append(InFlightEvent(next(self._seq), event, old_obj, new_obj))
        if len(self._events) > self._max_events:
            self._dropped_seq = self._events.popleft().seq
