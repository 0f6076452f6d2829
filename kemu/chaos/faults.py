"""The fault side of a chaos run: the schedule's faults fired one after another in a worker
thread (Cluster is synchronous), each role resolved to processes when it fires (schedule.py
lists the roles), and a supervisor that restarts a process that exited on its own (a leader
that lost its lease restarts itself in place: kemu.component.runner.RestartInPlace).

A group of processes (every apiserver, every etcd member) is killed together and restarted
together: etcd members only become healthy once a quorum of them runs. Kills and pauses are
here; the network and time faults (partitions, delays, skewed clocks, dropped watches) are
in netfaults.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import anyio.from_thread

from kemu.chaos import checks
from kemu.chaos.autoscaling import DRAIN, UP, ScalingPhase
from kemu.chaos.netfaults import NetworkFaults, leads, registered_watchers
from kemu.chaos.recorder import LeaseRecorder
from kemu.chaos.report import TimelineEntry
from kemu.chaos.schedule import Action, Fault
from kemu.client.interface import ApiClient
from kemu.testing.cluster import Cluster
from kemu.testing.processes import ProcessStartError

SCHEDULERS: Final = ("scheduler-a", "scheduler-b")
APISERVERS: Final = ("apiserver-a", "apiserver-b")
LEASE_DURATION: Final = 3.0
LEADER_WAIT: Final = 15.0
"""How long a scheduler fault waits for a leader (after a failover both schedulers may be
restarting: the lease passes once one of them is up and the old holder's lease expired)."""
STATE_WAIT: Final = 15.0
"""How long an autoscaler fault waits for its moment (a scale-up or a drain in flight)."""


@dataclass(frozen=True)
class FaultWindow:
    """One injected fault: from its start to the moment it was over (the process restarted
    and ready, resumed, the links healed, the clock right again), time.monotonic."""

    start: float
    end: float
    what: str


@dataclass
class RunState:
    """What the fault thread and the workload share."""

    t0: float = 0.0
    timeline: list[TimelineEntry] = field(default_factory=list)
    restarts: list[float] = field(default_factory=list)
    leader_faults: list[tuple[float, str]] = field(default_factory=list)
    acks: list[checks.Ack] = field(default_factory=list)
    failed_writes: int = 0
    injected: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    failed_restarts: list[str] = field(default_factory=list)
    """A process that died instead of becoming ready after a restart (a violation)."""
    terminating_nodes: dict[str, float] = field(default_factory=dict)
    deleted_by_workload: set[str] = field(default_factory=set)
    """Pods (namespace/name) the workload sent a DELETE for, answered or not (an apiserver
    killed mid-call may have applied it): deleted by a user, not by the scheduler, so a
    preemption that chose one of them is exempt from invariant (2)."""
    fault_windows: list[FaultWindow] = field(default_factory=list)
    """Every fault injected, in order: the picture's markers (--html)."""

    def note(self, what: str) -> None:
        self.timeline.append(TimelineEntry(time.monotonic() - self.t0, what))


class Injector:
    def __init__(
        self,
        cluster: Cluster,
        state: RunState,
        nodes: list[str],
        lease: LeaseRecorder,
        scaling: ScalingPhase | None,
        progress: Callable[[str], None],
        client: ApiClient,
    ) -> None:
        self.cluster = cluster
        self.state = state
        self.nodes = nodes
        self.lease = lease
        self.scaling = scaling
        self.progress = progress
        self.network = NetworkFaults(cluster, state.note, lease, client)

    def run(self, schedule: list[Fault]) -> None:
        for i, fault in enumerate(schedule):
            wait = self.state.t0 + fault.at - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            self.supervise()
            targets = self._resolve(fault)
            if not targets:
                self.state.note(f"{fault.action.value} {fault.role}: no such process now")
                self.progress(f"fault {i + 1}/{len(schedule)}: skipped (no {fault.role})")
                continue
            self._inject(fault, targets)
            self.state.injected += 1
            self.state.by_kind[fault.kind] = self.state.by_kind.get(fault.kind, 0) + 1
            self.progress(
                f"fault {i + 1}/{len(schedule)}: {fault.action.value} {', '.join(targets)} "
                f"({fault.role}, t+{time.monotonic() - self.state.t0:.0f}s)"
            )
        self.supervise()

    def leader(self) -> str | None:
        return next((n for n in SCHEDULERS if leads(self.cluster.component(n))), None)

    def _resolve(self, fault: Fault) -> list[str]:
        procs = self.cluster.processes
        role = fault.role
        if role in ("scheduler-leader", "scheduler-follower"):
            deadline = time.monotonic() + LEADER_WAIT
            leader = self.leader()
            while leader is None and time.monotonic() < deadline:
                time.sleep(0.2)  # just after a failover: the next leader is being elected
                leader = self.leader()
            if leader is None:
                return []
            if role == "scheduler-leader":
                return [leader]
            return [next(n for n in SCHEDULERS if n != leader)]
        if role == "kubelet":
            recent = [
                n for n, t in self.state.terminating_nodes.items() if time.monotonic() - t < 3
            ]
            pool = sorted(recent) or self.nodes
            return [f"kubelet-{pool[fault.pick % len(pool)]}"]
        if role == "apiserver":
            return [n for n in APISERVERS if n in procs]
        if role in ("apiserver-one", "watches"):
            return [self._busiest_apiserver(fault.pick)]
        if role == "etcd":
            return [m.name for m in self.cluster.etcd_members]
        if role == "etcd-member":
            members = self.cluster.etcd_members
            return [members[fault.pick % len(members)].name]
        if role in ("autoscaler-scale-up", "autoscaler-drain"):
            if self.scaling is None or "autoscaler" not in procs:
                return []
            up = role == "autoscaler-scale-up"
            record = self.scaling.record
            moment = record.mid_scale_up if up else record.mid_drain
            if not moment():
                # Bring the moment about: the scaling cycle goes on to that step now.
                anyio.from_thread.run_sync(self.scaling.request, UP if up else DRAIN)
            deadline = time.monotonic() + STATE_WAIT
            while not moment() and time.monotonic() < deadline:
                time.sleep(0.1)
            if not moment():
                self.state.note(f"{role}: none in flight within {STATE_WAIT:g}s; killed anyway")
            return ["autoscaler"]
        return [role] if role in procs else []

    def _busiest_apiserver(self, pick: int) -> str:
        """The apiserver with the most watchers (the one most clients talk to: killing it
        makes them fail over); the seed's pick on a tie."""
        counts = {name: registered_watchers(self.cluster.component(name)) for name in APISERVERS}
        ranked = sorted(APISERVERS, key=lambda n: -counts[n])
        if counts[ranked[0]] == counts[ranked[-1]]:
            return APISERVERS[pick % len(APISERVERS)]
        return ranked[0]

    def _inject(self, fault: Fault, targets: list[str]) -> None:
        started = time.monotonic()
        # A fault that takes the leader away (not a skewed clock: it keeps leading).
        is_leader = fault.role == "scheduler-leader" and fault.action in (
            Action.KILL,
            Action.PAUSE,
            Action.PARTITION,
        )
        holder = self.lease.holder
        if fault.action not in (Action.KILL, Action.PAUSE):
            self.network.inject(fault, targets)
        elif fault.action is Action.KILL:
            for target in targets:
                self.state.note(f"SIGKILL {target}")
                self.cluster.kill(target)
            time.sleep(fault.down)
            for target in targets:
                self.cluster.restart(target, wait=False)
            for target in targets:
                self._wait_ready(target)
            self.state.restarts.append(time.monotonic())
            self.state.note(
                f"{', '.join(targets)} restarted and ready ({time.monotonic() - started:.1f}s)"
            )
        else:
            (target,) = targets
            proc = self.cluster.processes[target]
            self.state.note(f"SIGSTOP {target} for {fault.down:g}s")
            proc.pause()
            time.sleep(fault.down)
            proc.resume()
            self.state.note(f"SIGCONT {target}")
        if is_leader:
            self.state.leader_faults.append((started, holder))
        what = f"{fault.kind}: {', '.join(targets)}"
        self.state.fault_windows.append(FaultWindow(started, time.monotonic(), what))

    def _wait_ready(self, name: str) -> None:
        try:
            self.cluster.wait_ready(name)
        except ProcessStartError as e:
            # The supervisor starts it again before the next fault; the run goes on.
            self.state.note(f"{name} did not come back: {e.reason}")
            self.state.failed_restarts.append(
                f"{name} {e.reason} after a restart at "
                f"t+{time.monotonic() - self.state.t0:.1f}s (log: {e.log_path})"
            )

    def supervise(self) -> None:
        for name, proc in list(self.cluster.processes.items()):
            if not proc.running:
                self.state.note(f"{name} exited on its own (code {proc.returncode}): restarting")
                self.cluster.restart(name, wait=False)
                self._wait_ready(name)
                self.state.restarts.append(time.monotonic())
