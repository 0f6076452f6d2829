"""The run profiles: how long faults go on, their mix, and the default workload."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from kemu.chaos.schedule import DEFAULT_MIX, Action, FaultMix
from kemu.chaos.workload import Nodes, Pods, SlowPreBind, Workload


@dataclass(frozen=True)
class Profile:
    name: str
    workload: Workload
    mix: FaultMix
    settle_timeout: float
    """After the last fault: how long every pod that can fit has to be bound."""
    fault_window: float | None = None
    """How long faults go on; None: while the workload creates pods."""


CI: Final = Profile(
    name="ci",
    workload=Workload(
        nodes=Nodes(count=3, cpu="4", memory="8Gi", pods="110"),
        pods=Pods(total=120, rate=2.0, slowPreBind=SlowPreBind(fraction=0.2, delay="1s")),
    ),
    mix=replace(DEFAULT_MIX, min_gap=0.5, max_gap=1.5),
    settle_timeout=60.0,
)

FULL: Final = Profile(
    name="full",
    workload=Workload(
        nodes=Nodes(count=8, cpu="8", memory="16Gi", pods="110"),
        pods=Pods(
            total=2000,
            rate=5.0,
            cpu="100m",
            memory="64Mi",
            deleteFraction=0.6,
            slowPreBind=SlowPreBind(fraction=0.2, delay="2s"),
        ),
    ),
    mix=FaultMix(
        weights=(
            (Action.KILL, "scheduler-leader", 8.0),
            (Action.KILL, "scheduler-follower", 1.0),
            (Action.PAUSE, "scheduler-leader", 0.5),
            (Action.KILL, "apiserver", 0.5),
            (Action.KILL, "etcd", 0.5),
            (Action.KILL, "controllermanager", 0.5),
            (Action.KILL, "kubelet", 1.0),
        ),
        min_gap=0.5,
        max_gap=2.0,
        kill_down=0.3,
        pause_down=5.0,
    ),
    settle_timeout=180.0,
)

PROFILES: Final = {p.name: p for p in (CI, FULL)}
