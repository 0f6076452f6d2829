"""A hollow kubelet's node Lease renewals due at one instant, sent as one call.

A hollow kubelet renews its nodes' Leases in phases (kubelet/app.py NODES_PER_PHASE): the
nodes of a phase share their deadlines, so up to 100 renewals wake together, every 10 s
(upstream's renewInterval, 0.25 of nodeLeaseDurationSeconds 40). One call each costs the
apiserver a request's gRPC and filter machinery per renewal; at 1,000 nodes that is 100
calls a second of the cluster's time, which bounds how fast a synthetic day replays (issue
#59 item 3, docs/virtual-time.md "Lease renewals in batches").

`LeaseBatcher.update` takes one node's renewal and answers it as `client.update` would; the
renewals handed to it while the event loop goes round once (the nodes of one phase, woken by
one timer instant of the clock) leave as one UpdateBatch (kemu.client.Client.update_batch),
which the apiserver serves as that many Updates, each its own compare-and-swap: each Lease
gets its own resourceVersion, renewTime and MODIFIED event, and a Conflict on one (someone
else wrote it) is that node's alone, retried by its agent as upstream's lease controller
retries (kubelet/node_status.py renew_lease). What changes is only how the calls travel, as
kubemark's hollow nodes would share a connection.

A batch that fails as a whole (the apiserver unreachable, or one that does not serve
UpdateBatch) fails each of its renewals with that error; an apiserver without UpdateBatch
(Unimplemented) turns the batching off: each renewal is then its own Update again.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Final

import anyio
from anyio.abc import TaskStatus

from kemu.api.v1 import types_pb2
from kemu.machinery.errors import ApiError, InternalError

logger = logging.getLogger(__name__)

MAX_BATCH: Final = 1000
"""The most renewals in one call (the apiserver's limit, apiserver/endpoints/servicer.py)."""

GATHER_ROUNDS: Final = 8
"""At most this many rounds of the event loop gather one batch (a round that brings no
renewal ends it)."""

UNIMPLEMENTED: Final = "UNIMPLEMENTED"
"""How kemu.wire names the gRPC status of a method the server does not serve (an older
apiserver): an InternalError whose message starts with it."""

SendBatch = Callable[[Sequence[types_pb2.Lease]], Awaitable[list[types_pb2.Lease | ApiError]]]
SendOne = Callable[[types_pb2.Lease], Awaitable[types_pb2.Lease]]


@dataclass
class _Renewal:
    lease: types_pb2.Lease
    done: anyio.Event = field(default_factory=anyio.Event)
    result: types_pb2.Lease | ApiError | None = None


class LeaseBatcher:
    """Sends the renewals handed to `update` in one event-loop round as one UpdateBatch;
    `run` (in the kubelet's task group) sends them."""

    def __init__(self, send_batch: SendBatch, send_one: SendOne) -> None:
        self._send_batch = send_batch
        self._send_one = send_one
        self._pending: list[_Renewal] = []
        self._wake = anyio.Event()
        self.enabled = True
        self.batches = 0
        """Calls made (each with one or more renewals)."""

    async def update(self, lease: types_pb2.Lease) -> types_pb2.Lease:
        """`lease` written as `client.update(lease)` would (its errors raised)."""
        if not self.enabled:
            return await self._send_one(lease)
        renewal = _Renewal(lease)
        self._pending.append(renewal)
        self._wake.set()
        await renewal.done.wait()
        result = renewal.result
        if isinstance(result, ApiError):
            raise result
        assert result is not None
        return result

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            task_status.started()
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                # The other nodes woken by the same timer instant run before this task does
                # again: the rounds of the loop that bring more renewals gather them.
                for _ in range(GATHER_ROUNDS):
                    count = len(self._pending)
                    await anyio.lowlevel.checkpoint()
                    if len(self._pending) == count:
                        break
                pending, self._pending = self._pending, []
                logger.debug("lease batch: %d renewals", len(pending))
                for start in range(0, len(pending), MAX_BATCH):
                    tg.start_soon(self._send, pending[start : start + MAX_BATCH])

    async def _send(self, batch: list[_Renewal]) -> None:
        try:
            if not self.enabled:
                results = await _each(self._send_one, [r.lease for r in batch])
            else:
                self.batches += 1
                results = await self._send_batch([r.lease for r in batch])
        except InternalError as e:
            if not (self.enabled and str(e).startswith(UNIMPLEMENTED)):
                results = [e] * len(batch)
            else:
                logger.info("the apiserver does not serve UpdateBatch: one call per renewal")
                self.enabled = False
                results = await _each(self._send_one, [r.lease for r in batch])
        except ApiError as e:
            results = [e] * len(batch)
        except Exception as e:  # (a renewal must not wait for ever: its agent retries)
            logger.exception("a batch of %d Lease renewals failed", len(batch))
            results = [InternalError(f"lease batch: {e}")] * len(batch)
        for renewal, result in zip(batch, results, strict=True):
            renewal.result = result
            renewal.done.set()


async def _each(
    send_one: SendOne, leases: Sequence[types_pb2.Lease]
) -> list[types_pb2.Lease | ApiError]:
    results: list[types_pb2.Lease | ApiError] = []
    for lease in leases:
        try:
            results.append(await send_one(lease))
        except ApiError as e:
            results.append(e)
    return results
