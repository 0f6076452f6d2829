"""kubelet/lease_batch.py: the renewals handed over in one round of the event loop leave as one
call; each caller gets its own Lease's outcome."""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import pytest

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import ApiError, Conflict, InternalError, Unavailable
from kubelet.lease_batch import LeaseBatcher

pytestmark = pytest.mark.anyio


def _lease(name: str) -> types_pb2.Lease:
    lease = types_pb2.Lease()
    lease.metadata.name = name
    lease.metadata.namespace = "kube-node-lease"
    return lease


class _Server:
    """Answers batches: each Lease written with the next resourceVersion, except those named
    in `conflicts`; `fail` makes the whole call fail."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.singles: list[str] = []
        self.conflicts: set[str] = set()
        self.fail: Exception | None = None
        self.revision = 100

    async def batch(self, leases: Sequence[types_pb2.Lease]) -> list[types_pb2.Lease | ApiError]:
        self.batches.append([lease.metadata.name for lease in leases])
        await anyio.lowlevel.checkpoint()
        if self.fail is not None:
            raise self.fail
        return [self._write(lease) for lease in leases]

    def _write(self, lease: types_pb2.Lease) -> types_pb2.Lease | ApiError:
        if lease.metadata.name in self.conflicts:
            return Conflict(f"leases {lease.metadata.name}: the object has been modified")
        self.revision += 1
        out = types_pb2.Lease()
        out.CopyFrom(lease)
        out.metadata.resource_version = str(self.revision)
        return out

    async def one(self, lease: types_pb2.Lease) -> types_pb2.Lease:
        self.singles.append(lease.metadata.name)
        result = self._write(lease)
        if isinstance(result, ApiError):
            raise result
        return result


async def _renew_all(batcher: LeaseBatcher, names: Sequence[str]) -> dict[str, str | ApiError]:
    out: dict[str, str | ApiError] = {}

    async def renew(name: str) -> None:
        try:
            out[name] = (await batcher.update(_lease(name))).metadata.resource_version
        except ApiError as e:
            out[name] = e

    async with anyio.create_task_group() as tg:
        for name in names:
            tg.start_soon(renew, name)
    return out


async def test_renewals_of_one_round_leave_as_one_call_each_with_its_own_outcome() -> None:
    server = _Server()
    server.conflicts = {"n3"}
    batcher = LeaseBatcher(server.batch, server.one)
    names = [f"n{i}" for i in range(8)]
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        out = await _renew_all(batcher, names)
        # a later instant's renewals are a call of their own
        later = await _renew_all(batcher, ["n0", "n1"])
        tg.cancel_scope.cancel()
    assert server.batches == [names, ["n0", "n1"]]
    assert server.singles == []
    assert isinstance(out.pop("n3"), Conflict)  # only its own
    assert sorted(map(str, out.values())) == [str(r) for r in range(101, 108)]
    assert sorted(map(str, later.values())) == ["108", "109"]


async def test_a_call_that_fails_fails_each_renewal_with_its_error() -> None:
    server = _Server()
    server.fail = Unavailable("the apiserver is going away")
    batcher = LeaseBatcher(server.batch, server.one)
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        out = await _renew_all(batcher, ["a", "b"])
        server.fail = ValueError("not an ApiError")
        broken = await _renew_all(batcher, ["a"])
        tg.cancel_scope.cancel()
    assert all(isinstance(e, Unavailable) for e in out.values()), out
    assert isinstance(broken["a"], InternalError)
    assert batcher.enabled


async def test_an_apiserver_without_update_batch_turns_batching_off() -> None:
    server = _Server()
    server.fail = InternalError("UNIMPLEMENTED: Method not found!")
    batcher = LeaseBatcher(server.batch, server.one)
    async with anyio.create_task_group() as tg:
        await tg.start(batcher.run)
        out = await _renew_all(batcher, ["a", "b"])
        again = await _renew_all(batcher, ["a"])
        tg.cancel_scope.cancel()
    # the batch in flight is sent again one by one; later renewals go one by one
    assert not batcher.enabled
    assert len(server.batches) == 1
    assert server.singles == ["a", "b", "a"]
    assert sorted(map(str, out.values())) == ["101", "102"] and again == {"a": "103"}
