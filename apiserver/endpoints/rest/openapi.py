"""OpenAPI v3 of the REST edge (/openapi/v3 and /openapi/v3/<group path>): upstream's
definitions of the kinds served at the emulated version (kemu.machinery.openapi, generated
from upstream's api/openapi-spec by `make gen-openapi`), what kubectl reads for `explain`
(descriptions, schemas tagged with x-kubernetes-group-version-kind) and for its patches
(x-kubernetes-patch-strategy / -patch-merge-key), and operations listing the fieldValidation
parameter (the server validates fields itself)."""

from __future__ import annotations

import hashlib
import json
from functools import cache
from typing import Final

from apiserver.endpoints.rest import discovery, openapi_custom
from kemu.machinery import openapi as upstream
from kemu.machinery.jsonvalue import JSON, JSONArray, JSONObject
from kemu.machinery.kinds import ALL_SERVED, Kind, Served

_QUERY: Final = ("dryRun", "fieldManager", "fieldValidation", "force")
_REF: Final = "#/components/schemas/"


def _v3(value: JSON) -> JSON:
    """A stored schema (bare names in `$ref`) in OpenAPI v3's form: a named type as
    upstream's v3 writes it, `allOf` [the reference] beside its description."""
    if not isinstance(value, dict):
        return value
    out: JSONObject = {}
    for key, v in value.items():
        if key == "$ref":
            out["allOf"] = [{"$ref": f"{_REF}{v}"}]
        elif key in ("items", "additionalProperties"):
            out[key] = _v3(v)
        elif key == "properties" and isinstance(v, dict):
            out[key] = {name: _v3(p) for name, p in v.items()}
        else:
            out[key] = v
    return out


def _refs(value: JSON, found: set[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            found.add(ref)
        for v in value.values():
            _refs(v, found)


def schema_name(kind: Kind, group: str, version: str, minor: int) -> str:
    """Upstream's definition of `kind` served as group/version (io.k8s.api.core.v1.Pod)."""
    return upstream.schema_for(kind.kind, f"{group}/{version}" if group else version, minor).name


@cache
def _schemas(group: str, version: str, served: Served = ALL_SERVED) -> JSONObject:
    """Upstream's definitions reachable from the kinds `served` serves as group/version, in
    v3's form (as upstream's per-group-version documents hold)."""
    raw = upstream.raw_definitions(served.minor)
    todo = [
        schema_name(k, group, version, served.minor)
        for k in discovery.kinds_of(group, version, served)
    ]
    out: JSONObject = {}
    while todo:
        name = todo.pop()
        if name in out:
            continue
        found: set[str] = set()
        _refs(raw[name], found)
        out[name] = _v3(raw[name])
        todo.extend(sorted(found - out.keys()))
    return dict(sorted(out.items()))


def _base(group: str, version: str) -> str:
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def _operations(kind: Kind, group: str, version: str, minor: int) -> JSONObject:
    gvk: JSONObject = {"group": group, "version": version, "kind": kind.kind}
    ref: JSONObject = {"$ref": f"{_REF}{schema_name(kind, group, version, minor)}"}
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
            paths.update(_operations(k, group, version, served.minor))
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "kemu"},
        "paths": paths,
        "components": {"schemas": _schemas(group, version, served)},
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
