"""A fork server for the harness's Python processes: `python -m module args...` without paying
the interpreter's start and kemu's imports (0.6-1.1 s of CPU each) for every process a test
starts.

One server per test process, started on first use, imports the component packages once
(`PRELOAD`) and then forks a child per request. The child is a real process like any other:
its own pid, session and process group (signals reach it as they reach an exec'd one), its
stdout and stderr in its log file, its own environment, argv and working directory; it runs
`module` as `python -m module` does (`runpy`, `__main__`) and exits through the interpreter's
normal shutdown, so exit codes, atexit handlers and SIGTERM handling are those of a fresh
process. What it shares with the server is only what the imports set up, which is the same in
every process that imports them (nothing kemu imports reads the environment or starts a thread
at import time; `random` reseeds itself in a forked child).

The server is single-threaded and creates no gRPC object, so forking it is safe (gRPC's fork
caveats are about channels and threads that exist at fork time). It is the parent of every
child: it reaps them and reports each exit status on a pipe the harness handed over with the
request, which is how `ForkedChild.poll()` learns it. A child whose server dies gets SIGKILL
(PR_SET_PDEATHSIG); a server whose harness goes away (its socket reads end-of-file) kills the
process group of every child still running and exits.

Protocol, on a Unix stream socket pair: the harness sends one request (a length-prefixed JSON
object: module, args, env, cwd) with two file descriptors (the log file, the status pipe's
write end); the server answers with a length-prefixed JSON object, `{"pid": N}` or
`{"error": "..."}`.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

PRELOAD: Final = (
    "apiserver.app",
    "scheduler.app",
    "kubelet.app",
    "controllermanager.app",
    "cloud.app",
    "autoscaler.app",
)
"""The modules the server imports before it forks: every component the harness starts."""

_LEN: Final = struct.Struct("!I")
STATUS: Final = struct.Struct("!i")
_PR_SET_PDEATHSIG: Final = 1
_PR_SET_NAME: Final = 15
_MAX_FDS: Final = 2


# ---------------------------------------------------------------------- wire


def send_message(
    sock: socket.socket, message: Mapping[str, object], fds: Sequence[int] = ()
) -> None:
    body = json.dumps(message).encode()
    data = _LEN.pack(len(body)) + body
    if fds:
        sent = socket.send_fds(sock, [data], list(fds))
        data = data[sent:]
    if data:
        sock.sendall(data)


def _recv_exact(sock: socket.socket, size: int, fds: list[int]) -> bytes | None:
    """`size` bytes from `sock` (None at end-of-file before the first), collecting any file
    descriptors that came with them into `fds`."""
    chunks: list[bytes] = []
    got = 0
    while got < size:
        data, received, _flags, _addr = socket.recv_fds(sock, size - got, _MAX_FDS)
        fds.extend(received)
        if not data:
            if got == 0:
                return None
            raise ConnectionError("fork server socket closed in the middle of a message")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def recv_message(sock: socket.socket) -> tuple[dict[str, object], list[int]] | None:
    fds: list[int] = []
    header = _recv_exact(sock, _LEN.size, fds)
    if header is None:
        return None
    (length,) = _LEN.unpack(header)
    body = _recv_exact(sock, length, fds)
    if body is None:
        raise ConnectionError("fork server socket closed in the middle of a message")
    message = json.loads(body)
    if not isinstance(message, dict):
        raise ValueError(f"fork server message is not an object: {message!r}")
    return message, fds


# ---------------------------------------------------------------------- the server


@dataclass(frozen=True)
class _Request:
    module: str
    args: list[str]
    env: dict[str, str]
    cwd: str | None
    log_fd: int
    status_fd: int

    @classmethod
    def parse(cls, message: Mapping[str, object], fds: Sequence[int]) -> _Request:
        module, args, env, cwd = (message.get(k) for k in ("module", "args", "env", "cwd"))
        if not isinstance(module, str) or not module:
            raise ValueError("module: a module name is required")
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ValueError("args: a list of strings is required")
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in env.items()
        ):
            raise ValueError("env: an object of strings is required")
        if cwd is not None and not isinstance(cwd, str):
            raise ValueError("cwd: a path or null is required")
        if len(fds) != 2:
            raise ValueError(f"expected 2 file descriptors (log, status), got {len(fds)}")
        return cls(module, list(args), dict(env), cwd, fds[0], fds[1])


def _serve(sock: socket.socket) -> _Request | None:
    """The server's loop. Returns in a forked child (the request it is to run), and None in the
    server once the harness has gone (every child's group killed)."""
    children: dict[int, int] = {}  # pid -> status pipe write end
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    while True:
        try:
            readable, _, _ = select.select([sock.fileno(), wake_r], [], [])
        except InterruptedError:
            continue
        if wake_r in readable:
            os.read(wake_r, 4096)
            _reap(children)
        if sock.fileno() not in readable:
            continue
        received = recv_message(sock)
        if received is None:  # the harness has gone
            for pid in children:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            return None
        message, fds = received
        try:
            request = _Request.parse(message, fds)
        except ValueError as e:
            for fd in fds:
                os.close(fd)
            send_message(sock, {"error": str(e)})
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        server_pid = os.getpid()
        pid = os.fork()
        if pid == 0:
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _become_child(request, server_pid)
            return request
        os.close(request.log_fd)
        children[pid] = request.status_fd
        send_message(sock, {"pid": pid})


def _reap(children: dict[int, int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        fd = children.pop(pid, None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.write(fd, STATUS.pack(os.waitstatus_to_exitcode(status)))
            os.close(fd)


def _become_child(request: _Request, server_pid: int) -> None:
    """In the forked child: the process `python -m module` would be, up to running it."""
    os.setsid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    # (its command line stays the server's; its name, in `ps -o comm` and top, is the module's)
    libc.prctl(_PR_SET_NAME, request.module.encode()[:15], 0, 0, 0)
    if os.getppid() != server_pid:  # the server died before the prctl
        os._exit(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(request.log_fd, 1)
    os.dup2(request.log_fd, 2)
    os.closerange(3, _max_fd())
    if request.cwd is not None:
        os.chdir(request.cwd)
    os.environ.clear()
    os.environ.update(request.env)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _max_fd() -> int:
    try:
        return os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        return 65536


def _run_child(request: _Request) -> None:
    """Runs the module as `python -m` does (CPython's Modules/main.c calls runpy's
    `_run_module_as_main`: argv[0] becomes the module's file, a missing module prints
    "python: No module named ..." and exits 1); its SystemExit ends the interpreter normally."""
    sys.argv = [request.module, *request.args]
    run_as_main: Callable[[str, bool], object] = runpy._run_module_as_main  # type: ignore[attr-defined]
    run_as_main(request.module, True)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 1:
        print("usage: python -m kemu.testing.forkserver FD [MODULE...]", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=int(args[0]))
    for module in args[1:]:
        importlib.import_module(module)
    # What the imports left alive lives as long as every child: out of the cyclic
    # collector's reach before the forks (gc.freeze, as the gc module's documentation
    # advises for a fork server), so that no child's collection walks it again (each child's
    # first full one cost 45 ms of the 90,000 objects) nor writes to its pages.
    gc.collect()
    gc.freeze()
    request = _serve(sock)
    if request is None:
        return 0
    _run_child(request)
    return 0


if __name__ == "__main__":
    sys.exit(main())
