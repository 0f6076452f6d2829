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
import json
import struct
from typing import Any, Final

from google.protobuf.timestamp_pb2 import Timestamp

from apiserver.endpoints.rest.protobuf_schema import SCHEMA, Schema, schema_of
from kemu.machinery.convert import format_time
from kemu.machinery.errors import BadRequest
from kemu.machinery.kinds import KINDS

CONTENT_TYPE: Final = "application/vnd.kubernetes.protobuf"
_MAGIC: Final = b"k8s\x00"

Fields = dict[int, list[Any]]


class _Fixed(bytes):
    """A fixed64 or fixed32 value (wire types 1 and 5), told apart from length-delimited
    bytes so that a field sent with the wrong wire type is refused, not misread."""


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        if i >= len(data):
            raise BadRequest("the protobuf body is truncated")
        if shift > 63:
            raise BadRequest("the protobuf body has a varint longer than 64 bits")
        b = data[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value & ((1 << 64) - 1), i
        shift += 7


def _take(data: bytes, i: int, size: int) -> tuple[bytes, int]:
    if size > len(data) - i:
        raise BadRequest("the protobuf body is truncated")
    return data[i : i + size], i + size


def fields(data: bytes) -> Fields:
    """Field number → values (ints for varints, bytes for length-delimited, _Fixed for the
    fixed-size wire types); BadRequest for a truncated body or an unknown wire type."""
    out: Fields = {}
    i = 0
    while i < len(data):
        tag, i = _varint(data, i)
        number, wire = tag >> 3, tag & 7
        value: Any
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = _take(data, i, size)
        elif wire in (1, 5):
            raw, i = _take(data, i, 8 if wire == 1 else 4)
            value = _Fixed(raw)
        else:
            raise BadRequest(f"the protobuf body has an unsupported wire type {wire}")
        if number == 0:
            raise BadRequest("the protobuf body has a field number 0")
        out.setdefault(number, []).append(value)
    return out


def _bytes(value: Any, where: str) -> bytes:
    if isinstance(value, bytes) and not isinstance(value, _Fixed):
        return value
    raise BadRequest(f"the protobuf body has {where} of the wrong wire type")


def _varint_value(value: Any, where: str) -> int:
    if isinstance(value, int):
        return value
    raise BadRequest(f"the protobuf body has {where} of the wrong wire type")


def _utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest(f"the protobuf body has {where} that is not valid UTF-8") from None


def _str(f: Fields, n: int, where: str) -> str | None:
    return _utf8(_bytes(f[n][-1], where), where) if n in f else None


def _int(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value  # int32/int64 are two's complement


def _value(typ: str, raw: Any, where: str, schema: Schema) -> Any:
    if typ == "int":
        return _int(_varint_value(raw, where))
    if typ == "bool":
        return bool(_varint_value(raw, where))
    if typ == "double":
        if not isinstance(raw, _Fixed) or len(raw) != 8:
            raise BadRequest(f"the protobuf body has {where} of the wrong wire type")
        return struct.unpack("<d", raw)[0]
    data = _bytes(raw, where)
    if typ == "string":
        return _utf8(data, where)
    if typ == "bytes":
        return base64.b64encode(data).decode()
    if typ == "time":
        f = fields(data)
        seconds = _int(_varint_value(f.get(1, [0])[-1], where))
        nanos = _int(_varint_value(f.get(2, [0])[-1], where))
        if not -62135596800 <= seconds <= 253402300799 or not 0 <= nanos < 10**9:
            raise BadRequest(f"the protobuf body has {where} out of range")
        return format_time(Timestamp(seconds=seconds, nanos=nanos))
    if typ == "quantity":
        return _str(fields(data), 1, where) or ""
    if typ == "raw":  # runtime.RawExtension: the JSON text in field 1
        text = _str(fields(data), 1, where)
        if not text:
            return None
        try:
            return json.loads(text)
        except ValueError:
            raise BadRequest(f"the protobuf body has {where} that is not JSON") from None
    if typ == "int_or_string":
        f = fields(data)
        if _varint_value(f.get(1, [0])[-1], where) == 1:
            return _str(f, 3, where) or ""
        return _int(_varint_value(f.get(2, [0])[-1], where))
    return message(typ, data, schema)


def _repeated(typ: str, values: list[Any], where: str, schema: Schema) -> list[Any]:
    if typ != "int":
        return [_value(typ, v, where, schema) for v in values]
    out = []
    for v in values:  # packed (one length-delimited run of varints) or not
        if isinstance(v, bytes) and not isinstance(v, _Fixed):
            i = 0
            while i < len(v):
                n, i = _varint(v, i)
                out.append(_int(n))
        else:
            out.append(_value("int", v, where, schema))
    return out


def message(name: str, raw: bytes, schema: Schema = SCHEMA) -> dict[str, Any]:
    """One upstream message as its JSON object, in the numbers of `schema` (the group
    version's: protobuf_schema.schema_of); fields kemu does not have are dropped. A field of
    the wrong wire type, a truncated body or a string that is not UTF-8 is BadRequest naming
    the field."""
    numbers = schema[name]
    out: dict[str, Any] = {}
    for number, values in fields(raw).items():
        entry = numbers.get(number)
        if entry is None:
            continue
        json_name, typ = entry
        where = f"{name}.{json_name or typ.lstrip('~')}"
        if typ == "time" and values[-1] == b"":
            continue  # the zero time, as upstream's Time.Unmarshal reads an empty one: unset
        if typ.startswith("~"):
            out.update(message(typ[1:], _bytes(values[-1], where), schema))
        elif typ.startswith("[]"):
            out[json_name] = _repeated(typ[2:], values, where, schema)
        elif typ.startswith("map"):
            value_type = typ.partition("_")[2] or "string"
            entries = [fields(_bytes(v, where)) for v in values]
            out[json_name] = {
                _str(e, 1, where) or "": _value(value_type, e[2][-1], where, schema)
                if 2 in e
                else ""
                for e in entries
            }
        else:
            out[json_name] = _value(typ, values[-1], where, schema)
    return out


# the types kemu reads: its kinds (in every group version one is served as), the options of
# deletes and evictions, the reviews of `kubectl auth can-i`
_TYPES: Final[dict[tuple[str, str], str]] = {
    **{(k.api_version, k.kind): k.kind for k in KINDS},
    **{(v, k.kind): k.kind for k in KINDS for _, served in k.versions for v in served},
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): "SelfSubjectAccessReview",
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): "SelfSubjectRulesReview",
    ("authorization.k8s.io/v1", "SubjectAccessReview"): "SubjectAccessReview",
    ("authorization.k8s.io/v1", "LocalSubjectAccessReview"): "LocalSubjectAccessReview",
    **{
        (f"authentication.k8s.io/{v}", "SelfSubjectReview"): "SelfSubjectReview"
        for v in ("v1", "v1beta1", "v1alpha1")
    },
    ("policy/v1", "Eviction"): "Eviction",
    ("authentication.k8s.io/v1", "TokenRequest"): "TokenRequest",
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
    type_meta = fields(_bytes(unknown[1][-1], "typeMeta")) if 1 in unknown else {}
    api_version = _str(type_meta, 1, "typeMeta.apiVersion") or ""
    kind = _str(type_meta, 2, "typeMeta.kind") or ""
    name = _TYPES.get((api_version, kind))
    if name is None:
        return None
    raw = _bytes(unknown[2][-1], "raw") if 2 in unknown else b""
    return {"apiVersion": api_version, "kind": kind, **message(name, raw, schema_of(api_version))}
