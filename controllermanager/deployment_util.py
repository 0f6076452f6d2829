"""The arithmetic of the Deployment controller, pure (upstream pkg/controller/deployment/util
and the pure parts of sync.go, rolling.go and progress.go): which ReplicaSet is new, replica
counts over ReplicaSets, revisions and the annotations copied to ReplicaSets, how far a
rolling update may scale, proportional scaling, the status and its conditions."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery import apps
from kemu.machinery.convert import timestamp

RS = types_pb2.ReplicaSet
Deployment = types_pb2.Deployment

# Condition types and reasons (upstream deployment/util).
AVAILABLE: Final = "Available"
PROGRESSING: Final = "Progressing"
REPLICA_FAILURE: Final = "ReplicaFailure"
MINIMUM_REPLICAS_AVAILABLE: Final = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE: Final = "MinimumReplicasUnavailable"
NEW_RS_AVAILABLE_REASON: Final = "NewReplicaSetAvailable"
REPLICA_SET_UPDATED_REASON: Final = "ReplicaSetUpdated"
NEW_REPLICA_SET_REASON: Final = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON: Final = "FoundNewReplicaSet"
FAILED_RS_CREATE_REASON: Final = "ReplicaSetCreateError"
TIMED_OUT_REASON: Final = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON: Final = "DeploymentPaused"
RESUMED_DEPLOY_REASON: Final = "DeploymentResumed"

MAX_REV_HISTORY_LENGTH_IN_CHARS: Final = 2000
_SKIP_COPY: Final = frozenset(
    {
        apps.LAST_APPLIED_ANNOTATION,
        apps.REVISION_ANNOTATION,
        apps.REVISION_HISTORY_ANNOTATION,
        apps.DESIRED_REPLICAS_ANNOTATION,
        apps.MAX_REPLICAS_ANNOTATION,
        "deprecated.deployment.rollback.to",
    }
)


def _created(rs: RS) -> float:
    ts = rs.metadata.creation_timestamp
    return ts.seconds + ts.nanos / 1e9


# ---------------------------------------------------------------- ordering


def by_creation(rss: Iterable[RS]) -> list[RS]:
    """controller.ReplicaSetsByCreationTimestamp: oldest first, then by name."""
    return sorted(rss, key=lambda rs: (_created(rs), rs.metadata.name))


def by_revision(rss: Iterable[RS]) -> list[RS]:
    """ReplicaSetsByRevision: lowest revision first, then oldest."""
    return sorted(
        rss, key=lambda rs: (apps.revision_of(rs.metadata), _created(rs), rs.metadata.name)
    )


def by_size_newer(rss: Iterable[RS]) -> list[RS]:
    """ReplicaSetsBySizeNewer: the largest first; of equal size the newest first."""
    return sorted(rss, key=lambda rs: (-rs.spec.replicas, -_created(rs), rs.metadata.name))


def by_size_older(rss: Iterable[RS]) -> list[RS]:
    """ReplicaSetsBySizeOlder: the largest first; of equal size the oldest first."""
    return sorted(rss, key=lambda rs: (-rs.spec.replicas, _created(rs), rs.metadata.name))


# ---------------------------------------------------------------- new and old


def find_new_replica_set(d: Deployment, rss: Sequence[RS]) -> RS | None:
    """The oldest ReplicaSet whose template equals the Deployment's but for the hash."""
    for rs in by_creation(rss):
        if apps.equal_ignore_hash(rs.spec.template, d.spec.template):
            return rs
    return None


def find_old_replica_sets(d: Deployment, rss: Sequence[RS]) -> list[RS]:
    """Every ReplicaSet but the new one."""
    new = find_new_replica_set(d, rss)
    return [rs for rs in rss if new is None or rs.metadata.uid != new.metadata.uid]


def active(rss: Iterable[RS | None]) -> list[RS]:
    """controller.FilterActiveReplicaSets: spec.replicas > 0."""
    return [rs for rs in rss if rs is not None and rs.spec.replicas > 0]


def find_active_or_latest(new: RS | None, old: Sequence[RS]) -> RS | None:
    """The only active ReplicaSet, or the newest when none is active (None if several are)."""
    if new is None and not old:
        return None
    everything = [*old, *([new] if new is not None else [])]
    act = active(everything)
    if not act:
        ordered = by_creation(everything)
        return ordered[-1]
    if len(act) == 1:
        return act[0]
    return None


# ---------------------------------------------------------------- counts


def replica_count(rss: Iterable[RS | None]) -> int:
    """Σ spec.replicas (GetReplicaCountForReplicaSets)."""
    return sum(rs.spec.replicas for rs in rss if rs is not None)


def actual_replica_count(rss: Iterable[RS | None]) -> int:
    """Σ status.replicas."""
    return sum(rs.status.replicas for rs in rss if rs is not None)


def ready_replica_count(rss: Iterable[RS | None]) -> int:
    return sum(rs.status.ready_replicas for rs in rss if rs is not None)


def available_replica_count(rss: Iterable[RS | None]) -> int:
    return sum(rs.status.available_replicas for rs in rss if rs is not None)


def is_saturated(d: Deployment, rs: RS | None) -> bool:
    """The ReplicaSet holds all the Deployment's replicas, all available."""
    if rs is None:
        return False
    desired = rs.metadata.annotations.get(apps.DESIRED_REPLICAS_ANNOTATION)
    return (
        rs.spec.replicas == d.spec.replicas
        and desired == str(d.spec.replicas)
        and rs.status.available_replicas == d.spec.replicas
    )


def new_rs_new_replicas(d: Deployment, all_rss: Sequence[RS | None], new: RS) -> int:
    """NewRSNewReplicas: how large the new ReplicaSet may be now."""
    if d.spec.strategy.type == apps.RECREATE:
        return d.spec.replicas
    surge = apps.scaled_value(
        d.spec.strategy.rolling_update.max_surge, d.spec.replicas, round_up=True
    )
    current = replica_count(all_rss)
    max_total = d.spec.replicas + surge
    if current >= max_total:
        return new.spec.replicas
    up = min(max_total - current, d.spec.replicas - new.spec.replicas)
    return new.spec.replicas + up


def max_scaled_down(d: Deployment, all_rss: Sequence[RS | None], new: RS) -> int:
    """reconcileOldReplicaSets' bound: how many old replicas may go, keeping the
    unavailability of the new ReplicaSet in mind."""
    min_available = d.spec.replicas - apps.max_unavailable(d)
    new_unavailable = new.spec.replicas - new.status.available_replicas
    return replica_count(all_rss) - min_available - new_unavailable


# ---------------------------------------------------------------- proportional scaling


def _round(x: float) -> int:
    """integer.RoundToInt32: halves away from zero."""
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _max_replicas_annotation(rs: RS) -> int | None:
    try:
        return int(rs.metadata.annotations[apps.MAX_REPLICAS_ANNOTATION])
    except (KeyError, ValueError):
        return None


def replica_set_fraction(rs: RS, d: Deployment) -> int:
    """getReplicaSetFraction: the change of `rs` when the Deployment's max size changes."""
    if d.spec.replicas == 0:
        return -rs.spec.replicas
    deployment_max = d.spec.replicas + apps.max_surge(d)
    annotated = _max_replicas_annotation(rs)
    if annotated is None or annotated == 0:
        annotated = d.status.replicas
    if annotated == 0:
        return 0
    return _round(rs.spec.replicas * deployment_max / annotated) - rs.spec.replicas


def replica_set_proportion(rs: RS, d: Deployment, to_add: int, added: int) -> int:
    """GetReplicaSetProportion: `rs`'s share of `to_add`, `added` being handed out already."""
    if rs.spec.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = replica_set_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def proportional_sizes(d: Deployment, rss: Sequence[RS]) -> tuple[list[tuple[RS, int]], str]:
    """The sizes scale() gives the active ReplicaSets of a rolling Deployment whose size
    changed mid-rollout, and the direction ("up", "down" or "")."""
    act = active(rss)
    allowed_size = d.spec.replicas + apps.max_surge(d) if d.spec.replicas > 0 else 0
    to_add = allowed_size - replica_count(act)
    if to_add > 0:
        ordered, operation = by_size_newer(act), "up"
    elif to_add < 0:
        ordered, operation = by_size_older(act), "down"
    else:
        ordered, operation = act, ""
    sizes: list[tuple[RS, int]] = []
    added = 0
    for rs in ordered:
        if to_add != 0:
            proportion = replica_set_proportion(rs, d, to_add, added)
            sizes.append((rs, rs.spec.replicas + proportion))
            added += proportion
        else:
            sizes.append((rs, rs.spec.replicas))
    if sizes and to_add != 0:
        first, size = sizes[0]
        sizes[0] = (first, max(0, size + to_add - added))
    return sizes, operation


# ---------------------------------------------------------------- annotations


def copy_deployment_annotations(d: Deployment, rs: RS) -> bool:
    """copyDeploymentAnnotationsToReplicaSet; True when `rs` changed."""
    changed = False
    for key, value in d.metadata.annotations.items():
        if key in _SKIP_COPY or rs.metadata.annotations.get(key) == value:
            continue
        rs.metadata.annotations[key] = value
        changed = True
    return changed


def set_replicas_annotations(rs: RS, desired: int, max_replicas: int) -> bool:
    ann = rs.metadata.annotations
    changed = False
    for key, value in (
        (apps.DESIRED_REPLICAS_ANNOTATION, str(desired)),
        (apps.MAX_REPLICAS_ANNOTATION, str(max_replicas)),
    ):
        if ann.get(key) != value:
            ann[key] = value
            changed = True
    return changed


def replicas_annotations_need_update(rs: RS, desired: int, max_replicas: int) -> bool:
    ann = rs.metadata.annotations
    return ann.get(apps.DESIRED_REPLICAS_ANNOTATION) != str(desired) or ann.get(
        apps.MAX_REPLICAS_ANNOTATION
    ) != str(max_replicas)


def set_new_replica_set_annotations(
    d: Deployment, rs: RS, new_revision: int, *, exists: bool
) -> bool:
    """SetNewReplicaSetAnnotations: the Deployment's annotations, the revision (raised, never
    lowered; a ReplicaSet brought back by a rollback keeps its old revisions in
    revision-history) and, for a ReplicaSet about to be created, the replicas annotations."""
    changed = copy_deployment_annotations(d, rs)
    ann = rs.metadata.annotations
    had_revision = apps.REVISION_ANNOTATION in ann
    old_text = ann.get(apps.REVISION_ANNOTATION, "")
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        return False
    if old_revision < new_revision:
        ann[apps.REVISION_ANNOTATION] = str(new_revision)
        changed = True
        if had_revision:
            history = ann.get(apps.REVISION_HISTORY_ANNOTATION, "")
            revisions = history.split(",") if history else []
            revisions.append(old_text)
            while len(",".join(revisions)) > MAX_REV_HISTORY_LENGTH_IN_CHARS and revisions:
                revisions.pop(0)
            ann[apps.REVISION_HISTORY_ANNOTATION] = ",".join(revisions)
    if not exists and set_replicas_annotations(
        rs, d.spec.replicas, d.spec.replicas + apps.max_surge(d)
    ):
        changed = True
    return changed


def max_revision(rss: Iterable[RS]) -> int:
    return max((apps.revision_of(rs.metadata) for rs in rss), default=0)


def set_deployment_revision(d: Deployment, revision: str) -> bool:
    if d.metadata.annotations.get(apps.REVISION_ANNOTATION) == revision:
        return False
    d.metadata.annotations[apps.REVISION_ANNOTATION] = revision
    return True


# ---------------------------------------------------------------- conditions and status


def get_condition(
    status: types_pb2.DeploymentStatus, type_: str
) -> types_pb2.DeploymentCondition | None:
    return next((c for c in status.conditions if c.type == type_), None)


def new_condition(
    type_: str, status: str, reason: str, message: str, now: float
) -> types_pb2.DeploymentCondition:
    c = types_pb2.DeploymentCondition(type=type_, status=status, reason=reason, message=message)
    c.last_update_time.CopyFrom(timestamp(now))
    c.last_transition_time.CopyFrom(timestamp(now))
    return c


def set_condition(status: types_pb2.DeploymentStatus, cond: types_pb2.DeploymentCondition) -> None:
    """SetDeploymentCondition: a condition with the same status and reason is left alone; the
    transition time stays while the status does not change."""
    current = get_condition(status, cond.type)
    if current is not None and current.status == cond.status and current.reason == cond.reason:
        return
    new = types_pb2.DeploymentCondition()
    new.CopyFrom(cond)
    if current is not None and current.status == cond.status:
        new.last_transition_time.CopyFrom(current.last_transition_time)
    remove_condition(status, cond.type)
    status.conditions.append(new)


def remove_condition(status: types_pb2.DeploymentStatus, type_: str) -> None:
    kept = [c for c in status.conditions if c.type != type_]
    del status.conditions[:]
    status.conditions.extend(kept)


def has_progress_deadline(d: Deployment) -> bool:
    return d.spec.HasField("progress_deadline_seconds") and d.spec.progress_deadline_seconds != (
        2**31 - 1
    )


def calculate_status(
    all_rss: Sequence[RS | None], new: RS | None, d: Deployment, now: float
) -> types_pb2.DeploymentStatus:
    """The Deployment's status from its ReplicaSets (upstream calculateStatus)."""
    available = available_replica_count(all_rss)
    status = types_pb2.DeploymentStatus(
        observed_generation=d.metadata.generation,
        replicas=actual_replica_count(all_rss),
        updated_replicas=actual_replica_count([new]),
        ready_replicas=ready_replica_count(all_rss),
        available_replicas=available,
        unavailable_replicas=max(0, replica_count(all_rss) - available),
    )
    if d.status.HasField("collision_count"):
        status.collision_count = d.status.collision_count
    status.conditions.extend(d.status.conditions)
    if available >= d.spec.replicas - apps.max_unavailable(d):
        cond = new_condition(
            AVAILABLE,
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    else:
        cond = new_condition(
            AVAILABLE,
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(status, cond)
    return status


def deployment_complete(d: Deployment, status: types_pb2.DeploymentStatus) -> bool:
    replicas = d.spec.replicas
    return (
        status.updated_replicas == replicas
        and status.replicas == replicas
        and status.available_replicas == replicas
        and status.observed_generation >= d.metadata.generation
    )


def deployment_progressing(d: Deployment, status: types_pb2.DeploymentStatus) -> bool:
    old = d.status
    return (
        status.updated_replicas > old.updated_replicas
        or (status.replicas - status.updated_replicas) < (old.replicas - old.updated_replicas)
        or status.ready_replicas > old.ready_replicas
        or status.available_replicas > old.available_replicas
    )


def deployment_timed_out(d: Deployment, status: types_pb2.DeploymentStatus, now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, PROGRESSING)
    if cond is None or cond.reason == NEW_RS_AVAILABLE_REASON:
        return False
    if cond.reason == TIMED_OUT_REASON:
        return True
    updated = cond.last_update_time.seconds + cond.last_update_time.nanos / 1e9
    return updated + d.spec.progress_deadline_seconds < now


def rollout_status(
    all_rss: Sequence[RS | None], new: RS | None, d: Deployment, now: float
) -> types_pb2.DeploymentStatus:
    """syncRolloutStatus' status: calculate_status plus the Progressing condition
    (NewReplicaSetAvailable, ReplicaSetUpdated, ProgressDeadlineExceeded) and the
    ReplicaFailure condition taken from the ReplicaSets."""
    status = calculate_status(all_rss, new, d, now)
    if not has_progress_deadline(d):
        remove_condition(status, PROGRESSING)
    current = get_condition(d.status, PROGRESSING)
    complete_already = (
        status.replicas == status.updated_replicas
        and current is not None
        and current.reason == NEW_RS_AVAILABLE_REASON
    )
    name = (
        f'ReplicaSet "{new.metadata.name}"'
        if new is not None
        else f'Deployment "{d.metadata.name}"'
    )
    if has_progress_deadline(d) and not complete_already:
        if deployment_complete(d, status):
            set_condition(
                status,
                new_condition(
                    PROGRESSING,
                    "True",
                    NEW_RS_AVAILABLE_REASON,
                    f"{name} has successfully progressed.",
                    now,
                ),
            )
        elif deployment_progressing(d, status):
            cond = new_condition(
                PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, f"{name} is progressing.", now
            )
            if current is not None:
                if current.status == "True":
                    cond.last_transition_time.CopyFrom(current.last_transition_time)
                remove_condition(status, PROGRESSING)
            set_condition(status, cond)
        elif deployment_timed_out(d, status, now):
            set_condition(
                status,
                new_condition(
                    PROGRESSING,
                    "False",
                    TIMED_OUT_REASON,
                    f"{name} has timed out progressing.",
                    now,
                ),
            )
    failure = _replica_failure(all_rss, new, now)
    if failure is not None:
        set_condition(status, failure)
    else:
        remove_condition(status, REPLICA_FAILURE)
    return status


def _replica_failure(
    all_rss: Sequence[RS | None], new: RS | None, now: float
) -> types_pb2.DeploymentCondition | None:
    """getReplicaFailures: the new ReplicaSet's ReplicaFailure first, then any other's."""
    ordered = [new, *[rs for rs in all_rss if rs is not new]] if new is not None else all_rss
    for rs in ordered:
        if rs is None:
            continue
        for c in rs.status.conditions:
            if c.type == REPLICA_FAILURE:
                cond = new_condition(REPLICA_FAILURE, c.status, c.reason, c.message, now)
                cond.last_transition_time.CopyFrom(c.last_transition_time)
                return cond
    return None
