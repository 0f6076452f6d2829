"""The server's side of SPDY/3.1 framing, as much as port-forward needs (the protocol: the
SPDY/3 draft, chromium.org/spdy/spdy-protocol/spdy-protocol-draft3-1; upstream speaks it
through github.com/moby/spdystream, which k8s.io/apimachinery/pkg/util/httpstream/spdy
wraps). Pure: bytes in, frames out.

A frame is 8 bytes of header and its data. A control frame's header is the control bit and
version 3, its type, flags and 24-bit length; a data frame's is the 31-bit stream id, flags
and length. Name/value header blocks (SYN_STREAM, SYN_REPLY) are zlib streams, one per
direction for the whole connection, seeded with the SPDY/3 dictionary and flushed with
Z_SYNC_FLUSH after each block; a block is a 32-bit count, then each name and value with its
32-bit length."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field
from typing import Final

VERSION: Final = 3
SYN_STREAM: Final = 1
SYN_REPLY: Final = 2
RST_STREAM: Final = 3
SETTINGS: Final = 4
PING: Final = 6
GOAWAY: Final = 7
HEADERS: Final = 8
WINDOW_UPDATE: Final = 9
FLAG_FIN: Final = 0x01

_HEADER: Final = struct.Struct(">IB3s")

_WORDS: Final = (
    "options head post put delete trace accept accept-charset accept-encoding accept-language "
    "accept-ranges age allow authorization cache-control connection content-base "
    "content-encoding content-language content-length content-location content-md5 "
    "content-range content-type date etag expect expires from host if-match "
    "if-modified-since if-none-match if-range if-unmodified-since last-modified location "
    "max-forwards pragma proxy-authenticate proxy-authorization range referer retry-after "
    "server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
    "method get status"
).split() + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
_TAIL: Final = (
    "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
    "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 "
    "Unauthorized403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 "
    "Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, "
    "Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,"
    "application/xml,application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age="
    "gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
)
DICTIONARY: Final = (
    b"".join(struct.pack(">I", len(w)) + w.encode() for w in _WORDS) + _TAIL.encode()
)
"""The SPDY/3 header compression dictionary (the draft's section 2.6.10.1)."""


class ProtocolError(Exception):
    """The peer sent what is not SPDY/3."""


@dataclass(frozen=True)
class Frame:
    control: bool
    kind: int
    """A control frame's type; a data frame's stream id."""
    flags: int
    data: bytes

    @property
    def stream_id(self) -> int:
        """The stream a data frame or a stream control frame is of."""
        if not self.control:
            return self.kind
        return int.from_bytes(self.data[:4], "big") & 0x7FFFFFFF


@dataclass
class Reader:
    """Frames out of the bytes of the connection, as they come."""

    _buffer: bytearray = field(default_factory=bytearray)
    _inflate: zlib._Decompress = field(default_factory=lambda: zlib.decompressobj(zdict=DICTIONARY))

    def feed(self, data: bytes) -> list[Frame]:
        self._buffer += data
        frames = []
        while len(self._buffer) >= _HEADER.size:
            first, flags, length = _HEADER.unpack_from(self._buffer)
            size = _HEADER.size + int.from_bytes(length, "big")
            if len(self._buffer) < size:
                break
            data = bytes(self._buffer[_HEADER.size : size])
            del self._buffer[:size]
            control = bool(first & 0x80000000)
            if control and (first >> 16) & 0x7FFF != VERSION:
                raise ProtocolError(f"SPDY version {(first >> 16) & 0x7FFF}, not {VERSION}")
            frames.append(Frame(control, first & 0xFFFF if control else first, flags, data))
        return frames

    def headers(self, frame: Frame) -> dict[str, str]:
        """A SYN_STREAM's name/value block (after its stream ids, priority and slot)."""
        offset = 10 if frame.kind == SYN_STREAM else 4
        try:
            block = self._inflate.decompress(frame.data[offset:])
        except zlib.error as e:
            raise ProtocolError(f"header block: {e}") from e
        (count,) = struct.unpack_from(">I", block)
        at, out = 4, {}
        for _ in range(count):
            name, at = _string(block, at)
            value, at = _string(block, at)
            out[name.lower()] = value.split("\x00")[0]
        return out


def _string(block: bytes, at: int) -> tuple[str, int]:
    (n,) = struct.unpack_from(">I", block, at)
    return block[at + 4 : at + 4 + n].decode(), at + 4 + n


@dataclass
class Writer:
    """Frames into bytes; its header blocks share one zlib stream."""

    _deflate: zlib._Compress = field(default_factory=lambda: zlib.compressobj(zdict=DICTIONARY))

    def syn_reply(self, stream_id: int, headers: dict[str, str] | None = None) -> bytes:
        block = struct.pack(">I", len(headers or {}))
        for name, value in (headers or {}).items():
            for s in (name, value):
                block += struct.pack(">I", len(s)) + s.encode()
        packed = self._deflate.compress(block) + self._deflate.flush(zlib.Z_SYNC_FLUSH)
        return _control(SYN_REPLY, 0, struct.pack(">I", stream_id) + packed)

    def data(self, stream_id: int, data: bytes, *, fin: bool) -> bytes:
        return _HEADER.pack(stream_id, FLAG_FIN if fin else 0, len(data).to_bytes(3, "big")) + data

    def ping(self, frame: Frame) -> bytes:
        """The answer to a PING: the same frame."""
        return _control(PING, 0, frame.data)


def _control(kind: int, flags: int, data: bytes) -> bytes:
    first = 0x80000000 | VERSION << 16 | kind
    return _HEADER.pack(first, flags, len(data).to_bytes(3, "big")) + data
