"""Traces replayed (issue #33's figures): each example trace (tests/fixtures/simkube), a synthetic
day (kemu/trace/synthetic.py) on N static nodes, and a what-if of that day with half its nodes
in two autoscaled node groups under two expanders. Every run goes through the commands a user
types (`python -m kemu.trace replay`, `python -m kemu.whatif`), each on a fresh cluster in
virtual time.

    python -m bench traces [--nodes 100] [--span 6h] [--expanders least-waste,most-pods]
                           [--node-lease-duration-seconds S] [--static-nodes N]
                           [--only examples|day|whatif] [--parallel]
                           [--json OUT]

Per replay: the trace's span, the wall time from its first event to the end (start-up apart),
their ratio, pods bound of created, and the peak RSS of every process (kubelets summed); the
JSON adds the peak node count, time to bind and pods unschedulable at the end. The what-if adds
both runs' node-hours and pods bound, and the pods that differ (by kind in the JSON).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Final, TypedDict

from bench.common import format_table
from kemu.machinery.duration import DurationError, parse_duration
from kemu.testing.processes import REPO_ROOT, python_env
from kemu.trace.diff import Comparison, Difference
from kemu.trace.report import Report, Summary

EXAMPLES: Final = REPO_ROOT / "tests" / "fixtures" / "simkube"
PARTS: Final = ("examples", "day", "whatif")
STOP_GRACE: Final = 120.0
"""Seconds a command stopped on the way has to stop its clusters before it is killed."""


class Terminated(Exception):
    """SIGTERM reached this process (`stop_on_sigterm`)."""


def stop_on_sigterm() -> None:
    """SIGTERM raises Terminated, so that the command running (`run_command`) is stopped
    before this process ends, instead of being left running on its own."""

    def terminated(signum: int, frame: object) -> None:
        raise Terminated

    signal.signal(signal.SIGTERM, terminated)


def run_command(argv: Sequence[str]) -> None:
    """Runs `argv` to its end (RuntimeError with its stderr's tail if it fails). Stopped on the
    way: on SIGTERM (Terminated) the command gets SIGTERM too; on Ctrl-C it got SIGINT already
    (one process group). Either way it is waited for, so that it stops its clusters, and killed
    only after STOP_GRACE seconds."""
    with subprocess.Popen(
        argv, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as child:
        try:
            _, stderr = child.communicate()
        except (Terminated, KeyboardInterrupt) as e:
            if isinstance(e, Terminated):
                child.terminate()
            try:
                child.communicate(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                child.kill()
                child.communicate()
            raise
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {child.returncode}: {stderr[-2000:]}")


def _run(module: str, args: Sequence[str]) -> None:
    run_command([sys.executable, "-m", module, *args])


class Row(TypedDict):
    """One replay's figures in the bench's JSON and table."""

    trace: str
    span_s: float
    wall_s: float
    startup_s: float
    speedup: float | None
    pods_bound: int
    pods_created: int
    preemptions: int
    node_hours: float
    peak_nodes: float
    time_to_bind_s: Summary | None
    unschedulable_at_end: int
    peak_rss_mib: dict[str, float]


class DiffFigures(TypedDict):
    pods_that_differ: int
    differences: list[str]
    differences_by_kind: dict[str, int]


class WhatIfRow(DiffFigures):
    expanders: list[str]
    a: Row
    b: Row


class Results(TypedDict):
    replays: list[Row]
    whatif: WhatIfRow | None


def replay(trace: Path, cluster: Path | None, out: Path) -> Report:
    args = [str(trace), "--json", str(out), "--quiet"]
    if cluster is not None:
        args += ["--cluster", str(cluster)]
    _run("kemu.trace", ["replay", *args])
    report: Report = json.loads(out.read_text())
    return report


def peak_rss_mib(report: Report) -> dict[str, float]:
    """Each process's peak RSS in MiB, the kubelets' (one process per pool) summed."""
    out: dict[str, float] = {}
    for name, memory in report.get("processes", {}).items():
        key = "kubelets" if name.startswith("kubelet") else name
        out[key] = out.get(key, 0.0) + memory["peak_rss_kib"] / 1024
    return out


def row(name: str, report: Report) -> Row:
    return {
        "trace": name,
        "span_s": report["span_s"],
        "wall_s": report["wall_s"],
        "startup_s": report["startup_s"],
        "speedup": report["speedup"],
        "pods_bound": report["pods_bound"],
        "pods_created": report["pods_created"],
        "preemptions": len(report["preemptions"]),
        "node_hours": report["node_hours"],
        "peak_nodes": max((n for _, n in report.get("nodes_over_time", ())), default=0),
        "time_to_bind_s": report.get("time_to_bind_s"),
        "unschedulable_at_end": len(report.get("unschedulable_at_end", ())),
        "peak_rss_mib": {k: round(v, 1) for k, v in peak_rss_mib(report).items()},
    }


def run(args: argparse.Namespace, work: Path) -> Results:
    results: Results = {"replays": [], "whatif": None}
    if args.only in (None, "examples"):
        for trace in sorted(EXAMPLES.glob("*.sktrace")):
            report = replay(trace, None, work / f"{trace.stem}.json")
            results["replays"].append(row(trace.name, report))
            print(f"replayed {trace.name}", file=sys.stderr)
    day = work / "day.sktrace"
    shape = ["--nodes", str(args.nodes), "--span", args.span]
    if args.node_lease_duration_seconds is not None:
        shape += ["--node-lease-duration-seconds", str(args.node_lease_duration_seconds)]
    static = [] if args.static_nodes is None else ["--static-nodes", str(args.static_nodes)]
    if args.only in (None, "day", "whatif"):
        _run("kemu.trace", ["synthetic", "--out", str(day), *shape])
    if args.only in (None, "day"):
        report = replay(day, work / "day.cluster.yaml", work / "day.json")
        results["replays"].append(row(f"synthetic day ({args.nodes} nodes)", report))
        print("replayed the synthetic day", file=sys.stderr)
    if args.only in (None, "whatif"):
        a, b = args.expanders
        for expander in (a, b):
            cluster = work / f"day-{expander}.yaml"
            _run("kemu.trace", ["synthetic", "--out", str(day), *shape, "--expander", expander,
                                *static, "--cluster-out", str(cluster)])  # fmt: skip
        out = work / "whatif.json"
        _run(
            "kemu.whatif",
            [str(day), "--a", str(work / f"day-{a}.yaml"), "--b", str(work / f"day-{b}.yaml"),
             "--json", str(out), "--quiet", *(["--parallel"] if args.parallel else [])],
        )  # fmt: skip
        compared: Comparison = json.loads(out.read_text())
        results["whatif"] = {
            "expanders": [a, b],
            "a": row(f"day, {a}", compared["a"]),
            "b": row(f"day, {b}", compared["b"]),
            **differences(compared["diff"]),
        }
        print("compared the expanders", file=sys.stderr)
    return results


def differences(diff: list[Difference]) -> DiffFigures:
    """kemu.whatif's differences in figures: a pod can differ in several ways (another node
    and so another node group), so the pods are counted apart from the differences."""
    return {
        "pods_that_differ": len({d["pod"] for d in diff}),
        "differences": sorted({d["what"] for d in diff}),
        "differences_by_kind": dict(Counter(d["what"] for d in diff)),
    }


def table(results: Results) -> str:
    rows = list(results["replays"])
    whatif = results["whatif"]
    if whatif is not None:
        rows += [whatif["a"], whatif["b"]]
    header = [
        "trace",
        "span s",
        "wall s",
        "ratio",
        "bound/created",
        "preempt",
        "node-h",
        "peak RSS MiB",
    ]
    lines = [
        [
            r["trace"],
            f"{r['span_s']:.0f}",
            f"{r['wall_s']:.1f}",
            f"{r['speedup']}x",
            f"{r['pods_bound']}/{r['pods_created']}",
            str(r["preemptions"]),
            f"{r['node_hours']:.1f}",
            ", ".join(f"{k} {v:.0f}" for k, v in sorted(r["peak_rss_mib"].items())),
        ]
        for r in rows
    ]
    text = format_table(header, lines)
    if whatif is not None:
        text += (
            f"\nwhat-if {whatif['expanders'][0]} vs {whatif['expanders'][1]}: "
            f"{whatif['pods_that_differ']} pods differ ({', '.join(whatif['differences']) or '-'})"
        )
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench traces", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--nodes", type=int, default=100, help="the synthetic day's nodes (100)")
    parser.add_argument("--span", default="6h", help="the synthetic day's span (6h)")
    parser.add_argument(
        "--expanders", default="least-waste,most-pods", help="the what-if's two expanders"
    )
    parser.add_argument(
        "--node-lease-duration-seconds",
        type=int,
        metavar="S",
        help="the synthetic day's nodes' Lease duration (kemu.trace synthetic's flag; default: "
        "the kubelet's 40)",
    )
    parser.add_argument(
        "--static-nodes",
        type=int,
        metavar="N",
        help="the what-if's static nodes (default half; the others are its node groups)",
    )
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="the what-if's two replays at once (kemu.whatif --parallel): their wall times "
        "share the cores",
    )
    parser.add_argument("--only", choices=PARTS, help="one part only")
    parser.add_argument("--json", metavar="OUT", help="write the figures as JSON")
    args = parser.parse_args(argv)
    try:
        parse_duration(args.span)
    except DurationError as e:
        parser.error(f"--span: {e}")
    expanders = args.expanders.split(",")
    if len(expanders) != 2:
        parser.error("--expanders: two names, comma-separated")
    args.expanders = expanders
    stop_on_sigterm()
    try:
        with tempfile.TemporaryDirectory(prefix="kemu-bench-traces-") as tmp:
            results = run(args, Path(tmp))
    except (Terminated, KeyboardInterrupt):
        print("bench traces: interrupted; the replays were stopped", file=sys.stderr)
        return 130
    print(table(results))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
