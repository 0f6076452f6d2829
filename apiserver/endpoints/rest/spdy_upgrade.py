"""SPDY/3.1 over a plain HTTP upgrade, the server's side (upstream: k8s.io/apimachinery/pkg/
util/httpstream/spdy/upgrade.go UpgradeResponse, and httpstream.go Handshake for the
X-Stream-Protocol-Version negotiation): kubectl's transport for exec, attach and port-forward
before the WebSocket ones, and its fallback (KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false,
KUBECTL_PORT_FORWARD_WEBSOCKETS=false) or when a WebSocket upgrade fails.

The request carries `Connection: Upgrade`, `Upgrade: SPDY/3.1` and one or more
`X-Stream-Protocol-Version` headers, the client's protocols in its order of preference; the
first one the server speaks is chosen (negotiateProtocol), the answer is `101 Switching
Protocols` with `Upgrade: SPDY/3.1` and the chosen protocol, and from then on the connection
carries SPDY frames (spdy.py) both ways. No common protocol is upstream's 403 `unable to
upgrade: unable to negotiate protocol: client supports [...], server accepts [...]` (as a
Status), the server's protocols listed in X-Accepted-Stream-Protocol-Versions, one header each
(`ProtocolRefused`); no protocol header at all is a 400.

aiohttp upgrades to WebSocket only: here the handler takes the connection over itself, as
aiohttp's WebSocketResponse does, by replacing the protocol's payload parser with one that
queues the raw bytes (`Connection.receive`) and writing through the response.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import anyio
from aiohttp import web
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from kemu.machinery.errors import BadRequest, Forbidden

logger = logging.getLogger(__name__)

SPDY_31: Final = "SPDY/3.1"
PROTOCOL_VERSION_HEADER: Final = "X-Stream-Protocol-Version"
ACCEPTED_PROTOCOLS_HEADER: Final = "X-Accepted-Stream-Protocol-Versions"
_BUFFERED_CHUNKS: Final = 64
"""Reads queued before the handler takes them; a peer that gets further ahead is
disconnected (what kemu answers needs only a client's first frames)."""


def wants_spdy(request: web.BaseRequest) -> bool:
    """httpstream.IsUpgradeRequest with SPDY/3.1: `Connection: Upgrade` and `Upgrade:
    SPDY/3.1` (any case)."""
    connection = {t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    return "upgrade" in connection and request.headers.get("Upgrade", "").lower() == "spdy/3.1"


class ProtocolRefused(Forbidden):
    """No protocol in common: the 403, and the server's protocols for its headers."""

    def __init__(self, message: str, accepted: Sequence[str]) -> None:
        super().__init__(message)
        self.accepted = tuple(accepted)

    def headers(self) -> list[tuple[str, str]]:
        """X-Accepted-Stream-Protocol-Versions once per protocol (Handshake's Header().Add)."""
        return [(ACCEPTED_PROTOCOLS_HEADER, p) for p in self.accepted]


def negotiate(request: web.BaseRequest, server_protocols: Sequence[str]) -> str:
    """Handshake: the first of the client's protocols the server speaks."""
    client = [
        p.strip()
        for value in request.headers.getall(PROTOCOL_VERSION_HEADER, [])
        for p in value.split(",")
        if p.strip()
    ]
    if not client:
        raise BadRequest(f"unable to upgrade: {PROTOCOL_VERSION_HEADER} is required")
    chosen = next((p for p in client if p in server_protocols), "")
    if not chosen:
        raise ProtocolRefused(
            "unable to upgrade: unable to negotiate protocol: client supports "
            f"[{' '.join(client)}], server accepts [{' '.join(server_protocols)}]",
            server_protocols,
        )
    return chosen


class _RawParser:
    """What aiohttp's RequestHandler.set_parser takes (feed_data, feed_eof): the upgraded
    connection's bytes, queued for `Connection.receive`."""

    def __init__(self, send: MemoryObjectSendStream[bytes], request: web.BaseRequest) -> None:
        self._send = send
        self._request = request

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        try:
            self._send.send_nowait(bytes(data))
        except anyio.WouldBlock:
            # a peer that writes faster than the handler reads: stop reading it (the
            # simulated answers need only its first frames)
            transport = self._request.transport
            if transport is not None:
                transport.close()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        return False, b""

    def feed_eof(self) -> None:
        self._send.close()


class Connection:
    """An upgraded connection: bytes in as they come, bytes out."""

    def __init__(self, response: web.StreamResponse, received: MemoryObjectReceiveStream[bytes]):
        self.response = response
        """The 101 answer, which the handler returns."""
        self._received = received

    async def receive(self) -> bytes | None:
        """The next bytes the peer sent; None once it closed its side."""
        try:
            return await self._received.receive()
        except anyio.EndOfStream:
            return None

    async def send(self, data: bytes) -> None:
        await self.response.write(data)

    def close(self) -> None:
        self._received.close()


async def upgrade(request: web.BaseRequest, protocol: str) -> Connection:
    """Answers 101 with `protocol` and takes the connection over (UpgradeResponse)."""
    response = web.StreamResponse(
        status=101,
        headers={
            "Connection": "Upgrade",
            "Upgrade": SPDY_31,
            PROTOCOL_VERSION_HEADER: protocol,
        },
    )
    response.force_close()  # after the handler, the connection ends: no next request on it
    send, received = anyio.create_memory_object_stream[bytes](_BUFFERED_CHUNKS)
    handler: Any = request.protocol  # aiohttp's RequestHandler (set_parser is not public)
    # before the 101 goes out: the peer sends its first frame only after reading it
    handler.set_parser(_RawParser(send, request))
    handler.keep_alive(False)
    await response.prepare(request)
    return Connection(response, received)
