"""The ReplicaSet controller (upstream pkg/controller/replicaset): keeps spec.replicas active
pods for every ReplicaSet, and its status true.

A sync of one ReplicaSet: claim the active pods of its namespace (adopt matching orphans,
release owned pods the selector no longer matches; see controller_utils), then, if its
expectations are satisfied and it is not being deleted, create or delete the difference: at
most `burst_replicas` per sync, creations in slow-start batches (1, 2, 4, ...), deletions in
upstream's getPodsToDelete order (ranked against the pods of every ReplicaSet of the same
Deployment). The status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas with
minReadySeconds, observedGeneration, the ReplicaFailure condition) is written when it changed.

A pod that is deleted, evicted or preempted leaves the active set (deletionTimestamp) and is
replaced at once; a finished pod (Succeeded/Failed) is not active either.

Events as upstream's informer handlers: a pod with a controllerRef syncs its ReplicaSet (its
creation or deletion lowering the expectations), an orphan syncs every ReplicaSet whose
selector matches it, a pod that becomes ready syncs its ReplicaSet again after
minReadySeconds. Not modelled: the terminatingReplicas status field, the sorting-age metric.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import anyio
from google.protobuf.message import Message

from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import (
    CONTROLLER_UID_INDEX,
    ControllerExpectations,
    ControllerRefManager,
    PodControl,
    filter_active_pods,
    index_by_controller_uid,
    is_pod_available,
    new_controller_ref,
    owner_selector,
    owners_selecting,
    pods_to_delete,
    recheck_owner,
    resolve_controller_ref,
    run_slow_start,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import ApiError, Conflict, NotFound
from kemu.machinery.keys import object_key, object_meta
from kemu.machinery.kinds import kind_of
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_conditions import is_pod_ready

logger = logging.getLogger(__name__)

NAME: Final = "replicaset"
BURST_REPLICAS: Final = 500
"""At most this many pods are created or deleted in one sync (upstream BurstReplicas)."""
DEFAULT_WORKERS: Final = 5
STATUS_UPDATE_RETRIES: Final = 1
REPLICA_FAILURE: Final = "ReplicaFailure"


def calculate_status(
    rs: types_pb2.ReplicaSet,
    pods: list[types_pb2.Pod],
    manage_error: ApiError | None,
    now: float,
) -> types_pb2.ReplicaSetStatus:
    """upstream calculateStatus: the counts over the claimed active pods, and ReplicaFailure
    while creating or deleting fails."""
    status = types_pb2.ReplicaSetStatus()
    status.CopyFrom(rs.status)
    template_labels = rs.spec.template.metadata.labels
    status.replicas = len(pods)
    status.fully_labeled_replicas = sum(
        1 for p in pods if all(p.metadata.labels.get(k) == v for k, v in template_labels.items())
    )
    status.ready_replicas = sum(1 for p in pods if is_pod_ready(p))
    status.available_replicas = sum(
        1 for p in pods if is_pod_available(p, rs.spec.min_ready_seconds, now)
    )
    failure = next((c for c in status.conditions if c.type == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - rs.spec.replicas
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        cond = status.conditions.add(
            type=REPLICA_FAILURE, status="True", reason=reason, message=manage_error.message
        )
        cond.last_transition_time.CopyFrom(timestamp(now))
    elif manage_error is None and failure is not None:
        status.conditions.remove(failure)
    return status


@dataclass(frozen=True)
class ControlledKind:
    """The kind a ReplicaSetController manages: ReplicaSets, or ReplicationControllers
    (upstream's replication manager is the ReplicaSet controller given the
    ReplicationController GroupVersionKind and adapters that convert to and from ReplicaSets:
    pkg/controller/replication/conversion.go). The controller's logic reads the ReplicaSet
    view; owner references, events and adoption name the object itself."""

    name: str
    """The controller's name (its queue and logs)."""
    event_source: str
    """The component its events name (upstream's event broadcaster's)."""
    message: type[Message]
    to_replica_set: Callable[[Message], types_pb2.ReplicaSet]
    with_status: Callable[[Message, types_pb2.ReplicaSetStatus], Message]
    """A copy of the object with the ReplicaSet status written in its own kind."""


def _as_replica_set(obj: Message) -> types_pb2.ReplicaSet:
    assert isinstance(obj, types_pb2.ReplicaSet)
    return obj


def _replica_set_with_status(obj: Message, status: types_pb2.ReplicaSetStatus) -> Message:
    assert isinstance(obj, types_pb2.ReplicaSet)
    new = types_pb2.ReplicaSet()
    new.CopyFrom(obj)
    new.status.CopyFrom(status)
    return new


REPLICA_SETS: Final = ControlledKind(
    NAME, "replicaset-controller", types_pb2.ReplicaSet, _as_replica_set, _replica_set_with_status
)


class ReplicaSetController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        burst_replicas: int = BURST_REPLICAS,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
        kind: ControlledKind = REPLICA_SETS,
    ) -> None:
        self._kind = kind
        self._client = client
        self._clock = clock
        self.burst_replicas = burst_replicas
        self._workers = workers
        self._recorder = recorder or EventRecorder(client, kind.event_source, clock=clock)
        self.expectations = ControllerExpectations(clock)
        self.pod_control = PodControl(client, self._recorder)
        self.queue = WorkQueue(clock, name=kind.name)
        self._rss: Informer[Message] = informers.informer(kind.message)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_by_controller_uid(self._rss)
        index_by_controller_uid(self._pods)
        self._rss.add_event_handler(
            FuncHandler(self._enqueue, self._on_rs_update, self._on_rs_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        )

    @property
    def name(self) -> str:
        return self._kind.name

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, rs: Message) -> None:
        self.queue.add(object_key(rs))

    def _on_rs_update(self, old_obj: Message, new_obj: Message) -> None:
        old, new = self._kind.to_replica_set(old_obj), self._kind.to_replica_set(new_obj)
        if old.metadata.uid != new.metadata.uid:
            self._on_rs_delete(old)
        if old.spec.replicas != new.spec.replicas:
            logger.info(
                "%s %s: replicas %d -> %d",
                self._kind.name,
                object_key(new),
                old.spec.replicas,
                new.spec.replicas,
            )
        self._enqueue(new)

    def _on_rs_delete(self, rs: Message) -> None:
        key = object_key(rs)
        self.expectations.delete(key)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: types_pb2.OwnerReference | None) -> Message | None:
        kind = kind_of(self._kind.message()).kind
        return resolve_controller_ref(self._rss.lister, kind, namespace, ref)

    def _matching_replica_sets(self, pod: types_pb2.Pod) -> list[Message]:
        """upstream GetPodReplicaSets: the ReplicaSets whose selector matches an orphan."""
        return owners_selecting(self._rss.lister, pod.metadata.namespace, pod.metadata.labels)

    def _on_pod_add(self, pod: types_pb2.Pod) -> None:
        if pod.metadata.HasField("deletion_timestamp"):
            # A restarted controller may first see a pod already being deleted: that is not
            # the creation it expects.
            self._on_pod_delete(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            rs = self._resolve(pod.metadata.namespace, ref)
            if rs is None:
                return
            key = object_key(rs)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        for rs in self._matching_replica_sets(pod):
            self._enqueue(rs)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        labels_changed = old.metadata.labels != new.metadata.labels
        if new.metadata.HasField("deletion_timestamp"):
            self._on_pod_delete(new)
            if labels_changed:
                self._on_pod_delete(old)
            return
        new_ref, old_ref = controller_of(new), controller_of(old)
        ref_changed = (new_ref.uid if new_ref else "") != (old_ref.uid if old_ref else "")
        if ref_changed and old_ref is not None:
            old_rs = self._resolve(old.metadata.namespace, old_ref)
            if old_rs is not None:
                self._enqueue(old_rs)
        if new_ref is not None:
            rs = self._resolve(new.metadata.namespace, new_ref)
            if rs is None:
                return
            self._enqueue(rs)
            min_ready = self._kind.to_replica_set(rs).spec.min_ready_seconds
            if min_ready > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.queue.add_after(object_key(rs), min_ready + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self._matching_replica_sets(new):
                self._enqueue(rs)

    def _on_pod_delete(self, pod: types_pb2.Pod) -> None:
        rs = self._resolve(pod.metadata.namespace, controller_of(pod))
        if rs is None:
            return
        key = object_key(rs)
        self.expectations.deletion_observed(key, object_key(pod))
        self.queue.add(key)

    # ------------------------------------------------------------ sync

    def related_pods(self, rs: types_pb2.ReplicaSet) -> list[types_pb2.Pod]:
        """upstream getIndirectlyRelatedPods: the pods of every ReplicaSet that has the same
        controller as `rs` (its own pods when it has no controller)."""
        ref = controller_of(rs)
        siblings = (
            self._rss.lister.by_index(CONTROLLER_UID_INDEX, ref.uid) if ref is not None else [rs]
        )
        pods: dict[str, types_pb2.Pod] = {}
        for sibling in siblings:
            uid = object_meta(sibling).uid
            for pod in self._pods.lister.by_index(CONTROLLER_UID_INDEX, uid):
                pods[pod.metadata.uid] = pod
        return list(pods.values())

    async def sync(self, key: str) -> None:
        """Brings ReplicaSet `key` to its replicas and its status up to date; raises an
        ApiError to be retried with backoff."""
        namespace, _, name = key.partition("/")
        obj = self._rss.lister.get(name, namespace)
        if obj is None:
            logger.debug("%s %s has been deleted", self._kind.name, key)
            self.expectations.delete(key)
            return
        rs = self._kind.to_replica_set(obj)
        needs_sync = self.expectations.satisfied(key)
        selector = owner_selector(rs)
        if selector is None:
            logger.warning("%s %s: invalid selector, not syncing it", self._kind.name, key)
            return
        active = filter_active_pods(self._pods.lister.list(namespace))
        manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
            self._client, obj, selector, recheck_owner(self._client, obj)
        )
        pods = await manager.claim(active)
        manage_error: ApiError | None = None
        if needs_sync and not rs.metadata.HasField("deletion_timestamp"):
            manage_error = await self._manage_replicas(pods, rs, obj)
        now = self._clock.now()
        updated = await self._update_status(obj, calculate_status(rs, pods, manage_error, now))
        if manage_error is not None:
            raise manage_error
        spec = updated.spec
        if (
            spec.min_ready_seconds > 0
            and updated.status.ready_replicas == spec.replicas
            and updated.status.available_replicas != spec.replicas
        ):
            self.queue.add_after(key, float(spec.min_ready_seconds))

    async def _manage_replicas(
        self, pods: list[types_pb2.Pod], rs: types_pb2.ReplicaSet, owner: Message
    ) -> ApiError | None:
        """Creates or deletes the difference; `owner` is the object itself (its kind names
        the pods' controllerRef and its events)."""
        key = object_key(rs)
        diff = len(pods) - rs.spec.replicas
        if diff < 0:
            count = min(-diff, self.burst_replicas)
            self.expectations.expect_creations(key, count)
            logger.info(
                "%s %s: too few replicas, need %d, creating %d",
                self._kind.name,
                key,
                rs.spec.replicas,
                count,
            )
            ref = new_controller_ref(owner)

            async def create() -> None:
                await self.pod_control.create_pods(rs.spec.template, owner, ref)

            created, error = await run_slow_start(count, create)
            for _ in range(count - created):
                # Never started or failed: not expected; the next sync retries them.
                self.expectations.creation_observed(key)
            return error
        if diff > 0:
            count = min(diff, self.burst_replicas)
            logger.info(
                "%s %s: too many replicas, need %d, deleting %d",
                self._kind.name,
                key,
                rs.spec.replicas,
                count,
            )
            victims = pods_to_delete(pods, self.related_pods(rs), count, self._clock.now())
            self.expectations.expect_deletions(key, (object_key(p) for p in victims))
            errors: list[ApiError] = []

            async def delete(pod: types_pb2.Pod) -> None:
                try:
                    await self.pod_control.delete_pod(namespace, pod.metadata.name, owner)
                except ApiError as e:
                    # Its deletion will never be observed.
                    self.expectations.deletion_observed(key, object_key(pod))
                    if not isinstance(e, NotFound):
                        errors.append(e)

            namespace = rs.metadata.namespace
            async with anyio.create_task_group() as tg:
                for pod in victims:
                    tg.start_soon(delete, pod)
            return errors[0] if errors else None
        return None

    async def _update_status(
        self, obj: Message, status: types_pb2.ReplicaSetStatus
    ) -> types_pb2.ReplicaSet:
        """upstream updateReplicaSetStatus: written when it changed or the generation is
        newer; a Conflict is retried once on a fresh copy. Returns the ReplicaSet view."""
        to_rs = self._kind.to_replica_set
        current = to_rs(obj)
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            if (
                current.status == status
                and current.status.observed_generation == current.metadata.generation
            ):
                return current
            wanted = types_pb2.ReplicaSetStatus()
            wanted.CopyFrom(status)
            wanted.observed_generation = current.metadata.generation
            new = self._kind.with_status(obj, wanted)
            try:
                return to_rs(await self._client.update_status(new))
            except Conflict:
                if attempt == STATUS_UPDATE_RETRIES:
                    raise
            obj = await self._client.get(
                self._kind.message, current.metadata.name, current.metadata.namespace
            )
            current = to_rs(obj)
            status.observed_generation = current.status.observed_generation
        return current

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, f"syncing {self._kind.name}", logger)

    async def run(self) -> None:
        """Syncs ReplicaSets until cancelled; the informers must be running."""
        await run_controller(
            f"the {self._kind.name} controller",
            logger,
            synced=(self._rss, self._pods),
            queues=(self.queue,),
            tasks=[
                (f"{self._kind.name} events", self._recorder.run),
                *workers(self._kind.name, self._workers, self._worker),
            ],
        )


def new_controller(ctx: ControllerContext) -> ReplicaSetController:
    """The init function registered as "replicaset"."""
    return ReplicaSetController(ctx.client, ctx.informers, ctx.clock)
