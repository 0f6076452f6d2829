"""A pod group queued as one entity (1.37, GenericWorkload; upstream
pkg/scheduler/framework's QueuedPodGroupInfo and pkg/scheduler/backend/queue's handling of it,
scheduling_queue.go at commit 9d2a8fb7c431).

At 1.37 the scheduling queue holds entities: a pod that is no group's member is one, a pod
group is another. The group's unscheduled members travel together: activeQ, backoffQ or the
unschedulable pool hold the group, Pop hands the whole group to the pod-group cycle, and
members that arrive while the group is in flight wait aside ("pending") until the attempt
ends and the group is queued again (AddAttemptedPodGroupIfNeeded).

The entity sorts as its members do (PrioritySort: priority, then the entity's timestamp; the
members of a group share one priority, 1.37's validatePodGroup). It backs off by its own
counts: each rejected attempt adds one to `unschedulable_count`, each failed one (an error) to
`consecutive_errors_count`; the backoff is `initial * 2**(count-1)` capped at `max *
sqrt(members)` (upstream backoffQueue.calculateBackoffDuration: a larger group waits longer).

kemu's entity is a QueuedPodInfo (what the queue's heaps and its pool hold, as upstream's
QueuedEntityInfo covers both): its `pod_info` is a member's (the sort reads its priority); its
own rejecting plugins stay empty as upstream's (the members' are asked, one by one, whether an
event may move the group), so backoffQ keeps it with the pods that failed with an error:
SchedulerPopFromBackoffQ never takes it before its backoff ends. The per-member state stays
on the members.

With CompositePodGroup (KEP-6012) the entity of a PodGroup in a tree is the tree's: keyed by
its root CompositePodGroup (upstream workload_forest.go getRootLookupInfo; `group` is then a
`CompositePodGroupKey`, type `compositepodgroup`), holding the members of all its leaves
(getLeafPodGroups); while a CompositePodGroup on the way up is not observed its members wait
aside (`incomplete`), as for a PodGroup not observed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.version import Version
from kemu.scheduling.composite_pod_groups import CompositePodGroupKey, GroupKey, GroupKind
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.pod_group_state import PodGroupKey, PodGroupStates


@dataclass(frozen=True)
class PodGroupQueueing:
    """How the queue tells members (1.37, GenericWorkload): `group_of` a pod's PodGroup (None:
    none; a deferred resize is none, KEP-5836), `root_of` the entity an observed PodGroup's
    members queue in (upstream workloadForest.getRootLookupInfo): the PodGroup itself, or,
    with the CompositePodGroup gate, the root of its tree as a `CompositePodGroupKey`; None
    while a CompositePodGroup on the way up is not observed (the members wait aside)."""

    group_of: Callable[[types_pb2.Pod], PodGroupKey | None]
    root_of: Callable[[PodGroupKey], PodGroupKey | None]


ENTITY_QUEUE_SINCE: Final = Version(1, 37)


def pod_group_queueing(states: PodGroupStates | None, version: Version) -> PodGroupQueueing | None:
    """The queue's pod-group entities: from 1.37 with the group cycle (GenericWorkload)."""
    if states is None or not states.membership.group_cycle or version < ENTITY_QUEUE_SINCE:
        return None
    forest = states.forest

    def root_of(key: PodGroupKey) -> PodGroupKey | None:
        if forest is None or not forest.enabled or not forest.in_tree(key):
            return key
        root = forest.root_of(GroupKey.pod_group(key.namespace, key.name))
        if root is None:
            return None
        if root.kind is GroupKind.POD_GROUP:
            return key
        return CompositePodGroupKey(root.namespace, root.name)

    return PodGroupQueueing(states.membership.key, root_of)


POD_GROUP_ENTITY: Final = "podgroup"
COMPOSITE_POD_GROUP_ENTITY: Final = "compositepodgroup"
"""upstream fwk.PodGroupKeyType / CompositePodGroupKeyType as the entity's `type` label."""


def entity_type(group: PodGroupKey) -> str:
    """The entity's type: a PodGroup's, or a CompositePodGroup tree's (keyed by its root)."""
    return (
        COMPOSITE_POD_GROUP_ENTITY if isinstance(group, CompositePodGroupKey) else POD_GROUP_ENTITY
    )


def pod_group_entity_key(group: PodGroupKey) -> str:
    """The group's key in the queue's heaps and pool (upstream queuedEntityKeyFunc:
    type/namespace/name), distinct from every pod's namespace/name and between the kinds."""
    return f"{entity_type(group)}/{group.namespace}/{group.name}"


@dataclass(eq=False)
class QueuedPodGroupInfo(QueuedPodInfo):
    """A queued pod group (see the module docstring), or a CompositePodGroup tree (`group` a
    `CompositePodGroupKey`, its root's: the members of all its leaves, upstream
    getLeafPodGroups). Build it with `of`."""

    group: PodGroupKey = field(default_factory=lambda: PodGroupKey("", ""))
    members: dict[str, QueuedPodInfo] = field(default_factory=dict)  # pod key -> member
    unschedulable_count: int = 0
    consecutive_errors_count: int = 0

    @classmethod
    def of(cls, group: PodGroupKey, first: QueuedPodInfo) -> QueuedPodGroupInfo:
        """A new entity for the group's first queued member (upstream newQueuedPodGroupInfo:
        the member's timestamps)."""
        entity = cls(
            first.pod_info,
            first.timestamp,
            initial_attempt_timestamp=first.initial_attempt_timestamp,
            group=group,
        )
        entity.add(first)
        return entity

    @property
    def key(self) -> str:
        return pod_group_entity_key(self.group)

    def __len__(self) -> int:
        return len(self.members)

    def __iter__(self) -> Iterator[QueuedPodInfo]:
        return iter(list(self.members.values()))

    def get(self, pod_key: str) -> QueuedPodInfo | None:
        return self.members.get(pod_key)

    def add(self, member: QueuedPodInfo) -> None:
        self.members[member.pod_info.key] = member
        self.refresh()

    def remove(self, pod_key: str) -> QueuedPodInfo | None:
        member = self.members.pop(pod_key, None)
        if member is not None:
            self.refresh()
        return member

    def set_members(self, members: Iterable[QueuedPodInfo]) -> None:
        """The group's members are now `members` (upstream SetPods, when the attempt ends)."""
        self.members = {m.pod_info.key: m for m in members}
        self.refresh()

    def refresh(self) -> None:
        """The entity's view of its members: a member's PodInfo (the highest priority, for the
        sort)."""
        if self.members:
            self.pod_info = max(self.members.values(), key=lambda m: m.pod_info.priority).pod_info

    def backoff_count(self) -> int:
        """The attempts its backoff counts (upstream getBackoffTime: the consecutive errors
        when the last attempt failed with one, else the rejected attempts)."""
        if self.consecutive_errors_count > 0:
            return self.consecutive_errors_count
        return self.unschedulable_count


def entity_backoff(count: int, size: int, initial: float, maximum: float) -> float:
    """upstream calculateBackoffDuration at 1.37: `initial * 2**(count-1)`, capped at
    `maximum`, the cap multiplied by sqrt(size) for an entity of several pods; none before
    the first failed attempt or with no maximum."""
    if count == 0 or maximum <= 0 or initial <= 0:
        return 0.0
    cap = maximum * math.sqrt(size) if size > 1 else maximum
    duration = initial * 2.0 ** min(count - 1, 64)
    return min(duration, cap)
