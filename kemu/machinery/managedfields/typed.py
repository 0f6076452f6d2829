"""Objects (JSON) read with their type (structured-merge-diff typed/): the set of fields an
object sets (tofieldset.go), the comparison of two objects (compare.go), the merge of an applied
configuration into a live object (merge.go) and the removal of a set of fields (remove.go)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, TypeAlias

from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.managedfields import fieldpath as fp
from kemu.machinery.managedfields.fieldpath import FieldSet, Path
from kemu.machinery.managedfields.schema import (
    ASSOCIATIVE_MAP,
    LIST,
    MAP,
    SCALAR,
    SET,
    Node,
)


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


ABSENT: Final = _Absent()
"""A value not there (as opposed to JSON null)."""

Value: TypeAlias = "JSON | _Absent"


class InvalidValue(ValueError):
    """An object its type refuses (a list-map item without its keys, a set of objects)."""


def value_kind(node: Node, v: Value) -> str:
    """The node's kind, a deduced one from the value."""
    if node.kind != "deduced":
        return node.kind
    if isinstance(v, dict):
        return MAP
    if isinstance(v, list):
        return LIST  # deduced lists are atomic (list_type of a deduced node: ATOMIC)
    return SCALAR


def is_atomic(node: Node, kind: str) -> bool:
    """A value of `kind` there is one leaf: a scalar, an atomic map or list (a deduced list)."""
    if kind == MAP:
        return node.atomic
    if kind == LIST:
        return node.kind == "deduced" or node.list_type not in (SET, ASSOCIATIVE_MAP)
    return True


def item_element(node: Node, item: JSON) -> str:
    """A granular list item's path element (typed/helpers.go listItemToPathElement)."""
    if node.list_type == ASSOCIATIVE_MAP and node.keys:
        if not isinstance(item, dict):
            raise InvalidValue("associative list with keys may not have non-map elements")
        fields: dict[str, JSON] = {}
        for k in node.keys:
            if k in item:
                fields[k] = item[k]
            else:
                default = Node.key_default(k)
                if default is not None:
                    fields[k] = default
        if not fields:
            raise InvalidValue(
                "associative list with keys has an element that omits all key fields "
                f"{list(node.keys)!r}"
            )
        return fp.key(fields)
    if isinstance(item, dict | list) or item is None:
        raise InvalidValue("associative list without keys has an element that's a map type")
    return fp.value(item)


# ---------------------------------------------------------------- ToFieldSet


def to_field_set(obj: JSON, node: Node) -> FieldSet:
    """The fields `obj` sets: scalars and atomic values as members, list items always, map
    keys when null, empty or not a struct's field (tofieldset.go)."""
    out = FieldSet()
    _collect(obj, node, out)
    return out


def _collect(v: JSON, node: Node, s: FieldSet) -> bool:
    """Adds v's fields under `s`; True when v itself is a leaf (its parent makes it a member)."""
    kind = value_kind(node, v)
    if is_atomic(node, kind):
        return True
    if kind == LIST:
        if not isinstance(v, list):
            return False
        elem = node.item()
        for item in v:
            pe = item_element(node, item)
            c = s.child(pe)
            _collect(item, elem, c)
            s.members.add(pe)
            if c.empty():
                del s.children[pe]
        return False
    if not isinstance(v, dict):
        return False
    fields = node.fields()
    for k, val in v.items():
        pe = fp.field(k)
        c = s.child(pe)
        leaf = _collect(val, node.child(k), c)
        if leaf or val is None or val == {} or k not in fields:
            s.members.add(pe)
        if c.empty():
            del s.children[pe]
    return False


# ---------------------------------------------------------------- every path


def all_paths(obj: JSON, node: Node) -> FieldSet:
    """Every path of `obj` as a member (what compare reports as added against nothing):
    each map key and list item, and the leaves; an atomic value is one member."""
    out = FieldSet()
    add_all(obj, node, out)
    return out


def add_all(v: JSON, node: Node, s: FieldSet) -> None:
    """Adds every path of `v` under `s` (all_paths' walk)."""
    kind = value_kind(node, v)
    if is_atomic(node, kind):
        return
    if kind == MAP and isinstance(v, dict):
        members = s.members
        for k, val in v.items():
            pe = "f:" + k
            members.add(pe)
            if isinstance(val, dict | list) and val:
                c = FieldSet()
                add_all(val, node.child(k), c)
                if c.members or c.children:
                    s.children[pe] = c
    elif kind == LIST and isinstance(v, list):
        elem = node.item()
        for item in v:
            pe = item_element(node, item)
            s.members.add(pe)
            if isinstance(item, dict | list) and item:
                c = FieldSet()
                add_all(item, elem, c)
                if c.members or c.children:
                    s.children[pe] = c


# ---------------------------------------------------------------- Compare


@dataclass
class Comparison:
    added: FieldSet
    modified: FieldSet
    removed: FieldSet

    def same(self) -> bool:
        return self.added.empty() and self.modified.empty() and self.removed.empty()


def compare(old: Value, new: Value, node: Node) -> Comparison:
    """What changed from `old` to `new`, field by field (compare.go): a new or gone leaf,
    struct, list item or map key is added or removed; a changed leaf modified."""
    c = Comparison(FieldSet(), FieldSet(), FieldSet())
    _compare(old, new, node, (), c)
    return c


def _empty(v: Value) -> bool:
    return isinstance(v, _Absent) or v is None or v == {} or v == []


def _compare(lhs: Value, rhs: Value, node: Node, path: Path, c: Comparison) -> None:
    if lhs == rhs:  # (equal values differ nowhere: the common case, compared at C speed)
        return
    kind = value_kind(node, rhs if not isinstance(rhs, _Absent) else lhs)
    leaf = is_atomic(node, kind) or (kind in (MAP, LIST) and _empty(lhs) and _empty(rhs))
    if leaf:
        if path:
            if isinstance(lhs, _Absent):
                c.added.insert(path)
            elif isinstance(rhs, _Absent):
                c.removed.insert(path)
            elif lhs != rhs:
                c.modified.insert(path)
        return
    if kind == MAP:
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        for k in lm.keys() | rm.keys():
            _compare(lm.get(k, ABSENT), rm.get(k, ABSENT), node.child(k), (*path, fp.field(k)), c)
    else:
        _compare_items(lhs, rhs, node, path, c)
    if path:
        if isinstance(lhs, _Absent):
            c.added.insert(path)
        elif isinstance(rhs, _Absent):
            c.removed.insert(path)


def _index(node: Node, v: Value) -> dict[str, list[JSON]]:
    out: dict[str, list[JSON]] = {}
    if isinstance(v, list):
        for item in v:
            out.setdefault(item_element(node, item), []).append(item)
    return out


def _compare_items(lhs: Value, rhs: Value, node: Node, path: Path, c: Comparison) -> None:
    left, right = _index(node, lhs), _index(node, rhs)
    elem = node.item()
    for pe in [*left, *(pe for pe in right if pe not in left)]:
        ls, rs = left.get(pe, []), right.get(pe, [])
        here = (*path, pe)
        if len(ls) <= 1 and len(rs) <= 1:
            _compare(ls[0] if ls else ABSENT, rs[0] if rs else ABSENT, elem, here, c)
        elif len(ls) >= 2 and len(rs) >= 2:
            if ls != rs:
                c.modified.insert(here)
        elif len(ls) >= 2:
            if rs:
                _compare(ABSENT, rs[0], elem, here, c)
            c.removed.insert(here)
        else:
            if ls:
                _compare(ls[0], ABSENT, elem, here, c)
            c.added.insert(here)


# ---------------------------------------------------------------- Merge


def merge(lhs: Value, rhs: Value, node: Node) -> JSON:
    """`rhs` (an applied configuration) merged into `lhs` (merge.go): maps by key, list-map
    items by their keys and set items by value (in rhs's order where they are shared), rhs's
    value for a leaf or an atomic value."""
    if isinstance(rhs, _Absent):
        assert not isinstance(lhs, _Absent)
        return lhs
    if isinstance(lhs, _Absent) or rhs is None:
        return rhs
    kind = value_kind(node, rhs)
    if is_atomic(node, kind):
        return rhs
    if kind == MAP:
        if not isinstance(lhs, dict) or not isinstance(rhs, dict):
            return rhs
        out: JSONObject = dict(lhs)
        for k, rv in rhs.items():
            out[k] = merge(lhs.get(k, ABSENT), rv, node.child(k))
        return out
    if not isinstance(lhs, list) or not isinstance(rhs, list):
        return rhs
    return _merge_items(lhs, rhs, node)


def _merge_items(lhs: list[JSON], rhs: list[JSON], node: Node) -> list[JSON]:
    elem = node.item()
    l_pes = [item_element(node, i) for i in lhs]
    r_pes = [item_element(node, i) for i in rhs]
    l_by = dict(zip(l_pes, lhs, strict=True))
    r_by = dict(zip(r_pes, rhs, strict=True))
    shared = [pe for pe in r_pes if pe in l_by]
    out: list[JSON] = []
    merged: set[str] = set()
    li = ri = 0
    while li < len(l_pes) or ri < len(r_pes):
        if li < len(l_pes) and ri < len(r_pes):
            pe = l_pes[li]
            if pe == r_pes[ri]:
                if pe not in merged:
                    out.append(merge(l_by[pe], r_by[pe], elem))
                    merged.add(pe)
                li += 1
                ri += 1
                if shared and shared[0] == pe:
                    shared.pop(0)
                continue
            if pe in r_by and shared and shared[0] != pe:
                li += 1
                continue
        if li < len(l_pes):
            pe = l_pes[li]
            if pe not in r_by:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged:
                li += 1
                continue
        if ri < len(r_pes):
            pe = r_pes[ri]
            if pe not in merged:
                out.append(merge(l_by.get(pe, ABSENT), r_by[pe], elem))
                merged.add(pe)
            ri += 1
            if shared and shared[0] == pe:
                shared.pop(0)
    return out


# ---------------------------------------------------------------- RemoveItems


def remove_items(v: JSON, remove: FieldSet, node: Node) -> JSON:
    """`v` without the fields and items whose paths are members of `remove` (remove.go); a
    map or list left empty by it becomes null."""
    kind = value_kind(node, v)
    if is_atomic(node, kind):
        return v
    if kind == MAP and isinstance(v, dict) and v:
        out: JSONObject = {}
        for k, val in v.items():
            pe = fp.field(k)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            out[k] = remove_items(val, sub, node.child(k)) if sub is not None else val
        return out or None
    if kind == LIST and isinstance(v, list) and v:
        items: list[JSON] = []
        elem = node.item()
        for item in v:
            pe = item_element(node, item)
            if pe in remove.members:
                continue
            sub = remove.children.get(pe)
            items.append(remove_items(item, sub, elem) if sub is not None else item)
        return items or None
    return v


def ensure_named_fields_are_members(s: FieldSet, node: Node) -> FieldSet:
    """`s` with every struct field it goes through made a member too (set.go
    EnsureNamedFieldsAreMembers): removing it then removes the whole field."""
    out = FieldSet()
    out.members = set(s.members)
    fields = node.fields() if node.kind == MAP else {}
    for pe, c in s.children.items():
        if pe.startswith("f:") and pe[2:] in fields:
            out.members.add(pe)
        if pe.startswith("f:"):
            sub = node.child(pe[2:])
        elif pe.startswith("k:") and node.kind == LIST:
            sub = node.item()
        else:
            sub = Node("deduced")
        out.children[pe] = ensure_named_fields_are_members(c, sub)
    return out
