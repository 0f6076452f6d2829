"""Upstream's scheduler_perf thresholds on this machine (issue #36): every workload of
upstream's misc/, default_preemption/, affinity/, gangscheduling/, podgroup/tas/, dra/ and
dra/extendedresource/ performance-config files
that carries a `threshold`, each run at the newest emulated version that accepts its settings,
through `python -m bench scheduler_perf`, and one table of the results. A threshold is on the
data item its thresholdMetricSelector names: by default SchedulingThroughput's average
(pods/s, over it), for gangscheduling/ the pod-group attempt duration's average (ms, under
it: expectLower; issue #55).

    python -m bench thresholds [--k8s DIR] [--files misc,default_preemption,affinity,gangscheduling,podgroup/tas,dra,dra/extendedresource]
        [--workload NAME ...] [--list] [--json FILE] [--timeout SECONDS]

`--k8s` is a kubernetes/kubernetes checkout (default: $KEMU_K8S_CHECKOUT, else
/work/k8s/kubernetes); its files are read from test/integration/scheduler_perf/<file>/
performance-config.yaml. `--list` prints the plan (each thresholded workload, the emulated
version it runs at, or why it runs at none) without running anything. The table's columns:
pods/s (the measured phase's average throughput, upstream's SchedulingThroughput Average),
the threshold and what it is on, the measured value, whether it is met, value / threshold, the CPU ceiling (the rate at which the run's own CPU per pod would
fill every core: `bench.common.cpu_ceiling`), pods/s over the ceiling, the busiest process
and the cores it used (one component is one Python process: at ~1 core it is what holds the
run under its ceiling), and the load average when the run started. A run takes as long as its
workload (the 50,000-pod ones minutes each); `--workload` picks some. See docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from bench import scheduler_perf
from bench.common import fmt, host_cpu, jsonable, ratio
from bench.scheduler_perf_workloads import (
    THROUGHPUT,
    ThresholdSelector,
    WorkloadError,
    load_workload_file,
    threshold_selector,
    workload_threshold,
)
from kemu.component.version import MAX_VERSION, MIN_VERSION, Version

FILES: Final = (
    "misc",
    "default_preemption",
    "affinity",
    "gangscheduling",
    "podgroup/tas",
    "dra",
    "dra/extendedresource",
)
# Default files a checkout may predate (gangscheduling/ is 1.36's; dra/ the stand-in's own
# addition): left out of the default set when absent.
OPTIONAL_FILES: Final = ("gangscheduling", "dra", "dra/extendedresource")
CHECKOUT_ENV: Final = "KEMU_K8S_CHECKOUT"
DEFAULT_CHECKOUT: Final = "/work/k8s/kubernetes"
SCHEDULER_PERF_DIR: Final = Path("test/integration/scheduler_perf")
DEFAULT_TIMEOUT: Final = 3600.0


@dataclass(frozen=True)
class Planned:
    """A thresholded workload and the emulated version it runs at (None: at none, `reason`)."""

    workload: str
    file: Path
    threshold: float
    version: Version | None
    reason: str = ""
    selector: ThresholdSelector = field(default_factory=ThresholdSelector)
    """The data item the threshold applies to (thresholdMetricSelector)."""

    @property
    def threshold_text(self) -> str:
        return self.selector.bound(self.threshold)


@dataclass
class Row:
    """One workload's figures (NaN where the run gave none; `error` when it failed)."""

    workload: str
    version: str
    threshold: float
    pods_per_s: float = math.nan
    cpu_ceiling: float = math.nan
    load_at_start: float = math.nan
    error: str = ""
    cpu_cores: dict[str, float] = field(default_factory=dict)
    """Each process's CPU in the measured phase, in cores (bench scheduler_perf's cpu_cores)."""
    selector: ThresholdSelector = field(default_factory=ThresholdSelector)
    value: float = math.nan
    """The measured value of the threshold's data item (pods/s for the throughput, else ms)."""
    met: bool | None = None

    @property
    def ratio(self) -> float:
        """The value over the threshold (above 1 meets a throughput threshold, under 1 an
        expectLower one)."""
        value = self.pods_per_s if self.selector.name == THROUGHPUT else self.value
        return ratio(value, self.threshold)

    @property
    def met_text(self) -> str:
        return "-" if self.met is None else ("yes" if self.met else "NO")

    @property
    def of_ceiling(self) -> float:
        return ratio(self.pods_per_s, self.cpu_ceiling)

    @property
    def busiest(self) -> str:
        """The process that used the most CPU in the measured phase and its cores
        ("apiserver 0.97"); "-" when the run gave none."""
        known = {k: v for k, v in self.cpu_cores.items() if not math.isnan(v)}
        if not known:
            return "-"
        name = max(known, key=known.__getitem__)
        return f"{name} {fmt(known[name], 2)}"


def config_path(checkout: Path, name: str) -> Path:
    return checkout / SCHEDULER_PERF_DIR / name / "performance-config.yaml"


def thresholded(path: Path) -> dict[str, tuple[float, object, ThresholdSelector]]:
    """Every `TestCase/Workload` of the file that carries a threshold, with its test case as
    the YAML has it and the data item the threshold applies to, read from the YAML itself (a
    workload kemu refuses at every version still has one to report)."""
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise WorkloadError(f"{path}: {e}") from None
    out: dict[str, tuple[float, object, ThresholdSelector]] = {}
    for case in data if isinstance(data, list) else []:
        if not isinstance(case, dict):
            continue
        for w in case.get("workloads") or []:
            if not isinstance(w, dict) or "threshold" not in w:
                continue
            name = f"{case.get('name')}/{w.get('name')}"
            # a number, or one per topic (dra/'s `threshold: {dra: 56}`): the file's
            value = workload_threshold(w["threshold"], f"{name}.threshold", path.parent)
            try:
                selector = threshold_selector(case, w)
            except WorkloadError:
                selector = ThresholdSelector()  # the plan gives the reason it runs nowhere
            out[name] = (value, case, selector)
    return out


def plan(paths: Sequence[Path]) -> list[Planned]:
    """Each thresholded workload of `paths` at the newest of kemu's emulated versions at
    which its file's settings are accepted, in file order; or why it runs at none (the
    reason kemu gives at its newest version). A test case that two files hold alike
    (upstream's misc/ and default_preemption/ both have PreemptionAsync and Unschedulable)
    is planned once, from the first (its templates resolve to the same files: both
    directories sit side by side)."""
    versions = [Version(1, m) for m in range(MAX_VERSION.minor, MIN_VERSION.minor - 1, -1)]
    out: list[Planned] = []
    seen: dict[str, object] = {}
    """Workload -> the test case it was planned from."""
    for path in paths:
        wanted: dict[str, tuple[float, ThresholdSelector]] = {}
        for name, (threshold, case, selector) in thresholded(path).items():
            if name in seen and seen[name] == case:
                continue  # planned already, from an earlier file
            seen[name] = case
            wanted[name] = (threshold, selector)
        found: dict[str, Version] = {}
        reasons: dict[str, str] = {}
        for v in versions:
            loaded = load_workload_file(path, emulated_version=v)
            for w in loaded.workloads:
                found.setdefault(w.full_name, v)
            if v == MAX_VERSION:
                for s in loaded.skipped:
                    for name in wanted:
                        if name == s.name or name.startswith(s.name + "/"):
                            reasons.setdefault(name, s.reason)
        for name, (threshold, selector) in wanted.items():
            reason = reasons.get(name, "unknown")
            out.append(Planned(name, path, threshold, found.get(name), reason, selector))
    return out


def run_planned(p: Planned, timeout: float) -> Row:
    """Runs one planned workload through `bench scheduler_perf` and reads its --json."""
    assert p.version is not None
    row = Row(p.workload, str(p.version), p.threshold, selector=p.selector)
    with tempfile.TemporaryDirectory(prefix="kemu-bench-thresholds-") as tmp:
        out = Path(tmp) / "result.json"
        argv = [
            "--config", str(p.file),
            "--workload", p.workload,
            "--emulated-version", str(p.version),
            "--timeout", str(timeout),
            "--json", str(out),
        ]  # fmt: skip
        code = scheduler_perf.main(argv)
        if not out.exists():
            row.error = f"bench scheduler_perf exited {code} without a result"
            return row
        results: list[dict[str, Any]] = json.loads(out.read_text())["results"]
    if not results:
        row.error = "no result"
        return row
    first = results[0]
    row.error = first.get("error") or ""
    row.pods_per_s = _number((first.get("throughput") or {}).get("average"))
    row.value = _number(first.get("threshold_value"))
    met = first.get("threshold_met")
    row.met = met if isinstance(met, bool) else None
    row.cpu_ceiling = _number(first.get("cpu_ceiling"))
    cores = first.get("cpu_cores") or {}
    row.cpu_cores = {str(k): _number(v) for k, v in cores.items()}
    loads = first.get("load_avg_start") or []
    row.load_at_start = _number(loads[0] if loads else None)
    return row


def _number(value: object) -> float:
    return float(value) if isinstance(value, int | float) else math.nan


def render(rows: Sequence[Row], refused: Sequence[Planned], host: str = "") -> str:
    """The table (under a line naming `host`'s CPU, when given)."""
    header = ("workload", "emulated", "pods/s", "threshold", "value", "met", "ratio",
              "CPU ceiling", "of ceiling", "busiest (cores)", "load at start")  # fmt: skip
    lines = [f"host: {host}", ""] if host else []
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for r in rows:
        if r.error:
            cells = [r.workload, r.version, "error", _threshold_cell(r), r.error]
        else:
            cells = [
                r.workload,
                r.version,
                fmt(r.pods_per_s, 1),
                _threshold_cell(r),
                fmt(r.value, 2 if r.selector.name != THROUGHPUT else 1),
                r.met_text,
                f"{fmt(r.ratio, 2)}x",
                fmt(r.cpu_ceiling, 1),
                fmt(r.of_ceiling, 2),
                r.busiest,
                fmt(r.load_at_start, 2),
            ]
        lines.append(_table_line(cells, len(header)))
    for p in refused:
        cells = [p.workload, "none", "-", p.threshold_text, p.reason]
        lines.append(_table_line(cells, len(header)))
    return "\n".join(lines)


def _threshold_cell(r: Row) -> str:
    return r.selector.bound(r.threshold)


def _table_line(cells: Sequence[str], columns: int) -> str:
    """One Markdown table row, its missing last cells left empty."""
    return "| " + " | ".join([*cells, *[""] * (columns - len(cells))]) + " |"


def render_plan(planned: Sequence[Planned]) -> str:
    return "\n".join(
        f"{p.workload}  threshold {p.threshold_text}  "
        + (f"at emulated version {p.version}" if p.version else f"runs at none: {p.reason}")
        for p in planned
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench thresholds",
        description="every thresholded workload of upstream's scheduler_perf files, at the "
        "newest emulated version that accepts it, and one table (issue #36)",
    )
    parser.add_argument(
        "--k8s",
        metavar="DIR",
        default=os.environ.get(CHECKOUT_ENV) or DEFAULT_CHECKOUT,
        help=f"a kubernetes/kubernetes checkout (default: ${CHECKOUT_ENV} or {DEFAULT_CHECKOUT})",
    )
    parser.add_argument(
        "--files",
        default=",".join(FILES),
        help="which of upstream's scheduler_perf directories (default: %(default)s)",
    )
    parser.add_argument("--workload", action="append", default=[], help="only these (repeat)")
    parser.add_argument("--list", action="store_true", help="print the plan, run nothing")
    parser.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT, help="seconds for one workload"
    )
    return parser


def main(
    argv: Sequence[str] | None = None, run: Callable[[Planned, float], Row] = run_planned
) -> int:
    args = build_parser().parse_args(argv)
    names = [n.strip() for n in args.files.split(",") if n.strip()]
    unknown = [n for n in names if n not in FILES]
    if unknown:
        print(f"bench thresholds: --files: unknown {', '.join(unknown)}", file=sys.stderr)
        return 2
    paths = [config_path(Path(args.k8s), n) for n in names]
    if args.files == ",".join(FILES):
        # The default files a checkout predates (gangscheduling/ is 1.36's) are left out.
        optional = {config_path(Path(args.k8s), n) for n in OPTIONAL_FILES}
        for absent in [x for x in paths if not x.is_file() and x in optional]:
            print(f"bench thresholds: no {absent}: left out", file=sys.stderr)
            paths.remove(absent)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"bench thresholds: --k8s: no {missing[0]}", file=sys.stderr)
        return 2
    try:
        planned = plan(paths)
    except WorkloadError as e:
        print(f"bench thresholds: {e}", file=sys.stderr)
        return 2
    if args.workload:
        known = {p.workload for p in planned}
        if bad := [w for w in args.workload if w not in known]:
            print(f"bench thresholds: --workload: no thresholded {bad[0]!r}", file=sys.stderr)
            return 2
        planned = [p for p in planned if p.workload in args.workload]
    if args.list:
        print(render_plan(planned))
        return 0
    refused = [p for p in planned if p.version is None]
    host = host_cpu()
    rows: list[Row] = []
    for p in planned:
        if p.version is None:
            continue
        rows.append(run(p, args.timeout))
        # (each row as it comes, and the JSON so far: a long run stopped midway keeps what
        # it measured)
        print(render_progress(rows[-1], len(rows), len(planned) - len(refused)), file=sys.stderr)
        if args.json:
            write_json(Path(args.json), rows, refused, host)
    print(render(rows, refused, host))
    if args.json:
        write_json(Path(args.json), rows, refused, host)
    return 1 if any(r.error for r in rows) else 0


def render_progress(row: Row, done: int, total: int) -> str:
    """One line per finished run, for stderr."""
    figures = (
        f"error: {row.error}"
        if row.error
        else _progress_value(row) + f", {fmt(row.ratio, 2)}x of {row.threshold:g}, "
        f"{fmt(row.of_ceiling, 2)} of its CPU ceiling {fmt(row.cpu_ceiling, 1)}, busiest "
        f"{row.busiest}"
    )
    return f"[{done}/{total}] {row.workload} (emulated {row.version}): {figures}"


def _progress_value(row: Row) -> str:
    if row.selector.name == THROUGHPUT:
        return f"{fmt(row.pods_per_s, 1)} pods/s"
    return (
        f"{fmt(row.value, 2)} ms {row.selector.name} {row.selector.data_bucket} (threshold "
        f"{'met' if row.met else 'NOT met' if row.met is False else '-'}), "
        f"{fmt(row.pods_per_s, 1)} pods/s"
    )


def write_json(path: Path, rows: Sequence[Row], refused: Sequence[Planned], host: str) -> None:
    doc = {
        "host": host,
        "rows": jsonable(list(rows)),
        "refused": [
            {
                "workload": p.workload,
                "threshold": p.threshold,
                "metric": p.threshold_text,
                "reason": p.reason,
            }
            for p in refused
        ],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
