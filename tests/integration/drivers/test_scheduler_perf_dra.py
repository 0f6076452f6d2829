"""`python -m bench scheduler_perf`'s DRA ops on a real cluster (etcd, apiserver, scheduler
with the DynamicResources plugin, and for claim templates a controller-manager running the
resourceclaim controller and the garbage collector): kemu's DRAClaimTemplates workloads of
bench/workloads/ops.yaml, and upstream's dra/ file's smallest workloads when a checkout is at
hand (S-BENCH-DRA-12..14). The bench runs as its own process and the tests read its --json
(see tests/integration/drivers/test_scheduler_perf_ops.py)."""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.testing.processes import run_python_module

# The parts of issue #56 a DRA run needs, each its own branch until merged: the apiserver's
# resource.k8s.io validation, the scheduler's DynamicResources plugin, the resourceclaim
# controller.
DRA_MODULES = (
    "kemu.machinery.validation.resource",
    "kemu.scheduling.plugins.dynamic_resources",
    "controllermanager.resourceclaim",
)
MISSING = [m for m in DRA_MODULES if importlib.util.find_spec(m) is None]

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(bool(MISSING), reason=f"DRA is not in this build: no {', '.join(MISSING)}"),
]

UPSTREAM_DRA = (
    Path(os.environ.get("KEMU_K8S_CHECKOUT", "/work/k8s/kubernetes"))
    / "test/integration/scheduler_perf/dra/performance-config.yaml"
)


def _run(tmp_path: Path, name: str, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    out = tmp_path / "result.json"
    args = ["scheduler_perf", "--workload", name, "--seed", "1", "--creators", "8", *extra]
    args += ["--timeout", "60", "--keep-dir", str(tmp_path), "--bind-only-baseline", "never"]
    done = run_python_module("bench", [*args, "--json", str(out)], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    (result,) = json.loads(out.read_text())["results"]
    assert isinstance(result, dict)
    assert result["workload"] == name and result["error"] == ""
    return result


OWN_WORKLOADS: Final = ("DRAClaimTemplates/2Nodes", "DRAClaimTemplates/2Nodes_SteadyState")


@pytest.fixture(scope="module")
def own_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """OWN_WORKLOADS run by one bench process (each on a cluster of its own, as a run of one
    does), their results by workload: a bench process and its fork server's imports once."""
    tmp_path = tmp_path_factory.mktemp("dra-own")
    out = tmp_path / "result.json"
    args = ["scheduler_perf", "--seed", "1", "--creators", "8"]
    for name in OWN_WORKLOADS:
        args += ["--workload", name]
    args += ["--timeout", "60", "--keep-dir", str(tmp_path), "--bind-only-baseline", "never"]
    done = run_python_module("bench", [*args, "--json", str(out)], timeout=300 * 2)
    assert done.returncode == 0, done.stderr[-3000:]
    results = {r["workload"]: r for r in json.loads(out.read_text())["results"]}
    for name in OWN_WORKLOADS:
        assert results[name]["error"] == "", results[name]
    return results


def test_s_bench_dra_12_claim_templates_fill_the_devices(
    own_results: dict[str, dict[str, Any]],
) -> None:
    """S-BENCH-DRA-12: 2 dra-* nodes of 4 devices (createResourceDriver), 2 claims allocated
    directly (allocResourceClaims), then 6 pods with a claim template: every pod bound, on a
    DRA node, the devices used up."""
    result = own_results["DRAClaimTemplates/2Nodes"]
    assert result["measured_pods"] == 6
    assert result["attempts"].get("scheduled") == 6


def test_s_bench_dra_13_steady_state_recycles_pods_and_claims(
    own_results: dict[str, dict[str, Any]],
) -> None:
    """S-BENCH-DRA-13: 6 of 8 devices allocated directly, 2 pods kept in flight for 3 s:
    more pods than devices are bound (each bound pod deleted, its claim removed with it by the
    garbage collector, another pod created)."""
    result = own_results["DRAClaimTemplates/2Nodes_SteadyState"]
    assert result["measured_pods"] > 2
    assert result["throughput"]["average"] is not None


@pytest.mark.skipif(
    not UPSTREAM_DRA.exists(),
    reason="no kubernetes/kubernetes checkout with dra/ (set KEMU_K8S_CHECKOUT; see "
    "docs/benchmarks.md)",
)
@pytest.mark.parametrize(
    "name", ["SchedulingWithResourceClaim/fast", "SchedulingWithResourceClaimTemplate/fast"]
)
def test_s_bench_dra_14_upstreams_dra_file_runs(tmp_path: Path, name: str) -> None:
    """S-BENCH-DRA-14: upstream's dra/performance-config.yaml unchanged: slices by createAny,
    claims shared 1:5 (10 pods, 2 devices) or one per pod from a template."""
    result = _run(tmp_path, name, ("--config", str(UPSTREAM_DRA)))
    assert result["measured_pods"] == 10
