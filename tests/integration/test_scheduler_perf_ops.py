"""`python -m bench scheduler_perf`'s ops on a real cluster (etcd, apiserver, scheduler),
with kemu's own tiny workloads of bench/workloads/ops.yaml: churn in both modes, barriers of
stage Attempted and with a label selector, paced and labelled deletions, a collection
window, text templates rendered per object, a threshold and a not-modelled gate."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from bench.scheduler_perf import Options, run_workload
from bench.scheduler_perf_workloads import WORKLOADS_DIR, WORKLOADS_FILE, load_workloads

pytestmark = [pytest.mark.integration]


def _options(tmp_path: Path, bind_only: str = "never") -> Options:
    return Options(
        workloads=(),
        json_path=None,
        scheduler_config=None,
        creators=8,
        seed=1,
        timeout=60,
        py_spy=None,
        py_spy_bin="",
        py_spy_seconds=0,
        keep_dir=str(tmp_path),
        bind_only=bind_only,
    )


@pytest.mark.parametrize(
    "name",
    [
        "HeldWhileDeleting/2Nodes",
        "ChurnWhileScheduling/5Nodes",
        "IndexedSlots/5Nodes",
        "OneHostPortPerNode/8Nodes",
    ],
)
def test_kemus_own_op_workloads_run(tmp_path: Path, name: str) -> None:
    (w,) = [w for w in load_workloads(WORKLOADS_DIR / "ops.yaml") if w.full_name == name]
    (variant,) = w.variants()
    result = run_workload(w, variant, _options(tmp_path))
    assert result.error == ""
    assert result.measured_pods > 0
    assert result.throughput.samples >= 1 and not math.isnan(result.throughput.average)
    if name == "HeldWhileDeleting/2Nodes":
        assert result.not_modelled_gates == ["SchedulerAsyncAPICalls"]
    if name == "IndexedSlots/5Nodes":
        assert result.measured_pods == 5  # the collection window's pods, each on its node
    if name == "OneHostPortPerNode/8Nodes":
        assert result.threshold == 1.0 and result.threshold_met is True


def test_preemptionbasic_measures_its_preemption_api_baseline(tmp_path: Path) -> None:
    """PreemptionBasic/10Nodes (--quick) with the default `auto`: after the measured phase,
    the baseline's preemptors make the same pod calls as the scheduler did (create, 3 victim
    PATCHes and DELETEs, the status PATCH, the binding per preemptor), and its rate and the
    ratio are set."""
    (w,) = [w for w in load_workloads(WORKLOADS_FILE) if w.full_name == "PreemptionBasic/10Nodes"]
    (variant,) = w.variants()
    result = run_workload(w, variant, _options(tmp_path, bind_only="auto"))
    assert result.error == ""
    # The scheduler's: create, 3 x (victim PATCH, DELETE), the status PATCH, bind each.
    calls = {"create pods": 10, "create pods/binding": 10, "delete pods": 30, "patch pods": 40}
    pod_calls = {k: v for k, v in result.baseline_api_calls.items() if not k.endswith("events")}
    assert pod_calls == calls
    assert result.api_calls.get("delete pods") == 30  # the measured phase's victims
    assert result.baseline_api_calls.get("create events", 0) > 0
    assert (result.preemption_baseline_pods, result.preemption_baseline_victims) == (10, 3)
    assert result.preemption_api_baseline > 0
    assert result.scheduler_to_limit == result.created_to_bound / result.preemption_api_baseline
    assert math.isnan(result.bind_only_baseline)
    # Each process's CPU per preemptor, in the phase and in the baseline; the apiserver did
    # work in both, and the ceiling is the rate at which that CPU fills the host's cores.
    for per_pod, ceiling in (
        (result.cpu_ms_per_pod, result.cpu_ceiling),
        (result.preemption_baseline_cpu_ms_per_pod, result.preemption_baseline_cpu_ceiling),
    ):
        assert set(per_pod) == {"scheduler", "apiserver", "etcd", "bench"}
        assert per_pod["apiserver"] > 0
        cpus = os.cpu_count() or 1
        assert ceiling == pytest.approx(cpus * 1000 / math.fsum(per_pod.values()))
