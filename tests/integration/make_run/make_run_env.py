"""`make run` for the tests of the local cluster: what the Makefile's run target runs (`python -m
kemu.makerun`: the port check, `.kemu/`'s files, then honcho on the real Procfile), in a
temporary directory that holds a copy of the Procfile, of hack/cloud.yaml, hack/dra/ and hack/addons/ (so
that `.kemu/` goes there); and kemuctl as a user runs it next to it, after `source .kemu/env`.

Each test's cluster is moved to a base port of its pytest-xdist worker (`worker_ports`: the
table of kemu/makerun/ports.py), so that the make_run tests run beside each other and beside a
developer's `make run` on the default ports; a worker whose bases are all taken waits for one
(another run letting its ports go), then skips."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.makerun.__main__ import STATE_DIR, USER_ENV, taken
from kemu.makerun.ports import Ports
from kemu.testing.processes import REPO_ROOT, python_env

STOP_TIMEOUT: Final = 30.0
PORTS_FREED_WITHIN: Final = 60.0  # wall seconds
BIN_DIR: Final = Path(sys.executable).parent
FIRST_BASE: Final = 20000
WORKER_STRIDE: Final = 100  # one worker's bases are FIRST_BASE + stride * worker + SLOT_STRIDE * k
SLOT_STRIDE: Final = 1000
SLOTS: Final = 10
CLUSTER_ENV: Final = (
    "KEMU_SERVER",
    "KUBECONFIG",
    "KEMU_SCHEDULER_URL",
    "KEMU_AUTOSCALER_URL",
    "KEMU_PORT_BASE",
)
"""What a user's shell may carry from another cluster: dropped, then `.kemu/env`'s."""


def make_run_group(name: str) -> pytest.MarkDecorator:
    """The mark that would keep a make_run module's tests on one worker under make
    test-long's `--dist loadgroup` (they share the module's cluster; pytest-xdist 3.8 under
    pytest 9 ignores it: docs/testing.md); two modules run side by side."""
    return pytest.mark.xdist_group(f"make-run-{name}")


def worker_bases() -> list[int]:
    """This pytest-xdist worker's bases (gw0: 20000, 21000, ...; gw1: 20100, 21100, ...): no
    two workers share one, and each is 100 ports from the next worker's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw")
    index = int(worker) if worker.isdigit() else 0
    return [
        FIRST_BASE + WORKER_STRIDE * (index % (SLOT_STRIDE // WORKER_STRIDE)) + SLOT_STRIDE * k
        for k in range(SLOTS)
    ]


def worker_ports() -> Ports:
    """The first of this worker's bases whose ports are all free; waits for one (another run
    may still be letting its ports go), then skips."""
    deadline = time.monotonic() + PORTS_FREED_WITHIN
    while True:
        for base in worker_bases():
            ports = Ports(base)
            if not taken(ports):
                return ports
        if time.monotonic() > deadline:
            pytest.skip(f"every port base of this worker is in use: {worker_bases()}")
        time.sleep(0.5)


def user_env() -> dict[str, str]:
    """The environment of the user's shell beside `make run`, before `source .kemu/env`: the
    virtualenv's scripts (honcho, kemuctl, etcd) first on PATH, no other cluster's settings."""
    env = python_env({"PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}"})
    for name in CLUSTER_ENV:
        env.pop(name, None)
    return env


def sourced(path: Path) -> dict[str, str]:
    """The variables `source PATH` exports (its `export NAME=VALUE` lines)."""
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, _, value = words[1].partition("=")
            out[name] = value
    return out


def prepare_root(root: Path) -> None:
    """`root` laid out as the repository's root for the Procfile (idempotent: a second run on
    the same root keeps its `.kemu/`)."""
    shutil.copy(REPO_ROOT / "Procfile", root / "Procfile")
    (root / "hack").mkdir(exist_ok=True)
    shutil.copy(REPO_ROOT / "hack" / "cloud.yaml", root / "hack" / "cloud.yaml")
    # (the kubelets' devices, and the add-ons' RBAC)
    for directory in ("dra", "addons"):
        shutil.copytree(
            REPO_ROOT / "hack" / directory, root / "hack" / directory, dirs_exist_ok=True
        )


@dataclass
class MakeRun:
    """One `make run` under test: its directory, ports and combined log (honcho's)."""

    root: Path
    ports: Ports
    log_path: Path
    proc: subprocess.Popen[bytes]

    def env(self) -> dict[str, str]:
        """The user's shell after `source .kemu/env` (an AssertionError, for `eventually`,
        until make run has written it)."""
        path = self.root / STATE_DIR / USER_ENV
        assert path.exists(), f"make run has not written {path} yet"
        return {**user_env(), **sourced(path)}

    def kemuctl(
        self, *args: str, input: str | None = None, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(BIN_DIR / "python"), "-m", "kemu.ctl", *args],
            cwd=self.root,
            env=self.env(),
            input=input,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def get_json(self, *args: str) -> dict[str, Any]:
        done = self.kemuctl("get", *args, "-o", "json")
        assert done.returncode == 0, done.stderr
        out: dict[str, Any] = json.loads(done.stdout)
        return out

    def static_nodes_ready(self) -> bool:
        """The Procfile's three kubelets' nodes are Ready (for `eventually`)."""
        nodes = self.get_json("nodes")["items"]
        names = {n["metadata"]["name"] for n in nodes if ready(n)}
        assert {"node-a", "node-b", "node-c"} <= names, names
        return True

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def interrupt(self) -> int:
        """Ctrl-C in make run's terminal: SIGINT to its foreground process group (honcho and
        its own helpers; each Procfile process has a session of its own, which honcho signals);
        honcho's exit code once everything stopped."""
        os.killpg(self.proc.pid, signal.SIGINT)
        return self.proc.wait(STOP_TIMEOUT)


@contextmanager
def procfile_running(
    root: Path,
    clock: str,
    ports: Ports | None = None,
    *,
    processes: Sequence[str] = (),
    log_name: str = "honcho.log",
) -> Iterator[MakeRun]:
    """`make run CLOCK=<clock> PORT_BASE=<ports.base>` in `root` (default: this worker's
    ports; `processes`: only those of the Procfile), until the block ends (then stopped as
    Ctrl-C stops it, if still running)."""
    ports = ports if ports is not None else worker_ports()
    prepare_root(root)
    log_path = root / log_name
    argv = [str(BIN_DIR / "python"), "-m", "kemu.makerun", "--clock", clock]
    if ports.base is not None:
        argv += ["--port-base", str(ports.base)]
    argv += processes
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            argv,
            cwd=root,
            env=user_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # (the terminal's foreground process group)
        )
    run = MakeRun(root, ports, log_path, proc)
    try:
        yield run
    finally:
        if proc.poll() is None:
            try:
                run.interrupt()
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def ready(node: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )
