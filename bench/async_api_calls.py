"""SchedulerAsyncAPICalls' throttled binds (kubernetes/kubernetes#135900; the gate turned off
in 1.34 and 1.35 for it: #134400, #135903): the gate on against off, side by side.

    python -m bench async_api_calls [--failing M] [--nodes N] [--rate R] [--duration S]
                                    [--node-interval I] [--only on|off] [--json FILE]

Each arm runs on a fresh real-time cluster (etcd, the apiserver, the scheduler with
`--feature-gates SchedulerAsyncAPICalls=<arm>` at its default client limits, qps 50 / burst
100, emulated 1.37) in a temporary directory:

1. N nodes of 8 cpu, and M pods of 16 cpu that fit none: each fails (PodScheduled=False, a
   status patch) and backs off.
2. For S seconds: every I seconds a node of 64 cpu tainted `bench=nofit:NoSchedule` is added.
   It could hold a failing pod (NodeResourcesFit's hint for a node add: Queue), so every
   failing pod comes back out of the unschedulable pool or its backoff and fails again, now
   with a new message ("0/K nodes are available: ...", K one more): M real status patches in
   a burst. Meanwhile R pods a second of 10m cpu at priority 1000 (so that they are popped
   before the failing ones) are created; they fit at once.
3. Measured for the fitting pods: creation to bound (the create's return to the watch event
   that shows spec.nodeName), p50/p99/max; from the scheduler's /metrics: the client rate
   limiter's waits by verb (`rest_client_rate_limiter_duration_seconds`: POST is the bindings
   and the scheduler's event writes, PATCH the status patches), the dispatcher's
   `scheduler_async_api_call_execution_duration_seconds` per call type (its wait for the token
   included) and the most `scheduler_pending_async_api_calls` seen (scraped every second).

With the gate off the failure handler's status patch blocks the scheduling cycle, so at most
one waits for a token and a binding waits behind it only; with the gate on the cycles run on,
the status patches pile up in the dispatcher's queue (one per pod, merged) and a binding, queued
behind them, waits for their tokens: the regression. See bench/README.md ("async API calls").
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.to_thread
from prometheus_client.parser import text_string_to_metric_families

from bench.common import LatencyStats, bench_main, fmt, format_table, schedule, summarize
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.flowcontrol import RATE_LIMITER_METRIC
from kemu.machinery.errors import ApiError
from kemu.testing.builders import PriorityClassBuilder, make_node, make_pod
from kemu.testing.cluster import Cluster, Component
from kemu.testing.eventually import eventually
from kemu.testing.processes import ProcessStartError

logger = logging.getLogger(__name__)

GATE: Final = "SchedulerAsyncAPICalls"
NAMESPACE: Final = "default"
HIGH: Final = "bench-high"
TAINT: Final = "bench"
ASYNC_DURATION: Final = "scheduler_async_api_call_execution_duration_seconds"
ASYNC_PENDING: Final = "scheduler_pending_async_api_calls"
BOUND_TIMEOUT: Final = 120.0


@dataclass(frozen=True)
class Options:
    failing: int = 300
    nodes: int = 10
    rate: float = 4.0
    duration: float = 30.0
    node_interval: float = 5.0
    only: str = ""
    json: str | None = None


@dataclass(frozen=True)
class Waits:
    """A histogram's count and sum (seconds), and their mean."""

    count: float = 0.0
    total: float = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0


@dataclass
class Arm:
    gate: bool
    pods: int = 0
    bound: int = 0
    to_bound: LatencyStats | None = None
    limiter: dict[str, Waits] = field(default_factory=dict)
    """rest_client_rate_limiter_duration_seconds by verb."""
    async_calls: dict[str, Waits] = field(default_factory=dict)
    """The dispatcher's call durations by call type (gate on)."""
    max_pending: dict[str, float] = field(default_factory=dict)
    """The most pending dispatcher calls seen, by call type (gate on)."""
    wall: float = 0.0


@dataclass
class Result:
    arms: list[Arm] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def histogram_by(metrics: str, name: str, label: str) -> dict[str, Waits]:
    """The histogram `name` in the /metrics text, its count and sum per value of `label`
    (summed over the other labels)."""
    counts: dict[str, float] = {}
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics):
        if family.name != name:
            continue
        for sample in family.samples:
            key = sample.labels.get(label, "")
            if sample.name == name + "_count":
                counts[key] = counts.get(key, 0.0) + sample.value
            elif sample.name == name + "_sum":
                sums[key] = sums.get(key, 0.0) + sample.value
    return {k: Waits(counts[k], sums.get(k, 0.0)) for k in sorted(counts)}


def gauge_by(metrics: str, name: str, label: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(metrics):
        if family.name != name:
            continue
        for sample in family.samples:
            out[sample.labels.get(label, "")] = sample.value
    return out


def keep_max(seen: dict[str, float], now: Mapping[str, float]) -> None:
    for key, value in now.items():
        seen[key] = max(seen.get(key, value), value)


def delays(created: Mapping[str, float], bound: Mapping[str, float]) -> list[float]:
    """Seconds from each pod's creation to its binding, for the pods bound, sorted."""
    return sorted(bound[name] - created[name] for name in created if name in bound)


async def _watch_bound(client: Client, bound: dict[str, float], prefix: str) -> None:
    listed = await client.list(types_pb2.Pod, NAMESPACE)
    async with client.watch(
        types_pb2.Pod, NAMESPACE, resource_version=listed.resource_version
    ) as events:
        async for event in events:
            pod = event.object
            name = pod.metadata.name
            if pod.spec.node_name and name.startswith(prefix) and name not in bound:
                bound[name] = time.monotonic()


async def _scrape_pending(scheduler: Component, arm: Arm) -> None:
    while True:
        text = await anyio.to_thread.run_sync(scheduler.scrape)
        keep_max(arm.max_pending, gauge_by(text, ASYNC_PENDING, "call_type"))
        await anyio.sleep(1.0)


async def _run_arm(cluster: Cluster, scheduler: Component, opts: Options, arm: Arm) -> None:
    created: dict[str, float] = {}
    bound: dict[str, float] = {}
    async with Client(cluster.server, timeout=30.0) as client:
        await client.create(PriorityClassBuilder(HIGH, 1000).obj())
        for i in range(opts.nodes):
            await client.create(make_node(f"n{i:03}").capacity(cpu="8", pods="110").obj())
        for i in range(opts.failing):
            await client.create(make_pod(f"fail-{i:04}").namespace(NAMESPACE).req(cpu="16").obj())
        async with anyio.create_task_group() as tg:
            tg.start_soon(_watch_bound, client, bound, "fit-")
            if arm.gate:
                tg.start_soon(_scrape_pending, scheduler, arm)
            start = time.monotonic()

            async def add_nodes() -> None:
                i = 0
                while time.monotonic() - start < opts.duration:
                    await anyio.sleep(opts.node_interval)
                    node = make_node(f"tainted-{i:03}").capacity(cpu="64", pods="110")
                    await client.create(node.taint(TAINT, "nofit").obj())
                    i += 1

            tg.start_soon(add_nodes)
            count = max(1, round(opts.rate * opts.duration))
            for i, at in enumerate(schedule(start, opts.rate, count)):
                await anyio.sleep(max(0.0, at - time.monotonic()))
                name = f"fit-{i:05}"
                pod = make_pod(name).namespace(NAMESPACE).req(cpu="10m").priority_class(HIGH)
                await client.create(pod.obj())
                created[name] = time.monotonic()
            with contextlib.suppress(AssertionError):  # (counted as not bound)
                await eventually(
                    lambda: len(bound) >= len(created), timeout=BOUND_TIMEOUT, interval=0.2
                )
            arm.wall = time.monotonic() - start
            tg.cancel_scope.cancel()
    text = await anyio.to_thread.run_sync(scheduler.scrape)
    arm.pods, arm.bound = len(created), len(bound)
    arm.to_bound = summarize(delays(created, bound))
    arm.limiter = histogram_by(text, RATE_LIMITER_METRIC, "verb")
    arm.async_calls = histogram_by(text, ASYNC_DURATION, "call_type")
    keep_max(arm.max_pending, gauge_by(text, ASYNC_PENDING, "call_type"))


def run(opts: Options) -> Result:
    r = Result()
    for gate in (False, True):
        if opts.only and opts.only != ("on" if gate else "off"):
            continue
        arm = Arm(gate)
        with (
            tempfile.TemporaryDirectory(prefix="kemu-bench-async-") as tmp,
            Cluster(Path(tmp)) as cluster,
        ):
            try:
                cluster.start_etcd()
                cluster.start_apiserver()
                scheduler = cluster.start_scheduler(
                    extra_args=["--seed", "1"], feature_gates={GATE: gate}
                )
                anyio.run(_run_arm, cluster, scheduler, opts, arm)
            except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
                r.errors.append(f"gate {'on' if gate else 'off'}: {type(e).__name__}: {e}")
                logger.error("%s\n%s", r.errors[-1], cluster.dump_logs(tail=20))
        r.arms.append(arm)
        if arm.bound < arm.pods:
            r.errors.append(f"gate {'on' if gate else 'off'}: {arm.bound}/{arm.pods} bound")
    return r


def _waits(w: Waits | None) -> str:
    return "-" if w is None else f"{w.count:.0f} / {w.total:.1f} s / {w.mean * 1000:.0f} ms"


def render(opts: Options, r: Result) -> str:
    rows = []
    for arm in r.arms:
        s = arm.to_bound
        rows.append(
            [
                f"{GATE}={'true' if arm.gate else 'false'}",
                f"{arm.bound}/{arm.pods}",
                "-" if s is None else f"{fmt(s.p50, 2)} / {fmt(s.p99, 2)} / {fmt(s.max, 2)}",
                _waits(arm.limiter.get("POST")),
                _waits(arm.limiter.get("PATCH")),
                _waits(arm.async_calls.get("pod_binding")),
                _waits(arm.async_calls.get("pod_status_patch")),
                fmt(arm.max_pending.get("pod_status_patch", 0.0), 0) if arm.gate else "-",
            ]
        )
    text = (
        f"{opts.failing} failing pods on {opts.nodes} nodes, a tainted node every "
        f"{opts.node_interval:g} s, {opts.rate:g} fitting pods/s for {opts.duration:g} s; "
        "scheduler client qps 50 / burst 100\n"
    )
    text += format_table(
        [
            "arm",
            "bound",
            "create->bound p50/p99/max s",
            "limiter POST n/sum/mean",
            "limiter PATCH n/sum/mean",
            "async pod_binding n/sum/mean",
            "async pod_status_patch n/sum/mean",
            "max pending patches",
        ],
        rows,
    )
    if r.errors:
        text += "\nerrors:\n" + "\n".join(f"  {e}" for e in r.errors)
    return text


def options_from_args(args: argparse.Namespace) -> Options:
    for flag, value in (("--failing", args.failing), ("--nodes", args.nodes)):
        if value < 1:
            raise ValueError(f"{flag}: {value} must be >= 1")
    for flag, seconds in (
        ("--rate", args.rate),
        ("--duration", args.duration),
        ("--node-interval", args.node_interval),
    ):
        if not seconds > 0:
            raise ValueError(f"{flag}: {seconds} must be > 0")
    return Options(
        failing=args.failing,
        nodes=args.nodes,
        rate=args.rate,
        duration=args.duration,
        node_interval=args.node_interval,
        only=args.only,
        json=args.json,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench async_api_calls", description=__doc__)
    parser.add_argument("--failing", type=int, default=Options.failing)
    parser.add_argument("--nodes", type=int, default=Options.nodes)
    parser.add_argument("--rate", type=float, default=Options.rate)
    parser.add_argument("--duration", type=float, default=Options.duration)
    parser.add_argument("--node-interval", type=float, default=Options.node_interval)
    parser.add_argument("--only", choices=["", "on", "off"], default="")
    parser.add_argument("--json", default=None)
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(
        "async_api_calls",
        build_parser(),
        argv,
        options_from_args,
        run,
        render,
        json_path=lambda o: o.json,
        failed=lambda r: bool(r.errors),
    )


if __name__ == "__main__":
    raise SystemExit(main())
