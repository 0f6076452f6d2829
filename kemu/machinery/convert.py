"""Kubernetes-shaped JSON for kemu's protobuf objects, both ways.

`to_dict` prints an object as kubectl would (camelCase names, empty fields omitted, int64 as
numbers, times as RFC 3339, IntOrString as a bare number or string). `from_dict` reads a
manifest strictly: an unknown field or a value of the wrong type is an Invalid error that names
the field path (spec.containers[0].resources.requests.cpu). Numbers are accepted where a map
holds quantity strings (`cpu: 2` in YAML), as Kubernetes' Quantity does.

This is not a hot path: the scheduler and kubelets work on messages; the apiserver converts only
to apply a merge patch.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
import re
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from functools import cache
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp

from kemu.api.v1 import types_pb2
from kemu.machinery import openapi
from kemu.machinery.errors import BadRequest, Cause, Invalid
from kemu.machinery.jsonvalue import JSON, JSONObject
from kemu.machinery.kinds import Kind, kind_of

_TIMESTAMP: Final = "google.protobuf.Timestamp"
_INT_OR_STRING: Final = "kemu.api.v1.IntOrString"
_RAW_EXTENSION: Final = "kemu.api.v1.RawExtension"

_INT_TYPES: Final = frozenset(
    {
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_UINT32,
        FieldDescriptor.TYPE_UINT64,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SINT64,
    }
)
# Maps of quantities accept YAML numbers (`cpu: 2`) as Kubernetes' Quantity does; other maps
# of strings (labels, annotations, nodeSelector) do not.
_QUANTITY_MAPS: Final = frozenset(
    {"requests", "limits", "capacity", "allocatable", "overhead", "allocated_resources"}
)
# Scalar quantity fields (emptyDir.sizeLimit, resourceFieldRef.divisor) accept numbers too.
_QUANTITY_FIELDS: Final = frozenset({"size_limit", "divisor"})
_INT32_LIMIT: Final = 2**31
_INT64_LIMIT: Final = 2**63


@dataclass(frozen=True)
class _Field:
    fd: FieldDescriptor
    json_name: str
    repeated: bool
    is_map: bool
    message: Descriptor | None  # for message fields (and the value of a map)
    map_value: FieldDescriptor | None
    presence: bool


@cache
def _fields(desc: Descriptor) -> tuple[_Field, ...]:
    out = []
    for fd in desc.fields:
        entry = fd.message_type
        is_map = bool(entry is not None and entry.GetOptions().map_entry and fd.is_repeated)
        map_value = entry.fields_by_name["value"] if is_map and entry is not None else None
        message = (
            (map_value.message_type if map_value is not None else None)
            if is_map
            else fd.message_type
        )
        out.append(
            _Field(
                fd=fd,
                json_name=fd.json_name,
                repeated=fd.is_repeated and not is_map,
                is_map=is_map,
                message=message,
                map_value=map_value,
                presence=fd.has_presence,
            )
        )
    return tuple(out)


@cache
def _by_json_name(desc: Descriptor) -> dict[str, _Field]:
    return {f.json_name: f for f in _fields(desc)}


def element_type(desc: Descriptor, json_name: str) -> Descriptor | None:
    """The message type of a field's values, by its JSON name (of its elements for a list);
    None for scalars, maps and names the message does not have."""
    f = _by_json_name(desc).get(json_name)
    if f is None or f.is_map:
        return None
    return f.message


# ---------------------------------------------------------------- times


def timestamp(seconds: float) -> Timestamp:
    """A Timestamp from epoch seconds (a clock's `now()`)."""
    ts = Timestamp()
    ts.FromNanoseconds(int(seconds * 1e9))
    return ts


# upstream's metav1.MicroTime fields (the rest are metav1.Time)
MICRO_TIME_FIELDS: Final = frozenset(
    {("kemu.api.v1.LeaseSpec", "acquire_time"), ("kemu.api.v1.LeaseSpec", "renew_time")}
)


def format_time(ts: Timestamp, precision: str = "stored") -> str:
    """RFC 3339 in UTC. "stored": what is stored, no fraction when there is none, else
    microseconds, or nanoseconds when it has them (lossless: the registry's patch round trip
    must not change a time it was not asked to; a pod's startTime written by a hollow kubelet
    from a float clock has nanoseconds); "second": metav1.Time as upstream serializes it;
    "micro": metav1.MicroTime, always six digits; "milli": always three (kemu's clock)."""
    when = dt.datetime.fromtimestamp(ts.seconds, tz=dt.UTC)
    text = when.strftime("%Y-%m-%dT%H:%M:%S")
    if precision == "milli":
        return text + f".{ts.nanos // 1_000_000:03d}Z"
    if precision == "stored" and ts.nanos % 1000:
        text += f".{ts.nanos:09d}"
    elif precision == "micro" or (precision == "stored" and ts.nanos):
        text += f".{ts.nanos // 1000:06d}"
    return text + "Z"


_RFC3339: Final = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$"
)


def parse_time(text: str, path: str) -> Timestamp:
    m = _RFC3339.match(text)
    if m is None:
        raise Invalid.field(path, f'"{text}" is not an RFC 3339 time')
    fraction = m.group(7) or ""
    whole = text.replace(fraction, "", 1) if fraction else text
    try:
        when = dt.datetime.fromisoformat(whole.replace("z", "Z").replace("Z", "+00:00"))
    except ValueError as e:
        raise Invalid.field(path, f'"{text}" is not an RFC 3339 time') from e
    ts = Timestamp()
    ts.FromDatetime(when.astimezone(dt.UTC).replace(tzinfo=None))
    # (the fraction read here, to the nanosecond as Go's time.RFC3339Nano: datetime keeps
    # microseconds only; digits past the ninth are dropped)
    ts.nanos = int(fraction[1:10].ljust(9, "0")) if fraction else 0
    return ts


# ---------------------------------------------------------------- to JSON


def _scalar_out(value: str | int | float | bool | bytes) -> JSON:
    if isinstance(value, bytes):  # (a TYPE_BYTES field's value)
        return base64.b64encode(value).decode()  # []byte is base64 in Kubernetes JSON
    return value  # ints (int64 included) stay numbers, as in Kubernetes JSON


def _message_out(msg: Message, wire: bool, micro: bool = False) -> JSON:
    full = msg.DESCRIPTOR.full_name
    if full == _TIMESTAMP:
        assert isinstance(msg, Timestamp)
        return format_time(msg, ("micro" if micro else "second") if wire else "stored")
    if full == _INT_OR_STRING:
        which = msg.WhichOneof("value")
        if which is None:
            return None
        value: str | int = getattr(msg, which)
        return value
    if full == _RAW_EXTENSION:
        raw: str = getattr(msg, "raw")  # noqa: B009 (a message class known by name only)
        return json.loads(raw) if raw else None
    return message_to_dict(msg, wire=wire)


@cache
def _by_name(desc: Descriptor) -> dict[str, _Field]:
    return {f.fd.name: f for f in _fields(desc)}


def message_to_dict(msg: Message, *, wire: bool = False) -> JSONObject:
    """A message as a JSON-ready dict with Kubernetes field names, empty fields omitted.

    `wire`: as upstream serializes (the REST edge, kemuctl's -o json|yaml): times as metav1.Time
    (to the second) and MicroTime (to the microsecond), and the scalar fields upstream's Go
    structs have without omitempty written even when zero (openapi.always_written: the required
    fields of upstream's OpenAPI), and their struct-valued fields even when empty
    (openapi.empty_structs: `status: {loadBalancer: {}}`); without it times keep what is stored and only what is set is
    written, so that the registry's patch round trip loses nothing.

    ListFields yields only what is set (in field-number order, which is declaration order in
    kemu's protos), so the cost grows with what an object carries, not with how many fields
    its kind has: a pod without probes or volumes pays nothing for them.
    """
    out: JSONObject = {}
    fields = _by_name(msg.DESCRIPTOR)
    for fd, value in msg.ListFields():
        f = fields[fd.name]
        if f.is_map:
            if f.message is not None:
                out[f.json_name] = {k: _message_out(v, wire) for k, v in sorted(value.items())}
            elif f.map_value is not None and f.map_value.type == FieldDescriptor.TYPE_BYTES:
                out[f.json_name] = {k: _scalar_out(v) for k, v in sorted(value.items())}
            else:
                out[f.json_name] = dict(sorted(value.items()))
        elif f.repeated:
            if f.message is not None:
                out[f.json_name] = [_message_out(v, wire) for v in value]
            else:
                out[f.json_name] = list(value)
        elif f.message is not None:
            micro = (msg.DESCRIPTOR.full_name, fd.name) in MICRO_TIME_FIELDS
            rendered = _message_out(value, wire, micro)
            if rendered is not None:
                out[f.json_name] = rendered
        else:
            out[f.json_name] = _scalar_out(value)
    if wire:  # what upstream's encoder writes even when zero (Go fields without omitempty)
        for name, zero in openapi.always_written(msg.DESCRIPTOR):
            out.setdefault(name, zero)
        for sub in openapi.empty_structs(msg.DESCRIPTOR):  # and its struct values, even empty
            if sub.json_name not in out:  # (an empty JSON-held struct renders as None)
                empty = _message_out(getattr(msg, sub.name), wire)
                out[sub.json_name] = empty if empty is not None else {}
    return out


def to_dict(obj: Message, *, wire: bool = False) -> JSONObject:
    """An API object as Kubernetes prints it: apiVersion and kind first (`wire`: see
    message_to_dict)."""
    k = kind_of(obj)
    if isinstance(obj, types_pb2.CustomObject):
        return custom_to_dict(obj, wire=wire)
    return {"apiVersion": k.api_version, "kind": k.kind, **message_to_dict(obj, wire=wire)}


def custom_to_dict(obj: types_pb2.CustomObject, *, wire: bool = False) -> JSONObject:
    """A custom resource as its JSON: apiVersion, kind, metadata, then its content."""
    out: JSONObject = {"apiVersion": obj.api_version, "kind": obj.kind}
    out["metadata"] = message_to_dict(obj.metadata, wire=wire)
    content = json.loads(obj.content.raw) if obj.content.raw else {}
    if isinstance(content, dict):
        out.update({k: v for k, v in content.items() if k not in out})
    return out


def custom_from_dict(kind: Kind, body: JSONObject, unknown: UnknownFields | None) -> Message:
    """A custom resource from its JSON (apiVersion and kind already checked): metadata typed,
    the rest kept as its JSON (pruning and the schema are kemu.machinery.apiextensions')."""
    msg = types_pb2.CustomObject(api_version=kind.api_version, kind=kind.kind)
    meta = body.get("metadata")
    if meta is not None:
        fill_message(msg.metadata, meta, "metadata", unknown)
    rest = {k: v for k, v in body.items() if k != "metadata"}
    msg.content.raw = json.dumps(rest, separators=(",", ":"))
    return msg


# ---------------------------------------------------------------- from JSON


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _number_as_string(value: object) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    return None


def _scalar_in(
    fd: FieldDescriptor, value: object, path: str, lenient_str: bool = False
) -> str | bool | bytes | int | float:
    t = fd.type
    if t == FieldDescriptor.TYPE_STRING:
        if isinstance(value, str):
            return value
        if lenient_str:
            as_str = _number_as_string(value)
            if as_str is not None:
                return as_str
        raise Invalid.field(path, f"expected a string, got {_type_name(value)}")
    if t == FieldDescriptor.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        raise Invalid.field(path, f"expected a boolean, got {_type_name(value)}")
    if t == FieldDescriptor.TYPE_BYTES:
        if not isinstance(value, str):
            raise Invalid.field(path, f"expected a base64 string, got {_type_name(value)}")
        try:
            return base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raise Invalid.field(path, "illegal base64 data") from None
    if t in _INT_TYPES:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise Invalid.field(path, f"expected an integer, got {_type_name(value)}")
        limit = (
            _INT32_LIMIT
            if t
            in (
                FieldDescriptor.TYPE_INT32,
                FieldDescriptor.TYPE_SINT32,
                FieldDescriptor.TYPE_UINT32,
            )
            else _INT64_LIMIT
        )
        if not -limit <= value < limit:
            raise Invalid.field(path, f"{value} is out of range")
        return value
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise Invalid.field(path, f"expected a number, got {_type_name(value)}")
        return float(value)
    raise Invalid.field(path, "unsupported field type")


def _fill_special(msg: Message, value: object, path: str) -> bool:
    full = msg.DESCRIPTOR.full_name
    if full == _TIMESTAMP:
        if not isinstance(value, str):
            raise Invalid.field(path, f"expected an RFC 3339 time string, got {_type_name(value)}")
        msg.CopyFrom(parse_time(value, path))
        return True
    if full == _INT_OR_STRING:
        if isinstance(value, bool):
            raise Invalid.field(path, "expected an integer or a string, got boolean")
        if isinstance(value, int):
            if not -_INT32_LIMIT <= value < _INT32_LIMIT:
                raise Invalid.field(path, f"{value} is out of range")
            msg.int_val = value  # type: ignore[attr-defined]
        elif isinstance(value, str):
            msg.str_val = value  # type: ignore[attr-defined]
        else:
            raise Invalid.field(path, f"expected an integer or a string, got {_type_name(value)}")
        return True
    if full == _RAW_EXTENSION:  # any JSON value, kept as its compact text
        msg.raw = json.dumps(value, separators=(",", ":"))  # type: ignore[attr-defined]
        return True
    return False


@dataclass
class UnknownFields:
    """What `from_dict` does with fields its kind does not have (upstream's fieldValidation):
    without one they are Invalid; with one they are dropped and listed here, and `strict` makes
    them a BadRequest (Strict) once the whole object has been read."""

    strict: bool = False
    warn: bool = False  # for the caller: report what was dropped (fieldValidation Warn)
    found: list[str] = dataclass_field(default_factory=list)

    def check(self) -> None:
        if self.strict and self.found:
            raise BadRequest("strict decoding error: " + ", ".join(self.found))


def fill_message(
    msg: Message, data: object, path: str = "", unknown: UnknownFields | None = None
) -> None:
    """Fills `msg` from a JSON-like value (YAML's too: keys need not be strings); Invalid names
    the first bad field."""
    if _fill_special(msg, data, path or "<root>"):
        return
    if not isinstance(data, dict):
        raise Invalid.field(path or "<root>", f"expected an object, got {_type_name(data)}")
    fields = _by_json_name(msg.DESCRIPTOR)
    for key, value in data.items():
        sub = f"{path}.{key}" if path else str(key)
        f = fields.get(key) if isinstance(key, str) else None
        if f is None:
            if unknown is None:
                raise Invalid.field(sub, f'unknown field "{key}"')
            unknown.found.append(f'unknown field "{sub}"')
            continue
        if value is None:
            continue  # JSON null: leave the field unset, as Kubernetes does
        fd = f.fd
        target = getattr(msg, fd.name)
        if f.is_map:
            if not isinstance(value, dict):
                raise Invalid.field(sub, f"expected an object, got {_type_name(value)}")
            for mk, mv in value.items():
                mpath = f"{sub}.{mk}" if isinstance(mk, str) else f"{sub}[{mk!r}]"
                if not isinstance(mk, str):
                    raise Invalid.field(mpath, "map keys must be strings")
                if f.message is not None:
                    fill_message(target[mk], mv, mpath, unknown)
                else:
                    assert f.map_value is not None
                    target[mk] = _scalar_in(
                        f.map_value, mv, mpath, lenient_str=fd.name in _QUANTITY_MAPS
                    )
        elif f.repeated:
            if not isinstance(value, list):
                raise Invalid.field(sub, f"expected an array, got {_type_name(value)}")
            for i, item in enumerate(value):
                ipath = f"{sub}[{i}]"
                if f.message is not None:
                    fill_message(target.add(), item, ipath, unknown)
                else:
                    target.append(_scalar_in(fd, item, ipath))
        elif f.message is not None:
            child = getattr(msg, fd.name)
            fill_message(child, value, sub, unknown)
            child.SetInParent()
        else:
            setattr(
                msg, fd.name, _scalar_in(fd, value, sub, lenient_str=fd.name in _QUANTITY_FIELDS)
            )


def from_dict(kind: Kind, data: object, unknown: UnknownFields | None = None) -> Message:
    """Reads one object of `kind` from its Kubernetes JSON (apiVersion/kind are checked;
    unknown fields: see UnknownFields)."""
    if not isinstance(data, dict):
        raise Invalid.field("<root>", f"expected an object, got {_type_name(data)}")
    body = dict(data)
    given_kind = body.pop("kind", kind.kind)
    api_version = body.pop("apiVersion", kind.api_version)
    if given_kind != kind.kind:
        raise Invalid.field("kind", f'expected "{kind.kind}", got "{given_kind}"')
    if api_version != kind.api_version:
        raise Invalid(
            f'apiVersion: "{api_version}" does not serve kind {kind.kind} '
            f'(expected "{kind.api_version}")',
            [Cause("apiVersion", f"expected {kind.api_version}")],
        )
    if kind.custom:
        msg = custom_from_dict(kind, body, unknown)
    else:
        msg = kind.new()
        fill_message(msg, body, "", unknown)
    if unknown is not None:
        unknown.check()
    return msg


# ---------------------------------------------------------------- merge patch


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """RFC 7386 JSON merge patch: objects merge, null deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return patch
    result: JSONObject = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result
