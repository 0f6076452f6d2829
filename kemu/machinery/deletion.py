"""What a DELETE does to an object of any kind, and when an update removes one: graceful
deletion, finalizers and the garbage collector's finalizers (upstream rest.BeforeDelete and the
generic registry Store's Delete, updateForGracefulDeletionAndFinalizers, markAsDeleting and
ShouldDeleteDuringUpdate). The apiserver applies it inside its read-CAS loop; the fake client
mirrors it.

- An object with finalizers is never removed by a DELETE: it gets deletionTimestamp (now) and
  deletionGracePeriodSeconds 0 and stays until an update or patch removes its last finalizer.
- A DELETE with propagationPolicy Foreground or Orphan (or an object that already carries the
  foregroundDeletion or orphan finalizer) adds that finalizer, so the object stays until the
  garbage collector has dealt with its dependents. Without either, the kind's default: Orphan
  for batch/v1 Jobs (upstream's DefaultGarbageCollectionPolicy, for backwards compatibility),
  Background (no finalizer) for every other kemu kind.
- Every pod DELETE is graceful (kemu.machinery.pod_strategy): the pod is first written with
  deletionTimestamp = now + grace and deletionGracePeriodSeconds (0 when it is not bound or
  has ended, or the DELETE asked for 0; a negative grace means 1 s), so watchers see it
  MODIFIED before DELETED; with a grace above 0 it stays for its kubelet, and with finalizers
  it stays after the kubelet's grace-0 DELETE. While a graceful deletion is pending, only a
  shorter grace changes it (the deadline counts from when the deletion began), and any other
  DELETE changes nothing, not even the finalizers.
- metadata.generation is bumped when deletionTimestamp is first set, if the kind has one
  (upstream: "only when the object has a generation already").
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.convert import timestamp
from kemu.machinery.delete_options import (
    check_delete_preconditions,
    gc_finalizers,
    orphans_by_default,
    validate_propagation,
)
from kemu.machinery.keys import object_meta
from kemu.machinery.pod_strategy import (
    begin_graceful_deletion,
    check_graceful_delete,
    normalize_grace,
    shorten_graceful_deletion,
)


@dataclass(frozen=True)
class DeleteOptions:
    """metav1.DeleteOptions; None leaves a field unset."""

    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    propagation_policy: str | None = None
    orphan_dependents: bool | None = None

    def validate(self) -> None:
        """Invalid naming the offending field. A negative grace period is not an error: the
        delete path reads it as 1 s (upstream)."""
        validate_propagation(self.propagation_policy, self.orphan_dependents)


class Outcome(enum.Enum):
    DELETE = "delete"
    """Remove the object from storage now."""
    UPDATE = "update"
    """Write `DeletePlan.obj`: the object stays, being deleted."""
    UPDATE_AND_DELETE = "update-and-delete"
    """Write `DeletePlan.obj` (a pod marked with grace 0: watchers see it MODIFIED), then
    remove it (DELETED), as upstream's graceful path with a grace period of 0."""
    KEEP = "keep"
    """Change nothing: a graceful deletion is pending and the DELETE does not shorten it."""


@dataclass(frozen=True)
class DeletePlan:
    outcome: Outcome
    obj: Message
    """UPDATE, UPDATE_AND_DELETE: the new object (a copy); otherwise the current one."""


def plan_delete(current: Message, options: DeleteOptions, now: float) -> DeletePlan:
    """What a DELETE with `options` does to the stored object `current` at `now`
    (upstream BeforeDelete, then the Store's updateForGracefulDeletionAndFinalizers).
    Conflict when a precondition fails; the options must have been validated."""
    meta = object_meta(current)
    check_delete_preconditions(
        meta,
        current.DESCRIPTOR.name,
        uid=options.uid,
        resource_version=options.resource_version,
    )
    grace = normalize_grace(options.grace_period)
    updated = current.__class__()
    updated.CopyFrom(current)
    meta = object_meta(updated)
    graceful = False
    period = 0
    # Only pods delete gracefully (upstream: only their strategy is a
    # RESTGracefulDeleteStrategy).
    if isinstance(updated, types_pb2.Pod):
        if not meta.HasField("deletion_timestamp"):
            period = check_graceful_delete(updated, grace)
            begin_graceful_deletion(meta, now, period)
            graceful = True
        elif meta.deletion_grace_period_seconds > 0:
            # A pending graceful deletion: only a shorter grace changes it; otherwise
            # nothing changes, not even the finalizers.
            if not shorten_graceful_deletion(meta, grace):
                return DeletePlan(Outcome.KEEP, current)
            period = meta.deletion_grace_period_seconds
            graceful = True
        # else: a deletion whose grace period is over (0) is never graceful again
    finalizers = gc_finalizers(
        meta.finalizers,
        options.propagation_policy,
        options.orphan_dependents,
        orphan_by_default=orphans_by_default(updated),
    )
    if finalizers is not None:
        del meta.finalizers[:]
        meta.finalizers.extend(finalizers)
    if graceful:
        if meta.finalizers or period > 0:
            return DeletePlan(Outcome.UPDATE, updated)
        return DeletePlan(Outcome.UPDATE_AND_DELETE, updated)
    if meta.finalizers:
        mark_as_deleting(meta, now)
        return DeletePlan(Outcome.UPDATE, updated)
    return DeletePlan(Outcome.DELETE, current)


def mark_as_deleting(meta: types_pb2.ObjectMeta, now: float) -> None:
    """deletionTimestamp now (unless an earlier one stands), grace period 0, generation bumped
    the first time for a kind that has one (upstream markAsDeleting)."""
    if not meta.HasField("deletion_timestamp"):
        if meta.generation > 0:
            meta.generation += 1
        meta.deletion_timestamp.CopyFrom(timestamp(now))
    elif meta.deletion_timestamp.ToNanoseconds() > int(now * 1e9):
        meta.deletion_timestamp.CopyFrom(timestamp(now))
    meta.deletion_grace_period_seconds = 0


def should_delete_during_update(old: Message, new: Message) -> bool:
    """An update that removes the last finalizers of an object being deleted whose grace
    period is over removes it instead of writing it (upstream ShouldDeleteDuringUpdate; only
    finalizers keep such an object stored)."""
    old_meta = object_meta(old)
    return (
        not object_meta(new).finalizers
        and bool(old_meta.finalizers)
        and old_meta.HasField("deletion_timestamp")
        and not old_meta.deletion_grace_period_seconds
    )
