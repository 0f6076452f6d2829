"""The types of JSON values, for code that reads or writes JSON documents (request and response
bodies, manifests, patches, traces, bench reports) instead of `Any`.

`JSON` is any value `json.loads` returns; `JSONObject` is a decoded object. A function that only
reads a document takes `Mapping[str, object]` or `JSONObject`; code narrows a value with
`isinstance` before it indexes it, as a decoder of untrusted input has to anyway.
"""

from __future__ import annotations

from typing import TypeAlias

JSON: TypeAlias = "dict[str, JSON] | list[JSON] | str | int | float | bool | None"
JSONObject: TypeAlias = "dict[str, JSON]"
JSONArray: TypeAlias = "list[JSON]"
