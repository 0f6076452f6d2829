"""Semantic versions as semver.org 2.0.0 defines them, as upstream's github.com/blang/semver/v4
parses and orders them (used by DRA's version attributes and the Kubernetes CEL semver library,
upstream staging/src/k8s.io/apiserver/pkg/cel/library/semverlib.go)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import total_ordering
from typing import Final

_NUM: Final = r"(?:0|[1-9][0-9]*)"
_IDENT: Final = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_STRICT: Final = re.compile(
    rf"^({_NUM})\.({_NUM})\.({_NUM})"
    rf"(?:-({_IDENT}(?:\.{_IDENT})*))?"
    r"(?:\+([0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*))?$"
)
# semver(s, true): a leading "v", missing minor/patch and leading zeros are accepted (upstream
# semverlib's normalize: "v1" -> "1.0.0", "01.02" -> "1.2.0").
_LOOSE: Final = re.compile(r"^v?([0-9]+)(?:\.([0-9]+))?(?:\.([0-9]+))?([-+].*)?$")


class SemverError(ValueError):
    """The text is not a semantic version."""


@total_ordering
@dataclass(frozen=True, eq=False)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[str, ...] = ()
    build: tuple[str, ...] = ()

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 by semver precedence; build metadata does not count."""
        a = (self.major, self.minor, self.patch)
        b = (other.major, other.minor, other.patch)
        if a != b:
            return -1 if a < b else 1
        if self.pre == other.pre:
            return 0
        if not self.pre:
            return 1
        if not other.pre:
            return -1
        for x, y in zip(self.pre, other.pre, strict=False):
            if x == y:
                continue
            xn, yn = x.isdigit(), y.isdigit()
            if xn and yn:
                return -1 if int(x) < int(y) else 1
            if xn != yn:
                return -1 if xn else 1
            return -1 if x < y else 1
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Semver) and self.compare(other) == 0

    def __lt__(self, other: Semver) -> bool:
        return self.compare(other) < 0

    def __hash__(self) -> int:
        return hash((self.major, self.minor, self.patch, self.pre))


def parse_semver(text: str) -> Semver:
    """A strict semver 2.0.0 version; SemverError when `text` is not one."""
    match = _STRICT.match(text)
    if match is None:
        raise SemverError(f"invalid semantic version {text!r}")
    major, minor, patch, pre, build = match.groups()
    return Semver(
        int(major),
        int(minor),
        int(patch),
        tuple(pre.split(".")) if pre else (),
        tuple(build.split(".")) if build else (),
    )


def parse_semver_normalized(text: str) -> Semver:
    """semver(s, true): "v" prefix, missing minor/patch and leading zeros accepted."""
    match = _LOOSE.match(text)
    if match is None:
        raise SemverError(f"invalid semantic version {text!r}")
    major, minor, patch, rest = match.groups()
    core = f"{int(major)}.{int(minor or 0)}.{int(patch or 0)}"
    return parse_semver(core + (rest or ""))


def is_semver(text: str) -> bool:
    try:
        parse_semver(text)
    except SemverError:
        return False
    return True
