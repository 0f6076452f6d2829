"""A gRPC server of the Api service's Version method alone, for unit tests of what happens
around one call (the client's counting, the in-flight limit)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import grpc

from kemu import wire
from kemu.api.v1 import api_pb2


@asynccontextmanager
async def version_server(behaviour: Any) -> AsyncIterator[str]:
    """The address of a server whose Version method is `behaviour` over request bytes (as
    ApiService.handler builds it: decoded by wire.unary), stopped at the end."""
    handler = grpc.method_handlers_generic_handler(
        "kemu.api.v1.Api",
        {
            "Version": grpc.unary_unary_rpc_method_handler(
                wire.unary(behaviour, api_pb2.VersionRequest),
                response_serializer=api_pb2.VersionInfo.SerializeToString,
            )
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
