"""One apiserver against two side by side on one etcd, in the same run (issue #59 item 4).

    python -m bench ha [--quick] [--rounds R] [--processes P] [--concurrency C] [-n N]
                       [--standbys K] [--json FILE]

Starts etcd and two apiservers, A and B, with the test harness in a temporary directory; both
run throughout (B's watch caches follow every write, as a standby's do), and K more that
serve no client (standbys: what each apiserver's watch caches cost, and etcd's added watch
streams, as apiservers are added). Then, for R rounds
alternating which variant goes first (1, 2 | 2, 1 | ...):

- "1 apiserver": P client processes (bench.ha_clients), every one dialing A first;
- "2 apiservers": the same P processes spread round-robin, A first for the even ones and B
  first for the odd ones (Cluster.spread_components' order: each sticks to one apiserver, as
  behind an L4 balancer);

and for each, two phases whose processes start together (each connected and ready, then
the bench's go on their stdin): N creates of a pod per process, then the N bindings of those pods, each at C calls
in flight per process. A phase's
throughput is its successful calls over the span from the go to the last answer; its CPU per
call is each process's CPU seconds over that span (etcd, A, B and the standbys from /proc; the
clients' own, summed, from their report) per successful call. The rows are the medians over the rounds;
docs/benchmarks.md ("Apiservers side by side") turns the per-call figures into what N
apiservers on N cores would give and where etcd bounds it.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from bench.common import bench_main, cpu_seconds, fmt, format_table, host_cpu
from bench.ha_clients import OPS, READY
from kemu.client.client import Client
from kemu.testing.cluster import Cluster
from kemu.testing.namespaces import ensure_namespace
from kemu.testing.processes import python_env, python_module_argv

logger = logging.getLogger(__name__)

VARIANTS: Final = (1, 2)
"""Apiservers the clients are spread over."""
SERVERS: Final = ("apiserver-a", "apiserver-b")
"""The apiservers the clients dial; standbys are named apiserver-standby-<i>."""
STANDBY: Final = "apiserver-standby-"
DEFAULT_N: Final = 1500
QUICK_N: Final = 150
DEFAULT_ROUNDS: Final = 3
DEFAULT_PROCESSES: Final = 4
DEFAULT_CONCURRENCY: Final = 16
READY_TIMEOUT: Final = 60.0
"""Seconds for a phase's client processes to import, connect and be ready."""
LATE_WARNING: Final = 0.05


@dataclass(frozen=True)
class Options:
    n: int
    rounds: int
    processes: int
    concurrency: int
    json_path: str | None
    standbys: int = 0


@dataclass
class Phase:
    """One phase of one variant in one round."""

    variant: int
    round: int
    op: str
    ok: int
    errors: int
    seconds: float
    cpu_seconds: dict[str, float]
    """etcd, apiserver-a, apiserver-b, each standby and clients (the client processes' sum)."""
    p99: float
    late: float
    first_error: str = ""

    @property
    def per_second(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else float("nan")

    def cpu_ms_per_call(self) -> dict[str, float]:
        return {
            k: v * 1000 / self.ok if self.ok else float("nan") for k, v in self.cpu_seconds.items()
        }


@dataclass
class Result:
    host: str = ""
    load_before: str = ""
    load_after: str = ""
    phases: list[Phase] = field(default_factory=list)


def _load() -> str:
    try:
        return Path("/proc/loadavg").read_text().strip()
    except OSError:
        return "?"


def _spent(before: float | None, after: float | None) -> float:
    return after - before if before is not None and after is not None else float("nan")


def servers_of(variant: int, process: int, a: str, b: str) -> str:
    """--server of client process `process` in `variant`: A first for every one with one
    apiserver; with two, round-robin (the other behind it for failover)."""
    if variant == 1 or process % 2 == 0:
        return f"{a},{b}"
    return f"{b},{a}"


async def phase(
    cluster: Cluster, opts: Options, tmp: Path, variant: int, rnd: int, op: str, ns: str
) -> Phase:
    a, b = cluster.servers.split(",")[:2]
    procs = []
    for k in range(opts.processes):
        out = tmp / f"r{rnd}-v{variant}-{op}-{k}.json"
        argv = python_module_argv(
            "bench.ha_clients",
            [
                "--server", servers_of(variant, k, a, b),
                "--namespace", ns,
                "--prefix", f"c{k}",
                "--op", op,
                "--count", str(opts.n),
                "--concurrency", str(opts.concurrency),
                "--out", str(out),
            ],
        )  # fmt: skip
        procs.append((await anyio.open_process(argv, env=python_env(), stderr=None), out))
    watching = [*SERVERS, *(f"{STANDBY}{i}" for i in range(opts.standbys))]
    pids = {name: cluster.processes[name].pid for name in ("etcd", *watching)}
    with anyio.fail_after(READY_TIMEOUT):
        for proc, _ in procs:
            assert proc.stdout is not None
            line = await BufferedByteReceiveStream(proc.stdout).receive_until(b"\n", 1000)
            if line.decode().strip() != READY:
                raise RuntimeError(f"a client process said {line!r}, not {READY!r}")
    before = {name: cpu_seconds(pid) if pid else None for name, pid in pids.items()}
    go = f"{time.time()!r}\n".encode()
    for proc, _ in procs:
        assert proc.stdin is not None
        await proc.stdin.send(go)
    reports = []
    for proc, out in procs:
        code = await proc.wait()
        if code != 0:
            raise RuntimeError(f"a client process exited {code}")
        reports.append(json.loads(out.read_text()))
    after = {name: cpu_seconds(pid) if pid else None for name, pid in pids.items()}
    cpu = {name: _spent(before[name], after[name]) for name in pids}
    cpu["clients"] = sum(float(r["cpu_seconds"]) for r in reports)
    result = Phase(
        variant=variant,
        round=rnd,
        op=op,
        ok=sum(int(r["ok"]) for r in reports),
        errors=sum(int(r["errors"]) for r in reports),
        seconds=max(float(r["seconds"]) for r in reports),
        cpu_seconds=cpu,
        p99=max(float(r["p99"]) for r in reports),
        late=max(float(r["late"]) for r in reports),
        first_error=next((str(r["first_error"]) for r in reports if r["first_error"]), ""),
    )
    if result.late > LATE_WARNING:
        logger.warning(
            "round %d, %d apiserver(s), %s: a process was %.2fs late", rnd, variant, op, result.late
        )
    logger.info(
        "round %d, %d apiserver(s), %s: %.0f/s, cpu ms/call %s",
        rnd,
        variant,
        op,
        result.per_second,
        {k: round(v, 3) for k, v in result.cpu_ms_per_call().items()},
    )
    return result


async def run_async(cluster: Cluster, opts: Options, tmp: Path) -> Result:
    result = Result(host=host_cpu(), load_before=_load())
    async with Client(cluster.servers) as client:
        for rnd in range(opts.rounds):
            order = VARIANTS if rnd % 2 == 0 else tuple(reversed(VARIANTS))
            for variant in order:
                ns = await ensure_namespace(client, f"ha-r{rnd}-v{variant}")
                for op in OPS:
                    result.phases.append(await phase(cluster, opts, tmp, variant, rnd, op, ns))
    result.load_after = _load()
    return result


def run(opts: Options) -> Result:
    with (
        tempfile.TemporaryDirectory(prefix="kemu-bench-ha-") as tmp,
        Cluster(Path(tmp)) as cluster,
    ):
        cluster.start_etcd()
        for name in (*SERVERS, *(f"{STANDBY}{i}" for i in range(opts.standbys))):
            cluster.start_apiserver(name=name)
        return anyio.run(run_async, cluster, opts, Path(tmp))


def medians(result: Result, variant: int, op: str) -> tuple[float, dict[str, float], int]:
    """(calls/s, CPU ms per call of each process, errors) of `variant`'s `op` phases: the
    medians over the rounds (errors summed)."""
    phases = [p for p in result.phases if p.variant == variant and p.op == op]
    rate = statistics.median(p.per_second for p in phases)
    names = phases[0].cpu_seconds.keys()
    cpu = {n: statistics.median(p.cpu_ms_per_call()[n] for p in phases) for n in names}
    return rate, cpu, sum(p.errors for p in phases)


def render(opts: Options, result: Result) -> str:
    rows = []
    for op in OPS:
        for variant in VARIANTS:
            rate, cpu, errors = medians(result, variant, op)
            apiservers = cpu["apiserver-a"] + cpu["apiserver-b"]
            standbys = [v for k, v in cpu.items() if k.startswith(STANDBY)]
            rows.append(
                [
                    f"{op}, {variant} apiserver{'s' if variant > 1 else ''}",
                    fmt(rate, 0),
                    fmt(cpu["apiserver-a"], 3),
                    fmt(cpu["apiserver-b"], 3),
                    fmt(apiservers, 3),
                    fmt(statistics.fmean(standbys), 3) if standbys else "-",
                    fmt(cpu["etcd"], 3),
                    fmt(cpu["clients"], 3),
                    str(errors),
                ]
            )
    table = format_table(
        ["phase", "calls/s", "A ms", "B ms", "A+B ms", "standby ms", "etcd ms", "clients ms",
         "errors"],
        rows,
    )  # fmt: skip
    return (
        f"host: {result.host}; load before {result.load_before}, after {result.load_after}\n"
        f"{opts.processes} client processes x {opts.concurrency} in flight, {opts.n} calls each "
        f"per phase, {opts.standbys} standby apiserver(s), median of {opts.rounds} rounds "
        f"(CPU: ms per successful call; standby: each one's mean)\n{table}"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m bench ha", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"-n {QUICK_N}, 1 round")
    parser.add_argument(
        "-n", type=int, default=None, help=f"calls per process and phase ({DEFAULT_N})"
    )
    parser.add_argument("--rounds", type=int, default=None, help=f"({DEFAULT_ROUNDS})")
    parser.add_argument("--processes", type=int, default=DEFAULT_PROCESSES)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument(
        "--standbys", type=int, default=0, help="apiservers that serve no client (0)"
    )
    parser.add_argument("--json", default=None, metavar="FILE")
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def options(args: argparse.Namespace) -> Options:
    n = args.n if args.n is not None else (QUICK_N if args.quick else DEFAULT_N)
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else DEFAULT_ROUNDS)
    for flag, value in (("-n", n), ("--rounds", rounds), ("--processes", args.processes),
                        ("--concurrency", args.concurrency)):  # fmt: skip
        if value < 1:
            raise ValueError(f"{flag} must be at least 1, not {value}")
    if args.standbys < 0:
        raise ValueError(f"--standbys must be at least 0, not {args.standbys}")
    return Options(n, rounds, args.processes, args.concurrency, args.json, args.standbys)


def main(argv: Sequence[str] | None = None) -> int:
    return bench_main(
        "ha",
        build_parser(),
        argv,
        options,
        run,
        render,
        json_path=lambda o: o.json_path,
        failed=lambda r: any(p.errors for p in r.phases),
    )


if __name__ == "__main__":
    sys.exit(main())
