"""etcd3 storage: the only code in kemu that speaks to etcd.

Keys are `/registry/<resource>/<namespace>/<name>` (cluster-scoped: `/registry/<resource>/<name>`)
and values are serialized protobuf objects. An object's resourceVersion is its etcd mod revision:
every write is a transaction that compares it, so a stale resourceVersion is a Conflict.

We call etcd's gRPC API through the stubs aetcd ships rather than aetcd's client, because we
need the response header revision of every transaction and a watch we can resume and cancel
under our own task group.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any, Final

import anyio
import grpc
from aetcd import rpc

from kemu.client.endpoints import channel_target
from kemu.component.latency import CallDelay
from kemu.machinery.errors import Conflict, Gone, InternalError, NotFound, Unavailable

logger = logging.getLogger(__name__)

_EQUAL: Final = 0
_TARGET_CREATE: Final = 1
_TARGET_MOD: Final = 2
_TARGET_VALUE: Final = 3
_EVENT_PUT: Final = 0
_ANY_WATCH: Final = -1  # the watch id of a requested progress notification's answer
_MAX_MESSAGE: Final = 64 * 1024 * 1024
_REQUIRE_LEADER: Final = "hasleader"  # etcd rpctypes.MetadataRequireLeaderKey


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    mod_revision: int
    create_revision: int


@dataclass(frozen=True)
class Progress:
    """etcd's word that a watch has been sent every change up to `revision`."""

    revision: int


@dataclass(frozen=True, slots=True)
class Writes:
    """What a prefix holds at store revision `revision`: its number of keys, and how many of
    them were written (created or updated) after the revision asked about."""

    revision: int
    keys: int
    written_after: int


@dataclass(frozen=True, slots=True)
class StorageEvent:
    """One change of one key. `prev` is the value before (None for a create)."""

    type: str  # PUT or DELETE
    key: str
    value: bytes | None  # None for DELETE
    prev: bytes | None
    revision: int


@dataclass(frozen=True, slots=True)
class RangeResult:
    kvs: list[KeyValue]
    revision: int  # the store revision the range was read at
    more: bool


class StaleRevision(Conflict):
    """A compare-and-swap on a key that changed since the expected revision. `current` is the
    key as the failed transaction read it (its failure branch), so that the caller's retry
    needs no read of its own (upstream etcd3 store's OpGet in the Else of its Txn)."""

    def __init__(self, message: str, current: KeyValue) -> None:
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class Guard:
    """A write's condition on another key, checked in the write's own transaction: the
    fencing token of a write made as leader (apiserver/registry/fencing.py) against the lease's
    holder record.

    Enforced, the write is made only while `key` holds `value` (else GuardFailed: etcd fails a
    value comparison on a missing key too). Not enforced, the write is made anyway and the
    transaction reads `key`: `on_mismatch(current, revision)` is told when it held something
    else at the write's revision."""

    key: str
    value: bytes
    enforce: bool
    on_mismatch: Callable[[bytes | None, int], None] | None = None


@dataclass(frozen=True)
class Companion:
    """A second key written in the same transaction as the object (`value` None: deleted)."""

    key: str
    value: bytes | None


class GuardFailed(Exception):
    """An enforced Guard did not hold; `current` is what its key held (None: missing). Not an
    ApiError: the caller says what the guard meant."""

    def __init__(self, current: bytes | None) -> None:
        super().__init__("guard failed")
        self.current = current


def _guard_compare(guard: Guard | None) -> list[Any]:
    if guard is None or not guard.enforce:
        return []
    return [
        rpc.Compare(result=_EQUAL, target=_TARGET_VALUE, key=guard.key.encode(), value=guard.value)
    ]


def _companion_ops(companion: Companion | None) -> list[Any]:
    if companion is None:
        return []
    k = companion.key.encode()
    if companion.value is None:
        return [rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=k))]
    return [rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=companion.value))]


def _guard_read(guard: Guard | None, *, enforce: bool) -> list[Any]:
    """The read of the guard's key: in the failure branch of an enforced guard, in the success
    branch of an observed one."""
    if guard is None or guard.enforce != enforce:
        return []
    return [rpc.RequestOp(request_range=rpc.RangeRequest(key=guard.key.encode()))]


def _range_value(op: Any) -> bytes | None:
    kvs = op.response_range.kvs
    return bytes(kvs[0].value) if kvs else None


def _check_guard(guard: Guard | None, resp: Any) -> None:
    """After a transaction: raises GuardFailed when an enforced guard is why it failed; tells
    an observed guard's on_mismatch what its key held when the write succeeded."""
    if guard is None:
        return
    if guard.enforce:
        if not resp.succeeded:
            current = _range_value(resp.responses[-1])
            if current != guard.value:
                raise GuardFailed(current)
        return
    if resp.succeeded and guard.on_mismatch is not None:
        current = _range_value(resp.responses[-1])
        if current != guard.value:
            guard.on_mismatch(current, int(resp.header.revision))


def prefix_end(prefix: bytes) -> bytes:
    """The range end that covers every key starting with `prefix`."""
    end = bytearray(prefix)
    for i in range(len(end) - 1, -1, -1):
        if end[i] < 0xFF:
            end[i] += 1
            return bytes(end[: i + 1])
    return b"\x00"


def _translate(err: grpc.aio.AioRpcError, what: str) -> Exception:
    details = err.details() or ""
    code = err.code()
    if "compacted" in details:
        return Gone(f"too old resource version: {what}: {details}")
    if "no leader" in details:
        return Unavailable(f"etcd member has no leader: {details}")
    if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
        return Unavailable(f"etcd is unavailable: {details}")
    if "future revision" in details:
        return Unavailable(f"etcd has not reached the requested revision yet: {details}")
    return InternalError(f"etcd {what} failed: {code.name}: {details}")


def _raise_failed(key: str, resp: Any) -> None:
    """A compare-and-swap Txn that failed: its failure branch read the key."""
    kvs = resp.responses[0].response_range.kvs
    if not kvs:
        raise NotFound(f"key {key} not found")
    kv = kvs[0]
    current = KeyValue(key, kv.value, int(kv.mod_revision), int(kv.create_revision))
    raise StaleRevision(f"key {key} was modified", current)


def _always_wait() -> AbstractContextManager[bool]:
    return nullcontext(True)


class EtcdStore:
    """Key-value operations with compare-and-swap on mod revisions."""

    def __init__(self, endpoints: Sequence[str], *, timeout: float = 10.0) -> None:
        if not endpoints:
            raise ValueError("at least one etcd endpoint is required")
        self._endpoints = [e.removeprefix("http://").removeprefix("https://") for e in endpoints]
        self._timeout = timeout
        options = [
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
            ("grpc.max_send_message_length", _MAX_MESSAGE),
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
        ]
        # gRPC balances over the members with round_robin on a target listing them all: a
        # member that goes away is left out until it answers again, so every call goes to a
        # live one (a call in flight on it fails Unavailable; a watch is resumed by its caller).
        target = channel_target(tuple(self._endpoints), flag="--etcd-servers")
        self._channel = grpc.aio.insecure_channel(
            target, options=[*options, ("grpc.lb_policy_name", "round_robin")]
        )
        self._kv: Any = rpc.KVStub(self._channel)
        self._watch: Any = rpc.WatchStub(self._channel)
        self._maintenance: Any = rpc.MaintenanceStub(self._channel)
        self._latency: CallDelay | None = None
        self._parked: Callable[[], AbstractContextManager[bool]] = _always_wait

    def with_latency(
        self,
        latency: CallDelay | None,
        parked: Callable[[], AbstractContextManager[bool]] = _always_wait,
    ) -> EtcdStore:
        """A view of this store, over the same channel, whose round trips each wait
        `latency` first (--etcd-latency, kemu.component.latency; watches are not delayed),
        within `parked()`, which says whether this one waits (in virtual time the event-driven
        clock's count of requests held on a timer, apiserver/clock/activity.py). The API's
        reads and writes go through it; the cluster clock's key, the compactor and the
        readiness checks through the store itself."""
        view = copy.copy(self)
        view._latency = latency
        view._parked = parked
        return view

    async def close(self) -> None:
        await self._channel.close(None)

    async def _call(
        self,
        what: str,
        method: Any,
        request: Any,
        # gRPC's own deadline: an anyio scope around a unary grpc.aio call does not work.
        timeout: float | None = None,  # noqa: ASYNC109
    ) -> Any:
        if self._latency is not None:
            with self._parked() as wait:
                if wait:
                    await self._latency.wait()
        try:
            return await method(request, timeout=timeout or self._timeout, wait_for_ready=True)
        except grpc.aio.AioRpcError as e:
            raise _translate(e, what) from None
        except asyncio.CancelledError:
            # grpc.aio raises a bare CancelledError that escapes anyio scopes; let anyio see
            # its own cancellation first (stack-notes).
            await anyio.lowlevel.checkpoint()
            raise

    # ------------------------------------------------------------ reads

    async def current_revision(self) -> int:
        resp = await self._call(
            "range", self._kv.Range, rpc.RangeRequest(key=b"\x00", limit=1, count_only=True)
        )
        return int(resp.header.revision)

    async def status(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Raises Unavailable unless etcd answers within `timeout` (default: the store's)."""
        await self._call("status", self._maintenance.Status, rpc.StatusRequest(), timeout)

    async def get(self, key: str, *, revision: int = 0) -> KeyValue | None:
        resp = await self._call(
            "get", self._kv.Range, rpc.RangeRequest(key=key.encode(), revision=revision)
        )
        if not resp.kvs:
            return None
        kv = resp.kvs[0]
        return KeyValue(key, kv.value, int(kv.mod_revision), int(kv.create_revision))

    async def range(
        self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str = ""
    ) -> RangeResult:
        """Keys under `prefix` in key order, read at `revision` (0 = now)."""
        pfx = prefix.encode()
        start = (start_after.encode() + b"\x00") if start_after else pfx
        req = rpc.RangeRequest(key=start, range_end=prefix_end(pfx), revision=revision, limit=limit)
        resp = await self._call("range", self._kv.Range, req)
        kvs = [
            KeyValue(kv.key.decode(), kv.value, int(kv.mod_revision), int(kv.create_revision))
            for kv in resp.kvs
        ]
        return RangeResult(kvs, int(resp.header.revision), bool(resp.more))

    async def writes_since(self, prefix: str, revision: int) -> Writes:
        """How many keys `prefix` holds now and how many of them were written after
        `revision`. With the number of keys it held at `revision`, this tells whether anything
        under `prefix` changed since: no key written after it and as many keys (a deletion
        leaves one fewer). One keys-only range: etcd's count is of every key in the range,
        its kvs those that pass the mod-revision filter."""
        pfx = prefix.encode()
        req = rpc.RangeRequest(
            key=pfx, range_end=prefix_end(pfx), keys_only=True, min_mod_revision=revision + 1
        )
        resp = await self._call("range", self._kv.Range, req)
        return Writes(int(resp.header.revision), int(resp.count), len(resp.kvs))

    # ------------------------------------------------------------ writes

    async def create(
        self,
        key: str,
        value: bytes,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        """Puts `value` if `key` does not exist; returns the new revision. Conflict otherwise
        (GuardFailed first when an enforced `guard` does not hold). `companion` is written in
        the same transaction."""
        k = key.encode()
        req = rpc.TxnRequest(
            compare=[
                rpc.Compare(result=_EQUAL, target=_TARGET_CREATE, key=k, create_revision=0),
                *_guard_compare(guard),
            ],
            success=[
                rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value)),
                *_companion_ops(companion),
                *_guard_read(guard, enforce=False),
            ],
            failure=_guard_read(guard, enforce=True),
        )
        resp = await self._call("create", self._kv.Txn, req)
        _check_guard(guard, resp)
        if not resp.succeeded:
            raise Conflict(f"key {key} already exists")
        return int(resp.header.revision)

    async def update(
        self,
        key: str,
        value: bytes,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        """Compare-and-swap on the mod revision; returns the new revision.

        Raises NotFound when the key is gone and StaleRevision (a Conflict carrying the key
        as it now is) when it changed since `expected_revision`; GuardFailed first when an
        enforced `guard` does not hold. `companion` is written in the same transaction.
        """
        return await self._swap("update", key, value, expected_revision, guard, companion)

    async def delete(
        self,
        key: str,
        expected_revision: int,
        *,
        guard: Guard | None = None,
        companion: Companion | None = None,
    ) -> int:
        """Deletes `key` if it is still at `expected_revision`; returns the new revision.
        NotFound, StaleRevision and GuardFailed as `update`."""
        return await self._swap("delete", key, None, expected_revision, guard, companion)

    async def _swap(
        self,
        what: str,
        key: str,
        value: bytes | None,
        expected_revision: int,
        guard: Guard | None,
        companion: Companion | None,
    ) -> int:
        k = key.encode()
        write = (
            rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=k))
            if value is None
            else rpc.RequestOp(request_put=rpc.PutRequest(key=k, value=value))
        )
        req = rpc.TxnRequest(
            compare=[
                rpc.Compare(
                    result=_EQUAL, target=_TARGET_MOD, key=k, mod_revision=expected_revision
                ),
                *_guard_compare(guard),
            ],
            success=[write, *_companion_ops(companion), *_guard_read(guard, enforce=False)],
            failure=[
                rpc.RequestOp(request_range=rpc.RangeRequest(key=k)),
                *_guard_read(guard, enforce=True),
            ],
        )
        resp = await self._call(what, self._kv.Txn, req)
        _check_guard(guard, resp)
        if not resp.succeeded:
            _raise_failed(key, resp)
        return int(resp.header.revision)

    async def compact(self, revision: int) -> None:
        await self._call(
            "compact", self._kv.Compact, rpc.CompactionRequest(revision=revision, physical=True)
        )

    # ------------------------------------------------------------ watch

    async def watch(
        self, prefix: str, start_revision: int
    ) -> AsyncIterator[list[StorageEvent] | Progress]:
        """Batches of changes under `prefix` from `start_revision` (inclusive), in order, and
        `Progress(revision)` when etcd says every change up to `revision` has been sent.

        Only etcd's periodic progress notification of this watch says that: etcd sends it to a
        watch that has been sent every change (a synced one), on the watch's own channel, so
        after those changes. A requested one is not asked for: before 3.5.8, etcd answers a
        progress request at once with its current revision (watch id -1), ahead of changes it
        has not sent yet, all of them on a watch still catching up (etcd-io/etcd#15220);
        `writes_since` tells instead whether a quiet prefix is up to date.

        Raises Gone when `start_revision` was compacted and Unavailable when the stream breaks;
        the caller resumes from the revision after the last one it saw.
        """
        pfx = prefix.encode()
        create = rpc.WatchRequest(
            create_request=rpc.WatchCreateRequest(
                key=pfx,
                range_end=prefix_end(pfx),
                start_revision=start_revision,
                prev_kv=True,
                progress_notify=True,
            )
        )

        ended = asyncio.Event()

        async def requests() -> AsyncIterator[Any]:
            yield create
            # Keep the request side open while the watch lasts: closing it ends the watch on
            # the server. Then end, so that gRPC's task reading it finishes with the call
            # (left waiting, it is destroyed pending when the channel closes).
            await ended.wait()

        # As upstream's etcd3 watcher (clientv3.WithRequireLeader in createWatchChan): a member
        # that has lost its leader (cut from its peers) ends the stream, "etcdserver: no
        # leader", instead of keeping it open and silent; the caller resumes on another.
        call = self._watch.Watch(
            requests(), wait_for_ready=True, metadata=((_REQUIRE_LEADER, "true"),)
        )
        try:
            async for resp in call:
                if resp.canceled:
                    if resp.compact_revision:
                        raise Gone(
                            f"watch from revision {start_revision} is too old: compacted at "
                            f"{resp.compact_revision}"
                        )
                    raise Unavailable(f"etcd cancelled the watch: {resp.cancel_reason}")
                if not resp.events:
                    if not resp.created and resp.watch_id != _ANY_WATCH:
                        yield Progress(int(resp.header.revision))  # this watch's own
                    continue
                batch = []
                for ev in resp.events:
                    put = ev.type == _EVENT_PUT
                    batch.append(
                        StorageEvent(
                            type="PUT" if put else "DELETE",
                            key=ev.kv.key.decode(),
                            value=ev.kv.value if put else None,
                            prev=ev.prev_kv.value if ev.HasField("prev_kv") else None,
                            revision=int(ev.kv.mod_revision),
                        )
                    )
                yield batch
        except grpc.aio.AioRpcError as e:
            raise _translate(e, "watch") from None
        finally:
            ended.set()
            call.cancel()
        raise Unavailable("etcd watch stream ended")
