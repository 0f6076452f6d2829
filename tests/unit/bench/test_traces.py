"""bench traces: the figures it takes from a replay's report, and its table."""

from __future__ import annotations

from typing import Any

from bench.traces import peak_rss_mib, row, table


def report(bound: int, rss: dict[str, int]) -> dict[str, Any]:
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
    results = {
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
