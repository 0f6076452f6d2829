"""Reading JSON a client sent (request bodies, patches) so that no input makes a server error.

Upstream decodes with sigs.k8s.io/json (k8s.io/apimachinery/pkg/util/json): a document nested
more than 10,000 levels, a number out of range or a body that is not UTF-8 is a decode error,
which the handlers answer 400 BadRequest. Python's parser recurses on the C stack and the code
that walks a decoded object recurses in Python, so kemu's limit is lower: MAX_DEPTH levels,
far more than any Kubernetes object has (managedFields, the deepest, has about a dozen).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Final, NoReturn

from kemu.machinery.errors import BadRequest
from kemu.machinery.jsonvalue import JSON

MAX_DEPTH: Final = 100


def decode(data: bytes, what: str = "the request body") -> str:
    """`data` as UTF-8 text, or BadRequest naming `what` and the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadRequest(f"{what} is not valid UTF-8: {e.reason} at byte {e.start}") from None


def loads(
    data: bytes | str,
    what: str = "the request body",
    *,
    object_pairs_hook: Callable[[list[tuple[str, JSON]]], JSON] | None = None,
) -> JSON:
    """`data` as JSON, or BadRequest naming `what` and the problem: not UTF-8, not JSON, a
    number beyond float range, NaN or Infinity, a lone surrogate escape, or nested more than
    MAX_DEPTH levels."""
    json_text = data if isinstance(data, str) else decode(data, what)

    def finite(number: str) -> float:
        value = float(number)
        if math.isinf(value):
            raise BadRequest(f"{what} is not valid JSON: the number {number[:40]} is out of range")
        return value

    def no_constant(name: str) -> NoReturn:
        raise BadRequest(f"{what} is not valid JSON: {name} is not a JSON value")

    try:
        value: JSON = json.loads(
            json_text,
            object_pairs_hook=object_pairs_hook,
            parse_float=finite,
            parse_constant=no_constant,
        )
    except RecursionError:
        raise BadRequest(f"{what} is nested too deeply (at most {MAX_DEPTH} levels)") from None
    except ValueError as e:
        raise BadRequest(f"{what} is not valid JSON: {e}") from None
    _check(value, what)
    return value


def _check(value: JSON, what: str) -> None:
    """Depth and strings of a decoded document, without recursion."""
    stack: list[tuple[JSON, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            if depth > MAX_DEPTH:
                raise BadRequest(f"{what} is nested too deeply (at most {MAX_DEPTH} levels)")
            for k, v in node.items():
                _check_string(k, what)
                stack.append((v, depth + 1))
        elif isinstance(node, list):
            if depth > MAX_DEPTH:
                raise BadRequest(f"{what} is nested too deeply (at most {MAX_DEPTH} levels)")
            stack.extend((v, depth + 1) for v in node)
        elif isinstance(node, str):
            _check_string(node, what)


def _check_string(s: str, what: str) -> None:
    if s.isascii():
        return
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest(
            f"{what} is not valid JSON: a string holds a lone UTF-16 surrogate escape"
        ) from None
