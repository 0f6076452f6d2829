"""Scale: kube-scheduler, the apiserver and hollow kubelets at up to 5000 nodes and 50,000 pods.

    python -m bench scale [--workload NAME ...] [--mode bare|hollow|both] [--quick] [--json FILE]
                          [--html FILE]

The workloads are in bench/workloads/scale-config.yaml (upstream's scheduler_perf format, read
by bench.scheduler_perf_workloads): one createNodes op and one measured createPods op.
Each workload runs on a fresh cluster (etcd, the apiserver, `python -m scheduler --seed N`),
once per mode:

- `bare`: the nodes are bare Node objects created through the apiserver, as upstream's
  scheduler_perf (no kubelet); a pod is done when it is bound.
- `hollow`: the nodes are registered by hollow kubelets (`python -m kubelet --nodes K`, the
  nodes split over `--kubelets` processes) with the template's capacity; a pod is bound by the
  scheduler, then run by its kubelet (phase Running).

The measured pods are created as fast as the apiserver takes them (16 in flight); one watch of
all pods records when each is first seen bound (and Running). The phase is cut into windows by
the pods bound (the first tenth, the second, ...: the cluster filling up), and at each window's
end the scheduler's /metrics is scraped and every process's RSS read, so each window has its
created-to-bound pods/s, mean scheduling_algorithm_duration and the RSS reached: how the cost
grows as every bound pod adds to the nodes' state. At the end: the RSS of every process
against the targets of issue #16 (scheduler <= 500 MB, apiserver <= 1 GB, the hollow kubelets
of 5000 nodes <= 1 GB together), CPU over the phase, and a growth table over the runs.

Reuses bench.scheduler_perf's tracker, metric parsing and throughput samples and
bench.kubelet's hollow-kubelet start; see docs/benchmarks.md "scale".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.abc

from bench.common import (
    CpuMeter,
    bench_main,
    fmt,
    format_table,
    jsonable,
    rate,
    ratio,
    rss_kib,
    run_concurrent,
)
from bench.kubelet import is_ready, start_hollow_kubelet
from bench.scheduler_perf import (
    ALGORITHM_DURATION,
    SCHEDULE_ATTEMPTS,
    BindTracker,
    Samples,
    ThroughputStats,
    delta_by_label,
    histogram_mean_delta,
    parse_metrics,
    throughput_samples,
    throughput_stats,
)
from bench.scheduler_perf_workloads import (
    WORKLOADS_DIR,
    CreateNodes,
    CreatePods,
    Workload,
    WorkloadError,
    load_workloads,
    node_objects,
    pod_objects,
    select_workloads,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.duration import DurationError, format_duration, parse_duration
from kemu.machinery.errors import ApiError, Gone
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, Component, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import http_get
from kemu.timeline.model import MarkerKind, Timeline
from kemu.timeline.record import record_timeline
from kemu.timeline.render import OutputPathError, check_output_path, write_page

logger = logging.getLogger(__name__)

SCALE_FILE: Final = WORKLOADS_DIR / "scale-config.yaml"
DEFAULT_LABEL: Final = "scale"
QUICK_LABEL: Final = "quick"
BARE: Final = "bare"
HOLLOW: Final = "hollow"
MODE_CHOICES: Final = {BARE: (BARE,), HOLLOW: (HOLLOW,), "both": (BARE, HOLLOW)}
CREATORS: Final = 16
SEED: Final = 1
WINDOWS: Final = 10
SCRAPE_TIMEOUT: Final = 30.0
TIMEOUT: Final = 3600.0  # for every measured pod to be bound (and Running)
# Hollow nodes per kubelet process unless --kubelets says. Each process holds only its own
# nodes' pods (its informer drops the others' on arrival), but every process still receives and
# decodes every bound pod of the cluster (one spec.nodeName!= watch), so more processes cost CPU,
# and each carries its own base (bench/README.md "scale").
NODES_PER_KUBELET: Final = 5000
HOLLOW_PREFIX: Final = "hollow"
RUNNING: Final = "Running"
SCHEDULER: Final = "scheduler"
APISERVER: Final = "apiserver"
KUBELET_GROUP: Final = "kubelets"  # the hollow kubelets' RSS, summed
MIB: Final = 1024 * 1024
# Issue #16's targets, bytes (MB as written there: 10^6).
TARGETS: Final[dict[str, int]] = {
    SCHEDULER: 500 * 10**6,
    APISERVER: 1000 * 10**6,
    KUBELET_GROUP: 1000 * 10**6,  # for 5000 nodes
}
TARGET_KUBELET_NODES: Final = 5000


# ---------------------------------------------------------------------- pure helpers


def window_bounds(total: int, windows: int) -> list[int]:
    """The bound-pod counts that end each window: `windows` equal shares of `total` (the last
    is `total`), without repeats when there are fewer pods than windows."""
    if windows < 1:
        raise ValueError("windows: must be at least 1")
    if total < 1:
        return []
    return sorted({max(1, math.ceil(total * (i + 1) / windows)) for i in range(windows)})


def split_nodes(nodes: int, kubelets: int) -> list[int]:
    """`nodes` over `kubelets` processes as evenly as possible (the first ones get the rest)."""
    if kubelets < 1:
        raise ValueError("kubelets: must be at least 1")
    if nodes < kubelets:
        raise ValueError(f"kubelets: {kubelets} processes for {nodes} nodes")
    base, extra = divmod(nodes, kubelets)
    return [base + (1 if i < extra else 0) for i in range(kubelets)]


def default_kubelets(nodes: int) -> int:
    return max(1, math.ceil(nodes / NODES_PER_KUBELET))


def capacity_flag(node: types_pb2.Node) -> str:
    """The kubelet's --capacity for a node template (its status.capacity, sorted)."""
    return ",".join(f"{k}={v}" for k, v in sorted(node.status.capacity.items()))


def scale_shape(workload: Workload) -> tuple[CreateNodes, CreatePods]:
    """The workload's createNodes op and its measured createPods op, the only ops a scale run
    has; a WorkloadError naming the workload otherwise."""
    nodes = [op for op in workload.ops if isinstance(op, CreateNodes)]
    pods = [op for op in workload.ops if isinstance(op, CreatePods)]
    if len(nodes) != 1 or len(pods) != 1 or len(workload.ops) != 2 or not pods[0].collect_metrics:
        raise WorkloadError(
            f"{workload.full_name}.workloadTemplate: a scale workload is one createNodes op "
            "and one createPods op with collectMetrics: true"
        )
    if workload.compare_gate is not None:
        raise WorkloadError(f"{workload.full_name}.compareFeatureGate: not for a scale run")
    return nodes[0], pods[0]


@dataclass
class Window:
    """One window of the measured phase: the pods bound from `bound_from` (exclusive) to
    `bound_to` (inclusive)."""

    bound_from: int
    bound_to: int
    seconds: float  # from the bound_from-th pod's binding (or the first create) to bound_to's
    pods_per_second: float
    algorithm_ms: float  # mean scheduling_algorithm_duration between the window's scrapes
    rss_kib: dict[str, int | None] = field(default_factory=dict)  # at the window's end


@dataclass
class Snapshot:
    """What the sampler saw when the bound pods first reached a window's end."""

    bound: int
    metrics: Samples
    rss_kib: dict[str, int | None]


def windows_from(
    bound_times: Sequence[float], start: float, snapshots: Sequence[Snapshot], before: Samples
) -> list[Window]:
    """The windows between consecutive snapshots: pods/s from the binding times (the
    `bound`-th time ends a window), the mean algorithm time from the metrics scraped at the
    snapshots (`before`: at the phase's start; NaN next to a failed, empty scrape)."""
    times = sorted(bound_times)
    out: list[Window] = []
    prev_bound, prev_time, prev_metrics = 0, start, before
    for snap in snapshots:
        if snap.bound <= prev_bound or snap.bound > len(times):
            continue
        end = times[snap.bound - 1]
        seconds = end - prev_time
        out.append(
            Window(
                bound_from=prev_bound,
                bound_to=snap.bound,
                seconds=seconds,
                pods_per_second=rate(snap.bound - prev_bound, seconds),
                algorithm_ms=(
                    histogram_mean_delta(prev_metrics, snap.metrics, ALGORITHM_DURATION) * 1000
                    if prev_metrics and snap.metrics
                    else math.nan  # a scrape failed
                ),
                rss_kib=dict(snap.rss_kib),
            )
        )
        prev_bound, prev_time, prev_metrics = snap.bound, end, snap.metrics
    return out


def group_rss(rss: Mapping[str, int | None]) -> dict[str, int | None]:
    """Per process, plus the hollow kubelets summed under "kubelets" when there are any."""
    out = dict(rss)
    kubelets = [v for k, v in rss.items() if k.startswith("kubelet-")]
    if kubelets:
        out[KUBELET_GROUP] = sum(v for v in kubelets if v is not None)
    return out


# ---------------------------------------------------------------------- a run


async def scrape(component: Component) -> Samples:
    """The component's /metrics, parsed; {} (logged) if it does not answer within
    SCRAPE_TIMEOUT: a saturated scheduler answers late, and a missing window's figure is
    better than a failed run."""
    try:
        status, body = await anyio.to_thread.run_sync(
            lambda: http_get(component.metrics_url, timeout=SCRAPE_TIMEOUT)
        )
    except OSError as e:
        logger.warning("%s: /metrics did not answer (%s)", component.name, e)
        return {}
    if status != 200:
        logger.warning("%s: /metrics answered %d", component.name, status)
        return {}
    return parse_metrics(body.decode())


@dataclass
class Result:
    workload: str
    mode: str
    nodes: int = 0
    pods: int = 0
    kubelets: int = 0  # hollow kubelet processes
    max_pending: int = 0  # the creates' limit on pods created and not bound (0: none)
    pending_peak: int = 0  # the most pods created (begun) and not yet seen bound
    load_avg_start: list[float] = field(default_factory=list)
    load_avg_end: list[float] = field(default_factory=list)
    nodes_seconds: float = math.nan  # bare: creating the nodes; hollow: start to every node Ready
    node_create_rate: float = math.nan
    pod_create_rate: float = math.nan
    phase_seconds: float = math.nan  # first create -> last pod bound
    created_to_bound: float = math.nan
    throughput: ThroughputStats = field(
        default_factory=lambda: ThroughputStats(math.nan, math.nan, math.nan, math.nan, 0)
    )
    algorithm_ms: float = math.nan  # over the whole phase
    # schedule_attempts_total's increase per result over the phase ("error": a failed
    # binding, e.g. a Bind that timed out); {} when a scrape failed.
    attempts: dict[str, float] = field(default_factory=dict)
    running_seconds: float = math.nan  # hollow: first create -> last pod Running
    created_to_running: float = math.nan
    pods_running: int = 0
    windows: list[Window] = field(default_factory=list)
    cpu_cores: dict[str, float] = field(default_factory=dict)  # over the phase
    rss_kib_nodes: dict[str, int | None] = field(default_factory=dict)  # nodes up, no pods
    rss_kib: dict[str, int | None] = field(default_factory=dict)  # at the end
    wall_seconds: float = math.nan
    error: str = ""

    @property
    def label(self) -> str:
        return f"{self.workload} [{self.mode}]"


@dataclass(frozen=True)
class Options:
    workloads: tuple[Workload, ...]
    modes: tuple[str, ...]
    windows: int = WINDOWS
    kubelets: int | None = None  # None: one per NODES_PER_KUBELET nodes
    lease_renew_interval: float = 10.0  # seconds
    creators: int = CREATORS
    # At most this many measured pods created and not yet bound (0: no limit, every pod
    # created as fast as the apiserver takes them, as upstream's scheduler_perf).
    max_pending: int = 0
    seed: int = SEED
    timeout: float = TIMEOUT
    json_path: str | None = None
    keep_dir: str | None = None
    clock: ClockMode = ClockMode.REAL
    html_path: str | None = None  # each run's timeline, a section of one page (kemu.timeline)


class Runner:
    def __init__(self, cluster: Cluster, workload: Workload, mode: str, opts: Options) -> None:
        self.cluster = cluster
        self.opts = opts
        self.mode = mode
        self.nodes_op, self.pods_op = scale_shape(workload)
        kubelets = 0
        if mode == HOLLOW:
            kubelets = opts.kubelets or default_kubelets(self.nodes_op.count)
            split_nodes(self.nodes_op.count, kubelets)  # refuses too many processes
        self.result = Result(
            workload.full_name,
            mode,
            nodes=self.nodes_op.count,
            pods=self.pods_op.count,
            kubelets=kubelets,
            max_pending=opts.max_pending,
            load_avg_start=list(os.getloadavg()),
        )
        self.pids: dict[str, int | None] = {
            name: cluster.processes[name].pid for name in (SCHEDULER, APISERVER, "etcd")
        }
        self.pids["bench"] = os.getpid()
        self.running: dict[str, float] = {}
        self._running_changed = anyio.Event()
        self._pod_event = anyio.Event()  # set (and replaced) on every pod event
        self.timeline: Timeline | None = None
        """Recorded while the run lasts when set (--html)."""

    def rss(self) -> dict[str, int | None]:
        return group_rss({n: rss_kib(p) for n, p in self.pids.items() if p is not None})

    async def _run(self, client: Client) -> None:
        r = self.result
        tracker = BindTracker()
        async with anyio.create_task_group() as tg:
            await tg.start(self.watch_pods, client, tracker)
            started = time.monotonic()
            if self.mode == HOLLOW:
                await self.start_kubelets(client)
            else:
                await self.create_nodes(client)
            r.nodes_seconds = time.monotonic() - started
            await self.wait_scheduler_nodes(client)
            self.mark(f"{self.nodes_op.count} nodes up", started)
            r.rss_kib_nodes = self.rss()
            started = time.monotonic()
            await self.measure(client, tracker)
            self.mark(f"measured phase: {self.pods_op.count} pods", started)
            tg.cancel_scope.cancel()

    def mark(self, label: str, start: float) -> None:
        """A phase of the run on its timeline (--html): from `start` to now."""
        if self.timeline is not None:
            tl = self.timeline
            tl.mark(MarkerKind.NOTE, label, at=tl.since_monotonic(start), until=tl.clock())

    async def run(self) -> Result:
        r = self.result
        async with Client(self.cluster.server, user_agent="bench-scale") as client:
            await client.wait_ready(timeout=30)
            if self.timeline is None:
                await self._run(client)
            else:
                async with record_timeline(client, self.timeline):
                    await self._run(client)
        r.rss_kib = self.rss()
        r.load_avg_end = list(os.getloadavg())
        return r

    async def create_nodes(self, client: Client) -> None:
        nodes = node_objects(self.nodes_op, 0)
        res = await run_concurrent(
            len(nodes), self.opts.creators, lambda i: client.create(nodes[i])
        )
        if res.errors:
            raise RuntimeError(f"{res.errors} node creates failed; the first: {res.first_error}")
        self.result.node_create_rate = res.ops_per_second

    async def start_kubelets(self, client: Client) -> None:
        """The hollow kubelets, started together, each waited for until its nodes are Ready."""
        shares = split_nodes(self.nodes_op.count, self.result.kubelets)
        args = [
            "--capacity", capacity_flag(self.nodes_op.template),
            "--node-lease-renew-interval", format_duration(self.opts.lease_renew_interval),
            # upstream's ratio: the kubelet renews every quarter of the Lease's duration
            "--node-lease-duration-seconds", str(max(1, math.ceil(4 * self.opts.lease_renew_interval))),
            "--pod-startup-delay", "0s",
        ]  # fmt: skip

        async def start(k: int, count: int) -> None:
            await start_hollow_kubelet(
                self.cluster, client, count, f"{HOLLOW_PREFIX}{k}", args, name=f"kubelet-{k}"
            )

        async with anyio.create_task_group() as tg:
            for k, count in enumerate(shares):
                tg.start_soon(start, k, count)
        for k in range(len(shares)):
            self.pids[f"kubelet-{k}"] = self.cluster.processes[f"kubelet-{k}"].pid

    async def wait_scheduler_nodes(self, client: Client) -> None:
        """Until every node of the run is Ready as the apiserver lists it (the scheduler's
        informer sees the same stream; its cache may still be a moment behind, as in
        upstream's scheduler_perf, which does not wait for it either)."""
        wanted = self.nodes_op.count
        with anyio.fail_after(self.opts.timeout):
            while True:
                listed = await client.list_all(types_pb2.Node)
                if sum(1 for n in listed.items if is_ready(n)) >= wanted:
                    return
                await anyio.sleep(0.5)

    async def watch_pods(
        self,
        client: Client,
        tracker: BindTracker,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """One watch of every pod: bindings into `tracker`, the first Running of each pod into
        self.running; resumed from the last resourceVersion if it breaks, and from a fresh list
        if that is Gone (the apiserver closes a watch that falls too far behind; a pod bound or
        Running meanwhile is then seen at the list, later than it happened)."""
        rv = (await client.list(types_pb2.Pod, limit=1)).resource_version
        task_status.started()
        while True:
            try:
                async with client.watch(types_pb2.Pod, resource_version=rv) as events:
                    async for event in events:
                        rv = event.object.metadata.resource_version or rv
                        if event.type == "BOOKMARK":
                            continue
                        self._observe(tracker, event.object, event.type)
            except Gone as e:
                logger.warning("the pod watch is gone (%s); relisting", e)
                listed = await client.list_all(types_pb2.Pod)
                for pod in listed.items:
                    self._observe(tracker, pod, "MODIFIED")
                rv = listed.resource_version
            except ApiError as e:
                logger.warning("the pod watch failed (%s); resuming from %s", e, rv)
                await anyio.sleep(0.1)

    def _observe(self, tracker: BindTracker, pod: types_pb2.Pod, event_type: str) -> None:
        tracker.observe(pod, event_type)
        self._pod_event.set()
        self._pod_event = anyio.Event()
        if pod.status.phase == RUNNING and pod.metadata.name not in self.running:
            self.running[pod.metadata.name] = time.monotonic()
            self._running_changed.set()
            self._running_changed = anyio.Event()

    async def measure(self, client: Client, tracker: BindTracker) -> None:
        r, opts = self.result, self.opts
        index = 1  # the createPods op
        scheduler = self.cluster.component(SCHEDULER)
        await ensure_namespace(client, self.pods_op.namespace)
        pods = pod_objects(self.pods_op, index)
        tracker.expect(index, pods)
        bounds = window_bounds(len(pods), opts.windows)
        snapshots: list[Snapshot] = []
        before = await scrape(scheduler)
        meter = CpuMeter(self.pids)

        async def sample() -> None:
            pending = list(bounds)
            while pending:
                bound = len(tracker.bound_at[index])
                if bound >= pending[0]:
                    while pending and bound >= pending[0]:
                        pending.pop(0)
                    metrics = await scrape(scheduler)
                    snapshots.append(Snapshot(bound, metrics, self.rss()))
                    logger.info("  %d/%d bound", bound, len(pods))
                    continue
                await anyio.sleep(0.25)

        started = 0  # creates begun

        async def create(i: int) -> None:
            nonlocal started
            if opts.max_pending:
                while started - len(tracker.bound_at[index]) >= opts.max_pending:
                    await self._pod_event.wait()
            started += 1
            r.pending_peak = max(r.pending_peak, started - len(tracker.bound_at[index]))
            await client.create(pods[i])

        async with anyio.create_task_group() as tg:
            tg.start_soon(sample)
            meter.start()
            start = time.monotonic()
            res = await run_concurrent(len(pods), opts.creators, create)
            if res.errors:
                raise RuntimeError(f"{res.errors} pod creates failed; the first: {res.first_error}")
            r.pod_create_rate = res.ops_per_second
            await tracker.wait_op(index, opts.timeout)
            if self.mode == HOLLOW:
                await self.wait_running(len(pods), opts.timeout)
            r.cpu_cores = meter.stop()
        times = tracker.bound_at[index]
        end = max(times, default=start)
        r.phase_seconds = end - start
        r.created_to_bound = rate(len(times), r.phase_seconds)
        r.throughput = throughput_stats(throughput_samples(times, start, end))
        r.windows = windows_from(times, start, snapshots, before)
        if snapshots and before and snapshots[-1].metrics:
            after = snapshots[-1].metrics
            r.algorithm_ms = histogram_mean_delta(before, after, ALGORITHM_DURATION) * 1000
            r.attempts = delta_by_label(before, after, SCHEDULE_ATTEMPTS, "result")
        if self.mode == HOLLOW:
            r.pods_running = len(self.running)
            last = max(self.running.values(), default=start)
            r.running_seconds = last - start
            r.created_to_running = rate(r.pods_running, r.running_seconds)

    async def wait_running(self, count: int, within: float) -> None:
        with anyio.fail_after(within):
            while len(self.running) < count:
                await self._running_changed.wait()


def describe_error(e: BaseException) -> str:
    """`Type: message` of an error; for an exception group (a task group's failure), of the
    errors inside it, so that the report names the cause rather than the group."""
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(describe_error(sub) for sub in e.exceptions)
    return f"{type(e).__name__}: {e}"


def run_one(
    workload: Workload, mode: str, opts: Options, timelines: list[Timeline] | None = None
) -> Result:
    """One workload in one mode on a fresh cluster, stopped on return, error or Ctrl-C. With
    `timelines` (--html), the run's timeline is appended to it, a failed run's too."""
    wall = time.monotonic()
    with contextlib.ExitStack() as stack:
        if opts.keep_dir is None:
            tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="kemu-bench-scale-"))
        else:
            tmp = str(Path(opts.keep_dir) / f"{workload.full_name}-{mode}".replace("/", "-"))
            shutil.rmtree(tmp, ignore_errors=True)
            Path(tmp).mkdir(parents=True)
        cluster = stack.enter_context(Cluster(Path(tmp), clock=opts.clock))
        cluster.start_etcd()
        cluster.start_apiserver()
        cluster.start_scheduler(extra_args=["--seed", str(opts.seed)])
        runner = Runner(cluster, workload, mode, opts)
        if timelines is not None:
            runner.timeline = Timeline(runner.result.label)
            runner.timeline.notes.append(
                f"{runner.nodes_op.count} {mode} nodes, {runner.pods_op.count} pods; "
                f"scheduler --seed {opts.seed}"
                + (f"; {runner.result.kubelets} hollow kubelets" if mode == HOLLOW else "")
            )
            timelines.append(runner.timeline)
        try:
            result = anyio.run(runner.run)
        except Exception as e:  # the run's failure is its result; the others still run
            result = runner.result
            result.error = describe_error(e)
            result.rss_kib = runner.rss()
        result.wall_seconds = time.monotonic() - wall
        return result


def run(opts: Options) -> list[Result]:
    """Every workload in every mode, in order; the --json and --html files are rewritten after
    each run, so a long matrix stopped part way keeps the runs it finished."""
    results: list[Result] = []
    timelines: list[Timeline] | None = [] if opts.html_path else None
    for workload in opts.workloads:
        for mode in opts.modes:
            logger.info("%s [%s]", workload.full_name, mode)
            results.append(run_one(workload, mode, opts, timelines))
            if opts.json_path:
                write_json(opts, results)
            if opts.html_path and timelines is not None:
                try:
                    write_page(opts.html_path, timelines, "bench scale")
                except OSError as e:  # checked before the runs: the disk, or a removed directory
                    print(f"bench scale: --html: {e}", file=sys.stderr)
    return results


def write_json(opts: Options, results: Sequence[Result]) -> None:
    options = {
        "workloads": [w.full_name for w in opts.workloads],
        "modes": list(opts.modes),
        "windows": opts.windows,
        "kubelets": opts.kubelets,
        "lease_renew_interval": opts.lease_renew_interval,
        "creators": opts.creators,
        "max_pending": opts.max_pending,
        "seed": opts.seed,
    }
    data = {"host": {"cpus": os.cpu_count()}, "options": options, "results": jsonable(results)}
    assert opts.json_path is not None
    Path(opts.json_path).write_text(json.dumps(data, indent=2) + "\n")


# ---------------------------------------------------------------------- output


def _mib(kib: int | None) -> str:
    return fmt(kib / 1024 if kib is not None else None, 0)


def _rss_names(results: Sequence[Result]) -> list[str]:
    names: list[str] = [SCHEDULER, APISERVER, "etcd"]
    for r in results:
        for n in r.rss_kib:
            if n.startswith("kubelet-") and n not in names:
                names.append(n)
    if any(KUBELET_GROUP in r.rss_kib for r in results):
        names.append(KUBELET_GROUP)
    return [*names, "bench"]


def render_targets(r: Result) -> list[str]:
    """One line per process with a target: its RSS at the end, the target, met or not. The
    hollow kubelets' target is for 5000 nodes: below that it is shown per node, not judged
    (a process's fixed cost would dominate a small run)."""
    lines = []
    for name in (SCHEDULER, APISERVER, KUBELET_GROUP):
        kib = r.rss_kib.get(name)
        target = TARGETS.get(name)
        if kib is None or target is None:
            continue
        line = f"  rss {name}: {kib / 1024:.0f} MiB"
        if name == KUBELET_GROUP:
            line += f" ({kib / max(r.nodes, 1):.0f} KiB a node)"
            if r.nodes < TARGET_KUBELET_NODES:
                lines.append(f"{line}; the target is for {TARGET_KUBELET_NODES} nodes")
                continue
        met = kib * 1024 <= target
        lines.append(f"{line}, target <= {target / 10**6:.0f} MB: {'met' if met else 'NOT met'}")
    return lines


def render_run(r: Result) -> str:
    head = f"{r.label}: {r.nodes} nodes, {r.pods} pods"
    if r.kubelets:
        head += f", {r.kubelets} hollow kubelet process(es)"
    if r.max_pending:
        head += f", at most {r.max_pending} pods pending"
    load = "/".join(f"{x:.2f}" for x in r.load_avg_start)
    head += f"; load at start {load}, wall {fmt(r.wall_seconds, 0)} s"
    if r.error:
        head += f"\n  FAILED: {r.error}"
    rows = [
        [
            f"{w.bound_from}-{w.bound_to}",
            fmt(w.seconds),
            fmt(w.pods_per_second, 0),
            fmt(w.algorithm_ms, 2),
            _mib(w.rss_kib.get(SCHEDULER)),
            _mib(w.rss_kib.get(APISERVER)),
            _mib(w.rss_kib.get(KUBELET_GROUP)),
        ]
        for w in r.windows
    ]
    table = format_table(
        ["pods bound", "s", "pods/s", "algorithm ms", "rss sched", "rss apiserver", "rss kubelets"],
        rows,
    )
    return "\n".join([head, table, *render_targets(r)])


def render(results: Sequence[Result]) -> str:
    names = _rss_names(results)
    headers = ["", *(r.label for r in results)]
    rows: list[list[str]] = []

    def row(name: str, values: Sequence[str]) -> None:
        rows.append([name, *values])

    row("nodes / pods", [f"{r.nodes} / {r.pods}" for r in results])
    row(
        "load avg at start (1 min)",
        [fmt(r.load_avg_start[0], 2) if r.load_avg_start else "-" for r in results],
    )
    row("nodes up s", [fmt(r.nodes_seconds) for r in results])
    row("measured pod creates/s", [fmt(r.pod_create_rate, 0) for r in results])
    row(
        "pods pending peak (limit)",
        [f"{r.pending_peak} ({r.max_pending or 'none'})" for r in results],
    )
    row("measured phase s", [fmt(r.phase_seconds) for r in results])
    row("created-to-bound pods/s", [fmt(r.created_to_bound, 0) for r in results])
    row(
        "  first / last window pods/s",
        [
            f"{fmt(r.windows[0].pods_per_second, 0)} / {fmt(r.windows[-1].pods_per_second, 0)}"
            if r.windows
            else "-"
            for r in results
        ],
    )
    row(
        "throughput p50 / p90",
        [f"{fmt(r.throughput.p50, 0)} / {fmt(r.throughput.p90, 0)}" for r in results],
    )
    row("scheduling_algorithm avg ms", [fmt(r.algorithm_ms, 2) for r in results])
    row(
        "  first / last window ms",
        [
            f"{fmt(r.windows[0].algorithm_ms, 2)} / {fmt(r.windows[-1].algorithm_ms, 2)}"
            if r.windows
            else "-"
            for r in results
        ],
    )
    row(
        "attempts (scheduled / unschedulable / error)",
        [
            " / ".join(
                fmt(r.attempts.get(k, 0.0), 0) for k in ("scheduled", "unschedulable", "error")
            )
            if r.attempts
            else "-"
            for r in results
        ],
    )
    row(
        "created-to-Running pods/s",
        [fmt(r.created_to_running, 0) if r.mode == HOLLOW else "-" for r in results],
    )
    for name in (SCHEDULER, APISERVER, "etcd", KUBELET_GROUP, "bench"):
        if any(name in r.cpu_cores or (name == KUBELET_GROUP) for r in results):
            values = []
            for r in results:
                if name == KUBELET_GROUP:
                    ks = [v for k, v in r.cpu_cores.items() if k.startswith("kubelet-")]
                    values.append(fmt(math.fsum(ks), 2) if ks else "-")
                else:
                    values.append(fmt(r.cpu_cores.get(name), 2))
            if any(v != "-" for v in values):
                row(f"cpu {name} cores", values)
    for name in names:
        if name.startswith("kubelet-"):
            continue
        row(
            f"rss {name} MiB (nodes up / end)",
            [
                f"{_mib(r.rss_kib_nodes.get(name))} / {_mib(r.rss_kib.get(name))}"
                if name in r.rss_kib
                else "-"
                for r in results
            ],
        )
    parts = [format_table(headers, rows)]
    parts.extend(render_run(r) for r in results)
    growth = render_growth(results)
    if growth:
        parts.append(growth)
    return "\n\n".join(parts)


def render_growth(results: Sequence[Result]) -> str:
    """Per mode, each run against that mode's smallest run (fewest nodes, then pods): the
    ratios of pods/s, algorithm ms and RSS, so the cost's growth reads directly."""
    lines: list[str] = []
    for mode in (BARE, HOLLOW):
        runs = [r for r in results if r.mode == mode and not r.error]
        if len(runs) < 2:
            continue
        base = min(runs, key=lambda r: (r.nodes, r.pods))
        rows = []
        for r in runs:
            rows.append(
                [
                    f"{r.nodes}n / {r.pods}p",
                    fmt(ratio(r.created_to_bound, base.created_to_bound), 2),
                    fmt(ratio(r.algorithm_ms, base.algorithm_ms), 2),
                    fmt(_ratio_kib(r.rss_kib.get(SCHEDULER), base.rss_kib.get(SCHEDULER)), 2),
                    fmt(_ratio_kib(r.rss_kib.get(APISERVER), base.rss_kib.get(APISERVER)), 2),
                    fmt(
                        _ratio_kib(r.rss_kib.get(KUBELET_GROUP), base.rss_kib.get(KUBELET_GROUP)), 2
                    ),
                ]
            )
        lines.append(f"growth [{mode}] against {base.nodes}n / {base.pods}p:")
        lines.append(
            format_table(
                [
                    "run",
                    "pods/s x",
                    "algorithm ms x",
                    "rss sched x",
                    "rss apiserver x",
                    "rss kubelets x",
                ],
                rows,
            )
        )
    return "\n".join(lines)


def _ratio_kib(a: int | None, b: int | None) -> float:
    if a is None or b is None:
        return math.nan
    return ratio(float(a), float(b))


# ---------------------------------------------------------------------- command line


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench scale",
        description="kube-scheduler, apiserver and hollow kubelets at up to 5000 nodes and "
        "50,000 pods: pods/s and scheduling_algorithm time in windows as the cluster fills, "
        "the RSS of every process against issue #16's targets, and the growth between sizes",
    )
    p.add_argument(
        "--workload",
        action="append",
        default=[],
        metavar="NAME",
        help="SchedulingScale/<workload> or `all` (repeatable; default: those labelled scale)",
    )
    p.add_argument("--quick", action="store_true", help="the workloads labelled quick (seconds)")
    p.add_argument("--label", default=None, help="the workloads with this label")
    p.add_argument("--config", default=str(SCALE_FILE), help="the workloads file")
    p.add_argument("--mode", choices=sorted(MODE_CHOICES), default="both")
    p.add_argument("--windows", type=int, default=WINDOWS, help="windows of the phase (default 10)")
    p.add_argument(
        "--kubelets",
        type=int,
        default=None,
        metavar="K",
        help=f"hollow kubelet processes (default: one per {NODES_PER_KUBELET} nodes)",
    )
    p.add_argument(
        "--lease-renew-interval",
        default="10s",
        metavar="DURATION",
        help="the hollow kubelets' --node-lease-renew-interval (default 10s, upstream's)",
    )
    p.add_argument("--creators", type=int, default=CREATORS, help="creates in flight (16)")
    p.add_argument(
        "--max-pending",
        type=int,
        default=0,
        metavar="N",
        help="create a measured pod only while fewer than N are created and not bound "
        "(default 0: no limit, all created at once as upstream's scheduler_perf)",
    )
    p.add_argument("--seed", type=int, default=SEED, help="the scheduler's --seed (1)")
    p.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds for the pods (3600)")
    p.add_argument("--json", default=None, metavar="FILE", help="also write the figures as JSON")
    p.add_argument(
        "--html",
        default=None,
        metavar="FILE",
        help="also record each run's timeline (every pod and node, through watches of this "
        "process: its CPU and RSS figures include them) and write them to FILE, one "
        "self-contained HTML page with a section per run (workload and mode), rewritten after "
        "each: a lane per node, pods as bars from binding on, pending pods and nodes over "
        "time, each pod's story on hover or click (about 0.4 KB per pod)",
    )
    p.add_argument("--keep-dir", default=None, metavar="DIR", help="keep each run's cluster")
    p.add_argument("-v", "--verbose", action="store_true", help="log progress")
    p.add_argument("--list", action="store_true", help="list the workloads and exit")
    add_clock_argument(p)
    return p


def options_from_args(args: argparse.Namespace) -> Options:
    try:
        workloads = load_workloads(Path(args.config))
    except WorkloadError as e:
        raise ValueError(str(e)) from e
    label = args.label or (QUICK_LABEL if args.quick else DEFAULT_LABEL)
    try:
        chosen = select_workloads(workloads, args.workload, label)
    except KeyError as e:
        raise ValueError(f"--workload: {e.args[0]}") from e
    if not chosen:
        raise ValueError(f"--label: no workload labelled {label!r} in {args.config}")
    for w in chosen:
        try:
            scale_shape(w)
        except WorkloadError as e:
            raise ValueError(str(e)) from e
    if args.windows < 1:
        raise ValueError("--windows: must be at least 1")
    if args.kubelets is not None and args.kubelets < 1:
        raise ValueError("--kubelets: must be at least 1")
    if args.creators < 1:
        raise ValueError("--creators: must be at least 1")
    if args.max_pending < 0:
        raise ValueError("--max-pending: must be 0 (no limit) or positive")
    if args.timeout <= 0:
        raise ValueError("--timeout: must be positive")
    if args.html is not None:
        try:
            check_output_path(args.html)
        except OutputPathError as e:
            raise ValueError(f"--html: {e}") from e
    try:
        lease = parse_duration(args.lease_renew_interval)
    except DurationError as e:
        raise ValueError(f"--lease-renew-interval: {e}") from e
    if lease <= 0:
        raise ValueError("--lease-renew-interval: must be positive")
    return Options(
        clock=ClockMode(args.clock),
        workloads=tuple(chosen),
        modes=MODE_CHOICES[args.mode],
        windows=args.windows,
        kubelets=args.kubelets,
        lease_renew_interval=lease,
        creators=args.creators,
        max_pending=args.max_pending,
        seed=args.seed,
        timeout=args.timeout,
        json_path=args.json,
        keep_dir=args.keep_dir,
        html_path=args.html,
    )


def failed(results: Sequence[Result]) -> bool:
    return any(r.error for r in results)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.list:
        try:
            workloads = load_workloads(Path(args.config))
        except WorkloadError as e:
            print(f"bench scale: {e}", file=sys.stderr)
            return 2
        for w in workloads:
            print(f"{w.full_name}  [{', '.join(w.labels)}]")
        return 0
    # run() rewrites the --json file after each run itself, so bench_main writes none.
    return bench_main(
        "scale",
        parser,
        argv,
        options_from_args,
        run,
        lambda _opts, results: render(results),
        json_path=lambda _opts: None,
        failed=failed,
    )
