"""A minimal HTTP/1.1 GET client for the health server tests (one request per connection)."""

from __future__ import annotations

import anyio


async def http_request(
    port: int, path: str, *, method: str = "GET"
) -> tuple[int, dict[str, str], bytes]:
    """Send one request to 127.0.0.1:port; return (status, headers, body)."""
    with anyio.fail_after(5):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
            data = b""
            while True:
                try:
                    data += await stream.receive()
                except anyio.EndOfStream:
                    break
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in header_lines:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(status_line.split(" ")[1]), headers, body
