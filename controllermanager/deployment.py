"""The Deployment controller (upstream pkg/controller/deployment): rolls a Deployment's pod
template out through ReplicaSets it owns.

The new ReplicaSet of a template is `<deployment>-<pod-template-hash>`, its selector and
template carry the `pod-template-hash` label (kemu.machinery.apps.compute_hash: a stable hash
of kemu's own, see there), and its `deployment.kubernetes.io/revision` annotation is one more
than the highest old revision (a rolled-back template gets its old ReplicaSet back with a new
revision; the old ones go to `revision-history`). The Deployment carries the revision of its
new ReplicaSet in the same annotation.

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
from dataclasses import dataclass
from typing import Final

from controllermanager import deployment_util as util
from controllermanager.controller import (
    ControllerContext,
    process_work_items,
    run_controller,
    workers,
)
from controllermanager.controller_utils import (
    CONTROLLER_UID_INDEX,
    ControllerRefManager,
    index_by_controller_uid,
    new_controller_ref,
    owner_selector,
    owners_selecting,
    recheck_owner,
    resolve_controller_ref,
)
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery import apps
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.keys import object_key
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.labels import Selector
from kemu.machinery.owners import controller_of

logger = logging.getLogger(__name__)

NAME: Final = "deployment"
DEFAULT_WORKERS: Final = 5
SCALING_REPLICA_SET: Final = "ScalingReplicaSet"

RS = types_pb2.ReplicaSet
Deployment = types_pb2.Deployment


@dataclass
class _Sync:
    """One sync's Deployment: a private copy, replaced by what each status write returns."""

    d: Deployment
    key: str


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
        namespace, _, name = key.partition("/")
        cached = self._deployments.lister.get(name, namespace)
        if cached is None:
            logger.debug("deployment %s has been deleted", key)
            return
        d = Deployment()
        d.CopyFrom(cached)
        s = _Sync(d, key)
        selector = owner_selector(d)
        if selector is None or selector.empty:
            self._recorder.event(
                d, EVENT_WARNING, "SelectingAll", "Sync",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )  # fmt: skip
            return
        rss = await self._claim_replica_sets(d, selector)
        if d.metadata.HasField("deletion_timestamp"):
            new, old = await self._new_and_old(s, rss, create=False)
            await self._sync_status(s, [*old, new], new)
            return
        await self._check_paused_conditions(s)
        if s.d.spec.paused or await self._is_scaling_event(s, rss):
            await self._sync_scale(s, rss)
            return
        if s.d.spec.strategy.type == apps.RECREATE:
            await self._rollout_recreate(s, rss, selector)
        else:
            await self._rollout_rolling(s, rss)

    async def _claim_replica_sets(self, d: Deployment, selector: Selector) -> list[RS]:
        manager: ControllerRefManager[RS] = ControllerRefManager(
            self._client, d, selector, recheck_owner(self._client, d)
        )
        return await manager.claim(self._rss.lister.list(d.metadata.namespace))

    async def _write_status(self, s: _Sync) -> None:
        s.d = await self._client.update_status(s.d)

    async def _check_paused_conditions(self, s: _Sync) -> None:
        d = s.d
        if not util.has_progress_deadline(d):
            return
        cond = util.get_condition(d.status, util.PROGRESSING)
        if cond is not None and cond.reason == util.TIMED_OUT_REASON:
            return
        paused_exists = cond is not None and cond.reason == util.PAUSED_DEPLOY_REASON
        now = self._clock.now()
        if d.spec.paused and not paused_exists:
            util.set_condition(
                d.status,
                util.new_condition(
                    util.PROGRESSING,
                    "Unknown",
                    util.PAUSED_DEPLOY_REASON,
                    "Deployment is paused",
                    now,
                ),
            )
        elif not d.spec.paused and paused_exists:
            util.set_condition(
                d.status,
                util.new_condition(
                    util.PROGRESSING,
                    "Unknown",
                    util.RESUMED_DEPLOY_REASON,
                    "Deployment is resumed",
                    now,
                ),
            )
        else:
            return
        await self._write_status(s)

    async def _is_scaling_event(self, s: _Sync, rss: list[RS]) -> bool:
        new, old = await self._new_and_old(s, rss, create=False)
        for rs in util.active([*old, new]):
            desired = rs.metadata.annotations.get(apps.DESIRED_REPLICAS_ANNOTATION)
            if desired is None:
                continue
            try:
                if int(desired) != s.d.spec.replicas:
                    return True
            except ValueError:
                continue
        return False

    # ------------------------------------------------------------ the new ReplicaSet

    async def _new_and_old(
        self, s: _Sync, rss: list[RS], *, create: bool
    ) -> tuple[RS | None, list[RS]]:
        """getAllReplicaSetsAndSyncRevision: the new ReplicaSet (created when `create`, its
        revision and annotations brought up to date) and the old ones."""
        old = util.find_old_replica_sets(s.d, rss)
        new = await self._get_new_replica_set(s, rss, old, create=create)
        return new, old

    async def _get_new_replica_set(
        self, s: _Sync, rss: list[RS], old: list[RS], *, create: bool
    ) -> RS | None:
        d = s.d
        existing = util.find_new_replica_set(d, rss)
        new_revision = util.max_revision(old) + 1
        now = self._clock.now()
        if existing is not None:
            rs = RS()
            rs.CopyFrom(existing)
            annotations_changed = util.set_new_replica_set_annotations(
                d, rs, new_revision, exists=True
            )
            if annotations_changed or rs.spec.min_ready_seconds != d.spec.min_ready_seconds:
                rs.spec.min_ready_seconds = d.spec.min_ready_seconds
                return await self._client.update(rs)
            needs_update = util.set_deployment_revision(
                d, rs.metadata.annotations.get(apps.REVISION_ANNOTATION, "")
            )
            if (
                util.has_progress_deadline(d)
                and util.get_condition(d.status, util.PROGRESSING) is None
            ):
                util.set_condition(
                    d.status,
                    util.new_condition(
                        util.PROGRESSING,
                        "True",
                        util.FOUND_NEW_RS_REASON,
                        f'Found new replica set "{rs.metadata.name}"',
                        now,
                    ),
                )
                needs_update = True
            if needs_update:
                await self._write_status(s)
            return rs
        if not create:
            return None
        return await self._create_new_replica_set(s, old, new_revision)

    async def _create_new_replica_set(self, s: _Sync, old: list[RS], new_revision: int) -> RS:
        d = s.d
        collision = d.status.collision_count if d.status.HasField("collision_count") else None
        pod_hash = apps.compute_hash(d.spec.template, collision)
        rs = RS()
        rs.metadata.name = f"{d.metadata.name}-{pod_hash}"
        rs.metadata.namespace = d.metadata.namespace
        rs.metadata.owner_references.append(new_controller_ref(d))
        rs.spec.template.CopyFrom(d.spec.template)
        rs.spec.template.metadata.labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_hash
        rs.metadata.labels.update(rs.spec.template.metadata.labels)
        rs.spec.selector.CopyFrom(d.spec.selector)
        rs.spec.selector.match_labels[apps.DEFAULT_DEPLOYMENT_UNIQUE_LABEL_KEY] = pod_hash
        rs.spec.min_ready_seconds = d.spec.min_ready_seconds
        rs.spec.replicas = 0
        rs.spec.replicas = util.new_rs_new_replicas(d, [*old, rs], rs)
        util.set_new_replica_set_annotations(d, rs, new_revision, exists=False)
        now = self._clock.now()
        already_exists = False
        try:
            created = await self._client.create(rs)
        except AlreadyExists:
            found = self._rss.lister.get(rs.metadata.name, rs.metadata.namespace)
            if found is None:
                found = await self._client.get(RS, rs.metadata.name, rs.metadata.namespace)
            ref = controller_of(found)
            if (
                ref is not None
                and ref.uid == d.metadata.uid
                and apps.equal_ignore_hash(d.spec.template, found.spec.template)
            ):
                created, already_exists = found, True
            else:
                # A hash collision: another template holds the name. Count it, so that the
                # next sync hashes differently.
                d.status.collision_count = (collision or 0) + 1
                await self._write_status(s)
                raise
        except ApiError as e:
            message = f'Failed to create new replica set "{rs.metadata.name}": {e.message}'
            if util.has_progress_deadline(d):
                util.set_condition(
                    d.status,
                    util.new_condition(
                        util.PROGRESSING, "False", util.FAILED_RS_CREATE_REASON, message, now
                    ),
                )
                try:
                    await self._write_status(s)
                except ApiError:
                    pass
            self._recorder.event(d, EVENT_WARNING, util.FAILED_RS_CREATE_REASON, "Create", message)
            raise
        if not already_exists and created.spec.replicas > 0:
            self._recorder.event(
                d,
                EVENT_NORMAL,
                SCALING_REPLICA_SET,
                "Scale",
                f"Scaled up replica set {created.metadata.name} from 0 to {created.spec.replicas}",
            )
        needs_update = util.set_deployment_revision(d, str(new_revision))
        if not already_exists and util.has_progress_deadline(d):
            util.set_condition(
                d.status,
                util.new_condition(
                    util.PROGRESSING,
                    "True",
                    util.NEW_REPLICA_SET_REASON,
                    f'Created new replica set "{created.metadata.name}"',
                    now,
                ),
            )
            needs_update = True
        if needs_update:
            await self._write_status(s)
        return created

    # ------------------------------------------------------------ scaling

    async def _scale_replica_set(
        self, s: _Sync, rs: RS, new_scale: int, operation: str = ""
    ) -> tuple[bool, RS]:
        """scaleReplicaSet(AndRecordEvent): the size and the replicas annotations."""
        d = s.d
        if not operation:
            if rs.spec.replicas == new_scale:
                return False, rs
            operation = "up" if rs.spec.replicas < new_scale else "down"
        max_replicas = d.spec.replicas + apps.max_surge(d)
        size_changes = rs.spec.replicas != new_scale
        if not size_changes and not util.replicas_annotations_need_update(
            rs, d.spec.replicas, max_replicas
        ):
            return False, rs
        old_scale = rs.spec.replicas
        copy = RS()
        copy.CopyFrom(rs)
        copy.spec.replicas = new_scale
        util.set_replicas_annotations(copy, d.spec.replicas, max_replicas)
        updated = await self._client.update(copy)
        if size_changes:
            logger.info(
                "deployment %s: scaled %s replica set %s from %d to %d",
                s.key, operation, rs.metadata.name, old_scale, new_scale,
            )  # fmt: skip
            self._recorder.event(
                d,
                EVENT_NORMAL,
                SCALING_REPLICA_SET,
                "Scale",
                f"Scaled {operation} replica set {rs.metadata.name} from {old_scale} to "
                f"{new_scale}",
            )
        return size_changes, updated

    async def _scale(self, s: _Sync, new: RS | None, old: list[RS]) -> None:
        """upstream scale(): a size change of the Deployment outside a rollout step."""
        d = s.d
        only = util.find_active_or_latest(new, old)
        if only is not None:
            if only.spec.replicas != d.spec.replicas:
                await self._scale_replica_set(s, only, d.spec.replicas)
            return
        if util.is_saturated(d, new):
            for rs in util.active(old):
                await self._scale_replica_set(s, rs, 0)
            return
        if d.spec.strategy.type == apps.ROLLING_UPDATE:
            sizes, operation = util.proportional_sizes(d, [*old, *([new] if new else [])])
            for rs, size in sizes:
                await self._scale_replica_set(s, rs, size, operation)

    async def _sync_scale(self, s: _Sync, rss: list[RS]) -> None:
        """upstream sync(): scale, clean up when paused, status."""
        new, old = await self._new_and_old(s, rss, create=False)
        await self._scale(s, new, old)
        if s.d.spec.paused:
            await self._cleanup(s, old)
        await self._sync_status(s, [*old, new], new)

    # ------------------------------------------------------------ rolling update

    async def _rollout_rolling(self, s: _Sync, rss: list[RS]) -> None:
        new, old = await self._new_and_old(s, rss, create=True)
        assert new is not None
        all_rss: list[RS | None] = [*old, new]
        if await self._reconcile_new(s, all_rss, new):
            await self._sync_rollout_status(s, all_rss, new)
            return
        if await self._reconcile_old(s, all_rss, util.active(old), new):
            await self._sync_rollout_status(s, all_rss, new)
            return
        if util.deployment_complete(s.d, s.d.status):
            await self._cleanup(s, old)
        await self._sync_rollout_status(s, all_rss, new)

    async def _reconcile_new(self, s: _Sync, all_rss: list[RS | None], new: RS) -> bool:
        d = s.d
        if new.spec.replicas == d.spec.replicas:
            return False
        if new.spec.replicas > d.spec.replicas:
            return (await self._scale_replica_set(s, new, d.spec.replicas))[0]
        count = util.new_rs_new_replicas(d, all_rss, new)
        return (await self._scale_replica_set(s, new, count))[0]

    async def _reconcile_old(
        self, s: _Sync, all_rss: list[RS | None], old: list[RS], new: RS
    ) -> bool:
        d = s.d
        if util.replica_count(old) == 0:
            return False
        max_down = util.max_scaled_down(d, all_rss, new)
        if max_down <= 0:
            return False
        old, cleaned = await self._cleanup_unhealthy(s, old, max_down)
        scaled = await self._scale_down_old_for_rolling(s, [*old, new], old)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy(
        self, s: _Sync, old: list[RS], max_cleanup: int
    ) -> tuple[list[RS], int]:
        """Old replicas that are not available go first: they would block the rollout."""
        out = util.by_creation(old)
        total = 0
        for i, rs in enumerate(out):
            if total >= max_cleanup:
                break
            if rs.spec.replicas == 0 or rs.spec.replicas == rs.status.available_replicas:
                continue
            down = min(max_cleanup - total, rs.spec.replicas - rs.status.available_replicas)
            if down <= 0:
                # A stale status counts more available replicas than the spec asks for: that
                # would scale up (upstream refuses with an error and retries; kemu skips it).
                continue
            _, out[i] = await self._scale_replica_set(s, rs, rs.spec.replicas - down)
            total += down
        return out, total

    async def _scale_down_old_for_rolling(self, s: _Sync, all_rss: list[RS], old: list[RS]) -> int:
        d = s.d
        min_available = d.spec.replicas - apps.max_unavailable(d)
        available = util.available_replica_count(all_rss)
        if available <= min_available:
            return 0
        budget = available - min_available
        total = 0
        for rs in util.by_creation(old):
            if total >= budget:
                break
            if rs.spec.replicas == 0:
                continue
            down = min(rs.spec.replicas, budget - total)
            await self._scale_replica_set(s, rs, rs.spec.replicas - down)
            total += down
        return total

    # ------------------------------------------------------------ recreate

    async def _rollout_recreate(self, s: _Sync, rss: list[RS], selector: Selector) -> None:
        new, old = await self._new_and_old(s, rss, create=False)
        scaled = False
        for rs in util.active(old):
            scaled = (await self._scale_replica_set(s, rs, 0))[0] or scaled
        if scaled:
            await self._sync_rollout_status(s, [*old, new], new)
            return
        if self._old_pods_running(new, old, rss, selector):
            await self._sync_rollout_status(s, [*old, new], new)
            return
        if new is None:
            new, old = await self._new_and_old(s, rss, create=True)
            assert new is not None
        await self._scale_replica_set(s, new, s.d.spec.replicas)
        if util.deployment_complete(s.d, s.d.status):
            await self._cleanup(s, old)
        await self._sync_rollout_status(s, [*old, new], new)

    def _old_pods_running(
        self, new: RS | None, old: list[RS], rss: list[RS], selector: Selector
    ) -> bool:
        """Whether an old ReplicaSet still counts pods, or any pod of one exists (even terminating)."""
        if util.actual_replica_count(old) > 0:
            return True
        owned = {rs.metadata.uid for rs in rss}
        if new is not None:
            owned.discard(new.metadata.uid)
        for uid in owned:
            for pod in self._pods.lister.by_index(CONTROLLER_UID_INDEX, uid):
                if not selector.matches(pod.metadata.labels):
                    continue
                if pod.status.phase not in ("Succeeded", "Failed"):
                    return True
        return False

    # ------------------------------------------------------------ history and status

    async def _cleanup(self, s: _Sync, old: list[RS]) -> None:
        """cleanupDeployment: old ReplicaSets beyond revisionHistoryLimit, lowest revision
        first, and only those scaled to 0 whose status says so."""
        d = s.d
        if not d.spec.HasField("revision_history_limit"):
            return
        alive = [rs for rs in old if not rs.metadata.HasField("deletion_timestamp")]
        diff = len(alive) - d.spec.revision_history_limit
        if diff <= 0:
            return
        for rs in util.by_revision(alive)[:diff]:
            if (
                rs.status.replicas != 0
                or rs.spec.replicas != 0
                or rs.metadata.generation > rs.status.observed_generation
            ):
                continue
            logger.info("deployment %s: deleting old replica set %s", s.key, rs.metadata.name)
            try:
                await self._client.delete(RS, rs.metadata.name, rs.metadata.namespace)
            except NotFound:
                pass

    async def _sync_status(self, s: _Sync, all_rss: list[RS | None], new: RS | None) -> None:
        """syncDeploymentStatus: the counts and Available, no progress estimate."""
        status = util.calculate_status(all_rss, new, s.d, self._clock.now())
        if status != s.d.status:
            s.d.status.CopyFrom(status)
            await self._write_status(s)

    async def _sync_rollout_status(
        self, s: _Sync, all_rss: list[RS | None], new: RS | None
    ) -> None:
        now = self._clock.now()
        status = util.rollout_status(all_rss, new, s.d, now)
        if status != s.d.status:
            s.d.status.CopyFrom(status)
            await self._write_status(s)
            return
        self._requeue_stuck(s, status, now)

    def _requeue_stuck(self, s: _Sync, status: types_pb2.DeploymentStatus, now: float) -> None:
        """requeueStuckDeployment: sync again when the progress deadline would pass."""
        cond = util.get_condition(status, util.PROGRESSING)
        if (
            cond is None
            or not util.has_progress_deadline(s.d)
            or cond.reason in (util.NEW_RS_AVAILABLE_REASON, util.TIMED_OUT_REASON)
            or util.deployment_complete(s.d, status)
        ):
            return
        updated = cond.last_update_time.seconds + cond.last_update_time.nanos / 1e9
        after = updated + s.d.spec.progress_deadline_seconds - now
        self.queue.add_after(s.key, max(0.0, after) + 1.0)

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
