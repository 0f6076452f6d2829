"""What a chaos CI run must show, on its report as `python -m kemu.chaos --json` writes it
(kemu.chaos.report.Report.to_json): shared by the in-process runs of test_chaos.py and the
command-line run whose picture test_timeline_browser.py opens in Chromium."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from kemu.chaos.schedule import KINDS


def assert_the_run_held(report: Mapping[str, Any], table: str) -> None:
    """Tens of faults, every kind at least once, scale-ups and scale-downs, pods bound
    during the run and every pod left that fits a node bound, a binding after a restart, and
    no invariant broken; `table` (the run's summary) is shown with a failure."""
    shown = "\n" + table
    if report["fencing"]:
        assert report["stale_leader_writes"] == 0, shown
    assert report["faults"] >= 15, shown
    assert set(report["faults_by_kind"]) == set(KINDS), report["faults_by_kind"]
    scaling = report["scaling"]
    assert scaling is not None and scaling["scale_ups"] > 0, scaling
    assert scaling["nodes_deleted"] > 0, scaling
    # The profile's pods go 20 s after creation, and the workload ends before the check: the
    # pods left then are those whose deletion failed under a fault, none in a run whose faults
    # outlast the workload. What counts is that pods were bound, and that each left that fits
    # is bound.
    assert report["pods_ever_bound"] > 0, shown
    assert report["pods_bound"] == report["pods_expected"], shown
    assert report["recovery_s"]["count"] > 0, "no binding after any restart" + shown
    assert not report["violations"], shown + "\n" + json.dumps(report["violations"], indent=1)
