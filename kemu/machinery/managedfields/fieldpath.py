"""Sets of field paths (structured-merge-diff fieldpath/set.go, element.go, serialize.go).

A path element is kept as its serialized form, which is also its FieldsV1 key: `f:<name>` a
struct field or map key, `k:{"name":"c"}` a list-map item by its keys (sorted by name),
`v:<json>` a set item by value, `i:<n>` an atomic list's index. A `FieldSet` is a trie: the
members (paths that end here) and the children (paths that go on).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

from kemu.machinery.jsonvalue import JSON, JSONObject

Path = tuple[str, ...]

_RANK: Final = {"f": 0, "k": 1, "v": 2, "i": 3}


def json_text(value: JSON) -> str:
    """A value as Go's encoding/json writes it (compact)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=True)


def field(name: str) -> str:
    return "f:" + name


def key(fields: dict[str, JSON]) -> str:
    return "k:" + json_text(dict(sorted(fields.items())))


def value(v: JSON) -> str:
    return "v:" + json_text(v)


def index(i: int) -> str:
    return f"i:{i}"


def _order(pe: str) -> tuple[int, str]:
    return (_RANK.get(pe[:1], 9), pe[2:])


def path_string(path: Path) -> str:
    """A path as upstream prints it in conflicts: `.spec.replicas`,
    `.spec.containers[name="nginx"].image`."""
    out = []
    for pe in path:
        kind, rest = pe[:1], pe[2:]
        if kind == "f":
            out.append("." + rest)
        elif kind == "k":
            fields = json.loads(rest)
            out.append("[" + ",".join(f"{k}={json_text(v)}" for k, v in fields.items()) + "]")
        elif kind == "v":
            out.append("[=" + rest + "]")
        else:
            out.append("[" + rest + "]")
    return "".join(out)


def fields_v1_text(s: FieldSet) -> str:
    """The FieldsV1 JSON of a set (compact, keys in upstream's order): to_fields_v1's JSON,
    written from each subtree's text, kept once computed (a shared subtree is written once)."""
    return s.fields_v1_text()


class FieldSet:
    """A set of paths: `members` end here, `children` go on (fieldpath.Set). A set is built
    (insert, child) and then only read: the operations share the subtrees they keep."""

    __slots__ = ("_text", "_v1", "children", "members")

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.children: dict[str, FieldSet] = {}
        self._v1: JSONObject | None = None  # to_fields_v1's, once asked (a set built is read)
        self._text: str | None = None  # fields_v1_text's, likewise

    @classmethod
    def of(cls, *paths: Path) -> FieldSet:
        s = cls()
        for p in paths:
            s.insert(p)
        return s

    def insert(self, path: Path) -> None:
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        if path:
            node.members.add(path[-1])

    def child(self, pe: str) -> FieldSet:
        c = self.children.get(pe)
        if c is None:
            c = self.children[pe] = FieldSet()
        return c

    def copy(self) -> FieldSet:
        s = FieldSet()
        s.members = set(self.members)
        s.children = {pe: c.copy() for pe, c in self.children.items()}
        return s

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def has(self, path: Path) -> bool:
        node = self
        for pe in path[:-1]:
            nxt = node.children.get(pe)
            if nxt is None:
                return False
            node = nxt
        return bool(path) and path[-1] in node.members

    def union(self, other: FieldSet) -> FieldSet:
        s = FieldSet()
        s.members = self.members | other.members
        for pe in self.children.keys() | other.children.keys():
            a, b = self.children.get(pe), other.children.get(pe)
            if a is not None and b is not None:
                s.children[pe] = a.union(b)
            else:
                one = a if a is not None else b
                assert one is not None
                s.children[pe] = one
        return s

    def intersection(self, other: FieldSet) -> FieldSet:
        s = FieldSet()
        s.members = self.members & other.members
        for pe in self.children.keys() & other.children.keys():
            c = self.children[pe].intersection(other.children[pe])
            if not c.empty():
                s.children[pe] = c
        return s

    def difference(self, other: FieldSet) -> FieldSet:
        """The paths of self not in other (a member of other removes that path only)."""
        s = FieldSet()
        s.members = self.members - other.members
        for pe, c in self.children.items():
            o = other.children.get(pe)
            d = c.difference(o) if o is not None else c
            if not d.empty():
                s.children[pe] = d
        return s

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """The paths of self with no prefix among other's members."""
        s = FieldSet()
        s.members = self.members - other.members
        for pe, c in self.children.items():
            if pe in other.members:
                continue
            o = other.children.get(pe)
            d = c.recursive_difference(o) if o is not None else c
            if not d.empty():
                s.children[pe] = d
        return s

    def paths(self, prefix: Path = ()) -> Iterator[Path]:
        for pe in sorted(self.members | set(self.children), key=_order):
            if pe in self.members:
                yield (*prefix, pe)
            c = self.children.get(pe)
            if c is not None:
                yield from c.paths((*prefix, pe))

    def leaves(self) -> FieldSet:
        """The members that have no children (fieldpath.Set.Leaves)."""
        s = FieldSet()
        for pe in self.members:
            c = self.children.get(pe)
            if c is None or c.empty():
                s.members.add(pe)
        for pe, c in self.children.items():
            lc = c.leaves()
            if not lc.empty():
                s.children[pe] = lc
        return s

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FieldSet):
            return NotImplemented
        return list(self.paths()) == list(other.paths())

    def __repr__(self) -> str:
        return f"FieldSet({json_text(self.to_fields_v1())})"

    # ------------------------------------------------------------ FieldsV1

    def to_fields_v1(self) -> JSONObject:
        """The FieldsV1 trie: a member with children carries "." (serialize.go). Kept once
        computed: a subtree shared by many sets (a template's spec) is written once."""
        if self._v1 is not None:
            return self._v1
        out: JSONObject = {}
        for pe in sorted(self.members | set(self.children), key=_order):
            c = self.children.get(pe)
            if c is None or c.empty():
                if pe in self.members:
                    out[pe] = {}
                continue
            inner = c.to_fields_v1()
            out[pe] = {".": {}, **inner} if pe in self.members else inner
        self._v1 = out
        return out

    def fields_v1_text(self) -> str:
        if self._text is not None:
            return self._text
        parts: list[str] = []
        for pe in sorted(self.members | set(self.children), key=_order):
            c = self.children.get(pe)
            inner = c.fields_v1_text() if c is not None else "{}"
            if inner == "{}":
                if pe in self.members:
                    parts.append(json.dumps(pe, ensure_ascii=False) + ":{}")
                continue
            if pe in self.members:
                inner = '{".":{},' + inner[1:]
            parts.append(json.dumps(pe, ensure_ascii=False) + ":" + inner)
        self._text = "{" + ",".join(parts) + "}"
        return self._text

    @classmethod
    def from_fields_v1(cls, trie: JSON) -> FieldSet:
        """A FieldsV1 trie read back; keys of an unknown type are skipped, as upstream."""
        s = cls()
        if not isinstance(trie, dict):
            raise ValueError("FieldsV1 must be a JSON object")
        for pe, sub in trie.items():
            if pe == "." or pe[:2] not in ("f:", "k:", "v:", "i:"):
                continue
            if not isinstance(sub, dict):
                raise ValueError(f"FieldsV1 {pe}: expected an object")
            if not sub:
                s.members.add(pe)
                continue
            if "." in sub:
                s.members.add(pe)
            c = cls.from_fields_v1(sub)
            if not c.empty():
                s.children[pe] = c
        return s
