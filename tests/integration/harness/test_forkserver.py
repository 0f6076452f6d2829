"""The harness's fork server (kemu/forkserver.py, kemu/testing/launch.py) on real processes: a
forked child is the process `python -m module` would be (its argv, environment, working
directory, own session, exit code, default signal dispositions, its own random state), a
signal to its group ends it as it ends an exec'd one, and children die with their server."""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from kemu.testing import eventually_sync
from kemu.testing.launch import ForkedChild, ForkServer
from kemu.testing.processes import ManagedProcess, python_env, python_module_argv

pytestmark = pytest.mark.integration

MODULE = "tests.integration.harness.forkserver_child"


@pytest.fixture
def server() -> Iterator[ForkServer]:
    fs = ForkServer(preload=())
    yield fs
    fs.close()


def child(
    fs: ForkServer, tmp_path: Path, name: str, *args: str, env: dict[str, str] | None = None
) -> ManagedProcess:
    proc = ManagedProcess(
        name,
        python_module_argv(MODULE, args),
        log_path=tmp_path / f"{name}.log",
        env=python_env(env),
        cwd=tmp_path,
        forkserver=fs,
    )
    proc.start()
    return proc


def field(proc: ManagedProcess, key: str) -> str:
    def printed() -> str | None:
        m = re.search(rf"^{key}=(.*)$", proc.logs(), re.M)
        return m.group(1) if m else None

    value = eventually_sync(printed, timeout=10, message=f"{proc.name} printed {key}")
    assert value is not None
    return value


def test_a_forked_child_is_started_as_python_dash_m_would_start_it(
    server: ForkServer, tmp_path: Path
) -> None:
    proc = child(server, tmp_path, "exit3", "exit", "3", env={"FORKSERVER_TEST": "from-env"})
    assert isinstance(proc._popen, ForkedChild)
    assert proc._popen.wait(10) == 3
    assert field(proc, "argv") == "['exit', '3']"
    assert field(proc, "env") == "from-env"
    assert field(proc, "cwd") == str(tmp_path)
    assert field(proc, "sid") == f"{proc.pid} pid={proc.pid}"
    assert field(proc, "sigterm_default") == "True"


def test_what_the_server_imported_is_out_of_the_childs_collections(
    server: ForkServer, tmp_path: Path
) -> None:
    """The server freezes what its imports left alive before it forks (gc.freeze): no
    child's collection walks those objects again."""
    proc = child(server, tmp_path, "frozen", "exit", "0")
    assert proc.wait(10) == 0
    assert int(field(proc, "frozen")) > 1000


def test_an_uncaught_exception_prints_its_traceback_and_exits_1(
    server: ForkServer, tmp_path: Path
) -> None:
    proc = child(server, tmp_path, "raises", "raise")
    assert proc._popen is not None and proc._popen.wait(10) == 1
    assert "RuntimeError: uncaught in the child" in proc.logs()


def test_a_missing_module_fails_as_python_dash_m_does(server: ForkServer, tmp_path: Path) -> None:
    proc = ManagedProcess(
        "missing",
        python_module_argv("kemu.no_such_module"),
        log_path=tmp_path / "missing.log",
        forkserver=server,
    )
    proc.start()
    assert proc._popen is not None and proc._popen.wait(10) == 1
    assert "No module named kemu.no_such_module" in proc.logs()


def test_signals_end_a_forked_child_as_they_end_an_execd_one(
    server: ForkServer, tmp_path: Path
) -> None:
    term = child(server, tmp_path, "term", "sleep")
    field(term, "sid")
    assert Path(f"/proc/{term.pid}/comm").read_text().strip() == MODULE[:15]
    assert term.terminate() == -signal.SIGTERM
    killed = child(server, tmp_path, "killed", "sleep")
    field(killed, "sid")
    assert killed.kill() == -signal.SIGKILL
    assert not killed.running


def test_each_child_has_its_own_random_state(server: ForkServer, tmp_path: Path) -> None:
    procs = [child(server, tmp_path, f"r{i}", "exit", "0") for i in range(3)]
    values = {field(p, "random") for p in procs}
    assert len(values) == 3, values


def test_children_die_with_their_server(tmp_path: Path) -> None:
    fs = ForkServer(preload=())
    proc = child(fs, tmp_path, "orphan", "sleep")
    field(proc, "sid")
    assert proc.pid is not None
    fs.close()
    assert proc._popen is not None and proc._popen.wait(10) == -signal.SIGKILL
    pid = proc.pid
    eventually_sync(lambda: not _alive(pid), timeout=10, message=f"pid {pid} gone")


def test_the_server_refuses_a_malformed_request_and_keeps_serving(
    server: ForkServer, tmp_path: Path
) -> None:
    with open(tmp_path / "bad.log", "ab") as out:
        with pytest.raises(RuntimeError, match="args: a list of strings is required"):
            bad_args: list[str] = [1]  # type: ignore[list-item]
            server.spawn(
                MODULE, bad_args, env={}, cwd=None, log_fd=out.fileno(), server_env=python_env()
            )
    proc = child(server, tmp_path, "after", "exit", "0")
    assert proc._popen is not None and proc._popen.wait(10) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True
