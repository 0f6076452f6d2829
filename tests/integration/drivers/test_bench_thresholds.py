"""bench thresholds on real processes: one small thresholded workload of an upstream-shaped
file runs through bench scheduler_perf, and its row has the run's pods/s, CPU ceiling, each
process's cores and load (issue #36's one command for the table)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.thresholds import config_path, main

pytestmark = [pytest.mark.integration]

FILE = """
- name: SchedulingBasic
  workloadTemplate:
  - {opcode: createNodes, countParam: $initNodes}
  - {opcode: createPods, countParam: $measurePods, collectMetrics: true}
  workloads:
  - {name: 5Nodes, threshold: 1, params: {initNodes: 5, measurePods: 20}}
"""


def test_a_thresholded_workload_runs_and_its_row_has_the_runs_figures(tmp_path: Path) -> None:
    path = config_path(tmp_path, "misc")
    path.parent.mkdir(parents=True)
    path.write_text(FILE)
    out = tmp_path / "rows.json"
    assert main(["--k8s", str(tmp_path), "--files", "misc", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())["rows"]
    assert (row["workload"], row["version"], row["error"]) == ("SchedulingBasic/5Nodes", "1.37", "")
    assert row["pods_per_s"] > 1 and row["cpu_ceiling"] > 0 and row["load_at_start"] >= 0
    # the busiest process is named from the run's own CPU figures
    assert set(row["cpu_cores"]) >= {"scheduler", "apiserver", "etcd"}
    assert all(v >= 0 for v in row["cpu_cores"].values())
