from __future__ import annotations

import json
from pathlib import Path

from kemu.chaos.report import Report, TimelineEntry


def report(violations: list[str]) -> Report:
    return Report(
        seed=9,
        profile="ci",
        faults=2,
        timeline=[TimelineEntry(1.0, "SIGKILL scheduler-a"), TimelineEntry(1.5, "restarted")],
        violations=violations,
        pods_created=10,
        pods_expected=8,
        pods_bound=8,
        failed_writes=1,
        acknowledged_writes=12,
        recorded_versions=40,
        recovery_s=[0.5, 1.5],
        failover_s=[],
        settle_s=0.2,
        settle_timeout=60.0,
    )


def test_a_passing_run_prints_the_table_without_the_timeline() -> None:
    text = report([]).table()
    assert "result" in text and "PASS" in text
    assert "recovery after restart p50 / p99         0.50s / 1.50s (n=2)" in text
    assert "SIGKILL" not in text


def test_a_failing_run_prints_the_violations_the_timeline_and_the_replay() -> None:
    text = report(["ns/p was bound to n1 and then has nodeName 'n2'"]).table()
    assert "FAIL" in text
    assert "  - ns/p was bound to n1" in text
    assert "t+   1.00s  SIGKILL scheduler-a" in text
    assert "replay: python -m kemu.chaos --profile ci --seed 9" in text


def test_the_json_has_the_documented_keys(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    report(["x"]).write_json(str(path))
    doc = json.loads(path.read_text())
    assert doc["seed"] == 9 and doc["faults"] == 2 and doc["violations"] == ["x"]
    assert (doc["pods_expected"], doc["pods_bound"]) == (8, 8)
    assert doc["recovery_s"] == {"p50": 0.5, "p99": 1.5, "count": 2}
    assert doc["leader_failover_s"]["p50"] is None


def test_stale_leader_writes_are_a_figure_and_listed_and_fencing_is_in_the_replay(
    tmp_path: Path,
) -> None:
    r = report([])
    r.stale_leader_writes = ["scheduler-a (a-1) bound ns/b at resourceVersion 31 while b-1 held"]
    r.fenced_writes = 2
    text = r.table()
    assert "stale leader writes / fenced" in text and "1 / 2" in text and "PASS" in text
    assert "upstream's unfenced window, not a violation" in text
    assert "  - scheduler-a (a-1) bound ns/b" in text
    r.fencing, r.violations = True, ["stale leader write despite fencing: x"]
    assert "--seed 9 --fencing" in r.table()
    path = tmp_path / "out.json"
    r.write_json(str(path))
    doc = json.loads(path.read_text())
    assert (doc["stale_leader_writes"], doc["fenced_writes"], doc["fencing"]) == (1, 2, True)
    assert doc["stale_leader_write_details"] == r.stale_leader_writes


def test_faults_by_kind_and_the_scaling_figures_are_in_the_table_and_the_json() -> None:
    r = report([])
    r.faults_by_kind = {"kill etcd-member": 2}
    r.scaling = {"waves": 3, "scale_ups": 2, "scale_downs": 4, "nodes_deleted": 5, "max_target": 4}
    text = r.table()
    assert "  kill etcd-member" in text
    assert "3, 2, 4, 5 (max target 4)" in text
    doc = r.to_json()
    assert doc["faults_by_kind"] == {"kill etcd-member": 2}
    assert doc["scaling"] == r.scaling


def test_the_clock_mode_is_in_the_table_the_json_and_the_replay() -> None:
    real = report(["x"])
    assert "--clock" not in real.table() and real.to_json()["clock"] == "real"
    virtual = report(["x"])
    virtual.clock = "virtual"
    text = virtual.table()
    assert "clock                                    virtual" in text
    assert "replay: python -m kemu.chaos --profile ci --seed 9 --clock virtual" in text
    assert virtual.to_json()["clock"] == "virtual"
