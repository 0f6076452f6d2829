"""A kind's schema as structured-merge-diff reads it (schema/elements.go): every value is a
scalar, a map (a struct with named fields and/or a map with an element type; granular or
atomic) or a list (atomic, a set of scalars, or a map of items by key fields); a value without
a schema is "deduced" (maps granular, lists atomic).

Built-in kinds read upstream's OpenAPI (kemu.machinery.openapi: x-kubernetes-list-type,
-list-map-keys, -map-type), custom resources their CRD's storage schema (upstream's
kube-openapi schemaconv and the apiextensions-apiserver's structural schema). Nodes are built
lazily and cached: a schema may be recursive (JSONSchemaProps).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Final

from kemu.machinery import openapi
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import Kind

SCALAR: Final = "scalar"
MAP: Final = "map"
LIST: Final = "list"
DEDUCED: Final = "deduced"

ATOMIC: Final = "atomic"
SET: Final = "set"
ASSOCIATIVE_MAP: Final = "map"

# A list-map key's default, which upstream's OpenAPI v3 carries (`default: "TCP"` on a port's
# protocol) and the data kemu reads (OpenAPI v2) does not: an item that omits it has it.
_KEY_DEFAULTS: Final[Mapping[str, JSON]] = {"protocol": "TCP"}


@dataclass(eq=False)
class Node:
    """One type: `kind` SCALAR, MAP, LIST or DEDUCED; a map's `atomic`, its fields (a
    struct's, by name) and `element` (any other key's); a list's `list_type`, `keys` and
    `element`."""

    kind: str
    atomic: bool = False
    list_type: str = ATOMIC
    keys: tuple[str, ...] = ()
    _fields: Callable[[], Mapping[str, Node]] | None = None
    _element: Callable[[], Node | None] | None = None
    _cache: dict[str, object] = field(default_factory=dict)

    def fields(self) -> Mapping[str, Node]:
        got = self._cache.get("fields")
        if got is None:
            got = self._fields() if self._fields is not None else {}
            self._cache["fields"] = got
        assert isinstance(got, Mapping)
        return got

    def element(self) -> Node | None:
        if "element" not in self._cache:
            self._cache["element"] = self._element() if self._element is not None else None
        got = self._cache["element"]
        assert got is None or isinstance(got, Node)
        return got

    def child(self, name: str) -> Node:
        """The type of a map's key `name` (a struct field, else the element; deduced when
        the schema says nothing)."""
        if self.kind == DEDUCED:
            return DEDUCED_NODE
        f = self.fields().get(name)
        if f is not None:
            return f
        return self.element() or DEDUCED_NODE

    def item(self) -> Node:
        if self.kind == DEDUCED:
            return DEDUCED_NODE
        return self.element() or DEDUCED_NODE

    @staticmethod
    def key_default(name: str) -> JSON:
        return _KEY_DEFAULTS.get(name)


DEDUCED_NODE: Final = Node(DEDUCED)
SCALAR_NODE: Final = Node(SCALAR)


# ---------------------------------------------------------------- upstream's OpenAPI


class _OpenAPI:
    def __init__(self, minor: int) -> None:
        self._defs = openapi.definitions(minor)
        self._by_name: dict[str, Node] = {}

    def definition(self, name: str, atomic: bool = False) -> Node:
        cache_key = name + ("#atomic" if atomic else "")
        got = self._by_name.get(cache_key)
        if got is not None:
            return got
        d = self._defs.get(name)
        if d is None:
            node = DEDUCED_NODE
        elif d.type == "object" and d.properties:
            props = d.properties
            node = Node(
                MAP,
                atomic=atomic or d.map_type == ATOMIC,
                _fields=lambda: {n: self.property(p) for n, p in props.items()},
            )
        elif d.type == "object" or not d.type:
            node = DEDUCED_NODE
        else:
            node = SCALAR_NODE
        self._by_name[cache_key] = node
        return node

    def property(self, p: openapi.Property) -> Node:
        if p.ref:
            return self.definition(p.ref, atomic=p.map_type == ATOMIC)
        if p.type == "array":
            items = p.items
            return Node(
                LIST,
                list_type=p.list_type or ATOMIC,
                keys=p.list_map_keys,
                _element=lambda: self.property(items) if items is not None else None,
            )
        if p.type == "object":
            additional = p.additional
            if additional is None:
                return DEDUCED_NODE
            return Node(
                MAP,
                atomic=p.map_type == ATOMIC,
                _element=lambda: self.property(additional),
            )
        return SCALAR_NODE


@cache
def _openapi(minor: int) -> _OpenAPI:
    return _OpenAPI(minor)


def object_meta(minor: int = openapi.NEWEST_MINOR) -> Node:
    return _openapi(minor).definition("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")


def for_builtin(kind: str, api_version: str, minor: int = openapi.NEWEST_MINOR) -> Node:
    """A built-in kind's type; KeyError when upstream's OpenAPI has no such kind."""
    return _openapi(minor).definition(openapi.schema_for(kind, api_version, minor).name)


# ---------------------------------------------------------------- a CRD's schema


def from_json_schema(s: JSONObject, minor: int = openapi.NEWEST_MINOR) -> Node:
    """A structural schema's type (a custom resource's)."""
    if s.get("x-kubernetes-int-or-string") is True:
        return SCALAR_NODE
    t = s.get("type")
    if t == "array":
        items = s.get("items")
        list_type = s.get("x-kubernetes-list-type")
        keys = s.get("x-kubernetes-list-map-keys")
        return Node(
            LIST,
            list_type=list_type if isinstance(list_type, str) else ATOMIC,
            keys=tuple(k for k in keys if isinstance(k, str)) if isinstance(keys, list) else (),
            _element=lambda: from_json_schema(items, minor) if isinstance(items, dict) else None,
        )
    if t == "object" or "properties" in s:
        props = s.get("properties")
        additional = s.get("additionalProperties")
        embedded = s.get("x-kubernetes-embedded-resource") is True
        if not isinstance(props, dict) and not isinstance(additional, dict) and not embedded:
            return DEDUCED_NODE

        def fields() -> Mapping[str, Node]:
            out: dict[str, Node] = {}
            if embedded:
                out.update(apiVersion=SCALAR_NODE, kind=SCALAR_NODE, metadata=object_meta(minor))
            if isinstance(props, dict):
                for name, sub in props.items():
                    if isinstance(sub, dict):
                        out[name] = from_json_schema(sub, minor)
            return out

        def element() -> Node | None:
            if isinstance(additional, dict):
                return from_json_schema(additional, minor)
            if s.get("x-kubernetes-preserve-unknown-fields") is True:
                return DEDUCED_NODE
            return None

        return Node(
            MAP,
            atomic=s.get("x-kubernetes-map-type") == ATOMIC,
            _fields=fields,
            _element=element,
        )
    if t is None and s.get("x-kubernetes-preserve-unknown-fields") is True:
        return DEDUCED_NODE
    return SCALAR_NODE


def for_custom(schema: JSONObject | None, minor: int = openapi.NEWEST_MINOR) -> Node:
    """A custom resource's type: apiVersion, kind, metadata and its schema's properties."""
    body = from_json_schema(schema, minor) if schema is not None else DEDUCED_NODE

    def fields() -> Mapping[str, Node]:
        out: dict[str, Node] = dict(body.fields()) if body.kind == MAP else {}
        out.update(apiVersion=SCALAR_NODE, kind=SCALAR_NODE, metadata=object_meta(minor))
        return out

    def element() -> Node | None:
        return body.element() if body.kind == MAP else DEDUCED_NODE

    return Node(MAP, _fields=fields, _element=element)


def for_kind(kind: Kind, custom_schema: JSONObject | None = None, minor: int = 37) -> Node:
    """The type of `kind`'s objects as kemu serves them (its message's group version)."""
    if kind.custom:
        return for_custom(custom_schema, minor)
    try:
        return for_builtin(kind.kind, kind.api_version, minor)
    except KeyError:
        return for_custom(None, minor)
