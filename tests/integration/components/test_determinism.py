"""Determinism in virtual time (issue #30 item 5, issue #58 item 6): the same seeded scenario,
run twice on fresh clusters on the event-driven clock, gives the same node for every pod, the
same victims, the same nominatedNodeName transitions and the same virtual binding times to the
millisecond (kemu.testing.digest); a changed scenario gives another digest.

Three shapes: preemption and the autoscaler together (below); issue #58's, ten preemptors of
one priority created back to back at one instant against four full nodes whose victims
terminate over seconds; and random preemption scenarios drawn from a seed
(kemu.testing.determinism; replay a failure with the KEMU_TEST_SEED it prints): two in
make test, eight in make test-long. And one test per order rule at one instant
(docs/virtual-time.md): a binding cycle's PreBind look, a driver's held burst, and (long) the
autoscaler's loop and an asynchronous preemption's last victim, each a step of the cluster.

The scenario is preemption and the autoscaler together: a cloud group of 2-cpu nodes (one
from the start, three at most) under the autoscaler at upstream's default timers, three
low-priority pods of 1.5 cpu (one fits; the autoscaler adds two nodes for the others), then a
high-priority pod of 1.5 cpu at the group's maximum, which preempts a low one. Every process
starts while the clock holds, so that all their timers start at one virtual instant, and the
driver lets the cluster settle (`advance_clock(0)`: the work due now is done) before the
scenario and after each object it writes: writes at one held instant would otherwise race
with the cluster's reactions to each other (docs/virtual-time.md).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import anyio.to_thread
import pytest
from prometheus_client.parser import text_string_to_metric_families

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import PriorityClassBuilder, make_pod
from kemu.testing.cluster import Cluster, Component
from kemu.testing.cluster_time import START_SECONDS, advance_to
from kemu.testing.determinism import (
    PreemptionScenario,
    Preemptor,
    ProvisionedClass,
    Victim,
    Writes,
    run_scenario,
)
from kemu.testing.digest import RunRecorder
from kemu.testing.rand import SeededRandom
from kemu.testing.scenarios import SHUTDOWN_ANNOTATION

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CLOUD = """nodeGroups:
- name: pool-a
  minSize: 1
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""
SEED = "7"


async def _run(root: Path, *, high_after: float) -> RunRecorder:
    """The scenario on a fresh cluster; the high-priority pod comes `high_after` virtual
    seconds after the low ones."""
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)  # every process starts at one virtual instant
            started = [
                c.start_scheduler(extra_args=["--seed", SEED], wait=False),
                c.start_controllermanager(wait=False),
                c.start_cloud(CLOUD),
            ]
            started.append(
                c.start_autoscaler(
                    c.component("cloud"),
                    scan_interval="10s",
                    extra_args=["--seed", SEED],
                    wait=False,
                )
            )
            # Their informers' first lists wait for their clients' rate limiters (the
            # controller-manager's and the autoscaler's go past their bursts): a few
            # virtual seconds, and every process is up and done with the start.
            await client.advance_clock(START_SECONDS)
            for component in started:
                await anyio.to_thread.run_sync(component.wait_ready)
            async with RunRecorder.watching(client) as run:
                await client.create(PriorityClassBuilder("low", 10).obj())
                await client.create(PriorityClassBuilder("high", 1000).obj())
                for i in range(3):
                    # The victim ignores SIGTERM and lingers through its 30 s grace period.
                    low = make_pod(f"low-{i}").namespace("default").req(cpu="1500m")
                    low.annotation(SHUTDOWN_ANNOTATION, "never")
                    await client.create(low.priority_class("low").obj())
                    await client.advance_clock(0)
                await client.advance_clock(high_after)
                high = make_pod("high-0").namespace("default").req(cpu="1500m")
                await client.create(high.priority_class("high").obj())
                await client.advance_clock(60)
        return run


async def test_a_preemption_and_autoscaler_scenario_run_twice_gives_one_digest(
    tmp_path: Path,
) -> None:
    first = await _run(tmp_path / "first", high_after=60)
    second = await _run(tmp_path / "second", high_after=60)
    assert first.summary() == second.summary()
    assert first.digest() == second.digest()
    # What the digest holds is the scenario's outcome: the autoscaler added two nodes for
    # the low pods, and the high pod preempted one of them after its 30 s grace period.
    pods = first.summary()
    assert {p["node"] for p in pods.values()} == {"pool-a-0", "pool-a-1", "pool-a-2"}
    assert sum(bool(p["preempted"]) for p in pods.values()) == 1
    high = pods["default/high-0"]
    assert high["nominated"] == [high["node"], ""]  # nominated, then cleared once bound
    assert isinstance(high["bound_at_ms"], int) and high["bound_at_ms"] >= (60 + 30) * 1000

    changed = await _run(tmp_path / "changed", high_after=75)
    assert changed.digest() != first.digest()
    assert changed.summary()["default/high-0"]["bound_at_ms"] == high["bound_at_ms"] + 15_000


ISSUE_58 = PreemptionScenario(
    nodes=4,
    node_milli_cpu=2000,
    # two victims of 1 cpu on each node (placed in this order), priorities 1..3, their
    # containers exiting 1 s, 2.5 s, 4 s after SIGTERM or never (killed at the 3 s grace period)
    victims=tuple(
        Victim(
            name=f"victim-{i}",
            milli_cpu=1000,
            priority=1 + (i // 2 + i % 2) % 3,
            shutdown=("1s", "2500ms", "4s", "never")[(i // 2 + i % 2) % 4],
            grace_seconds=3,
        )
        for i in range(8)
    ),
    preemptors=tuple(Preemptor(f"preemptor-{i}", 1000, 100) for i in range(10)),
    seed=7,
    preemptor_writes=Writes.BURST,
)


async def test_ten_preemptors_at_one_instant_against_full_nodes_run_twice_give_one_digest(
    tmp_path: Path,
) -> None:
    """Issue #58 item 6: the ten preemptors, queued at one virtual instant, have one
    timestamp; the scheduling queue's heap chose among them by its sift history (when the
    pops came between the arrivals: wall time), and four of ten were nominated and bound to
    other nodes the second time."""
    first = await run_scenario(tmp_path / "first", ISSUE_58)
    second = await run_scenario(tmp_path / "second", ISSUE_58)
    assert first.summary() == second.summary()
    pods = first.summary()
    # The scenario preempts: every victim goes, eight preemptors are bound, after the grace
    # period (the victims that ignore SIGTERM are killed then).
    assert all(pods[f"default/victim-{i}"]["preempted"] for i in range(8))
    bound = [p for name, p in pods.items() if "preemptor" in name and p["node"]]
    assert len(bound) == 8
    assert all(p["nominated"] == [p["node"], ""] for p in bound)


# Drawn by the long suite's generator (KEMU_TEST_SEED=1077974747, its first scenario): two
# runs of it differed one time in two before a scheduling cycle was a step of the cluster.
STEPS = PreemptionScenario(
    nodes=4,
    node_milli_cpu=1000,
    victims=(
        Victim("victim-0", 1000, 3, "1s", 1),
        Victim("victim-1", 1000, 3, "350ms", 1),
        Victim("victim-2", 200, 1, "1s", 1),
        Victim("victim-3", 800, 3, "4s", 5),
        Victim("victim-4", 500, 3, "2500ms", 3),
        Victim("victim-5", 500, 3, "never", 3),
    ),
    preemptors=(
        Preemptor("preemptor-0", 500, 102),
        Preemptor("preemptor-1", 1000, 102),
        Preemptor("preemptor-2", 1000, 100),
    ),
    seed=1535359078,
    preemptor_writes=Writes.BURST,
    run_for=20.0,
)


async def test_victims_ending_at_the_instants_of_backoffs_run_three_times_give_one_digest(
    tmp_path: Path,
) -> None:
    """Victims whose ends (1 s, grace periods of 1 s) fall at the instants the preemptors'
    backoffs end: the kubelet's and the scheduler's work at one instant, and a scheduling
    cycle that must wait for both (docs/virtual-time.md: a cycle is a step of the cluster)."""
    runs = [await run_scenario(tmp_path / str(i), STEPS) for i in range(3)]
    assert runs[0].summary() == runs[1].summary() == runs[2].summary()


PROVISIONED_AT_A_POLL = PreemptionScenario(
    nodes=1,
    node_milli_cpu=1000,
    victims=(),
    preemptors=(Preemptor("preemptor-0", 500, 100, claim_class="sim-1s"),),
    seed=7,
    classes=(ProvisionedClass("sim-1s", "1s"),),
    run_for=5.0,
)


async def test_a_claim_provisioned_at_the_instant_of_a_prebind_poll_is_seen_by_it(
    tmp_path: Path,
) -> None:
    """A binding cycle's look at the others' work is a step (docs/virtual-time.md): the
    pod's PreBind writes its claim's selected node at 0 and looks again each second; the
    simulated provisioner's 1 s ends at the instant of the first look, and the look sees
    the claim bound, whichever timer ran first in wall time. Before, the scheduler's
    in-memory look nearly always won the race against the provisioner's three hops (the
    volume created, the claim bound, the scheduler's informer) and the pod was bound at
    2 s; one run in five of a random scenario with claims saw it the other way."""
    run = await run_scenario(tmp_path, PROVISIONED_AT_A_POLL)
    pod = run.summary()["default/preemptor-0"]
    assert pod["node"] == "node-0"
    assert pod["bound_at_ms"] == 1000


def _slow_burst(writes: Writes) -> PreemptionScenario:
    """One free node, and two pods that each fill it written at one instant, the lower
    priority first, the driver taking 0.3 wall seconds between them."""
    return PreemptionScenario(
        nodes=1,
        node_milli_cpu=1000,
        victims=(),
        preemptors=(Preemptor("preemptor-0", 1000, 100), Preemptor("preemptor-1", 1000, 102)),
        seed=7,
        preemptor_writes=writes,
        write_pause=0.3,
        run_for=5.0,
    )


async def test_a_held_burst_is_taken_in_the_queues_order_however_slow_the_driver(
    tmp_path: Path,
) -> None:
    """A driver's writes at one instant inside `Client.clock_burst()` (docs/virtual-time.md,
    the order rule): no step of the cluster comes between them, so the higher-priority pod,
    written last, is scheduled first and the other finds the node full. Before (a plain
    burst, `Writes.BURST`), a probe round fitting in the driver's pause released the
    scheduler's cycle for the first pod: it was bound, then preempted by the second."""
    pods = (await run_scenario(tmp_path / "held", _slow_burst(Writes.HELD))).summary()
    assert pods["default/preemptor-1"]["bound_at_ms"] == 0
    assert pods["default/preemptor-0"]["node"] == ""
    assert not pods["default/preemptor-0"]["preempted"]


async def _each_twice(root: Path, scenarios: list[PreemptionScenario], seed: int) -> None:
    for i, scenario in enumerate(scenarios):
        first = await run_scenario(root / f"{i}-first", scenario)
        second = await run_scenario(root / f"{i}-second", scenario)
        assert first.summary() == second.summary(), (
            f"scenario {i} of KEMU_TEST_SEED={seed} ran twice gave two outcomes: {scenario}"
        )


async def test_random_preemption_scenarios_run_twice_give_one_digest(
    tmp_path: Path, rng: SeededRandom
) -> None:
    """Issue #58 item 6's property: any seeded scenario (nodes, pod sizes, priorities,
    preemptors created at one instant, the victims' shutdown durations and grace periods)
    gives one outcome. Two small ones in make test (about 40 s of wall time on 2 cores): the
    preemptors of one written with the cluster settled after each, of the other back to
    back, half of them with a WaitForFirstConsumer claim (a binding cycle's PreBind waits
    for its provisioning), and more as a ReplicaSet's pods (named by the apiserver from
    generateName: the same names each run)."""
    scenarios = [
        # (20 virtual seconds: every victim is gone after 5, the preemptors' backoffs end)
        replace(
            PreemptionScenario.generate(
                rng,
                nodes=(2, 4),
                preemptors=(4, 8),
                preemptor_writes=w,
                claims=claims,
                replica_sets=replica_sets,
            ),
            run_for=20.0,
        )
        for w, claims, replica_sets in ((Writes.SETTLED, 0.0, 0.0), (Writes.BURST, 0.5, 1.0))
    ]
    await _each_twice(tmp_path, scenarios, rng.initial_seed)


@pytest.mark.long  # more random scenarios: make test-long
@pytest.mark.timeout(900)
async def test_more_random_preemption_scenarios_run_twice_give_one_digest(
    tmp_path: Path, rng: SeededRandom
) -> None:
    scenarios = [
        PreemptionScenario.generate(
            rng,
            nodes=(2, 5),
            preemptors=(3, 10),
            preemptor_writes=rng.choice(list(Writes)),
            claims=rng.choice((0.0, 0.5, 1.0)),
            kubelets=(1, 3),
            replica_sets=0.5,
        )
        for _ in range(8)
    ]
    await _each_twice(tmp_path, scenarios, rng.initial_seed)


ONE_NODE_POOL = """nodeGroups:
- name: pool-a
  minSize: 1
  maxSize: 2
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


def _last_loop(autoscaler: Component) -> float:
    """The virtual instant the autoscaler's last loop began (its last_activity gauge; the
    exposition prints a float so that it reads back as the same float)."""
    for family in text_string_to_metric_families(autoscaler.scrape()):
        for sample in family.samples:
            if (
                sample.name == "cluster_autoscaler_last_activity"
                and sample.labels.get("activity") == "main"
            ):
                return float(sample.value)
    raise AssertionError("the autoscaler has not looped")


async def _a_pod_ends_at_an_autoscaler_loop(root: Path) -> tuple[str, list[str]]:
    """A node of a one-node pool filled by a pod deleted at the instant of an autoscaler
    loop (every loop ends at once: the next is 1 s after), its container exiting 1 s after
    SIGTERM, so that it ends at the instant of the next loop; a pod needing its room created
    meanwhile. The node that pod is bound to, and the pool's nodes, 10 virtual s later."""
    with Cluster(root, clock=ClockMode.VIRTUAL) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)
            started = [
                c.start_scheduler(extra_args=["--seed", SEED], wait=False),
                c.start_cloud(ONE_NODE_POOL),
            ]
            autoscaler = c.start_autoscaler(c.component("cloud"), scan_interval="1s", wait=False)
            started.append(autoscaler)
            await client.advance_clock(START_SECONDS)
            for component in started:
                await anyio.to_thread.run_sync(component.wait_ready)
            full = make_pod("full").namespace("default").req(cpu="2")
            full.annotation(SHUTDOWN_ANNOTATION, "1s")
            await client.create(full.obj())
            await client.advance_clock(0)
            loop = _last_loop(autoscaler)
            await advance_to(client, loop + 2)
            assert _last_loop(autoscaler) == loop + 2  # (the same float: loops on its grid)
            await client.delete(types_pb2.Pod, "full", namespace="default")
            await client.advance_clock(0)
            waiting = make_pod("waiting").namespace("default").req(cpu="1")
            await client.create(waiting.obj())
            await client.advance_clock(0)
            await client.advance_clock(10)  # (the full pod ends at loop + 3)
            nodes = (await client.list_all(types_pb2.Node)).items
            pod = await client.get(types_pb2.Pod, "waiting", namespace="default")
            return pod.spec.node_name, sorted(n.metadata.name for n in nodes)


@pytest.mark.long  # a cloud and an autoscaler, three times: about 40 s
async def test_an_autoscaler_loop_at_the_instant_a_pod_ends_sees_it_gone(tmp_path: Path) -> None:
    """The autoscaler's loop is a step (docs/virtual-time.md): its loop at the instant a
    pod ends (its kubelet's timer, due at the same float) reads the cluster once the pod is
    gone, so the pending pod it left room for fits on the node and nothing is added.
    Before, the loop read its informers as its timer fired, raced the kubelet's deletion,
    and one run in three scaled the group up for a pod the scheduler then bound to the old
    node."""
    for i in range(3):
        assert await _a_pod_ends_at_an_autoscaler_loop(tmp_path / str(i)) == (
            "pool-a-0",
            ["pool-a-0"],
        ), f"run {i}"


# Drawn by the long suite's generator (KEMU_TEST_SEED=101, its first scenario; written here
# settled): one run in three or four bound preemptor-0 to node-1 at 350 ms (preemptor-2 then
# to node-2 at 1 s) instead of node-2 at 2.5 s (preemptor-2 to node-1 at 350 ms), on main
# before issue #58 item 6's second pass too. Found with the scheduler at --v 5: at the
# instant 0 preemptor-2's asynchronous preemption deleted victim-6, then victim-3, its last;
# when victim-6's watch event reached the queue while the task still waited for victim-3's
# calls, DefaultPreemption's PreEnqueue gated preemptor-2 ("waiting for the preemption for
# this pod to be finished") and it waited for a later event; when the event came after the
# task's answers, it went to backoffQ and was tried again at 0. The last victim's calls are
# now a step of the cluster (StepOrder.ASYNC_PREEMPTION): the others' events come first.
ASYNC_PREEMPTION_RACE = PreemptionScenario(
    nodes=4,
    node_milli_cpu=2000,
    victims=(
        Victim("victim-0", 2000, 5, "never", 2),
        Victim("victim-1", 800, 2, "2500ms", 3),
        Victim("victim-2", 200, 1, "2500ms", 3),
        Victim("victim-3", 1000, 2, "350ms", 1),
        Victim("victim-4", 1800, 2, "1s", 4),
        Victim("victim-5", 200, 2, "1s", 4),
        Victim("victim-6", 700, 4, "0s", 4),
        Victim("victim-7", 1300, 2, "1s", 1),
    ),
    preemptors=tuple(
        Preemptor(f"preemptor-{i}", cpu, priority)
        for i, (cpu, priority) in enumerate(
            [(2000, 102), (2000, 101), (1500, 101), (1000, 101)]
            + [(1500, 100), (1000, 101), (2000, 100), (1000, 101)]
        )
    ),
    seed=1483972120,
    run_for=60.0,
)


@pytest.mark.long  # four runs: about 40 s
async def test_an_async_preemptions_last_victim_after_the_others_reactions_run_four_times(
    tmp_path: Path,
) -> None:
    runs = [await run_scenario(tmp_path / str(i), ASYNC_PREEMPTION_RACE) for i in range(4)]
    assert all(run.summary() == runs[0].summary() for run in runs[1:])
    pods = runs[0].summary()
    assert (pods["default/preemptor-0"]["node"], pods["default/preemptor-0"]["bound_at_ms"]) == (
        "node-2",
        2500,
    )
    assert (pods["default/preemptor-2"]["node"], pods["default/preemptor-2"]["bound_at_ms"]) == (
        "node-1",
        350,
    )
