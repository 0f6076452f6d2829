"""The cluster autoscaler on real processes.

    python -m bench autoscaler [--pods N] [--nodes K] [--pods-per-node P] [--loops L]
                               [--scan-interval DURATION] [--non-empty-candidates N]
                               [--only scale-up|loop] [--json FILE]

Two phases, each on a fresh cluster in a temporary directory (stopped at the end, also on
Ctrl-C):

1. scale-up latency: etcd, the apiserver, the scheduler, the controller-manager, the cloud
   (`--provision-delay 0s`, one group `pool-a`: 4 cpu / 8Gi / 110 pods nodes, min 0, max 50,
   kubelets with `--pod-startup-delay 0s`) and the autoscaler at --scan-interval. N pods of
   500m cpu selecting pool-a (8 per node) are created at once; for each, the time from just
   before its create to the watch event in which it is first Running (the scheduler marking it
   unschedulable, the autoscaler's loop, the cloud's instance, the kubelet registering, the
   scheduler binding, the kubelet starting it): p50 / p90 / p99 / max, and the nodes added.
2. the loop at scale: etcd, the apiserver, the cloud and the autoscaler (no scheduler, no
   controller-manager, no kubelets). The cloud has G groups with `externalNodes: true`; the
   bench asks each for its share of K instances (IncreaseSize) and registers their Ready Nodes
   (32 cpu, the instance's name, providerID and group label) itself, then binds K x P pods of
   1 cpu to them, annotated safe-to-evict "true": every node is under the utilization
   threshold (P/32) with movable pods, so the scale-down half of the loop checks every node
   and simulates the removal of the non-empty ones (--scale-down-non-empty-candidates-count
   per loop; `--non-empty-candidates`). Plus 100 unschedulable pods that fit the existing
   nodes (FilterOutSchedulable places them in simulation every loop, and scale-down spares
   their nodes) and 20 that fit no group (the scale-up path tries every template, so no
   scale-up happens and scale-down runs in every loop). The autoscaler's /metrics is scraped
   every 50 ms: each time `cluster_autoscaler_function_duration_seconds_count{function="main"}`
   grows by one, the growth of its `_sum` is one loop's time. L loops after 2 warm-up loops:
   p50 and max of the loop and of its parts (updateClusterState, filterOutSchedulable,
   scaleUp, scaleDown), and the autoscaler's RSS (peak over the loops). The unneeded time
   (upstream's 10m) is far longer than the run: no node is deleted.

See bench/README.md.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
import anyio.abc
from prometheus_client.parser import text_string_to_metric_families

from bench.common import bench_main, cpu_seconds, fmt, format_table, rss_kib, run_concurrent
from bench.kubelet import Distribution, RunningTracker, distribution
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.cloudprovider import CloudProviderClient
from kemu.machinery.duration import format_duration, parse_duration
from kemu.machinery.errors import ApiError
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.ports import LOOPBACK
from kemu.testing.processes import ProcessStartError

logger = logging.getLogger(__name__)

GROUP_LABEL: Final = "kemu.io/node-group"
NAMESPACE: Final = "bench-autoscaler"
PAUSE: Final = "registry.k8s.io/pause:3.10"
DURATION: Final = "cluster_autoscaler_function_duration_seconds"
PARTS: Final = ("main", "updateClusterState", "filterOutSchedulable", "scaleUp", "scaleDown")
SAFE_TO_EVICT: Final = "cluster-autoscaler.kubernetes.io/safe-to-evict"
NODE_CPU: Final = 32
WARMUP_LOOPS: Final = 2
PENDING_FIT: Final = 100
PENDING_NOWHERE: Final = 20
RUNNING_TIMEOUT: Final = 300.0


# ---------------------------------------------------------------------- pure helpers


def scale_up_config(max_size: int) -> str:
    """The cloud of the scale-up phase: one group, 4 cpu nodes, kubelets without delay."""
    return f"""nodeGroups:
- name: pool-a
  minSize: 0
  maxSize: {max_size}
  template:
    capacity: {{cpu: "4", memory: 8Gi, pods: "110"}}
    kubeletArgs: ["--pod-startup-delay", "0s"]
"""


def group_sizes(nodes: int, groups: int) -> list[int]:
    """The loop phase's nodes shared out over the groups (the first ones take the rest)."""
    return [nodes // groups + (1 if i < nodes % groups else 0) for i in range(groups)]


def loop_config(sizes: Sequence[int]) -> str:
    """The cloud of the loop phase: one group per size, its Nodes registered by the bench."""
    lines = ["nodeGroups:"]
    for i, size in enumerate(sizes):
        lines += [
            f"- name: group-{i}",
            "  minSize: 0",
            f"  maxSize: {size + 10}",
            "  externalNodes: true",
            "  template:",
            f'    capacity: {{cpu: "{NODE_CPU}", memory: 128Gi, pods: "110"}}',
        ]
    return "\n".join(lines) + "\n"


def make_pod(
    name: str,
    cpu: str,
    *,
    node: str = "",
    selector: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name = name
    pod.metadata.annotations.update(annotations or {})
    pod.metadata.namespace = NAMESPACE
    pod.spec.node_name = node
    pod.spec.node_selector.update(selector or {})
    c = pod.spec.containers.add()
    c.name, c.image = "pause", PAUSE
    c.resources.requests.update({"cpu": cpu, "memory": "256Mi"})
    return pod


def instance_node(group: str, name: str) -> types_pb2.Node:
    """The Ready Node of instance `name` of `group`, as its kubelet would register it."""
    node = types_pb2.Node()
    node.metadata.name = name
    node.metadata.labels.update({"kubernetes.io/hostname": name, GROUP_LABEL: group})
    node.spec.provider_id = f"kemu://{group}/{name}"
    node.status.capacity.update({"cpu": str(NODE_CPU), "memory": "128Gi", "pods": "110"})
    node.status.allocatable.update(node.status.capacity)
    node.status.conditions.add(type="Ready", status="True", reason="KubeletReady")
    return node


def loop_times(samples: Iterable[tuple[float, float]]) -> list[float]:
    """From successive scrapes of a histogram's (count, sum), the duration of each observation
    seen alone (count grew by exactly one between two scrapes)."""
    out: list[float] = []
    previous: tuple[float, float] | None = None
    for count, total in samples:
        if previous is not None and count - previous[0] == 1:
            out.append(total - previous[1])
        previous = (count, total)
    return out


def histogram(text: str, name: str, label: str, value: str) -> tuple[float, float]:
    """(count, sum) of the histogram `name` with label=value in a Prometheus exposition."""
    count = total = 0.0
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.labels.get(label) != value:
                continue
            if s.name == f"{name}_count":
                count = s.value
            elif s.name == f"{name}_sum":
                total = s.value
    return count, total


# ---------------------------------------------------------------------- options and result


@dataclass(frozen=True)
class Options:
    pods: int = 100
    nodes: int = 1000
    pods_per_node: int = 10
    groups: int = 3
    loops: int = 10
    scan_interval: float = 1.0
    non_empty_candidates: int = 30
    only: str = ""
    json_path: str = ""
    clock: ClockMode = ClockMode.REAL


@dataclass
class Result:
    load_avg_start: list[float] = field(default_factory=list)
    # scale-up
    pods_running: int = 0
    created_to_running: Distribution | None = None
    all_running_seconds: float = float("nan")
    nodes_added: int = 0
    # loop
    objects_created_seconds: float = float("nan")
    loops: dict[str, list[float]] = field(default_factory=dict)
    rss_kib_peak: int | None = None
    rss_kib_end: int | None = None
    scrape_timeouts: int = 0
    cpu_seconds_per_loop: float = float("nan")
    """The autoscaler's CPU (user + system) per loop over the measured loops."""
    errors: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------- phases


async def scale_up_phase(cluster: Cluster, opts: Options, r: Result) -> None:
    async with Client(cluster.server, user_agent="bench-autoscaler") as client:
        await ensure_namespace(client, NAMESPACE)
        tracker = RunningTracker()
        tracker.expect(opts.pods)
        listed = await client.list(types_pb2.Pod, NAMESPACE)
        async with anyio.create_task_group() as tg:

            async def watch(*, task_status: anyio.abc.TaskStatus[None]) -> None:
                async with client.watch(
                    types_pb2.Pod, NAMESPACE, resource_version=listed.resource_version
                ) as events:
                    task_status.started()
                    async for event in events:
                        tracker.observe(event.object)

            await tg.start(watch)
            start = time.monotonic()

            async def create(i: int) -> None:
                name = f"pod-{i:04d}"
                tracker.creating(name)
                await client.create(make_pod(name, "500m", selector={GROUP_LABEL: "pool-a"}))

            done = await run_concurrent(opts.pods, 16, create)
            if done.errors:
                r.errors.append(f"creates: {done.first_error}")
            try:
                await tracker.wait_all(RUNNING_TIMEOUT)
                r.all_running_seconds = time.monotonic() - start
            except TimeoutError:
                r.errors.append(f"not every pod Running within {RUNNING_TIMEOUT:g}s")
            tg.cancel_scope.cancel()
        r.pods_running = len(tracker.running)
        r.created_to_running = distribution(tracker.latencies())
        nodes = await client.list(types_pb2.Node, label_selector=GROUP_LABEL)
        r.nodes_added = len(nodes.items)


async def loop_phase(cluster: Cluster, opts: Options, r: Result) -> None:
    sizes = group_sizes(opts.nodes, opts.groups)
    names: list[tuple[str, str]] = []
    cloud = CloudProviderClient(f"{LOOPBACK}:{cluster.component('cloud').port}")
    try:
        for i, size in enumerate(sizes):
            if size:
                await cloud.increase_size(f"group-{i}", size)
        for i in range(len(sizes)):
            group = f"group-{i}"
            names += [(group, inst.id.rsplit("/", 1)[-1]) for inst in await cloud.nodes(group)]
    finally:
        await cloud.close()
    async with Client(cluster.server, user_agent="bench-autoscaler") as client:
        await ensure_namespace(client, NAMESPACE)
        start = time.monotonic()

        async def create_node(i: int) -> None:
            node = instance_node(*names[i])
            created = await client.create(node)
            created.status.CopyFrom(node.status)
            await client.update_status(created)

        async def create_bound(i: int) -> None:
            node = names[i % len(names)][1]
            await client.create(
                make_pod(f"bound-{i:05d}", "1", node=node, annotations={SAFE_TO_EVICT: "true"})
            )

        async def create_pending(i: int) -> None:
            nowhere = i >= PENDING_FIT
            pod = make_pod(f"pending-{i:03d}", "1", selector={"disk": "none"} if nowhere else None)
            created = await client.create(pod)
            created.status.conditions.add(
                type="PodScheduled", status="False", reason="Unschedulable"
            )
            await client.update_status(created)

        for count, op in (
            (len(names), create_node),
            (len(names) * opts.pods_per_node, create_bound),
            (PENDING_FIT + PENDING_NOWHERE, create_pending),
        ):
            done = await run_concurrent(count, 32, op)
            if done.errors:
                r.errors.append(f"{op.__name__}: {done.errors} errors, {done.first_error}")
        r.objects_created_seconds = time.monotonic() - start

    name = "autoscaler"
    cluster.start_autoscaler(
        cluster.component("cloud"),
        name=name,
        scan_interval=format_duration(opts.scan_interval),
        extra_args=[
            "--scale-down-non-empty-candidates-count",
            str(opts.non_empty_candidates),
        ],
    )
    component = cluster.component(name)
    pid = cluster.processes[name].pid
    samples: dict[str, list[tuple[float, float]]] = {p: [] for p in PARTS}
    deadline = time.monotonic() + 120 + 30 * (opts.loops + WARMUP_LOOPS)
    peak = 0
    # CPU seconds of the autoscaler per loop, from the first loop after the warm-up on:
    # unlike the wall time, hardly changed by other processes' load.
    cpu_from: tuple[float, float] | None = None
    cpu_to: tuple[float, float] | None = None
    while time.monotonic() < deadline:
        try:
            text = await anyio.to_thread.run_sync(component.scrape)
        except (TimeoutError, OSError):
            # A long loop holds the autoscaler's event loop, /metrics with it: ask again.
            r.scrape_timeouts += 1
            continue
        for part in PARTS:
            samples[part].append(histogram(text, DURATION, "function", part))
        main = loop_times(samples["main"])
        loops_done = samples["main"][-1][0]
        cpu = cpu_seconds(pid) if pid else None
        if cpu is not None and loops_done >= WARMUP_LOOPS:
            if cpu_from is None:
                cpu_from = (loops_done, cpu)
            elif loops_done > cpu_from[0] and (cpu_to is None or loops_done > cpu_to[0]):
                cpu_to = (loops_done, cpu)
        if len(main) > WARMUP_LOOPS:
            peak = max(peak, (rss_kib(pid) if pid else None) or 0)
        if len(main) >= opts.loops + WARMUP_LOOPS:
            break
        await anyio.sleep(0.05)
    else:
        r.errors.append("not enough loops measured before the deadline")
    r.loops = {p: loop_times(s)[WARMUP_LOOPS:] for p, s in samples.items()}
    r.rss_kib_peak = peak or None
    r.rss_kib_end = rss_kib(pid) if pid else None
    if cpu_from is not None and cpu_to is not None:
        r.cpu_seconds_per_loop = (cpu_to[1] - cpu_from[1]) / (cpu_to[0] - cpu_from[0])


def run(opts: Options) -> Result:
    r = Result(load_avg_start=list(os.getloadavg()))
    if opts.only in ("", "scale-up"):
        with (
            tempfile.TemporaryDirectory(prefix="kemu-bench-autoscaler-") as tmp,
            Cluster(Path(tmp), clock=opts.clock) as cluster,
        ):
            try:
                cluster.start_etcd()
                cluster.start_apiserver()
                cluster.start_scheduler()
                cluster.start_controllermanager()
                cluster.start_cloud(scale_up_config(50), provision_delay="0s")
                cluster.start_autoscaler(
                    cluster.component("cloud"), scan_interval=format_duration(opts.scan_interval)
                )
                anyio.run(scale_up_phase, cluster, opts, r)
            except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
                r.errors.append(f"scale-up: {type(e).__name__}: {e}")
                logger.error("%s\n%s", r.errors[-1], cluster.dump_logs(tail=20))
    if opts.only in ("", "loop"):
        with (
            tempfile.TemporaryDirectory(prefix="kemu-bench-autoscaler-") as tmp,
            Cluster(Path(tmp), clock=opts.clock) as cluster,
        ):
            try:
                cluster.start_etcd()
                cluster.start_apiserver()
                cluster.start_cloud(loop_config(group_sizes(opts.nodes, opts.groups)))
                anyio.run(loop_phase, cluster, opts, r)
            except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
                r.errors.append(f"loop: {type(e).__name__}: {e}")
                logger.error("%s\n%s", r.errors[-1], cluster.dump_logs(tail=20))
    return r


# ---------------------------------------------------------------------- output


def render(opts: Options, r: Result) -> str:
    out = [
        f"host: {os.cpu_count()} cpus, load average at start "
        + " ".join(f"{x:.2f}" for x in r.load_avg_start),
        "",
    ]
    d = r.created_to_running
    if d is not None:
        out.append(
            f"scale-up: {opts.pods} pending pods (500m, pool-a 4-cpu nodes, provision delay 0, "
            f"--scan-interval {format_duration(opts.scan_interval)}): {r.pods_running} Running, "
            f"{r.nodes_added} nodes added, all Running after {fmt(r.all_running_seconds, 2)} s"
        )
        out.append(
            format_table(
                ["created-to-Running", "p50 s", "p90 s", "p99 s", "max s"],
                [["", fmt(d.p50, 2), fmt(d.p90, 2), fmt(d.p99, 2), fmt(d.max, 2)]],
            )
        )
        out.append("")
    if r.loops:
        out.append(
            f"loop: {opts.nodes} nodes in {opts.groups} groups, "
            f"{opts.nodes * opts.pods_per_node} bound pods (every node under the threshold), "
            f"{PENDING_FIT} pending pods that fit, {PENDING_NOWHERE} that fit no group, "
            f"--scale-down-non-empty-candidates-count {opts.non_empty_candidates} "
            f"(objects created in {fmt(r.objects_created_seconds, 1)} s)"
        )
        rows = []
        for part in PARTS:
            values = sorted(r.loops.get(part, []))
            if not values:
                continue
            rows.append(
                [
                    part,
                    str(len(values)),
                    fmt(values[len(values) // 2] * 1000, 0),
                    fmt(values[-1] * 1000, 0),
                ]
            )
        out.append(format_table(["function", "loops", "p50 ms", "max ms"], rows))
        out.append(
            f"autoscaler RSS: peak {fmt((r.rss_kib_peak or 0) / 1024, 0)} MiB, "
            f"end {fmt((r.rss_kib_end or 0) / 1024, 0)} MiB (target: loop <= 2 s, RSS <= 300 MB)"
        )
        out.append(
            f"autoscaler CPU per loop (mean over the measured loops, load-independent): "
            f"{fmt(r.cpu_seconds_per_loop * 1000, 0)} ms"
        )
        if r.scrape_timeouts:
            out.append(f"/metrics timed out {r.scrape_timeouts} time(s) (a loop held it)")
    for e in r.errors:
        out.append(f"error: {e}")
    return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench autoscaler", description=__doc__)
    p.add_argument("--pods", type=int, default=100, help="pending pods of the scale-up (100)")
    p.add_argument("--nodes", type=int, default=1000, help="nodes of the loop phase (1000)")
    p.add_argument("--pods-per-node", type=int, default=10, help="bound pods per node (10)")
    p.add_argument("--groups", type=int, default=3, help="node groups of the loop phase (3)")
    p.add_argument("--loops", type=int, default=10, help="loops measured (10)")
    p.add_argument("--scan-interval", default="1s", help="the autoscaler's (1s)")
    p.add_argument(
        "--non-empty-candidates",
        type=int,
        default=30,
        help="the autoscaler's --scale-down-non-empty-candidates-count (upstream's 30)",
    )
    p.add_argument("--only", choices=("scale-up", "loop"), default="", help="one phase only")
    p.add_argument("--json", dest="json_path", default="", help="also write the figures here")
    p.add_argument("-v", "--verbose", action="store_true")
    add_clock_argument(p)
    return p


def options_from_args(args: argparse.Namespace) -> Options:
    for name in ("pods", "nodes", "pods_per_node", "groups", "loops", "non_empty_candidates"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')}: must be at least 1")
    return Options(
        clock=ClockMode(args.clock),
        pods=args.pods,
        nodes=args.nodes,
        pods_per_node=args.pods_per_node,
        groups=args.groups,
        loops=args.loops,
        scan_interval=parse_duration(args.scan_interval),
        non_empty_candidates=args.non_empty_candidates,
        only=args.only,
        json_path=args.json_path,
    )


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(
        "autoscaler",
        build_parser(),
        argv,
        options_from_args,
        run,
        render,
        json_path=lambda opts: opts.json_path,
        failed=lambda result: bool(result.errors),
    )
