"""bench.scheduler_perf --differential (bench.scheduler_perf_cycle) and --paths: the
in-process run of both scheduler paths, its verdict, and the per-node vs batch table."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml

from bench import scheduler_perf_cycle
from bench.scheduler_perf import (
    BATCH,
    PER_NODE,
    Result,
    build_parser,
    main,
    path_pairs,
    render,
)
from bench.scheduler_perf_cycle import render_differential, run_differential
from bench.scheduler_perf_workloads import Workload, parse_workloads
from kemu.api.v1 import types_pb2

WORKLOADS = """
- name: Basic
  workloadTemplate:
  - opcode: createNodes
    countParam: $nodes
  - opcode: createPods
    countParam: $init
  - opcode: createPods
    countParam: $measured
    collectMetrics: true
  workloads:
  - name: 120Nodes
    params: {nodes: 120, init: 30, measured: 40}
  - name: Full
    params: {nodes: 2, init: 200, measured: 30}
- name: WithDeletes
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - opcode: createPods
    count: 2
  - opcode: deletePods
    namespace: namespace-1
  workloads:
  - name: Tiny
"""


def _workloads() -> list[Workload]:
    return parse_workloads(yaml.safe_load(WORKLOADS))


def test_both_paths_place_every_pod_alike_and_are_timed() -> None:
    basic, full, _ = _workloads()
    r = run_differential(basic, seed=3)
    assert not r.mismatch and not r.skipped
    assert (r.nodes, r.pods, r.scheduled, r.unschedulable) == (120, 70, 70, 0)
    assert r.per_node_ms > 0 and r.batch_ms > 0
    # Two nodes of 4 cpus hold 40 pods of 100m each: the rest fail on both paths alike.
    r = run_differential(full, seed=3)
    assert not r.mismatch
    assert r.scheduled == 80 and r.unschedulable == 150


@pytest.mark.parametrize("batch", [True, False])
def test_one_path_alone_is_timed_and_not_compared(batch: bool) -> None:
    basic, _, _ = _workloads()
    r = run_differential(basic, seed=3, only=batch)
    assert not r.mismatch and not r.compared
    assert (r.nodes, r.pods, r.scheduled, r.unschedulable) == (120, 70, 70, 0)
    timed, untimed = (
        (r.batch_cpu_ms, r.per_node_cpu_ms) if batch else (r.per_node_cpu_ms, r.batch_cpu_ms)
    )
    assert timed > 0 and math.isnan(untimed)
    assert "not compared" in render_differential([r])


def test_a_difference_is_reported_with_the_pod(monkeypatch: pytest.MonkeyPatch) -> None:
    basic, _, _ = _workloads()
    real = scheduler_perf_cycle.outcome

    def skewed(
        run: scheduler_perf_cycle.PathRun, pod: types_pb2.Pod, op_index: int
    ) -> tuple[object, ...]:
        out = real(run, pod, op_index)
        if run.scheduler.settings.paths.enabled and pod.metadata.name.endswith("-7"):
            return ("host", "elsewhere", 0)
        return out

    monkeypatch.setattr(scheduler_perf_cycle, "outcome", skewed)
    r = run_differential(basic, seed=3)
    assert "op 1, pod pod-1-7" in r.mismatch and "elsewhere" in r.mismatch
    assert "DIFFERENT" in render_differential([r])


def test_workloads_with_other_ops_are_skipped_with_the_reason() -> None:
    _, _, deletes = _workloads()
    r = run_differential(deletes, seed=1)
    assert "op 2 (DeletePods)" in r.skipped
    assert "skipped: op 2 (DeletePods)" in render_differential([r])


def test_the_differential_cli_exits_zero_when_identical(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(WORKLOADS)
    code = main(["--config", str(path), "--workload", "Basic/120Nodes", "--differential"])
    assert code == 0
    assert "identical" in capsys.readouterr().out


def test_paths_both_pairs_per_node_and_batch_runs_in_the_table() -> None:
    assert build_parser().parse_args(["--paths", "both"]).paths == "both"
    per_node = Result("W/1", path=PER_NODE, algorithm_ms=4.0, created_to_bound=100.0)
    batch = Result("W/1", path=BATCH, algorithm_ms=1.0, created_to_bound=250.0)
    failed = Result("W/2", path=PER_NODE, error="boom")
    assert path_pairs([per_node, batch, failed]) == [(per_node, batch)]
    text = render([per_node, batch])
    assert "W/1 [per-node]" in text and "W/1 [batch]" in text
    assert "W/1: per-node vs batch" in text
    assert "0.250" in text and "2.500" in text  # algorithm and throughput ratios
    assert math.isnan(Result("x").bind_only_baseline)
