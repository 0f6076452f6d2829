"""OpenAPI v2 (/openapi/v2), the same schemas and operations as v3 (openapi.py, one source:
upstream's definitions, kemu.machinery.openapi) in Swagger 2.0's shape. kubectl asks for it in gnostic's protobuf
encoding (application/com.github.proto-openapi.spec.v2@v1.0+protobuf, the
openapi_v2.Document of github.com/google/gnostic-models) for `explain
--output=plaintext-openapiv2` and where a server has no v3; other clients get JSON.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Final

from apiserver.endpoints.rest import openapi
from apiserver.storage.encoding import field_bytes
from kemu.machinery.jsonvalue import JSON, JSONArray, JSONObject
from kemu.machinery.kinds import ALL_SERVED, Served

PROTOBUF_TYPE: Final = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
_V3_REF: Final = "#/components/schemas/"
_V2_REF: Final = "#/definitions/"


def wants_protobuf(accept: str) -> bool:
    return any(
        part.split(";")[0].strip().replace(".v1.0", "@v1.0") == PROTOBUF_TYPE
        for part in accept.split(",")
    )


def _object(value: JSON) -> JSONObject:
    """A part of openapi.py's document that is an object (it builds it so)."""
    assert isinstance(value, dict)
    return value


def _array(value: JSON) -> JSONArray:
    assert isinstance(value, list)
    return value


def _string(value: JSON) -> str:
    assert isinstance(value, str)
    return value


def _schema(v3: JSONObject) -> JSONObject:
    """A v3 schema of openapi.py in v2's dialect: refs to #/definitions beside their
    description, without v3's allOf wrapping (as upstream's v2 writes them)."""
    out: JSONObject = {}
    for key, value in v3.items():
        if key == "allOf" and isinstance(value, list) and len(value) == 1:
            out["$ref"] = _V2_REF + _string(_object(value[0])["$ref"]).removeprefix(_V3_REF)
        elif key == "properties":
            out[key] = {name: _schema(_object(p)) for name, p in _object(value).items()}
        elif key in ("items", "additionalProperties") and isinstance(value, dict):
            out[key] = _schema(value)
        elif key != "default":
            out[key] = value
    return out


@cache
def document(served: Served = ALL_SERVED) -> JSONObject:
    paths: JSONObject = {}
    definitions: JSONObject = {}
    for group, version in openapi.group_versions(served):
        v3 = openapi.document_dict(group, version, served)
        for name, schema in _object(_object(v3["components"])["schemas"]).items():
            definitions[name] = _schema(_object(schema))
        for path, item in _object(v3["paths"]).items():
            operations: JSONObject = {}
            for method, value in _object(item).items():
                op = _object(value)
                operations[method] = {
                    "operationId": op["operationId"],
                    "parameters": [
                        {"name": p["name"], "in": p["in"], "type": "string"}
                        for p in map(_object, _array(op["parameters"]))
                    ],
                    "responses": {"200": {"description": "OK"}},
                    "x-kubernetes-action": op["x-kubernetes-action"],
                    "x-kubernetes-group-version-kind": op["x-kubernetes-group-version-kind"],
                }
            paths[path] = operations
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "kemu"},
        "paths": dict(sorted(paths.items())),
        "definitions": dict(sorted(definitions.items())),
    }


@cache
def json_bytes(served: Served = ALL_SERVED) -> bytes:
    return json.dumps(document(served), separators=(",", ":")).encode()


# ---------------------------------------------------------------- gnostic's protobuf
# Field numbers of openapi_v2.Document and the messages under it (gnostic-models'
# OpenAPIv2.proto), for what kemu's document holds.


def _str(number: int, value: str) -> bytes:
    return field_bytes(number, value.encode())


def _vendor(number: int, name: str, value: JSON) -> bytes:
    """A NamedAny{name, Any{yaml}}: JSON is YAML."""
    return field_bytes(number, _str(1, name) + field_bytes(2, _str(2, json.dumps(value))))


def _schema_pb(s: JSONObject) -> bytes:
    out = b""
    if "$ref" in s:
        out += _str(1, _string(s["$ref"]))
    if "format" in s:
        out += _str(2, _string(s["format"]))
    if "description" in s:
        out += _str(4, _string(s["description"]))
    for name in _array(s.get("required", [])):  # (repeated string required = 19)
        out += _str(19, _string(name))
    if "additionalProperties" in s:
        additional = _schema_pb(_object(s["additionalProperties"]))
        out += field_bytes(21, field_bytes(1, additional))
    if "type" in s:
        out += field_bytes(22, _str(1, _string(s["type"])))
    if "items" in s:
        out += field_bytes(23, field_bytes(1, _schema_pb(_object(s["items"]))))
    if "properties" in s:
        named = b"".join(
            field_bytes(1, _str(1, name) + field_bytes(2, _schema_pb(_object(p))))
            for name, p in _object(s["properties"]).items()
        )
        out += field_bytes(25, named)
    for key, value in s.items():
        if key.startswith("x-"):
            out += _vendor(31, key, value)
    return out


_METHODS: Final = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}


def _operation_pb(op: JSONObject) -> bytes:
    out = _str(5, _string(op["operationId"]))
    for p in map(_object, _array(op["parameters"])):
        query = (
            _str(2, _string(p["in"])) + _str(4, _string(p["name"])) + _str(6, _string(p["type"]))
        )
        # ParametersItem{parameter} > Parameter{non_body_parameter} > NonBodyParameter{query}
        out += field_bytes(8, field_bytes(1, field_bytes(2, field_bytes(3, query))))
    ok = field_bytes(1, _str(1, "200") + field_bytes(2, field_bytes(1, _str(1, "OK"))))
    out += field_bytes(9, ok)
    for key in ("x-kubernetes-action", "x-kubernetes-group-version-kind"):
        out += _vendor(13, key, op[key])
    return out


@cache
def protobuf_bytes(served: Served = ALL_SERVED) -> bytes:
    doc = document(served)
    paths = b""
    for path, item in _object(doc["paths"]).items():
        path_item = b"".join(
            field_bytes(_METHODS[method], _operation_pb(_object(op)))
            for method, op in _object(item).items()
        )
        paths += field_bytes(2, _str(1, path) + field_bytes(2, path_item))
    definitions = b"".join(
        field_bytes(1, _str(1, name) + field_bytes(2, _schema_pb(_object(s))))
        for name, s in _object(doc["definitions"]).items()
    )
    info_doc = _object(doc["info"])
    info = _str(1, _string(info_doc["title"])) + _str(2, _string(info_doc["version"]))
    return (
        _str(1, _string(doc["swagger"]))
        + field_bytes(2, info)
        + field_bytes(8, paths)
        + field_bytes(9, definitions)
    )
