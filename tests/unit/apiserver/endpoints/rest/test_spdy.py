"""SPDY/3.1 framing for port-forward (issue #57 item 6): what a client such as kubectl's
spdystream sends is read, and what the server writes is SPDY/3 a client can read."""

from __future__ import annotations

import struct
import zlib

import pytest

from apiserver.endpoints.rest import spdy


def _block(headers: dict[str, str]) -> bytes:
    out = struct.pack(">I", len(headers))
    for name, value in headers.items():
        for s in (name, value):
            out += struct.pack(">I", len(s)) + s.encode()
    return out


def _syn_stream(deflate: zlib._Compress, stream_id: int, headers: dict[str, str]) -> bytes:
    packed = deflate.compress(_block(headers)) + deflate.flush(zlib.Z_SYNC_FLUSH)
    data = struct.pack(">II", stream_id, 0) + b"\x00\x00" + packed
    return struct.pack(">HHI", 0x8000 | 3, spdy.SYN_STREAM, len(data)) + data


def test_the_dictionary_is_spdy3s() -> None:
    assert len(spdy.DICTIONARY) == 1423
    assert spdy.DICTIONARY.startswith(b"\x00\x00\x00\x07options\x00\x00\x00\x04head")
    assert spdy.DICTIONARY.endswith(b"charset=iso-8859-1,utf-,*,enq=0.")


def test_syn_streams_split_across_messages_are_read_with_their_headers() -> None:
    client = zlib.compressobj(zdict=spdy.DICTIONARY)
    wire = _syn_stream(client, 1, {"streamtype": "error", "port": "80", "requestid": "0"})
    wire += _syn_stream(client, 3, {"streamtype": "data", "port": "80", "requestid": "0"})
    reader = spdy.Reader()
    frames = reader.feed(wire[:5]) + reader.feed(wire[5:40]) + reader.feed(wire[40:])
    assert [(f.control, f.kind, f.stream_id) for f in frames] == [
        (True, spdy.SYN_STREAM, 1),
        (True, spdy.SYN_STREAM, 3),
    ]
    assert reader.headers(frames[0]) == {"streamtype": "error", "port": "80", "requestid": "0"}
    assert reader.headers(frames[1])["streamtype"] == "data"


def test_the_server_writes_replies_data_and_pings_a_client_reads() -> None:
    writer = spdy.Writer()
    client = spdy.Reader()  # (the framing is the same both ways)
    reply = client.feed(writer.syn_reply(1))
    assert [(f.kind, f.stream_id) for f in reply] == [(spdy.SYN_REPLY, 1)]
    assert client.headers(reply[0]) == {}
    [data] = client.feed(writer.data(1, b"nothing listens", fin=True))
    assert (data.control, data.stream_id, data.flags, data.data) == (
        False,
        1,
        spdy.FLAG_FIN,
        b"nothing listens",
    )
    ping = struct.pack(">HHI", 0x8000 | 3, spdy.PING, 4) + struct.pack(">I", 7)
    [frame] = client.feed(ping)
    assert writer.ping(frame) == ping


def test_another_version_is_a_protocol_error() -> None:
    with pytest.raises(spdy.ProtocolError, match="SPDY version 2"):
        spdy.Reader().feed(struct.pack(">HHI", 0x8000 | 2, spdy.PING, 0))
