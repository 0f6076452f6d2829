"""Virtual time against wall time (issue #30): how fast a cluster on the event-driven virtual
clock (`--clock virtual`, `kemuctl clock advance`) gets through upstream's timers.

    python -m bench virtual_time [--nodes K] [--hours H] [--only idle|autoscaler]
        [--lease-batch on|off|both] [--json FILE]

Each phase runs on a fresh cluster in virtual time, in a temporary directory (stopped at the
end, also on Ctrl-C):

1. idle: etcd, the apiserver, the controller-manager, the scheduler and one hollow kubelet with
   K nodes (their heartbeats and Leases every 10 s, the node monitor, the leader leases), all
   started while the clock holds (one phase for their timers; a hollow kubelet renews in phases
   of 100 nodes), then advanced H virtual hours (`AdvanceClock`). Rows:
   virtual seconds, wall seconds, their ratio, the jumps the clock made (segment generations),
   and the nodes still Ready at the end (all: no heartbeat was late); the CPU each process
   used during the advance, in ms per Lease renewal (nodes x virtual s / the 10 s renew
   interval; the node status checks and the node monitor's reads ride along). With
   `--lease-batch both` the phase runs twice, alternated on fresh clusters: the hollow
   kubelet with `--node-lease-batch=false` (one Update per renewal) and with its default
   (the renewals due at one instant in one UpdateBatch: kubelet/lease_batch.py).
2. autoscaler: etcd, the apiserver, the controller-manager, the scheduler, the cloud (group
   pool-a, 3 nodes of 2 cpu at most, provisioning delay 0) and the cluster autoscaler at
   upstream's default timers (10 s scan interval, 10 min unneeded time and delay after add).
   At rate max: 3 pods of 1500m cpu are created (one node each) and the phase waits until they
   run (scale-up), then deletes them and waits until the group's nodes are gone (scale-down).
   Rows: virtual and wall seconds of each part. In real time the scale-down alone takes more
   than 10 minutes.

See bench/README.md ("virtual time").
"""

from __future__ import annotations

import argparse
import logging
import math
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio

from bench.common import CpuMeter, bench_main, fmt, format_table
from bench.kubelet import KUBELET, is_ready, start_hollow_kubelet
from cloud.config import NODE_GROUP_LABEL
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import ApiError
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster
from kemu.testing.cluster_time import START_SECONDS
from kemu.testing.eventually import eventually
from kemu.testing.processes import ProcessStartError
from kubelet.settings import DEFAULT_LEASE_RENEW_INTERVAL

logger = logging.getLogger(__name__)

AUTOSCALER_CLOUD: Final = """nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: 3
  template:
    capacity: {cpu: "2", memory: 4Gi, pods: "20"}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""
PHASE_TIMEOUT: Final = 600.0  # wall seconds a phase may take at most


@dataclass
class Options:
    nodes: int = 100
    hours: float = 1.0
    only: str = ""
    lease_batch: str = "on"
    json: str | None = None

    @property
    def batch_variants(self) -> tuple[bool, ...]:
        return {"on": (True,), "off": (False,), "both": (False, True)}[self.lease_batch]


@dataclass
class Span:
    virtual: float
    wall: float

    @property
    def ratio(self) -> float:
        return self.virtual / self.wall if self.wall > 0 else math.inf


@dataclass
class Idle:
    batch: bool
    span: Span
    jumps: int = 0
    ready: int = 0
    cpu_seconds: dict[str, float] = field(default_factory=dict)
    renewals: int = 0
    settle_virtual: float = 0.0
    """Virtual seconds the new nodes took to settle before the measured advance."""

    def ms_per_renewal(self, process: str) -> float:
        cpu = self.cpu_seconds.get(process, math.nan)
        return 1000 * cpu / self.renewals if self.renewals else math.nan


@dataclass
class Result:
    idle: list[Idle] = field(default_factory=list)
    scale_up: Span | None = None
    scale_down: Span | None = None
    errors: list[str] = field(default_factory=list)


class _Measure:
    """Virtual and wall time from its start."""

    def __init__(self, virtual: float) -> None:
        self._virtual = virtual
        self._wall = time.monotonic()

    def span(self, virtual: float) -> Span:
        return Span(virtual - self._virtual, time.monotonic() - self._wall)


IDLE_PROCESSES: Final = ("apiserver", "etcd", KUBELET, "controllermanager", "scheduler")


SETTLE_STEP: Final = 5.0
"""Virtual seconds the clock is advanced at a time until the new nodes are settled."""


async def _settle_nodes(client: Client, nodes: int) -> float:
    """Advances the held clock until every node has its podCIDR, and returns the virtual
    seconds it took: the controller-manager's start-up work on the new nodes (its nodeipam
    controller PATCHes each node's podCIDR, at upstream's --kube-api-qps 20 and burst 30:
    about 50 virtual s and a clock jump per 50 ms at 1000 nodes) is not the idle cluster's,
    and is left out of the measured advance."""
    taken = 0.0
    with anyio.fail_after(PHASE_TIMEOUT):
        while True:
            items = (await client.list_all(types_pb2.Node)).items
            if len(items) >= nodes and all(n.spec.pod_cidr for n in items):
                return taken
            await client.advance_clock(SETTLE_STEP)
            taken += SETTLE_STEP


async def idle_phase(cluster: Cluster, opts: Options, batch: bool, r: Result) -> None:
    async with Client(cluster.server) as client:
        # (the clock holds: the nodes start in the components' phase)
        args = [f"--node-lease-batch={str(batch).lower()}"]
        await start_hollow_kubelet(cluster, client, opts.nodes, "hollow", args)
        await client.set_clock_rate(0)
        settled = await _settle_nodes(client, opts.nodes)
        held = await client.clock_status()
        start = _Measure(held.segment.base_virtual)
        generation = held.segment.generation
        meter = CpuMeter({name: cluster.processes[name].pid for name in IDLE_PROCESSES})
        meter.start()
        logger.info("advancing %g virtual hours (lease batch %s)", opts.hours, batch)
        with anyio.fail_after(PHASE_TIMEOUT):
            done = await client.advance_clock(opts.hours * 3600)
        cores = meter.stop()
        idle = Idle(batch, start.span(done.now), settle_virtual=settled)
        idle.cpu_seconds = {name: c * meter.wall for name, c in cores.items()}
        idle.renewals = round(opts.nodes * idle.span.virtual / DEFAULT_LEASE_RENEW_INTERVAL)
        idle.jumps = done.segment.generation - generation
        nodes = (await client.list_all(types_pb2.Node)).items
        idle.ready = sum(1 for n in nodes if is_ready(n))
        r.idle.append(idle)


async def autoscaler_phase(cluster: Cluster, r: Result) -> None:
    async with Client(cluster.server) as client:
        await client.set_clock_rate(math.inf)
        begin = _Measure((await client.clock_status()).now)
        names = [f"big-{i}" for i in range(3)]
        for name in names:
            pod = make_pod(name).namespace("default").req(cpu="1500m").obj()
            await client.create(pod)

        async def all_running() -> bool:
            pods = (await client.list_all(types_pb2.Pod, "default")).items
            return sum(1 for p in pods if p.status.phase == "Running") == len(names)

        async def group_gone() -> bool:
            nodes = await client.list_all(types_pb2.Node, label_selector=NODE_GROUP_LABEL)
            return not nodes.items

        await eventually(all_running, timeout=PHASE_TIMEOUT, interval=0.05)
        r.scale_up = begin.span((await client.clock_status()).now)
        logger.info("scale-up: %s virtual s in %s wall s", r.scale_up.virtual, r.scale_up.wall)
        down = _Measure((await client.clock_status()).now)
        for name in names:
            await client.delete(types_pb2.Pod, name, "default", grace_period_seconds=0)
        await eventually(group_gone, timeout=PHASE_TIMEOUT, interval=0.1)
        r.scale_down = down.span((await client.clock_status()).now)


async def _hold_clock(server: str) -> None:
    async with Client(server) as client:
        await client.set_clock_rate(0)


async def _give_start_time(server: str) -> None:
    async with Client(server) as client:
        await client.advance_clock(START_SECONDS)


@contextmanager
def _virtual_cluster(phase: str, r: Result) -> Iterator[Cluster]:
    """A fresh cluster in virtual time with etcd, the apiserver, the controller-manager and
    the scheduler; what fails in the block is the phase's error, with the logs' tails."""
    with (
        tempfile.TemporaryDirectory(prefix="kemu-bench-vt-") as tmp,
        Cluster(Path(tmp), clock=ClockMode.VIRTUAL) as cluster,
    ):
        try:
            cluster.start_etcd()
            cluster.start_apiserver()
            # The components start while the clock holds (docs/virtual-time.md's rule: one
            # phase for all their timers, e.g. the two leader leases renewed at one instant).
            anyio.run(_hold_clock, cluster.server)
            # (the controller-manager's first lists pass its rate limiter's burst: it needs
            # START_SECONDS of the clock to start)
            cluster.start_controllermanager(wait=False)
            cluster.start_scheduler()
            anyio.run(_give_start_time, cluster.server)
            cluster.wait_ready("controllermanager")
            yield cluster
        except (ProcessStartError, RuntimeError, TimeoutError, ApiError, AssertionError) as e:
            r.errors.append(f"{phase}: {type(e).__name__}: {e}")
            logger.error("%s\n%s", r.errors[-1], cluster.dump_logs(tail=20))


def run(opts: Options) -> Result:
    r = Result()
    if opts.only in ("", "idle"):
        for batch in opts.batch_variants:
            with _virtual_cluster("idle", r) as cluster:
                anyio.run(idle_phase, cluster, opts, batch, r)
    if opts.only in ("", "autoscaler"):
        with _virtual_cluster("autoscaler", r) as cluster:
            cluster.start_cloud(AUTOSCALER_CLOUD, provision_delay="0s")
            cluster.start_autoscaler(cluster.component("cloud"), scan_interval="10s", wait=False)
            anyio.run(_give_start_time, cluster.server)  # its lists pass its burst too
            cluster.wait_ready("autoscaler")
            anyio.run(autoscaler_phase, cluster, r)
    return r


def render(opts: Options, r: Result) -> str:
    rows = []
    for idle in r.idle:
        cpu = ", ".join(f"{name} {fmt(idle.ms_per_renewal(name), 3)}" for name in IDLE_PROCESSES)
        rows.append(
            [
                f"idle, {opts.nodes} hollow nodes, advance {opts.hours:g} h, "
                f"lease batch {'on' if idle.batch else 'off'}",
                fmt(idle.span.virtual, 0),
                fmt(idle.span.wall),
                fmt(idle.span.ratio, 1),
                f"{idle.jumps} jumps; {idle.ready}/{opts.nodes} nodes Ready after; "
                f"measured after {idle.settle_virtual:g} virtual s of the nodes' start-up; "
                f"CPU ms per renewal ({idle.renewals}): {cpu}",
            ]
        )
    for label, span in (
        ("autoscaler scale-up, 3 nodes", r.scale_up),
        ("autoscaler scale-down (10m unneeded)", r.scale_down),
    ):
        if span is not None:
            rows.append([label, fmt(span.virtual, 0), fmt(span.wall), fmt(span.ratio, 0), ""])
    text = format_table(["phase", "virtual s", "wall s", "virtual/wall", "notes"], rows)
    if r.errors:
        text += "\nerrors:\n" + "\n".join(f"  {e}" for e in r.errors)
    return text


def options_from_args(args: argparse.Namespace) -> Options:
    if args.nodes < 1:
        raise ValueError(f"--nodes: {args.nodes} must be >= 1")
    if not args.hours > 0:
        raise ValueError(f"--hours: {args.hours} must be > 0")
    return Options(
        nodes=args.nodes,
        hours=args.hours,
        only=args.only,
        lease_batch=args.lease_batch,
        json=args.json,
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench virtual_time", description=__doc__)
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--hours", type=float, default=1.0)
    parser.add_argument("--only", choices=["", "idle", "autoscaler"], default="")
    parser.add_argument("--lease-batch", choices=["on", "off", "both"], default="on")
    parser.add_argument("--json", default=None)
    parser.add_argument("-v", "--verbose", action="store_true")
    return bench_main(
        "virtual_time",
        parser,
        argv,
        options_from_args,
        run,
        render,
        json_path=lambda o: o.json,
        failed=lambda r: bool(r.errors),
    )
