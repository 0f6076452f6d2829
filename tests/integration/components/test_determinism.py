"""Determinism in virtual time (issue #30 item 5): the same seeded scenario, run twice on fresh
clusters on the event-driven clock, gives the same node for every pod, the same victims, the
same nominatedNodeName transitions and the same virtual binding times to the millisecond
(kemu.testing.digest); a changed scenario gives another digest.

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

from pathlib import Path

import anyio.to_thread
import pytest

from kemu.client.client import Client
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import PriorityClassBuilder, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.cluster_time import START_SECONDS
from kemu.testing.digest import RunRecorder
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
