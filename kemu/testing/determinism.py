"""Seeded preemption scenarios for the determinism tests (issue #58 item 6): nodes filled with
low-priority victims that take a while to terminate, then several preemptors created at one
virtual instant. `PreemptionScenario.generate(rng)` draws one from a seed (nodes, pod sizes,
priorities, the victims' shutdown durations and grace periods, the preemptors);
`run_scenario` runs it on a fresh cluster at rate max and returns what it did
(`kemu.testing.digest.RunRecorder`), so that two runs can be compared.

    scenario = PreemptionScenario.generate(SeededRandom(7))
    first = await run_scenario(tmp_path / "a", scenario)
    second = await run_scenario(tmp_path / "b", scenario)
    assert first.summary() == second.summary()
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import PriorityClassBuilder, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.digest import RunRecorder
from kemu.testing.scenarios import SHUTDOWN_ANNOTATION

CLOCK_START: Final = "2030-01-01T00:00:00Z"
NODE_PREFIX: Final = "node"
NAMESPACE: Final = "default"
SHUTDOWNS: Final = ("0s", "350ms", "1s", "2500ms", "4s", "never")
"""The victims' shutdown durations ("never": killed at the end of the grace period)."""


class Writes(enum.Enum):
    """How a driver makes several writes at one virtual instant (docs/virtual-time.md, the
    order rule)."""

    SETTLED = "settled"
    """Each followed by `advance_clock(0)`: the cluster has done the work the write caused
    (at the same instant) before the next one. The outcome is the same every run."""
    BURST = "burst"
    """Back to back: the cluster's reactions to the first ones race (in wall time) with the
    next ones' arrival. Repeatable only where the reacting component's order does not
    depend on that race (preemptors of one priority: the scheduling queue's ties come out in
    arrival order)."""


@dataclass(frozen=True)
class Victim:
    name: str
    milli_cpu: int
    priority: int
    shutdown: str
    """Its kubelet.kemu.io/shutdown-duration ("never": it lingers its whole grace period)."""
    grace_seconds: int


@dataclass(frozen=True)
class Preemptor:
    name: str
    milli_cpu: int
    priority: int


@dataclass(frozen=True)
class PreemptionScenario:
    nodes: int
    node_milli_cpu: int
    victims: tuple[Victim, ...]
    """Created one after the other (the cluster settled after each), in this order."""
    preemptors: tuple[Preemptor, ...]
    """Created at one virtual instant, in this order, once the victims run (as
    `preemptor_writes` says)."""
    seed: int
    """The scheduler's --seed."""
    preemptor_writes: Writes = Writes.SETTLED
    run_for: float = 60.0
    """Virtual seconds the cluster runs after the preemptors are created."""

    @classmethod
    def generate(
        cls,
        rng: random.Random,
        *,
        nodes: tuple[int, int] = (2, 4),
        preemptors: tuple[int, int] = (3, 10),
        preemptor_writes: Writes = Writes.SETTLED,
    ) -> PreemptionScenario:
        """A scenario drawn from `rng`: `nodes` and `preemptors` are inclusive ranges of
        their counts. Each node is filled with victims (1 to 3 of them, sizes that add up to
        the node), priorities 1..5 (some equal), shutdown durations of SHUTDOWNS, grace
        periods of 1..5 s; each preemptor asks for 0.5..1 node at priority 100..102."""
        # (priorities drawn, then sorted: a later write never goes before an earlier one in
        # the scheduling queue, so that a burst too is repeatable)
        node_count = rng.randint(*nodes)
        node_cpu = rng.choice((1000, 2000))
        victims: list[Victim] = []
        for n in range(node_count):
            parts = rng.randint(1, 3)
            sizes = _split(rng, node_cpu, parts)
            for size in sizes:
                shutdown = rng.choice(SHUTDOWNS)
                victims.append(
                    Victim(
                        name=f"victim-{len(victims)}",
                        milli_cpu=size,
                        priority=rng.randint(1, 5),
                        shutdown=shutdown,
                        grace_seconds=rng.randint(1, 5),
                    )
                )
            del n
        count = rng.randint(*preemptors)
        priorities = sorted((rng.randint(100, 102) for _ in range(count)), reverse=True)
        preemptor_list = tuple(
            Preemptor(
                name=f"preemptor-{i}",
                milli_cpu=rng.choice((node_cpu // 2, node_cpu * 3 // 4, node_cpu)),
                priority=priority,
            )
            for i, priority in enumerate(priorities)
        )
        return cls(
            nodes=node_count,
            node_milli_cpu=node_cpu,
            victims=tuple(victims),
            preemptors=preemptor_list,
            seed=rng.randrange(2**31),
            preemptor_writes=preemptor_writes,
        )


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """`total` milli-CPU in `parts` sizes, multiples of 100m, each at least 100m."""
    units = total // 100
    cuts = sorted(rng.sample(range(1, units), parts - 1)) if parts > 1 else []
    bounds = [0, *cuts, units]
    return [(b - a) * 100 for a, b in zip(bounds, bounds[1:], strict=False)]


async def run_scenario(root: Path, scenario: PreemptionScenario) -> RunRecorder:
    """`scenario` on a fresh cluster (etcd, an apiserver, a scheduler with the scenario's
    seed, one hollow kubelet for the nodes), every process started while the clock holds; the
    victims created one by one with the cluster settled after each (`advance_clock(0)`), the
    preemptors at that same instant (as `preemptor_writes` says), then the clock at rate max
    for `run_for` virtual seconds."""
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", CLOCK_START])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)  # every process starts at one virtual instant
            c.start_scheduler(extra_args=["--seed", str(scenario.seed)])
            c.start_component(
                "kubelet",
                "kubelet-hollow",
                [
                    "--server", c.server,
                    "--nodes", str(scenario.nodes),
                    "--node-name-prefix", NODE_PREFIX,
                    "--capacity", f"cpu={scenario.node_milli_cpu}m,memory=8Gi,pods=110",
                    "--root-dir", "",
                    "--pod-startup-delay", "0s",
                ],
            )  # fmt: skip
            await client.advance_clock(0)  # every process up, and done with the start
            async with RunRecorder.watching(client) as run:
                priorities = {v.priority for v in scenario.victims} | {
                    p.priority for p in scenario.preemptors
                }
                for value in sorted(priorities):
                    await client.create(PriorityClassBuilder(f"p{value}", value).obj())
                await client.advance_clock(0)
                for victim in scenario.victims:
                    pod = make_pod(victim.name).namespace(NAMESPACE).req(cpu=f"{victim.milli_cpu}m")
                    pod.annotation(SHUTDOWN_ANNOTATION, victim.shutdown)
                    pod.grace(victim.grace_seconds)
                    await client.create(pod.priority_class(f"p{victim.priority}").obj())
                    await client.advance_clock(0)
                for preemptor in scenario.preemptors:
                    pod = make_pod(preemptor.name).namespace(NAMESPACE)
                    pod.req(cpu=f"{preemptor.milli_cpu}m")
                    await client.create(pod.priority_class(f"p{preemptor.priority}").obj())
                    if scenario.preemptor_writes is Writes.SETTLED:
                        await client.advance_clock(0)
                await client.advance_clock(scenario.run_for)
        return run
