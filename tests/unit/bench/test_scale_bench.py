"""The pure parts of `python -m bench scale`: windows, node shares, the workload shape,
RSS grouping and targets, options and rendering."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench import scale
from bench.scheduler_perf import ALGORITHM_DURATION, Samples
from bench.scheduler_perf_workloads import (
    CreateNodes,
    CreatePods,
    Workload,
    WorkloadError,
    parse_workloads,
)
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import Gone


def _hist(total_seconds: float, count: float) -> Samples:
    return {
        f"{ALGORITHM_DURATION}_sum": {(): total_seconds},
        f"{ALGORITHM_DURATION}_count": {(): count},
    }


def test_window_bounds_are_equal_shares_ending_at_the_total() -> None:
    assert scale.window_bounds(100, 4) == [25, 50, 75, 100]
    assert scale.window_bounds(10, 3) == [4, 7, 10]
    assert scale.window_bounds(2, 10) == [1, 2]  # no repeats with fewer pods than windows
    assert scale.window_bounds(0, 5) == []
    with pytest.raises(ValueError, match="windows"):
        scale.window_bounds(10, 0)


def test_nodes_are_split_evenly_over_the_kubelets() -> None:
    assert scale.split_nodes(5000, 2) == [2500, 2500]
    assert scale.split_nodes(7, 3) == [3, 2, 2]
    assert sum(scale.split_nodes(5001, 4)) == 5001
    with pytest.raises(ValueError, match="kubelets"):
        scale.split_nodes(2, 3)
    with pytest.raises(ValueError, match="kubelets"):
        scale.split_nodes(2, 0)
    assert scale.default_kubelets(10) == 1 and scale.default_kubelets(5000) == 1
    assert scale.default_kubelets(5001) == 2


def test_capacity_flag_is_the_templates_capacity_sorted() -> None:
    node = types_pb2.Node()
    node.status.capacity.update({"pods": "110", "cpu": "4", "memory": "32Gi"})
    assert scale.capacity_flag(node) == "cpu=4,memory=32Gi,pods=110"


def test_windows_take_their_rate_from_bindings_and_their_time_from_the_scrapes() -> None:
    start = 100.0
    times = [100.5, 101.0, 102.0, 104.0]  # the 2nd pod ends window 1, the 4th window 2
    before = _hist(0.0, 0)
    snaps = [
        scale.Snapshot(2, _hist(0.004, 2), {"scheduler": 1000}),
        scale.Snapshot(4, _hist(0.010, 4), {"scheduler": 2000}),
    ]
    w1, w2 = scale.windows_from(times, start, snaps, before)
    assert (w1.bound_from, w1.bound_to, w1.seconds, w1.pods_per_second) == (0, 2, 1.0, 2.0)
    assert w1.algorithm_ms == pytest.approx(2.0) and w1.rss_kib == {"scheduler": 1000}
    assert (w2.bound_from, w2.bound_to, w2.seconds, w2.pods_per_second) == (2, 4, 3.0, 2 / 3)
    assert w2.algorithm_ms == pytest.approx(3.0)


def test_a_snapshot_beyond_the_bindings_seen_or_repeated_is_skipped() -> None:
    snaps = [scale.Snapshot(1, _hist(0, 0), {}), scale.Snapshot(1, _hist(0, 0), {}),
             scale.Snapshot(5, _hist(0, 0), {})]  # fmt: skip
    windows = scale.windows_from([1.0, 2.0], 0.0, snaps, _hist(0, 0))
    assert [(w.bound_from, w.bound_to) for w in windows] == [(0, 1)]
    assert math.isnan(windows[0].algorithm_ms)  # no attempt between the scrapes


def test_group_rss_sums_the_kubelets() -> None:
    grouped = scale.group_rss({"scheduler": 10, "kubelet-0": 100, "kubelet-1": 50})
    assert grouped["kubelets"] == 150 and grouped["scheduler"] == 10
    assert "kubelets" not in scale.group_rss({"scheduler": 10})


def _workloads(ops: list[dict[str, object]]) -> list[Workload]:
    return parse_workloads(
        [{"name": "T", "workloadTemplate": ops, "workloads": [{"name": "w", "params": {}}]}]
    )


def test_the_scale_shape_is_one_createnodes_and_one_measured_createpods() -> None:
    good = _workloads(
        [
            {"opcode": "createNodes", "count": 2},
            {"opcode": "createPods", "count": 3, "collectMetrics": True},
        ]
    )[0]
    nodes, pods = scale.scale_shape(good)
    assert (nodes.count, pods.count) == (2, 3)
    unmeasured = _workloads(
        [{"opcode": "createNodes", "count": 2}, {"opcode": "createPods", "count": 3}]
    )[0]
    with pytest.raises(WorkloadError, match=r"T/w\.workloadTemplate"):
        scale.scale_shape(unmeasured)
    extra = _workloads(
        [{"opcode": "createNodes", "count": 2}, {"opcode": "createPods", "count": 3, "collectMetrics": True},
         {"opcode": "barrier"}]
    )[0]  # fmt: skip
    with pytest.raises(WorkloadError, match="one createNodes op"):
        scale.scale_shape(extra)


def test_the_scale_file_has_the_matrix_and_a_quick_workload() -> None:
    opts = scale.options_from_args(scale.build_parser().parse_args([]))
    sizes = {(w.count(CreateNodes), w.count(CreatePods)) for w in opts.workloads}
    assert sizes == {(500, 5000), (5000, 5000), (500, 50000), (5000, 50000)}
    assert opts.modes == ("bare", "hollow")
    quick = scale.options_from_args(scale.build_parser().parse_args(["--quick", "--mode", "bare"]))
    assert [w.full_name for w in quick.workloads] == ["SchedulingScale/10Nodes_100Pods"]
    assert quick.modes == ("bare",)
    # 50,000 pods fit on 500 nodes: the pods cap (110) and the requests allow 100 a node.
    big = next(w for w in opts.workloads if w.name == "500Nodes_50000Pods")
    _, pods = scale.scale_shape(big)
    assert pods.count / 500 <= 110


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["--windows", "0"], "--windows"),
        (["--kubelets", "0"], "--kubelets"),
        (["--creators", "0"], "--creators"),
        (["--max-pending", "-1"], "--max-pending"),
        (["--timeout", "0"], "--timeout"),
        (["--lease-renew-interval", "10"], "--lease-renew-interval"),
        (["--lease-renew-interval", "0s"], "--lease-renew-interval"),
        (["--workload", "Nope/x"], "--workload"),
        (["--label", "nope"], "--label"),
    ],
)
def test_bad_options_are_refused_naming_the_flag(argv: list[str], flag: str) -> None:
    with pytest.raises(ValueError, match=flag):
        scale.options_from_args(scale.build_parser().parse_args(argv))


def test_main_refuses_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert scale.main(["--windows", "0"]) == 2
    assert "--windows" in capsys.readouterr().err


def test_a_bad_html_path_is_refused_in_one_line_before_any_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert scale.main(["--quick", "--html", str(tmp_path / "no" / "t.html")]) == 2
    err = capsys.readouterr().err
    assert err == f"bench scale: --html: {tmp_path / 'no'}: no such directory\n"
    opts = scale.options_from_args(scale.build_parser().parse_args(["--html", "t.html"]))
    assert opts.html_path == "t.html"


def test_main_lists_the_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    assert scale.main(["--list"]) == 0
    assert "SchedulingScale/5000Nodes_50000Pods" in capsys.readouterr().out


def test_render_judges_the_targets_and_shows_the_growth() -> None:
    small = scale.Result("S/a", "bare", nodes=500, pods=5000, created_to_bound=200.0, algorithm_ms=1.0,
                         rss_kib={"scheduler": 100 * 1024, "apiserver": 200 * 1024})  # fmt: skip
    big = scale.Result("S/b", "bare", nodes=5000, pods=50000, created_to_bound=100.0, algorithm_ms=3.0,
                       rss_kib={"scheduler": 600 * 1024, "apiserver": 300 * 1024})  # fmt: skip
    hollow = scale.Result("S/b", "hollow", nodes=5000, pods=50000, kubelets=2,
                          rss_kib={"kubelets": 900 * 1024}, error="TimeoutError: x")  # fmt: skip
    big.attempts = {"scheduled": 50000.0, "error": 12.0}
    out = scale.render([small, big, hollow])
    assert "50000 / 0 / 12" in out
    assert "rss scheduler: 600 MiB, target <= 500 MB: NOT met" in out
    assert "rss apiserver: 300 MiB, target <= 1000 MB: met" in out
    assert "rss kubelets: 900 MiB (184 KiB a node), target <= 1000 MB: met" in out
    assert "FAILED: TimeoutError: x" in out
    assert "growth [bare] against 500n / 5000p" in out
    growth = out[out.index("growth [bare]") :]
    assert "5000n / 50000p      0.50            3.00         6.00             1.50" in growth
    assert "growth [hollow]" not in out  # one successful hollow run: nothing to compare


def test_a_small_hollow_run_is_not_judged_against_the_5000_node_target() -> None:
    r = scale.Result("S/a", "hollow", nodes=10, pods=100, rss_kib={"kubelets": 50 * 1024})
    (line,) = scale.render_targets(r)
    assert "the target is for 5000 nodes" in line and "met" not in line


def test_a_failed_run_names_the_errors_inside_a_task_group():
    group = ExceptionGroup(
        "unhandled errors in a TaskGroup",
        [Gone("too old resource version: 5 (9)"), ExceptionGroup("inner", [TimeoutError("t")])],
    )
    assert scale.describe_error(group) == ("Gone: too old resource version: 5 (9); TimeoutError: t")
    assert scale.describe_error(RuntimeError("3 pod creates failed")) == (
        "RuntimeError: 3 pod creates failed"
    )
