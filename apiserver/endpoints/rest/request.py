"""What the REST edge's handlers share: the Target a path names, JSON answers, query
parameters, request bodies (read within upstream's size limit)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Final

from aiohttp import web
from google.protobuf.message import Message

from apiserver.endpoints.rest.events import View
from kemu.machinery import jsonutil, podgroups
from kemu.machinery.convert import UnknownFields
from kemu.machinery.errors import ApiError, BadRequest
from kemu.machinery.kinds import Kind

JSON_TYPE: Final = "application/json"
MAX_REQUEST_BODY_BYTES: Final = 3 * 1024 * 1024
"""Upstream's MaxRequestBodyBytes (k8s.io/apiserver pkg/server/config.go): a larger body is
413 RequestEntityTooLarge, read no further."""
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


@dataclass(frozen=True)
class Target:
    """What a resource path names."""

    kind: Kind
    namespace: str  # "" for cluster-scoped kinds and lists across namespaces
    name: str
    subresource: str
    view: View | None = None
    """The group version the stored kind is served as, when not its own (events.k8s.io/v1)."""
    served_as: str = ""
    """The group version the path named, when the kind has several (scheduling.k8s.io's
    Workload: kemu.machinery.podgroups converts); "" for the kind's own."""

    @property
    def api_version(self) -> str:
        if self.view:
            return self.view.api_version
        return self.served_as or self.kind.api_version

    def render(self, obj: Message) -> dict[str, Any]:
        """An object as upstream's JSON in the group version the request named."""
        if self.view:
            return self.view.render(obj)
        return podgroups.to_versioned(obj, self.api_version, wire=True)

    def decode(self, data: object, unknown: UnknownFields | None) -> Message:
        """An object sent in the group version the request named (unknown fields: see
        convert.UnknownFields)."""
        return podgroups.from_versioned(self.kind, data, self.api_version, unknown)

    def field_selector(self, text: str) -> str:
        """A fieldSelector in the stored kind's field labels."""
        return self.view.field_selector(text) if self.view and text else text


def json_response(body: Any, status_code: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status_code,
        content_type=JSON_TYPE,
    )


class RequestEntityTooLarge(ApiError):
    reason = "RequestEntityTooLarge"
    code = 413


async def read_body(request: web.BaseRequest) -> bytes:
    """The request body, at most MAX_REQUEST_BODY_BYTES (upstream limitedReadBody): a larger
    one, announced or sent, is RequestEntityTooLarge."""
    limit = MAX_REQUEST_BODY_BYTES
    too_large = RequestEntityTooLarge(f"Request entity too large: limit is {limit}")
    if request.content_length is not None and request.content_length > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = await request.content.readany()
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise too_large
        chunks.append(chunk)


def _shown(value: str) -> str:
    return value if len(value) <= 64 else value[:64] + "..."


def int_param(query: Any, name: str, low: int = INT64_MIN, high: int = INT64_MAX) -> int | None:
    """An integer query parameter (int64 unless told), None when absent; BadRequest naming it
    otherwise (upstream's query parameter conversion, strconv.ParseInt)."""
    value = query.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value, 10)
    except ValueError:
        raise BadRequest(f'invalid value for {name}: "{_shown(value)}": not an integer') from None
    if not low <= number <= high:
        raise BadRequest(f'invalid value for {name}: "{_shown(value)}": out of range')
    return number


def bool_param(query: Any, name: str) -> bool | None:
    """A boolean query parameter as Go's strconv.ParseBool reads it, None when absent."""
    value = query.get(name)
    if value is None or value == "":
        return None
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    raise BadRequest(f'invalid value for {name}: "{_shown(value)}": not a boolean')


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

    data = jsonutil.loads(raw, object_pairs_hook=pairs if unknown is not None else None)
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
