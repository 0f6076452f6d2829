"""`make run` for the tests of the local cluster: the real Procfile under honcho, in a temporary
directory that holds a copy of the Procfile, of hack/cloud.yaml and of hack/dra/ (so that `.kemu/`
goes there), with the environment the Makefile's run target gives it; and kemuctl as a user runs it
next to it (its default server, 127.0.0.1:6443). Skipped when one of the Procfile's fixed ports is
taken (another `make run`)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from kemu.testing.processes import REPO_ROOT, python_env, run_python_module

STOP_TIMEOUT = 30.0
# make test-long runs on two pytest-xdist workers (--dist loadgroup): the tests that start
# the Procfile on its fixed ports all go to one of them, one after the other.
MAKE_RUN_GROUP = pytest.mark.xdist_group("make-run")
PORTS_FREED_WITHIN = 60.0  # wall seconds
BIN_DIR = Path(sys.executable).parent


def procfile_ports(text: str) -> set[int]:
    """The fixed TCP ports the Procfile's processes listen on."""
    found = re.findall(r"(?:--(?:port|rest-port|metrics-port) |127\.0\.0\.1:)(\d+)", text)
    return {int(p) for p in found}


def taken(port: int) -> bool:
    """Whether something listens on `port`. (SO_REUSEADDR, as the Procfile's servers bind:
    the connections a stopped run leaves in TIME_WAIT for a minute do not count; without it
    the second clock's run was skipped.)"""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


def user_env() -> dict[str, str]:
    """The environment of `make run`'s processes and of the user's shell beside it: the
    virtualenv's scripts (honcho, kemuctl, etcd) first on PATH, no KEMU_SERVER."""
    env = python_env({"PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}"})
    env.pop("KEMU_SERVER", None)
    return env


@contextmanager
def procfile_running(root: Path, clock: str) -> Iterator[Path]:
    """honcho running the Procfile in `root`, with the environment `make run CLOCK=<clock>`
    gives it; yields its combined log's path."""
    text = (REPO_ROOT / "Procfile").read_text()
    # (another test's run may still be letting its ports go)
    deadline = time.monotonic() + PORTS_FREED_WITHIN
    while busy := sorted(p for p in procfile_ports(text) if taken(p)):
        if time.monotonic() > deadline:
            pytest.skip(f"the Procfile's fixed ports {busy} are in use (another make run?)")
        time.sleep(0.5)
    (root / "Procfile").write_text(text)
    (root / "hack").mkdir()
    shutil.copy(REPO_ROOT / "hack" / "cloud.yaml", root / "hack" / "cloud.yaml")
    shutil.copytree(REPO_ROOT / "hack" / "dra", root / "hack" / "dra")  # the kubelets' devices
    (root / ".kemu").mkdir()
    env = user_env()
    if clock == "virtual":  # (as the Makefile's run target sets them for CLOCK=virtual)
        env.update(KEMU_CLOCK_FLAGS="--clock virtual", KEMU_AUTOSCALER_TIMERS="")
    log_path = root / "honcho.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(BIN_DIR / "honcho"), "start"],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log_path
    finally:
        # honcho passes SIGTERM on to every process and waits for them (the cloud stops its
        # kubelets); what is left after that in honcho's session is killed.
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def kemuctl(*args: str) -> subprocess.CompletedProcess[str]:
    """kemuctl as a user runs it next to `make run` (its default server, 127.0.0.1:6443)."""
    env = python_env()
    env.pop("KEMU_SERVER", None)
    return run_python_module("kemu.ctl", args, env=env)


def get_json(*args: str) -> dict[str, Any]:
    done = kemuctl("get", *args, "-o", "json")
    assert done.returncode == 0, done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def ready(node: dict[str, Any]) -> bool:
    return any(
        c["type"] == "Ready" and c["status"] == "True"
        for c in node.get("status", {}).get("conditions", [])
    )


def static_nodes_ready() -> bool:
    """The Procfile's three kubelets' nodes are Ready (for `eventually`)."""
    nodes = get_json("nodes")["items"]
    names = {n["metadata"]["name"] for n in nodes if ready(n)}
    assert {"node-a", "node-b", "node-c"} <= names, names
    return True
