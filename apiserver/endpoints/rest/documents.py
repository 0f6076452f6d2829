"""The REST edge's documents that are no resource: /version, discovery (/api, /apis, legacy and
aggregated) and the OpenAPI documents (/openapi/v2, /openapi/v3), all built once from the kinds
kemu serves (discovery.py, openapi.py, openapi_v2.py)."""

from __future__ import annotations

import json

from aiohttp import web

from apiserver.endpoints.rest import discovery, openapi, openapi_custom, openapi_v2
from apiserver.endpoints.rest.request import JSON_TYPE, json_response
from kemu.machinery.errors import NotFound
from kemu.machinery.jsonvalue import JSONObject
from kemu.machinery.kinds import ALL_SERVED, Served


def response(
    path: str, accept: str, emulated_version: str, served: Served = ALL_SERVED
) -> web.Response | None:
    """The answer to a GET of `path` if it is one of these documents (None: it is not);
    `emulated_version`: the apiserver's, which /version tells; `served`: the kinds and group
    versions it serves."""
    if path == "/version":
        return json_response(version(emulated_version))
    if path.startswith("/openapi/v3"):
        return _openapi_v3(path, served)
    if path == "/openapi/v2":
        if openapi_v2.wants_protobuf(accept):
            return web.Response(
                body=openapi_v2.protobuf_bytes(served),
                content_type="application/octet-stream",  # as kube-openapi answers
            )
        return web.Response(body=openapi_v2.json_bytes(served), content_type=JSON_TYPE)
    if path in ("/api", "/apis"):
        aggregated = discovery.aggregated_version(accept)
        if aggregated is not None:
            body = discovery.aggregated(path == "/api", aggregated, served)
            return web.Response(
                body=json.dumps(body, separators=(",", ":")).encode(),
                headers={"Content-Type": discovery.aggregated_content_type(aggregated)},
            )
    doc = _discovery(path, served)
    return json_response(doc) if doc is not None else None


def _openapi_v3(path: str, served: Served) -> web.Response:
    if path == "/openapi/v3":
        index = openapi.index(served)
        paths = index.get("paths")
        custom_paths = openapi_custom.index_paths()
        if custom_paths and isinstance(paths, dict):
            index = {**index, "paths": {**paths, **custom_paths}}
        return json_response(index)
    parts = path.removeprefix("/openapi/v3/").split("/")
    doc = None
    if parts[:1] == ["apis"] and len(parts) == 3:
        doc = openapi_custom.document(parts[1], parts[2])
    if doc is None and parts[:1] == ["api"] and len(parts) == 2:
        doc = openapi.document("", parts[1], served)
    elif doc is None and parts[:1] == ["apis"] and len(parts) == 3:
        doc = openapi.document(parts[1], parts[2], served)
    if doc is None:
        raise NotFound("the server could not find the requested resource")
    return web.Response(body=doc, content_type=JSON_TYPE)


def version(emulated_version: str) -> JSONObject:
    """/version: upstream's version.Info, of the emulated version."""
    emulated = emulated_version or "1.0"
    major, _, minor = emulated.partition(".")
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "gitVersion": f"v{emulated}.0",
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "",
        "goVersion": "",
        "compiler": "kemu",
        "platform": "linux/amd64",
    }


def _discovery(path: str, served: Served) -> JSONObject | None:
    parts = [p for p in path.split("/") if p]
    if parts == ["api"]:
        return discovery.api_versions()
    if parts == ["apis"]:
        return discovery.api_group_list(served)
    if parts == ["api", "v1"]:
        return discovery.resource_list("", "v1", served)
    if len(parts) == 2 and parts[0] == "apis":
        return discovery.api_group(parts[1], served)
    if len(parts) == 3 and parts[0] == "apis":
        return discovery.resource_list(parts[1], parts[2], served)
    return None
