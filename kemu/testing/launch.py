"""How the harness starts kemu's Python processes: exec'd (`python -m module`) or forked by a
fork server (kemu/forkserver.py), and the harness's handle on that server and its children."""

from __future__ import annotations

import atexit
import contextlib
import enum
import errno
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from kemu.forkserver import PRELOAD, STATUS, recv_message, send_message


class ForkedChild:
    """A child of the fork server, with the part of `subprocess.Popen`'s interface the harness
    uses: `pid`, `poll()`, `wait(timeout)`. Its exit status comes from the server (its parent)
    on a pipe; if the server goes away first, the child died with it (SIGKILL)."""

    def __init__(self, pid: int, status_fd: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._status_fd = status_fd
        os.set_blocking(status_fd, False)

    def poll(self) -> int | None:
        if self.returncode is None:
            self._read_status()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                raise subprocess.TimeoutExpired(f"pid {self.pid}", timeout or 0.0)
            select.select([self._status_fd], [], [], left)
        assert self.returncode is not None
        return self.returncode

    def _read_status(self) -> None:
        try:
            data = os.read(self._status_fd, STATUS.size)
        except BlockingIOError:
            return
        except OSError as e:  # pragma: no cover - the fd is ours until we close it
            if e.errno != errno.EBADF:
                raise
            return
        self.returncode = STATUS.unpack(data)[0] if len(data) == STATUS.size else -signal.SIGKILL
        os.close(self._status_fd)

    def __del__(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(OSError):
                os.close(self._status_fd)


class ForkServer:
    """The harness's handle on one fork server (started on the first `spawn`)."""

    def __init__(self, preload: Sequence[str] = PRELOAD) -> None:
        self.preload = tuple(preload)
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._server: subprocess.Popen[bytes] | None = None

    def spawn(
        self,
        module: str,
        args: Sequence[str],
        *,
        env: Mapping[str, str],
        cwd: Path | None,
        log_fd: int,
        server_env: Mapping[str, str],
    ) -> ForkedChild:
        """Forks `python -m module args...` with `env` and `cwd`, its output on `log_fd`.
        `server_env` is the environment the server starts with if it is not running yet."""
        status_r, status_w = os.pipe()
        try:
            with self._lock:
                sock = self._ensure_started(server_env)
                request = {
                    "module": module,
                    "args": list(args),
                    "env": dict(env),
                    "cwd": None if cwd is None else str(cwd),
                }
                send_message(sock, request, [log_fd, status_w])
                reply = recv_message(sock)
        except BaseException:
            os.close(status_r)
            raise
        finally:
            os.close(status_w)
        if reply is None:
            os.close(status_r)
            raise RuntimeError("the fork server exited")
        message, _ = reply
        pid = message.get("pid")
        if not isinstance(pid, int):
            os.close(status_r)
            raise RuntimeError(f"the fork server refused {module}: {message.get('error')}")
        return ForkedChild(pid, status_r)

    def _ensure_started(self, env: Mapping[str, str]) -> socket.socket:
        if self._sock is not None and self._server is not None and self._server.poll() is None:
            return self._sock
        self.close()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "kemu.forkserver",
                    str(theirs.fileno()),
                    *self.preload,
                ],
                stdin=subprocess.DEVNULL,
                env=dict(env),
                pass_fds=[theirs.fileno()],
                start_new_session=True,
            )
        finally:
            theirs.close()
        self._sock = ours
        return ours

    def close(self) -> None:
        """Ends the server (it kills the children still running) and waits for it."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._server is not None:
            try:
                self._server.wait(10)
            except subprocess.TimeoutExpired:
                self._server.kill()
                self._server.wait()
            self._server = None


class Launch(enum.Enum):
    """How the harness starts kemu's Python processes (`KEMU_TEST_LAUNCH`, default fork)."""

    EXEC = "exec"
    """`python -m module`: a fresh interpreter per process."""
    FORK = "fork"
    """Forked by this test process's fork server."""

    @classmethod
    def from_env(cls) -> Launch:
        value = os.environ.get(LAUNCH_ENV, cls.FORK.value)
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(m.value for m in cls)
            raise ValueError(f"{LAUNCH_ENV}={value!r}: expected one of {choices}") from None


LAUNCH_ENV: Final = "KEMU_TEST_LAUNCH"

_shared: ForkServer | None = None
_shared_lock = threading.Lock()


def shared_forkserver() -> ForkServer:
    """This process's fork server (one per test process; ended at exit)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = ForkServer()
            atexit.register(_shared.close)
        return _shared
