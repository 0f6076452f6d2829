"""`--html FILE` of the benches on real clusters: the page draws what the run did, read back
from its HTML (kemu.timeline.page) and compared with the run's own figures in `--json` (nodes
created, pods bound, victims deleted). The benches run as their own processes, as a user runs
them (see tests/integration/drivers/test_bench_scale.py). The page in a real browser, and the chaos
harness's, are tests/integration/drivers/test_timeline_browser.py (long)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kemu.testing.processes import run_python_module
from kemu.timeline.page import DrawnRun, read_page

pytestmark = [pytest.mark.integration]


def _bench(args: list[str]) -> None:
    done = run_python_module("bench", args, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _drawn(path: Path) -> list[DrawnRun]:
    text = path.read_text()
    assert "http://" not in text and "https://" not in text
    return read_page(text).runs


def test_scheduler_perf_draws_every_node_binding_nomination_and_victim(tmp_path: Path) -> None:
    """PreemptionBasic/10Nodes: 10 nodes, 40 low-priority pods, then 10 preemptors that each
    preempt 3 of them (after a nomination to the node they free)."""
    html, out = tmp_path / "sched.html", tmp_path / "sched.json"
    args = ["scheduler_perf", "--workload", "PreemptionBasic/10Nodes", "--seed", "1"]
    args += ["--creators", "8", "--timeout", "60", "--bind-only-baseline", "never"]
    _bench([*args, "--html", str(html), "--json", str(out)])
    (result,) = json.loads(out.read_text())["results"]
    assert result["error"] == ""
    (run,) = _drawn(html)
    assert run.title == "PreemptionBasic/10Nodes"
    assert len(run.lanes) == len(set(run.lanes)) == result["nodes"] == 10
    # Every pod was bound (the low ones before they were preempted): a bar each.
    pods = result["init_pods"] + result["measured_pods"]
    assert len(run.bars) == len(set(run.bars)) == pods == 50
    assert len(run.victims) == result["deleted_pods"] == 30
    assert set(run.victims) <= set(run.bars)
    stories = {str(s[0]): s for s in run.stories}
    preemptors = {k for k in run.bars if _priority(stories[k]) > _priority(stories[run.victims[0]])}
    assert len(preemptors) == result["measured_pods"]
    assert run.nominated and set(run.nominated) <= preemptors
    for victim in run.victims:  # its story names its preemptor, one of the measured pods
        preemptor = _story(run, victim)[4]
        assert isinstance(preemptor, int) and run.stories[preemptor][0] in preemptors
    assert run.markers == {"note": 1}  # the measured phase


def test_scale_draws_a_lane_per_node_and_a_bar_per_pod_in_each_mode(tmp_path: Path) -> None:
    html, out = tmp_path / "scale.html", tmp_path / "scale.json"
    _bench(["scale", "--quick", "--mode", "both", "--html", str(html), "--json", str(out)])
    results = json.loads(out.read_text())["results"]
    runs = _drawn(html)
    assert [r.title for r in runs] == [
        "SchedulingScale/10Nodes_100Pods [bare]",
        "SchedulingScale/10Nodes_100Pods [hollow]",
    ]
    for run, result in zip(runs, results, strict=True):
        assert result["error"] == ""
        assert sorted(run.lanes) == sorted(set(run.lanes)) and len(run.lanes) == result["nodes"]
        assert len(run.bars) == len(set(run.bars)) == result["pods"] == 100
        assert run.victims == [] and run.markers == {"note": 2}  # nodes up, measured phase
        assert all(_story(run, k)[2] in run.lanes for k in run.bars)


def _story(run: DrawnRun, key: str) -> list[Any]:
    return next(s for s in run.stories if s[0] == key)


def _priority(story: list[Any]) -> int:
    value = story[1]
    assert isinstance(value, int)
    return value
