"""Owner references (upstream apimachinery's metav1 controller_ref.go), for every component
that asks which controller manages an object."""

from __future__ import annotations

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2


def controller_of(obj: Message) -> types_pb2.OwnerReference | None:
    """The ownerReference with controller=true, if any (metav1.GetControllerOf)."""
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    for ref in meta.owner_references:
        if ref.HasField("controller") and ref.controller:
            return ref
    return None
