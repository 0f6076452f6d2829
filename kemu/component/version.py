"""Kubernetes minor versions a kemu component can emulate.

Contract: every component emulates exactly one `Version` between `MIN_VERSION` (1.21) and
`MAX_VERSION` (1.37), chosen with `--emulated-version` and defaulting to `DEFAULT_VERSION`.
The feature gates kemu models (kemu.component.featuregate) vary with it, and so do the few
upstream changes no gate guards (kemu.component.version_rules), which each process resolves
once from its version. `BINARY_VERSION`
is what the binary itself reports, whatever it emulates (upstream's binary vs emulation version).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

_VERSION_RE: Final = re.compile(r"^v?(\d+)\.(\d+)$")


@dataclass(frozen=True, order=True)
class Version:
    """A Kubernetes major.minor version; ordered, hashable, printed as "1.37"."""

    major: int
    minor: int

    @classmethod
    def parse(cls, text: str) -> Version:
        """Parse "1.37" (a leading "v" is accepted); ValueError names the bad text."""
        match = _VERSION_RE.match(text.strip())
        if match is None:
            raise ValueError(f'invalid version "{text}": expected MAJOR.MINOR such as 1.37')
        return cls(int(match.group(1)), int(match.group(2)))

    def __str__(self) -> str:
        return f"{self.major}.{self.minor}"


MIN_VERSION: Final = Version(1, 21)
MAX_VERSION: Final = Version(1, 37)
DEFAULT_VERSION: Final = MAX_VERSION
BINARY_VERSION: Final = "v1.37.0-kemu"


def parse_emulated_version(text: str) -> Version:
    """Parse an `--emulated-version` value and check it is in the supported range."""
    version = Version.parse(text)
    if not MIN_VERSION <= version <= MAX_VERSION:
        raise ValueError(
            f"emulated version {version} is not supported "
            f"(supported: {MIN_VERSION} to {MAX_VERSION})"
        )
    return version
