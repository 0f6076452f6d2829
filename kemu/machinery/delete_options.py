"""What a DELETE checks before it touches the object, for every kind (upstream
metav1.DeleteOptions validation and storage.Preconditions.Check): the apiserver applies it and
the fake client mirrors it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Cause, Conflict, Invalid
from kemu.machinery.validation.field import invalid, not_supported


def check_delete_preconditions(
    meta: types_pb2.ObjectMeta, kind: str, *, uid: str | None, resource_version: str | None
) -> None:
    """A DELETE's preconditions, checked before anything else with upstream BeforeDelete's
    messages (which name the Kind, not the resource); None skips a precondition."""
    if uid is not None and uid != meta.uid:
        raise Conflict(
            f'Operation cannot be fulfilled on {kind} "{meta.name}": the UID in the '
            f"precondition ({uid}) does not match the UID in record ({meta.uid}). The object "
            "might have been deleted and then recreated"
        )
    if resource_version is not None and resource_version != meta.resource_version:
        raise Conflict(
            f'Operation cannot be fulfilled on {kind} "{meta.name}": the ResourceVersion in '
            f"the precondition ({resource_version}) does not match the ResourceVersion in "
            f"record ({meta.resource_version}). The object might have been modified"
        )


def check_preconditions(
    meta: types_pb2.ObjectMeta, *, uid: str | None, resource_version: str | None
) -> None:
    """Conflict when the stored object is not the one the caller meant (uid) or has changed
    since the caller read it (resourceVersion); None skips a precondition. The storage
    layer's messages (storage.Preconditions.Check): updates, namespace deletion."""
    if uid is not None and uid != meta.uid:
        raise Conflict(
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.uid}"
        )
    if resource_version is not None and resource_version != meta.resource_version:
        raise Conflict(
            f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
            f"ResourceVersion in object meta: {meta.resource_version}"
        )


# metav1.DeletionPropagation: what happens to an object's dependents (those whose
# metadata.ownerReferences name it) when it is deleted.
FOREGROUND: Final = "Foreground"
"""The object stays (finalizer foregroundDeletion) until the garbage collector has deleted
the dependents that block its deletion (ownerReferences[].blockOwnerDeletion)."""
BACKGROUND: Final = "Background"
"""The object goes at once; the garbage collector deletes the dependents afterwards."""
ORPHAN: Final = "Orphan"
"""The object stays (finalizer orphan) until the garbage collector has removed the
ownerReferences to it from its dependents, which are kept."""
PROPAGATION_POLICIES: Final = (FOREGROUND, BACKGROUND, ORPHAN)

FINALIZER_ORPHAN_DEPENDENTS: Final = "orphan"
FINALIZER_DELETE_DEPENDENTS: Final = "foregroundDeletion"


def validate_propagation(propagation_policy: str | None, orphan_dependents: bool | None) -> None:
    """Invalid naming propagationPolicy for an unknown policy or one given together with the
    deprecated orphanDependents (upstream ValidateDeleteOptions)."""
    causes: list[Cause] = []
    if propagation_policy is not None and orphan_dependents is not None:
        causes.append(
            invalid(
                "propagationPolicy",
                propagation_policy,
                "orphanDependents and deletionPropagation cannot be both set",
            )
        )
    if propagation_policy is not None and propagation_policy not in PROPAGATION_POLICIES:
        causes.append(
            not_supported("propagationPolicy", propagation_policy, (*PROPAGATION_POLICIES, "nil"))
        )
    if causes:
        raise Invalid.from_causes("DeleteOptions", causes)


def orphans_by_default(obj: object) -> bool:
    """The kind's default garbage-collection policy is OrphanDependents (upstream
    DefaultGarbageCollectionPolicy): batch/v1 Jobs, kept so for backwards compatibility (a
    DELETE without a policy leaves the Job's pods). Every other kind kemu serves (core/v1,
    apps/v1, ...) deletes its dependents in the background."""
    return isinstance(obj, types_pb2.Job)


def gc_finalizers(
    finalizers: Sequence[str],
    propagation_policy: str | None,
    orphan_dependents: bool | None,
    *,
    orphan_by_default: bool = False,
) -> list[str] | None:
    """The finalizers a DELETE leaves on the object for the garbage collector, or None when
    they stay as they are (upstream deletionFinalizersForGarbageCollection).

    The request's policy wins, then an orphan or foregroundDeletion finalizer the object
    already has, then the kind's default (`orphans_by_default`): orphan, or Background (no
    finalizer).
    """
    if orphan_dependents is not None:
        orphan, foreground = orphan_dependents, False
    elif propagation_policy is not None:
        orphan, foreground = propagation_policy == ORPHAN, propagation_policy == FOREGROUND
    else:
        first = next(
            (
                f
                for f in finalizers
                if f in (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)
            ),
            None,
        )
        orphan = first == FINALIZER_ORPHAN_DEPENDENTS or (first is None and orphan_by_default)
        foreground = first == FINALIZER_DELETE_DEPENDENTS
    out = [
        f for f in finalizers if f not in (FINALIZER_ORPHAN_DEPENDENTS, FINALIZER_DELETE_DEPENDENTS)
    ]
    if orphan:
        out.append(FINALIZER_ORPHAN_DEPENDENTS)
    if foreground:
        out.append(FINALIZER_DELETE_DEPENDENTS)
    return None if set(out) == set(finalizers) else out
