"""Sending one case and judging its answer.

An Outcome's `status` is the HTTP status ("400"), the gRPC code ("INVALID_ARGUMENT"), or one of
DROPPED (the connection ended without an answer) and HUNG (no answer within the timeout).
`bad` says whether it breaks the rule every edge keeps: a malformed request gets a client
error that names the problem, never a server error, a dropped connection or a hang.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

import aiohttp
import grpc
from yarl import URL

from bench.fuzz.cases import HEALTH, Case, Grpc, Http, Raw
from kemu import wire

DROPPED: Final = "DROPPED"
HUNG: Final = "HUNG"
TIMEOUT: Final = 10.0

# gRPC codes a refused request may end with; OK, INTERNAL, UNKNOWN, UNAVAILABLE (a dropped
# connection), DEADLINE_EXCEEDED (a hang) and DATA_LOSS may not, nor RESOURCE_EXHAUSTED but
# as the server's TooManyRequests (gRPC's own, "metadata size exceeds", is a broken answer).
REFUSALS: Final = frozenset(
    {
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "RESOURCE_EXHAUSTED/TooManyRequests",
    }
)


@dataclass(frozen=True)
class Outcome:
    case: Case
    status: str
    message: str

    @property
    def bad(self) -> bool:
        s = self.status
        if s in (DROPPED, HUNG):
            return True
        if s.isdigit():
            code = int(s)
            if self.case.edge == HEALTH:  # health answers GETs it understands with 2xx/503
                return not (code < 500 or (code == 503 and "check failed" in self.message))
            return not 400 <= code < 500 or not self.message
        return s not in REFUSALS or not self.message

    def line(self) -> str:
        return f"{self.status}: {self.message[:300]!r} <- {self.case.describe()}"


async def http(session: aiohttp.ClientSession, base: str, case: Case) -> Outcome:
    r = case.request
    assert isinstance(r, Http)
    headers = {} if r.content_type is None else {"Content-Type": r.content_type}
    if r.accept is not None:
        headers["Accept"] = r.accept
    data: Any = r.body if r.body or r.method in ("POST", "PUT", "PATCH") else None
    if r.chunked:
        data = _chunks(r.body)
    try:
        async with session.request(
            r.method,
            URL(base + r.path, encoded=True),  # (as given: not normalized, not re-quoted)
            data=data,
            headers=headers,
            timeout=aiohttp.ClientTimeout(total=TIMEOUT),
            skip_auto_headers=() if r.content_type is not None else ("Content-Type",),
        ) as resp:
            text = await resp.text(errors="replace")
            return Outcome(case, str(resp.status), _message(text))
    except TimeoutError:
        return Outcome(case, HUNG, "")
    except aiohttp.ClientError as e:
        return Outcome(case, DROPPED, f"{type(e).__name__}: {e}")


async def _chunks(body: bytes) -> AsyncIterator[bytes]:
    for i in range(0, len(body), 256 * 1024):
        yield body[i : i + 256 * 1024]


def metadata(e: grpc.aio.AioRpcError) -> dict[str, str]:
    """The trailing metadata of a failed call (text values only)."""
    md: Any = e.trailing_metadata() or ()
    return {str(k): v for k, v in md if isinstance(v, str)}


def _message(text: str) -> str:
    """A Status body's message, else the text (aiohttp's own 4xx answers are plain text)."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()
    if isinstance(body, dict) and body.get("kind") == "Status":
        return str(body.get("message") or "")
    return text.strip()[:1000]


async def raw(host: str, port: int, case: Case) -> Outcome:
    """The bytes as they are; the answer is read up to its Content-Length. The health edge's
    requests half-close (its server reads one request per connection); the REST edge's do not
    (aiohttp takes a half-close for a client that has gone)."""
    r = case.request
    assert isinstance(r, Raw)
    try:
        async with asyncio.timeout(TIMEOUT):
            reader, writer = await asyncio.open_connection(host, port)
            try:
                writer.write(r.data)
                await writer.drain()
                if not r.rest and writer.can_write_eof():
                    writer.write_eof()
                data = await _response(reader)
            finally:
                writer.close()
    except TimeoutError:
        return Outcome(case, HUNG, "")
    except OSError as e:
        return Outcome(case, DROPPED, f"{type(e).__name__}: {e}")
    head, _, body = data.partition(b"\r\n\r\n")
    parts = head.split(b" ", 2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/") or not parts[1].isdigit():
        return Outcome(case, DROPPED, repr(data[:200]))
    return Outcome(case, parts[1].decode(), body.decode("utf-8", "replace").strip())


async def _response(reader: asyncio.StreamReader) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = await reader.read(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")[1:]
            if line.lower().startswith(b"content-length:")
        ),
        None,
    )
    if length is None:
        return data + await reader.read()
    while len(body) < length:
        chunk = await reader.read(65536)
        if not chunk:
            break
        body += chunk
    return head + b"\r\n\r\n" + body


async def call(
    channel: grpc.aio.Channel, case: Case, credentials: Sequence[tuple[str, str]] = ()
) -> Outcome:
    """The call, with `credentials` as its metadata (a bearer token's)."""
    r = case.request
    assert isinstance(r, Grpc)
    md = tuple(credentials) or None
    try:
        if r.stream:
            stream = channel.unary_stream(r.method, None, None)(
                r.body, timeout=TIMEOUT, metadata=md
            )
            async for _ in stream:
                break  # a refused watch never sends a message
            stream.cancel()
            return Outcome(case, "OK", "")
        await channel.unary_unary(r.method, None, None)(r.body, timeout=TIMEOUT, metadata=md)
    except grpc.aio.AioRpcError as e:
        code = e.code()
        status = HUNG if code is grpc.StatusCode.DEADLINE_EXCEEDED else code.name
        if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
            reason = metadata(e).get(wire.REASON_KEY)
            status += f"/{reason or 'grpc'}"
        return Outcome(case, status, e.details() or "")
    return Outcome(case, "OK", "")
