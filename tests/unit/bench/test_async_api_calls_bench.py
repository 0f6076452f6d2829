"""The arithmetic of `python -m bench async_api_calls`: options, the delays, and the figures
read from the scheduler's /metrics text."""

from __future__ import annotations

import pytest

from bench import async_api_calls as bench

METRICS = """\
# HELP rest_client_rate_limiter_duration_seconds Client side rate limiter latency in seconds.
# TYPE rest_client_rate_limiter_duration_seconds histogram
rest_client_rate_limiter_duration_seconds_bucket{host="h",le="+Inf",verb="POST"} 4.0
rest_client_rate_limiter_duration_seconds_count{host="h",verb="POST"} 4.0
rest_client_rate_limiter_duration_seconds_sum{host="h",verb="POST"} 3.0
rest_client_rate_limiter_duration_seconds_bucket{host="h2",le="+Inf",verb="POST"} 1.0
rest_client_rate_limiter_duration_seconds_count{host="h2",verb="POST"} 1.0
rest_client_rate_limiter_duration_seconds_sum{host="h2",verb="POST"} 0.5
rest_client_rate_limiter_duration_seconds_bucket{host="h",le="+Inf",verb="PATCH"} 2.0
rest_client_rate_limiter_duration_seconds_count{host="h",verb="PATCH"} 2.0
rest_client_rate_limiter_duration_seconds_sum{host="h",verb="PATCH"} 0.0
# HELP scheduler_pending_async_api_calls Number of API calls currently pending in the async queue.
# TYPE scheduler_pending_async_api_calls gauge
scheduler_pending_async_api_calls{call_type="pod_status_patch"} 7.0
scheduler_pending_async_api_calls{call_type="pod_binding"} 1.0
"""


def _opts(*argv: str) -> bench.Options:
    return bench.options_from_args(bench.build_parser().parse_args(list(argv)))


def test_options_default_and_bad_ones_are_refused() -> None:
    opts = _opts()
    assert (opts.failing, opts.nodes, opts.rate, opts.duration, opts.node_interval) == (
        300,
        10,
        4.0,
        30.0,
        5.0,
    )
    assert _opts("--only", "on").only == "on"
    for argv in (("--failing", "0"), ("--rate", "0"), ("--node-interval", "-1")):
        with pytest.raises(ValueError):
            _opts(*argv)


def test_histogram_sums_over_other_labels_and_mean() -> None:
    waits = bench.histogram_by(METRICS, "rest_client_rate_limiter_duration_seconds", "verb")
    assert waits == {"PATCH": bench.Waits(2.0, 0.0), "POST": bench.Waits(5.0, 3.5)}
    assert waits["POST"].mean == pytest.approx(0.7)
    assert bench.Waits().mean == 0.0  # no sample: no division by zero
    assert bench.histogram_by(METRICS, "no_such_metric", "verb") == {}


def test_gauge_and_the_most_seen() -> None:
    seen = {"pod_status_patch": 9.0}
    bench.keep_max(seen, bench.gauge_by(METRICS, bench.ASYNC_PENDING, "call_type"))
    assert seen == {"pod_status_patch": 9.0, "pod_binding": 1.0}


def test_delays_are_of_the_bound_pods_only_and_sorted() -> None:
    created = {"a": 10.0, "b": 11.0, "c": 12.0}
    bound = {"a": 12.5, "c": 12.25, "other": 1.0}
    assert bench.delays(created, bound) == [0.25, 2.5]
