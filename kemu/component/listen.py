"""Listening on a TCP port, and failing to, as upstream's components report it.

Every port a component serves (the apiserver's gRPC and REST edges, the cloud's gRPC API, every
component's metrics and health endpoint) is bound through this module, so that a port that is
taken ends the process the same way everywhere: one line naming the address, as upstream's
`failed to listen on 127.0.0.1:6443: listen tcp 127.0.0.1:6443: bind: address already in use`
(k8s.io/apiserver/pkg/server/options/serving.go `CreateListener`, wrapped by `ApplyTo` as
"failed to create listener: ..."), and exit code 1, no traceback (the runner turns
`ListenFailed` into that: kemu.component.runner).

Upstream binds its listeners while it applies its options, before it talks to anyone; a
component here checks its ports the same way at its start (`check_free`), so a taken port is
reported at once rather than after waiting for etcd or the apiserver. The bind itself can still
lose a race: it raises the same `ListenFailed`.

The check binds with SO_REUSEADDR, as the servers do (asyncio, aiohttp and gRPC set it), so a
port whose last connections wait in TIME_WAIT counts as free, as it is to them.
"""

from __future__ import annotations

import errno
import os
import socket
from typing import Any, Protocol


class ListenFailed(Exception):
    """A port this process must serve cannot be bound (taken, or not this user's)."""

    def __init__(self, address: str, reason: str) -> None:
        self.address = address
        self.reason = reason
        super().__init__(f"failed to listen on {address}: listen tcp {address}: bind: {reason}")


def join_host_port(host: str, port: int) -> str:
    """HOST:PORT ([HOST]:PORT for an IPv6 address), as Go's net.JoinHostPort."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def bind_error(host: str, port: int) -> OSError | None:
    """Why `host:port` cannot be listened on now (None: it can). Port 0 is always free."""
    if port == 0:
        return None
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host or "0.0.0.0", port))
        except OSError as e:
            return e
    return None


def reason_of(error: OSError) -> str:
    """The error as Go's syscall.Errno prints it ("address already in use")."""
    code = error.errno if error.errno is not None else errno.EADDRINUSE
    return os.strerror(code).lower()


def check_free(host: str, port: int) -> None:
    """Raises ListenFailed when `host:port` cannot be listened on now."""
    error = bind_error(host, port)
    if error is not None:
        raise ListenFailed(join_host_port(host, port), reason_of(error))


def failed(host: str, port: int, error: OSError) -> ListenFailed:
    """The ListenFailed of a server's own bind that raised `error`."""
    return ListenFailed(join_host_port(host, port), reason_of(error))


class _GrpcServer(Protocol):
    def add_insecure_port(self, address: str) -> int: ...

    def add_secure_port(self, address: str, server_credentials: Any) -> int: ...


def add_grpc_port(server: _GrpcServer, host: str, port: int, credentials: Any = None) -> int:
    """`server.add_insecure_port(host:port)` (`add_secure_port` with `credentials`, a
    grpc.ServerCredentials), the bound port; ListenFailed when the port is taken. (Checked
    first: gRPC's core logs a line of its own on a failed bind, and its error does not say
    why.)"""
    check_free(host, port)
    address = join_host_port(host, port)
    try:
        if credentials is not None:
            return server.add_secure_port(address, credentials)
        return server.add_insecure_port(address)
    except RuntimeError as e:  # lost a race since the check
        error = bind_error(host, port)
        raise ListenFailed(address, reason_of(error) if error is not None else str(e)) from None
