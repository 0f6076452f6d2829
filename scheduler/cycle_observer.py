"""What a pod's scheduling and binding cycles tell an observer (kemu, not upstream): the one
seam through which a record of the cycle (the decision record, scheduler/decisions.py,
`--record-decisions`) watches it, instead of a record threaded through every call. Each
call names the pod; an observer that keeps per-attempt state finds it by the pod's uid (a pod
has one attempt in flight: an assumed pod is not scheduled again until its binding ends).

`NO_OBSERVER` (the default) does nothing; the cycle computes nothing for it beyond its
arguments, and asks for the column form's per-plugin scores only when `plugin_scores` gives a
dict to fill.
"""

from __future__ import annotations

from typing import Final, Protocol

from kemu.api.v1 import types_pb2
from kemu.scheduling.arrays import IntArray
from kemu.scheduling.filter_score import PrioritizedNodes
from kemu.scheduling.interface import FitError
from kemu.scheduling.status import Status
from kemu.scheduling.types import PostFilterResult

__all__ = [
    "DEFERRED_RESIZE",
    "NO_OBSERVER",
    "POD_GROUP",
    "SCHEDULE",
    "CycleObserver",
    "NoObserver",
]

SCHEDULE: Final = "schedule"
"""A plain scheduling cycle."""
DEFERRED_RESIZE: Final = "deferred-resize"
"""A KEP-5836 cycle for a running pod's deferred resize."""
POD_GROUP: Final = "pod-group"
"""A member's try within its group's pod-group cycle (1.36+, scheduler/schedule_one_podgroup.py)."""


class CycleObserver(Protocol):
    """The points of a cycle an observer sees, in the order they happen."""

    def gated(self, pod: types_pb2.Pod, plugin: str, message: str) -> None:
        """PreEnqueue (`plugin`) keeps `pod` out of activeQ: gated in the queue's pool."""

    def cycle_started(self, pod: types_pb2.Pod, *, profile: str, cycle: str) -> None:
        """A scheduling attempt of `pod` begins (`cycle`: SCHEDULE, DEFERRED_RESIZE or
        POD_GROUP)."""

    def pre_filter_narrowed(self, pod: types_pb2.Pod, nodes: int) -> None:
        """PreFilter's result left `nodes` nodes to filter."""

    def plugin_scores(self) -> dict[str, IntArray | int] | None:
        """A dict for the column Score's per-plugin weighted scores, or None: not wanted."""

    def scored(self, pod: types_pb2.Pod, scores: PrioritizedNodes, chosen: int) -> None:
        """The feasible nodes were scored; `chosen` is the index of the node selected."""

    def scheduled(
        self, pod: types_pb2.Pod, *, node: str, nodes: int, evaluated: int, feasible: int
    ) -> None:
        """The algorithm chose `node` (of `nodes` in the snapshot; `evaluated` went through
        Filter, `feasible` passed)."""

    def unschedulable(
        self, pod: types_pb2.Pod, fit: FitError, nominating: PostFilterResult | None
    ) -> None:
        """No node fits; `nominating` is what PostFilter (preemption) made of it."""

    def parked(self, pod: types_pb2.Pod) -> None:
        """A deferred resize that fits waits for its kubelet (KEP-5836)."""

    def failed(self, pod: types_pb2.Pod, status: Status) -> None:
        """The attempt failed with `status` (after a node was chosen, or with no FitError)."""

    def phase(
        self, pod: types_pb2.Pod, point: str, status: Status, since: float, throttled: float = 0.0
    ) -> None:
        """Extension point `point` ran from `since` (the scheduler clock's monotonic time),
        `throttled` seconds of it waiting for the client's rate limiter (its API calls)."""

    def expected_node(self, pod: types_pb2.Pod, node: str) -> None:
        """KEP-5278: the binding cycle set nominatedNodeName to `node` (expected placement)."""

    def bound(self, pod: types_pb2.Pod, ok: bool) -> None:
        """The binding cycle ended: bound (`ok`) or failed."""

    def pod_group_decided(
        self,
        pod: types_pb2.Pod,
        *,
        group: str,
        members: int,
        result: str,
        message: str,
        nominated: str | None = None,
    ) -> None:
        """The pod-group cycle of `group` (namespace/name; `members` tried together) ended
        with `result` (scheduled, unschedulable, waiting_on_preemption, error): `pod` was one
        of its members."""


class NoObserver:
    """The observer that keeps nothing (no `--record-decisions`)."""

    def gated(self, pod: types_pb2.Pod, plugin: str, message: str) -> None:
        pass

    def cycle_started(self, pod: types_pb2.Pod, *, profile: str, cycle: str) -> None:
        pass

    def pre_filter_narrowed(self, pod: types_pb2.Pod, nodes: int) -> None:
        pass

    def plugin_scores(self) -> dict[str, IntArray | int] | None:
        return None

    def scored(self, pod: types_pb2.Pod, scores: PrioritizedNodes, chosen: int) -> None:
        pass

    def scheduled(
        self, pod: types_pb2.Pod, *, node: str, nodes: int, evaluated: int, feasible: int
    ) -> None:
        pass

    def unschedulable(
        self, pod: types_pb2.Pod, fit: FitError, nominating: PostFilterResult | None
    ) -> None:
        pass

    def parked(self, pod: types_pb2.Pod) -> None:
        pass

    def failed(self, pod: types_pb2.Pod, status: Status) -> None:
        pass

    def phase(
        self, pod: types_pb2.Pod, point: str, status: Status, since: float, throttled: float = 0.0
    ) -> None:
        pass

    def expected_node(self, pod: types_pb2.Pod, node: str) -> None:
        pass

    def bound(self, pod: types_pb2.Pod, ok: bool) -> None:
        pass

    def pod_group_decided(
        self,
        pod: types_pb2.Pod,
        *,
        group: str,
        members: int,
        result: str,
        message: str,
        nominated: str | None = None,
    ) -> None:
        pass


NO_OBSERVER: Final[CycleObserver] = NoObserver()
