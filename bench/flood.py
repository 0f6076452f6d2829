"""The apiserver under a flood of requests at several times its capacity (issue #28 item 5).

    python -m bench flood [--rate R] [--duration S] [--processes P] [--max-pending N] [--edge grpc|rest]
                          [--max-requests-inflight N] [--max-mutating-requests-inflight N]
                          [--quick] [--json FILE]

On a fresh cluster (etcd; the apiserver with the REST edge and the given in-flight limits; two
schedulers and a controller-manager, all with --leader-elect) it waits for both leaders, then
P processes of `bench.flood_clients` send R requests per second between them, open loop, for
S seconds (half ConfigMap creates, half gets of created ones) to the gRPC edge with kemu's
Client or, with `--edge rest`, to the REST edge as JSON; either way a 429 is retried after its
Retry-After. Meanwhile this process:

- probes the apiserver's /readyz on the REST edge every 100 ms (latency and status);
- reads both leader-election Leases every 500 ms (holder, leaseTransitions, renewTime);
- samples the CPU of the apiserver and etcd.

Reported: requests offered and served per second, the 429s the apiserver answered (its
apiserver_flowcontrol_rejected_requests_total under priority and fairness, the default, or
apiserver_dropped_requests_total with --enable-priority-and-fairness=false), the outcome of every call, health probe latency p50/p99
and failures, for each Lease the holder and leaseTransitions before and after and the longest
gap between two renewals seen, whether every component is still running, and the writes the
clients saw acknowledged against the ConfigMaps present afterwards (nothing lost). The run
fails if a Lease changed hands, a leader logged that it lost its election (it then starts
again in place as a candidate), a component exited, a probe failed or an acknowledged
write is missing. The cluster is always stopped at the end, also on Ctrl-C. See
bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
import anyio
import anyio.to_thread
from prometheus_client.parser import text_string_to_metric_families

from bench.common import CpuMeter, bench_main, fmt, format_table, rate, summarize
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.machinery.errors import ApiError
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import Cluster, add_clock_argument
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import ProcessStartError

logger = logging.getLogger(__name__)

NAMESPACE: Final = "bench-flood"
LEASES: Final = ("kube-scheduler", "kube-controller-manager")
LEASE_NAMESPACE: Final = "kube-system"
COMPONENTS: Final = ("scheduler-a", "scheduler-b", "controllermanager")
PROBE_INTERVAL: Final = 0.1
PROBE_TIMEOUT: Final = 10.0
LEASE_INTERVAL: Final = 0.5
LEADER_TIMEOUT: Final = 60.0
EXIT_LOG_LINES: Final = 8
# What kemu.client.controlplane logs when a leader's renewal misses its renew deadline (it
# then starts again in place as a candidate: the process does not exit).
LEADERSHIP_LOST: Final = "leader election lost"


REFUSALS: Final = (
    "apiserver_flowcontrol_rejected_requests_total",  # priority and fairness (the default)
    "apiserver_dropped_requests_total",  # the max-in-flight filter (the flag off)
)


@dataclass(frozen=True)
class Options:
    edge: str  # "grpc" (kemu's Client) or "rest" (JSON over HTTP)
    rate: float  # requests per second offered, over every flood process
    duration: float
    processes: int
    max_pending: int  # per flood process
    max_requests_inflight: int
    max_mutating_requests_inflight: int
    json_path: str | None
    clock: ClockMode = ClockMode.REAL


@dataclass
class LeaseView:
    holder: str = ""
    transitions: int = 0
    renew_time: float = math.nan


@dataclass
class LeaseReport:
    before: LeaseView = field(default_factory=LeaseView)
    after: LeaseView = field(default_factory=LeaseView)
    holders_seen: list[str] = field(default_factory=list)
    renewals_seen: int = 0
    max_renew_gap_seconds: float = math.nan  # between two renewTimes seen (>= retryPeriod)

    @property
    def kept(self) -> bool:
        """The same holder and leaseTransitions before and after, and no other holder seen.
        A leader that gave up (its renewal missed the renew deadline) before anyone took the
        Lease over still counts as kept here; it shows as an exited component."""
        return (
            bool(self.before.holder)
            and self.before.holder == self.after.holder
            and self.before.transitions == self.after.transitions
            and len(self.holders_seen) == 1
        )


@dataclass
class Result:
    options: dict[str, Any] = field(default_factory=dict)
    seconds: float = math.nan  # of arrivals
    wall_seconds: float = math.nan  # from the first arrival until every call returned
    offered: int = 0  # arrivals: rate x duration
    sent: int = 0  # calls made (each retried after a 429 within the call: counted once)
    shed: int = 0  # arrivals not sent: a flood process had max_pending outstanding
    served: int = 0  # calls that succeeded
    outcomes: dict[str, int] = field(default_factory=dict)
    first_errors: dict[str, str] = field(default_factory=dict)
    refused_429: float = 0.0  # REFUSALS over the flood
    server_requests: float = 0.0  # apiserver_request_total over the flood (handled calls)
    latency_ms: dict[str, dict[str, float | int]] = field(default_factory=dict)
    probe_ms: dict[str, float | int] = field(default_factory=dict)
    probe_failures: int = 0
    probe_first_failure: str = ""
    leases: dict[str, LeaseReport] = field(default_factory=dict)
    exited: dict[str, int | None] = field(default_factory=dict)
    leadership_lost: dict[str, int] = field(default_factory=dict)  # times each logged it
    exit_logs: dict[str, str] = field(default_factory=dict)  # the last lines of each exited
    acked: int = 0
    present: int = 0
    acked_missing: int = 0
    cpu_cores: dict[str, float] = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return (
            not self.error
            and self.probe_failures == 0
            and all(lease.kept for lease in self.leases.values())
            and not any(code is not None for code in self.exited.values())
            and not any(self.leadership_lost.values())
            and self.acked_missing == 0
        )


def _seconds(ts: Any) -> float:
    return float(ts.ToNanoseconds()) / 1e9 if ts.ByteSize() else math.nan


def _view(lease: types_pb2.Lease) -> LeaseView:
    return LeaseView(
        lease.spec.holder_identity, lease.spec.lease_transitions, _seconds(lease.spec.renew_time)
    )


def _metric_total(text: str, name: str) -> float:
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                total += sample.value
    return total


class Runner:
    def __init__(self, cluster: Cluster, opts: Options, result: Result, tmp: Path) -> None:
        self.cluster = cluster
        self.opts = opts
        self.result = result
        self.tmp = tmp

    async def run(self) -> None:
        r = self.result
        async with Client(self.cluster.server, user_agent="bench-flood") as client:
            await client.wait_ready(timeout=30)
            await ensure_namespace(client, NAMESPACE)
            for name in LEASES:
                r.leases[name] = LeaseReport(before=await self.wait_leader(client, name))
            before = await anyio.to_thread.run_sync(self.cluster.component("apiserver").scrape)
            meter = CpuMeter(
                {n: self.cluster.processes[n].pid for n in ("apiserver", "etcd", *COMPONENTS)}
            )
            probes: list[float] = []
            flood_done = anyio.Event()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.probe, probes, flood_done)
                for name in LEASES:
                    tg.start_soon(self.watch_lease, client, name, flood_done)
                meter.start()
                outs = await self.flood()
                r.cpu_cores = meter.stop()
                flood_done.set()
            after = await anyio.to_thread.run_sync(self.cluster.component("apiserver").scrape)
            r.refused_429 = sum(
                _metric_total(after, name) - _metric_total(before, name) for name in REFUSALS
            )
            r.server_requests = _metric_total(after, "apiserver_request_total") - (
                _metric_total(before, "apiserver_request_total")
            )
            self.tally(outs, probes)
            for name in LEASES:
                lease = await client.get(types_pb2.Lease, name, LEASE_NAMESPACE)
                r.leases[name].after = _view(lease)
            present = {
                cm.metadata.name
                for cm in (await client.list_all(types_pb2.ConfigMap, NAMESPACE)).items
            }
            acked = [name for out in outs for name in out["acked"]]
            r.acked, r.present = len(acked), len(present)
            r.acked_missing = sum(1 for name in acked if name not in present)
        r.exited = {name: self.cluster.processes[name].returncode for name in COMPONENTS}
        r.leadership_lost = {
            name: self.cluster.processes[name].logs().count(LEADERSHIP_LOST) for name in COMPONENTS
        }
        for name, code in r.exited.items():
            if code is not None:
                tail = self.cluster.processes[name].logs().splitlines()[-EXIT_LOG_LINES:]
                r.exit_logs[name] = "\n".join(tail)

    async def wait_leader(self, client: Client, name: str) -> LeaseView:
        deadline = time.monotonic() + LEADER_TIMEOUT
        while True:
            try:
                lease = await client.get(types_pb2.Lease, name, LEASE_NAMESPACE)
                if lease.spec.holder_identity:
                    return _view(lease)
            except ApiError as e:
                logger.info("no %s lease yet: %s", name, e)
            if time.monotonic() > deadline:
                raise TimeoutError(f"no leader holds the {name} lease after {LEADER_TIMEOUT}s")
            await anyio.sleep(0.5)

    async def flood(self) -> list[dict[str, Any]]:
        opts = self.opts
        procs = []
        for k in range(opts.processes):
            out = self.tmp / f"flood-{k}.json"
            argv = [
                sys.executable, "-m", "bench.flood_clients",
                "--server", self.cluster.server,
                "--namespace", NAMESPACE,
                "--prefix", f"f{k}",
                "--rate", str(opts.rate / opts.processes),
                "--duration", str(opts.duration),
                "--max-pending", str(opts.max_pending),
                "--out", str(out),
            ]  # fmt: skip
            if opts.edge == "rest":
                argv += ["--rest-url", self.cluster.rest_url]
            procs.append((await anyio.open_process(argv), out))
        results = []
        for proc, out in procs:
            code = await proc.wait()
            if code != 0:
                raise RuntimeError(f"a flood process exited {code}")
            results.append(json.loads(out.read_text()))
        return results

    async def probe(self, probes: list[float], done: anyio.Event) -> None:
        r = self.result
        url = self.cluster.rest_url + "/readyz"
        timeout = aiohttp.ClientTimeout(total=PROBE_TIMEOUT)
        async with aiohttp.ClientSession(timeout=timeout) as http:
            while not done.is_set():
                start = time.perf_counter()
                try:
                    async with http.get(url) as resp:
                        await resp.read()
                        if resp.status != 200:
                            raise RuntimeError(f"/readyz answered {resp.status}")
                    probes.append(time.perf_counter() - start)
                except (aiohttp.ClientError, RuntimeError, TimeoutError) as e:
                    r.probe_failures += 1
                    r.probe_first_failure = r.probe_first_failure or f"{type(e).__name__}: {e}"
                await anyio.sleep(PROBE_INTERVAL)

    async def watch_lease(self, client: Client, name: str, done: anyio.Event) -> None:
        report = self.result.leases[name]
        last = report.before.renew_time
        holders = [report.before.holder]
        gaps: list[float] = []
        while not done.is_set():
            try:
                lease = await client.get(types_pb2.Lease, name, LEASE_NAMESPACE)
            except ApiError as e:
                logger.warning("reading the %s lease: %s", name, e)
            else:
                view = _view(lease)
                if view.holder != holders[-1]:
                    holders.append(view.holder)
                if view.renew_time != last:
                    report.renewals_seen += 1
                    gaps.append(view.renew_time - last)
                    last = view.renew_time
            await anyio.sleep(LEASE_INTERVAL)
        report.holders_seen = holders
        report.max_renew_gap_seconds = max(gaps) if gaps else math.nan

    def tally(self, outs: list[dict[str, Any]], probes: list[float]) -> None:
        r = self.result
        outcomes: Counter[str] = Counter()
        latencies: dict[str, list[float]] = {"create": [], "get": []}
        for out in outs:
            outcomes.update(out["outcomes"])
            for key, message in out["first_errors"].items():
                r.first_errors.setdefault(key, message)
            for verb, values in out["latencies"].items():
                latencies[verb].extend(values)
            r.sent += int(out["sent"])
            r.shed += int(out["shed"])
        r.offered = r.sent + r.shed
        r.seconds = max((float(out["offered_seconds"]) for out in outs), default=math.nan)
        r.wall_seconds = max((float(out["wall_seconds"]) for out in outs), default=math.nan)
        for k, out in enumerate(outs):
            r.cpu_cores[f"flood-{k}"] = float(out["cpu_seconds"]) / float(out["wall_seconds"])
        r.outcomes = dict(sorted(outcomes.items()))
        r.served = sum(n for k, n in outcomes.items() if k.endswith(" ok"))
        r.latency_ms = {verb: summarize(values).as_ms() for verb, values in latencies.items()}
        r.probe_ms = summarize(probes).as_ms()


def run(opts: Options) -> Result:
    """One run on a fresh cluster; the cluster is stopped on return, error or Ctrl-C."""
    result = Result(options={"load_avg_start": list(os.getloadavg())})
    with (
        tempfile.TemporaryDirectory(prefix="kemu-bench-flood-") as tmp,
        Cluster(Path(tmp), clock=opts.clock) as cluster,
    ):
        try:
            cluster.start_etcd()
            cluster.start_apiserver(
                rest=True,
                extra_args=[
                    "--max-requests-inflight", str(opts.max_requests_inflight),
                    "--max-mutating-requests-inflight", str(opts.max_mutating_requests_inflight),
                ],
            )  # fmt: skip
            cluster.start_scheduler(name="scheduler-a", leader_elect=True)
            cluster.start_scheduler(name="scheduler-b", leader_elect=True)
            cluster.start_controllermanager(leader_elect=True)
            anyio.run(Runner(cluster, opts, result, Path(tmp)).run)
        except (ProcessStartError, RuntimeError, TimeoutError, ApiError) as e:
            result.error = f"{type(e).__name__}: {e}"
            logger.error("the run failed: %s\n%s", result.error, cluster.dump_logs(tail=20))
    result.options["load_avg_end"] = list(os.getloadavg())
    return result


# ---------------------------------------------------------------------- output


def render(opts: Options, r: Result) -> str:
    limits = f"{opts.max_requests_inflight}/{opts.max_mutating_requests_inflight}"
    lines = [
        f"flood: {fmt(opts.rate, 0)} requests/s offered for {fmt(opts.duration, 0)} s by "
        f"{opts.processes} processes on the {opts.edge} edge; in-flight limits (read-only/mutating) {limits}",
    ]
    if r.error:
        lines.append(f"ERROR: {r.error}")
    rows = [
        ["requests offered (arrivals)", str(r.offered), fmt(rate(r.offered, r.seconds), 0) + "/s"],
        ["sent", str(r.sent), fmt(rate(r.sent, r.seconds), 0) + "/s"],
        ["not sent (max-pending outstanding)", str(r.shed), ""],
        [
            "served (calls that succeeded)",
            str(r.served),
            fmt(rate(r.served, r.wall_seconds), 0) + "/s",
        ],
        ["429 answered (APF's rejected or max-in-flight's dropped)", fmt(r.refused_429, 0), ""],
        ["gRPC calls handled (apiserver_request_total)", fmt(r.server_requests, 0), ""],
    ]
    for verb, stats in r.latency_ms.items():
        rows.append([f"{verb} latency p50/p99 ms", "", f"{stats['p50_ms']} / {stats['p99_ms']}"])
    rows.append(
        [
            "/readyz probes: count, p50/p99/max ms",
            str(r.probe_ms.get("count", 0)),
            f"{r.probe_ms.get('p50_ms')} / {r.probe_ms.get('p99_ms')} / {r.probe_ms.get('max_ms')}",
        ]
    )
    rows.append(["/readyz failures", str(r.probe_failures), r.probe_first_failure])
    for name, lease in r.leases.items():
        rows.append(
            [
                f"lease {name}",
                "same holder" if lease.kept else "CHANGED HANDS",
                f"holder {lease.before.holder} -> {lease.after.holder}, transitions "
                f"{lease.before.transitions} -> {lease.after.transitions}, renewals seen "
                f"{lease.renewals_seen}, longest gap {fmt(lease.max_renew_gap_seconds, 1)} s",
            ]
        )
    lost = {n: c for n, c in r.leadership_lost.items() if c}
    rows.append(
        [
            "leader elections lost (logged)",
            str(sum(lost.values())),
            json.dumps(lost) if lost else "",
        ]
    )
    exited = {n: c for n, c in r.exited.items() if c is not None}
    rows.append(["components exited", str(len(exited)), json.dumps(exited) if exited else ""])
    rows.append(
        [
            "writes acknowledged / present / acknowledged but missing",
            f"{r.acked} / {r.present} / {r.acked_missing}",
            "",
        ]
    )
    cpu = ", ".join(f"{n} {fmt(c, 2)}" for n, c in r.cpu_cores.items())
    load = " -> ".join(
        fmt(r.options.get(k, [math.nan])[0], 1) for k in ("load_avg_start", "load_avg_end")
    )
    rows.append(["CPU (cores) during the flood", "", cpu])
    rows.append(["load average (1 min) at start and end", "", load])
    lines.append(format_table(["", "n", "value"], rows))
    lines.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in r.outcomes.items()))
    lines.extend(f"first {key}: {message}" for key, message in r.first_errors.items())
    for name, tail in r.exit_logs.items():
        lines.append(f"{name} exited; the end of its log:\n{tail}")
    lines.append("PASS" if r.ok else "FAIL")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench flood",
        description="the apiserver under a flood at several times its capacity: requests "
        "offered and served, 429s, /readyz latency, leader leases kept, nothing lost",
    )
    parser.add_argument(
        "--edge",
        choices=("grpc", "rest"),
        default="grpc",
        help="flood the gRPC edge with kemu's Client (default) or the REST edge with JSON",
    )
    parser.add_argument("--rate", type=float, help="requests/s offered (default 3000; quick 2000)")
    parser.add_argument("--duration", type=float, help="s of flood (default 30; quick 10)")
    parser.add_argument("--processes", type=int, default=2, help="flood processes (default 2)")
    parser.add_argument(
        "--max-pending", type=int, default=5000, help="outstanding calls per flood process"
    )
    parser.add_argument("--max-requests-inflight", type=int, default=400)
    parser.add_argument("--max-mutating-requests-inflight", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="2000/s for 10 s")
    parser.add_argument("--json", metavar="FILE", help="also write the result as JSON")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    add_clock_argument(parser)
    return parser


def options_from_args(args: argparse.Namespace) -> Options:
    quick = bool(args.quick)
    opts = Options(
        clock=ClockMode(args.clock),
        edge=args.edge,
        rate=args.rate if args.rate is not None else (2000.0 if quick else 3000.0),
        duration=args.duration if args.duration is not None else (10.0 if quick else 30.0),
        processes=args.processes,
        max_pending=args.max_pending,
        max_requests_inflight=args.max_requests_inflight,
        max_mutating_requests_inflight=args.max_mutating_requests_inflight,
        json_path=args.json,
    )
    if not opts.rate > 0 or not opts.duration > 0:
        raise ValueError("--rate and --duration must be > 0")
    if opts.processes < 1 or opts.max_pending < 1:
        raise ValueError("--processes and --max-pending must be >= 1")
    if opts.max_requests_inflight < 0 or opts.max_mutating_requests_inflight < 0:
        raise ValueError("the in-flight limits must be >= 0 (0: no limit)")
    return opts


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(
        "flood",
        build_parser(),
        argv,
        options_from_args,
        run,
        render,
        json_path=lambda opts: opts.json_path,
        failed=lambda result: not result.ok,
    )
