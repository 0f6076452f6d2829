"""A minimal kubectl jsonpath over the Kubernetes JSON of an object.

Supported: `{.a.b.c}`, `{.a.b[0].c}`, negative indexes (`[-1]`), quoted keys
(`{.metadata.labels['app.kubernetes.io/name']}`), escaped dots (`{.metadata.labels.a\\.b}`),
and the braces and leading dot may be left out (`.status.phase`, `status.phase`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_INDEX: Final = re.compile(r"\[\s*(-?\d+)\s*\]")
_QUOTED: Final = re.compile(r"\[\s*(['\"])(.*?)\1\s*\]")


class JsonPathError(ValueError):
    """The expression is not one this jsonpath understands."""


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


@dataclass(frozen=True)
class JsonPath:
    expression: str
    steps: tuple[str | int, ...]

    def find(self, data: object) -> object:
        """The value at the path, or MISSING when a key or index is absent."""
        value = data
        for step in self.steps:
            if isinstance(step, int):
                if not isinstance(value, list) or not -len(value) <= step < len(value):
                    return MISSING
                value = value[step]
            else:
                if not isinstance(value, dict) or step not in value:
                    return MISSING
                value = value[step]
        return value


def parse(expression: str) -> JsonPath:
    text = expression.strip()
    if text.startswith("{") or text.endswith("}"):
        if not (text.startswith("{") and text.endswith("}")):
            raise JsonPathError(f"unclosed action in jsonpath {expression!r}")
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    if text in ("", "."):
        return JsonPath(expression, ())
    if "{" in text or "}" in text:
        raise JsonPathError(f"only one {{...}} expression is supported, got {expression!r}")
    steps: list[str | int] = []
    i = 1 if text.startswith(".") else 0
    n = len(text)
    key = ""
    expect_key = True
    while i < n:
        ch = text[i]
        if ch == "\\" and i + 1 < n:
            key += text[i + 1]
            i += 2
            continue
        if ch == ".":
            if expect_key and not key:
                raise JsonPathError(f"empty field name in jsonpath {expression!r}")
            if key:
                steps.append(key)
            key = ""
            expect_key = True
            i += 1
            continue
        if ch == "[":
            if key:
                steps.append(key)
                key = ""
            m = _INDEX.match(text, i)
            q = _QUOTED.match(text, i)
            if m is not None:
                steps.append(int(m.group(1)))
                i = m.end()
            elif q is not None:
                steps.append(q.group(2))
                i = q.end()
            else:
                raise JsonPathError(
                    f"unsupported subscript in jsonpath {expression!r}: only [N] and ['key']"
                )
            expect_key = False
            if i < n and text[i] not in ".[":
                raise JsonPathError(f"unexpected {text[i]!r} in jsonpath {expression!r}")
            continue
        if ch in "*?()@|,'\" ":
            raise JsonPathError(f"unsupported character {ch!r} in jsonpath {expression!r}")
        key += ch
        expect_key = False
        i += 1
    if key:
        steps.append(key)
    elif expect_key:
        raise JsonPathError(f"jsonpath {expression!r} ends with a dot")
    return JsonPath(expression, tuple(steps))


def split_condition(text: str) -> tuple[str, str | None]:
    """Splits `{.status.phase}=Running` into ("{.status.phase}", "Running").

    Without braces the first "=" after the path separates the value; with none there is no
    value (wait until the path exists).
    """
    text = text.strip()
    if text.startswith("{"):
        end = text.find("}")
        if end < 0:
            raise JsonPathError(f"unclosed action in jsonpath {text!r}")
        path, rest = text[: end + 1], text[end + 1 :]
        if not rest:
            return path, None
        if not rest.startswith("="):
            raise JsonPathError(f"expected '=' after the jsonpath in {text!r}")
        return path, rest[1:]
    path, sep, value = text.partition("=")
    return path, value if sep else None
