"""dryRun=All: every step of a write but the write itself (upstream's DryRunnableStorage).

A Registry over a `DryRunStore` runs defaulting, admission, validation and preconditions as
usual; the store checks what etcd would check (the key exists or not, the revision is still
the expected one; when it is not, the Conflict carries the key as it is, as etcd's failed
transaction does) and writes nothing. As upstream, a dry-run create returns the object without
a resourceVersion, and a dry-run update or delete returns it at the revision it was read at.
"""

from __future__ import annotations

from typing import Protocol

from apiserver.storage.etcd import Companion, Guard, GuardFailed, KeyValue, StaleRevision
from kemu.machinery.errors import Conflict, NotFound


class Store(Protocol):
    """What the registry needs of etcd (EtcdStore, or a DryRunStore over it)."""

    async def get(self, key: str, *, revision: int = 0) -> KeyValue | None: ...
    async def create(
        self,
        key: str,
        value: bytes,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int: ...
    async def update(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int: ...
    async def delete(
        self,
        key: str,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int: ...


class DryRunStore:
    """The write half of EtcdStore's interface, checked against a real store, writing nothing."""

    def __init__(self, store: Store) -> None:
        self._store = store

    async def get(self, key: str, *, revision: int = 0) -> KeyValue | None:
        return await self._store.get(key, revision=revision)

    async def create(
        self,
        key: str,
        value: bytes,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        await self._check_guard(guard)
        if await self._store.get(key) is not None:
            raise Conflict(f"key {key} already exists")
        return 0  # the registry renders revision 0 as no resourceVersion

    async def update(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        await self._check_guard(guard)
        return await self._check(key, expected_revision)

    async def delete(
        self,
        key: str,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        await self._check_guard(guard)
        return await self._check(key, expected_revision)

    async def _check_guard(self, guard: Guard | None) -> None:
        """An enforced fencing token is checked as the write would check it."""
        if guard is None or not guard.enforce:
            return
        kv = await self._store.get(guard.key)
        current = kv.value if kv is not None else None
        if current != guard.value:
            raise GuardFailed(current)

    async def _check(self, key: str, expected_revision: int) -> int:
        kv = await self._store.get(key)
        if kv is None:
            raise NotFound(f"key {key} not found")
        if kv.mod_revision != expected_revision:
            raise StaleRevision(f"key {key} was modified", kv)
        return expected_revision
