"""What the protection controllers share (upstream pkg/util/protectionutil): whether an object
needs its protection finalizer, or is being deleted while it still holds it. Used by
pvc-protection and pv-protection (controllermanager/persistentvolume/protection.py) and
podgroup-protection-controller (controllermanager/podgroup_protection.py)."""

from __future__ import annotations

from typing import Protocol

from kemu.api.v1 import types_pb2


class Protected(Protocol):
    """An API object: what the helpers read of it is its metadata."""

    @property
    def metadata(self) -> types_pb2.ObjectMeta: ...


def is_deletion_candidate(obj: Protected, finalizer: str) -> bool:
    """IsDeletionCandidate: being deleted and still holding the finalizer."""
    return obj.metadata.HasField("deletion_timestamp") and finalizer in obj.metadata.finalizers


def need_to_add_finalizer(obj: Protected, finalizer: str) -> bool:
    """NeedToAddFinalizer: not being deleted and without the finalizer."""
    return not obj.metadata.HasField("deletion_timestamp") and (
        finalizer not in obj.metadata.finalizers
    )
