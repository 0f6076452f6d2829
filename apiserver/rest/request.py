"""What the REST edge's handlers share: the Target a path names, JSON answers, query
parameters."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web

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
