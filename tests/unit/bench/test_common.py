"""The statistics, pacing, /proc parsing and table helpers of the benchmarks."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

import anyio
import anyio.lowlevel
import pytest

from bench import watchers
from bench.apiserver import Report, Row, WatchReport, add_ratios, parse_etcd_counters, render
from bench.common import (
    CpuMeter,
    LatencyStats,
    bench_main,
    cpu_ceiling,
    cpu_ms_per_item,
    describe_cpu,
    fmt,
    format_table,
    jsonable,
    pace,
    parse_stat_cpu_ticks,
    parse_vmrss_kib,
    percentile,
    ratio,
    run_concurrent,
    schedule,
    summarize,
)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile(values, 100) == 100.0
    assert percentile(values, 0.5) == 1.0
    assert percentile([7.0], 99) == 7.0
    # Ten values: p99 is the largest, p50 the fifth.
    ten = [float(v) for v in range(10)]
    assert percentile(ten, 99) == 9.0
    assert percentile(ten, 50) == 4.0


def test_percentile_of_nothing_is_nan_and_bad_q_is_refused() -> None:
    assert math.isnan(percentile([], 50))
    with pytest.raises(ValueError):
        percentile([1.0], 0)
    with pytest.raises(ValueError):
        percentile([1.0], 101)


def test_summarize_sorts_its_input() -> None:
    stats = summarize([0.003, 0.001, 0.002, 0.010])
    assert stats.count == 4
    assert stats.p50 == 0.002
    assert stats.p99 == 0.010
    assert stats.max == 0.010
    assert stats.mean == pytest.approx(0.004)
    assert stats.as_ms()["p50_ms"] == 2.0
    empty = summarize([])
    assert empty.count == 0 and math.isnan(empty.p99)


def test_ratio_is_nan_without_a_denominator() -> None:
    assert ratio(500.0, 1000.0) == 0.5
    assert math.isnan(ratio(1.0, 0.0))
    assert math.isnan(ratio(math.nan, 2.0))


def test_schedule_is_absolute_from_the_start() -> None:
    deadlines = schedule(10.0, 1000.0, 5)
    assert deadlines == pytest.approx([10.0, 10.001, 10.002, 10.003, 10.004])
    # No accumulated drift over many events.
    assert schedule(0.0, 3.0, 3001)[-1] == pytest.approx(1000.0)
    with pytest.raises(ValueError):
        schedule(0.0, 0.0, 1)


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.mark.anyio
async def test_pace_releases_at_deadlines_and_catches_up_after_a_stall() -> None:
    t = FakeTime()
    released: list[tuple[int, float, float]] = []
    async for i, lateness in pace(6, 10.0, clock=t.clock, sleep=t.sleep):
        released.append((i, t.now, lateness))
        if i == 1:
            t.now += 0.25  # the consumer stalls for 2.5 intervals
    times = [at for _, at, _ in released]
    # 0 at once, 1 at +0.1; the stall ends at 100.35, so 2 (100.2) and 3 (100.3) go at once,
    # late; 4 and 5 are back on the original schedule.
    assert times == pytest.approx([100.0, 100.1, 100.35, 100.35, 100.4, 100.5])
    assert [late for _, _, late in released] == pytest.approx([0, 0, 0.15, 0.05, 0, 0])
    assert [i for i, _, _ in released] == list(range(6))


@pytest.mark.anyio
async def test_run_concurrent_bounds_in_flight_calls_and_counts_errors() -> None:
    in_flight = 0
    peak = 0
    seen: list[int] = []

    async def op(i: int) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.lowlevel.checkpoint()
        seen.append(i)
        in_flight -= 1
        if i % 10 == 3:
            raise RuntimeError(f"boom {i}")

    result = await run_concurrent(50, 4, op)
    assert sorted(seen) == list(range(50))
    assert peak == 4
    assert result.errors == 5
    assert len(result.latencies) == 45
    assert result.first_error.startswith("RuntimeError: boom")
    assert result.elapsed > 0


def test_proc_parsers_handle_odd_command_names() -> None:
    # Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    # cmajflt utime stime ...
    stat = "4242 (we ird) (name)) S 1 2 3 4 5 6 7 8 9 10 250 75 0 0 20 0 1 0 100 200 300\n"
    assert parse_stat_cpu_ticks(stat) == 325
    status = "Name:\tetcd\nVmPeak:\t  9000 kB\nVmRSS:\t   51234 kB\nThreads:\t12\n"
    assert parse_vmrss_kib(status) == 51234
    with pytest.raises(ValueError):
        parse_vmrss_kib("Name:\tx\n")


def test_cpu_meter_reads_this_process() -> None:
    ticks = iter([0.0, 2.0])
    meter = CpuMeter({"self": os.getpid(), "gone": None}, clock=lambda: next(ticks))
    meter.start()
    sum(range(10_000))
    cores = meter.stop()
    assert cores["self"] >= 0.0
    assert math.isnan(cores["gone"])
    assert meter.wall == 2.0


def test_cpu_ms_per_item_is_each_process_cpu_time_over_the_items() -> None:
    # 0.5 cores for 4 s over 100 pods: 2 cpu s, 20 ms a pod.
    per = cpu_ms_per_item({"apiserver": 0.5, "etcd": 0.25}, 4.0, 100)
    assert per == pytest.approx({"apiserver": 20.0, "etcd": 10.0})
    assert all(math.isnan(v) for v in cpu_ms_per_item({"a": 0.5}, 4.0, 0).values())
    assert all(math.isnan(v) for v in cpu_ms_per_item({"a": 0.5}, math.nan, 10).values())


def test_cpu_ceiling_is_the_rate_that_keeps_every_core_busy() -> None:
    # 20 + 5 ms of CPU per pod: 2 cores do 2000 ms/s, 80 pods/s.
    assert cpu_ceiling({"apiserver": 20.0, "etcd": 5.0}, 2) == pytest.approx(80.0)
    assert cpu_ceiling({"apiserver": 20.0, "etcd": 5.0}, 1) == pytest.approx(40.0)
    # A missing figure makes the ceiling unknown, not higher.
    assert math.isnan(cpu_ceiling({"apiserver": 20.0, "etcd": math.nan}, 2))
    assert math.isnan(cpu_ceiling({}, 2))
    assert math.isnan(cpu_ceiling({"a": 1.0}, None))


def test_format_table_aligns_columns() -> None:
    text = format_table(["name", "ops/s"], [["apiserver", "1200"], ["etcd", "4700"]])
    lines = text.splitlines()
    assert lines[0] == "name       ops/s"
    assert lines[1] == "---------  -----"
    assert lines[2] == "apiserver   1200"
    assert lines[3] == "etcd        4700"
    with pytest.raises(ValueError):
        format_table(["a"], [["1", "2"]])


def test_fmt_and_jsonable_turn_missing_values_into_dashes_and_nulls() -> None:
    assert fmt(math.nan) == "-"
    assert fmt(None) == "-"
    assert fmt(1.2345, 2) == "1.23"
    stats = LatencyStats(0, math.nan, math.nan, math.nan, math.nan)
    assert jsonable({"s": stats, "xs": (1.0, math.nan)}) == {
        "s": {"count": 0, "p50": None, "p99": None, "max": None, "mean": None},
        "xs": [1.0, None],
    }


def test_watch_write_names_round_trip() -> None:
    assert watchers.write_index(watchers.write_name(1234)) == 1234
    assert watchers.write_index("watch-start-1") is None
    assert watchers.write_index("w-x") is None


def _row(system: str, op: str, clients: int, ops: float) -> Row:
    return Row(system, op, clients, 100, 0, ops, summarize([0.001, 0.002]), {"apiserver": 0.5})


def test_report_pairs_each_apiserver_cell_with_etcd() -> None:
    rows = [
        _row("apiserver", "create", 16, 1200.0),
        _row("etcd", "create", 16, 4800.0),
        _row("apiserver", "get", 16, 2000.0),
    ]
    add_ratios(rows)
    assert rows[0].vs_etcd == pytest.approx(0.25)
    assert math.isnan(rows[1].vs_etcd)
    assert math.isnan(rows[2].vs_etcd)  # no etcd cell to compare with
    watch = WatchReport(
        watchers=10,
        target_rate=1000.0,
        writes=5000,
        write_errors=0,
        achieved_rate=998.0,
        max_lateness_s=0.004,
        delivered=50000,
        missing=0,
        duplicates=0,
        unexpected=0,
        exactly_once=True,
        watcher_errors=[],
        latency=summarize([0.002, 0.004]),
        create_latency=summarize([0.001]),
        ack_latency=summarize([0.001]),
        cpu_cores={"watchers": 0.8},
    )
    text = render(Report(quick=True, n=100, client_mode="shared", rows=rows, watch=watch))
    table = text.splitlines()
    create = next(line for line in table if line.startswith("apiserver") and "create" in line)
    assert "0.25" in create.split()
    assert any("watch x10" in line for line in table)
    assert "exactly once: yes" in text


def test_the_hosts_cpu_is_named_with_its_speed() -> None:
    cpuinfo = "processor\t: 0\nmodel name\t: AMD EPYC\ncpu MHz\t\t: 2445.424\n\nprocessor\t: 1\n"
    assert describe_cpu(cpuinfo, 2) == "AMD EPYC at 2445 MHz, 2 cpus"
    assert describe_cpu("", None) == "unknown cpu"


def test_etcd_counters_are_summed_over_their_labels_and_others_ignored() -> None:
    text = """# HELP etcd_mvcc_range_total Total number of ranges seen by this member.
# TYPE etcd_mvcc_range_total counter
etcd_mvcc_range_total 41
etcd_mvcc_put_total{lease="none"} 12
etcd_mvcc_put_total{lease="some"} 3
etcd_mvcc_put_total_bogus 7
etcd_server_proposals_committed_total 2500
"""
    assert parse_etcd_counters(text) == {"range": 41.0, "put": 15.0}


def test_a_cells_cost_per_op_is_shown_beside_its_rate() -> None:
    row = _row("apiserver", "bind", 16, 1000.0)
    row.cpu_ms_per_op = {"apiserver": 0.512, "etcd": 0.2}
    row.etcd_per_op = {"put": 1.0, "delete": 1.0, "range": 4.0}
    text = render(Report(quick=True, n=100, client_mode="shared", rows=[row]))
    header, _, line = text.splitlines()[2:5]
    assert "api ms/op" in header and "etcd writes/op" in header
    # (after the three cores columns: api ms/op, etcd ms/op, etcd writes/op, etcd ranges/op)
    assert line.split()[12:16] == ["0.512", "0.200", "2.00", "4.00"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=1)
    p.add_argument("--json", default="")
    p.add_argument("-v", "--verbose", action="store_true")
    return p


def _options(args: argparse.Namespace) -> tuple[int, str]:
    if args.n < 1:
        raise ValueError("--n: must be at least 1")
    return args.n, args.json


def _main(argv: list[str]) -> int:
    return bench_main(
        "demo",
        _parser(),
        argv,
        _options,
        lambda opts: {"twice": opts[0] * 2},
        lambda opts, r: f"{opts[0]} -> {r['twice']}",
        json_path=lambda opts: opts[1],
        failed=lambda r: r["twice"] > 10,
    )


def test_bench_main_runs_prints_and_writes_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert _main(["--n", "3", "--json", str(out)]) == 0
    assert capsys.readouterr().out == "3 -> 6\n"
    data = json.loads(out.read_text())
    assert data["result"] == {"twice": 6} and data["options"] == [3, str(out)]
    assert data["host"]["cpus"] == os.cpu_count()
    assert _main(["--n", "6"]) == 1  # failed


def test_bench_main_bad_options_are_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main(["--n", "0"]) == 2
    assert capsys.readouterr().err == "bench demo: --n: must be at least 1\n"
