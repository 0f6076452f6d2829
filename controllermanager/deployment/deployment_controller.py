"""The Deployment controller (upstream pkg/controller/deployment): rolls a Deployment's pod
template out through ReplicaSets it owns.

The new ReplicaSet of a template is `<deployment>-<pod-template-hash>`, its selector and
template carry the `pod-template-hash` label (kemu.machinery.apps.compute_hash: a stable hash
of kemu's own, see there), and its `deployment.kubernetes.io/revision` annotation is one more
than the highest old revision (a rolled-back template gets its old ReplicaSet back with a new
revision; the old ones go to `revision-history`). The Deployment carries the revision of its
new ReplicaSet in the same annotation.

The sync is split as upstream's files: deployment_controller.py (this: the event handlers and
syncDeployment), sync.py (the new ReplicaSet, scaling, history cleanup, status), rolling.py and
recreate.py (the two strategies), progress.py (the Progressing estimate and its requeue);
deployment_util.py holds the pure helpers.

One sync, as upstream's syncDeployment: claim the ReplicaSets (adopt, release), then
- being deleted: only the status;
- Progressing=Unknown DeploymentPaused/DeploymentResumed when paused or resumed;
- paused, or a scaling event (an active ReplicaSet's desired-replicas annotation is not
  spec.replicas): scale (the only active ReplicaSet, or proportionally across them by their
  max-replicas annotations), clean up the history when paused, status;
- Recreate: scale every old ReplicaSet to 0, wait until none of their pods exists, create and
  scale up the new one;
- RollingUpdate: scale the new ReplicaSet up within replicas + maxSurge (Σ spec.replicas),
  scale old ones down keeping replicas - maxUnavailable available (unhealthy old replicas
  first), clean up old ReplicaSets beyond revisionHistoryLimit once complete;
then the status with the conditions Available (MinimumReplicasAvailable) and Progressing
(NewReplicaSetCreated, FoundNewReplicaSet, ReplicaSetUpdated, NewReplicaSetAvailable,
ProgressDeadlineExceeded) and ReplicaFailure from the ReplicaSets. A Deployment that is
progressing is synced again when its progress deadline would pass.

Rollback is kemuctl's (`rollout undo` copies an old ReplicaSet's template into the Deployment, as
kubectl does); the deprecated spec.rollbackTo of extensions/v1beta1 does not exist in apps/v1.
"""

from __future__ import annotations

import logging
from typing import Final

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
from controllermanager.deployment import sync
from controllermanager.deployment.recreate import rollout_recreate
from controllermanager.deployment.rolling import rollout_rolling
from controllermanager.deployment.sync import RS, Deployment, DeploymentSync, SyncTools
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery import apps
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_WARNING
from kemu.machinery.labels import Selector
from kemu.machinery.owners import controller_of

logger = logging.getLogger(__name__)

NAME: Final = "deployment"
DEFAULT_WORKERS: Final = 5


class DeploymentController:
    """See the module docstring."""

    def __init__(
        self,
        client: ApiClient,
        informers: InformerFactory,
        clock: Clock,
        *,
        workers: int = DEFAULT_WORKERS,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._clock = clock
        self._workers = workers
        self._recorder = recorder or EventRecorder(client, "deployment-controller", clock=clock)
        self.queue = WorkQueue(clock, name=NAME)
        self._deployments: Informer[Deployment] = informers.informer(Deployment)
        self._rss: Informer[RS] = informers.informer(RS)
        self._pods: Informer[types_pb2.Pod] = informers.informer(types_pb2.Pod)
        index_by_controller_uid(self._rss)
        index_by_controller_uid(self._pods)
        self._deployments.add_event_handler(
            FuncHandler(self._enqueue, lambda _old, new: self._enqueue(new), self._enqueue)
        )
        self._rss.add_event_handler(
            FuncHandler(self._on_rs_add, self._on_rs_update, self._on_rs_delete)
        )
        self._pods.add_event_handler(
            FuncHandler(lambda _pod: None, lambda _old, _new: None, self._on_pod_delete)
        )
        self._tools = SyncTools(
            client, clock, self._recorder, self._rss.lister, self._pods.lister, self.queue
        )

    @property
    def name(self) -> str:
        return NAME

    # ------------------------------------------------------------ event handlers

    def _enqueue(self, d: Deployment) -> None:
        self.queue.add(object_key(d))

    def _resolve(self, namespace: str, ref: types_pb2.OwnerReference | None) -> Deployment | None:
        return resolve_controller_ref(self._deployments.lister, "Deployment", namespace, ref)

    def _deployments_for_orphan(self, rs: RS) -> list[Deployment]:
        return owners_selecting(self._deployments.lister, rs.metadata.namespace, rs.metadata.labels)

    def _on_rs_add(self, rs: RS) -> None:
        if rs.metadata.HasField("deletion_timestamp"):
            self._on_rs_delete(rs)
            return
        ref = controller_of(rs)
        if ref is not None:
            d = self._resolve(rs.metadata.namespace, ref)
            if d is not None:
                self._enqueue(d)
            return
        for d in self._deployments_for_orphan(rs):
            self._enqueue(d)

    def _on_rs_update(self, old: RS, new: RS) -> None:
        if old.metadata.resource_version == new.metadata.resource_version:
            return
        new_ref, old_ref = controller_of(new), controller_of(old)
        ref_changed = (new_ref.uid if new_ref else "") != (old_ref.uid if old_ref else "")
        if ref_changed and old_ref is not None:
            d = self._resolve(old.metadata.namespace, old_ref)
            if d is not None:
                self._enqueue(d)
        if new_ref is not None:
            d = self._resolve(new.metadata.namespace, new_ref)
            if d is not None:
                self._enqueue(d)
            return
        if ref_changed or old.metadata.labels != new.metadata.labels:
            for d in self._deployments_for_orphan(new):
                self._enqueue(d)

    def _on_rs_delete(self, rs: RS) -> None:
        d = self._resolve(rs.metadata.namespace, controller_of(rs))
        if d is not None:
            self._enqueue(d)

    def _on_pod_delete(self, pod: types_pb2.Pod) -> None:
        """A Recreate rollout waits for the old pods to be gone."""
        rs_ref = controller_of(pod)
        if rs_ref is None or rs_ref.kind != "ReplicaSet":
            return
        rs = self._rss.lister.get(rs_ref.name, pod.metadata.namespace)
        if rs is None:
            return
        d = self._resolve(rs.metadata.namespace, controller_of(rs))
        if d is not None and d.spec.strategy.type == apps.RECREATE:
            self._enqueue(d)

    # ------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """syncDeployment: claim the ReplicaSets, then the path the Deployment's state picks."""
        namespace, _, name = key.partition("/")
        cached = self._deployments.lister.get(name, namespace)
        if cached is None:
            logger.debug("deployment %s has been deleted", key)
            return
        d = Deployment()
        d.CopyFrom(cached)
        s = DeploymentSync(self._tools, d, key)
        selector = owner_selector(d)
        if selector is None or selector.empty:
            self._recorder.event(
                d, EVENT_WARNING, "SelectingAll", "Sync",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )  # fmt: skip
            return
        rss = await self._claim_replica_sets(d, selector)
        if d.metadata.HasField("deletion_timestamp"):
            new, old = await sync.get_all_replica_sets_and_sync_revision(s, rss, create=False)
            await sync.sync_deployment_status(s, [*old, new], new)
            return
        await sync.check_paused_conditions(s)
        if s.d.spec.paused or await sync.is_scaling_event(s, rss):
            await sync.sync(s, rss)
            return
        if s.d.spec.strategy.type == apps.RECREATE:
            await rollout_recreate(s, rss, selector)
        else:
            await rollout_rolling(s, rss)

    async def _claim_replica_sets(self, d: Deployment, selector: Selector) -> list[RS]:
        manager: ControllerRefManager[RS] = ControllerRefManager(
            self._client, d, selector, recheck_owner(self._client, d)
        )
        return await manager.claim(self._rss.lister.list(d.metadata.namespace))

    # ------------------------------------------------------------ workers

    async def _worker(self) -> None:
        await process_work_items(self.queue, self.sync, "syncing deployment", logger)

    async def run(self) -> None:
        """Syncs Deployments until cancelled; the informers must be running."""
        await run_controller(
            "the deployment controller",
            logger,
            synced=(self._deployments, self._rss, self._pods),
            queues=(self.queue,),
            tasks=[
                ("deployment events", self._recorder.run),
                *workers("deployment", self._workers, self._worker),
            ],
        )


def new_controller(ctx: ControllerContext) -> DeploymentController:
    """The init function registered as "deployment"."""
    return DeploymentController(ctx.client, ctx.informers, ctx.clock)
