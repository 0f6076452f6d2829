"""OpenAPI v3 of the custom resources' group versions (upstream apiextensions-apiserver
pkg/controller/openapi/builder/builder.go): each served version's schema, named
<reversed group>.<version>.<Kind> and tagged with x-kubernetes-group-version-kind, with
apiVersion, kind and metadata added, and its paths with the fieldValidation parameter, so
that `kubectl explain` and kubectl's field validation know the custom resource. Built on
each request (CRDs come and go), not cached as the built-in kinds' documents are."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Final

from kemu.machinery.apiextensions import custom
from kemu.machinery.apiextensions.crd import Definition
from kemu.machinery.jsonvalue import JSONArray, JSONObject

_QUERY: Final = ("dryRun", "fieldManager", "fieldValidation", "force")
_OBJECT_META: Final = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def schema_name(definition: Definition, version: str) -> str:
    return ".".join(reversed(definition.group.split("."))) + f".{version}.{definition.kind}"


def _served(group: str, version: str) -> list[Definition]:
    return [d for d in custom.definitions() if d.group == group and version in d.served_versions()]


def group_versions() -> list[tuple[str, str]]:
    return sorted({(d.group, v) for d in custom.definitions() for v in d.served_versions()})


def _schema(definition: Definition, version: str) -> JSONObject:
    v = definition.version(version)
    base = copy.deepcopy(v.schema) if v is not None and v.schema is not None else {}
    props = base.get("properties")
    props = dict(props) if isinstance(props, dict) else {}
    props["apiVersion"] = {
        "type": "string",
        "description": "APIVersion defines the versioned schema of this representation of an "
        "object.",
    }
    props["kind"] = {
        "type": "string",
        "description": "Kind is a string value representing the REST resource this object "
        "represents.",
    }
    props["metadata"] = {
        "allOf": [{"$ref": f"#/components/schemas/{_OBJECT_META}"}],
        "description": "Standard object's metadata.",
    }
    base["type"] = "object"
    base["properties"] = props
    base["x-kubernetes-group-version-kind"] = [
        {"group": definition.group, "version": version, "kind": definition.kind}
    ]
    return base


def _paths(definition: Definition, version: str) -> JSONObject:
    gvk: JSONObject = {"group": definition.group, "version": version, "kind": definition.kind}
    ref: JSONObject = {"$ref": f"#/components/schemas/{schema_name(definition, version)}"}
    ok: JSONObject = {
        "200": {"description": "OK", "content": {"application/json": {"schema": ref}}}
    }
    query: JSONArray = [{"name": q, "in": "query", "schema": {"type": "string"}} for q in _QUERY]

    def op(action: str, params: JSONArray) -> JSONObject:
        return {
            "operationId": f"{action}{definition.kind}",
            "parameters": params,
            "responses": ok,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
        }

    prefix = f"/apis/{definition.group}/{version}" + (
        "/namespaces/{namespace}" if definition.namespaced else ""
    )
    return {
        f"{prefix}/{definition.plural}": {"get": op("list", []), "post": op("post", query)},
        f"{prefix}/{definition.plural}/{{name}}": {
            "get": op("get", []),
            "put": op("put", query),
            "patch": op("patch", query),
            "delete": op("delete", []),
        },
    }


def document(group: str, version: str) -> bytes | None:
    definitions = _served(group, version)
    if not definitions:
        return None
    paths: JSONObject = {}
    schemas: JSONObject = {
        _OBJECT_META: {
            "type": "object",
            "description": "ObjectMeta is metadata that all persisted resources must have.",
            "properties": {
                "name": {"type": "string"},
                "namespace": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        }
    }
    for d in definitions:
        paths.update(_paths(d, version))
        schemas[schema_name(d, version)] = _schema(d, version)
    doc = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"},
        "paths": paths,
        "components": {"schemas": schemas},
    }
    return json.dumps(doc, separators=(",", ":")).encode()


def index_paths() -> JSONObject:
    out: JSONObject = {}
    for group, version in group_versions():
        doc = document(group, version)
        if doc is None:
            continue
        digest = hashlib.sha512(doc).hexdigest()[:32].upper()
        rel = f"apis/{group}/{version}"
        out[rel] = {"serverRelativeURL": f"/openapi/v3/{rel}?hash={digest}"}
    return out
