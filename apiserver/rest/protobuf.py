"""Request bodies in Kubernetes' protobuf encoding (application/vnd.kubernetes.protobuf), which
kubectl's typed clients send (`kubectl create deployment|job|priorityclass|namespace|...`,
drain's evictions and DeleteOptions) and do not retry as JSON on a 415. They are read here into
upstream's JSON shape, with upstream's field numbers per message (protobuf_schema.py), and go
on as a JSON body would.

The envelope is the magic `k8s\\0` then a runtime.Unknown{typeMeta{apiVersion, kind}, raw};
`raw` is the object in the field numbers of k8s.io/api's generated.proto.
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Final

from google.protobuf.timestamp_pb2 import Timestamp

from apiserver.rest.protobuf_schema import SCHEMA
from kemu.machinery.convert import format_time
from kemu.machinery.errors import BadRequest
from kemu.machinery.kinds import KINDS

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


def _int(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # int32/int64 are two's complement


def _value(typ: str, raw: Any) -> Any:
    if typ == "string":
        return raw.decode()
    if typ == "int":
        return _int(raw)
    if typ == "bool":
        return bool(raw)
    if typ == "bytes":
        return base64.b64encode(raw).decode()
    if typ == "double":
        return struct.unpack("<d", raw)[0]
    if typ == "time":
        f = fields(raw)
        return format_time(
            Timestamp(seconds=_int(f.get(1, [0])[-1]), nanos=_int(f.get(2, [0])[-1]))
        )
    if typ == "quantity":
        return _str(fields(raw), 1) or ""
    if typ == "int_or_string":
        f = fields(raw)
        return _str(f, 3) or "" if f.get(1, [0])[-1] == 1 else _int(f.get(2, [0])[-1])
    return message(typ, raw)


def message(name: str, raw: bytes) -> dict[str, Any]:
    """One upstream message as its JSON object; fields kemu does not have are dropped."""
    schema = SCHEMA[name]
    out: dict[str, Any] = {}
    for number, values in fields(raw).items():
        entry = schema.get(number)
        if entry is None:
            continue
        json_name, typ = entry
        if typ.startswith("~"):
            out.update(message(typ[1:], values[-1]))
        elif typ.startswith("[]"):
            out[json_name] = [_value(typ[2:], v) for v in values]
        elif typ.startswith("map"):
            value_type = typ.partition("_")[2] or "string"
            entries = [fields(v) for v in values]
            out[json_name] = {
                _str(e, 1) or "": _value(value_type, e[2][-1]) if 2 in e else "" for e in entries
            }
        else:
            out[json_name] = _value(typ, values[-1])
    return out


# the types kemu reads: its kinds, and the options of deletes and evictions
_TYPES: Final[dict[tuple[str, str], str]] = {
    **{(k.api_version, k.kind): k.kind for k in KINDS},
    ("policy/v1", "Eviction"): "Eviction",
    ("v1", "DeleteOptions"): "DeleteOptions",
    ("meta.k8s.io/v1", "DeleteOptions"): "DeleteOptions",
}


def supported() -> list[str]:
    """What a 415 names as readable in protobuf."""
    return sorted(f"{api}/{kind}" for api, kind in _TYPES)


def decode(body: bytes) -> dict[str, Any] | None:
    """The object as upstream's JSON, or None for a type this module does not read."""
    if not body.startswith(_MAGIC):
        raise BadRequest("the protobuf body lacks the k8s envelope")
    unknown = fields(body[len(_MAGIC) :])
    type_meta = fields(unknown[1][-1]) if 1 in unknown else {}
    api_version, kind = _str(type_meta, 1) or "", _str(type_meta, 2) or ""
    name = _TYPES.get((api_version, kind))
    if name is None:
        return None
    raw = unknown[2][-1] if 2 in unknown else b""
    return {"apiVersion": api_version, "kind": kind, **message(name, raw)}
