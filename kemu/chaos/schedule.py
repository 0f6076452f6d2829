"""The fault timeline of a chaos run, made from a seed alone (the same seed gives the same
timeline, so a failing run replays).

A fault names a *role*, resolved to a process when it fires: "scheduler-leader" and
"scheduler-follower" (whichever of the two schedulers holds or lacks the lease then),
"apiserver", "etcd", "controllermanager", and "kubelet" (a kubelet of a node that has a
terminating pod then, if any: a kill mid-termination; else one drawn from the seed).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Action(StrEnum):
    KILL = "kill"
    """SIGKILL, then a restart with the same flags and data after `down` seconds."""
    PAUSE = "pause"
    """SIGSTOP for `down` seconds (longer than the lease for a leader), then SIGCONT."""


ROLES: Final = (
    "scheduler-leader",
    "scheduler-follower",
    "apiserver",
    "etcd",
    "controllermanager",
    "kubelet",
)


@dataclass(frozen=True)
class Fault:
    at: float
    """Seconds after the workload started."""
    action: Action
    role: str
    down: float
    """How long the process stays dead or frozen."""
    pick: int
    """Drawn from the seed: which process to take when the role matches several."""

    def describe(self) -> str:
        return f"t+{self.at:6.1f}s {self.action.value:5} {self.role} ({self.down:.1f}s)"


@dataclass(frozen=True)
class FaultMix:
    """Relative weights of (action, role) pairs, and the spacing of faults."""

    weights: tuple[tuple[Action, str, float], ...]
    min_gap: float
    max_gap: float
    kill_down: float
    pause_down: float


DEFAULT_MIX: Final = FaultMix(
    weights=(
        (Action.KILL, "scheduler-leader", 4.0),
        (Action.KILL, "scheduler-follower", 1.0),
        (Action.PAUSE, "scheduler-leader", 1.0),
        (Action.KILL, "apiserver", 1.0),
        (Action.KILL, "etcd", 1.0),
        (Action.KILL, "controllermanager", 1.0),
        (Action.KILL, "kubelet", 2.0),
    ),
    min_gap=1.0,
    max_gap=4.0,
    kill_down=0.5,
    pause_down=5.0,
)


def make_schedule(seed: int, duration: float, mix: FaultMix = DEFAULT_MIX) -> list[Fault]:
    """Faults from t=min_gap until `duration`, each after the previous one has ended plus a
    gap drawn in [min_gap, max_gap]. Pure: depends on the arguments only."""
    if duration < 0:
        raise ValueError(f"duration: must be >= 0, not {duration}")
    rng = random.Random(seed)
    choices = [(a, r) for a, r, _ in mix.weights]
    weights = [w for _, _, w in mix.weights]
    out: list[Fault] = []
    t = rng.uniform(mix.min_gap, mix.max_gap)
    while t < duration:
        action, role = rng.choices(choices, weights)[0]
        down = mix.pause_down if action is Action.PAUSE else mix.kill_down
        out.append(Fault(round(t, 3), action, role, down, rng.randrange(1 << 16)))
        t += down + rng.uniform(mix.min_gap, mix.max_gap)
    return out
