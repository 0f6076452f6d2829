"""The pure parts of `python -m bench autoscaler`: configs, objects, loop times, options."""

from __future__ import annotations

import pytest

from bench import autoscaler as ab
from cloud.config import parse_config


def test_loop_times_take_only_scrapes_that_saw_one_new_loop() -> None:
    samples = [(0, 0.0), (0, 0.0), (1, 0.5), (1, 0.5), (3, 1.7), (4, 2.0)]
    # 0 -> 1: one loop of 0.5 s; 1 -> 3: two loops at once, skipped; 3 -> 4: 0.3 s.
    assert ab.loop_times(samples) == pytest.approx([0.5, 0.3])
    assert ab.loop_times([]) == []


def test_histogram_reads_count_and_sum_of_one_label() -> None:
    text = "\n".join(
        [
            "# TYPE cluster_autoscaler_function_duration_seconds histogram",
            'cluster_autoscaler_function_duration_seconds_count{function="main"} 4.0',
            'cluster_autoscaler_function_duration_seconds_sum{function="main"} 1.5',
            'cluster_autoscaler_function_duration_seconds_count{function="scaleUp"} 2.0',
            'cluster_autoscaler_function_duration_seconds_sum{function="scaleUp"} 0.2',
        ]
    )
    assert ab.histogram(text, ab.DURATION, "function", "main") == (4.0, 1.5)
    assert ab.histogram(text, ab.DURATION, "function", "scaleUp") == (2.0, 0.2)
    assert ab.histogram(text, ab.DURATION, "function", "other") == (0.0, 0.0)


@pytest.mark.parametrize("text", [ab.scale_up_config(50), ab.loop_config([334, 333, 333])])
def test_the_cloud_configs_are_valid_for_the_cloud(text: str) -> None:
    assert parse_config(text)


def test_the_loop_nodes_are_shared_out_over_groups_of_external_nodes() -> None:
    assert ab.group_sizes(1000, 3) == [334, 333, 333]
    assert ab.group_sizes(2, 3) == [1, 1, 0]
    config = parse_config(ab.loop_config([5, 4]))
    assert [(g.name, g.max_size, g.external_nodes) for g in config.node_groups] == [
        ("group-0", 15, True),
        ("group-1", 14, True),
    ]


def test_instance_nodes_are_ready_in_their_group_and_pods_are_bound_or_selecting() -> None:
    node = ab.instance_node("group-1", "group-1-7")
    assert node.metadata.name == "group-1-7"
    assert node.spec.provider_id == "kemu://group-1/group-1-7"
    assert node.metadata.labels[ab.GROUP_LABEL] == "group-1"
    assert [(c.type, c.status) for c in node.status.conditions] == [("Ready", "True")]
    assert node.status.allocatable["cpu"] == "32"
    bound = ab.make_pod("p", "1", node="group-1-7", annotations={ab.SAFE_TO_EVICT: "true"})
    assert bound.spec.node_name == "group-1-7"
    assert bound.metadata.annotations[ab.SAFE_TO_EVICT] == "true"
    assert bound.spec.containers[0].resources.requests["cpu"] == "1"
    pending = ab.make_pod("q", "500m", selector={ab.GROUP_LABEL: "pool-a"})
    assert not pending.spec.node_name and dict(pending.spec.node_selector) == {
        ab.GROUP_LABEL: "pool-a"
    }


def test_options_validate_counts_and_parse_the_scan_interval() -> None:
    opts = ab.options_from_args(ab.build_parser().parse_args(["--scan-interval", "500ms"]))
    assert (opts.pods, opts.nodes, opts.pods_per_node, opts.scan_interval) == (100, 1000, 10, 0.5)
    assert opts.non_empty_candidates == 30
    with pytest.raises(ValueError, match="--non-empty-candidates"):
        ab.options_from_args(ab.build_parser().parse_args(["--non-empty-candidates", "0"]))
    with pytest.raises(ValueError, match="--pods-per-node"):
        ab.options_from_args(ab.build_parser().parse_args(["--pods-per-node", "0"]))


def test_render_shows_both_phases_and_errors() -> None:
    r = ab.Result(load_avg_start=[0.5, 0.4, 0.3])
    r.loops = {"main": [0.2, 0.4, 0.3], "scaleUp": [0.01]}
    r.rss_kib_peak = r.rss_kib_end = 200 * 1024
    r.errors.append("boom")
    text = ab.render(ab.Options(), r)
    assert "main" in text and "300" in text  # p50 of the loop, ms
    assert "peak 200 MiB" in text
    assert text.splitlines()[-1] == "error: boom"


def test_the_benchmark_is_listed() -> None:
    from bench.__main__ import BENCHMARKS

    assert BENCHMARKS["autoscaler"][0] == "bench.autoscaler"
