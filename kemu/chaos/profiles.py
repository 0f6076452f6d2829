"""The run profiles: how long faults go on, their mix, and the default workload.

The weights of every profile are one table of fault kinds (schedule.KINDS' names): BASE, and
each profile's changes to it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from kemu.chaos.schedule import FaultMix
from kemu.chaos.workload import Nodes, Pods, Scaling, SlowPreBind, Workload


@dataclass(frozen=True)
class Profile:
    name: str
    workload: Workload
    mix: FaultMix
    settle_timeout: float
    """After the last fault: how long every pod that can fit has to be bound."""
    fault_window: float | None = None
    """How long faults are drawn over with the profile's own workload; None (and with a
    workload of the user's): while the workload creates pods."""


BASE_WEIGHTS: Final[Mapping[str, float]] = {
    "kill scheduler-leader": 3.0,
    "kill scheduler-follower": 1.0,
    "pause scheduler-leader": 1.0,
    "kill apiserver": 1.0,
    "kill apiserver-one": 1.0,
    "kill etcd": 1.0,
    "kill etcd-member": 1.0,
    "kill controllermanager": 1.0,
    "kill kubelet": 2.0,
    "kill autoscaler-scale-up": 1.0,
    "kill autoscaler-drain": 1.0,
    "kill cloud": 1.0,
    "partition scheduler-leader": 1.0,
    "partition kubelet": 1.0,
    "partition apiserver-one": 1.0,
    "partition etcd-member": 1.0,
    "delay etcd": 1.0,
    "latency apiserver": 1.0,
    "latency etcd": 0.5,
    "skew-clock scheduler-leader": 0.5,
    "skew-clock kubelet": 0.5,
    "skew-clock controllermanager": 0.5,
    "drop watches": 1.0,
}


def weights(**changes: float) -> dict[str, float]:
    """BASE_WEIGHTS with some kinds re-weighted: weights(kill_etcd=0.5) sets "kill etcd"
    (underscores stand for the first space and for the dashes of the role)."""
    out = dict(BASE_WEIGHTS)
    by_key = {name.replace(" ", "_").replace("-", "_"): name for name in BASE_WEIGHTS}
    for key, weight in changes.items():
        if key not in by_key:
            raise ValueError(f"weights: unknown fault kind {key!r}")
        out[by_key[key]] = weight
    return out


CI: Final = Profile(
    name="ci",
    workload=Workload(
        nodes=Nodes(count=3, cpu="4", memory="8Gi", pods="110"),
        pods=Pods(
            total=240,
            rate=2.0,
            slowPreBind=SlowPreBind(fraction=0.2, delay="1s"),
            lifetime="20s",
        ),
        scaling=Scaling(waves=2, pods=2, minSize=1, maxSize=4, provisionDelay="2s"),
    ),
    mix=FaultMix(
        weights=weights(),
        min_gap=1.5,
        max_gap=3.0,
        kill_down=0.5,
        pause_down=5.0,
        every_kind=True,
        latency_down=2.0,
    ),
    settle_timeout=60.0,
    # Faults are drawn over the first minute and every kind then fires (about two minutes in
    # all, more on a loaded machine); pods keep coming for two minutes and go after 20 s, so
    # the restarts have pods to bind after them. With pods for the first minute, kept, the 24
    # places of the three nodes held only pods of the highest priority within a minute, and a
    # loaded CI run whose first kill came at t+58 s had no binding after any restart.
    fault_window=60.0,
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
        scaling=Scaling(waves=8, pods=3, minSize=1, maxSize=5, provisionDelay="2s"),
    ),
    mix=FaultMix(
        weights=weights(
            kill_scheduler_leader=16.0,
            pause_scheduler_leader=0.5,
            kill_apiserver=1.0,
            kill_apiserver_one=2.5,
            kill_etcd=0.5,
            kill_controllermanager=0.5,
            kill_kubelet=1.0,
            kill_autoscaler_scale_up=0.5,
            kill_autoscaler_drain=0.5,
            kill_cloud=0.5,
            # A network or time fault lasts seconds: fewer of them leave room for 100 kills.
            partition_scheduler_leader=0.2,
            partition_kubelet=0.1,
            partition_apiserver_one=0.1,
            partition_etcd_member=0.1,
            delay_etcd=0.1,
            latency_apiserver=0.1,
            latency_etcd=0.05,
            skew_clock_scheduler_leader=0.05,
            skew_clock_kubelet=0.05,
            skew_clock_controllermanager=0.05,
            drop_watches=0.3,
        ),
        min_gap=0.5,
        max_gap=2.0,
        kill_down=0.3,
        pause_down=5.0,
        every_kind=True,
    ),
    settle_timeout=180.0,
)

PROFILES: Final = {p.name: p for p in (CI, FULL)}
