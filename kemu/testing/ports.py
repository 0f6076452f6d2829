"""Free loopback TCP ports for the processes a test starts.

A port is picked by binding to port 0, so the kernel chooses one that is free. Closing that
socket would let the next `bind(0)` anywhere on the machine (another engineer's test run, say)
pick the same port before our child process binds it. To make that unlikely, the port is left
in TIME_WAIT (a throwaway connection is accepted and closed from the server side): the kernel
does not hand out a port in TIME_WAIT for `bind(0)`, while a server that binds it explicitly
with SO_REUSEADDR — Go's net package, asyncio, gRPC and `http.server` all set it — still can.
Within one test session no port is ever returned twice.
"""

from __future__ import annotations

import socket
import threading
from typing import Final

LOOPBACK: Final = "127.0.0.1"

_lock = threading.Lock()
_handed_out: set[int] = set()


def free_port(host: str = LOOPBACK) -> int:
    """A TCP port on `host` that is free now and was not returned before in this process."""
    with _lock:
        for _ in range(64):
            port = _reserve(host)
            if port not in _handed_out:
                _handed_out.add(port)
                return port
    raise RuntimeError(f"no free TCP port on {host} after 64 attempts")


def free_ports(count: int, host: str = LOOPBACK) -> list[int]:
    """`count` distinct ports, as from `free_port`."""
    return [free_port(host) for _ in range(count)]


def _reserve(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind((host, 0))
        server.listen(1)
        port: int = server.getsockname()[1]
        with socket.create_connection((host, port), timeout=5) as client:
            accepted, _ = server.accept()
            # The side that closes first holds TIME_WAIT: the accepted socket owns `port`.
            accepted.close()
            client.recv(1)  # wait for the FIN so that the close sequence completes in order
    return port
