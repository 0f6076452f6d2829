"""Per-kind rules of upstream's PrepareForUpdate strategies that the apiserver's registry and
the fake client share: when an update bumps metadata.generation, and what metadata a status
update may change."""

from __future__ import annotations

from typing import Any, Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2

# Kinds without a spec whose changes would mean a new generation.
_NO_GENERATION: Final = frozenset({"kemu.api.v1.Lease", "kemu.api.v1.Event"})


def _spec_bytes(obj: Message) -> bytes:
    spec: Any = getattr(obj, "spec", None)
    if spec is None:
        # PriorityClass keeps its "spec" at the top level.
        probe = obj.__class__()
        probe.CopyFrom(obj)
        probe.ClearField("metadata")
        return probe.SerializeToString(deterministic=True)
    data: bytes = spec.SerializeToString(deterministic=True)
    return data


def bumps_generation(old: Message, new: Message) -> bool:
    """Whether storing `new` over `old` (a main-resource update) bumps metadata.generation.

    A spec change does, for every kind but Leases and Events. A Deployment's annotation change
    does too, as upstream's deployment strategy (annotations are copied to its ReplicaSets).
    """
    name = new.DESCRIPTOR.full_name
    if name in _NO_GENERATION:
        return False
    if _spec_bytes(old) != _spec_bytes(new):
        return True
    if name == "kemu.api.v1.Deployment":
        return dict(old.metadata.annotations) != dict(new.metadata.annotations)  # type: ignore[attr-defined]
    return False


# Kinds whose status updates also write annotations (upstream's apps status strategies keep
# only the spec and labels: the Deployment controller records its revision that way).
_STATUS_WRITES_ANNOTATIONS: Final = frozenset({"kemu.api.v1.Deployment", "kemu.api.v1.ReplicaSet"})


def apply_status_update_metadata(stored: Message, sent: Message) -> None:
    """Takes into `stored` (the object a status update writes, holding the old metadata) the
    metadata the status update may change for its kind."""
    if stored.DESCRIPTOR.full_name not in _STATUS_WRITES_ANNOTATIONS:
        return
    meta: types_pb2.ObjectMeta = stored.metadata  # type: ignore[attr-defined]
    sent_meta: types_pb2.ObjectMeta = sent.metadata  # type: ignore[attr-defined]
    meta.annotations.clear()
    meta.annotations.update(sent_meta.annotations)
