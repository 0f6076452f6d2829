"""What a DELETE checks before it touches the object, for every kind (upstream
metav1.DeleteOptions validation and storage.Preconditions.Check): the apiserver applies it and
the fake client mirrors it."""

from __future__ import annotations

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Conflict, Invalid


def validate_grace_period(grace_period: int | None) -> None:
    """Invalid naming gracePeriodSeconds when it is negative."""
    if grace_period is not None and grace_period < 0:
        raise Invalid.field("gracePeriodSeconds", "must be greater than or equal to 0")


def check_preconditions(
    meta: types_pb2.ObjectMeta, *, uid: str | None, resource_version: str | None
) -> None:
    """Conflict when the stored object is not the one the caller meant (uid) or has changed
    since the caller read it (resourceVersion); None skips a precondition."""
    if uid is not None and uid != meta.uid:
        raise Conflict(
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.uid}"
        )
    if resource_version is not None and resource_version != meta.resource_version:
        raise Conflict(
            f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
            f"ResourceVersion in object meta: {meta.resource_version}"
        )
