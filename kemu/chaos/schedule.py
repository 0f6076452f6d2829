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
  if none comes, killed anyway and noted);
- "watches": the apiserver with more watchers (its watch streams are dropped).

Network and time faults go through the cluster's fault proxy (kemu/testing/faultproxy.py) and
its wall-clock skew files: a partition cuts links for `down` seconds, then heals them; a
delay adds latency for `down` seconds; a latency fault does so with the mix's distribution
(`FaultMix.latency`, kemu.machinery.latency's syntax: "200ms", "uniform:100ms-300ms",
"normal:200ms,50ms", "lognormal:200ms,50ms") on every round trip, drawn from the seed:
"latency apiserver" between every component and the apiservers, "latency etcd" between the
apiservers and etcd; a skew sets a process's wall clock `size` seconds off for `down`
seconds, then back.

Every profile's weights are a mapping of kind to weight (profiles.py); a mix may ask for every
kind it weighs to fire at least once (`every_kind`), so that a short run covers them all.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from kemu.machinery.latency import NO_LATENCY, Latency


class Action(StrEnum):
    KILL = "kill"
    """SIGKILL, then a restart with the same flags and data after `down` seconds."""
    PAUSE = "pause"
    """SIGSTOP for `down` seconds (longer than the lease for a leader), then SIGCONT."""
    PARTITION = "partition"
    """Links cut for `down` seconds, then healed: a scheduler or a kubelet from every
    apiserver, an apiserver from every etcd member, an etcd member from its peers."""
    DELAY = "delay"
    """`size` seconds (0.1 to 0.5) added to every round trip to etcd for `down` seconds."""
    LATENCY = "latency"
    """Every round trip on the role's links takes a draw of the mix's `latency` more, for
    `down` seconds: "apiserver", from every component to the apiservers (watch streams
    included); "etcd", from the apiservers to etcd."""
    SKEW_CLOCK = "skew-clock"
    """The process's wall clock `size` seconds off (up to 5 minutes, ahead or behind) for
    `down` seconds, then right again."""
    DROP = "drop"
    """An apiserver ends every watch stream open (SIGUSR1) and stays up."""


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
        (Action.PARTITION, "scheduler-leader"),
        (Action.PARTITION, "kubelet"),
        (Action.PARTITION, "apiserver-one"),
        (Action.PARTITION, "etcd-member"),
        (Action.DELAY, "etcd"),
        (Action.LATENCY, "apiserver"),
        (Action.LATENCY, "etcd"),
        (Action.SKEW_CLOCK, "scheduler-leader"),
        (Action.SKEW_CLOCK, "kubelet"),
        (Action.SKEW_CLOCK, "controllermanager"),
        (Action.DROP, "watches"),
    )
}
"""Every fault kind, by name ("kill etcd-member"): what the weights of a mix are keyed by."""

ROLES: Final = tuple(dict.fromkeys(role for _, role in KINDS.values()))
AUTOSCALING_ROLES: Final = ("autoscaler-scale-up", "autoscaler-drain", "cloud")
"""Roles that exist only in a run with a scaling phase (workload `scaling`)."""


DEFAULT_LATENCY: Final = Latency.parse("uniform:100ms-300ms")
"""A latency fault's distribution unless the mix says otherwise."""


@dataclass(frozen=True)
class Fault:
    at: float
    """Seconds after the workload started."""
    action: Action
    role: str
    down: float
    """How long the fault lasts (the process dead or frozen, the links cut or slow, the
    clock off); 0 for a drop."""
    pick: int
    """Drawn from the seed: which process to take when the role matches several."""
    size: float = 0.0
    """Drawn from the seed: the added round trip of a delay, the skew of a clock (seconds)."""
    latency: Latency = NO_LATENCY
    """A latency fault's distribution (the mix's), drawn from a generator seeded with
    `pick`."""

    @property
    def kind(self) -> str:
        return f"{self.action.value} {self.role}"

    def describe(self) -> str:
        size = f", {self.size:+g}s" if self.size else ""
        if self.action is Action.LATENCY:
            size = f", {self.latency}"
        return f"t+{self.at:6.1f}s {self.action.value:5} {self.role} ({self.down:.1f}s{size})"


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
    once, in an order drawn from the seed (past the window if it has no room for them all),
    then the weights draw while the window lasts."""
    partition_down: float = 6.0
    """How long a partition lasts (longer than the scheduler's lease; a kubelet's is held
    until its node is seen Unknown, see faults.py)."""
    delay_down: float = 5.0
    skew_down: float = 6.0
    latency: Latency = DEFAULT_LATENCY
    """The distribution of a latency fault's added round trip."""
    latency_down: float = 5.0

    def __post_init__(self) -> None:
        for name, weight in self.weights.items():
            if name not in KINDS:
                raise ValueError(f"weights.{name}: unknown fault kind (known: {', '.join(KINDS)})")
            if weight < 0:
                raise ValueError(f"weights.{name}: must be >= 0, not {weight}")
        if not any(w > 0 for w in self.weights.values()):
            raise ValueError("weights: at least one fault kind needs a positive weight")
        for name in (
            "kill_down",
            "pause_down",
            "partition_down",
            "delay_down",
            "skew_down",
            "latency_down",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name}: must be >= 0, not {getattr(self, name)}")
        if not isinstance(self.latency, Latency):
            raise ValueError(f"latency: expected a Latency, not {self.latency!r}")
        latency_weights = [n for n, w in self.weights.items() if w > 0 and n.startswith("latency")]
        if latency_weights and self.latency.none:
            raise ValueError(f"latency: {latency_weights[0]} has weight, the latency is none")

    def down(self, action: Action) -> float:
        """How long a fault of `action` lasts."""
        return {
            Action.KILL: self.kill_down,
            Action.PAUSE: self.pause_down,
            Action.PARTITION: self.partition_down,
            Action.DELAY: self.delay_down,
            Action.SKEW_CLOCK: self.skew_down,
            Action.LATENCY: self.latency_down,
            Action.DROP: 0.0,
        }[action]

    def without(self, roles: tuple[str, ...]) -> FaultMix:
        """This mix without the kinds of `roles` (e.g. no autoscaler in the run)."""
        weights = {n: w for n, w in self.weights.items() if KINDS[n][1] not in roles}
        return dataclasses.replace(self, weights=weights)


MAX_SKEW: Final = 300.0
"""A skewed clock is off by up to 5 minutes (at least MIN_SKEW), ahead or behind."""
MIN_SKEW: Final = 30.0
DELAY_RANGE: Final = (0.1, 0.5)
"""The round trip a delay adds, in seconds."""


def make_schedule(seed: int, duration: float, mix: FaultMix) -> list[Fault]:
    """Faults from t=min_gap until `duration` (longer while `every_kind` has kinds left),
    each after the previous one has ended plus a gap drawn in [min_gap, max_gap]. Pure:
    depends on the arguments only."""
    if duration < 0:
        raise ValueError(f"duration: must be >= 0, not {duration}")
    rng = random.Random(seed)
    names = [n for n, w in mix.weights.items() if w > 0]
    weights = [mix.weights[n] for n in names]
    unseen = list(names) if mix.every_kind else []
    rng.shuffle(unseen)
    out: list[Fault] = []
    t = rng.uniform(mix.min_gap, mix.max_gap)
    while t < duration or unseen:
        if unseen:
            name = unseen.pop()
        else:
            name = rng.choices(names, weights)[0]
        action, role = KINDS[name]
        down = mix.down(action)
        pick = rng.randrange(1 << 16)
        size = 0.0
        if action is Action.DELAY:
            size = round(rng.uniform(*DELAY_RANGE), 3)
        elif action is Action.SKEW_CLOCK:
            size = round(rng.choice((-1, 1)) * rng.uniform(MIN_SKEW, MAX_SKEW), 1)
        latency = mix.latency if action is Action.LATENCY else NO_LATENCY
        out.append(Fault(round(t, 3), action, role, down, pick, size, latency))
        t += down + rng.uniform(mix.min_gap, mix.max_gap)
    return out
