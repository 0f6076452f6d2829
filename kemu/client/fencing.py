"""What a leader's writes carry (kemu.machinery.fencing): while `leading_as(fence)` runs,
every write the Client sends from that task, and from the tasks it starts, carries the fence's
token; a write the apiserver refuses as Fenced marks the fence lost, and the leader elector,
waiting on it, stops leading at once (kemu.client.leaderelection).

A context variable, as a request context: what the work does as leader is whatever runs
inside `leading()`, however deep, and nothing outside it (the elector's own lease writes, the
event recorder, informers) carries the token.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar

import anyio

from kemu.machinery.errors import Fenced
from kemu.machinery.fencing import FencingToken

_CURRENT: ContextVar[Fence | None] = ContextVar("kemu_leader_fence", default=None)


class Fence:
    """One lease term of a leader: its token, and whether a write of the term was refused."""

    def __init__(self, token: FencingToken) -> None:
        self.token = token
        self.lost = anyio.Event()
        self.refusal: Fenced | None = None

    def refused(self, err: Fenced) -> None:
        if self.refusal is None:
            self.refusal = err
        self.lost.set()


@contextlib.contextmanager
def leading_as(fence: Fence) -> Iterator[None]:
    reset = _CURRENT.set(fence)
    try:
        yield
    finally:
        _CURRENT.reset(reset)


def current() -> Fence | None:
    """The fence of the term the calling task leads in (None outside any)."""
    return _CURRENT.get()
