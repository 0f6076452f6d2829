"""`make run`'s autoscaler demo, driven only by kemuctl (README "The cluster autoscaler"): the
real Procfile under honcho, run in a temporary directory that holds a copy of the Procfile and
of hack/cloud.yaml (so that `.kemu/` goes there); examples/pending-pods.yaml applied with
kemuctl scales pool-a up to its max (3), three of its pods run on the new nodes and the fourth
is told why it triggers no scale-up; deleted with kemuctl, the pods leave empty nodes that the
autoscaler removes (the Procfile's 30 s unneeded time and delay-after-add, 10 s scan
interval). Run twice: in real time, and as `make run CLOCK=virtual` runs it, on the virtual
clock at upstream's default timers (10 minutes unneeded and after add) with `kemuctl clock
rate max`, where the scale-down comes after 10 virtual minutes in seconds of wall time (issue
#30). Skipped when one of the Procfile's fixed ports is taken (another `make run`)."""

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
from pathlib import Path
from typing import Any

import anyio
import pytest

from kemu.machinery.convert import parse_time
from kemu.testing import eventually
from kemu.testing.processes import REPO_ROOT, python_env, run_python_module

pytestmark = [pytest.mark.integration, pytest.mark.long, pytest.mark.anyio]

EXAMPLE = REPO_ROOT / "examples" / "pending-pods.yaml"
GROUP_LABEL = "kemu.io/node-group"
STOP_TIMEOUT = 30.0
PORTS_FREED_WITHIN = 60.0  # wall seconds


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


@pytest.fixture(scope="module", params=["real", "virtual"])
def make_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Path, str]]:
    """honcho running the Procfile in a temporary directory, with the environment `make run
    CLOCK=<param>` gives it; its combined log's path and the clock."""
    clock: str = request.param
    text = (REPO_ROOT / "Procfile").read_text()
    # (the other clock's run may still be letting its ports go)
    deadline = time.monotonic() + PORTS_FREED_WITHIN
    while busy := sorted(p for p in procfile_ports(text) if taken(p)):
        if time.monotonic() > deadline:
            pytest.skip(f"the Procfile's fixed ports {busy} are in use (another make run?)")
        time.sleep(0.5)
    root = tmp_path_factory.mktemp("make-run")
    (root / "Procfile").write_text(text)
    (root / "hack").mkdir()
    shutil.copy(REPO_ROOT / "hack" / "cloud.yaml", root / "hack" / "cloud.yaml")
    (root / ".kemu").mkdir()
    bin_dir = Path(sys.executable).parent
    env = python_env({"PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
    if clock == "virtual":  # (as the Makefile's run target sets them for CLOCK=virtual)
        env.update(KEMU_CLOCK_FLAGS="--clock virtual", KEMU_AUTOSCALER_TIMERS="")
    log_path = root / "honcho.log"
    with log_path.open("w") as log:
        proc = subprocess.Popen(
            [str(bin_dir / "honcho"), "start"],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield log_path, clock
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


def cluster_now() -> float:
    done = kemuctl("clock", "-o", "json")
    assert done.returncode == 0, done.stderr
    return parse_time(json.loads(done.stdout)["now"], "now").seconds + 0.0


async def test_make_run_scales_pool_a_up_and_down_driven_only_by_kemuctl(
    make_run: tuple[Path, str],
) -> None:
    log_path, clock = make_run

    def static_nodes_ready() -> bool:
        nodes = get_json("nodes")["items"]
        names = {n["metadata"]["name"] for n in nodes if ready(n)}
        assert {"node-a", "node-b", "node-c"} <= names, names
        return True

    await eventually(static_nodes_ready, timeout=90, interval=1)
    if clock == "virtual":
        done = kemuctl("clock", "rate", "max")
        assert done.returncode == 0, done.stderr
    done = kemuctl("apply", "-f", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    applied = time.monotonic()
    names = [f"pool-a-web-{i}" for i in range(4)]

    def three_running() -> dict[str, str]:
        pods = {p["metadata"]["name"]: p for p in get_json("pods")["items"]}
        running = {
            n: pods[n]["spec"]["nodeName"]
            for n in names
            if n in pods and pods[n].get("status", {}).get("phase") == "Running"
        }
        assert len(running) == 3, running
        return running

    running = await eventually(three_running, timeout=120, interval=1)
    scaled_up_in = time.monotonic() - applied
    pool = get_json("nodes", "-l", f"{GROUP_LABEL}=pool-a")["items"]
    pool_names = sorted(n["metadata"]["name"] for n in pool)
    assert pool_names == ["pool-a-0", "pool-a-1", "pool-a-2"], pool_names
    assert sorted(running.values()) == pool_names
    (pending,) = set(names) - set(running)

    def told_why() -> str:
        done = kemuctl("describe", "pod", pending)
        assert done.returncode == 0, done.stderr
        assert "NotTriggerScaleUp" in done.stdout, done.stdout
        assert "max node group size reached" in done.stdout, done.stdout
        return done.stdout

    await eventually(told_why, timeout=30, interval=1)

    done = kemuctl("delete", "-f", str(EXAMPLE))
    assert done.returncode == 0, done.stderr
    deleted = time.monotonic()
    deleted_at = cluster_now()

    def pool_gone() -> bool:
        left = get_json("nodes", "-l", f"{GROUP_LABEL}=pool-a")["items"]
        assert left == [], [n["metadata"]["name"] for n in left]
        return True

    await eventually(pool_gone, timeout=180, interval=1)
    scaled_down_in = time.monotonic() - deleted
    virtual = cluster_now() - deleted_at
    if clock == "virtual":
        # upstream's default unneeded time: ten virtual minutes went by, in far less wall time
        assert virtual >= 600, virtual
    log = await anyio.Path(log_path).read_text()
    # honcho prefixes each line with the process's name.
    assert re.search(r"autoscaler.*scale-up: node group pool-a \d+->3", log), log[-3000:]
    for name in ("pool-a-0", "pool-a-1", "pool-a-2"):
        assert re.search(rf"autoscaler.*scale-down: node {name} of group pool-a deleted", log), name
    # (Not asserted: timings are measured in bench/; printed for the README's claims.)
    print(
        f"make run ({clock} clock): 3 Running {scaled_up_in:.0f} s after apply, pool-a empty "
        f"{scaled_down_in:.0f} s after delete ({virtual:.0f} s of the cluster's time)"
    )
