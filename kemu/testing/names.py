"""Unique object names, so that tests sharing one cluster do not see each other's objects."""

from __future__ import annotations

import itertools
import os
import re

_counter = itertools.count(1)
# Distinguishes two test sessions that share one etcd (or one left-over data dir).
_session = os.urandom(2).hex()
_INVALID = re.compile(r"[^a-z0-9-]+")


def unique_name(prefix: str = "t") -> str:
    """A DNS-1123 label `<prefix>-<session>-<n>`, unique within and across test sessions.

    The prefix is lowercased, characters a name cannot hold become '-', and it is cut so that
    the name fits in 63 characters.
    """
    cleaned = _INVALID.sub("-", prefix.lower()).strip("-") or "t"
    suffix = f"-{_session}-{next(_counter)}"
    return cleaned[: 63 - len(suffix)].rstrip("-") + suffix
