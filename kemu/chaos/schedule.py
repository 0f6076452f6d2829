"""The fault timeline of a chaos run, made from a seed alone (the same seed gives the same
timeline, so a failing run replays).

A fault is a *kind* (KINDS: an action and a role), its role resolved to processes when it
fires:

- "scheduler-leader" / "scheduler-follower": whichever of the two schedulers holds or lacks the
  lease then;
- "apiserver" / "etcd": every apiserver / every etcd member at once (an outage: clients wait);
- "apiserver-one": the one of the two apiservers with more watchers (clients, given both, fail
  over to the other);
- "etcd-member": one member of the three (the other two keep a quorum);
- "controllermanager", "cloud";
- "kubelet": a kubelet of a node that has a terminating or resizing pod then, if any (a kill
  mid-termination or mid-resize); else one drawn from the seed;
- "autoscaler-scale-up" / "autoscaler-drain": the autoscaler, at a moment when a scale-up it
  asked for is not registered yet / a node it is removing is still there (waited for a while;
  if none comes, killed anyway and noted).

Every profile's weights are a mapping of kind to weight (profiles.py); a mix may ask for every
kind it weighs to fire at least once (`every_kind`), so that a short run covers them all.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final


class Action(StrEnum):
    KILL = "kill"
    """SIGKILL, then a restart with the same flags and data after `down` seconds."""
    PAUSE = "pause"
    """SIGSTOP for `down` seconds (longer than the lease for a leader), then SIGCONT."""


KINDS: Final[dict[str, tuple[Action, str]]] = {
    f"{action.value} {role}": (action, role)
    for action, role in (
        (Action.KILL, "scheduler-leader"),
        (Action.KILL, "scheduler-follower"),
        (Action.PAUSE, "scheduler-leader"),
        (Action.KILL, "apiserver"),
        (Action.KILL, "apiserver-one"),
        (Action.KILL, "etcd"),
        (Action.KILL, "etcd-member"),
        (Action.KILL, "controllermanager"),
        (Action.KILL, "kubelet"),
        (Action.KILL, "autoscaler-scale-up"),
        (Action.KILL, "autoscaler-drain"),
        (Action.KILL, "cloud"),
    )
}
"""Every fault kind, by name ("kill etcd-member"): what the weights of a mix are keyed by."""

ROLES: Final = tuple(dict.fromkeys(role for _, role in KINDS.values()))
AUTOSCALING_ROLES: Final = ("autoscaler-scale-up", "autoscaler-drain", "cloud")
"""Roles that exist only in a run with a scaling phase (workload `scaling`)."""


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
    """Relative weights of fault kinds (KINDS' names), and the spacing of faults."""

    weights: Mapping[str, float]
    min_gap: float
    max_gap: float
    kill_down: float
    pause_down: float
    every_kind: bool = False
    """Every kind of positive weight fires at least once: the first faults are every kind
    once, in an order drawn from the seed (if the window has room), then the weights draw."""

    def __post_init__(self) -> None:
        for name, weight in self.weights.items():
            if name not in KINDS:
                raise ValueError(f"weights.{name}: unknown fault kind (known: {', '.join(KINDS)})")
            if weight < 0:
                raise ValueError(f"weights.{name}: must be >= 0, not {weight}")
        if not any(w > 0 for w in self.weights.values()):
            raise ValueError("weights: at least one fault kind needs a positive weight")

    def without(self, roles: tuple[str, ...]) -> FaultMix:
        """This mix without the kinds of `roles` (e.g. no autoscaler in the run)."""
        weights = {n: w for n, w in self.weights.items() if KINDS[n][1] not in roles}
        return FaultMix(
            weights, self.min_gap, self.max_gap, self.kill_down, self.pause_down, self.every_kind
        )


def make_schedule(seed: int, duration: float, mix: FaultMix) -> list[Fault]:
    """Faults from t=min_gap until `duration`, each after the previous one has ended plus a
    gap drawn in [min_gap, max_gap]. Pure: depends on the arguments only."""
    if duration < 0:
        raise ValueError(f"duration: must be >= 0, not {duration}")
    rng = random.Random(seed)
    names = [n for n, w in mix.weights.items() if w > 0]
    weights = [mix.weights[n] for n in names]
    unseen = list(names) if mix.every_kind else []
    rng.shuffle(unseen)
    out: list[Fault] = []
    t = rng.uniform(mix.min_gap, mix.max_gap)
    while t < duration:
        if unseen:
            name = unseen.pop()
        else:
            name = rng.choices(names, weights)[0]
        action, role = KINDS[name]
        down = mix.pause_down if action is Action.PAUSE else mix.kill_down
        out.append(Fault(round(t, 3), action, role, down, rng.randrange(1 << 16)))
        t += down + rng.uniform(mix.min_gap, mix.max_gap)
    return out
