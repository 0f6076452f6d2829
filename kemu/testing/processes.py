"""Child processes of a test: started, watched for readiness, killed, restarted, and never leaked.

Every child runs in its own session (so its process group can be signalled as a whole, and a
Ctrl-C in the terminal reaches only pytest), writes stdout and stderr to one log file, and is
registered for cleanup: an atexit handler SIGKILLs the group of every child still running, and
on Linux a child started from the main thread also gets PR_SET_PDEATHSIG=SIGKILL, so that it
dies with the test session even when that session is killed without running atexit handlers.
(PDEATHSIG fires when the *thread* that forked exits, so it is not set from other threads.)

PDEATHSIG is set by util-linux `setpriv --pdeathsig KILL`, which then execs the command, not by
a `preexec_fn`: that forces a plain fork() that runs the fork handlers (gRPC's among them) and
Python code in the child, and with gRPC traffic in flight in the test process (a watch, a
client) the child breaks (SIGSEGV; 85 of 300 children in a test with a busy client, 0 of 300
without the preexec_fn) and the parent's gRPC threads log epoll errors. Without setpriv there is
no PDEATHSIG (the atexit handler remains).

A `python -m` child of a process given a fork server is forked by that server instead
(kemu/forkserver.py): it dies with the server, and the server with this process.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import threading
import time
import typing
import urllib.error
import urllib.request
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Final, Protocol

import kemu
from kemu.testing.launch import ForkServer

logger = logging.getLogger(__name__)

# The directory holding the kemu package and the process packages (apiserver, scheduler, ...).
REPO_ROOT: Final = Path(kemu.__file__).resolve().parent.parent

DEFAULT_STARTUP_TIMEOUT: Final = 30.0
DEFAULT_STOP_TIMEOUT: Final = 10.0
LOG_TAIL_LINES: Final = 40

# A readiness check: a URL that must answer GET with 200, or a callable that returns a truthy
# value when ready (an exception from it counts as "not ready yet").
ReadyCheck = str | Callable[[], object]

# Proxies from the environment must not intercept loopback health checks.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class ProcessStartError(RuntimeError):
    """A child died or never became ready; the message carries the tail of its log."""

    def __init__(self, name: str, reason: str, log_path: Path, log_tail: str) -> None:
        self.name = name
        self.reason = reason
        self.log_path = log_path
        self.log_tail = log_tail
        super().__init__(
            f"{name}: {reason}\n--- last {LOG_TAIL_LINES} lines of {log_path} ---\n{log_tail}"
        )


def http_get(
    url: str, timeout: float = 2.0, *, context: ssl.SSLContext | None = None
) -> tuple[int, bytes]:
    """GET `url` without proxies: (status, body). HTTP error statuses are returned, not raised.
    `context`: how an https URL's server is verified (default: the system's roots)."""
    opener = _opener
    if context is not None:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({}), urllib.request.HTTPSHandler(context=context)
        )
    try:
        with opener.open(url, timeout=timeout) as resp:
            return int(resp.status), resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def url_ok(url: str) -> bool:
    """True when GET `url` answers 200."""
    status, _ = http_get(url)
    return status == 200


def run_pytest(
    args: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Runs `python -m pytest -q -p no:cacheprovider args...` in `cwd` to its end, as a user
    runs their own suite (`env`: default `python_env()`; the caller's PYTEST_ADDOPTS left out);
    its exit code and text output. kemu's pytest plugin loads through its entry point."""
    environment = dict(env) if env is not None else python_env()
    environment.pop("PYTEST_ADDOPTS", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def python_module_argv(module: str, args: Sequence[str] = ()) -> list[str]:
    """The argv that runs `python -m module args...` with this interpreter."""
    return [sys.executable, "-m", module, *args]


def python_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """os.environ with the repo root first on PYTHONPATH and unbuffered output, plus `extra`."""
    env = dict(os.environ)
    path = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(REPO_ROOT) + (os.pathsep + path if path else "")
    env["PYTHONUNBUFFERED"] = "1"  # so that a log tail shows what happened just before a crash
    env["PYTHONFAULTHANDLER"] = "1"
    if extra:
        env.update(extra)
    return env


def run_python_module(
    module: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    """Runs `python -m module args...` to its end, as a user runs a command from the repo's
    root (`env`: the whole environment, default `python_env()`); its exit code and text
    output. A command still running after `timeout` seconds is killed (TimeoutExpired)."""
    return subprocess.run(
        python_module_argv(module, args),
        cwd=REPO_ROOT,
        env=dict(env) if env is not None else python_env(),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


class _Child(Protocol):
    """What the harness needs of a started child: `subprocess.Popen` or a fork server's
    `ForkedChild`."""

    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


def python_module_target(argv: Sequence[str]) -> tuple[str, list[str]] | None:
    """(module, args) when `argv` is `python_module_argv(module, args)`, else None."""
    if len(argv) >= 3 and argv[0] == sys.executable and argv[1] == "-m":
        return argv[2], list(argv[3:])
    return None


class ManagedProcess:
    """One child process with its log file.

    `start()` launches `argv`; `restart()` launches the same argv again, appending to the same
    log. `ready` is the default check for `wait_ready()`. `clean_exit_codes` are the exit codes
    after SIGTERM that count as a clean shutdown (`stop_was_clean`). With a `forkserver`, an
    argv that runs `python -m module` is forked by it instead of exec'd (kemu/forkserver.py);
    any other argv is exec'd.
    """

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        *,
        log_path: Path,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        ready: ReadyCheck | None = None,
        clean_exit_codes: Collection[int] = (0,),
        forkserver: ForkServer | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.ready = ready
        self.clean_exit_codes = frozenset(clean_exit_codes)
        self.starts = 0
        # True once the test asked this process to exit (kill/terminate), until the next start.
        self.stopped_deliberately = False
        self.forkserver = forkserver
        self._popen: _Child | None = None

    def __repr__(self) -> str:
        return f"<ManagedProcess {self.name} pid={self.pid} returncode={self.returncode}>"

    # ------------------------------------------------------------------ state

    @property
    def pid(self) -> int | None:
        return self._popen.pid if self._popen is not None else None

    @property
    def returncode(self) -> int | None:
        """None while running (or never started); the exit code, negative for a signal."""
        return self._popen.poll() if self._popen is not None else None

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        if self.running:
            raise RuntimeError(f"{self.name} is already running (pid {self.pid})")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self.starts += 1
        self.stopped_deliberately = False
        with open(self.log_path, "ab") as out:
            header = (
                f"===== kemu harness: start #{self.starts} of {self.name}: {' '.join(self.argv)}\n"
            )
            out.write(header.encode())
            out.flush()
            target = python_module_target(self.argv) if self.forkserver is not None else None
            if self.forkserver is not None and target is not None:
                module, args = target
                self._popen = self.forkserver.spawn(
                    module,
                    args,
                    env=self.env if self.env is not None else os.environ,
                    cwd=self.cwd,
                    log_fd=out.fileno(),
                    server_env=python_env(),
                )
            else:
                self._popen = self._exec(out)
        _live.add(self)
        logger.info("started %s (pid %d)", self.name, self._popen.pid)

    def _exec(self, out: typing.BinaryIO) -> subprocess.Popen[bytes]:
        prefix = _die_with_parent_prefix()
        popen = subprocess.Popen(
            [*prefix, *self.argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=self.env,
            cwd=self.cwd,
            start_new_session=True,
        )
        if prefix:
            _wait_for_exec(popen, prefix[0])
        return popen

    def wait_ready(
        self, check: ReadyCheck | None = None, timeout: float = DEFAULT_STARTUP_TIMEOUT
    ) -> None:
        """Poll `check` (default: `self.ready`) until it passes.

        Raises ProcessStartError, with the log tail, if the process exits first or the check
        does not pass within `timeout` seconds.
        """
        check = check if check is not None else self.ready
        if check is None:
            raise ValueError(f"{self.name} has no readiness check")
        probe: Callable[[], object] = (lambda: url_ok(check)) if isinstance(check, str) else check
        deadline = time.monotonic() + timeout
        last_error = "the check never passed"
        while True:
            if self._popen is None:
                raise RuntimeError(f"{self.name} was never started")
            code = self._popen.poll()
            if code is not None:
                raise self._start_error(f"exited with code {code} before becoming ready")
            try:
                if probe():
                    return
                last_error = "the check returned a false value"
            except Exception as e:  # an unreachable endpoint is the normal "not yet"
                last_error = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                raise self._start_error(f"not ready within {timeout:g}s (last check: {last_error})")
            time.sleep(0.05)

    def kill(self) -> int | None:
        """SIGKILL the process group and reap it; the exit code (None if never started)."""
        if self._popen is None:
            return None
        self.stopped_deliberately = True
        _signal_group(self._popen.pid, signal.SIGKILL)
        code = self._popen.wait()
        _live.discard(self)
        return code

    def pause(self) -> None:
        """SIGSTOP the process group (a frozen process: it keeps its sockets, does nothing),
        returning once every thread of the group has stopped: the signal is delivered
        asynchronously, and until the thread chosen for it runs, the others go on (a loaded
        machine once let a paused etcd serve a transaction after pause() had returned)."""
        if self._popen is not None and self._popen.poll() is None:
            _signal_group(self._popen.pid, signal.SIGSTOP)
            if not _wait_group_stopped(self._popen.pid, PAUSE_TIMEOUT):
                raise RuntimeError(f"{self.name} did not stop within {PAUSE_TIMEOUT:g}s of SIGSTOP")

    def resume(self) -> None:
        """SIGCONT the process group after `pause`."""
        if self._popen is not None and self._popen.poll() is None:
            _signal_group(self._popen.pid, signal.SIGCONT)

    def send_signal(self, sig: signal.Signals) -> None:
        """Send `sig` to the process group (while it runs)."""
        if self._popen is not None and self._popen.poll() is None:
            _signal_group(self._popen.pid, sig)

    def terminate(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> int | None:
        """SIGTERM the process group, SIGKILL it after `timeout` seconds; the exit code."""
        if self._popen is None:
            return None
        self.stopped_deliberately = True
        if self._popen.poll() is None:
            _signal_group(self._popen.pid, signal.SIGTERM)
            # (a paused group gets the SIGTERM only once it runs again, as systemd's stop does)
            _signal_group(self._popen.pid, signal.SIGCONT)
            try:
                self._popen.wait(timeout)
            except subprocess.TimeoutExpired:
                logger.warning("%s did not exit %gs after SIGTERM: killing it", self.name, timeout)
        # Also reaps stragglers the process left in its group.
        _signal_group(self._popen.pid, signal.SIGKILL)
        code = self._popen.wait()
        _live.discard(self)
        return code

    def wait(self, timeout: float) -> int:
        """Waits for the process to exit on its own (a command run to its end); its exit code.
        Still running after `timeout` seconds: killed, and TimeoutExpired raised."""
        if self._popen is None:
            raise RuntimeError(f"{self.name} was never started")
        try:
            code = self._popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise
        _live.discard(self)
        return code

    def restart(self, timeout: float = DEFAULT_STOP_TIMEOUT) -> None:
        """Terminate the process if it still runs, then start the same argv again."""
        if self.running:
            self.terminate(timeout)
        self.start()

    def stop_was_clean(self) -> bool:
        code = self.returncode
        return code is None or code in self.clean_exit_codes

    # ------------------------------------------------------------------ logs

    def logs(self) -> str:
        """The whole log file (every start of this process)."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = LOG_TAIL_LINES) -> str:
        return "\n".join(self.logs().splitlines()[-lines:])

    def _start_error(self, reason: str) -> ProcessStartError:
        return ProcessStartError(
            self.name, f"{reason}; argv: {' '.join(self.argv)}", self.log_path, self.log_tail()
        )


# ---------------------------------------------------------------------- leak protection

_live: set[ManagedProcess] = set()


PAUSE_TIMEOUT: Final = 10.0
"""How long `pause` waits for a process group to stop after SIGSTOP."""

_STOPPED_STATES: Final = frozenset("TtZX")
"""Thread states (/proc/<pid>/task/<tid>/stat) that run no code: stopped (by a signal or a
tracer), zombie, dead."""


def _wait_group_stopped(pgid: int, timeout: float) -> bool:
    """Waits until no thread of a process in group `pgid` can run; False at `timeout`. True at
    once where there is no /proc to tell."""
    proc = Path("/proc")
    if not proc.is_dir():
        return True
    deadline = time.monotonic() + timeout
    while True:
        if all(_threads_stopped(pid) for pid in _group_members(proc, pgid)):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.001)


def _group_members(proc: Path, pgid: int) -> list[int]:
    members = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(entry / "stat")
        # (after "pid (comm)": state, ppid, pgrp)
        if fields is not None and len(fields) > 2 and fields[2] == str(pgid):
            members.append(int(entry.name))
    return members


def _threads_stopped(pid: int) -> bool:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return True  # gone
    for task in tasks:
        fields = _stat_fields(task / "stat")
        if fields is not None and fields[0] not in _STOPPED_STATES:
            return False
    return True


def _stat_fields(path: Path) -> list[str] | None:
    """The fields of a /proc stat file after its "pid (comm)" (comm may hold spaces and
    parentheses: it ends at the last ")"); None when the process or thread is gone."""
    try:
        text = path.read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2 :].split()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


@atexit.register
def _kill_leftovers() -> None:
    for proc in list(_live):
        if proc.running:
            logger.warning("killing leftover child %s (pid %s) at exit", proc.name, proc.pid)
            proc.kill()


def _wait_for_exec(popen: subprocess.Popen[bytes], setpriv: str) -> None:
    """Returns once the child is no longer setpriv: it has set PDEATHSIG and exec'd the
    command. Until then a parent that dies leaves the child unsignalled (the death happens
    before the prctl), so the harness does not hand out a child in that window. Bounded: a
    child that is slow to exec (a loaded machine) is waited for at most 10 s."""
    exe = os.path.realpath(setpriv)
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline and popen.poll() is None:
        try:
            if os.readlink(f"/proc/{popen.pid}/exe") != exe:
                return
        except OSError:
            return  # gone, or /proc unavailable: nothing to wait for
        time.sleep(0.0005)


def _die_with_parent_prefix() -> list[str]:
    """A command prefix that makes the child receive SIGKILL when this thread's process dies
    (see the module docstring); [] where that cannot be had."""
    if not sys.platform.startswith("linux"):
        return []
    if threading.current_thread() is not threading.main_thread():
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return []
    return [setpriv, "--pdeathsig", "KILL", "--"]


def status_kib(status_text: str, field: str) -> int:
    """A memory field ("VmRSS", "VmHWM": the peak) in KiB from the text of /proc/<pid>/status;
    ValueError when the text has none."""
    for line in status_text.splitlines():
        if line.startswith(f"{field}:"):
            parts = line.split()
            if len(parts) >= 2:
                return int(parts[1])
    raise ValueError(f"no {field} line")


def child_pids(pid: int) -> list[int]:
    """The pids of the live children of process `pid` (Linux's /proc/PID/task/*/children);
    none if they cannot be read."""
    out: list[int] = []
    try:
        for task in sorted(Path(f"/proc/{pid}/task").iterdir()):
            out += [int(c) for c in (task / "children").read_text().split()]
    except (OSError, ValueError):
        return out
    return out


def memory_kib(pid: int) -> dict[str, int] | None:
    """{"rss_kib": now, "peak_rss_kib": the most so far} of a live process; None if it cannot
    be read (gone, or not Linux)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
        return {"rss_kib": status_kib(text, "VmRSS"), "peak_rss_kib": status_kib(text, "VmHWM")}
    except (OSError, ValueError):
        return None
