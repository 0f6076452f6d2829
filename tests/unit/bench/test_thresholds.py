"""bench thresholds (issue #36): the plan puts each thresholded workload of upstream's files
at the newest emulated version that accepts it, or says why none does; the table reads the
runs' figures. The runs are faked here (each takes a cluster); test_bench_thresholds in the
integration suite runs one for real."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from bench.thresholds import Planned, Row, config_path, main, plan
from kemu.component.version import Version

FILE = """
- name: Good
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 1, collectMetrics: true}
  workloads:
  - {name: fast, threshold: 100}
  - {name: locked, threshold: 50, featureGates: {NodeDeclaredFeatures: false}}
  - {name: untimed}
- name: Dra
  workloadTemplate:
  - {opcode: createResourceClaims, templatePath: t.yaml}
  workloads:
  - {name: a, threshold: 10}
"""


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    path = config_path(tmp_path, "misc")
    path.parent.mkdir(parents=True)
    path.write_text(FILE)
    return tmp_path


def test_each_thresholded_workload_runs_at_the_newest_version_that_accepts_it(
    checkout: Path,
) -> None:
    planned = {p.workload: p for p in plan([config_path(checkout, "misc")])}
    assert set(planned) == {"Good/fast", "Good/locked", "Dra/a"}  # untimed has none
    assert planned["Good/fast"].version == Version(1, 37)
    # NodeDeclaredFeatures is locked to true at 1.37: the newest version it can be off is 1.36
    assert planned["Good/locked"].version == Version(1, 36)
    assert planned["Dra/a"].version is None and "createResourceClaims" in planned["Dra/a"].reason


def test_the_table_has_each_run_and_each_workload_that_runs_nowhere(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran: list[tuple[str, str]] = []

    def fake_run(p: Planned, timeout: float) -> Row:
        ran.append((p.workload, str(p.version)))
        cores = {"scheduler": 0.4, "apiserver": 0.97, "etcd": math.nan}
        row = Row(p.workload, str(p.version), p.threshold, 150.0, 300.0, 1.5, cpu_cores=cores)
        row.value, row.met = 150.0, 150.0 >= p.threshold
        return row

    out = tmp_path / "t.json"
    assert main(["--k8s", str(checkout), "--files", "misc", "--json", str(out)], fake_run) == 0
    assert ran == [("Good/fast", "1.37"), ("Good/locked", "1.36")]
    table = capsys.readouterr().out
    assert table.startswith("host: ") and " cpus" in table.splitlines()[0]
    assert (
        "| Good/fast | 1.37 | 150.0 | 100 pods/s | 150.0 | yes | 1.50x | 300.0 | 0.50 "
        "| apiserver 0.97 | 1.50 |" in table
    )
    assert "| Good/locked | 1.36 | 150.0 | 50 pods/s | 150.0 | yes | 3.00x |" in table
    assert "| Dra/a | none | - | 10 pods/s |" in table
    data = json.loads(out.read_text())
    assert [r["workload"] for r in data["rows"]] == ["Good/fast", "Good/locked"]
    assert data["refused"][0]["workload"] == "Dra/a"
    assert data["host"] == table.splitlines()[0].removeprefix("host: ")


def test_list_runs_nothing_and_bad_arguments_are_one_line(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_run(p: Planned, timeout: float) -> Row:
        raise AssertionError("ran")

    assert main(["--k8s", str(checkout), "--files", "misc", "--list"], no_run) == 0
    assert "Good/locked  threshold 50 pods/s  at emulated version 1.36" in capsys.readouterr().out
    assert main(["--k8s", str(checkout), "--files", "nope"], no_run) == 2
    assert capsys.readouterr().err == "bench thresholds: --files: unknown nope\n"
    assert main(["--k8s", str(checkout / "x"), "--files", "misc"], no_run) == 2
    assert "--k8s: no " in capsys.readouterr().err
    assert main(["--k8s", str(checkout), "--files", "misc", "--workload", "X/y"], no_run) == 2
    assert "no thresholded 'X/y'" in capsys.readouterr().err


def test_a_failed_run_is_a_row_with_its_error_and_a_non_zero_exit(
    checkout: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing(p: Planned, timeout: float) -> Row:
        return Row(p.workload, str(p.version), p.threshold, error="TimeoutError: 3600 s")

    argv = ["--k8s", str(checkout), "--files", "misc", "--workload", "Good/fast"]
    assert main(argv, failing) == 1
    assert (
        "| Good/fast | 1.37 | error | 100 pods/s | TimeoutError: 3600 s |"
        in capsys.readouterr().out
    )
    assert math.isnan(Row("w", "1.37", 1.0).ratio)
    assert Row("w", "1.37", 1.0).busiest == "-"  # a run that measured no process


def test_a_test_case_two_files_hold_alike_is_planned_once(checkout: Path) -> None:
    # upstream's misc/ and default_preemption/ both hold PreemptionAsync and Unschedulable
    other = config_path(checkout, "default_preemption")
    other.parent.mkdir(parents=True)
    changed = FILE.replace("- {name: a, threshold: 10}", "- {name: a, threshold: 20}")
    other.write_text(changed)
    planned = plan([config_path(checkout, "misc"), other])
    names = [(p.workload, p.file.parent.name) for p in planned]
    # Good is alike in both: once, from misc; Dra differs (its threshold): both
    assert names == [
        ("Good/fast", "misc"),
        ("Good/locked", "misc"),
        ("Dra/a", "misc"),
        ("Dra/a", "default_preemption"),
    ]


def test_each_run_is_reported_as_it_ends_and_the_json_kept_so_far(
    checkout: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "t.json"
    seen_in_json: list[list[str]] = []

    def fake_run(p: Planned, timeout: float) -> Row:
        if out.exists():
            seen_in_json.append([r["workload"] for r in json.loads(out.read_text())["rows"]])
        return Row(p.workload, str(p.version), p.threshold, 150.0, 300.0, 1.5)

    assert main(["--k8s", str(checkout), "--files", "misc", "--json", str(out)], fake_run) == 0
    assert seen_in_json == [["Good/fast"]]  # written after the first run, before the second
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "[1/2] Good/fast (emulated 1.37): 150.0 pods/s, 1.50x of 100, 0.50 of its CPU "
        "ceiling 300.0, busiest -",
        "[2/2] Good/locked (emulated 1.36): 150.0 pods/s, 3.00x of 50, 0.50 of its CPU "
        "ceiling 300.0, busiest -",
    ]


GANGS = """
- name: GangScheduling
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - {opcode: createPods, count: 3, collectMetrics: true}
  workloads:
  - {name: small, params: {nodes: 1}}
  - name: big
    threshold: 8
    thresholdMetricSelector:
      name: scheduler_podgroup_scheduling_attempt_duration_seconds
      labels: {result: scheduled}
      dataBucket: Average
      expectLower: true
    params: {nodes: 5}
"""


def test_a_gang_threshold_is_on_the_pod_group_attempt_duration_and_lower_is_met(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gangscheduling/'s thresholds: the pod-group attempt duration's average in ms, met when
    under the threshold (expectLower)."""
    path = config_path(tmp_path, "gangscheduling")
    path.parent.mkdir(parents=True)
    path.write_text(GANGS)
    (p,) = plan([path])
    assert (p.workload, p.threshold, p.version) == ("GangScheduling/big", 8.0, Version(1, 37))
    assert p.selector.expect_lower and p.selector.labels == {"result": "scheduled"}

    def fake_run(p: Planned, timeout: float) -> Row:
        row = Row(p.workload, str(p.version), p.threshold, 600.0, selector=p.selector)
        row.value, row.met = 9.5, False  # 9.5 ms: over the threshold, not met
        return row

    assert main(["--k8s", str(tmp_path), "--files", "gangscheduling", "--list"], fake_run) == 0
    listed = capsys.readouterr().out
    assert "GangScheduling/big  threshold < 8 ms scheduler_podgroup_scheduling_attempt_" in listed
    assert main(["--k8s", str(tmp_path), "--files", "gangscheduling"], fake_run) == 0
    table = capsys.readouterr().out
    assert (
        "| GangScheduling/big | 1.37 | 600.0 | < 8 ms scheduler_podgroup_scheduling_attempt_"
        "duration_seconds{result=scheduled} Average | 9.50 | NO | 1.19x |" in table
    )
