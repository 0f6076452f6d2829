"""The fault proxy on a local echo server: pass, cut (open and new connections), delay, heal,
and sources told from the first bytes."""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from collections.abc import Iterator

import pytest

from kemu.machinery.latency import Latency
from kemu.testing.faultproxy import FaultProxy, Mode, Rule
from kemu.testing.ports import LOOPBACK


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


@pytest.fixture
def echo() -> Iterator[str]:
    server = _Server((LOOPBACK, 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"{LOOPBACK}:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy() -> Iterator[FaultProxy]:
    with FaultProxy() as p:
        yield p


def _dial(address: str) -> socket.socket:
    host, port = address.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def _round_trip(sock: socket.socket, data: bytes = b"ping") -> bytes:
    sock.sendall(data)
    got = b""
    while len(got) < len(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        got += chunk
    return got


def _closed(sock: socket.socket) -> bool:
    """True when the peer closed the connection (EOF or reset) within the socket's timeout."""
    try:
        sock.sendall(b"x")
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def test_pass_forwards_both_ways(proxy: FaultProxy, echo: str) -> None:
    address = proxy.link("a", "b", echo)
    assert proxy.link("a", "b", echo) == address  # one link per edge and target
    with _dial(address) as s:
        assert _round_trip(s, b"hello" * 10000) == b"hello" * 10000
        assert proxy.connections("a", "b") == 1


def test_cut_closes_open_connections_and_refuses_new_ones_until_healed(
    proxy: FaultProxy, echo: str
) -> None:
    ab = proxy.link("a", "b", echo)
    cb = proxy.link("c", "b", echo)
    with _dial(ab) as open_ab, _dial(cb) as open_cb:
        assert _round_trip(open_ab) == b"ping"
        assert _round_trip(open_cb) == b"ping"
        rule = Rule(Mode.CUT, src="a")
        proxy.add(rule)
        assert _closed(open_ab)
        assert _round_trip(open_cb) == b"ping"  # another source's link is untouched
        with _dial(ab) as new:
            assert _closed(new)
        proxy.remove(rule)
        with _dial(ab) as healed:
            assert _round_trip(healed) == b"ping"


def test_delay_adds_latency_in_each_direction_in_order(proxy: FaultProxy, echo: str) -> None:
    address = proxy.link("a", "b", echo)
    with _dial(address) as s:
        rule = Rule(Mode.DELAY, dst="b", delay=0.2)
        proxy.add(rule)
        started = time.monotonic()
        for i in range(5):
            s.sendall(f"{i}".encode())
        got = b""
        while len(got) < 5:
            got += s.recv(16)
        took = time.monotonic() - started
        assert got == b"01234"
        assert 0.4 <= took < 2.0
        proxy.remove(rule)
        started = time.monotonic()
        assert _round_trip(s) == b"ping"
        assert time.monotonic() - started < 0.3


def test_a_latency_rule_draws_each_chunks_delay_and_keeps_the_order(
    proxy: FaultProxy, echo: str
) -> None:
    address = proxy.link("a", "b", echo)
    with _dial(address) as s:
        rule = Rule(Mode.DELAY, dst="b", latency=Latency.parse("uniform:100ms-150ms"), seed=3)
        proxy.add(rule)
        for _ in range(3):
            started = time.monotonic()
            assert _round_trip(s) == b"ping"
            assert 0.2 <= time.monotonic() - started < 1.0  # two draws, one each way
        for i in range(10):
            s.sendall(f"{i}".encode())
        got = b""
        while len(got) < 10:
            got += s.recv(16)
        assert got == b"0123456789"
        proxy.remove(rule)
        started = time.monotonic()
        assert _round_trip(s) == b"ping"
        assert time.monotonic() - started < 0.1


def test_source_told_from_the_first_bytes(proxy: FaultProxy, echo: str) -> None:
    def identify(head: bytes) -> str | None:
        return head.split(b"\n", 1)[0].decode() if b"\n" in head else None

    address = proxy.link(identify, "b", echo)
    proxy.add(Rule(Mode.CUT, src="x", dst="b"))
    with _dial(address) as from_x:
        from_x.sendall(b"x\n")
        assert from_x.recv(16) == b""
    with _dial(address) as from_y:
        assert _round_trip(from_y, b"y\nrest") == b"y\nrest"
        assert proxy.connections("y") == 1


def test_a_dead_target_is_a_failed_connection(proxy: FaultProxy) -> None:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        port = s.getsockname()[1]
    address = proxy.link("a", "b", f"{LOOPBACK}:{port}")
    with _dial(address) as c:
        assert _closed(c)


def test_bad_rules_and_targets_are_refused(proxy: FaultProxy) -> None:
    with pytest.raises(ValueError, match="delay"):
        Rule(Mode.DELAY, dst="b")
    with pytest.raises(ValueError, match="delay"):
        Rule(Mode.CUT, delay=-1)
    with pytest.raises(ValueError, match="target"):
        proxy.link("a", "b", "nowhere")
