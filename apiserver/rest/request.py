"""What the REST edge's handlers share: the Target a path names, JSON answers, query
parameters."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import BadRequest
from kemu.machinery.kinds import Kind

JSON_TYPE: Final = "application/json"


@dataclass(frozen=True)
class Target:
    """What a resource path names."""

    kind: Kind
    namespace: str  # "" for cluster-scoped kinds and lists across namespaces
    name: str
    subresource: str


def json_response(body: Any, status_code: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status_code,
        content_type=JSON_TYPE,
    )


def int_param(query: Any, name: str) -> int | None:
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise BadRequest(f'invalid value for {name}: "{value}"') from None


def truthy(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")


class _Repeated(dict[str, Any]):
    """A JSON object that named some keys more than once (the last value kept, as upstream)."""

    repeated: list[str]


def parse_json(raw: bytes, unknown: UnknownFields | None = None) -> Any:
    """A request body as JSON; with `unknown`, each duplicate field is listed there by its
    path (`duplicate field "metadata.name"`), for fieldValidation."""
    seen_any = False

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal seen_any
        out: dict[str, Any] = {}
        repeated = []
        for key, value in items:
            if key in out:
                repeated.append(key)
            out[key] = value
        if not repeated:
            return out
        seen_any = True
        marked = _Repeated(out)
        marked.repeated = repeated
        return marked

    try:
        data = json.loads(raw, object_pairs_hook=pairs if unknown is not None else None)
    except ValueError as e:
        raise BadRequest(f"the request body is not valid JSON: {e}") from None
    if unknown is not None and seen_any:
        _list_repeated(data, "", unknown)
    return data


def _list_repeated(value: Any, path: str, unknown: UnknownFields) -> None:
    if isinstance(value, _Repeated):
        unknown.found += [f'duplicate field "{path}{k}"' for k in value.repeated]
    if isinstance(value, dict):
        for k, v in value.items():
            _list_repeated(v, f"{path}{k}.", unknown)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _list_repeated(v, f"{path[:-1]}[{i}].", unknown)
