"""Field sets read from kemu's protobuf messages directly, without their JSON: the same sets
`typed.all_paths` gives of `convert.to_dict(msg)` (tests hold them equal), at a fraction of the
cost, for the apiserver's hottest tracking path (every create: pods and events by thousands).

A field is in the JSON when protobuf lists it (`ListFields`: set scalars, present messages,
non-empty lists and maps), which is what `convert.message_to_dict` writes; Timestamps,
IntOrStrings and RawExtensions are leaves (a RawExtension's JSON walked as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Final

from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from kemu.machinery import convert
from kemu.machinery.jsonvalue import JSON
from kemu.machinery.managedfields.fieldpath import FieldSet
from kemu.machinery.managedfields.schema import ASSOCIATIVE_MAP, LIST, MAP, Node
from kemu.machinery.managedfields.typed import add_all, is_atomic, item_element, value_kind

_LEAF_MESSAGES: Final = frozenset({"google.protobuf.Timestamp", "kemu.api.v1.IntOrString"})
_RAW: Final = "kemu.api.v1.RawExtension"


@dataclass(frozen=True)
class _F:
    json_name: str
    kind: str  # "scalar", "message", "leaf", "raw", "map_scalar", "map_message", "list_scalar",
    # "list_message", "list_leaf"


@cache
def _fields(desc: Descriptor) -> Mapping[str, _F]:
    out: dict[str, _F] = {}
    for fd in desc.fields:
        entry = fd.message_type
        if entry is not None and entry.GetOptions().map_entry:
            value = entry.fields_by_name["value"]
            mk = "map_message" if value.message_type is not None else "map_scalar"
            out[fd.name] = _F(fd.json_name, mk)
            continue
        if entry is None:
            k = "scalar"
        elif entry.full_name in _LEAF_MESSAGES:
            k = "leaf"
        elif entry.full_name == _RAW:
            k = "raw"
        else:
            k = "message"
        if fd.is_repeated:
            k = "list_" + ("scalar" if k == "scalar" else "leaf" if k == "leaf" else "message")
        out[fd.name] = _F(fd.json_name, k)
    return out


_SHAPES: Final[dict[tuple[str, bytes], FieldSet]] = {}
"""The sets of specs already walked, by the spec's bytes: the pods of one template (a
controller's, a benchmark's) have the same spec, whose set is then a lookup. Field sets are
not changed once built, so one can be part of many."""
_SHAPES_MAX: Final = 512


def all_paths(msg: Message, node: Node) -> FieldSet:
    """typed.all_paths of the message's JSON (a top-level `spec` looked up by its bytes when
    an object with the same spec was walked before)."""
    out = FieldSet()
    spec = getattr(msg, "spec", None) if "spec" in msg.DESCRIPTOR.fields_by_name else None
    if not isinstance(spec, Message) or not msg.HasField("spec"):
        _walk(msg, node, out)
        return out
    _walk(msg, node, out, frozenset({"spec"}))
    key = (msg.DESCRIPTOR.full_name, spec.SerializeToString(deterministic=True))
    shape = _SHAPES.get(key)
    if shape is None:
        shape = FieldSet()
        _walk(spec, node.child("spec"), shape)
        if len(_SHAPES) >= _SHAPES_MAX:
            _SHAPES.clear()
        _SHAPES[key] = shape
    out.members.add("f:spec")
    if shape.members or shape.children:
        out.children["f:spec"] = shape
    return out


def _walk(msg: Message, node: Node, s: FieldSet, skip: frozenset[str] = frozenset()) -> None:
    fields = _fields(msg.DESCRIPTOR)
    members = s.members
    for fd, value in msg.ListFields():
        f = fields[fd.name]
        name = f.json_name
        if name in skip:
            continue
        pe = "f:" + name
        members.add(pe)
        k = f.kind
        if k in ("scalar", "leaf"):
            continue
        child = node.child(name)
        if k == "raw":
            raw = getattr(value, "raw")  # noqa: B009
            v: JSON = json.loads(raw) if raw else None
            if isinstance(v, dict | list) and v:
                c = FieldSet()
                add_all(v, child, c)
                if c.members or c.children:
                    s.children[pe] = c
            continue
        if k == "message":
            if child.kind == MAP and not child.atomic or child.kind == "deduced":
                c = FieldSet()
                _walk(value, child, c)
                if c.members or c.children:
                    s.children[pe] = c
            continue
        if k.startswith("map_"):
            if is_atomic(child, value_kind(child, {})):
                continue
            c = FieldSet()
            for key, item in value.items():
                ipe = "f:" + key
                c.members.add(ipe)
                if k == "map_message":
                    cc = FieldSet()
                    _walk(item, child.child(key), cc)
                    if cc.members or cc.children:
                        c.children[ipe] = cc
            s.children[pe] = c
            continue
        # a list
        if child.kind != LIST or is_atomic(child, LIST):
            continue
        c = FieldSet()
        elem = child.item()
        for item in value:
            if k == "list_message":
                ipe = _item_element(child, item)
                c.members.add(ipe)
                cc = FieldSet()
                _walk(item, elem, cc)
                if cc.members or cc.children:
                    c.children[ipe] = cc
            else:
                json_item = convert.message_to_dict(item) if k == "list_leaf" else item
                c.members.add(item_element(child, json_item))
        s.children[pe] = c


def _item_element(node: Node, item: Message) -> str:
    """A list-map item's path element from its key fields (their JSON values)."""
    if node.list_type != ASSOCIATIVE_MAP or not node.keys:
        return item_element(node, convert.message_to_dict(item))
    by_json = {f.json_name: (name, f) for name, f in _fields(item.DESCRIPTOR).items()}
    keys: dict[str, JSON] = {}
    for key in node.keys:
        found = by_json.get(key)
        if found is None:
            continue
        name, f = found
        if f.kind != "scalar":
            return item_element(node, convert.message_to_dict(item))
        fd = item.DESCRIPTOR.fields_by_name[name]
        value = getattr(item, name)
        present = item.HasField(name) if fd.has_presence else bool(value)
        if present:
            keys[key] = value
    return item_element(node, keys) if keys else item_element(node, convert.message_to_dict(item))
