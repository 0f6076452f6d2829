"""Throughput and latency of the apiserver, side by side with raw etcd in the same run.

    python -m bench apiserver [--quick] [--json FILE] [-n N] [--client-per-worker]
                              [--transport stream|unary|both]
    python -m bench apiserver --security [-n N] [--rounds R]

Starts etcd and `python -m apiserver` with the test harness in a temporary directory, then:

1. for 1, 16 and 64 concurrent clients: N creates of a small Pod through kemu's Client, N gets,
   N updates (a label change, carrying the resourceVersion the create returned), then the
   scheduler's and the kubelet's calls on the same pods: N bindings, N Scheduled events (an Event create each), N status PATCHes (phase
   Running and a pod IP) and N deletions (grace 0); each cell with the CPU each process spent
   per op and etcd's writes and ranges per op (its mvcc counters); then the same through aetcd
   straight to the same etcd: N puts of a value the size of the stored pod under /bench/...,
   N gets, N compare-and-swap txns on the mod revision. With `--transport both` the apiserver's
   cells run once on each of the client's transports (kemu.client.call_stream: "apiserver" is
   the Calls stream, the default, "apiserver-unary" one gRPC call per op), in turns that
   alternate which goes first from one concurrency to the next.
2. watch delivery: 10 watchers in a separate process (bench.watchers), a writer creating pods
   at a paced rate; each pod carries its send time, each watcher its receive time.
3. RSS of etcd, the apiserver and this process at the end; CPU (cores) of each per phase.

With `--security`, instead: N creates and N gets of a small Pod through a plaintext apiserver,
one serving TLS with a client CA and one with the same TLS and `--authorization-mode RBAC`, side
by side on one etcd in alternated rounds, each apiserver's and the client's CPU per call and
the TLS/plaintext and RBAC/TLS ratios (bench/tls.py's measurement, which also has REST GETs).

The cluster is always stopped at the end, also on Ctrl-C. See docs/benchmarks.md for the columns.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import aetcd
import aiohttp
import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

from bench import tls
from bench import watchers as watchers_mod
from bench.common import (
    CpuMeter,
    LatencyStats,
    RunResult,
    cpu_ms_per_item,
    fmt,
    format_table,
    host_cpu,
    jsonable,
    pace,
    rate,
    ratio,
    rss_kib,
    run_concurrent,
    summarize,
)
from kemu.api.v1 import types_pb2
from kemu.client.client import Client, Transport
from kemu.machinery import convert
from kemu.machinery.convert import timestamp
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.builders import make_pod
from kemu.testing.cluster import Cluster, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import REPO_ROOT, ProcessStartError, python_env

logger = logging.getLogger(__name__)

CONCURRENCY: Final = (1, 16, 64)
DEFAULT_N: Final = 2000
QUICK_N: Final = 200
WATCHERS: Final = 10
WATCH_RATE: Final = 1000.0
WATCH_SECONDS: Final = 5.0
QUICK_WATCH_SECONDS: Final = 2.0
WATCH_MAX_IN_FLIGHT: Final = 256
WARMUP: Final = 100
SYSTEMS: Final = ("apiserver", "apiserver-unary", "rest", "etcd")
SYSTEM_OF: Final = {Transport.STREAM: "apiserver", Transport.UNARY: "apiserver-unary"}
"""The apiserver cells' system, by the client's transport."""
TRANSPORT_CHOICES: Final = {
    "stream": (Transport.STREAM,),
    "unary": (Transport.UNARY,),
    "both": (Transport.UNARY, Transport.STREAM),
}
LABEL: Final = "bench"
OPS: Final = ("create", "get", "update", "bind", "event", "status", "delete")
BENCH_NODE: Final = "bench-node"
"""The node the bind cell binds every pod to (a binding does not need the Node to exist)."""
ETCD_COUNTERS: Final = {
    "range": "etcd_mvcc_range_total",
    "put": "etcd_mvcc_put_total",
    "delete": "etcd_mvcc_delete_total",
}
"""etcd's key-value counters (its /metrics), per op of a cell: what one apiserver call costs
etcd. A transaction's compares are ranges there too (etcd reads the key to compare it), and its
writes are its puts and deletes."""


@dataclass
class Row:
    """One (system, op, clients) cell. For etcd, create is a put and update a CAS txn."""

    system: str
    op: str
    clients: int
    n: int
    errors: int
    ops_per_s: float
    latency: LatencyStats
    cpu_cores: dict[str, float]
    vs_etcd: float = math.nan  # apiserver ops/s over etcd ops/s for the same op and clients
    first_error: str = ""
    cpu_ms_per_op: dict[str, float] = field(default_factory=dict)
    """CPU milliseconds each process spent per op: the op's cost, whatever the rate."""
    etcd_per_op: dict[str, float] = field(default_factory=dict)
    """etcd's requests per op (ETCD_COUNTERS' keys), an apiserver cell's calls to etcd."""


@dataclass
class WatchReport:
    watchers: int
    target_rate: float
    writes: int
    write_errors: int
    achieved_rate: float
    max_lateness_s: float
    delivered: int
    missing: int
    duplicates: int
    unexpected: int
    exactly_once: bool
    watcher_errors: list[str]
    latency: LatencyStats  # delivery: receipt by a watcher - the send time in the pod
    create_latency: LatencyStats  # of the writer's creates: queueing when the rate is too high
    # receipt by a watcher - the moment the writer had the create's response (the write was
    # committed): delivery alone, without the create's own queueing; negative when the event
    # overtook the response.
    ack_latency: LatencyStats
    cpu_cores: dict[str, float]
    first_error: str = ""


@dataclass
class Report:
    quick: bool
    n: int
    client_mode: str
    value_bytes: int = 0
    host: dict[str, Any] = field(default_factory=dict)
    rows: list[Row] = field(default_factory=list)
    watch: WatchReport | None = None
    rss_kib: dict[str, int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Options:
    quick: bool
    n: int
    watch_seconds: float
    watch_rate: float
    client_per_worker: bool
    json_path: str | None
    clock: ClockMode = ClockMode.REAL
    transports: tuple[Transport, ...] = (Transport.STREAM,)


# ---------------------------------------------------------------------- apiserver and etcd cells


def bench_pod(name: str, namespace: str) -> types_pb2.Pod:
    return (
        make_pod(name).namespace(namespace).label(LABEL, "v0").req(cpu="100m", memory="64Mi").obj()
    )


class Cells:
    """Runs the cells of one system at one concurrency."""

    def __init__(self, report: Report, meter: CpuMeter, etcd_metrics: str = "") -> None:
        """`etcd_metrics`: etcd's /metrics URL, read around each apiserver cell ("": not)."""
        self.report = report
        self.meter = meter
        self.etcd_metrics = etcd_metrics

    async def cell(
        self, system: str, op: str, clients: int, n: int, fn: Callable[[int], Awaitable[object]]
    ) -> RunResult:
        counted = system in SYSTEM_OF.values() and bool(self.etcd_metrics)
        before = await etcd_counters(self.etcd_metrics) if counted else {}
        self.meter.start()
        result = await run_concurrent(n, clients, fn)
        cpu = self.meter.stop()
        after = await etcd_counters(self.etcd_metrics) if counted else {}
        row = Row(
            system=system,
            op=op,
            clients=clients,
            n=n,
            errors=result.errors,
            ops_per_s=result.ops_per_second,
            latency=summarize(result.latencies),
            cpu_cores=cpu,
            first_error=result.first_error,
            cpu_ms_per_op=cpu_ms_per_item(cpu, self.meter.wall, n - result.errors),
            etcd_per_op={k: (after[k] - before[k]) / n for k in after if k in before and n > 0},
        )
        self.report.rows.append(row)
        logger.info(
            "%s %s x%d: %.0f ops/s, p50 %.2f ms, p99 %.2f ms, %d errors",
            system,
            op,
            clients,
            row.ops_per_s,
            row.latency.p50 * 1000,
            row.latency.p99 * 1000,
            row.errors,
        )
        return result


async def apiserver_cells(
    cells: Cells, clients: Sequence[Client], concurrency: int, n: int, system: str = "apiserver"
) -> bytes:
    """The apiserver's cells (as `system`: the clients' transport); returns the serialized
    size-defining pod for etcd. Each cell deletes what it made, so they can run again."""
    ns = await ensure_namespace(clients[0], f"bench-c{concurrency}")
    pods = [bench_pod(f"p{i}", ns) for i in range(n)]
    created: list[types_pb2.Pod | None] = [None] * n

    def client(i: int) -> Client:
        return clients[i % len(clients)]

    async def create(i: int) -> None:
        created[i] = await client(i).create(pods[i])

    async def get(i: int) -> None:
        await client(i).get(types_pb2.Pod, f"p{i}", ns)

    await cells.cell(system, "create", concurrency, n, create)
    await cells.cell(system, "get", concurrency, n, get)

    updates: list[types_pb2.Pod | None] = []
    for pod in created:
        if pod is None:
            updates.append(None)
            continue
        changed = types_pb2.Pod()
        changed.CopyFrom(pod)
        changed.metadata.labels[LABEL] = "v1"
        updates.append(changed)

    async def update(i: int) -> None:
        pod = updates[i]
        if pod is None:
            raise RuntimeError(f"p{i} was not created")
        await client(i).update(pod)

    await cells.cell(system, "update", concurrency, n, update)

    # The scheduler's and the kubelet's calls on the same pods: the binding, the status
    # PATCH a kubelet makes when the pod runs, and the deletion (grace 0, as the bench's
    # workloads delete).
    async def bind(i: int) -> None:
        await client(i).bind(ns, f"p{i}", BENCH_NODE)

    # The scheduler's Scheduled event of each binding, as kemu.client.events writes it (a
    # create of a core/v1 Event; names unique to the run, since a cell may run again).
    run = time.time_ns()

    def scheduled(i: int) -> types_pb2.Event:
        ev = types_pb2.Event(
            metadata=types_pb2.ObjectMeta(name=f"p{i}.{run + i:x}", namespace=ns),
            involved_object=types_pb2.ObjectReference(
                kind="Pod", namespace=ns, name=f"p{i}", api_version="v1"
            ),
            reason="Scheduled",
            message=f"Successfully assigned {ns}/p{i} to {BENCH_NODE}",
            type="Normal",
            count=1,
            action="Binding",
            reporting_component="default-scheduler",
            reporting_instance="default-scheduler-bench",
            source=types_pb2.EventSource(component="default-scheduler"),
        )
        ev.first_timestamp.CopyFrom(timestamp(run / 1e9))
        ev.last_timestamp.CopyFrom(timestamp(run / 1e9))
        return ev

    async def event(i: int) -> None:
        await client(i).create(scheduled(i))

    async def status(i: int) -> None:
        await client(i).patch(
            types_pb2.Pod,
            f"p{i}",
            {
                "status": {
                    "phase": "Running",
                    "podIP": f"10.{i // 65536 % 256}.{i // 256 % 256}.{i % 256}",
                }
            },
            ns,
            subresource="status",
        )

    async def delete(i: int) -> None:
        await client(i).delete(types_pb2.Pod, f"p{i}", ns, grace_period_seconds=0)

    await cells.cell(system, "bind", concurrency, n, bind)
    await cells.cell(system, "event", concurrency, n, event)
    await cells.cell(system, "status", concurrency, n, status)
    await cells.cell(system, "delete", concurrency, n, delete)
    sample = next((p for p in created if p is not None), pods[0])
    return sample.SerializeToString()


async def etcd_counters(url: str) -> dict[str, float]:
    """ETCD_COUNTERS read from etcd's /metrics at `url`."""
    async with aiohttp.ClientSession() as session, session.get(url) as resp:
        return parse_etcd_counters(await resp.text())


def parse_etcd_counters(text: str) -> dict[str, float]:
    """ETCD_COUNTERS in a Prometheus text exposition (summed over their labels); those it
    does not have are missing."""
    out: dict[str, float] = {}
    names = {metric: key for key, metric in ETCD_COUNTERS.items()}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        name, _, rest = line.partition(" ")
        key = names.get(name.partition("{")[0])
        if key is not None:
            try:
                out[key] = out.get(key, 0.0) + float(rest.split()[0])
            except (ValueError, IndexError):
                continue
    return out


REST_CONCURRENCY: Final = 16


async def rest_create_cell(cells: Cells, rest_url: str, n: int) -> None:
    """N creates of the same small Pod through the REST edge (JSON over HTTP/1.1, one
    keep-alive connection per worker), next to the gRPC creates of the same run."""
    ns = f"bench-rest-c{REST_CONCURRENCY}"
    bodies = [json.dumps(convert.to_dict(bench_pod(f"p{i}", ns))).encode() for i in range(n)]
    connector = aiohttp.TCPConnector(limit=REST_CONCURRENCY)
    async with aiohttp.ClientSession(rest_url, connector=connector) as session:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
        async with session.post("/api/v1/namespaces", json=namespace) as resp:
            if resp.status not in (201, 409):
                raise RuntimeError(f"cannot create namespace {ns}: {resp.status}")

        async def create(i: int) -> None:
            async with session.post(
                f"/api/v1/namespaces/{ns}/pods",
                data=bodies[i],
                headers={"Content-Type": "application/json"},
            ) as resp:
                await resp.read()
                if resp.status != 201:
                    raise RuntimeError(f"create p{i}: HTTP {resp.status}")

        await cells.cell("rest", "create", REST_CONCURRENCY, n, create)


async def etcd_cells(
    cells: Cells, etcd: aetcd.Client, concurrency: int, n: int, value: bytes
) -> None:
    keys = [f"/bench/c{concurrency}/p{i}".encode() for i in range(n)]
    # The updated value differs from the first but has the same size.
    value2 = bytes(reversed(value))
    revisions = [0] * n
    tx = etcd.transactions

    async def put(i: int) -> None:
        revisions[i] = (await etcd.put(keys[i], value)).header.revision

    async def get(i: int) -> None:
        if await etcd.get(keys[i]) is None:
            raise RuntimeError(f"{keys[i]!r} not found")

    async def cas(i: int) -> None:
        ok, _ = await etcd.transaction(
            compare=[tx.mod(keys[i]) == revisions[i]],
            success=[tx.put(keys[i], value2)],
            failure=[],
        )
        if not ok:
            raise RuntimeError(f"{keys[i]!r}: mod revision is not {revisions[i]}")

    await cells.cell("etcd", "create", concurrency, n, put)
    await cells.cell("etcd", "get", concurrency, n, get)
    await cells.cell("etcd", "update", concurrency, n, cas)


async def warm_up(
    clients: Sequence[Client], etcd: aetcd.Client, n: int, ns: str = "bench-warmup"
) -> None:
    """Open every channel and warm both servers' code paths (not measured), in namespace
    `ns`."""
    ns = await ensure_namespace(clients[0], ns)

    async def op(i: int) -> None:
        c = clients[i % len(clients)]
        pod = await c.create(bench_pod(f"p{i}", ns))
        await c.get(types_pb2.Pod, f"p{i}", ns)
        pod.metadata.labels[LABEL] = "v1"
        await c.update(pod)
        key = f"/bench/warmup/p{i}".encode()
        await etcd.put(key, b"x" * 1000)
        await etcd.get(key)

    result = await run_concurrent(max(n, len(clients)), min(16, len(clients) * 4), op)
    if result.errors:
        raise RuntimeError(f"the warm-up failed: {result.first_error}")


# ---------------------------------------------------------------------- watch delivery


async def _read_line(stream: BufferedByteReceiveStream) -> str:
    return (await stream.receive_until(b"\n", 65536)).decode().strip()


async def watch_delivery(
    client: Client,
    server: str,
    pids: dict[str, int | None],
    opts: Options,
    tmp: Path,
    namespace: str = "bench-watch",
) -> WatchReport:
    """The watch phase with `client` writing into `namespace` (one namespace a phase)."""
    ns = await ensure_namespace(client, namespace)
    n = max(1, int(opts.watch_rate * opts.watch_seconds))
    out = tmp / "watchers.json"
    argv = [
        sys.executable, "-m", "bench.watchers",
        "--server", server,
        "--namespace", ns,
        "--watchers", str(WATCHERS),
        "--timeout", str(opts.watch_seconds + 60),
        "--out", str(out),
    ]  # fmt: skip
    pods = [bench_pod(watchers_mod.write_name(i), ns) for i in range(n)]
    proc: Process = await anyio.open_process(
        argv, stdout=subprocess.PIPE, stderr=None, env=python_env(), cwd=REPO_ROOT
    )
    try:
        assert proc.stdout is not None
        lines = BufferedByteReceiveStream(proc.stdout)
        with anyio.fail_after(30):
            line = await _read_line(lines)
        if line != "watching":
            raise RuntimeError(f"bench.watchers said {line!r}, expected 'watching'")
        # A watch may not be established when the first marker is written: write markers
        # until every watcher has seen one.
        ready = False
        for k in range(1, 31):
            await client.create(bench_pod(f"{watchers_mod.START_MARKER}-{k}", ns))
            with anyio.move_on_after(1.0):
                line = await _read_line(lines)
                if line != "ready":
                    raise RuntimeError(f"bench.watchers said {line!r}, expected 'ready'")
                ready = True
            if ready:
                break
        if not ready:
            raise RuntimeError("the watchers did not see a start marker within 30 s")

        meter = CpuMeter(pids)
        write_errors = 0
        first_error = ""
        max_lateness = 0.0
        in_flight = anyio.Semaphore(WATCH_MAX_IN_FLIGHT)
        ok: set[int] = set()
        first_send = math.nan
        last_done = math.nan
        create_latencies: list[float] = []
        sent_at: dict[int, float] = {}
        acked_at: dict[int, float] = {}

        async def write(i: int) -> None:
            nonlocal write_errors, first_error, last_done
            try:
                pod = pods[i]
                sent = time.time()
                pod.metadata.annotations[watchers_mod.SEND_TIME] = repr(sent)
                sent_at[i] = sent
                await client.create(pod)
                acked_at[i] = time.time()
                create_latencies.append(acked_at[i] - sent)
                ok.add(i)
            except Exception as e:
                write_errors += 1
                first_error = first_error or f"{type(e).__name__}: {e}"
            finally:
                last_done = time.monotonic()
                in_flight.release()

        meter.start()
        async with anyio.create_task_group() as tg:
            async for i, lateness in pace(n, opts.watch_rate):
                if i == 0:
                    first_send = time.monotonic()
                max_lateness = max(max_lateness, lateness)
                await in_flight.acquire()
                tg.start_soon(write, i)
        await client.create(bench_pod(watchers_mod.STOP_MARKER, ns))
        with anyio.fail_after(opts.watch_seconds + 90):
            await proc.wait()
        cpu = meter.stop()
        if proc.returncode != 0:
            raise RuntimeError(f"bench.watchers exited with code {proc.returncode}")
    finally:
        with anyio.CancelScope(shield=True):
            if proc.returncode is None:
                proc.terminate()
                with anyio.move_on_after(5):
                    await proc.wait()
                if proc.returncode is None:
                    proc.kill()
            await proc.aclose()

    data = json.loads(out.read_text())
    # The watcher process has exited by now: it measured its own CPU from "ready" to the end.
    cpu["watchers"] = ratio(data["cpu_seconds"], data["wall_seconds"])
    latencies: list[float] = []
    after_ack: list[float] = []
    missing = duplicates = unexpected = 0
    errors: list[str] = []
    for w in data["watchers"]:
        counts = Counter(w["indices"])
        latencies.extend(w["latencies"])
        after_ack.extend(
            sent_at[i] + lat - acked_at[i]
            for i, lat in zip(w["indices"], w["latencies"], strict=True)
            if i in acked_at
        )
        missing += sum(1 for i in ok if counts[i] == 0)
        duplicates += sum(c - 1 for i, c in counts.items() if c > 1)
        unexpected += w["other_events"] + sum(c for i, c in counts.items() if i not in ok)
        if w["error"]:
            errors.append(w["error"])
        elif not w["saw_stop"]:
            errors.append("did not see the stop marker")
    return WatchReport(
        watchers=WATCHERS,
        target_rate=opts.watch_rate,
        writes=n,
        write_errors=write_errors,
        achieved_rate=rate(len(ok), last_done - first_send),
        max_lateness_s=max_lateness,
        delivered=len(latencies),
        missing=missing,
        duplicates=duplicates,
        unexpected=unexpected,
        exactly_once=missing == 0 and duplicates == 0 and unexpected == 0 and not errors,
        watcher_errors=errors,
        latency=summarize(latencies),
        create_latency=summarize(create_latencies),
        ack_latency=summarize(after_ack),
        cpu_cores=cpu,
        first_error=first_error,
    )


# ---------------------------------------------------------------------- the run


async def run(cluster: Cluster, opts: Options, tmp: Path) -> Report:
    report = Report(
        quick=opts.quick,
        n=opts.n,
        client_mode="per-worker" if opts.client_per_worker else "shared",
        host={
            "cpus": os.cpu_count(),
            "cpu": host_cpu(),
            "loadavg_start": list(os.getloadavg()),
        },
    )
    pids: dict[str, int | None] = {
        "apiserver": cluster.processes["apiserver"].pid,
        "etcd": cluster.processes["etcd"].pid,
        "bench": os.getpid(),
    }
    meter = CpuMeter(pids)
    cells = Cells(report, meter, etcd_metrics=f"{cluster.etcd.url}/metrics")
    etcd_addr = urlsplit(cluster.etcd.url)
    etcd = aetcd.Client(host=etcd_addr.hostname or "127.0.0.1", port=etcd_addr.port or 2379)
    pool: dict[tuple[Transport, int], list[Client]] = {}
    # (distinct user agents make distinct channel arguments: a connection per transport)
    shared = {
        t: Client(cluster.server, user_agent=f"bench-{t.value}", transport=t)
        for t in opts.transports
    }
    try:
        await etcd.connect()
        for t, client in shared.items():
            await client.wait_ready(timeout=30)
            for c in CONCURRENCY:
                if opts.client_per_worker:
                    # Distinct user agents make distinct channel arguments, so each Client gets
                    # its own HTTP/2 connection instead of sharing gRPC's global subchannel.
                    pool[t, c] = [
                        Client(cluster.server, user_agent=f"bench-{t.value}-{c}-{k}", transport=t)
                        for k in range(c)
                    ]
                else:
                    pool[t, c] = [client]
            await warm_up(
                pool[t, max(CONCURRENCY)], etcd, min(WARMUP, opts.n), f"bench-warmup-{t.value}"
            )
        for i, c in enumerate(CONCURRENCY):
            logger.info("concurrency %d", c)
            # (the transports take turns going first)
            turns = opts.transports if i % 2 == 0 else opts.transports[::-1]
            for t in turns:
                value = await apiserver_cells(cells, pool[t, c], c, opts.n, SYSTEM_OF[t])
            report.value_bytes = len(value)
            await etcd_cells(cells, etcd, c, opts.n, value)
            if c == REST_CONCURRENCY:
                await rest_create_cell(cells, cluster.rest_url, opts.n)
        logger.info("watch delivery")
        watch_client = shared[opts.transports[-1]]
        report.watch = await watch_delivery(watch_client, cluster.server, pids, opts, tmp)
        report.rss_kib = {name: rss_kib(pid) for name, pid in pids.items() if pid is not None}
        report.host["loadavg_end"] = list(os.getloadavg())
    finally:
        with anyio.CancelScope(shield=True):
            for clients in pool.values():
                for cl in clients:
                    if cl not in shared.values():
                        await cl.close()
            for client in shared.values():
                await client.close()
            await etcd.close()
    add_ratios(report.rows)
    return report


def add_ratios(rows: list[Row]) -> None:
    etcd = {(r.op, r.clients): r.ops_per_s for r in rows if r.system == "etcd"}
    for r in rows:
        if r.system != "etcd":
            r.vs_etcd = ratio(r.ops_per_s, etcd.get((r.op, r.clients), math.nan))


# ---------------------------------------------------------------------- output

HEADERS: Final = (
    "system", "op", "clients", "n", "ops/s", "p50 ms", "p99 ms", "max ms", "vs etcd",
    "cpu api", "cpu etcd", "cpu bench", "api ms/op", "etcd ms/op", "etcd writes/op",
    "etcd ranges/op", "errors",
)  # fmt: skip


def render(report: Report) -> str:
    ordered = sorted(
        report.rows,
        key=lambda r: (OPS.index(r.op), r.clients, SYSTEMS.index(r.system)),
    )
    rows = [
        [
            r.system,
            r.op,
            str(r.clients),
            str(r.n),
            fmt(r.ops_per_s, 0),
            fmt(r.latency.p50 * 1000, 2),
            fmt(r.latency.p99 * 1000, 2),
            fmt(r.latency.max * 1000, 2),
            fmt(r.vs_etcd, 2),
            fmt(r.cpu_cores.get("apiserver"), 2),
            fmt(r.cpu_cores.get("etcd"), 2),
            fmt(r.cpu_cores.get("bench"), 2),
            fmt(r.cpu_ms_per_op.get("apiserver"), 3),
            fmt(r.cpu_ms_per_op.get("etcd"), 3),
            fmt(etcd_writes(r.etcd_per_op), 2),
            fmt(r.etcd_per_op.get("range"), 2),
            str(r.errors),
        ]
        for r in ordered
    ]
    w = report.watch
    if w is not None:
        rows.append(
            [
                "apiserver",
                f"watch x{w.watchers}",
                str(w.watchers),
                str(w.delivered),
                fmt(w.achieved_rate, 0),
                fmt(w.latency.p50 * 1000, 2),
                fmt(w.latency.p99 * 1000, 2),
                fmt(w.latency.max * 1000, 2),
                "-",
                fmt(w.cpu_cores.get("apiserver"), 2),
                fmt(w.cpu_cores.get("etcd"), 2),
                fmt(w.cpu_cores.get("bench"), 2),
                "-",
                "-",
                "-",
                "-",
                str(w.write_errors + w.missing + w.duplicates + w.unexpected),
            ]
        )
    lines = [
        f"apiserver benchmark: n={report.n} per cell, clients {report.client_mode}, "
        f"value {report.value_bytes} bytes, {report.host.get('cpu') or report.host.get('cpus')}, "
        f"load average at start {_load(report.host.get('loadavg_start'))}",
        "",
        format_table(HEADERS, rows),
        "",
    ]
    if w is not None:
        lines.append(
            f"watch: {w.watchers} watchers (separate process, "
            f"{fmt(w.cpu_cores.get('watchers'), 2)} cores), {w.writes} writes at "
            f"{fmt(w.achieved_rate, 0)}/s (target {w.target_rate:g}/s, max lateness "
            f"{fmt(w.max_lateness_s * 1000, 1)} ms, create p50 "
            f"{fmt(w.create_latency.p50 * 1000, 2)} ms p99 {fmt(w.create_latency.p99 * 1000, 2)} "
            f"ms); every watcher got every event exactly once: "
            f"{'yes' if w.exactly_once else 'NO'} (missing {w.missing}, duplicates "
            f"{w.duplicates}, unexpected {w.unexpected}, write errors {w.write_errors})"
        )
        lines.append(
            f"watch delivery after the write was acknowledged: p50 "
            f"{fmt(w.ack_latency.p50 * 1000, 2)} ms, p99 {fmt(w.ack_latency.p99 * 1000, 2)} ms, "
            f"max {fmt(w.ack_latency.max * 1000, 2)} ms"
        )
        for err in w.watcher_errors[:3]:
            lines.append(f"  watcher error: {err}")
        if w.first_error:
            lines.append(f"  first write error: {w.first_error}")
    if report.rss_kib:
        rss = ", ".join(
            f"{name} {fmt(kib / 1024 if kib is not None else None, 1)} MiB"
            for name, kib in report.rss_kib.items()
        )
        lines.append(f"rss at the end: {rss}")
    for r in report.rows:
        if r.first_error:
            lines.append(f"first error of {r.system} {r.op} x{r.clients}: {r.first_error}")
    return "\n".join(lines)


def etcd_writes(per_op: dict[str, float]) -> float | None:
    """etcd's puts and deletes per op (None without etcd's counters)."""
    if "put" not in per_op or "delete" not in per_op:
        return None
    return per_op["put"] + per_op["delete"]


def _load(value: object) -> str:
    if isinstance(value, list):
        return " ".join(f"{v:.2f}" for v in value)
    return "-"


# ---------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench apiserver",
        description="apiserver create/get/update throughput and latency vs raw etcd, "
        "and watch delivery latency",
    )
    parser.add_argument(
        "--quick", action="store_true", help=f"n={QUICK_N} and a shorter watch phase"
    )
    parser.add_argument("-n", type=int, default=None, help=f"ops per cell (default {DEFAULT_N})")
    parser.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "--client-per-worker",
        action="store_true",
        help="one Client (own connection) per concurrent worker instead of one shared Client",
    )
    parser.add_argument(
        "--transport",
        choices=sorted(TRANSPORT_CHOICES),
        default="stream",
        help="the client's transport for the apiserver cells: the Calls stream (default, "
        "kemu's), one gRPC call per op (unary), or both side by side",
    )
    parser.add_argument(
        "--security",
        action="store_true",
        help="instead of the cells: creates and gets through a plaintext, a TLS and a TLS+RBAC "
        "apiserver on one etcd, side by side in alternated rounds (bench/tls.py): the "
        "apiserver's and the client's CPU per call",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="with --security: rounds of n calls per kind"
    )
    parser.add_argument("--watch-rate", type=float, default=WATCH_RATE, help="writes/s")
    parser.add_argument("--watch-seconds", type=float, default=None, help="watch phase length")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    add_clock_argument(parser)
    return parser


SECURITY_KINDS: Final = ("create", "get")
SECURITY_IN_FLIGHT: Final = 16


def security(n: int, rounds: int) -> int:
    """`--security`: TLS's and RBAC's cost per create and get, as `python -m bench tls`
    measures it (its apiservers, policy and rounds: bench/tls.py)."""
    opts = argparse.Namespace(
        calls=n, rounds=rounds, in_flight=SECURITY_IN_FLIGHT, kinds=SECURITY_KINDS
    )
    print(
        f"apiserver security: {n} calls per kind and round, {rounds} rounds, "
        f"{SECURITY_IN_FLIGHT} in flight, load average at start {_load(list(os.getloadavg()))}",
        flush=True,
    )
    measured = tls.measure(opts)
    print()
    print("\n".join(tls.summary(measured, SECURITY_KINDS)))
    print(f"load average at the end {_load(list(os.getloadavg()))}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    n = args.n if args.n is not None else (QUICK_N if args.quick else DEFAULT_N)
    if n < 1:
        print("-n must be at least 1", file=sys.stderr)
        return 2
    watch_seconds = args.watch_seconds
    if watch_seconds is None:
        watch_seconds = QUICK_WATCH_SECONDS if args.quick else WATCH_SECONDS
    opts = Options(
        clock=ClockMode(args.clock),
        quick=args.quick,
        n=n,
        watch_seconds=watch_seconds,
        watch_rate=args.watch_rate,
        client_per_worker=args.client_per_worker,
        json_path=args.json,
        transports=TRANSPORT_CHOICES[args.transport],
    )
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if args.security:
        return security(n, args.rounds)
    try:
        with (
            tempfile.TemporaryDirectory(prefix="kemu-bench-") as tmp,
            Cluster(Path(tmp), clock=opts.clock) as cluster,
        ):
            cluster.start_etcd()
            cluster.start_apiserver(rest=True)
            report = anyio.run(run, cluster, opts, Path(tmp))
    except ProcessStartError as e:
        print(f"bench apiserver: the cluster did not start: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("bench apiserver: interrupted; the cluster was stopped", file=sys.stderr)
        return 130
    print(render(report))
    if opts.json_path:
        Path(opts.json_path).write_text(json.dumps(jsonable(report), indent=2) + "\n")
    return 0
