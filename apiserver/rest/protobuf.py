"""Request bodies in Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), for
the few types kubectl's typed clients send: Namespace and ConfigMap (`kubectl create`),
Eviction (`kubectl drain`) and DeleteOptions. kubectl does not fall back to JSON on a 415, so
these are read here into upstream's JSON shape; anything else is still a 415.

The envelope is the magic `k8s\\0` then a runtime.Unknown{typeMeta{apiVersion, kind}, raw};
`raw` is the object in the field numbers of k8s.io/api's generated.proto.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kemu.machinery.errors import BadRequest

CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"
_MAGIC: Final = b"k8s\x00"

Fields = dict[int, list[Any]]


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data):
            raise BadRequest("the protobuf body is truncated")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def fields(data: bytes) -> Fields:
    """Field number → values (ints for varints, bytes for length-delimited)."""
    out: Fields = {}
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value: Any
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise BadRequest(f"unsupported protobuf wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _str(f: Fields, n: int) -> str | None:
    return f[n][-1].decode() if n in f else None


def _map(f: Fields, n: int) -> dict[str, str]:
    out = {}
    for entry in f.get(n, []):
        kv = fields(entry)
        out[_str(kv, 1) or ""] = _str(kv, 2) or ""
    return out


def _set(out: dict[str, Any], key: str, value: Any) -> None:
    if value not in (None, "", {}, []):
        out[key] = value


def object_meta(data: bytes) -> dict[str, Any]:
    f = fields(data)
    out: dict[str, Any] = {}
    for n, key in ((1, "name"), (2, "generateName"), (3, "namespace"), (5, "uid")):
        _set(out, key, _str(f, n))
    _set(out, "resourceVersion", _str(f, 6))
    _set(out, "labels", _map(f, 11))
    _set(out, "annotations", _map(f, 12))
    _set(out, "finalizers", [v.decode() for v in f.get(14, [])])
    return out


def delete_options(data: bytes) -> dict[str, Any]:
    f = fields(data)
    out: dict[str, Any] = {}
    if 1 in f:
        grace = f[1][-1]
        out["gracePeriodSeconds"] = grace - (1 << 64) if grace >= 1 << 63 else grace
    if 2 in f:
        pre = fields(f[2][-1])
        out["preconditions"] = {
            k: v for k, v in (("uid", _str(pre, 1)), ("resourceVersion", _str(pre, 2))) if v
        }
    if 3 in f:
        out["orphanDependents"] = bool(f[3][-1])
    _set(out, "propagationPolicy", _str(f, 4))
    _set(out, "dryRun", [v.decode() for v in f.get(5, [])])
    return out


def _namespace(f: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if 2 in f:
        spec = fields(f[2][-1])
        _set(out, "spec", {"finalizers": [v.decode() for v in spec.get(1, [])]})
    return out


def _config_map(f: Fields) -> dict[str, Any]:
    out: dict[str, Any] = {}
    _set(out, "data", _map(f, 2))
    if 4 in f:
        out["immutable"] = bool(f[4][-1])
    return out


def _eviction(f: Fields) -> dict[str, Any]:
    return {"deleteOptions": delete_options(f[2][-1])} if 2 in f else {}


_TYPES: Final[dict[tuple[str, str], Callable[[Fields], dict[str, Any]]]] = {
    ("v1", "Namespace"): _namespace,
    ("v1", "ConfigMap"): _config_map,
    ("policy/v1", "Eviction"): _eviction,
    ("v1", "DeleteOptions"): lambda f: {},
    ("meta.k8s.io/v1", "DeleteOptions"): lambda f: {},
}


def decode(body: bytes) -> dict[str, Any] | None:
    """The object as upstream's JSON, or None for a type this module does not read."""
    if not body.startswith(_MAGIC):
        raise BadRequest("the protobuf body lacks the k8s envelope")
    unknown = fields(body[len(_MAGIC) :])
    type_meta = fields(unknown[1][-1]) if 1 in unknown else {}
    api_version, kind = _str(type_meta, 1) or "", _str(type_meta, 2) or ""
    reader = _TYPES.get((api_version, kind))
    if reader is None:
        return None
    raw = unknown[2][-1] if 2 in unknown else b""
    f = fields(raw)
    if kind == "DeleteOptions":
        return {"kind": kind, "apiVersion": api_version, **delete_options(raw)}
    out: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    if 1 in f:
        out["metadata"] = object_meta(f[1][-1])
    out.update(reader(f))
    return out
