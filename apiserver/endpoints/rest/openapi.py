"""OpenAPI v3 of the REST edge (/openapi/v3 and /openapi/v3/<group path>), generated from the
protobuf descriptors of kemu's kinds: what kubectl needs for `explain` (schemas tagged with
x-kubernetes-group-version-kind) and to know that the server validates fields itself (the
PATCH operations list the fieldValidation parameter)."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from apiserver.endpoints.rest import discovery, openapi_custom
from kemu.api.v1 import types_pb2
from kemu.machinery import patch as patches
from kemu.machinery import podgroups
from kemu.machinery.jsonvalue import JSONArray, JSONObject
from kemu.machinery.kinds import ALL_SERVED, KINDS, Kind, Served

_TIMESTAMP: Final = "google.protobuf.Timestamp"
_INT_OR_STRING: Final = "kemu.api.v1.IntOrString"
_INTS: Final = {
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_SINT32: "int32",
    FieldDescriptor.TYPE_UINT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_SINT64: "int64",
    FieldDescriptor.TYPE_UINT64: "int64",
}
_QUERY: Final = ("dryRun", "fieldManager", "fieldValidation", "force")


def _schema_name(desc: Descriptor) -> str:
    kind = _kind_by_message().get(desc.full_name)
    if kind is not None:
        group, version = discovery.group_version(kind)
        return f"io.k8s.api.{group or 'core'}.{version}.{kind.kind}"
    return desc.full_name


@cache
def _kind_by_message() -> dict[str, Kind]:
    return {k.message.DESCRIPTOR.full_name: k for k in KINDS}


def _ref(desc: Descriptor) -> JSONObject:
    return {"allOf": [{"$ref": f"#/components/schemas/{_schema_name(desc)}"}], "default": {}}


def _scalar(fd: FieldDescriptor) -> JSONObject:
    if fd.type in _INTS:
        return {"type": "integer", "format": _INTS[fd.type]}
    if fd.type == FieldDescriptor.TYPE_BOOL:
        return {"type": "boolean"}
    if fd.type in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return {"type": "number", "format": "double"}
    if fd.type == FieldDescriptor.TYPE_BYTES:
        return {"type": "string", "format": "byte"}
    return {"type": "string", "default": ""}


def _value(fd: FieldDescriptor, found: dict[str, Descriptor]) -> JSONObject:
    if fd.message_type is None:
        return _scalar(fd)
    name = fd.message_type.full_name
    if name == _TIMESTAMP:
        return {"type": "string", "format": "date-time"}
    if name == _INT_OR_STRING:
        return {"x-kubernetes-int-or-string": True}
    found[name] = fd.message_type
    return _ref(fd.message_type)


def _field(fd: FieldDescriptor, found: dict[str, Descriptor]) -> JSONObject:
    msg = fd.message_type
    if msg is not None and msg.GetOptions().map_entry:
        return {
            "type": "object",
            "additionalProperties": _value(msg.fields_by_name["value"], found),
        }
    if fd.is_repeated:
        return {"type": "array", "items": _value(fd, found)}
    return _value(fd, found)


def _object_schema(desc: Descriptor, found: dict[str, Descriptor]) -> JSONObject:
    props: JSONObject = {}
    fields = {fd.json_name: _field(fd, found) for fd in desc.fields}
    for name, prop in fields.items():  # what kubectl computes strategic merge patches with
        key = patches.MERGE_KEYS.get((desc.name, name))
        if key is not None:
            prop["x-kubernetes-patch-merge-key"] = key
            prop["x-kubernetes-patch-strategy"] = (
                "merge,retainKeys" if (desc.name, name) == ("PodSpec", "volumes") else "merge"
            )
        elif (desc.name, name) in patches.MERGED_SCALAR_LISTS:
            prop["x-kubernetes-patch-strategy"] = "merge"
    props.update(fields)
    schema: JSONObject = {"type": "object", "properties": props}
    kind = _kind_by_message().get(desc.full_name)
    if kind is not None:
        group, version = discovery.group_version(kind)
        props["apiVersion"] = {"type": "string"}
        props["kind"] = {"type": "string"}
        schema["x-kubernetes-group-version-kind"] = [
            {"group": group, "version": version, "kind": kind.kind}
        ]
    return schema


@cache
def _schemas(served: Served = ALL_SERVED) -> JSONObject:
    out: JSONObject = {}
    todo: dict[str, Descriptor] = {k.message.DESCRIPTOR.full_name: _desc(k) for k in KINDS}
    while todo:
        name, desc = todo.popitem()
        key = _schema_name(desc)
        if key in out:
            continue
        found: dict[str, Descriptor] = {}
        out[key] = _object_schema(desc, found)
        todo.update({n: d for n, d in found.items() if _schema_name(d) not in out})
    for k in KINDS:
        for gv in served.api_versions.get(k.kind, ()):
            if gv != k.api_version:
                _versioned_schemas(k, gv, out)
    # a pod's group reference: the one field its version has (podgroups.pod_fields_served)
    pod_spec = out[types_pb2.PodSpec.DESCRIPTOR.full_name]  # (not a kind: named so)
    assert isinstance(pod_spec, dict) and isinstance(pod_spec["properties"], dict)
    absent = podgroups.pod_field_absent(served.minor)
    pod_spec["properties"] = {k: v for k, v in pod_spec["properties"].items() if k != absent}
    return dict(sorted(out.items()))


def _versioned_name(kind: Kind, api_version: str, name: str = "") -> str:
    group, _, version = api_version.rpartition("/")
    return f"io.k8s.api.{group or 'core'}.{version}.{name or kind.kind}"


def _versioned_schemas(kind: Kind, api_version: str, out: JSONObject) -> None:
    """The schemas of `kind` served as `api_version`: its version's shape
    (kemu.machinery.podgroups.SHAPES), or the message's own under the version's name."""
    group, _, version = api_version.rpartition("/")
    gvk: JSONArray = [{"group": group, "version": version, "kind": kind.kind}]
    shape = podgroups.SHAPES.get((api_version, kind.kind))
    if shape is None:
        own = out[_schema_name(_desc(kind))]
        assert isinstance(own, dict)
        out[_versioned_name(kind, api_version)] = {**own, "x-kubernetes-group-version-kind": gvk}
        return
    schema = _shape_schema(shape, api_version, out)
    top = out[_versioned_name(kind, api_version, shape.name)]
    assert isinstance(top, dict) and isinstance(schema, dict)
    props = top["properties"]
    assert isinstance(props, dict)
    props["apiVersion"] = {"type": "string"}
    props["kind"] = {"type": "string"}
    top["x-kubernetes-group-version-kind"] = gvk


def _shape_schema(shape: podgroups.Shape, api_version: str, out: JSONObject) -> JSONObject:
    """The schema of a field of `shape` (its structs added to `out` by name)."""
    if isinstance(shape, podgroups.Arr):
        return {"type": "array", "items": _shape_schema(shape.item, api_version, out)}
    if shape == "string":
        return {"type": "string", "default": ""}
    if shape == "integer":
        return {"type": "integer", "format": "int32"}
    if isinstance(shape, str):  # one of kemu's messages, by its full name
        desc = types_pb2.DESCRIPTOR.message_types_by_name[shape.rpartition(".")[2]]
        return _ref_named(_schema_name(desc))
    group, _, version = api_version.rpartition("/")
    name = f"io.k8s.api.{group}.{version}.{shape.name}"
    if name not in out:
        props: JSONObject = {}
        schema: JSONObject = {"type": "object", "properties": props}
        if shape.description:
            schema["description"] = shape.description
        out[name] = schema
        for field, child in shape.fields:
            props[field] = _shape_schema(child, api_version, out)
    return _ref_named(name)


def _ref_named(name: str) -> JSONObject:
    return {"allOf": [{"$ref": f"#/components/schemas/{name}"}], "default": {}}


def _desc(kind: Kind) -> Descriptor:
    desc: Descriptor = kind.message.DESCRIPTOR  # type: ignore[assignment]
    return desc


def _base(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _operations(kind: Kind, group: str, version: str) -> JSONObject:
    gvk: JSONObject = {"group": group, "version": version, "kind": kind.kind}
    gv = f"{group}/{version}" if group else version
    schema = _schema_name(_desc(kind)) if gv == kind.api_version else _versioned_name(kind, gv)
    ref: JSONObject = {"$ref": f"#/components/schemas/{schema}"}
    ok: JSONObject = {
        "200": {"description": "OK", "content": {"application/json": {"schema": ref}}}
    }
    query: JSONArray = [{"name": q, "in": "query", "schema": {"type": "string"}} for q in _QUERY]

    def op(action: str, params: JSONArray) -> JSONObject:
        return {
            "operationId": f"{action}{kind.kind}",
            "parameters": params,
            "responses": ok,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    prefix = _base(group, version) + ("/namespaces/{namespace}" if kind.namespaced else "")
    return {
        f"{prefix}/{kind.resource}": {
            "get": op("list", []),
            "post": op("post", query),
        },
        f"{prefix}/{kind.resource}/{{name}}": {
            "get": op("get", []),
            "put": op("put", query),
            "patch": op("patch", query),
            "delete": op("delete", []),
        },
    }


def group_versions(served: Served = ALL_SERVED) -> list[tuple[str, str]]:
    """The built-in kinds' group versions (the custom resources' documents are
    openapi_custom's)."""
    custom = set(openapi_custom.group_versions())
    return sorted(set(served.group_versions()) - custom)


@cache
def document_dict(group: str, version: str, served: Served = ALL_SERVED) -> JSONObject:
    """The v3 document of one group version (openapi_v2 reads it too)."""
    paths: JSONObject = {}
    for k in discovery.kinds_of(group, version, served):
        if not k.custom:
            paths.update(_operations(k, group, version))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "kemu"},
        "paths": paths,
        "components": {"schemas": _schemas(served)},
    }


@cache
def document(group: str, version: str, served: Served = ALL_SERVED) -> bytes | None:
    if not [k for k in discovery.kinds_of(group, version, served) if not k.custom]:
        return None
    return json.dumps(document_dict(group, version, served), separators=(",", ":")).encode()


@cache
def index(served: Served = ALL_SERVED) -> JSONObject:
    paths: JSONObject = {}
    for group, version in group_versions(served):
        doc = document(group, version, served)
        assert doc is not None
        digest = hashlib.sha512(doc).hexdigest()[:32].upper()
        rel = _base(group, version).lstrip("/")
        paths[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
    return {"paths": paths}
