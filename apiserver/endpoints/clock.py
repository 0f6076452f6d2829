"""The gRPC edge of the cluster clock: the Clock service (proto/kemu/api/v1/clock.proto), served
beside the Api on the apiserver's port. kemu only: no Kubernetes API has it (docs/virtual-time.md).

In real time only GetClock answers (the apiserver's time); every other call is BadRequest.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator, Callable
from typing import Final

import grpc
from google.protobuf.message import DecodeError

from apiserver.clock.cluster_clock import ClusterClock
from apiserver.endpoints.calls import Calls, Context, abort, as_is, serialize
from apiserver.endpoints.inflight import Limiter
from kemu.api.v1 import clock_pb2
from kemu.machinery.errors import ApiError, BadRequest
from kemu.machinery.virtual_time import REAL_TIME_CLOCK, ClockMode

SERVICE: Final = "kemu.api.v1.Clock"
_RESOURCE: Final = "clock"  # (in the request metrics; not counted as the cluster's work)


class ClockService:
    def __init__(
        self, calls: Calls, cluster_clock: ClusterClock | None, now: Callable[[], float]
    ) -> None:
        """`cluster_clock`: the virtual clock (`--clock virtual`), None in real time."""
        self._calls = calls
        self._cluster_clock = cluster_clock
        self._now = now

    def _virtual_clock(self) -> ClusterClock:
        if self._cluster_clock is None:
            raise BadRequest(REAL_TIME_CLOCK)
        return self._cluster_clock

    async def get_clock(
        self, req: clock_pb2.ClockRequest, context: Context[clock_pb2.ClockStatus]
    ) -> clock_pb2.ClockStatus:
        async def call() -> clock_pb2.ClockStatus:
            if self._cluster_clock is None:
                return clock_pb2.ClockStatus(mode=ClockMode.REAL.value, now=self._now())
            return self._cluster_clock.status()

        return await self._calls.serve("get", _RESOURCE, context, call)

    async def set_clock_rate(
        self, req: clock_pb2.SetClockRateRequest, context: Context[clock_pb2.ClockStatus]
    ) -> clock_pb2.ClockStatus:
        async def call() -> clock_pb2.ClockStatus:
            await self._virtual_clock().set_rate(math.inf if req.max else req.rate)
            return self._virtual_clock().status()

        return await self._calls.serve("update", _RESOURCE, context, call)

    async def advance_clock(
        self, req: clock_pb2.AdvanceClockRequest, context: Context[clock_pb2.ClockStatus]
    ) -> clock_pb2.ClockStatus:
        async def call() -> clock_pb2.ClockStatus:
            await self._virtual_clock().advance(req.seconds)
            return self._virtual_clock().status()

        return await self._calls.serve("update", _RESOURCE, context, call)

    async def expect_clock_session(
        self, req: clock_pb2.ExpectClockSessionRequest, context: Context[clock_pb2.ClockStatus]
    ) -> clock_pb2.ClockStatus:
        async def call() -> clock_pb2.ClockStatus:
            self._virtual_clock().expect(req.boot_token, req.ttl_seconds)
            return self._virtual_clock().status()

        return await self._calls.serve("update", _RESOURCE, context, call)

    async def clock_session(self, requests: AsyncIterator[bytes], context: Context[bytes]) -> None:
        """A component's clock session (a stream of ClockReport in, ClockUpdate out)."""

        async def reports() -> AsyncIterator[clock_pb2.ClockReport]:
            async for data in requests:
                try:
                    yield clock_pb2.ClockReport.FromString(data)
                except DecodeError:
                    raise BadRequest("a ClockReport that does not decode") from None

        async def send(update: clock_pb2.ClockUpdate) -> None:
            await context.write(update.SerializeToString())

        try:
            await self._virtual_clock().session(reports(), send)
        except ApiError as e:
            await abort(context, e)

    def handler(self, limiter: Limiter | None = None) -> grpc.GenericRpcHandler[bytes, object]:
        """The Clock service's handlers; its unary methods behind `limiter` (as the Api's)."""
        unary = self._calls.unary
        status = serialize
        return grpc.method_handlers_generic_handler(
            SERVICE,
            {
                "GetClock": unary(
                    "GetClock", self.get_clock, clock_pb2.ClockRequest, status, limiter
                ),
                "SetClockRate": unary(
                    "SetClockRate",
                    self.set_clock_rate,
                    clock_pb2.SetClockRateRequest,
                    status,
                    limiter,
                ),
                "AdvanceClock": unary(
                    "AdvanceClock",
                    self.advance_clock,
                    clock_pb2.AdvanceClockRequest,
                    status,
                    limiter,
                ),
                "ExpectClockSession": unary(
                    "ExpectClockSession",
                    self.expect_clock_session,
                    clock_pb2.ExpectClockSessionRequest,
                    status,
                    limiter,
                ),
                # A clock session lasts as long as its component: never counted by the
                # in-flight limit.
                "ClockSession": grpc.stream_stream_rpc_method_handler(
                    self.clock_session, response_serializer=as_is
                ),
            },
        )
