"""The PATCH types of the Kubernetes API on an object's JSON: JSON merge patch (RFC 7386, in
`convert.merge_patch`), JSON patch (RFC 6902) and strategic merge patch.

Strategic merge patch merges lists that have a merge key element by element (containers by
name, conditions by type, ...) instead of replacing them, and understands the directives
kubectl sends (`$patch: delete|replace|merge`, `$setElementOrder/<list>`, `$retainKeys`,
`$deleteFromPrimitiveList/<list>`). The merge keys are upstream's, per field of each type
(the patchStrategy/patchMergeKey struct tags of k8s.io/api): the patch is walked with the kind's
message descriptor, so `ports` merges by containerPort in a Container and by port in a
ServiceSpec. A list without one is replaced, as upstream's atomic lists (tolerations, taints,
containerStatuses, readinessGates, ...).
"""

from __future__ import annotations

import copy
from typing import Final

from google.protobuf.descriptor import Descriptor

from kemu.machinery import openapi
from kemu.machinery.convert import element_type, merge_patch
from kemu.machinery.errors import BadRequest, Invalid
from kemu.machinery.jsonvalue import JSON as JSONValue  # (JSON: the patch type below)
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.kinds import Kind

MERGE = "application/merge-patch+json"
JSON = "application/json-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
PATCH_TYPES: Final = (MERGE, JSON, STRATEGIC)


def _list_property(schema: Descriptor | None, name: str) -> openapi.Property | None:
    """Upstream's OpenAPI property of a field of one of kemu's messages (kemu.machinery.openapi:
    x-kubernetes-patch-strategy and -patch-merge-key, upstream's patchStrategy and
    patchMergeKey struct tags)."""
    definition = None if schema is None else openapi.definition_of_message(schema)
    return None if definition is None else definition.properties.get(name)


def _merge_key(schema: Descriptor | None, name: str) -> str | None:
    """The key a list with patchStrategy merge merges by (ownerReferences: uid, containers:
    name, a container's ports: containerPort); None for a list replaced whole."""
    prop = _list_property(schema, name)
    if prop is None or "merge" not in prop.patch_strategy.split(","):
        return None
    return prop.patch_merge_key or None


def _merges_scalars(schema: Descriptor | None, name: str) -> bool:
    """A list of scalars upstream merges (patchStrategy merge without a key: finalizers)."""
    prop = _list_property(schema, name)
    return (
        prop is not None and "merge" in prop.patch_strategy.split(",") and not prop.patch_merge_key
    )


def _child(schema: Descriptor | None, name: str) -> Descriptor | None:
    return None if schema is None else element_type(schema, name)


def apply(patch_type: str, target: JSONObject, patch: JSONValue, kind: Kind) -> JSONValue:
    """`patch` applied to `target`, the JSON of an object of `kind`."""
    if patch_type == MERGE:
        if not isinstance(patch, dict):
            raise BadRequest("a merge patch must be a JSON object")
        return merge_patch(target, patch)
    if patch_type == JSON:
        return json_patch(target, patch)
    if patch_type == STRATEGIC:
        if not isinstance(patch, dict):
            raise BadRequest("a strategic merge patch must be a JSON object")
        schema: Descriptor = kind.message.DESCRIPTOR  # type: ignore[assignment]  # upb's type
        return strategic_merge(target, patch, schema)
    raise BadRequest(f"the patch type {patch_type!r} is not supported")


# ---------------------------------------------------------------- JSON patch


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _split(path: JSONValue) -> tuple[str, list[str]]:
    """The pointer, known to be a string, and its tokens."""
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise BadRequest(f"invalid JSON pointer {path!r}")
    return path, [_unescape(t) for t in path.split("/")[1:]] if path else []


def _index(container: JSONArray, token: str, *, for_add: bool) -> int:
    if for_add and token == "-":
        return len(container)
    try:
        i = int(token)
    except ValueError:
        raise Invalid.field(token, "not an array index") from None
    limit = len(container) + (1 if for_add else 0)
    if not 0 <= i < limit:
        raise Invalid.field(token, f"array index {i} out of range")
    return i


def _parent(doc: JSONValue, tokens: list[str], path: str) -> JSONValue:
    node = doc
    for t in tokens[:-1]:
        if isinstance(node, dict):
            if t not in node:
                raise Invalid.field(path, "doc is missing path")
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, for_add=False)]
        else:
            raise Invalid.field(path, "doc is missing path")
    return node


def _get(doc: JSONValue, pointer: JSONValue) -> JSONValue:
    node = doc
    path, tokens = _split(pointer)
    for t in tokens:
        if isinstance(node, dict) and t in node:
            node = node[t]
        elif isinstance(node, list):
            node = node[_index(node, t, for_add=False)]
        else:
            raise Invalid.field(path, "doc is missing path")
    return node


def _remove(doc: JSONValue, pointer: JSONValue) -> JSONValue:
    path, tokens = _split(pointer)
    if not tokens:
        raise Invalid.field(path, "cannot remove the root")
    parent = _parent(doc, tokens, path)
    if isinstance(parent, dict):
        if tokens[-1] not in parent:
            raise Invalid.field(path, "doc is missing path")
        return parent.pop(tokens[-1])
    if isinstance(parent, list):
        return parent.pop(_index(parent, tokens[-1], for_add=False))
    raise Invalid.field(path, "doc is missing path")


def _add(doc: JSONValue, pointer: JSONValue, value: JSONValue, *, replace: bool) -> JSONValue:
    path, tokens = _split(pointer)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise Invalid.field(path, "doc is missing key")
        parent[last] = value
    elif isinstance(parent, list):
        i = _index(parent, last, for_add=not replace)
        if replace:
            parent[i] = value
        else:
            parent.insert(i, value)
    else:
        raise Invalid.field(path, "doc is missing path")
    return doc


def json_patch(target: JSONValue, ops: JSONValue) -> JSONValue:
    """RFC 6902 on a copy of `target`."""
    if not isinstance(ops, list):
        raise BadRequest("a JSON patch must be a JSON array of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op:
            raise BadRequest("a JSON patch operation must be an object with an op")
        kind, path = op["op"], op.get("path", "")
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(op.get("value")), replace=False)
        elif kind == "replace":
            doc = _add(doc, path, copy.deepcopy(op.get("value")), replace=True)
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "test":
            if _get(doc, path) != op.get("value"):
                raise Invalid.field(str(path), "testing value failed")
        elif kind == "move":
            value = _remove(doc, op.get("from", ""))
            doc = _add(doc, path, value, replace=False)
        elif kind == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op.get("from", ""))), replace=False)
        else:
            raise BadRequest(f'unexpected JSON patch operation "{kind}"')
    return doc


# ---------------------------------------------------------------- strategic merge patch

_ORDER: Final = "$setElementOrder/"
_DELETE_PRIMITIVE: Final = "$deleteFromPrimitiveList/"


def strategic_merge(target: JSONValue, patch: JSONObject, schema: Descriptor | None) -> JSONObject:
    return _merge_map(target, patch, schema)


def _merge_map(target: JSONValue, patch: JSONObject, schema: Descriptor | None) -> JSONObject:
    """`schema`: the message type of `target` (None inside maps: no lists to merge there); a
    `target` that is not an object merges as an empty one."""
    directive = patch.get("$patch")
    if directive == "delete":
        return {}
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = dict(target) if isinstance(target, dict) else {}
    retain = patch.get("$retainKeys")
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    orders: dict[str, JSONArray] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith(_ORDER):
            if isinstance(value, list):
                orders[key[len(_ORDER) :]] = value
            continue
        if key.startswith(_DELETE_PRIMITIVE):
            name = key[len(_DELETE_PRIMITIVE) :]
            current = result.get(name)
            if isinstance(current, list) and isinstance(value, list):
                result[name] = [v for v in current if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = _merge_map(result.get(key), value, _child(schema, key))
        elif isinstance(value, list):
            result[key] = _merge_list(schema, key, result.get(key), value)
        else:
            result[key] = value
    for name, order in orders.items():
        items = result.get(name)
        if isinstance(items, list):
            result[name] = _ordered(_merge_key(schema, name), items, order)
    return result


def _merge_list(
    schema: Descriptor | None, name: str, current: JSONValue, patch: JSONArray
) -> JSONArray:
    key = _merge_key(schema, name)
    element = _child(schema, name)
    if not isinstance(current, list):
        current = []
    if key is None:
        if _merges_scalars(schema, name):
            return [*current, *(v for v in patch if v not in current)]
        if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
            return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
        return list(patch)
    if any(isinstance(p, dict) and p.get("$patch") == "replace" for p in patch):
        return [p for p in patch if not (isinstance(p, dict) and "$patch" in p)]
    result = [copy.deepcopy(c) for c in current]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise Invalid.field(name, f"does not contain declared merge key: {key}")
        at = next(
            (i for i, c in enumerate(result) if isinstance(c, dict) and c.get(key) == item[key]),
            None,
        )
        if item.get("$patch") == "delete":
            if at is not None:
                result.pop(at)
            continue
        if at is None:
            result.append(_merge_map({}, item, element))
        else:
            result[at] = _merge_map(result[at], item, element)
    return result


def _ordered(key: str | None, items: JSONArray, order: JSONArray) -> JSONArray:
    def ident(v: JSONValue) -> JSONValue:
        if key is not None and isinstance(v, dict):
            return v.get(key)
        return v

    wanted = [ident(o) for o in order]
    rank: dict[JSONValue, int] = {
        w: i for i, w in enumerate(wanted) if not isinstance(w, dict | list)
    }
    known = [v for v in items if ident(v) in rank]
    rest = [v for v in items if ident(v) not in rank]
    known.sort(key=lambda v: rank[ident(v)])
    return known + rest
