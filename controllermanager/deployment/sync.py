"""upstream pkg/controller/deployment/sync.go: what every sync path shares.

The new ReplicaSet (getAllReplicaSetsAndSyncRevision, getNewReplicaSet), scaling
(scaleReplicaSet, scale: a size change outside a rollout step), the paused conditions, the
scaling-event test, cleanupDeployment and syncDeploymentStatus. Each step takes the
`DeploymentSync` of the sync under way.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final

from controllermanager import deployment_util as util
from controllermanager.controller_utils import new_controller_ref
from kemu.api.v1 import types_pb2
from kemu.client.events import EventRecorder
from kemu.client.informer import Lister
from kemu.client.interface import ApiClient
from kemu.client.workqueue import WorkQueue
from kemu.component.clock import Clock
from kemu.machinery import apps
from kemu.machinery.errors import AlreadyExists, ApiError, NotFound
from kemu.machinery.kinds import EVENT_NORMAL, EVENT_WARNING
from kemu.machinery.owners import controller_of

logger = logging.getLogger(__name__)

SCALING_REPLICA_SET: Final = "ScalingReplicaSet"

RS = types_pb2.ReplicaSet
Deployment = types_pb2.Deployment


@dataclass(frozen=True)
class SyncTools:
    """What the sync steps use of the controller: its client, clock, event recorder, listers
    and queue (upstream's DeploymentController fields the steps read)."""

    client: ApiClient
    clock: Clock
    recorder: EventRecorder
    rss: Lister[RS]
    pods: Lister[types_pb2.Pod]
    queue: WorkQueue


@dataclass
class DeploymentSync:
    """One sync's Deployment: a private copy, replaced by what each status write returns."""

    tools: SyncTools
    d: Deployment
    key: str

    async def write_status(self) -> None:
        self.d = await self.tools.client.update_status(self.d)


async def check_paused_conditions(s: DeploymentSync) -> None:
    d = s.d
    if not util.has_progress_deadline(d):
        return
    cond = util.get_condition(d.status, util.PROGRESSING)
    if cond is not None and cond.reason == util.TIMED_OUT_REASON:
        return
    paused_exists = cond is not None and cond.reason == util.PAUSED_DEPLOY_REASON
    now = s.tools.clock.now()
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
    await s.write_status()


async def is_scaling_event(s: DeploymentSync, rss: list[RS]) -> bool:
    new, old = await get_all_replica_sets_and_sync_revision(s, rss, create=False)
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


# ---------------------------------------------------------------- the new ReplicaSet


async def get_all_replica_sets_and_sync_revision(
    s: DeploymentSync, rss: list[RS], *, create: bool
) -> tuple[RS | None, list[RS]]:
    """The new ReplicaSet (created when `create`, its revision and annotations brought up to
    date) and the old ones."""
    old = util.find_old_replica_sets(s.d, rss)
    new = await get_new_replica_set(s, rss, old, create=create)
    return new, old


async def get_new_replica_set(
    s: DeploymentSync, rss: list[RS], old: list[RS], *, create: bool
) -> RS | None:
    d = s.d
    existing = util.find_new_replica_set(d, rss)
    new_revision = util.max_revision(old) + 1
    if existing is not None:
        return await _sync_existing_new_replica_set(s, existing, new_revision)
    if not create:
        return None
    return await _create_new_replica_set(s, old, new_revision)


async def _sync_existing_new_replica_set(s: DeploymentSync, existing: RS, new_revision: int) -> RS:
    """The new ReplicaSet exists: its annotations and minReadySeconds, the Deployment's
    revision and its FoundNewReplicaSet condition."""
    d = s.d
    now = s.tools.clock.now()
    rs = RS()
    rs.CopyFrom(existing)
    annotations_changed = util.set_new_replica_set_annotations(d, rs, new_revision, exists=True)
    if annotations_changed or rs.spec.min_ready_seconds != d.spec.min_ready_seconds:
        rs.spec.min_ready_seconds = d.spec.min_ready_seconds
        return await s.tools.client.update(rs)
    needs_update = util.set_deployment_revision(
        d, rs.metadata.annotations.get(apps.REVISION_ANNOTATION, "")
    )
    if util.has_progress_deadline(d) and util.get_condition(d.status, util.PROGRESSING) is None:
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
        await s.write_status()
    return rs


def new_replica_set(d: Deployment, old: list[RS], new_revision: int, pod_hash: str) -> RS:
    """The new ReplicaSet of the Deployment's template, `<deployment>-<pod-template-hash>`."""
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
    return rs


async def _create_new_replica_set(s: DeploymentSync, old: list[RS], new_revision: int) -> RS:
    d = s.d
    collision = d.status.collision_count if d.status.HasField("collision_count") else None
    rs = new_replica_set(d, old, new_revision, apps.compute_hash(d.spec.template, collision))
    now = s.tools.clock.now()
    already_exists = False
    try:
        created = await s.tools.client.create(rs)
    except AlreadyExists:
        found = await _ours_with_same_template(s, rs)
        if found is None:
            # A hash collision: another template holds the name. Count it, so that the
            # next sync hashes differently.
            d.status.collision_count = (collision or 0) + 1
            await s.write_status()
            raise
        created, already_exists = found, True
    except ApiError as e:
        await _record_create_failure(s, rs, e, now)
        raise
    if not already_exists and created.spec.replicas > 0:
        s.tools.recorder.event(
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
        await s.write_status()
    return created


async def _ours_with_same_template(s: DeploymentSync, rs: RS) -> RS | None:
    """The ReplicaSet holding the new one's name, when this Deployment controls it and its
    template is the Deployment's."""
    d = s.d
    found = s.tools.rss.get(rs.metadata.name, rs.metadata.namespace)
    if found is None:
        found = await s.tools.client.get(RS, rs.metadata.name, rs.metadata.namespace)
    ref = controller_of(found)
    if (
        ref is not None
        and ref.uid == d.metadata.uid
        and apps.equal_ignore_hash(d.spec.template, found.spec.template)
    ):
        return found
    return None


async def _record_create_failure(s: DeploymentSync, rs: RS, e: ApiError, now: float) -> None:
    d = s.d
    message = f'Failed to create new replica set "{rs.metadata.name}": {e.message}'
    if util.has_progress_deadline(d):
        util.set_condition(
            d.status,
            util.new_condition(
                util.PROGRESSING, "False", util.FAILED_RS_CREATE_REASON, message, now
            ),
        )
        try:
            await s.write_status()
        except ApiError:
            pass
    s.tools.recorder.event(d, EVENT_WARNING, util.FAILED_RS_CREATE_REASON, "Create", message)


# ---------------------------------------------------------------- scaling


async def scale_replica_set(
    s: DeploymentSync, rs: RS, new_scale: int, operation: str = ""
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
    updated = await s.tools.client.update(copy)
    if size_changes:
        logger.info(
            "deployment %s: scaled %s replica set %s from %d to %d",
            s.key, operation, rs.metadata.name, old_scale, new_scale,
        )  # fmt: skip
        s.tools.recorder.event(
            d,
            EVENT_NORMAL,
            SCALING_REPLICA_SET,
            "Scale",
            f"Scaled {operation} replica set {rs.metadata.name} from {old_scale} to {new_scale}",
        )
    return size_changes, updated


async def scale(s: DeploymentSync, new: RS | None, old: list[RS]) -> None:
    """upstream scale(): a size change of the Deployment outside a rollout step."""
    d = s.d
    only = util.find_active_or_latest(new, old)
    if only is not None:
        if only.spec.replicas != d.spec.replicas:
            await scale_replica_set(s, only, d.spec.replicas)
        return
    if util.is_saturated(d, new):
        for rs in util.active(old):
            await scale_replica_set(s, rs, 0)
        return
    if d.spec.strategy.type == apps.ROLLING_UPDATE:
        sizes, operation = util.proportional_sizes(d, [*old, *([new] if new else [])])
        for rs, size in sizes:
            await scale_replica_set(s, rs, size, operation)


async def sync(s: DeploymentSync, rss: list[RS]) -> None:
    """upstream sync(): scale, clean up when paused, status."""
    new, old = await get_all_replica_sets_and_sync_revision(s, rss, create=False)
    await scale(s, new, old)
    if s.d.spec.paused:
        await cleanup_deployment(s, old)
    await sync_deployment_status(s, [*old, new], new)


# ---------------------------------------------------------------- history and status


async def cleanup_deployment(s: DeploymentSync, old: list[RS]) -> None:
    """Old ReplicaSets beyond revisionHistoryLimit, lowest revision first, and only those
    scaled to 0 whose status says so."""
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
            await s.tools.client.delete(RS, rs.metadata.name, rs.metadata.namespace)
        except NotFound:
            pass


async def sync_deployment_status(
    s: DeploymentSync, all_rss: list[RS | None], new: RS | None
) -> None:
    """syncDeploymentStatus: the counts and Available, no progress estimate."""
    status = util.calculate_status(all_rss, new, s.d, s.tools.clock.now())
    if status != s.d.status:
        s.d.status.CopyFrom(status)
        await s.write_status()
