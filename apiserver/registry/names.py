"""The names the apiserver makes up for `metadata.generateName` (upstream's
staging/src/k8s.io/apiserver/pkg/storage/names/generate.go, SimpleNameGenerator): the base cut
to 58 characters and 5 characters of utilrand's alphabet (no vowels, no 0, 1 or 3).

Upstream draws the 5 characters at random, and so do `RandomNames`. On the virtual clock kemu
promises that a seeded scenario run twice does the same (ARCHITECTURE.md, Time), and names are
part of what it does: a ReplicaSet's pods must get the same names each run. `SeededNames` makes
the n-th name of a (resource, namespace, base) a function of those four, and passes over the
names its apiserver's watch cache holds (so that an apiserver restarted with the objects of its
previous life does not walk into their names). Concurrent creates under one base (a
controller's batch of identical pods, slowStartBatch's 2, 4, 8, ...) take the names in the
order they commit: each holds its base's turn (`NameGenerator.turn`) from its name to its
write in etcd, so the n-th name is the n-th object of the base in the watch, and in every
watcher's queue (the scheduler's, which takes pods of one priority queued at one instant in
arrival order). Without it, the names went in the order the apiserver served the creates and
the objects in the order their writes committed: two identical pods swapped nodes between
two runs of a long random scenario with four replicas (KEMU_TEST_SEED=2850325603).
A name that is taken all the same (another apiserver's at once) is handled as upstream handles
a random collision: the registry tries again with the next name (RetryGenerateName) or
answers AlreadyExists.
"""

from __future__ import annotations

import contextlib
import hashlib
import secrets
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager
from typing import Final, Protocol

import anyio

from kemu.machinery.apps import SAFE_ALPHANUMS

MAX_NAME_LENGTH: Final = 63
RANDOM_LENGTH: Final = 5
MAX_GENERATED_NAME_LENGTH: Final = MAX_NAME_LENGTH - RANDOM_LENGTH


Taken = Callable[[str], bool]
"""Whether a name is known to be taken (the watch cache holds an object under it)."""


class NameGenerator(Protocol):
    def generate(self, resource: str, namespace: str, base: str, taken: Taken) -> str:
        """A name for an object of `resource` in `namespace` asking for `base` + something."""
        ...

    def turn(self, resource: str, namespace: str, base: str) -> AbstractAsyncContextManager[None]:
        """Held by a create from its name to its write: the creates of one base one at a
        time where the generator promises their order (a no-op where it does not)."""
        ...


def _cut(base: str) -> str:
    return base[:MAX_GENERATED_NAME_LENGTH]


class RandomNames:
    """Upstream's SimpleNameGenerator: random characters (the real-time clock)."""

    def generate(self, resource: str, namespace: str, base: str, taken: Taken) -> str:
        del resource, namespace, taken
        return _cut(base) + "".join(secrets.choice(SAFE_ALPHANUMS) for _ in range(RANDOM_LENGTH))

    def turn(self, resource: str, namespace: str, base: str) -> AbstractAsyncContextManager[None]:
        del resource, namespace, base
        return contextlib.nullcontext()


class SeededNames:
    """Names that the same run makes the same (the virtual clock): see the module's text."""

    MAX_PASSED: Final = 10_000
    """Taken names passed over at most in one call (then the last is answered, and the store
    refuses it as a collision)."""

    def __init__(self) -> None:
        self._made: dict[tuple[str, str, str], int] = {}
        self._turns: dict[tuple[str, str, str], anyio.Lock] = {}
        """A lock per base that a create holds or waits for (dropped when none does)."""

    @contextlib.asynccontextmanager
    async def turn(self, resource: str, namespace: str, base: str) -> AsyncIterator[None]:
        key = (resource, namespace, base)
        lock = self._turns.setdefault(key, anyio.Lock())
        try:
            async with lock:
                yield
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._turns.pop(key, None)

    def generate(self, resource: str, namespace: str, base: str, taken: Taken) -> str:
        key = (resource, namespace, base)
        first = self._made.get(key, 0)
        n = first
        name = _cut(base) + _suffix(resource, namespace, base, n)
        while taken(name) and n < first + self.MAX_PASSED:
            n += 1
            name = _cut(base) + _suffix(resource, namespace, base, n)
        self._made[key] = n + 1
        return name


def _suffix(resource: str, namespace: str, base: str, n: int) -> str:
    digest = hashlib.sha256(f"{resource}\0{namespace}\0{base}\0{n}".encode()).digest()
    return "".join(SAFE_ALPHANUMS[b % len(SAFE_ALPHANUMS)] for b in digest[:RANDOM_LENGTH])


RANDOM_NAMES: Final = RandomNames()
