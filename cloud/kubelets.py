"""The kubelets of the cloud's instances: one `python -m kubelet` subprocess per instance.

Each kubelet runs in the cloud's process group, so stopping the group (honcho, the test
harness) stops them with the cloud; the restarted cloud starts them again from its state (their
Nodes and checkpointed pods survive, as a VM's disk does). A kubelet left running by a cloud
killed alone (`kill -9 <pid>`) is found by the pid the state file records and killed before
its replacement starts (no preexec_fn/PR_SET_PDEATHSIG: forking Python code next to gRPC's
threads crashes the child). A kubelet that exits on its own is restarted.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import anyio

from cloud.config import NODE_GROUP_LABEL, NodeGroupConfig
from kemu.machinery.virtual_time import ClockMode

logger = logging.getLogger(__name__)

STOP_TIMEOUT: Final = 10.0


def kubelet_argv(
    server: str,
    group: NodeGroupConfig,
    name: str,
    provider_id: str,
    root_dir: Path,
    *,
    clock_mode: ClockMode = ClockMode.REAL,
) -> list[str]:
    """The command line of an instance's kubelet."""
    template = group.template
    labels = {**template.labels, NODE_GROUP_LABEL: group.name}
    taints = ",".join(
        f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
        for t in template.taints
    )
    argv = [
        sys.executable, "-m", "kubelet",
        "--server", server,
        "--node-name", name,
        "--provider-id", provider_id,
        "--capacity", ",".join(f"{k}={v}" for k, v in template.capacity.items()),
        "--node-labels", ",".join(f"{k}={v}" for k, v in labels.items()),
        "--root-dir", str(root_dir),
        "--metrics-port", "0",
    ]  # fmt: skip
    if taints:
        argv += ["--register-with-taints", taints]
    if clock_mode is not ClockMode.REAL:
        argv += ["--clock", clock_mode.value]
    return [*argv, *template.kubelet_args]


def kill_leftover(pid: int, name: str) -> None:
    """SIGKILLs process `pid` if it is still the kubelet of instance `name` (a previous cloud's
    kubelet that has not exited yet), so that two kubelets never run one node."""
    if pid <= 0:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if b"kubelet" not in cmdline or name.encode() not in cmdline:
        return
    logger.info("instance %s: killing the previous cloud's kubelet (pid %d)", name, pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


class KubeletProcesses:
    """The running kubelets by instance name."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def running(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def pid(self, name: str) -> int:
        proc = self._procs.get(name)
        return proc.pid if proc is not None else 0

    def start(self, name: str, argv: Sequence[str]) -> int:
        """Starts (or restarts) the kubelet of `name`; its pid. Output goes to
        <log-dir>/<name>.log."""
        self._reap(name)
        self._log_dir.mkdir(parents=True, exist_ok=True)
        with (self._log_dir / f"{name}.log").open("ab") as out:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self._procs[name] = proc
        logger.info("instance %s: started its kubelet (pid %d)", name, proc.pid)
        return proc.pid

    def exited(self) -> list[tuple[str, int]]:
        """The (name, exit code) of kubelets that exited by themselves; they are forgotten."""
        out = []
        for name, proc in list(self._procs.items()):
            code = proc.poll()
            if code is not None:
                del self._procs[name]
                out.append((name, code))
        return out

    async def stop(self, name: str, grace: float = STOP_TIMEOUT) -> None:
        """SIGTERM, then SIGKILL after `grace` seconds; returns once the kubelet has exited."""
        proc = self._procs.pop(name, None)
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
        try:
            await anyio.to_thread.run_sync(functools.partial(proc.wait, grace))
        except subprocess.TimeoutExpired:
            logger.warning("instance %s: kubelet did not stop in %gs, killing it", name, grace)
            proc.kill()
            await anyio.to_thread.run_sync(proc.wait)

    async def stop_all(self, grace: float = STOP_TIMEOUT) -> None:
        async with anyio.create_task_group() as tg:
            for name in list(self._procs):
                tg.start_soon(self.stop, name, grace)

    def _reap(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
