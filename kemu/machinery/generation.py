"""When an update bumps metadata.generation: the per-kind rule of upstream's PrepareForUpdate
strategies, shared by the apiserver's registry and the fake client."""

from __future__ import annotations

from typing import Any, Final

from google.protobuf.message import Message

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
