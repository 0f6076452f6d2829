"""The scheduling queue (upstream backend/queue/scheduling_queue.go, PriorityQueue).

Pods waiting to be scheduled live in one of three places:
- activeQ: a heap ordered by the profile's QueueSort `less`; `pop()` takes its head.
- backoffQ: pods that failed and are waiting out their backoff (1 s doubling to 10 s by
  attempts); a periodic flush moves the expired ones to activeQ. With `pop_from_backoff_q`
  (upstream SchedulerPopFromBackoffQ, on by default since 1.33) `pop()` takes the backoffQ head
  when activeQ is empty.
- the unschedulable pool: pods rejected by some plugins, waiting for a cluster event that one
  of those plugins registered and whose queueing hint says Queue; and gated pods (a PreEnqueue
  plugin said no), flagged `gated`. Pods left there for 5 minutes are flushed back.

`scheduler_unschedulable_pods{plugin, profile}` counts, per plugin, the queued pods that
plugin rejected (or gated): raised when a failed pod comes back and when PreEnqueue gates a pod
(once per pod and plugin), lowered when the pod is popped or deleted (upstream, 1.36-1.37).

Every `pop()` is paired with `done(uid)`; between them the pod is in flight and the cluster
events the queue sees are recorded, so that `add_unschedulable_if_not_present` can replay the
hints over them when the pod comes back rejected.

Times (`QueuedPodInfo.timestamp`, `initial_attempt_timestamp`) are the injected clock's
`monotonic()` seconds: measure durations against `clock.monotonic()`.

The queue is used from one event loop and never blocks except in `pop()`; it needs no locks.
"""

from __future__ import annotations

import enum
import functools
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.abc

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock
from kemu.component.ticker import DUE_NOW, Ticker
from kemu.machinery.keys import object_key
from kemu.scheduling.events import (
    FORCE_ACTIVATE,
    UNSCHEDULABLE_TIMEOUT,
    ActionType,
    ClusterEvent,
    EventResource,
    QueueingHint,
)
from kemu.scheduling.interface import QueuedPodInfo
from kemu.scheduling.nominator import Nominator, PodLister
from kemu.scheduling.pod_group_state import PodGroupKey
from kemu.scheduling.pod_info import refreshed_pod_info
from kemu.scheduling.status import SUCCESS, Status
from kemu.scheduling.types import PodInfo
from scheduler.queue.active_queue import InFlightTracker
from scheduler.queue.backoff_queue import BackoffQueue, queued_key
from scheduler.queue.heap import KeyedHeap
from scheduler.queue.hints import QueueingHintFunction, QueueingHintMapPerProfile, plugin_events
from scheduler.queue.metrics import QueueMetricsSink
from scheduler.queue.pod_events import (
    ASSIGNED_POD_ADD,
    BACKOFF_COMPLETE,
    POP_FROM_BACKOFF_Q,
    SCHEDULE_ATTEMPT_FAILURE,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    PreEnqueueCheck,
    pod_event,
    pod_scheduling_properties_change,
)
from scheduler.queue.pod_group_entity import (
    COMPOSITE_POD_GROUP_ENTITY,
    POD_GROUP_ENTITY,
    PodGroupQueueing,
    QueuedPodGroupInfo,
    entity_type,
    pod_group_entity_key,
)
from scheduler.queue.unschedulable_pods import UnschedulablePods

logger = logging.getLogger(__name__)

DEFAULT_POD_INITIAL_BACKOFF: Final = 1.0
DEFAULT_POD_MAX_BACKOFF: Final = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION: Final = 300.0


@dataclass(frozen=True, slots=True)
class QueueOptions:
    """How the queue holds pods: the backoff (initial, doubling to max; the profile config's
    podInitialBackoffSeconds and podMaxBackoffSeconds), how long a pod stays in the
    unschedulable pool before a flush moves it (upstream podMaxInUnschedulablePodsDuration),
    whether Pop takes from backoffQ when activeQ is empty (SchedulerPopFromBackoffQ), the
    bound on in-flight events, and whether an event's pool walk passes over pods no hint of
    the event can move without per-pod work (`skip_unhinted`; False: every pod is asked, the
    reference the shortcut is compared with)."""

    pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF
    pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF
    pod_max_in_unschedulable_pods_duration: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION
    pop_from_backoff_q: bool = True
    max_in_flight_events: int = 10_000
    skip_unhinted: bool = True


DEFAULT_QUEUE_OPTIONS: Final = QueueOptions()
BACKOFF_FLUSH_INTERVAL: Final = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL: Final = 30.0

# The plugin whose rejections assigned-pod events retry without an affinity match (upstream
# getUnschedulablePodsWithCrossTopologyTerm); kemu has no such plugin yet.
POD_TOPOLOGY_SPREAD: Final = "PodTopologySpread"

ACTIVE_Q: Final = "active"
BACKOFF_Q: Final = "backoff"
UNSCHEDULABLE_Q: Final = "unschedulable"
GATED: Final = "gated"

LessFn = Callable[[QueuedPodInfo, QueuedPodInfo], bool]
PENDING: Final = "pending"  # scheduler_pending_pods: members waiting for their group in flight
INCOMPLETE: Final = "incomplete"  # ... and members waiting for their PodGroup to be observed
POD_ENTITY: Final = "pod"
# The framework's RunPreEnqueuePlugins for the pod's profile: SUCCESS, or the first rejection
# with `plugin` set to the plugin that gated the pod.
PreEnqueueFn = Callable[[types_pb2.Pod], Status]


def priority_sort_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort: higher priority first, then the earlier queue timestamp."""
    pa, pb = a.pod_info.priority, b.pod_info.priority
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def _always_enqueue(pod: types_pb2.Pod) -> Status:
    return SUCCESS


class _Strategy(enum.IntEnum):
    """How a pod leaves the unschedulable pool (upstream queueingStrategy)."""

    SKIP = 0  # stays in the pool
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ (a Pending plugin said Queue)


def _is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == EventResource.WILDCARD and event.action == ActionType.ALL


class PriorityQueue:
    """The scheduler's queue of pending pods. Implements framework PodNominator."""

    def __init__(
        self,
        *,
        clock: Clock,
        less: LessFn = priority_sort_less,
        pre_enqueue: PreEnqueueFn | Mapping[str, PreEnqueueFn] = _always_enqueue,
        queueing_hint_map: QueueingHintMapPerProfile | None = None,
        options: QueueOptions = DEFAULT_QUEUE_OPTIONS,
        pod_lister: PodLister | None = None,
        pod_info_factory: Callable[[types_pb2.Pod], PodInfo] = PodInfo,
        metrics: QueueMetricsSink | None = None,
        pod_groups: PodGroupQueueing | None = None,
        settle: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._clock = clock
        self._settle = settle
        # 1.37's pod-group entities (pod_group_entity.py): which pods are members, the
        # PodGroups observed (upstream's queue workloadForest), the group in flight (upstream's
        # last popped entity), the members that arrived (or came back) while it was (upstream
        # pendingPodGroupPods) and those whose PodGroup is not observed (incompletePodGroupPods).
        self._groups = pod_groups
        self._observed: set[PodGroupKey] = set()
        self._popped_group: PodGroupKey | None = None
        self._pending: dict[PodGroupKey, dict[str, QueuedPodInfo]] = {}
        self._incomplete: dict[PodGroupKey, dict[str, QueuedPodInfo]] = {}
        self._skip_unhinted = options.skip_unhinted
        self._less = less
        # One function, or one per profile (a pod of an unknown profile is never gated).
        self._pre_enqueue = pre_enqueue
        self._hint_map: QueueingHintMapPerProfile = queueing_hint_map or {}
        self._plugin_events = plugin_events(self._hint_map)
        # What the (fixed) hint maps say about each event seen, computed on its first
        # occurrence: every victim's deletion would otherwise match the event against every
        # registration once per pod of the pool.
        self._of_interest: dict[ClusterEvent, bool] = {}
        self._hints_for: dict[tuple[str, ClusterEvent], list[QueueingHintFunction] | None] = {}
        self._gating_interest: dict[tuple[str, ClusterEvent], bool] = {}
        # The plugins of a profile with a hint for an event: a pod rejected by none of them
        # stays in the pool without per-pod work (None: a profile without a hint map).
        self._hinted_plugins: dict[tuple[str, ClusterEvent], frozenset[str] | None] = {}
        # Metric children by label values: `labels()` costs more than the increment.
        self._incoming_children: dict[tuple[str, str], Any] = {}
        self._incoming_entity_children: dict[tuple[str, str, str], Any] = {}
        self._unschedulable_children: dict[tuple[str, str], Any] = {}
        self._max_in_unschedulable = options.pod_max_in_unschedulable_pods_duration
        self._pop_from_backoff_q = options.pop_from_backoff_q
        self._pod_info_factory = pod_info_factory
        self._metrics = metrics

        self._active: KeyedHeap[QueuedPodInfo] = KeyedHeap(queued_key, less)
        self._backoff = BackoffQueue(
            clock, options.pod_initial_backoff, options.pod_max_backoff, less
        )
        self._unschedulable = UnschedulablePods()
        self._in_flight = InFlightTracker(options.max_in_flight_events)
        self.nominator = Nominator(pod_lister)

        # The periodic flushes, ticking only when something can have come due (kemu.component.ticker)
        self._backoff_flush = Ticker(
            clock, BACKOFF_FLUSH_INTERVAL, self.flush_backoff_q_completed, self._backoff.next_expiry
        )
        self._leftover_flush = Ticker(
            clock,
            UNSCHEDULABLE_FLUSH_INTERVAL,
            self.flush_unschedulable_pods_leftover,
            self._next_leftover,
        )

        self._scheduling_cycle = 0
        self._closed = False
        self._wakeup: anyio.Event | None = None
        self._run_scope: anyio.CancelScope | None = None
        if metrics is not None:
            gauge = metrics.pending_pods
            gauge.labels(ACTIVE_Q).set_function(self.len_active)
            gauge.labels(BACKOFF_Q).set_function(self.len_backoff)
            gauge.labels(UNSCHEDULABLE_Q).set_function(self.len_unschedulable)
            gauge.labels(GATED).set_function(self.len_gated)
            if pod_groups is not None:
                gauge.labels(PENDING).set_function(self.len_pending)
                gauge.labels(INCOMPLETE).set_function(self.len_incomplete)
            entities = metrics.queued_entities
            if entities is not None:
                for queue, count in (
                    (ACTIVE_Q, self._entities_active),
                    (BACKOFF_Q, self._entities_backoff),
                    (UNSCHEDULABLE_Q, self._entities_unschedulable),
                    (GATED, self._entities_gated),
                ):
                    for kind in (POD_ENTITY, POD_GROUP_ENTITY, COMPOSITE_POD_GROUP_ENTITY):
                        entities.labels(queue, kind).set_function(functools.partial(count, kind))

    # ------------------------------------------------------------ informer events

    def add(self, pod: types_pb2.Pod) -> None:
        """A new unscheduled pod: PreEnqueue, then activeQ (or the pool, gated)."""
        qpi = self._new_queued_pod_info(pod)
        # Nominated from the API even when gated (pkg/scheduler/backend/queue/nominator.go).
        self.nominator.add_nominated_pod(qpi.pod_info, None)
        if self._add_member(qpi, str(UNSCHEDULED_POD_ADD)):
            return
        self._move_to_active_q(qpi, str(UNSCHEDULED_POD_ADD))

    def update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        """An unscheduled pod changed. In activeQ/backoffQ it is updated in place; in the pool,
        its own update is an event for the hints of the plugins that rejected it; in flight,
        the update is recorded for when it comes back; elsewhere it is added to activeQ."""
        events = pod_scheduling_properties_change(new, old)
        if self._in_flight.add_pod_events(old, new, events):
            self._in_flight.set_latest(new)
            logger.debug("Pod %s is in flight; its update is recorded", object_key(new))
            return
        if self._update_member(old, new, events):
            return
        key = object_key(new)
        for heap_get in (self._active.get, self._backoff.get):
            qpi = heap_get(key)
            if qpi is not None:
                qpi.pod_info = self._refreshed(qpi.pod_info, new)
                if key in self._active:
                    self._active.add_or_update(qpi)
                self.nominator.update_nominated_pod(old, qpi.pod_info)
                return
        qpi = self._unschedulable.get(key)
        if qpi is not None:
            qpi.pod_info = self._refreshed(qpi.pod_info, new)
            self.nominator.update_nominated_pod(old, qpi.pod_info)
            for event in events:
                strategy = self._is_pod_worth_requeuing(qpi, event, old, new)
                if strategy == _Strategy.SKIP:
                    continue
                if self._requeue(qpi, strategy, str(event)) != UNSCHEDULABLE_Q:
                    logger.debug("Pod %s moved by its own update %s", key, event)
                    break
            return
        self._move_to_active_q(self._new_queued_pod_info(new), str(UNSCHEDULED_POD_UPDATE))

    def delete(self, pod: types_pb2.Pod) -> None:
        """The pod was deleted (or bound by someone else): forget it everywhere."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        if self._delete_member(pod):
            return
        key = object_key(pod)
        removed = self._active.delete(key)
        if removed is None:
            removed = self._backoff.delete(key)
        if removed is None:
            removed = self._unschedulable.pop(key)
        if removed is not None:
            self._count_rejectors(removed, -1)
            return
        # A pod deleted while in flight must not be put back when its cycle fails.
        self._in_flight.mark_deleted(pod.metadata.uid)

    def activate(self, pods: Iterable[types_pb2.Pod]) -> None:
        """Moves the pods from the pool or backoffQ to activeQ (upstream Activate). A pod in
        flight gets a ForceActivate event so that it is retried when it comes back."""
        for pod in pods:
            group = self._group(pod)
            key = object_key(pod) if group is None else pod_group_entity_key(group)
            from_backoff = False
            qpi = self._unschedulable.get(key)
            if qpi is None:
                qpi = self._backoff.delete(key)
                from_backoff = qpi is not None
            if qpi is None:
                self._in_flight.add_pod_events(None, pod, [FORCE_ACTIVATE])
                continue
            self._move_to_active_q(qpi, str(FORCE_ACTIVATE), from_backoff=from_backoff)

    def assigned_pod_added(self, pod: types_pb2.Pod) -> None:
        """A bound pod appeared: it may satisfy the pod affinity of pending pods."""
        pods = self._pods_with_cross_topology_term(pod, ASSIGNED_POD_ADD)
        self._move_pods_to_active_or_backoff_queue(pods, ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(
        self, old: types_pb2.Pod, new: types_pb2.Pod, event: ClusterEvent | ActionType
    ) -> None:
        """A bound pod changed; `event` is one of pod_scheduling_properties_change(new, old)
        (or its action, made an AssignedPod event). A scale-down may help any pod
        (resources), and a scale-up may take the room a parked deferred-resize pod on the
        same node counted on (KEP-5836: NodeResourcesFit's UpdatePodScaleUp hint, upstream's
        "assigned pod scale up on same node wakes queue" in
        test/integration/scheduler/preemption/deferred_resize_preemption_test.go): both go to
        the hints of every pod of the pool; other changes only to pods whose affinity the pod
        matches."""
        if isinstance(event, ActionType):
            event = pod_event(EventResource.ASSIGNED_POD, event)
        resized = ClusterEvent(
            EventResource.POD, ActionType.UPDATE_POD_SCALE_DOWN | ActionType.UPDATE_POD_SCALE_UP
        )
        if resized.covers(event):
            self.move_all_to_active_or_backoff_queue(event, old, new)
        else:
            pods = self._pods_with_cross_topology_term(new, event)
            self._move_pods_to_active_or_backoff_queue(pods, event, old, new)

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: object = None,
        new_obj: object = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """Retries the pods of the pool that `event` may help, per their plugins' hints.

        Wildcard events (UnschedulableTimeout, ForceActivate) move every pod without hints; a
        ForceActivate whose `new_obj` is a pod moves only that pod."""
        if not self._is_event_of_interest(event):
            return
        pool = self._unschedulable.candidates(lambda plugin: self._gate_wants(plugin, event))
        pods = (
            pool
            if pre_check is None
            else [qpi for qpi in pool if any(pre_check(m.pod) for m in _members(qpi))]
        )
        self._move_pods_to_active_or_backoff_queue(pods, event, old_obj, new_obj)

    # ------------------------------------------------------------ the scheduling loop

    async def pop(self) -> QueuedPodInfo | None:
        """Waits for a pod and returns it in flight; None once the queue is closed.

        Increments the pod's attempts and the scheduling cycle, and clears the pod's rejecting
        plugins (the failed cycle sets them again)."""
        while True:
            while not self._closed and not self._has_poppable():
                if self._wakeup is None:
                    self._wakeup = anyio.Event()
                await self._wakeup.wait()
            if self._closed:
                return None
            if self._settle is not None:
                # (a cycle at one virtual instant is a step of the cluster: the work every
                # process has, the reactions to the last cycle included, goes first;
                # docs/virtual-time.md)
                await self._settle()
                if self._closed or not self._has_poppable():
                    continue
            if len(self._active):
                qpi = self._active.pop()
            else:
                qpi = self._backoff.pop()
                self._incoming(ACTIVE_Q, POP_FROM_BACKOFF_Q, qpi)
            if type(qpi) is QueuedPodGroupInfo:
                return self._pop_group(qpi)
            if self._in_flight.add_pod(qpi.pod):
                break
            logger.error("Pod %s is tracked twice by the queue; discarding it", qpi.pod_info.key)
        qpi.attempts += 1
        self._scheduling_cycle += 1
        self._count_rejectors(qpi, -1)
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.monotonic()
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        return qpi

    def pop_specific_pod(self, pod: types_pb2.Pod) -> QueuedPodInfo | None:
        """Takes `pod` out of activeQ, backoffQ or the pool (gated too), in flight as `pop`
        would put it (upstream PopSpecificPod, 1.36: the pod-group cycle pulls the other
        members of a popped pod's group). None when the queue does not hold it."""
        key = object_key(pod)
        group = self._group(pod)
        if group is not None:
            qpi = self._take_group_member(group, key)
        else:
            qpi = self._active.delete(key)
            if qpi is None:
                qpi = self._backoff.delete(key)
            if qpi is None:
                qpi = self._unschedulable.pop(key)
        if qpi is None:
            return None
        if not self._in_flight.add_pod(qpi.pod):
            logger.error("Pod %s is tracked twice by the queue; discarding it", key)
            return None
        qpi.attempts += 1
        self._count_rejectors(qpi, -1)
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.monotonic()
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        qpi.gated = False
        return qpi

    def done(self, uid: str) -> None:
        """Ends the flight of a popped pod (after its binding cycle or its failure); idempotent."""
        self._in_flight.done(uid)

    def scheduling_cycle(self) -> int:
        """The number of pops so far."""
        return self._scheduling_cycle

    def add_unschedulable_if_not_present(
        self, qpi: QueuedPodInfo, pod_scheduling_cycle: int
    ) -> None:
        """Takes back a popped pod whose cycle failed, and calls `done` for it.

        `qpi.unschedulable_plugins`/`pending_plugins` say who rejected it; with none it failed
        with an error and goes to backoffQ. Otherwise, if an event received since its pop may
        help it (its plugins' hints say Queue), it goes to backoffQ/activeQ at once, else to
        the unschedulable pool. `pod_scheduling_cycle` is kept for upstream's signature (the
        hints make it unnecessary)."""
        uid = qpi.pod.metadata.uid
        try:
            key = queued_key(qpi)
            if key in self._unschedulable or key in self._active or key in self._backoff:
                logger.warning("Pod %s is already in the scheduling queue", key)
                return
            if self._in_flight.is_deleted(uid):
                logger.debug("Pod %s was deleted while in flight; not requeued", key)
                return
            latest = self._in_flight.latest(uid)
            if latest is not None and latest is not qpi.pod:
                qpi.pod_info = self._refreshed(qpi.pod_info, latest)
            qpi.timestamp = self._clock.monotonic()
            self._count_rejectors(qpi, +1)
            if self._queues_with_group(qpi.pod):
                # A member comes back to its group: aside while the group is in flight
                # (upstream addUnschedulablePodGroupMember; the group's requeue decides).
                self.done(uid)
                self._add_member(qpi, SCHEDULE_ATTEMPT_FAILURE)
                return
            strategy = self._hint_for_in_flight_pod(qpi)
            queue = self._requeue(qpi, strategy, SCHEDULE_ATTEMPT_FAILURE)
            logger.debug(
                "Pod %s moved to %s after a failed attempt (rejected by %s)",
                key,
                queue,
                sorted(qpi.unschedulable_plugins | qpi.pending_plugins),
            )
        finally:
            self.done(uid)

    def close(self) -> None:
        """Wakes `pop()` with None and stops `run()`."""
        self._closed = True
        for pod in self._in_flight.pods():
            self._in_flight.done(pod.metadata.uid)
        self._broadcast()
        if self._run_scope is not None:
            self._run_scope.cancel()

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The periodic flushes: expired backoff every second, the pool's leftovers every 30 s
        (on upstream's grid, skipping the ticks at which nothing can have come due: see
        kemu.component.ticker). Returns when the queue is closed."""
        with anyio.CancelScope() as scope:
            self._run_scope = scope
            if self._closed:
                scope.cancel()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._backoff_flush.run)
                tg.start_soon(self._leftover_flush.run)
                task_status.started()

    def _next_leftover(self) -> float | None:
        """When a pod of the pool can next have stayed longer than the maximum: at the next
        tick while the pool holds pods (as upstream's every 30 s), never while it is empty."""
        return DUE_NOW if len(self._unschedulable) else None

    def flush_backoff_q_completed(self) -> None:
        """Moves the pods whose backoff has ended to activeQ."""
        for qpi in self._backoff.pop_all_completed():
            self._move_to_active_q(qpi, BACKOFF_COMPLETE, from_backoff=True)

    def flush_unschedulable_pods_leftover(self) -> None:
        """Moves pods that have been in the pool longer than the maximum to backoffQ/activeQ."""
        now = self._clock.monotonic()
        leftover = [
            qpi
            for qpi in self._unschedulable.values()
            if now - qpi.timestamp > self._max_in_unschedulable
        ]
        if leftover:
            self._move_pods_to_active_or_backoff_queue(leftover, UNSCHEDULABLE_TIMEOUT, None, None)

    # ------------------------------------------------------------ pod-group entities (1.37)

    def _member_of(self, pod: types_pb2.Pod) -> PodGroupKey | None:
        """The group `pod` is a member of, when groups are queued as entities."""
        return self._groups.group_of(pod) if self._groups is not None else None

    def _group(self, pod: types_pb2.Pod) -> PodGroupKey | None:
        """The entity that holds `pod` (upstream isPodGroupMember, getRootLookupInfoForPod),
        if any: its PodGroup's, or its CompositePodGroup tree's (keyed by the root, a
        `CompositePodGroupKey`); none while its PodGroup, or a CompositePodGroup above it, is
        not observed (the member waits aside, `incomplete`)."""
        group = self._member_of(pod)
        return None if group is None else self._entity_of_group(group)

    def _entity_of_group(self, group: PodGroupKey) -> PodGroupKey | None:
        if group not in self._observed:
            return None
        assert self._groups is not None
        return self._groups.root_of(group)

    def _queues_with_group(self, pod: types_pb2.Pod) -> bool:
        """Whether `pod` queues with its group's entity or aside (not alone): every member."""
        return self._member_of(pod) is not None

    def _add_member(self, qpi: QueuedPodInfo, event: str) -> bool:
        """A member into its group's entity, or aside until its PodGroup is observed. False
        when the pod queues alone."""
        group = self._member_of(qpi.pod)
        if group is None:
            return False
        entity = self._entity_of_group(group)
        if entity is None:
            self._incomplete.setdefault(group, {})[qpi.pod_info.key] = qpi
            logger.debug("Pod %s waits for its PodGroup %s to be observed", qpi.pod_info.key, group)
            return True
        self._add_group_member(qpi, entity, event)
        return True

    def add_pod_group(self, pg: types_pb2.PodGroup) -> None:
        """A PodGroup is observed (upstream AddPodGroup): its members waiting for it queue."""
        group = PodGroupKey(pg.metadata.namespace, pg.metadata.name)
        if self._groups is None or group in self._observed:
            return
        self._observed.add(group)
        self._queue_incomplete((group,))

    def add_composite_pod_group(self, cpg: types_pb2.CompositePodGroup) -> None:
        """A CompositePodGroup is observed (upstream AddCompositePodGroup): the members of the
        PodGroups under it that waited for their tree's root queue in the root's entity."""
        if self._groups is None:
            return
        self._queue_incomplete([g for g in self._incomplete if g in self._observed])

    def _queue_incomplete(self, groups: Iterable[PodGroupKey]) -> None:
        """The members waiting for `groups` whose entity now resolves queue in it."""
        for group in list(groups):
            if self._entity_of_group(group) is None:
                continue
            for qpi in self._incomplete.pop(group, {}).values():
                if not self._add_member(qpi, str(UNSCHEDULED_POD_ADD)):
                    self._move_to_active_q(qpi, str(UNSCHEDULED_POD_ADD))

    def delete_pod_group(self, pg: types_pb2.PodGroup) -> None:
        """A PodGroup is gone (upstream DeletePodGroup): its queued members, and those waiting
        for it in flight, wait for it to be observed again."""
        group = PodGroupKey(pg.metadata.namespace, pg.metadata.name)
        if self._groups is None or group not in self._observed:
            return
        root = self._entity_of_group(group)
        self._observed.discard(group)
        if root is None:
            return
        waiting = self._incomplete.setdefault(group, {})
        entity, strategy = self._take_group(root)
        pending = self._pending.get(root, {})
        for holder in (entity.members if entity is not None else {}, pending):
            for key, member in list(holder.items()):
                if self._member_of(member.pod) == group:
                    del holder[key]
                    waiting[key] = member
        if entity is not None:
            entity.refresh()
            if len(entity):
                self._requeue(entity, strategy, str(UNSCHEDULED_POD_ADD))
        if not pending:
            self._pending.pop(root, None)
        if not waiting:
            del self._incomplete[group]

    def _update_member(
        self, old: types_pb2.Pod, new: types_pb2.Pod, events: list[ClusterEvent]
    ) -> bool:
        """An update of a member queued with its group or aside (False: it queues alone)."""
        member_group = self._member_of(new)
        if member_group is None:
            return False
        if self._entity_of_group(member_group) is None:
            key = object_key(new)
            waiting = self._incomplete.get(member_group, {}).get(key)
            if waiting is None:
                waiting = self._new_queued_pod_info(new)
                self.nominator.add_nominated_pod(waiting.pod_info, None)
                self._incomplete.setdefault(member_group, {})[key] = waiting
                return True
            waiting.pod_info = self._refreshed(waiting.pod_info, new)
            self.nominator.update_nominated_pod(old, waiting.pod_info)
            return True
        group = self._group(new)
        if group is None:
            return False
        self._update_group_member(old, new, group, events)
        return True

    def _delete_member(self, pod: types_pb2.Pod) -> bool:
        """A member deleted (False: it queues alone)."""
        member_group = self._member_of(pod)
        if member_group is None:
            return False
        waiting = self._incomplete.get(member_group)
        gone = waiting.pop(object_key(pod), None) if waiting is not None else None
        if gone is not None:
            self._count_rejectors(gone, -1)
            if not waiting:
                del self._incomplete[member_group]
            return True
        group = self._group(pod)
        if group is None:
            return False
        self._delete_group_member(pod, group)
        return True

    def _take_group(self, group: PodGroupKey) -> tuple[QueuedPodGroupInfo | None, _Strategy]:
        """The group's entity out of whichever queue holds it, with the strategy that puts it
        back there (upstream deleteFromAnyQueue)."""
        key = pod_group_entity_key(group)
        for take, strategy in (
            (self._active.delete, _Strategy.IMMEDIATELY),
            (self._backoff.delete, _Strategy.AFTER_BACKOFF),
            (self._unschedulable.pop, _Strategy.SKIP),
        ):
            entity = take(key)
            if entity is not None:
                assert isinstance(entity, QueuedPodGroupInfo)
                return entity, strategy
        return None, _Strategy.SKIP

    def _add_group_member(self, qpi: QueuedPodInfo, group: PodGroupKey, event: str) -> None:
        """upstream addPodGroupMember: into the group's queued entity (which goes back where
        it was), aside while the group is in flight, else a new entity in activeQ."""
        entity, strategy = self._take_group(group)
        if entity is not None:
            entity.add(qpi)
            self._requeue(entity, strategy, event)
            return
        if self._popped_group == group:
            self._pending.setdefault(group, {})[qpi.pod_info.key] = qpi
            logger.debug("Pod %s waits for its pod group %s in flight", qpi.pod_info.key, group)
            return
        self._move_to_active_q(QueuedPodGroupInfo.of(group, qpi), event)

    def _take_group_member(self, group: PodGroupKey, pod_key: str) -> QueuedPodInfo | None:
        """A member out of its group's entity (the entity back where it was unless empty), or
        out of the members waiting for the group in flight."""
        entity, strategy = self._take_group(group)
        if entity is None:
            pending = self._pending.get(group, {})
            member = pending.pop(pod_key, None)
            if not pending:
                self._pending.pop(group, None)
            return member
        member = entity.remove(pod_key)
        if len(entity):
            self._requeue(entity, strategy, str(UNSCHEDULED_POD_ADD))
        return member

    def _update_group_member(
        self,
        old: types_pb2.Pod,
        new: types_pb2.Pod,
        group: PodGroupKey,
        events: list[ClusterEvent],
    ) -> None:
        """upstream Update for a member: refreshed in its group's entity (in the pool, its own
        update may move the whole group, per the hints), or aside; else added."""
        key = object_key(new)
        entity_key = pod_group_entity_key(group)
        entity = self._active.get(entity_key) or self._backoff.get(entity_key)
        in_pool = False
        if entity is None:
            entity = self._unschedulable.get(entity_key)
            in_pool = entity is not None
        member = entity.get(key) if isinstance(entity, QueuedPodGroupInfo) else None
        if isinstance(entity, QueuedPodGroupInfo) and member is not None:
            member.pod_info = self._refreshed(member.pod_info, new)
            entity.refresh()
            if entity_key in self._active:
                self._active.add_or_update(entity)
            self.nominator.update_nominated_pod(old, member.pod_info)
            if not in_pool:
                return
            for event in events:
                strategy = self._is_pod_worth_requeuing(entity, event, old, new)
                if strategy == _Strategy.SKIP:
                    continue
                self._unschedulable.pop(entity_key)
                if self._requeue(entity, strategy, str(event)) != UNSCHEDULABLE_Q:
                    break
            return
        waiting = self._pending.get(group, {}).get(key)
        if waiting is not None:
            waiting.pod_info = self._refreshed(waiting.pod_info, new)
            self.nominator.update_nominated_pod(old, waiting.pod_info)
            return
        qpi = self._new_queued_pod_info(new)
        self.nominator.add_nominated_pod(qpi.pod_info, None)
        self._add_group_member(qpi, group, str(UNSCHEDULED_POD_UPDATE))

    def _delete_group_member(self, pod: types_pb2.Pod, group: PodGroupKey) -> None:
        """upstream deletePodGroupMember: out of its group's entity (gone with its last
        member) or of the members aside; a member in flight is marked deleted."""
        member = self._take_group_member(group, object_key(pod))
        if member is not None:
            self._count_rejectors(member, -1)
            return
        self._in_flight.mark_deleted(pod.metadata.uid)

    def _pop_group(self, entity: QueuedPodGroupInfo) -> QueuedPodGroupInfo:
        """The popped group: every member in flight (each attempt counted), the group too;
        members that arrive meanwhile wait aside (upstream activeQ.pop of an entity)."""
        for member in entity:
            if not self._in_flight.add_pod(member.pod):
                logger.error("Pod %s is tracked twice by the queue; dropped", member.pod_info.key)
                entity.remove(member.pod_info.key)
                continue
            member.attempts += 1
            self._count_rejectors(member, -1)
            if member.initial_attempt_timestamp is None:
                member.initial_attempt_timestamp = self._clock.monotonic()
            member.unschedulable_plugins.clear()
            member.pending_plugins.clear()
        entity.attempts += 1
        entity.refresh()
        self._scheduling_cycle += 1
        self._popped_group = entity.group
        return entity

    def add_attempted_pod_group_if_needed(self, entity: QueuedPodGroupInfo, status: Status) -> None:
        """The group's attempt is over (upstream AddAttemptedPodGroupIfNeeded, 1.37): the
        members that came back, or arrived, meanwhile are its members now; none: nothing is
        queued. A successful attempt requeues them to activeQ without backoff (its timestamp
        kept when some attempted member came back, so that it is tried again at once); a
        rejected one counts one more rejection, an error one more consecutive error; then
        backoffQ while it backs off, else activeQ (gated: the pool)."""
        key = entity.key
        if key in self._active or key in self._backoff or key in self._unschedulable:
            logger.error("Pod group %s is already in the scheduling queue", entity.group)
            return
        if self._popped_group == entity.group:
            self._popped_group = None
        pending = self._pending.pop(entity.group, {})
        if not pending:
            return
        came_back = any(k in entity.members for k in pending)
        entity.set_members(pending.values())
        without_backoff = keep_timestamp = False
        if status.is_success():
            without_backoff, keep_timestamp = True, came_back
            entity.unschedulable_count = entity.consecutive_errors_count = 0
        elif status.is_rejected():
            entity.unschedulable_count += 1
            entity.consecutive_errors_count = 0
        else:
            entity.consecutive_errors_count += 1
        if not keep_timestamp:
            entity.timestamp = self._clock.monotonic()
        event = SCHEDULE_ATTEMPT_FAILURE
        if not without_backoff and self._backoff.is_backing_off(entity):
            queue = BACKOFF_Q if self._move_to_backoff_q(entity, event) else UNSCHEDULABLE_Q
        else:
            queue = ACTIVE_Q if self._move_to_active_q(entity, event) else UNSCHEDULABLE_Q
        logger.debug("Pod group %s moved to %s after its attempt", entity.group, queue)

    # ------------------------------------------------------------ nominator (PodNominator)

    def add_nominated_pod(self, pod_info: PodInfo, nominated_node_name: str | None) -> None:
        self.nominator.add_nominated_pod(pod_info, nominated_node_name)

    def delete_nominated_pod_if_exists(self, pod: types_pb2.Pod) -> None:
        self.nominator.delete_nominated_pod_if_exists(pod)

    def update_nominated_pod(self, old_pod: types_pb2.Pod, new_pod_info: PodInfo) -> None:
        self.nominator.update_nominated_pod(old_pod, new_pod_info)

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominator.nominated_pods_for_node(node_name)

    # ------------------------------------------------------------ inspection

    def __len__(self) -> int:
        """Pods waiting in any queue (not the ones in flight; a group's members each)."""
        return self.len_active() + self.len_backoff() + len(self.unschedulable_pods())

    def len_active(self) -> int:
        return _pod_count(self._active.list()) if self._groups else len(self._active)

    def len_backoff(self) -> int:
        return _pod_count(self._backoff.list()) if self._groups else len(self._backoff)

    def len_unschedulable(self) -> int:
        """Pods in the pool that are not gated."""
        if self._groups:
            return _pod_count(q for q in self._unschedulable.values() if not q.gated)
        return self._unschedulable.count_ungated()

    def len_gated(self) -> int:
        if self._groups:
            return _pod_count(q for q in self._unschedulable.values() if q.gated)
        return self._unschedulable.count_gated()

    def len_pending(self) -> int:
        """Members waiting for their group in flight (scheduler_pending_pods{queue="pending"})."""
        return sum(len(members) for members in self._pending.values())

    def len_incomplete(self) -> int:
        """Members waiting for their PodGroup (scheduler_pending_pods{queue="incomplete"})."""
        return sum(len(members) for members in self._incomplete.values())

    def incomplete_pod_group_pods(self) -> list[types_pb2.Pod]:
        """upstream IncompletePodGroupPodsPods."""
        return [m.pod for members in self._incomplete.values() for m in members.values()]

    def _entities_active(self, kind: str) -> int:
        return _entity_count(self._active.list(), kind)

    def _entities_backoff(self, kind: str) -> int:
        return _entity_count(self._backoff.list(), kind)

    def _entities_unschedulable(self, kind: str) -> int:
        return _entity_count((q for q in self._unschedulable.values() if not q.gated), kind)

    def _entities_gated(self, kind: str) -> int:
        return _entity_count((q for q in self._unschedulable.values() if q.gated), kind)

    def pending_pod_group_pods(self) -> list[types_pb2.Pod]:
        """The members waiting for their group in flight (upstream PendingPodGroupPods)."""
        return [m.pod for members in self._pending.values() for m in members.values()]

    def get_pod_group(self, group: PodGroupKey) -> QueuedPodGroupInfo | None:
        """The group's queued entity, wherever it is (upstream GetPodGroup)."""
        key = pod_group_entity_key(group)
        entity = self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)
        return entity if isinstance(entity, QueuedPodGroupInfo) else None

    def len_in_flight(self) -> int:
        return len(self._in_flight)

    def pods_in_active_q(self) -> list[types_pb2.Pod]:
        return [m.pod for qpi in self._active.list() for m in _members(qpi)]

    def pods_in_backoff_q(self) -> list[types_pb2.Pod]:
        return [m.pod for qpi in self._backoff.list() for m in _members(qpi)]

    def unschedulable_pods(self) -> list[types_pb2.Pod]:
        """Every pod in the pool, gated ones included."""
        return [m.pod for qpi in self._unschedulable.values() for m in _members(qpi)]

    def in_flight_pods(self) -> list[types_pb2.Pod]:
        return self._in_flight.pods()

    def get_pod(self, namespace: str, name: str) -> QueuedPodInfo | None:
        """The queued pod (a group's member too, or one waiting for its group in flight)."""
        key = f"{namespace}/{name}"
        found = self._active.get(key) or self._backoff.get(key) or self._unschedulable.get(key)
        if found is not None or self._groups is None:
            return found
        entities = (*self._active.list(), *self._backoff.list(), *self._unschedulable.values())
        for entity in entities:
            if isinstance(entity, QueuedPodGroupInfo) and (member := entity.get(key)):
                return member
        return next((ms[key] for ms in self._pending.values() if key in ms), None)

    def pending_pods(self) -> tuple[list[types_pb2.Pod], str]:
        """Every waiting pod, and a summary line of the queue sizes (for debugging; upstream's
        extended one with the members waiting for their group)."""
        active, backoff = self.pods_in_active_q(), self.pods_in_backoff_q()
        pool = self.unschedulable_pods()
        summary = f"activeQ:{len(active)}; backoffQ:{len(backoff)}; unschedulablePods:{len(pool)}"
        if self._groups is None:
            return active + backoff + pool, summary
        pending = self.pending_pod_group_pods()
        summary += f"; pendingPodGroupMemberPods:{len(pending)}"
        return active + backoff + pool + pending, summary

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        return self._backoff.duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self._backoff.is_backing_off(qpi)

    # ------------------------------------------------------------ internals

    def _refreshed(self, prev: PodInfo, pod: types_pb2.Pod) -> PodInfo:
        """The PodInfo of an update of `prev.pod` (computed only if the update changed what
        it is computed from)."""
        return refreshed_pod_info(prev, pod, self._pod_info_factory)

    def _new_queued_pod_info(self, pod: types_pb2.Pod) -> QueuedPodInfo:
        return QueuedPodInfo(self._pod_info_factory(pod), self._clock.monotonic())

    def _has_poppable(self) -> bool:
        return bool(len(self._active)) or (self._pop_from_backoff_q and self._backoff.poppable())

    def _broadcast(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()
            self._wakeup = None

    def _incoming(self, queue: str, event: str, qpi: QueuedPodInfo) -> None:
        """queue_incoming_pods_total (a group's members each) and, at 1.37,
        queue_incoming_entities_total (the entity, by type)."""
        if self._metrics is None:
            return
        child = self._incoming_children.get((queue, event))
        if child is None:
            child = self._incoming_children[(queue, event)] = (
                self._metrics.queue_incoming_pods.labels(queue, event)
            )
        child.inc(len(qpi) if isinstance(qpi, QueuedPodGroupInfo) else 1)
        entities = self._metrics.queue_incoming_entities
        if entities is not None:
            kind = _entity_type(qpi)
            entity_child = self._incoming_entity_children.get((queue, event, kind))
            if entity_child is None:
                entity_child = self._incoming_entity_children[(queue, event, kind)] = (
                    entities.labels(queue, event, kind)
                )
            entity_child.inc()

    def _run_pre_enqueue(self, qpi: QueuedPodInfo, key: str | None = None) -> None:
        if key is None:
            key = queued_key(qpi)
        if isinstance(qpi, QueuedPodGroupInfo):
            # upstream runPreEnqueuePlugins of an entity: each member's (their gauges), the
            # group gated when one is, by that member's gating plugin.
            gating = ""
            for member in qpi:
                self._run_pre_enqueue(member)
                if member.gated:
                    gating = member.gating_plugin
            qpi.refresh()
            qpi.gated, qpi.gating_plugin = bool(gating), gating
            self._unschedulable.reindex(key, qpi)
            return
        pre_enqueue = self._pre_enqueue
        if isinstance(pre_enqueue, Mapping):
            pre_enqueue = pre_enqueue.get(qpi.pod.spec.scheduler_name, _always_enqueue)
        status = pre_enqueue(qpi.pod)
        if status.is_success():
            qpi.gated = False
            qpi.gating_plugin = ""
            self._unschedulable.reindex(key, qpi)
            return
        plugin = status.plugin or "PreEnqueue"
        if plugin not in qpi.unschedulable_plugins and plugin not in qpi.pending_plugins:
            self._unschedulable_gauge(plugin, qpi, +1)
        qpi.unschedulable_plugins.add(plugin)
        qpi.gated = True
        qpi.gating_plugin = plugin
        self._unschedulable.reindex(key, qpi)
        if status.is_error():
            logger.error("PreEnqueue of pod %s failed: %s", key, status)
        else:
            logger.debug("Pod %s is gated: %s", key, status)

    def _count_rejectors(self, qpi: QueuedPodInfo, delta: int) -> None:
        for member in _members(qpi):
            for plugin in member.unschedulable_plugins | member.pending_plugins:
                self._unschedulable_gauge(plugin, member, delta)

    def _unschedulable_gauge(self, plugin: str, qpi: QueuedPodInfo, delta: int) -> None:
        if self._metrics is None:
            return
        labels = (plugin, qpi.pod.spec.scheduler_name)
        child = self._unschedulable_children.get(labels)
        if child is None:
            child = self._unschedulable_children[labels] = self._metrics.unschedulable_pods.labels(
                *labels
            )
        if delta > 0:
            child.inc(delta)
        else:
            child.dec(-delta)

    def _add_to_unschedulable(self, qpi: QueuedPodInfo, event: str, key: str | None = None) -> None:
        self._unschedulable.add(queued_key(qpi) if key is None else key, qpi)
        self._leftover_flush.wake(self._clock.monotonic() + self._max_in_unschedulable)
        self._incoming(UNSCHEDULABLE_Q, event, qpi)

    def _move_to_active_q(
        self, qpi: QueuedPodInfo, event: str, *, from_backoff: bool = False, key: str | None = None
    ) -> bool:
        """activeQ if PreEnqueue lets it (skipped for a pod leaving backoffQ when PreEnqueue ran
        on its way in), else the pool, gated. True when it went to activeQ. `key`: the pod's
        key, if the caller has it."""
        if key is None:
            key = queued_key(qpi)
        if not (self._pop_from_backoff_q and from_backoff):
            self._run_pre_enqueue(qpi, key)
        if qpi.gated:
            if key not in self._active and key not in self._backoff:
                if key not in self._unschedulable:
                    self._add_to_unschedulable(qpi, event, key)
            return False
        now = self._clock.monotonic()
        for entity in (qpi, *_grouped(qpi)):
            if entity.initial_attempt_timestamp is None:
                # Upstream starts the SLI clock when the pod first becomes schedulable.
                entity.initial_attempt_timestamp = now
        self._unschedulable.pop(key)
        self._backoff.delete(key)
        self._active.add_or_update(qpi)
        self._incoming(ACTIVE_Q, event, qpi)
        if event == str(UNSCHEDULED_POD_UPDATE):
            self.nominator.add_nominated_pod(qpi.pod_info, None)
        self._broadcast()
        return True

    def _move_to_backoff_q(self, qpi: QueuedPodInfo, event: str, key: str | None = None) -> bool:
        """backoffQ (with PopFromBackoffQ, PreEnqueue runs here and may gate it instead)."""
        if key is None:
            key = queued_key(qpi)
        if self._pop_from_backoff_q:
            self._run_pre_enqueue(qpi, key)
            if qpi.gated:
                if key not in self._unschedulable:
                    self._add_to_unschedulable(qpi, event, key)
                return False
        self._unschedulable.pop(key)
        self._backoff.add(qpi)
        self._backoff_flush.wake(self._backoff.expiry(qpi))
        self._incoming(BACKOFF_Q, event, qpi)
        if self._pop_from_backoff_q:
            self._broadcast()
        return True

    def _requeue(
        self, qpi: QueuedPodInfo, strategy: _Strategy, event: str, key: str | None = None
    ) -> str:
        """Puts the pod where `strategy` says; returns the queue it went to."""
        if key is None:
            key = queued_key(qpi)
        if strategy == _Strategy.SKIP:
            self._add_to_unschedulable(qpi, event, key)
            return UNSCHEDULABLE_Q
        if strategy == _Strategy.AFTER_BACKOFF and self._backoff.is_backing_off(qpi):
            return BACKOFF_Q if self._move_to_backoff_q(qpi, event, key) else UNSCHEDULABLE_Q
        return ACTIVE_Q if self._move_to_active_q(qpi, event, key=key) else UNSCHEDULABLE_Q

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        known = self._of_interest.get(event)
        if known is None:
            known = self._of_interest[event] = _is_wildcard(event) or any(
                registered.covers(event)
                for hint_map in self._hint_map.values()
                for registered in hint_map
            )
        return known

    def _hint_fns(self, profile: str, event: ClusterEvent) -> list[QueueingHintFunction] | None:
        """The hints the profile's plugins registered for events covering `event`, in the
        hint map's order; None for a profile without a map."""
        key = (profile, event)
        try:
            return self._hints_for[key]
        except KeyError:
            pass
        hint_map = self._hint_map.get(profile)
        fns = (
            None
            if hint_map is None
            else [
                fn for registered, fns in hint_map.items() if registered.covers(event) for fn in fns
            ]
        )
        self._hints_for[key] = fns
        return fns

    def _hinted(self, profile: str, event: ClusterEvent) -> frozenset[str] | None:
        """The plugins with a hint the profile runs for `event` (None: no hint map)."""
        key = (profile, event)
        try:
            return self._hinted_plugins[key]
        except KeyError:
            pass
        fns = self._hint_fns(profile, event)
        plugins = None if fns is None else frozenset(fn.plugin_name for fn in fns)
        self._hinted_plugins[key] = plugins
        return plugins

    def _cannot_move(
        self,
        qpi: QueuedPodInfo,
        event: ClusterEvent,
        hinted_by_profile: dict[str, frozenset[str] | None],
    ) -> bool:
        """A pod `_is_pod_worth_requeuing` would SKIP without running a hint: rejected, by
        plugins none of which has a hint for the (non-wildcard) event. Checked first on every
        pool pod an event visits; `hinted_by_profile` is the walk's memo of `_hinted`."""
        unschedulable, pending = qpi.unschedulable_plugins, qpi.pending_plugins
        if not (unschedulable or pending):
            return False
        profile = qpi.pod.spec.scheduler_name
        try:
            hinted = hinted_by_profile[profile]
        except KeyError:
            hinted = hinted_by_profile[profile] = self._hinted(profile, event)
        return (
            hinted is not None and unschedulable.isdisjoint(hinted) and pending.isdisjoint(hinted)
        )

    def _is_pod_worth_requeuing(
        self, qpi: QueuedPodInfo, event: ClusterEvent, old_obj: object, new_obj: object
    ) -> _Strategy:
        """Runs the hints of the plugins that rejected the pod for `event` (upstream
        isPodWorthRequeuing). A Queue from a Pending plugin means activeQ at once; from an
        Unschedulable plugin, after backoff. A hint that raises counts as Queue."""
        if isinstance(qpi, QueuedPodGroupInfo):
            # upstream isEntityWorthRequeuing: the best of its members'.
            best = _Strategy.SKIP
            for member in qpi:
                best = max(best, self._is_pod_worth_requeuing(member, event, old_obj, new_obj))
                if best == _Strategy.IMMEDIATELY:
                    break
            return best
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return _Strategy.AFTER_BACKOFF
        if _is_wildcard(event):
            if isinstance(new_obj, types_pb2.Pod) and new_obj.metadata.uid != qpi.pod.metadata.uid:
                return _Strategy.SKIP  # a ForceActivate for another pod
            return _Strategy.AFTER_BACKOFF
        fns = self._hint_fns(qpi.pod.spec.scheduler_name, event)
        if fns is None:
            logger.error("No queueing hints for profile %r", qpi.pod.spec.scheduler_name)
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for fn in fns:
            if fn.plugin_name not in rejectors:
                continue
            try:
                hint = fn.hint_fn(qpi.pod, old_obj, new_obj)
            except Exception:
                logger.exception(
                    "Queueing hint of %s for %s on pod %s failed; queueing the pod",
                    fn.plugin_name,
                    event,
                    qpi.pod_info.key,
                )
                hint = QueueingHint.QUEUE
            if hint == QueueingHint.SKIP:
                continue
            if fn.plugin_name in qpi.pending_plugins:
                return _Strategy.IMMEDIATELY
            if not qpi.pending_plugins:
                return _Strategy.AFTER_BACKOFF
            strategy = _Strategy.AFTER_BACKOFF
        return strategy

    def _gating_plugin_interested(self, qpi: QueuedPodInfo, event: ClusterEvent) -> bool:
        return self._gate_wants(qpi.gating_plugin, event)

    def _gate_wants(self, plugin: str, event: ClusterEvent) -> bool:
        """Whether the gating `plugin` registered for `event` (or it is a wildcard)."""
        key = (plugin, event)
        known = self._gating_interest.get(key)
        if known is None:
            known = self._gating_interest[key] = _is_wildcard(event) or any(
                e.covers(event) for e in self._plugin_events.get(plugin, ())
            )
        return known

    def _move_pods_to_active_or_backoff_queue(
        self,
        pods: list[QueuedPodInfo],
        event: ClusterEvent,
        old_obj: object,
        new_obj: object,
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        label = str(event)
        skip_unhinted = self._skip_unhinted and not _is_wildcard(event)
        hinted_by_profile: dict[str, frozenset[str] | None] = {}
        for qpi in pods:
            if qpi.gated and not self._gating_plugin_interested(qpi, event):
                continue
            if skip_unhinted and self._cannot_move(qpi, event, hinted_by_profile):
                continue
            strategy = self._is_pod_worth_requeuing(qpi, event, old_obj, new_obj)
            if strategy == _Strategy.SKIP:
                continue
            key = queued_key(qpi)
            self._unschedulable.pop(key)
            self._requeue(qpi, strategy, label, key)
        # A pod in flight may come back rejected; it must see this event then.
        self._in_flight.add_event(event, old_obj, new_obj)

    def _hint_for_in_flight_pod(self, qpi: QueuedPodInfo) -> _Strategy:
        """Replays the hints over the events received while the pod was in flight."""
        if not (qpi.unschedulable_plugins or qpi.pending_plugins):
            return _Strategy.AFTER_BACKOFF  # an error, not a rejection: retry
        events = self._in_flight.events_for(qpi.pod.metadata.uid)
        if events is None:
            logger.warning("Events of in-flight pod %s are unknown; retrying it", qpi.pod_info.key)
            return _Strategy.AFTER_BACKOFF
        strategy = _Strategy.SKIP
        for e in events:
            s = self._is_pod_worth_requeuing(qpi, e.event, e.old_obj, e.new_obj)
            if s == _Strategy.IMMEDIATELY:
                return s
            if s == _Strategy.AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy

    def _pods_with_cross_topology_term(
        self, pod: types_pb2.Pod, event: ClusterEvent
    ) -> list[QueuedPodInfo]:
        """Pool pods whose required pod affinity `pod` matches, or that PodTopologySpread
        rejected in its namespace (upstream getUnschedulablePodsWithCrossTopologyTerm), of
        those `event` may move: a gated pod whose gating plugin did not register for it is
        left out before its terms are matched (`_move_pods_to_active_or_backoff_queue`
        would skip it: upstream's SchedulingGatedPodsWithPodAffinityImpactForThroughput
        binds 20,000 pods beside 10,000 gated pods whose affinity each of them matches)."""
        out: list[QueuedPodInfo] = []
        namespace: str | None = None  # read once, if some pod needs it
        for qpi in self._unschedulable.candidates(lambda plugin: self._gate_wants(plugin, event)):
            for member in _members(qpi):  # (a group moves when one of its members would)
                if POD_TOPOLOGY_SPREAD in member.unschedulable_plugins:
                    if namespace is None:
                        namespace = pod.metadata.namespace
                    if member.pod.metadata.namespace == namespace:
                        out.append(qpi)
                        break
                terms = member.pod_info.required_affinity_terms
                if terms and any(t.matches(pod) for t in terms):
                    out.append(qpi)
                    break
        return out


def _members(qpi: QueuedPodInfo) -> Iterable[QueuedPodInfo]:
    """The pods of a queued entity: a group's members, else the pod itself."""
    return qpi if isinstance(qpi, QueuedPodGroupInfo) else (qpi,)


def _grouped(qpi: QueuedPodInfo) -> Iterable[QueuedPodInfo]:
    """A group's members (none for a pod)."""
    return qpi if isinstance(qpi, QueuedPodGroupInfo) else ()


def _pod_count(entities: Iterable[QueuedPodInfo]) -> int:
    return sum(len(q) if isinstance(q, QueuedPodGroupInfo) else 1 for q in entities)


def _entity_type(qpi: QueuedPodInfo) -> str:
    """The entity's `type` label: pod, podgroup or compositepodgroup."""
    return entity_type(qpi.group) if isinstance(qpi, QueuedPodGroupInfo) else POD_ENTITY


def _entity_count(entities: Iterable[QueuedPodInfo], kind: str) -> int:
    return sum(1 for q in entities if _entity_type(q) == kind)
