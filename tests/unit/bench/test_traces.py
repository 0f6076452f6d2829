"""bench traces: the figures it takes from a replay's report, its table, and a SIGTERM's
way to the command it runs."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bench.traces import differences, peak_rss_mib, row, table
from kemu.testing.processes import python_env
from kemu.trace.diff import Difference


def report(bound: int, rss: dict[str, int]) -> Any:
    """A report with the keys bench traces reads (Any: not all of a kemu.trace.report.Report)."""
    return {
        "span_s": 3600.0,
        "wall_s": 120.0,
        "startup_s": 9.5,
        "speedup": 30.0,
        "pods_bound": bound,
        "pods_created": 10,
        "preemptions": [{"at": 1.0}],
        "node_hours": 12.5,
        "nodes_over_time": [[0.0, 3], [60.0, 5], [120.0, 4]],
        "processes": {name: {"rss_kib": kib, "peak_rss_kib": kib} for name, kib in rss.items()},
    }


def test_the_kubelets_memory_is_summed_and_the_rest_kept_apart() -> None:
    rss = {"etcd": 51200, "apiserver": 102400, "kubelet-pool": 10240, "kubelet-gpu": 20480}
    assert peak_rss_mib(report(10, rss)) == {"etcd": 50.0, "apiserver": 100.0, "kubelets": 30.0}


def test_the_table_has_a_row_per_replay_and_the_what_if() -> None:
    results: Any = {  # (a what-if without differences_by_kind)
        "replays": [row("bare-pods.sktrace", report(10, {"etcd": 1024}))],
        "whatif": {
            "expanders": ["least-waste", "most-pods"],
            "a": row("day, least-waste", report(9, {})),
            "b": row("day, most-pods", report(10, {})),
            "pods_that_differ": 4,
            "differences": ["node_group"],
        },
    }
    text = table(results)
    assert "bare-pods.sktrace" in text and "30.0x" in text and "10/10" in text
    assert "day, least-waste" in text and "9/10" in text and "etcd 1" in text
    assert text.endswith("what-if least-waste vs most-pods: 4 pods differ (node_group)")


def test_a_row_has_the_peak_node_count() -> None:
    assert row("day", report(10, {}))["peak_nodes"] == 5


INNER = """
import os, signal, sys, time
from pathlib import Path
out = Path(sys.argv[1])
def stopped(signum, frame):
    out.with_suffix(".stopped").write_text(str(signum))
    sys.exit(0)
signal.signal(signal.SIGTERM, stopped)
out.with_suffix(".ready").write_text(str(os.getpid()))
time.sleep(60)
"""
OUTER = """
import sys
from bench.traces import Terminated, run_command, stop_on_sigterm
stop_on_sigterm()
try:
    run_command([sys.executable, "-c", sys.argv[1], sys.argv[2]])
except Terminated:
    sys.exit(130)
"""


def test_sigterm_stops_the_command_running_and_waits_for_it(tmp_path: Path) -> None:
    # (a SIGTERMed `bench traces` left its kemu.whatif, and both replays, running)
    out = tmp_path / "inner"
    outer = subprocess.Popen([sys.executable, "-c", OUTER, INNER, str(out)], env=python_env())
    try:
        ready = out.with_suffix(".ready")
        deadline = time.monotonic() + 30
        while not ready.exists() or not ready.read_text():
            assert outer.poll() is None, "the outer process ended early"
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.05)
        inner_pid = int(ready.read_text())
        outer.send_signal(signal.SIGTERM)
        assert outer.wait(timeout=30) == 130
    finally:
        if outer.poll() is None:
            outer.kill()
    assert out.with_suffix(".stopped").read_text() == str(int(signal.SIGTERM))
    with pytest.raises(ProcessLookupError):
        os.kill(inner_pid, 0)


def test_a_pod_that_differs_in_two_ways_is_one_pod_and_two_differences() -> None:
    diff: list[Difference] = [
        {"pod": "Deployment/ns/web#0", "what": "node", "a": "n1", "b": "n2"},
        {"pod": "Deployment/ns/web#0", "what": "node_group", "a": "small", "b": "large"},
        {"pod": "batch-7", "what": "node", "a": "n3", "b": "n1"},
    ]
    assert differences(diff) == {
        "pods_that_differ": 2,
        "differences": ["node", "node_group"],
        "differences_by_kind": {"node": 2, "node_group": 1},
    }
