"""Helpers shared by the benchmarks: latency statistics, concurrent and paced load, an aligned
text table, per-process CPU and memory from /proc, and the command line around a run
(`bench_main`: flags to options, logging, Ctrl-C, the printed table and the --json file).

Latencies are in seconds everywhere inside; only the printed table shows milliseconds.
"""

from __future__ import annotations

import argparse
import enum
import json
import logging
import math
import os
import re
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

import anyio

from kemu.testing.processes import status_kib

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]

_CLK_TCK: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


# ---------------------------------------------------------------------- statistics


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The nearest-rank q-th percentile (0 < q <= 100) of already sorted values.

    Nearest rank: the smallest value such that at least q% of the values are <= it, so the
    result is always an observed value (p100 is the max). NaN for no values.
    """
    if not 0 < q <= 100:
        raise ValueError(f"percentile {q} is not in (0, 100]")
    if not sorted_values:
        return math.nan
    rank = math.ceil(q / 100 * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


@dataclass(frozen=True)
class LatencyStats:
    """Summary of a set of latencies, in seconds (NaN when count is 0)."""

    count: int
    p50: float
    p99: float
    max: float
    mean: float

    def as_ms(self) -> dict[str, float | int]:
        out: dict[str, float | int] = {"count": self.count}
        for key in ("p50", "p99", "max", "mean"):
            value = getattr(self, key)
            out[key + "_ms"] = round(value * 1000, 3) if not math.isnan(value) else math.nan
        return out


def summarize(latencies: Sequence[float]) -> LatencyStats:
    values = sorted(latencies)
    if not values:
        return LatencyStats(0, math.nan, math.nan, math.nan, math.nan)
    return LatencyStats(
        count=len(values),
        p50=percentile(values, 50),
        p99=percentile(values, 99),
        max=values[-1],
        mean=math.fsum(values) / len(values),
    )


def rate(count: int, elapsed: float) -> float:
    """Operations per second; NaN when no time elapsed."""
    return count / elapsed if elapsed > 0 else math.nan


def ratio(a: float, b: float) -> float:
    """a / b, NaN when either is missing or b is 0."""
    if math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


# ---------------------------------------------------------------------- load generation


@dataclass
class RunResult:
    """Latencies (seconds, in completion order), errors, and the wall time of one run."""

    latencies: list[float]
    errors: int
    elapsed: float
    first_error: str = ""

    @property
    def ops_per_second(self) -> float:
        return rate(len(self.latencies), self.elapsed)


async def run_concurrent(
    count: int,
    concurrency: int,
    op: Callable[[int], Awaitable[object]],
    *,
    clock: Clock = time.perf_counter,
) -> RunResult:
    """Call `op(0) ... op(count - 1)` with at most `concurrency` calls in flight.

    `concurrency` workers each take the next index as soon as their previous call returns (a
    closed loop, like N clients). An exception from `op` counts as an error, with no latency.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be at least 1")
    latencies: list[float] = []
    errors = 0
    first_error = ""
    next_index = 0

    async def worker() -> None:
        nonlocal next_index, errors, first_error
        while next_index < count:
            i = next_index
            next_index += 1
            started = clock()
            try:
                await op(i)
            except Exception as e:
                errors += 1
                first_error = first_error or f"{type(e).__name__}: {e}"
            else:
                latencies.append(clock() - started)

    started = clock()
    async with anyio.create_task_group() as tg:
        for _ in range(min(concurrency, max(count, 1))):
            tg.start_soon(worker)
    return RunResult(latencies, errors, clock() - started, first_error)


def schedule(start: float, per_second: float, count: int) -> list[float]:
    """The absolute deadlines of `count` events paced at `per_second` from `start`.

    Deadline i is start + i / per_second, computed from the start rather than by adding
    intervals, so that a late event does not push back the ones after it.
    """
    if per_second <= 0:
        raise ValueError("the rate must be positive")
    return [start + i / per_second for i in range(count)]


async def pace(
    count: int,
    per_second: float,
    *,
    clock: Clock = time.monotonic,
    sleep: Sleep = anyio.sleep,
) -> AsyncIterator[tuple[int, float]]:
    """Yield (i, lateness) for i in range(count), each at its deadline on an absolute schedule.

    lateness is how far behind its deadline event i was released (>= 0). When the consumer
    falls behind, the following events are released at once until it catches up, so the
    achieved rate stays as close as possible to `per_second`.
    """
    deadlines = schedule(clock(), per_second, count)
    for i, deadline in enumerate(deadlines):
        now = clock()
        if now < deadline:
            await sleep(deadline - now)
            now = clock()
        yield i, max(0.0, now - deadline)


# ---------------------------------------------------------------------- processes


def parse_vmrss_kib(status_text: str) -> int:
    """VmRSS in KiB from the text of /proc/<pid>/status."""
    return status_kib(status_text, "VmRSS")


def parse_stat_cpu_ticks(stat_text: str) -> int:
    """utime + stime, in clock ticks, from the text of /proc/<pid>/stat.

    The command name (field 2) is in parentheses and may itself contain spaces and ')', so
    fields are counted after the last ')': utime and stime are fields 14 and 15 overall.
    """
    rest = stat_text[stat_text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state); field n is rest[n - 3].
    return int(rest[14 - 3]) + int(rest[15 - 3])


def describe_cpu(cpuinfo: str, cpus: int | None) -> str:
    """The host's CPU from /proc/cpuinfo's text ("AMD EPYC at 2445 MHz, 2 cpus"): figures
    measured on two hosts differ by their speed (seen: twice), so each table says which."""
    model = mhz = ""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "model name" and not model:
            model = value
        elif key == "cpu MHz" and not mhz:
            mhz = value
    out = model or "unknown cpu"
    if mhz:
        try:
            out += f" at {float(mhz):.0f} MHz"
        except ValueError:
            pass
    return f"{out}, {cpus} cpus" if cpus else out


def host_cpu() -> str:
    """describe_cpu of this host."""
    try:
        with open("/proc/cpuinfo") as f:
            text = f.read()
    except OSError:
        text = ""
    return describe_cpu(text, os.cpu_count())


def rss_kib(pid: int) -> int | None:
    """The resident set size of `pid` in KiB; None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return parse_vmrss_kib(f.read())
    except (OSError, ValueError):
        return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds used by `pid` so far; None if it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return parse_stat_cpu_ticks(f.read()) / _CLK_TCK
    except (OSError, ValueError, IndexError):
        return None


def live_cpu_seconds(pid: int) -> float:
    """`cpu_seconds` of a process the benchmark keeps alive (an AssertionError if it is gone)."""
    seconds = cpu_seconds(pid)
    assert seconds is not None, f"process {pid} is gone"
    return seconds


class CpuMeter:
    """CPU used by named processes between `start()` and `stop()`, as cores (cpu s / wall s)."""

    def __init__(self, pids: dict[str, int | None], *, clock: Clock = time.monotonic) -> None:
        self.pids = pids
        self._clock = clock
        self._start: dict[str, float | None] = {}
        self._t0 = 0.0
        self.wall = math.nan  # seconds between the last start() and stop()

    def start(self) -> None:
        self._t0 = self._clock()
        self._start = {name: _cpu(pid) for name, pid in self.pids.items()}

    def stop(self) -> dict[str, float]:
        wall = self._clock() - self._t0
        self.wall = wall
        out: dict[str, float] = {}
        for name, pid in self.pids.items():
            before, after = self._start.get(name), _cpu(pid)
            if before is None or after is None or wall <= 0:
                out[name] = math.nan
            else:
                out[name] = (after - before) / wall
        return out


def cpu_ms_per_item(cores: dict[str, float], wall: float, items: int) -> dict[str, float]:
    """CPU milliseconds each process spent per item (pod, preemptor) over a span of `wall`
    seconds in which it used `cores`: what one item costs each process."""
    if items <= 0 or math.isnan(wall) or wall <= 0:
        return {name: math.nan for name in cores}
    return {name: c * wall * 1000 / items for name, c in cores.items()}


def cpu_ceiling(ms_per_item: dict[str, float], cpus: int | None) -> float:
    """Items/s at which the processes' CPU per item (`cpu_ms_per_item`) would keep every one of
    the host's `cpus` cores busy: no run of that work can go faster on this host. NaN when a
    process's figure is missing."""
    total = math.fsum(ms_per_item.values())
    if not ms_per_item or math.isnan(total) or total <= 0 or not cpus:
        return math.nan
    return cpus * 1000 / total


def _cpu(pid: int | None) -> float | None:
    return cpu_seconds(pid) if pid is not None else None


# ---------------------------------------------------------------------- output


def fmt(value: object, digits: int = 1) -> str:
    """A table cell: floats with `digits` decimals, NaN and None as '-'."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:.{digits}f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A plain-text table: the first column left-aligned, the others right-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row {list(row)} has {len(row)} cells, expected {len(headers)}")
        widths = [max(w, len(cell)) for w, cell in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        parts = [
            cell.ljust(w) if i == 0 else cell.rjust(w)
            for i, (cell, w) in enumerate(zip(cells, widths, strict=True))
        ]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(headers), rule, *(line(r) for r in rows)])


def jsonable(value: Any) -> Any:
    """`value` with dataclasses turned into dicts and NaN into None (JSON has no NaN)."""
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        return jsonable(asdict(value))
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, enum.Enum):
        return value.value
    return value


# ---------------------------------------------------------------------- command line

OptionsT = TypeVar("OptionsT")
ResultT = TypeVar("ResultT")


def bench_main(
    name: str,
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None,
    options_from_args: Callable[[argparse.Namespace], OptionsT],
    run: Callable[[OptionsT], ResultT],
    render: Callable[[OptionsT, ResultT], str],
    *,
    json_path: Callable[[OptionsT], str | None],
    failed: Callable[[ResultT], bool],
) -> int:
    """`python -m bench <name>`: parses `argv` (the parser has -v/--verbose), turns the flags
    into options (a ValueError is one line on stderr, exit 2), runs, prints `render`'s text and
    writes {"host", "options", "result"} to the --json file if one is given. Exit 1 if the run
    `failed`, 130 on Ctrl-C."""
    args = parser.parse_args(argv)
    try:
        opts = options_from_args(args)
    except ValueError as e:
        print(f"bench {name}: {e}", file=sys.stderr)
        return 2
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        result = run(opts)
    except KeyboardInterrupt:
        print(f"bench {name}: interrupted; the cluster was stopped", file=sys.stderr)
        return 130
    print(render(opts, result))
    path = json_path(opts)
    if path:
        data = {
            "host": {"cpus": os.cpu_count()},
            "options": jsonable(opts),
            "result": jsonable(result),
        }
        Path(path).write_text(json.dumps(data, indent=2) + "\n")
    return 1 if failed(result) else 0


# ---------------------------------------------------------------------- profiles


_FRAME_LINE: Final = re.compile(r":\d+\)$")


def summarize_stacks(
    raw: str, top: int = 15, *, spine: float = 0.95
) -> tuple[int, list[tuple[str, int]], list[tuple[str, int]]]:
    """py-spy's raw (collapsed) output -> (total samples, top self frames, top inclusive frames).

    Each line is `frame;frame;...;leaf count`, a frame being `function (file:line)`. Frames are
    grouped per function (the line number is dropped); a function counts once per stack for
    the inclusive figure, however often it recurses. Frames found in at least `spine` of the
    samples (the event loop, the process's main) are left out of the inclusive list: they say
    nothing about where the time goes.
    """
    total = 0
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    for line in raw.splitlines():
        line = line.strip()
        if not line:
            continue
        stack, _, count_text = line.rpartition(" ")
        try:
            count = int(count_text)
        except ValueError:
            continue
        frames = [_FRAME_LINE.sub(")", f) for f in stack.split(";") if f]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for f in dict.fromkeys(frames):  # once per stack, in a stable order
            inclusive[f] += count
    informative = [(f, c) for f, c in inclusive.most_common() if c < spine * total]
    return total, own.most_common(top), informative[:top]
