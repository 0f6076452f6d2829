"""`python -m bench scale --quick` end to end: the 10-node, 100-pod workload on bare nodes and
on a hollow kubelet, each on its own real cluster (etcd, apiserver, scheduler; the kubelet in
hollow mode), in a few seconds. The big runs are `make bench-scale`, not part of the suite.

The bench runs as its own process, as a user runs it: in the test process its event loop would
be a second one beside the session's, and grpc.aio, whose completion queue outlives a loop,
may then deliver a late completion of the bench's closed channel to that closed loop and fail
the next async test ('Event loop is closed'; seen once in CI, in test_cloud's set-up)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kemu.testing.processes import run_python_module

pytestmark = pytest.mark.integration


def _scale(args: list[str]) -> str:
    """Runs `python -m bench scale args`; its stdout. A failure shows its stderr's tail."""
    done = run_python_module("bench", ["scale", *args], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_quick_scale_runs_both_modes_end_to_end(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    text = _scale(["--quick", "--windows", "4", "--json", str(out)])
    assert "SchedulingScale/10Nodes_100Pods [bare]" in text
    assert "SchedulingScale/10Nodes_100Pods [hollow]" in text
    results = json.loads(out.read_text())["results"]
    assert [r["mode"] for r in results] == ["bare", "hollow"]
    for r in results:
        assert r["error"] == ""
        assert (r["nodes"], r["pods"]) == (10, 100)
        assert r["created_to_bound"] > 0
        # The windows cover every pod, in order (the sampler may merge windows it saw late).
        windows = r["windows"]
        assert windows and windows[0]["bound_from"] == 0 and windows[-1]["bound_to"] == 100
        assert all(
            a["bound_to"] == b["bound_from"] for a, b in zip(windows, windows[1:], strict=False)
        )
        assert r["rss_kib"]["scheduler"] > 0 and r["rss_kib"]["apiserver"] > 0
    bare, hollow = results
    assert bare["pending_peak"] > 5  # no limit: the creates run ahead of the bindings
    assert "kubelets" not in bare["rss_kib"] and bare["pods_running"] == 0
    assert hollow["kubelets"] == 1 and hollow["pods_running"] == 100
    assert hollow["rss_kib"]["kubelets"] > 0 and hollow["created_to_running"] > 0


def test_max_pending_holds_the_creates_back(tmp_path: Path) -> None:
    out = tmp_path / "scale.json"
    argv = ["--quick", "--mode", "bare", "--max-pending", "5", "--json", str(out)]
    _scale(argv)
    (r,) = json.loads(out.read_text())["results"]
    assert r["error"] == "" and r["max_pending"] == 5
    assert 1 <= r["pending_peak"] <= 5
