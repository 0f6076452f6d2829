"""Seeded preemption scenarios for the determinism tests (issue #58 item 6): nodes filled with
low-priority victims that take a while to terminate, then several preemptors created at one
virtual instant. `PreemptionScenario.generate(rng)` draws one from a seed (nodes, pod sizes,
priorities, the victims' shutdown durations and grace periods, the preemptors, their
WaitForFirstConsumer claims, the kubelet processes the nodes are dealt to);
(and, where asked, a ReplicaSet of preemptors: the controller-manager creates its pods by
generateName, so that their names too must be the same each run); `run_scenario` runs it on
a fresh cluster at rate max and returns what it did
(`kemu.testing.digest.RunRecorder`), so that two runs can be compared.

    scenario = PreemptionScenario.generate(SeededRandom(7))
    first = await run_scenario(tmp_path / "a", scenario)
    second = await run_scenario(tmp_path / "b", scenario)
    assert first.summary() == second.summary()
"""

from __future__ import annotations

import enum
import functools
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio.lowlevel
import anyio.to_thread

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import PriorityClassBuilder, make_pod, make_replica_set
from kemu.testing.cluster import Cluster
from kemu.testing.cluster_time import START_SECONDS
from kemu.testing.digest import RunRecorder
from kemu.testing.scenarios import SHUTDOWN_ANNOTATION
from kemu.testing.storage import claim, storage_class

CLOCK_START: Final = "2030-01-01T00:00:00Z"
NODE_PREFIX: Final = "node"
NAMESPACE: Final = "default"
SHUTDOWNS: Final = ("0s", "350ms", "1s", "2500ms", "4s", "never")
"""The victims' shutdown durations ("never": killed at the end of the grace period)."""
PROVISION_DELAYS: Final = ("0s", "500ms", "1s", "2s", "3s")
"""The simulated CSI provisioner's provisionDelay of a WaitForFirstConsumer class: whole
seconds fall on the instants of VolumeBinding's PreBind polls (each second after its writes)."""
SIMULATED_PROVISIONER: Final = "kemu.io/simulated"
"""controllermanager/persistentvolume/simulated_provisioner.py's provisioner name."""
PROVISION_DELAY: Final = "provisionDelay"
"""Its StorageClass parameter."""
STORAGE_CONTROLLERS: Final = ("persistentvolume-binder", "simulated-csi-provisioner")
"""The controller-manager's controllers for a scenario with claims."""
REPLICA_SET_CONTROLLERS: Final = ("replicaset",)
"""Its controllers for a scenario with a ReplicaSet."""
REPLICA_SET: Final = "preemptors"
REPLICA_SET_REPLICAS: Final = (2, 4)


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
    HELD = "held"
    """Back to back inside `Client.clock_burst()`: the cluster takes no step until the last
    is written, so the scheduling queue takes them in its order (priority, then the order
    written) whatever their order and however long the driver takes between them. The
    outcome is the same every run."""


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
    claim_class: str = ""
    """The StorageClass of its one WaitForFirstConsumer claim (`claim-<name>`), "" for none:
    its binding cycle's PreBind waits for the claim's provisioning."""


@dataclass(frozen=True)
class ReplicaSetPreemptors:
    """A ReplicaSet `preemptors` of identical preemptors, created at the preemptors'
    instant: the ReplicaSet controller creates its pods (by generateName, in concurrent
    batches of 1, 2, 4, ...)."""

    replicas: int
    milli_cpu: int
    priority: int


@dataclass(frozen=True)
class ProvisionedClass:
    """A WaitForFirstConsumer StorageClass of the simulated CSI provisioner."""

    name: str
    provision_delay: str
    """Its `provisionDelay` (a Go duration)."""


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
    classes: tuple[ProvisionedClass, ...] = ()
    """The preemptors' claims' classes: with any, the controller-manager runs the
    PersistentVolume controller and the simulated CSI provisioner."""
    kubelets: int = 1
    """Hollow kubelet processes the nodes are dealt to, in turn: with more than one, the
    nodes of process i are `node<i>-<j>` (else `node-<j>`), and several processes' timers
    (the victims' shutdowns) fall due at one instant."""
    write_pause: float = 0.0
    """Wall seconds the driver takes between two of the preemptors' writes (a slow driver:
    with `Writes.BURST`, the cluster's steps may come between them)."""
    run_for: float = 60.0
    """Virtual seconds the cluster runs after the preemptors are created."""
    replica_set: ReplicaSetPreemptors | None = None
    """More preemptors, as a ReplicaSet's pods (written after the others)."""

    def controllers(self) -> tuple[str, ...]:
        """The controller-manager's controllers (none: it does not run)."""
        return (STORAGE_CONTROLLERS if self.classes else ()) + (
            REPLICA_SET_CONTROLLERS if self.replica_set is not None else ()
        )

    @classmethod
    def generate(
        cls,
        rng: random.Random,
        *,
        nodes: tuple[int, int] = (2, 4),
        preemptors: tuple[int, int] = (3, 10),
        preemptor_writes: Writes = Writes.SETTLED,
        claims: float = 0.0,
        kubelets: tuple[int, int] = (1, 1),
        replica_sets: float = 0.0,
    ) -> PreemptionScenario:
        """A scenario drawn from `rng`: `nodes` and `preemptors` are inclusive ranges of
        their counts. Each node is filled with victims (1 to 3 of them, sizes that add up to
        the node), priorities 1..5 (some equal), shutdown durations of SHUTDOWNS, grace
        periods of 1..5 s; each preemptor asks for 0.5..1 node at priority 100..102 and,
        with the chance `claims`, a WaitForFirstConsumer claim of one of two simulated
        classes (provisionDelay of PROVISION_DELAYS); with the chance `replica_sets`, a
        ReplicaSet of 2 to 4 more (ReplicaSetPreemptors)."""
        # (priorities drawn, then sorted unless the writes are held: a later write never
        # goes before an earlier one in the scheduling queue, so that a burst too is
        # repeatable)
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
        priorities = [rng.randint(100, 102) for _ in range(count)]
        if preemptor_writes is not Writes.HELD:
            priorities.sort(reverse=True)
        classes = (
            tuple(ProvisionedClass(f"sim-{i}", rng.choice(PROVISION_DELAYS)) for i in range(2))
            if claims
            else ()
        )
        preemptor_list = tuple(
            Preemptor(
                name=f"preemptor-{i}",
                milli_cpu=rng.choice((node_cpu // 2, node_cpu * 3 // 4, node_cpu)),
                priority=priority,
                claim_class=rng.choice(classes).name if classes and rng.random() < claims else "",
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
            classes=classes,
            # (drawn last, and only when asked: the draws before are those of older seeds)
            kubelets=min(node_count, rng.randint(*kubelets)) if kubelets != (1, 1) else 1,
            replica_set=(
                ReplicaSetPreemptors(
                    # (from three, a batch of the controller's slow start is concurrent:
                    # the apiserver names a base's objects in the order they commit,
                    # apiserver/registry/names.py)
                    replicas=rng.randint(*REPLICA_SET_REPLICAS),
                    milli_cpu=rng.choice((node_cpu // 4, node_cpu // 2)),
                    priority=_replica_set_priority(
                        rng.randint(100, 102), priorities, preemptor_writes
                    ),
                )
                if replica_sets and rng.random() < replica_sets
                else None
            ),
        )


def _replica_set_priority(drawn: int, preemptors: list[int], writes: Writes) -> int:
    """The ReplicaSet's pods' priority: in a plain burst at most the last preemptor's. Its
    pods are written after every preemptor (the controller's reaction to the set, written
    last), and a plain burst repeats only where its writes come in the queue's order
    (docs/virtual-time.md): a set above the last preemptor would be taken before pods written
    earlier, or after them, as a round fitting between two writes has it in wall time (a CI
    run under load: KEMU_TEST_SEED=18065483's second scenario, a set at 102 after preemptors
    at 102, 101, 100, 100)."""
    if writes is Writes.BURST and preemptors:
        return min(drawn, min(preemptors))
    return drawn


def _split(rng: random.Random, total: int, parts: int) -> list[int]:
    """`total` milli-CPU in `parts` sizes, multiples of 100m, each at least 100m."""
    units = total // 100
    cuts = sorted(rng.sample(range(1, units), parts - 1)) if parts > 1 else []
    bounds = [0, *cuts, units]
    return [(b - a) * 100 for a, b in zip(bounds, bounds[1:], strict=False)]


async def run_scenario(root: Path, scenario: PreemptionScenario) -> RunRecorder:
    """`scenario` on a fresh cluster (etcd, an apiserver, a scheduler with the scenario's
    seed, `kubelets` hollow kubelets for the nodes and, for claims or a ReplicaSet, a
    controller-manager with the PersistentVolume controller and the simulated CSI provisioner
    or the ReplicaSet controller), every process
    started while the clock holds; the victims created one by one with the cluster settled
    after each (`advance_clock(0)`), then the preemptors' claims, then the preemptors at
    that same instant (as `preemptor_writes` says), then the clock at rate max for `run_for`
    virtual seconds."""
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", CLOCK_START])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)  # every process starts at one virtual instant
            c.start_scheduler(extra_args=["--seed", str(scenario.seed)])
            for i in range(scenario.kubelets):
                nodes = len(range(i, scenario.nodes, scenario.kubelets))
                c.start_component(
                    "kubelet",
                    "kubelet-hollow" if scenario.kubelets == 1 else f"kubelet-hollow-{i}",
                    [
                        "--server", c.server,
                        "--nodes", str(nodes),
                        "--node-name-prefix",
                        NODE_PREFIX if scenario.kubelets == 1 else f"{NODE_PREFIX}{i}",
                        "--capacity", f"cpu={scenario.node_milli_cpu}m,memory=8Gi,pods=110",
                        "--root-dir", "",
                        "--pod-startup-delay", "0s",
                    ],
                )  # fmt: skip
            if scenario.controllers():
                manager = c.start_controllermanager(
                    extra_args=["--controllers", ",".join(scenario.controllers())], wait=False
                )
                # (its first lists may wait for its client's tokens: START_SECONDS)
                await client.advance_clock(START_SECONDS)
                await anyio.to_thread.run_sync(manager.wait_ready)
            await client.advance_clock(0)  # every process up, and done with the start
            async with RunRecorder.watching(client) as run:
                priorities = (
                    {v.priority for v in scenario.victims}
                    | {p.priority for p in scenario.preemptors}
                    | ({scenario.replica_set.priority} if scenario.replica_set else set())
                )
                for value in sorted(priorities):
                    await client.create(PriorityClassBuilder(f"p{value}", value).obj())
                for cls in scenario.classes:
                    sc = storage_class(cls.name, SIMULATED_PROVISIONER)
                    sc.parameters[PROVISION_DELAY] = cls.provision_delay
                    await client.create(sc)
                await client.advance_clock(0)
                for victim in scenario.victims:
                    pod = make_pod(victim.name).namespace(NAMESPACE).req(cpu=f"{victim.milli_cpu}m")
                    pod.annotation(SHUTDOWN_ANNOTATION, victim.shutdown)
                    pod.grace(victim.grace_seconds)
                    await client.create(pod.priority_class(f"p{victim.priority}").obj())
                    await client.advance_clock(0)
                for preemptor in scenario.preemptors:
                    if preemptor.claim_class:
                        name = f"claim-{preemptor.name}"
                        await client.create(claim(NAMESPACE, name, preemptor.claim_class))
                await client.advance_clock(0)
                async with _writes(client, scenario.preemptor_writes) as settle:
                    for preemptor in scenario.preemptors:
                        pod = make_pod(preemptor.name).namespace(NAMESPACE)
                        pod.req(cpu=f"{preemptor.milli_cpu}m")
                        obj = pod.priority_class(f"p{preemptor.priority}").obj()
                        if preemptor.claim_class:
                            volume = obj.spec.volumes.add(name="data")
                            volume.persistent_volume_claim.claim_name = f"claim-{preemptor.name}"
                        await client.create(obj)
                        await settle()
                        await anyio.sleep(scenario.write_pause)
                    if scenario.replica_set is not None:
                        await client.create(_replica_set(scenario.replica_set))
                        await settle()
                await client.advance_clock(scenario.run_for)
        return run


def _replica_set(preemptors: ReplicaSetPreemptors) -> types_pb2.ReplicaSet:
    rs = make_replica_set(REPLICA_SET).namespace(NAMESPACE).replicas(preemptors.replicas)
    obj = rs.req(cpu=f"{preemptors.milli_cpu}m").obj()
    obj.spec.template.spec.priority_class_name = f"p{preemptors.priority}"
    return obj


@asynccontextmanager
async def _writes(client: Client, writes: Writes) -> AsyncIterator[Callable[[], Awaitable[object]]]:
    """What follows each of the preemptors' writes, inside what holds them, as `writes` says."""
    if writes is Writes.SETTLED:
        yield functools.partial(client.advance_clock, 0)
    elif writes is Writes.HELD:
        async with client.clock_burst():
            yield anyio.lowlevel.checkpoint
    else:
        yield anyio.lowlevel.checkpoint
