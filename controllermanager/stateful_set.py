"""The StatefulSet controller (upstream pkg/controller/statefulset/stateful_set.go),
registered as "statefulset".

Pods named `<set>-<ordinal>` with stable claims `<template>-<set>-<ordinal>`: a sync of one
set claims its pods (those it controls and its selector matches whose name is one of its
ordinals; orphans adopted, others released, as upstream's getPodsForStatefulSet), runs
stateful_set_control.StatefulSetControl (ordered or parallel creation and deletion, claims,
the retention policy, RollingUpdate with partition, OnDelete) and writes the status when it
changed. Pod events queue the pod's set (a pod that turns Ready with minReadySeconds queues
it again after minReadySeconds + 1 s); a set with available replicas short of spec.replicas
and minReadySeconds is queued again after minReadySeconds. Like upstream's, the controller
keeps no expectations: the names are fixed, a creation the informer has not shown yet fails
with AlreadyExists and the sync is retried.

Deleting a set is the garbage collector's: its pods carry its controller reference, and so do
its claims under whenDeleted Delete.
"""

from __future__ import annotations

import logging
from typing import Final

from controllermanager import stateful_set_utils as ssu
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import (
    ControllerRefManager,
    index_by_controller_uid,
    owner_selector,
    owners_selecting,
    recheck_owner,
    resolve_controller_ref,
)
from controllermanager.stateful_pod_control import StatefulPodControl
from controllermanager.stateful_set_control import StatefulSetControl
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery.errors import Conflict
from kemu.machinery.keys import object_key
from kemu.machinery.owners import controller_of
from kemu.machinery.pod_conditions import is_pod_ready

logger = logging.getLogger(__name__)

NAME: Final = "statefulset"
DEFAULT_WORKERS: Final = 5


class StatefulSetController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        options: ssu.StatefulSetOptions | None = None,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._workers = workers
        self._options = options or ssu.StatefulSetOptions()
        self._recorder = recorder or EventRecorder(client, "statefulset-controller", clock=clock)
        self.queue = WorkQueue(clock, name=NAME)
        self._sets: Informer[types_pb2.StatefulSet] = informers.informer(types_pb2.StatefulSet)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        self._claims: Informer[types_pb2.PersistentVolumeClaim] = informers.informer(
            types_pb2.PersistentVolumeClaim
        )
        index_by_controller_uid(self._pods)
        self.pod_control = StatefulPodControl(client, self._claims, self._recorder, self._options)
        self.control = StatefulSetControl(self.pod_control, clock, self._options)
        self._sets.add_event_handler(
            FuncHandler(self._enqueue, self._on_set_update, self._on_set_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(self._on_pod_add, self._on_pod_update, self._on_pod_delete)
        )
        self._claims.add_event_handler(FuncHandler(on_delete=self._on_claim_delete))

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, s: types_pb2.StatefulSet) -> None:
        self.queue.add(object_key(s))

    def _on_set_update(self, old: types_pb2.StatefulSet, new: types_pb2.StatefulSet) -> None:
        if old.metadata.uid != new.metadata.uid:
            self._on_set_delete(old)
        self._enqueue(new)

    def _on_set_delete(self, s: types_pb2.StatefulSet) -> None:
        self.control.revisions.forget(s.metadata.uid)
        self._enqueue(s)

    def _resolve(self, pod: types_pb2.Pod) -> types_pb2.StatefulSet | None:
        ref = controller_of(pod)
        return resolve_controller_ref(self._sets.lister, "StatefulSet", pod.metadata.namespace, ref)

    def _matching(self, pod: types_pb2.Pod) -> list[types_pb2.StatefulSet]:
        """getStatefulSetsForPod: the sets whose selector matches an orphan."""
        return owners_selecting(self._sets.lister, pod.metadata.namespace, pod.metadata.labels)

    def _on_pod_add(self, pod: types_pb2.Pod) -> None:
        if pod.metadata.HasField("deletion_timestamp"):
            self._on_pod_delete(pod)
            return
        s = self._resolve(pod)
        if s is not None:
            self._enqueue(s)
        elif controller_of(pod) is None:
            for match in self._matching(pod):
                self._enqueue(match)

    def _on_pod_update(self, old: types_pb2.Pod, new: types_pb2.Pod) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        old_set, s = self._resolve(old), self._resolve(new)
        if old_set is not None and (s is None or old_set.metadata.uid != s.metadata.uid):
            self._enqueue(old_set)
        if s is not None:
            self._enqueue(s)
            mrs = s.spec.min_ready_seconds
            if mrs > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.queue.add_after(object_key(s), mrs + 1.0)
            return
        if controller_of(new) is None and (
            old.metadata.labels != new.metadata.labels or controller_of(old) is not None
        ):
            for match in self._matching(new):
                self._enqueue(match)

    def _on_pod_delete(self, pod: types_pb2.Pod) -> None:
        s = self._resolve(pod)
        if s is not None:
            self._enqueue(s)

    def _on_claim_delete(self, claim: types_pb2.PersistentVolumeClaim) -> None:
        """kemu's: a claim `<template>-<set>-<ordinal>` gone queues its set, which may wait
        for it (a stale claim blocks its ordinal's pod under whenScaled Delete until the
        garbage collector deletes it); upstream waits for another event or a resync."""
        name = claim.metadata.name
        for s in self._sets.lister.list(claim.metadata.namespace):
            for template in s.spec.volume_claim_templates:
                prefix = f"{template.metadata.name}-{s.metadata.name}-"
                if name.startswith(prefix) and name[len(prefix) :].isdigit():
                    self._enqueue(s)

    # ------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Syncs StatefulSet `key`; raises an ApiError to be retried with backoff."""
        namespace, _, name = key.partition("/")
        s = self._sets.lister.get(name, namespace)
        if s is None:
            return
        selector = owner_selector(s)
        if selector is None or selector.empty:
            logger.warning("statefulset %s: invalid or empty selector, not syncing it", key)
            return
        manager: ControllerRefManager[types_pb2.Pod] = ControllerRefManager(
            self._client, s, selector, recheck_owner(self._client, s)
        )
        pods = await manager.claim(
            self._pods.lister.list(namespace), match=lambda p: ssu.is_member_of(s, p)
        )
        status, error = await self.control.update_stateful_set(s, pods)
        if ssu.inconsistent_status(s, status):
            new = types_pb2.StatefulSet()
            new.CopyFrom(s)
            new.status.CopyFrom(status)
            try:
                await self._client.update_status(new)
            except Conflict:
                # A newer set is on its way to the informer: its sync writes the status.
                self.queue.add(key)
        if error is not None:
            raise error
        mrs = s.spec.min_ready_seconds
        if mrs > 0 and status.available_replicas != ssu.replicas(s):
            self.queue.add_after(key, float(mrs))

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing statefulset", logger)

    async def run(self) -> None:
        """Syncs StatefulSets until cancelled; the informers must be running."""
        await run_controller(
            "the statefulset controller",
            logger,
            synced=(self._sets, self._pods, self._claims),
            queues=(self.queue,),
            tasks=[
                ("statefulset events", self._recorder.run),
                *workers("statefulset", self._workers, self._worker),
            ],
        )


def new_controller(ctx: ControllerContext) -> StatefulSetController:
    """The init function registered as "statefulset"."""
    return StatefulSetController(
        ctx.client, ctx.informers, ctx.clock, options=ssu.StatefulSetOptions.from_gates(ctx.gates)
    )
