"""Merge patches: the one a request sends (`parse_patch`), and applied to the stored object
field by field where the whole round trip through JSON is not needed (`merge_patched`)."""

from __future__ import annotations

import functools

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from apiserver.registry.store import copy_of
from kemu.machinery import convert, jsonutil
from kemu.machinery import patch as patches
from kemu.machinery.errors import BadRequest
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import Kind


def parse_patch(text: str) -> JSONObject:
    patch = jsonutil.loads(text, "the patch")
    if not isinstance(patch, dict):
        raise BadRequest("a merge patch must be a JSON object")
    return patch


@functools.cache
def _patchable_fields(desc: Descriptor) -> dict[str, str]:
    """The top-level fields of a kind that a merge patch can rewrite one at a time: JSON name
    to field name of each singular field of a plain message type (metadata, spec, status)."""
    out = {}
    for fd in sorted(desc.fields, key=lambda fd: fd.number):
        sub = fd.message_type
        if (
            sub is None
            or fd.is_repeated
            or sub.full_name in ("google.protobuf.Timestamp", "kemu.api.v1.IntOrString")
        ):
            continue
        out[fd.json_name] = fd.name
    return out


@functools.cache
def _string_fields(desc: Descriptor) -> dict[str, str]:
    """JSON name to field name of a message's singular string fields."""
    return {
        fd.json_name: fd.name
        for fd in desc.fields
        if fd.type == FieldDescriptor.TYPE_STRING and not fd.is_repeated
    }


def merge_patched(
    kind: Kind,
    current: Message,
    patch: JSONObject,
    unknown: convert.UnknownFields | None = None,
) -> Message:
    """`from_dict(kind, merge_patch(to_dict(current), patch), unknown)`, converting only the
    top-level fields the patch names (the status PATCHes of schedulers and kubelets convert
    metadata and status, not the spec): a merge patch leaves every other top-level key as it
    was. The patched fields are filled in the order the whole object's JSON would list them
    (set fields in field order, then new ones in the patch's order), so the first Invalid
    field and the unknown fields found are the same. A patch naming anything else
    (apiVersion, kind, a scalar or unknown field) takes the whole round trip.

    An untouched field is the current one, where the round trip would give back its JSON
    reading: the same but for what the JSON cannot carry (an IntOrString holding neither an
    int nor a string). So the registry uses this for the status subresource only, whose
    strategy takes every field but the status (and the metadata the patch names) from the
    stored object."""
    fields = _patchable_fields(current.DESCRIPTOR)
    if not all(key in fields for key in patch):
        return convert.from_dict(
            kind, patches.apply(patches.MERGE, convert.to_dict(current), patch, kind), unknown
        )
    present = [key for key in fields if key in patch and current.HasField(fields[key])]
    absent = [key for key in patch if key not in present]
    out = copy_of(current)
    for key in (*present, *absent):
        name = fields[key]
        value = patch[key]
        if value is None:  # null removes the field
            out.ClearField(name)
            continue
        strings = _string_fields(getattr(current, name).DESCRIPTOR)
        if (
            isinstance(value, dict)
            and value
            and all(k in strings and isinstance(v, str) for k, v in value.items())
        ):
            # Strings set, nothing else (a status PATCH's metadata.resourceVersion): what
            # the round trip would give, without it.
            child = getattr(out, name)
            for k, v in value.items():
                setattr(child, strings[k], v)
            child.SetInParent()
            continue
        before = convert.message_to_dict(getattr(current, name)) if key in present else None
        out.ClearField(name)
        child = getattr(out, name)
        convert.fill_message(child, convert.merge_patch(before, value), key, unknown)
        child.SetInParent()
    if unknown is not None:
        unknown.check()
    return out
