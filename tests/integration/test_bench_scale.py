"""`python -m bench scale --quick` end to end: the 10-node, 100-pod workload on bare nodes and
on a hollow kubelet, each on its own real cluster (etcd, apiserver, scheduler; the kubelet in
hollow mode), in a few seconds. The big runs are `make bench-scale`, not part of the suite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import scale

pytestmark = pytest.mark.integration


def test_quick_scale_runs_both_modes_end_to_end(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "scale.json"
    assert scale.main(["--quick", "--windows", "4", "--json", str(out)]) == 0
    text = capsys.readouterr().out
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
    assert scale.main(argv) == 0
    (r,) = json.loads(out.read_text())["results"]
    assert r["error"] == "" and r["max_pending"] == 5
    assert 1 <= r["pending_peak"] <= 5
