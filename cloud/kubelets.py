"""The kubelets of the cloud's instances, in one of two shapes (`--kubelet-processes`):

- `instance` (KubeletProcesses): one `python -m kubelet` subprocess per instance, as a machine
  runs its own kubelet: killing that process kills that instance's kubelet.
- `node-group` (NodeGroupKubelets): one hollow kubelet process per node group, whose nodes the
  cloud adds and removes over its stdin (`--node-control stdin`, kubelet.node_control), as
  kubemark's hollow nodes share processes: for hundreds of instances, whose processes' own
  upkeep would cost more than their nodes' work.

Each kubelet runs in the cloud's process group, so stopping the group (honcho, the test
harness) stops them with the cloud; the restarted cloud starts them again from its state (their
Nodes and checkpointed pods survive, as a VM's disk does). A kubelet left running by a cloud
killed alone (`kill -9 <pid>`) is found by the pid the state file records and killed before
its replacement starts (no preexec_fn/PR_SET_PDEATHSIG: forking Python code next to gRPC's
threads crashes the child); a node-group kubelet also stops by itself at the end of its stdin.
A kubelet that exits on its own is restarted (a node-group one with all its instances).
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import subprocess
import sys
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
import yaml

from cloud.config import NODE_GROUP_LABEL, NodeGroupConfig
from kemu.client.endpoints import ServerOrder
from kemu.component.latency import CallLatency
from kemu.machinery.node_control import add_line, is_removed, remove_line
from kemu.machinery.virtual_time import ClockMode

logger = logging.getLogger(__name__)

STOP_TIMEOUT: Final = 10.0


@dataclass(frozen=True)
class KubeletLaunch:
    """What every kubelet of one cloud is started with."""

    server: str
    instances_dir: Path
    """The instances' root directories live under it (a node group's kubelet: the group's)."""
    log_dir: Path
    kubeconfig: str = ""
    """The cloud's own --kubeconfig, its kubelets' too ("": plaintext, as the cloud's)."""
    server_order: ServerOrder = ServerOrder.LISTED
    """The cloud's own --server-order, its kubelets' too."""
    clock_mode: ClockMode = ClockMode.REAL
    apiserver_latency: CallLatency = CallLatency()
    """The cloud's own --apiserver-latency: its kubelets' calls wait the same (each kubelet's
    draws seeded from the cloud's seed and its root directory's name, as the test harness
    seeds each process's)."""

    def argv(self, group: NodeGroupConfig, identity: Sequence[str], root_dir: Path) -> list[str]:
        """The command line of a kubelet of `group`'s template; `identity`: the flags that
        name its node (or --node-control)."""
        template = group.template
        labels = {**template.labels, NODE_GROUP_LABEL: group.name}
        taints = ",".join(
            f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
            for t in template.taints
        )
        argv = [
            sys.executable, "-m", "kubelet",
            "--server", self.server,
            "--server-order", self.server_order.value,
            *identity,
            "--capacity", ",".join(f"{k}={v}" for k, v in template.capacity.items()),
            "--node-labels", ",".join(f"{k}={v}" for k, v in labels.items()),
            "--root-dir", str(root_dir),
            "--metrics-port", "0",
        ]  # fmt: skip
        if self.kubeconfig:
            argv += ["--kubeconfig", self.kubeconfig]
        if taints:
            argv += ["--register-with-taints", taints]
        if self.clock_mode is not ClockMode.REAL:
            argv += ["--clock", self.clock_mode.value]
        if group.resource_slices:
            argv += ["--dra-slice-file", str(self.slice_file(group))]
        return [*argv, *self._latency_args(root_dir.name), *template.kubelet_args]

    def _latency_args(self, name: str) -> list[str]:
        latency = self.apiserver_latency
        if latency.latency.none:
            return []
        seed = zlib.crc32(f"{latency.seed}/{name}".encode())
        return ["--apiserver-latency", str(latency.latency), "--apiserver-latency-seed", str(seed)]

    def slice_file(self, group: NodeGroupConfig) -> Path:
        """The group's resourceSlices written as its kubelets' --dra-slice-file
        (<instances-dir>/<group>.resourceslices.yaml, rewritten at each start: the config
        may have changed with a restarted cloud)."""
        path = self.instances_dir / f"{group.name}.resourceslices.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump([dict(m) for m in group.resource_slices]))
        return path


def kubelet_argv(
    launch: KubeletLaunch, group: NodeGroupConfig, name: str, provider_id: str
) -> list[str]:
    """The command line of an instance's own kubelet."""
    identity = ["--node-name", name, "--provider-id", provider_id]
    return launch.argv(group, identity, launch.instances_dir / name)


def node_group_kubelet_argv(launch: KubeletLaunch, group: NodeGroupConfig) -> list[str]:
    """The command line of a node group's hollow kubelet."""
    return launch.argv(group, ["--node-control", "stdin"], launch.instances_dir / group.name)


def kill_leftover(pid: int, name: str, root_dir: Path) -> None:
    """SIGKILLs process `pid` if it is still a kubelet of instance `name` (its own, named on
    its command line, or its node group's, whose root directory `root_dir` is): a previous
    cloud's kubelet that has not exited yet, so that two kubelets never run one node."""
    if pid <= 0:
        return
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return
    if b"kubelet" not in cmdline or not (
        name.encode() in cmdline or str(root_dir).encode() in cmdline
    ):
        return
    logger.info("instance %s: killing the previous cloud's kubelet (pid %d)", name, pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return


class _Launched:
    """What both shapes share: how their kubelets are started, and a previous cloud's found."""

    def __init__(self, launch: KubeletLaunch) -> None:
        self._launch = launch

    def kill_leftover(self, pid: int, name: str, group: str) -> None:
        kill_leftover(pid, name, self._launch.instances_dir / group)


class KubeletProcesses(_Launched):
    """`instance`: the running kubelets by instance name, a process each."""

    def __init__(self, launch: KubeletLaunch) -> None:
        super().__init__(launch)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def running(self, name: str) -> bool:
        proc = self._procs.get(name)
        return proc is not None and proc.poll() is None

    def pid(self, name: str) -> int:
        proc = self._procs.get(name)
        return proc.pid if proc is not None else 0

    def start(self, group: NodeGroupConfig, name: str, provider_id: str) -> int:
        """Starts (or restarts) the kubelet of `name`; its pid. Output goes to
        <log-dir>/<name>.log."""
        self._reap(name)
        proc = _spawn(
            kubelet_argv(self._launch, group, name, provider_id),
            self._launch.log_dir / f"{name}.log",
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
        if proc is not None:
            await _terminate(proc, name, grace)

    async def stop_all(self, grace: float = STOP_TIMEOUT) -> None:
        async with anyio.create_task_group() as tg:
            for name in list(self._procs):
                tg.start_soon(self.stop, name, grace)

    def _reap(self, name: str) -> None:
        proc = self._procs.pop(name, None)
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()


class _GroupKubelet:
    """A node group's hollow kubelet process and the instances it runs."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.nodes: set[str] = set()
        self.lock = anyio.Lock()
        """Held from a `remove` written to its answer read (answers come in order)."""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, line: str) -> bool:
        """Writes one command; False if the process is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):  # exited (or its pipe already closed)
            return False
        return True


class NodeGroupKubelets(_Launched):
    """`node-group`: one hollow kubelet process per node group (kubelet.node_control), its
    instances the nodes the cloud adds to it. Output goes to <log-dir>/<group>.log."""

    def __init__(self, launch: KubeletLaunch) -> None:
        super().__init__(launch)
        self._groups: dict[str, _GroupKubelet] = {}
        self._group_of: dict[str, str] = {}
        """Instance name -> its group, for the instances a live process runs."""
        self._lost: list[tuple[str, int]] = []
        """(instance, exit code) of a process found dead by `start` before `exited` saw it."""

    def running(self, name: str) -> bool:
        group = self._group_of.get(name)
        return group is not None and self._groups[group].alive()

    def start(self, group: NodeGroupConfig, name: str, provider_id: str) -> int:
        """Adds instance `name` to its group's kubelet, started first if it does not run;
        the process's pid."""
        kubelet = self._groups.get(group.name)
        if kubelet is not None and not kubelet.alive():
            self._forget(group.name)
            kubelet = None
        if kubelet is None:
            proc = _spawn(
                node_group_kubelet_argv(self._launch, group),
                self._launch.log_dir / f"{group.name}.log",
                control=True,
            )
            kubelet = self._groups[group.name] = _GroupKubelet(proc)
            logger.info("node group %s: started its kubelet (pid %d)", group.name, proc.pid)
        if not kubelet.send(add_line(name, provider_id)):
            logger.warning("node group %s: its kubelet is gone, %s not added", group.name, name)
        kubelet.nodes.add(name)
        self._group_of[name] = group.name
        logger.info("instance %s: added to its node group's kubelet", name)
        return kubelet.proc.pid

    def exited(self) -> list[tuple[str, int]]:
        """The (instance, exit code) of every instance of a kubelet that exited by itself;
        they are forgotten."""
        for group, kubelet in list(self._groups.items()):
            if not kubelet.alive():
                self._forget(group)
        out, self._lost = self._lost, []
        return out

    def _forget(self, group: str) -> None:
        kubelet = self._groups.pop(group)
        code = kubelet.proc.poll()
        for name in sorted(kubelet.nodes):
            self._group_of.pop(name, None)
            self._lost.append((name, code if code is not None else -1))

    async def stop(self, name: str, grace: float = STOP_TIMEOUT) -> None:
        """Removes instance `name` from its group's kubelet; returns once it is stopped there.
        A kubelet that does not answer within `grace` seconds is killed (its other instances
        are restarted with it by the cloud's reconcile)."""
        group = self._group_of.pop(name, None)
        if group is None:
            return
        kubelet = self._groups[group]
        kubelet.nodes.discard(name)
        async with kubelet.lock:
            if not kubelet.send(remove_line(name)):
                return
            assert kubelet.proc.stdout is not None
            with anyio.move_on_after(grace):
                answer = await anyio.to_thread.run_sync(
                    kubelet.proc.stdout.readline, abandon_on_cancel=True
                )
                if not answer or is_removed(answer.decode(), name):
                    return  # stopped there (or the whole process is gone)
                logger.warning("node group %s: unexpected answer %r to remove", group, answer)
        logger.warning(
            "node group %s: its kubelet did not stop %s in %gs, killing it", group, name, grace
        )
        kubelet.proc.kill()

    async def stop_all(self, grace: float = STOP_TIMEOUT) -> None:
        async with anyio.create_task_group() as tg:
            for group, kubelet in list(self._groups.items()):
                del self._groups[group]
                for name in kubelet.nodes:
                    self._group_of.pop(name, None)
                tg.start_soon(_terminate, kubelet.proc, f"node group {group}", grace)


def _spawn(argv: Sequence[str], log: Path, *, control: bool = False) -> subprocess.Popen[bytes]:
    """A kubelet process, its output (stderr, and stdout unless `control`: then stdin and
    stdout are its command pipes) appended to `log`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.PIPE if control else subprocess.DEVNULL,
            stdout=subprocess.PIPE if control else out,
            stderr=out if control else subprocess.STDOUT,
        )


async def _terminate(proc: subprocess.Popen[bytes], what: str, grace: float) -> None:
    """SIGTERM, then SIGKILL after `grace` seconds; returns once the process has exited."""
    if proc.poll() is None:
        proc.terminate()
    try:
        await anyio.to_thread.run_sync(functools.partial(proc.wait, grace))
    except subprocess.TimeoutExpired:
        logger.warning("%s: kubelet did not stop in %gs, killing it", what, grace)
        proc.kill()
        await anyio.to_thread.run_sync(proc.wait)
    for pipe in (proc.stdin, proc.stdout):
        if pipe is not None:
            pipe.close()
