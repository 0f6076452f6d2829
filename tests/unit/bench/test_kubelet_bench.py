"""The pure parts of `python -m bench kubelet`: pods, lease cadence, latencies, options."""

from __future__ import annotations

import math

import pytest
from google.protobuf.timestamp_pb2 import Timestamp

from bench import kubelet as kb
from kemu.api.v1 import types_pb2


def test_pods_are_bound_round_robin_over_the_hollow_nodes() -> None:
    pods = kb.pod_objects(5, 2, "hollow", "ns")
    assert [p.spec.node_name for p in pods] == [
        "hollow-0", "hollow-1", "hollow-0", "hollow-1", "hollow-0",
    ]  # fmt: skip
    assert [p.metadata.name for p in pods] == [f"pod-{i}" for i in range(5)]
    assert all(p.metadata.namespace == "ns" and len(p.spec.containers) == 1 for p in pods)


def test_pod_names_are_zero_padded_so_they_sort_in_creation_order() -> None:
    names = [p.metadata.name for p in kb.pod_objects(11, 3, "n", "ns")]
    assert names[0] == "pod-00" and names[-1] == "pod-10" and names == sorted(names)


def test_pods_need_a_node() -> None:
    with pytest.raises(ValueError, match="node"):
        kb.pod_objects(1, 0, "n", "ns")


def test_renewal_intervals_are_per_node_sorted_and_deduplicated() -> None:
    renewals = {"a": [20.0, 10.0, 10.0, 30.5], "b": [5.0], "c": [1.0, 3.0]}
    assert sorted(kb.renewal_intervals(renewals)) == [2.0, 10.0, 10.5]


def test_per_second_counts_whole_windows_only() -> None:
    assert kb.per_second([0.0, 0.5, 1.2, 2.9, 3.1, -1.0], 0.0, 3.5) == [2, 1, 1]
    assert kb.per_second([1.0], 0.0, 0.5) == []


def test_cadence_of_evenly_spread_renewals_has_no_drift() -> None:
    # 10 nodes renewing every 2 s, offsets spread over the interval: 5 renewals per second.
    renewals = {f"n{i}": [100 + i * 0.2 + k * 2.0 for k in range(4)] for i in range(10)}
    c = kb.cadence(renewals, 2.0, (100.0, 106.0))
    assert c.renewals == 40 and c.nodes_renewing == 10
    assert c.intervals.count == 30
    assert c.intervals.mean == pytest.approx(2.0)
    assert c.drift == pytest.approx(0.0, abs=1e-9)
    assert c.per_second_mean == pytest.approx(5.0)
    assert (c.per_second_min, c.per_second_max) == (5, 5)


def test_cadence_shows_a_late_renewal_as_drift_and_max() -> None:
    c = kb.cadence({"n": [0.0, 10.0, 25.0]}, 10.0, (0.0, 30.0))
    assert c.intervals.max == 15.0
    assert c.drift == pytest.approx(2.5)


def test_cadence_without_intervals_is_nan() -> None:
    c = kb.cadence({"n": [1.0]}, 10.0, (0.0, 2.0))
    assert c.intervals.count == 0 and math.isnan(c.drift) and c.nodes_renewing == 0


def test_distribution_percentiles_are_nearest_rank() -> None:
    d = kb.distribution(float(i) for i in range(1, 101))
    assert (d.p50, d.p90, d.p99, d.max, d.mean) == (50.0, 90.0, 99.0, 100.0, 50.5)
    assert math.isnan(kb.distribution([]).p99)


def test_seconds_of_a_timestamp_keeps_the_fraction() -> None:
    assert kb.seconds(Timestamp(seconds=12, nanos=500_000_000)) == 12.5


def _node(ready: str | None) -> types_pb2.Node:
    node = types_pb2.Node()
    if ready is not None:
        c = node.status.conditions.add()
        c.type, c.status = "Ready", ready
    return node


def test_a_node_is_ready_only_with_ready_true() -> None:
    assert kb.is_ready(_node("True"))
    assert not kb.is_ready(_node("False")) and not kb.is_ready(_node(None))


def _pod(name: str, phase: str) -> types_pb2.Pod:
    pod = types_pb2.Pod()
    pod.metadata.name = name
    pod.status.phase = phase
    return pod


def test_running_tracker_measures_from_create_to_first_running() -> None:
    now = [0.0]
    t = kb.RunningTracker(clock=lambda: now[0])
    t.creating("a")
    now[0] = 0.3
    t.observe(_pod("a", "Pending"))
    now[0] = 0.5
    t.observe(_pod("a", "Running"))
    now[0] = 2.0
    t.observe(_pod("a", "Running"))  # a later update does not move it
    t.observe(_pod("unknown", "Running"))  # not created by us: no latency
    assert t.latencies() == [0.5]


@pytest.mark.anyio
async def test_running_tracker_wakes_when_every_expected_pod_runs() -> None:
    t = kb.RunningTracker(clock=lambda: 0.0)
    t.expect(2)
    for name in ("a", "b"):
        t.creating(name)
        t.observe(_pod(name, "Running"))
    await t.wait_all(1.0)


def test_quick_changes_the_defaults_and_explicit_flags_win() -> None:
    parser = kb.build_parser()
    full = kb.options_from_args(parser.parse_args([]))
    assert (full.nodes, full.renew_interval, full.pod_rate, full.duration) == (1000, 10, 100, 20)
    quick = kb.options_from_args(parser.parse_args(["--quick", "--nodes", "7"]))
    assert (quick.nodes, quick.renew_interval, quick.pod_rate, quick.duration) == (7, 2, 50, 10)
    assert quick.startup_delay == 0.0


@pytest.mark.parametrize("argv", [["--nodes", "0"], ["--pod-rate", "0"], ["--startup-delay", "-1"]])
def test_bad_options_are_refused(argv: list[str]) -> None:
    with pytest.raises(ValueError, match="--"):
        kb.options_from_args(kb.build_parser().parse_args(argv))


def test_render_names_the_targets_and_handles_a_failed_run() -> None:
    out = kb.render(kb.Result(nodes=3, error="TimeoutError: x"))
    assert "created-to-Running p99" in out and "<= 300" in out
    assert "FAILED: TimeoutError: x" in out


def test_main_refuses_bad_options(capsys: pytest.CaptureFixture[str]) -> None:
    assert kb.main(["--nodes", "0"]) == 2
    assert "--nodes" in capsys.readouterr().err


def test_the_hollow_kubelet_is_started_from_the_main_thread_so_it_dies_with_the_bench() -> None:
    """A child started from another thread gets no PDEATHSIG (kemu.testing.processes): a bench
    killed by SIGTERM left its hollow kubelets running."""
    import threading
    from typing import Any

    import anyio

    from kemu.client.interface import ListResult

    started_on: list[threading.Thread] = []

    class Stop(Exception):
        pass

    class FakeCluster:
        server = "127.0.0.1:1"

        def start_component(self, *args: Any, **kwargs: Any) -> None:
            started_on.append(threading.current_thread())
            raise Stop

    class FakeClient:
        async def list(self, kind: Any) -> Any:
            return ListResult[types_pb2.Node]([], "1", "")

    async def main() -> None:
        with pytest.raises(Stop):
            await kb.start_hollow_kubelet(FakeCluster(), FakeClient(), 1, "n")  # type: ignore[arg-type]

    anyio.run(main)
    assert started_on == [threading.main_thread()]
