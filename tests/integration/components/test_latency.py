"""Latency on the API path in virtual time (issue #58 item 4): "what if the apiserver answers
in 200 ms". A scheduler started with `--apiserver-latency` waits each call's latency on the
cluster clock before it is sent, so its binding lands that many virtual milliseconds later;
the waits are timers the event-driven clock jumps to, so a seeded distribution gives the same
instants run after run.

The scenario: etcd, an apiserver and a scheduler on the held clock, a Node object (no kubelet:
the scheduler binds to it all the same), then pods created one at a time, each at its own
instant, and the clock advanced past their bindings.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.latency import NO_PATH_LATENCY, Latency, PathLatency
from kemu.machinery.pod_conditions import get_pod_condition
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_node, make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.digest import RunRecorder

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PODS = 3
GAP = 10.0
"""Virtual seconds between two pods' creations."""


async def _bindings(root: Path, latency: PathLatency) -> list[int]:
    """Each pod's binding, in virtual milliseconds after its creation."""
    with Cluster(root, clock=ClockMode.VIRTUAL, latency=latency) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)
            # (its calls at start wait their latency too, on the held clock: it is ready
            # once the clock has moved past them)
            c.start_scheduler(extra_args=["--seed", "7"], wait=False)
            await client.advance_clock(5)
            c.wait_ready("scheduler")
            await client.create(
                make_node("node-0").capacity(cpu="4", memory="8Gi", pods="10").obj()
            )
            await client.advance_clock(1)
            async with RunRecorder.watching(client) as run:
                for i in range(PODS):
                    await client.create(make_pod(f"p-{i}").namespace("default").obj())
                    await client.advance_clock(GAP)
        pods = run.summary()
        return [
            int(pods[f"default/p-{i}"]["bound_at_ms"]) - round(i * GAP * 1000)  # type: ignore[call-overload]
            for i in range(PODS)
        ]


async def test_a_bindings_instant_shifts_by_the_apiserver_latency_in_virtual_time(
    tmp_path: Path,
) -> None:
    idealized = await _bindings(tmp_path / "zero", NO_PATH_LATENCY)
    slow = await _bindings(tmp_path / "200ms", PathLatency(apiserver=Latency.parse("200ms")))
    # the scheduler's Bind waits 200 virtual ms before it is sent: nothing else moves
    assert [s - z for s, z in zip(slow, idealized, strict=True)] == [200] * PODS


async def test_a_seeded_latency_distribution_gives_the_same_instants_twice(
    tmp_path: Path,
) -> None:
    latency = PathLatency(apiserver=Latency.parse("uniform:100ms-300ms"), seed=11)
    first = await _bindings(tmp_path / "first", latency)
    second = await _bindings(tmp_path / "second", latency)
    assert first == second
    assert len(set(first)) > 1  # drawn, not fixed
    assert all(100 <= b <= 300 for b in first), first


async def _ready_after(root: Path, latency: PathLatency) -> list[int]:
    """Each pod's Ready condition, in virtual milliseconds after its creation, on a node of a
    kubelet (its status written once it sees the binding)."""
    with Cluster(root, clock=ClockMode.VIRTUAL, latency=latency) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=["--clock-start", "2030-01-01T00:00:00Z"])
        async with Client(c.server) as client:
            await client.set_clock_rate(0)
            c.start_scheduler(extra_args=["--seed", "7"], wait=False)
            c.start_kubelet("node-0", extra_args=["--pod-startup-delay", "0s"], wait=False)
            await client.advance_clock(5)
            c.wait_ready("scheduler")
            c.wait_ready("kubelet-node-0")
            for i in range(PODS):
                await client.create(make_pod(f"p-{i}").namespace("default").obj())
                await client.advance_clock(GAP)
            pods = (await client.list(types_pb2.Pod, "default")).items
    out = []
    for pod in sorted(pods, key=lambda p: p.metadata.name):
        ready = get_pod_condition(pod.status, "Ready")
        assert ready is not None and ready.status == "True", pod.metadata.name
        t, created = ready.last_transition_time, pod.metadata.creation_timestamp
        out.append(round((t.ToNanoseconds() - created.ToNanoseconds()) / 1e6))
    return out


async def test_an_etcd_latency_delays_what_follows_a_write_in_virtual_time(
    tmp_path: Path,
) -> None:
    """The apiserver's --etcd-latency: each etcd round trip of a component's request waits it
    on the apiserver's clock, a request held on a timer (the event-driven clock jumps to it
    although the caller's call is in flight). A write is dated when the apiserver takes it,
    so what the latency shows in is what follows it: the kubelet sees the binding, and
    writes the pod Ready, that many round trips later."""
    idealized = await _ready_after(tmp_path / "zero", NO_PATH_LATENCY)
    slow = await _ready_after(tmp_path / "etcd", PathLatency(etcd=Latency.parse("50ms")))
    shifts = {s - z for s, z in zip(slow, idealized, strict=True)}
    assert len(shifts) == 1, (idealized, slow)  # the same round trips for every pod
    (shift,) = shifts
    assert shift > 0 and shift % 50 == 0, (idealized, slow)
