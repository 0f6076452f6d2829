"""A gRPC server of the Api service's Version method alone, for unit tests of what happens
around one call (the client's counting, the in-flight limit)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc

from apiserver.endpoints.calls import as_is, handler_of, serialize
from apiserver.endpoints.stream_calls import CallStreams, Method
from kemu import wire
from kemu.api.v1 import api_pb2


@asynccontextmanager
async def version_server(behaviour: Any) -> AsyncIterator[str]:
    """The address of a server whose Version method is `behaviour` over request bytes (as
    ApiService.handler builds it: decoded by wire.unary), unary and on the Calls stream,
    stopped at the end."""
    version = Method(wire.unary(behaviour, api_pb2.VersionRequest), serialize)
    handler = grpc.method_handlers_generic_handler(
        "kemu.api.v1.Api",
        {
            "Version": handler_of(version),
            # (and on the Calls stream, as ApiService.handler serves it)
            "Calls": grpc.stream_stream_rpc_method_handler(
                CallStreams({"Version": version}).serve, response_serializer=as_is
            ),
        },
    )
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(None)
