"""Upstream's deprecation warnings of the REST edge: a request for a kind upstream marks
deprecated at the emulated version gets `Warning: 299 - "<group/version> <Kind> is deprecated
in v1.N+; use <replacement>"` (k8s.io/apiserver pkg/endpoints/deprecation, added by the
installer's handlers on every verb, errors included), which kubectl prints as
`Warning: ...` and client-go logs.

Only the GA kinds that upstream deprecated without a removal release are listed here: v1
Endpoints from 1.33 (KEP-4974, kubernetes/kubernetes#130098: use EndpointSlice)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from kemu.component.version import Version


@dataclass(frozen=True)
class Deprecation:
    since: Version
    replacement: str
    """"<group/version> <Kind>" to use instead."""


DEPRECATED: Final[dict[tuple[str, str], Deprecation]] = {
    ("v1", "Endpoints"): Deprecation(Version(1, 33), "discovery.k8s.io/v1 EndpointSlice"),
}


def warning(api_version: str, kind: str, emulated: Version) -> str | None:
    """The warning a request for `kind` served as `api_version` gets at `emulated`, if any."""
    d = DEPRECATED.get((api_version, kind))
    if d is None or emulated < d.since:
        return None
    return f"{api_version} {kind} is deprecated in v{d.since}+; use {d.replacement}"
