"""The hollow kubelet: one `python -m kubelet --nodes K` process running K simulated nodes.

    python -m bench kubelet [--nodes K] [--renew-interval S] [--pod-rate R] [--duration S]
                            [--startup-delay S] [--quick] [--json FILE] [--py-spy FILE]

On a fresh cluster (etcd, the apiserver and the kubelet; no scheduler: pods are created with
spec.nodeName set, so only the kubelet is measured) it records, in one run:

- registration: from starting the kubelet process until all K nodes are Ready (a watch of
  Nodes), and the kubelet's RSS then;
- lease cadence: a watch of the Leases in kube-node-lease for at least three renewal intervals
  (overlapping the pod phase, so renewals are measured under load). Per node, the intervals
  between successive spec.renewTime values (the one listed at the start included): mean, p50,
  p99, max and the drift (mean - the configured interval); and renewals per one-second window
  of renewTime (K / interval when the renewals are spread evenly: the hollow kubelet renews in
  phases of 100 nodes, so with fewer windows than phases a window holds a phase's burst);
- created-to-Running: pods spread round-robin over the nodes, created on an absolute schedule
  at --pod-rate for --duration (each create in its own task, so a slow create does not hold
  back the next); for each pod, the time from just before its create call to the watch event in
  which status.phase is first Running (it includes --pod-startup-delay): p50, p90, p99, max,
  with the achieved create rate;
- CPU (cores) of the kubelet, apiserver, etcd and this process over the measured phase, the
  kubelet's RSS at the end and its peak (sampled every second).

The cluster is always stopped at the end, also on Ctrl-C. See bench/README.md.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import shutil
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import anyio
import anyio.abc
from google.protobuf.timestamp_pb2 import Timestamp

from bench.common import (
    Clock,
    CpuMeter,
    bench_main,
    fmt,
    format_table,
    pace,
    percentile,
    rate,
    ratio,
    rss_kib,
    summarize_stacks,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.duration import format_duration
from kemu.machinery.errors import ApiError
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import ProcessStartError

logger = logging.getLogger(__name__)

LEASE_NAMESPACE: Final = "kube-node-lease"
POD_NAMESPACE: Final = "bench-kubelet"
NODE_PREFIX: Final = "hollow"
RUNNING: Final = "Running"
LEASE_INTERVALS: Final = 3  # renewal intervals the lease watch covers at least
REGISTRATION_TIMEOUT: Final = 600.0
RUNNING_TIMEOUT: Final = 120.0  # after the last create, for every pod to be Running
PY_SPY_SECONDS: Final = 20
KUBELET: Final = "kubelet"


# ---------------------------------------------------------------------- pure helpers


def node_name(prefix: str, index: int) -> str:
    """The name the hollow kubelet gives its node `index` (<prefix>-<index>)."""
    return f"{prefix}-{index}"


def pod_objects(count: int, nodes: int, prefix: str, namespace: str) -> list[types_pb2.Pod]:
    """`count` pods bound to the nodes round-robin (pod i on node i % nodes), no scheduler."""
    if nodes < 1:
        raise ValueError("there must be at least one node")
    width = len(str(max(count - 1, 0)))
    pods = []
    for i in range(count):
        pod = types_pb2.Pod()
        pod.metadata.name = f"pod-{i:0{width}d}"
        pod.metadata.namespace = namespace
        pod.spec.node_name = node_name(prefix, i % nodes)
        c = pod.spec.containers.add()
        c.name = "pause"
        c.image = "registry.k8s.io/pause:3.10"
        pods.append(pod)
    return pods


def seconds(ts: Timestamp) -> float:
    return ts.seconds + ts.nanos / 1e9


def is_ready(node: types_pb2.Node) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)


def renewal_intervals(renewals: Mapping[str, Iterable[float]]) -> list[float]:
    """Per node, the gaps between successive distinct renewTime values, all nodes together.

    A renewTime seen twice (the same Lease revision delivered again, or a non-renewal update)
    counts once; the values are sorted, so the order the watch delivered them in is irrelevant.
    """
    out: list[float] = []
    for times in renewals.values():
        ordered = sorted(set(times))
        out.extend(b - a for a, b in zip(ordered, ordered[1:], strict=False))
    return out


@dataclass(frozen=True)
class Distribution:
    """p50/p90/p99/max/mean of a set of values (seconds); NaN when there are none."""

    count: int
    mean: float
    p50: float
    p90: float
    p99: float
    max: float


def distribution(values: Iterable[float]) -> Distribution:
    v = sorted(values)
    if not v:
        return Distribution(0, math.nan, math.nan, math.nan, math.nan, math.nan)
    return Distribution(
        count=len(v),
        mean=math.fsum(v) / len(v),
        p50=percentile(v, 50),
        p90=percentile(v, 90),
        p99=percentile(v, 99),
        max=v[-1],
    )


def per_second(times: Iterable[float], start: float, end: float) -> list[int]:
    """How many of `times` fall in each whole one-second window of [start, end).

    A trailing partial window is left out (it would read as a dip); times outside are ignored.
    """
    windows = int(math.floor(end - start))
    counts = [0] * max(windows, 0)
    for t in times:
        i = math.floor(t - start)
        if 0 <= i < windows:
            counts[i] += 1
    return counts


@dataclass(frozen=True)
class Cadence:
    """Lease renewal intervals (seconds) against the configured one."""

    configured: float
    intervals: Distribution
    drift: float  # mean interval - configured
    renewals: int  # renewals observed in the window
    nodes_renewing: int  # nodes with at least one interval
    per_second_mean: float
    per_second_min: int
    per_second_max: int


def cadence(
    renewals: Mapping[str, Iterable[float]],
    configured: float,
    window: tuple[float, float],
) -> Cadence:
    """The cadence of `renewals`: the renewTime values (wall seconds) of each node's Lease seen
    by a watch opened after registration; renewals per second are counted over `window`."""
    observed = {name: set(times) for name, times in renewals.items()}
    dist = distribution(renewal_intervals(observed))
    counts = per_second((t for times in observed.values() for t in times), *window)
    return Cadence(
        configured=configured,
        intervals=dist,
        drift=dist.mean - configured if dist.count else math.nan,
        renewals=sum(len(times) for times in observed.values()),
        nodes_renewing=sum(1 for times in observed.values() if len(times) >= 2),
        per_second_mean=math.fsum(counts) / len(counts) if counts else math.nan,
        per_second_min=min(counts, default=0),
        per_second_max=max(counts, default=0),
    )


class RunningTracker:
    """When each expected pod was created (just before its create call) and first seen Running."""

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self.created: dict[str, float] = {}
        self.running: dict[str, float] = {}
        self._done = anyio.Event()
        self._expected = 0

    def expect(self, count: int) -> None:
        self._expected = count

    def creating(self, name: str) -> None:
        self.created[name] = self._clock()

    def observe(self, pod: types_pb2.Pod) -> None:
        name = pod.metadata.name
        if pod.status.phase != RUNNING or name in self.running:
            return
        self.running[name] = self._clock()
        if self._expected and len(self.running) >= self._expected:
            self._done.set()

    def latencies(self) -> list[float]:
        """created-to-Running of each pod seen Running whose create was recorded."""
        return [t - self.created[n] for n, t in self.running.items() if n in self.created]

    async def wait_all(self, within: float) -> None:
        with anyio.fail_after(within):
            await self._done.wait()


async def start_hollow_kubelet(
    cluster: Cluster,
    client: Client,
    nodes: int,
    prefix: str,
    args: Sequence[str] = (),
    *,
    feature_gates: Mapping[str, bool] | None = None,
    name: str = KUBELET,
) -> float:
    """Starts `python -m kubelet --nodes <nodes> --node-name-prefix <prefix> --root-dir ''
    <args>` as the cluster's component `name` and waits until a watch of Nodes has seen every
    one of its nodes Ready, then for its /readyz (every node's Lease exists). Returns the
    seconds from starting the process until every node was Ready."""
    listed = await client.list(types_pb2.Node)
    ready: set[str] = {n.metadata.name for n in listed.items if is_ready(n)}
    wanted = {node_name(prefix, i) for i in range(nodes)}
    argv = [
        "--server", cluster.server,
        "--nodes", str(nodes),
        "--node-name-prefix", prefix,
        "--root-dir", "",
        *args,
    ]  # fmt: skip
    start = time.monotonic()
    # From this (the main) thread, not a worker thread: only a child started from the main
    # thread dies with the bench (kemu.testing.processes: PDEATHSIG), so a bench killed by
    # SIGTERM leaves no hollow kubelet behind. Without `wait` the start is a fork and exec.
    cluster.start_component(KUBELET, name, argv, feature_gates=feature_gates, wait=False)
    logger.info("kubelet started with %d nodes; waiting for them to be Ready", nodes)
    last_log = start
    with anyio.fail_after(REGISTRATION_TIMEOUT):
        async with client.watch(types_pb2.Node, resource_version=listed.resource_version) as events:
            async for event in events:
                node = event.object
                if event.type == "DELETED" or not is_ready(node):
                    ready.discard(node.metadata.name)
                else:
                    ready.add(node.metadata.name)
                now = time.monotonic()
                if now - last_log > 2:
                    logger.info("  %d/%d nodes Ready", len(ready & wanted), nodes)
                    last_log = now
                if wanted <= ready:
                    break
    elapsed = time.monotonic() - start
    logger.info("all %d nodes Ready in %.1fs", nodes, elapsed)
    await anyio.to_thread.run_sync(lambda: cluster.wait_ready(name, timeout=REGISTRATION_TIMEOUT))
    return elapsed


# ---------------------------------------------------------------------- a run


@dataclass
class Result:
    nodes: int = 0
    renew_interval: float = math.nan
    startup_delay: float = math.nan
    pod_rate: float = math.nan  # offered, per second
    pods: int = 0
    registration_seconds: float = math.nan  # kubelet started -> every node Ready
    create_rate: float = math.nan  # achieved: creates / (last create returned - first started)
    create_errors: int = 0
    pods_running: int = 0
    created_to_running: Distribution = field(default_factory=lambda: distribution(()))
    lease: Cadence | None = None
    lease_window_seconds: float = math.nan
    cpu_cores: dict[str, float] = field(default_factory=dict)
    rss_kib_registered: int | None = None
    rss_kib_end: dict[str, int | None] = field(default_factory=dict)
    rss_kib_peak: int | None = None
    load_avg_start: list[float] = field(default_factory=list)
    load_avg_end: list[float] = field(default_factory=list)
    profile: dict[str, Any] = field(default_factory=dict)
    error: str = ""


@dataclass(frozen=True)
class Options:
    nodes: int
    renew_interval: float
    startup_delay: float
    pod_rate: float
    duration: float
    json_path: str | None
    py_spy: str | None
    py_spy_bin: str
    py_spy_seconds: int
    clock: ClockMode = ClockMode.REAL


class Runner:
    def __init__(self, cluster: Cluster, opts: Options, result: Result) -> None:
        self.cluster = cluster
        self.opts = opts
        self.result = result
        self.pids: dict[str, int | None] = {}
        self._profiled: anyio.Event  # set when a py-spy profile is over (made in run())

    async def run(self) -> None:
        opts, r = self.opts, self.result
        self._profiled = anyio.Event()
        async with Client(self.cluster.server, user_agent="bench-kubelet") as client:
            await client.wait_ready(timeout=30)
            await self.register(client)
            self.pids = {
                KUBELET: self.cluster.processes[KUBELET].pid,
                "apiserver": self.cluster.processes["apiserver"].pid,
                "etcd": self.cluster.processes["etcd"].pid,
                "bench": os.getpid(),
            }
            kubelet_pid = self.pids[KUBELET]
            r.rss_kib_registered = rss_kib(kubelet_pid) if kubelet_pid else None
            # Each node renews on its own grid, offset within the interval since the kubelet
            # started: every node renews exactly once per interval from one interval after the
            # start on, so renewals per second are counted from then. The watch sees the
            # Leases only after the kubelet's /readyz, so every renewal it sees is a periodic
            # one (not the Lease's creation).
            window = max((LEASE_INTERVALS + 1) * opts.renew_interval, opts.duration)
            renewals: dict[str, list[float]] = defaultdict(list)
            tracker = RunningTracker()
            meter = CpuMeter(self.pids)
            async with anyio.create_task_group() as tg:
                await tg.start(self.watch_leases, client, renewals)
                await tg.start(self.watch_pods, client, tracker)
                tg.start_soon(self.sample_rss)
                if opts.py_spy:
                    tg.start_soon(self.profile)
                meter.start()
                wall_start, start = time.time(), time.monotonic()
                await self.create_pods(client, tracker)
                await tracker.wait_all(RUNNING_TIMEOUT)
                await anyio.sleep(max(0.0, start + window - time.monotonic()))
                wall_end = time.time()
                r.cpu_cores = meter.stop()
                if opts.py_spy:
                    with anyio.move_on_after(opts.py_spy_seconds + 60):
                        await self._profiled.wait()
                tg.cancel_scope.cancel()
            r.lease_window_seconds = wall_end - wall_start
            r.lease = cadence(
                renewals, opts.renew_interval, (wall_start + opts.renew_interval, wall_end)
            )
            r.pods_running = len(tracker.running)
            r.created_to_running = distribution(tracker.latencies())
        r.rss_kib_end = {n: rss_kib(p) for n, p in self.pids.items() if p is not None}

    async def register(self, client: Client) -> None:
        """Start the kubelet and wait until every one of its nodes is Ready."""
        opts = self.opts
        args = [
            "--node-lease-renew-interval", format_duration(opts.renew_interval),
            "--pod-startup-delay", format_duration(opts.startup_delay),
        ]  # fmt: skip
        self.result.registration_seconds = await start_hollow_kubelet(
            self.cluster, client, opts.nodes, NODE_PREFIX, args
        )

    async def watch_leases(
        self,
        client: Client,
        renewals: dict[str, list[float]],
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        listed = await client.list(types_pb2.Lease, LEASE_NAMESPACE)
        async with client.watch(
            types_pb2.Lease, LEASE_NAMESPACE, resource_version=listed.resource_version
        ) as events:
            task_status.started()
            async for event in events:
                if event.type in ("ADDED", "MODIFIED"):
                    lease = event.object
                    renewals[lease.metadata.name].append(seconds(lease.spec.renew_time))

    async def watch_pods(
        self,
        client: Client,
        tracker: RunningTracker,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        listed = await client.list(types_pb2.Pod, POD_NAMESPACE)
        async with client.watch(
            types_pb2.Pod, POD_NAMESPACE, resource_version=listed.resource_version
        ) as events:
            task_status.started()
            async for event in events:
                if event.type in ("ADDED", "MODIFIED"):
                    tracker.observe(event.object)

    async def create_pods(self, client: Client, tracker: RunningTracker) -> None:
        opts, r = self.opts, self.result
        count = max(1, round(opts.pod_rate * opts.duration))
        await ensure_namespace(client, POD_NAMESPACE)
        pods = pod_objects(count, opts.nodes, NODE_PREFIX, POD_NAMESPACE)
        tracker.expect(count)
        r.pods = count
        errors: list[str] = []
        started = time.monotonic()
        last_done = started

        async def create(pod: types_pb2.Pod) -> None:
            nonlocal last_done
            tracker.creating(pod.metadata.name)
            try:
                await client.create(pod)
            except ApiError as e:
                errors.append(f"{type(e).__name__}: {e}")
            last_done = max(last_done, time.monotonic())

        logger.info("creating %d pods at %g/s", count, opts.pod_rate)
        async with anyio.create_task_group() as tg:
            async for i, _late in pace(count, opts.pod_rate):
                tg.start_soon(create, pods[i])
        r.create_errors = len(errors)
        r.create_rate = rate(count - len(errors), last_done - started)
        if errors:
            raise RuntimeError(f"{len(errors)} pod creates failed; the first: {errors[0]}")
        logger.info("created %d pods at %.1f/s", count, r.create_rate)

    async def sample_rss(self) -> None:
        pid = self.pids[KUBELET]
        if pid is None:
            return
        while True:
            kib = rss_kib(pid)
            if kib is not None:
                self.result.rss_kib_peak = max(self.result.rss_kib_peak or 0, kib)
            await anyio.sleep(1)

    async def profile(self) -> None:
        """py-spy (raw, GIL-holding samples) on the kubelet from the start of the pod phase."""
        r, opts, pid = self.result, self.opts, self.pids[KUBELET]
        assert opts.py_spy is not None and pid is not None
        out = Path(opts.py_spy)
        argv = [
            opts.py_spy_bin, "record", "-p", str(pid), "-d", str(opts.py_spy_seconds),
            "-f", "raw", "-o", str(out), "--gil",
        ]  # fmt: skip
        try:
            proc = await anyio.open_process(argv, stdout=subprocess.DEVNULL, stderr=None)
        except OSError as e:
            r.profile = {"error": f"cannot run {argv[0]}: {e}"}
            self._profiled.set()
            return
        try:
            with anyio.fail_after(opts.py_spy_seconds + 60):
                await proc.wait()
            if proc.returncode != 0:
                r.profile = {"error": f"py-spy exited with code {proc.returncode}"}
                return
            total, own, inclusive = summarize_stacks(await anyio.Path(out).read_text(), top=20)
            r.profile = {"file": str(out), "samples": total, "self": own, "inclusive": inclusive}
        finally:
            self._profiled.set()
            with anyio.CancelScope(shield=True):
                if proc.returncode is None:
                    proc.kill()
                    await proc.wait()
                await proc.aclose()


def run(opts: Options) -> Result:
    """One run on a fresh cluster; the cluster is stopped on return, error or Ctrl-C."""
    result = Result(
        nodes=opts.nodes,
        renew_interval=opts.renew_interval,
        startup_delay=opts.startup_delay,
        pod_rate=opts.pod_rate,
        load_avg_start=list(os.getloadavg()),
    )
    with (
        tempfile.TemporaryDirectory(prefix="kemu-bench-kubelet-") as tmp,
        Cluster(Path(tmp), clock=opts.clock) as cluster,
    ):
        try:
            cluster.start_etcd()
            cluster.start_apiserver()
            anyio.run(Runner(cluster, opts, result).run)
        except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
            result.error = f"{type(e).__name__}: {e}"
            logger.error("the run failed: %s\n%s", result.error, cluster.dump_logs(tail=20))
    result.load_avg_end = list(os.getloadavg())
    return result


# ---------------------------------------------------------------------- output


def _ms(value: float) -> str:
    return fmt(value * 1000 if not math.isnan(value) else value, 0)


def _mib(kib: int | None) -> str:
    return fmt(kib / 1024 if kib is not None else None, 0)


def render(r: Result) -> str:
    rows: list[list[str]] = []

    def row(label: str, value: str, target: str = "") -> None:
        rows.append([label, value, target])

    lc = r.lease
    d = r.created_to_running
    row("nodes", str(r.nodes))
    row("registration: all nodes Ready s", fmt(r.registration_seconds, 1))
    row("kubelet rss after registration MiB", _mib(r.rss_kib_registered), "<= 300")
    row(
        "kubelet rss end / peak MiB",
        f"{_mib(r.rss_kib_end.get(KUBELET))} / {_mib(r.rss_kib_peak)}",
        "<= 300",
    )
    row("lease renew interval s", fmt(r.renew_interval, 1))
    row("lease window s", fmt(r.lease_window_seconds, 1))
    if lc is not None:
        i = lc.intervals
        row("lease renewals / nodes renewing", f"{lc.renewals} / {lc.nodes_renewing}")
        row("lease interval mean / p50 s", f"{fmt(i.mean, 3)} / {fmt(i.p50, 3)}")
        row("lease interval p99 / max s", f"{fmt(i.p99, 3)} / {fmt(i.max, 3)}")
        row("lease drift (mean - configured) ms", fmt(lc.drift * 1000, 1), "~0")
        row(
            "renewals/s mean (min..max)",
            f"{fmt(lc.per_second_mean, 1)} ({lc.per_second_min}..{lc.per_second_max})",
            f"~{fmt(ratio(r.nodes, r.renew_interval), 0)}",
        )
    row("pod startup delay s", fmt(r.startup_delay, 2))
    row("pods offered / s", fmt(r.pod_rate, 0))
    row("pods created / achieved creates/s", f"{r.pods} / {fmt(r.create_rate, 1)}")
    row("pods Running", str(r.pods_running))
    row("created-to-Running p50 / p90 ms", f"{_ms(d.p50)} / {_ms(d.p90)}")
    row("created-to-Running p99 / max ms", f"{_ms(d.p99)} / {_ms(d.max)}", "p99 <= 1000")
    for name in (KUBELET, "apiserver", "etcd", "bench"):
        row(f"cpu {name} cores", fmt(r.cpu_cores.get(name), 2))
    for name in ("apiserver", "etcd"):
        row(f"rss {name} MiB (end)", _mib(r.rss_kib_end.get(name)))
    load = " -> ".join(
        f"{a[0]:.2f}" for a in (r.load_avg_start, r.load_avg_end) if a
    )  # fmt: skip
    row("load average 1 min (start -> end)", load or "-")
    lines = [
        f"hollow kubelet: {r.nodes} nodes in one process, {os.cpu_count()} cpus; cpu over the "
        "measured phase (pods and lease watch)",
        "",
        format_table(["", "value", "target"], rows),
    ]
    if r.error:
        lines.append(f"FAILED: {r.error}")
    p = r.profile
    if p.get("error"):
        lines.append(f"py-spy: {p['error']}")
    elif p:
        lines.append("")
        lines.append(f"py-spy of the kubelet ({p['samples']} GIL samples, {p['file']})")
        for title in ("self", "inclusive"):
            lines.append(f"  top {title}:")
            for frame, count in p[title]:
                lines.append(f"    {100 * ratio(count, p['samples']):5.1f}%  {frame}")
    return "\n".join(lines)


# ---------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench kubelet",
        description="one hollow kubelet process with many nodes: registration, RSS, Lease "
        "cadence and pod created-to-Running latency",
    )
    parser.add_argument("--nodes", type=int, help="hollow nodes (default 1000; quick 100)")
    parser.add_argument(
        "--renew-interval", type=float, help="--node-lease-renew-interval, s (default 10; quick 2)"
    )
    parser.add_argument(
        "--startup-delay",
        type=float,
        default=0.0,
        help="--pod-startup-delay, s (default 0: created-to-Running includes it)",
    )
    parser.add_argument("--pod-rate", type=float, help="pods created per s (default 100; quick 50)")
    parser.add_argument("--duration", type=float, help="s of pod creation (default 20; quick 10)")
    parser.add_argument("--quick", action="store_true", help="100 nodes, 10 s at 50/s, renew 2 s")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    parser.add_argument(
        "--py-spy",
        metavar="FILE",
        help="profile the kubelet with py-spy (raw, --gil) from the start of the pod phase "
        "into FILE, and print its top frames",
    )
    parser.add_argument("--py-spy-bin", default=shutil.which("py-spy") or "py-spy")
    parser.add_argument("--py-spy-seconds", type=int, default=PY_SPY_SECONDS)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    add_clock_argument(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> Options:
    """The run's options: --quick changes the defaults, explicit flags win. ValueError if bad."""
    quick = bool(args.quick)

    def pick(value: float | None, full: float, small: float) -> float:
        return value if value is not None else (small if quick else full)

    opts = Options(
        clock=ClockMode(args.clock),
        nodes=int(pick(args.nodes, 1000, 100)),
        renew_interval=pick(args.renew_interval, 10.0, 2.0),
        startup_delay=args.startup_delay,
        pod_rate=pick(args.pod_rate, 100.0, 50.0),
        duration=pick(args.duration, 20.0, 10.0),
        json_path=args.json,
        py_spy=args.py_spy,
        py_spy_bin=args.py_spy_bin,
        py_spy_seconds=args.py_spy_seconds,
    )
    if opts.nodes < 1:
        raise ValueError("--nodes must be at least 1")
    for flag, value in (
        ("--renew-interval", opts.renew_interval),
        ("--pod-rate", opts.pod_rate),
        ("--duration", opts.duration),
    ):
        if not value > 0:
            raise ValueError(f"{flag} must be positive")
    if opts.startup_delay < 0:
        raise ValueError("--startup-delay must not be negative")
    return opts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(
        "kubelet",
        build_parser(),
        argv,
        options_from_args,
        run,
        lambda _, result: render(result),
        json_path=lambda opts: opts.json_path,
        failed=lambda result: bool(result.error),
    )
