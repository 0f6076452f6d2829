"""The apiservers serving a virtual cluster: one etcd key each under `PEERS`, its last
heartbeat's wall time. The event-driven clock counts the work of one apiserver's sessions and
requests: it needs to be the only one (docs/virtual-time.md)."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

import anyio

from apiserver.storage.etcd import EtcdStore
from kemu.machinery.errors import ApiError, BadRequest

logger = logging.getLogger(__name__)

_PEER_HEARTBEAT: Final = 2.0  # wall seconds between two writes of an apiserver's PEERS key
_PEER_EXPIRY: Final = 6.0  # wall seconds after which a PEERS key no longer counts
PEERS: Final = "/kemu.io/clock-apiservers/"
"""One key per apiserver serving the virtual cluster (its host:port), its last heartbeat's
wall time: the event-driven clock needs to be the only one."""


class Peers:
    def __init__(self, store: EtcdStore, identity: str, wall: Callable[[], float]) -> None:
        """`identity`: this apiserver's (host:port); "" counts no peers (one apiserver)."""
        self._store = store
        self.identity = identity
        self._wall = wall
        self.others = 0
        """Other apiservers serving the cluster, as last seen."""

    async def heartbeat(self) -> None:
        """Keeps this apiserver's key under PEERS current and counts the others' (wall
        time: transport, not behaviour), until cancelled; then removes the key."""
        # (never fatal: etcd away or a race with another writer only delays the next beat)
        try:
            while True:
                try:
                    await self._heartbeat_once()
                except ApiError as e:
                    logger.debug("clock heartbeat: %s", e)
                await anyio.sleep(_PEER_HEARTBEAT)
        finally:
            with anyio.move_on_after(2, shield=True):
                key = PEERS + self.identity
                try:
                    kv = await self._store.get(key)
                    if kv is not None:
                        await self._store.delete(key, kv.mod_revision)
                except ApiError:
                    pass

    async def _heartbeat_once(self) -> None:
        key = PEERS + self.identity
        value = repr(self._wall()).encode()
        kv = await self._store.get(key)
        if kv is None:
            await self._store.create(key, value)
        else:
            await self._store.update(key, value, kv.mod_revision)
        await self.count_others()

    async def count_others(self) -> int:
        """The other apiservers whose PEERS key is current (and remembers the count)."""
        now = self._wall()
        own = PEERS + self.identity
        listed = await self._store.range(PEERS)
        self.others = sum(
            1
            for kv in listed.kvs
            if kv.key != own and now - float(kv.value.decode() or 0) < _PEER_EXPIRY
        )
        return self.others

    async def check_single_driver(self) -> None:
        """The event-driven clock counts the work of this apiserver's clock sessions and
        requests only: with several apiservers serving the cluster it cannot know the cluster
        is quiescent (not supported yet: docs/virtual-time.md)."""
        others = await self.count_others() if self.identity else 0
        if others:
            raise BadRequest(
                "the event-driven clock (rate max, advance) needs a cluster served by one "
                f"apiserver: {others} other apiserver(s) serve this one; a scaled rate "
                "(kemuctl clock rate N) works with several"
            )
