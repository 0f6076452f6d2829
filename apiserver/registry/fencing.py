"""The apiserver's half of fencing tokens (kemu.machinery.fencing): each Lease's holder
record, kept in the same etcd transaction as every write of the Lease, and the check of a
write's token against it in the write's own transaction.

The edges read a request's token (gRPC metadata or REST headers) and serve the request inside
`serving(token)`; the registry asks `guard()` for the storage Guard of the write it is about to
make and `companion(kind, obj)` for the holder record to write with a Lease. An enforced token
that no longer names the lease's term makes the write fail as Fenced (409 Conflict naming the
lease and its holder); one that is not enforced lets it through, as upstream, and the write is
logged as a stale leader write (WARNING "stale leader write: ...": the chaos harness counts
these lines).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Final

from apiserver.storage.etcd import Companion, Guard, GuardFailed
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Fenced
from kemu.machinery.fencing import FencingToken, describe_record, holder_record
from kemu.machinery.kinds import Kind

logger = logging.getLogger(__name__)

HOLDER_PREFIX: Final = "/kemu/lease-holders/"
"""Beside /registry: not an object of any resource, never listed or watched."""

_TOKEN: ContextVar[FencingToken | None] = ContextVar("kemu_fencing_token", default=None)


def holder_key(namespace: str, name: str) -> str:
    return f"{HOLDER_PREFIX}{namespace}/{name}"


@contextlib.contextmanager
def serving(token: FencingToken | None) -> Iterator[None]:
    """Serves one request whose writes carry `token` (None: a write made by no leader)."""
    reset = _TOKEN.set(token)
    try:
        yield
    finally:
        _TOKEN.reset(reset)


def guard(what: str) -> Guard | None:
    """The Guard of the write (`what`: "update pods ns/name") being served, if its request
    carries a token."""
    token = _TOKEN.get()
    if token is None:
        return None

    def stale(current: bytes | None, revision: int) -> None:
        logger.warning(
            "stale leader write: %s at revision %d by %s of lease %s, held by %s",
            what,
            revision,
            describe_record(token.record()),
            token.lease,
            describe_record(current),
        )

    return Guard(
        holder_key(token.namespace, token.name), token.record(), token.enforce, on_mismatch=stale
    )


def refused(what: str, failed: GuardFailed) -> Fenced:
    """The error of a write refused by its enforced token."""
    token = _TOKEN.get()
    assert token is not None, "a guard failed outside a fenced request"
    logger.info(
        "fenced: %s refused: lease %s is held by %s",
        what,
        token.lease,
        describe_record(failed.current),
    )
    return Fenced(
        f"lease {token.lease} is held by {describe_record(failed.current)}: this write's "
        f"fencing token names {describe_record(token.record())}, whose term has ended"
    )


NODE_LEASE_NAMESPACE: Final = "kube-node-lease"


def companion(kind: Kind, obj: object, *, deleted: bool = False) -> Companion | None:
    """The holder record written (or deleted) with a Lease; None for any other object, and for
    the kubelets' heartbeats (kube-node-lease: never a lock, and the most frequent lease
    writes: a token naming one is refused for want of a record)."""
    if kind.kind != "Lease":
        return None
    assert isinstance(obj, types_pb2.Lease)
    if obj.metadata.namespace == NODE_LEASE_NAMESPACE:
        return None
    key = holder_key(obj.metadata.namespace, obj.metadata.name)
    return Companion(key, None if deleted else holder_record(obj))
