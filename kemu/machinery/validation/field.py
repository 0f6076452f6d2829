"""Error bodies as upstream's field.Error prints them (Required value, Invalid value, ...)."""

from __future__ import annotations

import json
from collections.abc import Iterable

from kemu.machinery.errors import Cause, Invalid

# ---------------------------------------------------------------- error bodies (field.Error)


def _show(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def required(path: str, detail: str = "") -> Cause:
    return Cause(path, f"Required value: {detail}" if detail else "Required value")


def invalid(path: str, value: object, detail: str) -> Cause:
    return Cause(path, f"Invalid value: {_show(value)}: {detail}")


def not_supported(path: str, value: object, supported: Iterable[str]) -> Cause:
    options = ", ".join(json.dumps(s) for s in supported)
    return Cause(path, f"Unsupported value: {_show(value)}: supported values: {options}")


def duplicate(path: str, value: object, detail: str = "") -> Cause:
    body = f"Duplicate value: {_show(value)}"
    return Cause(path, f"{body}: {detail}" if detail else body)


def forbidden(path: str, detail: str) -> Cause:
    return Cause(path, f"Forbidden: {detail}")


def too_long(path: str, max_bytes: int) -> Cause:
    return Cause(path, f"Too long: must have at most {max_bytes} bytes")


def too_many(path: str, actual: int, max_items: int) -> Cause:
    return Cause(path, f"Too many: {actual}: must have at most {max_items} items")


def raise_if_invalid(what: str, causes: list[Cause]) -> None:
    """Raises Invalid naming `what` (`Pod "p"`) when there are causes."""
    if causes:
        raise Invalid.from_causes(what, causes)


def not_found(path: str, value: object) -> Cause:
    return Cause(path, f"Not found: {_show(value)}")
