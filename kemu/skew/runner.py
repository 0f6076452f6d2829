"""Runs a cell: its processes on one etcd (one cluster per cell), then the scenario pack."""

from __future__ import annotations

import logging
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from kemu.machinery.virtual_time import ClockMode
from kemu.skew import expect
from kemu.skew.policy import Cell, UnsupportedCellError, check
from kemu.skew.scenarios import CLOUD_CONFIG, SCENARIO_FUNCS, SCHEDULER_CONFIG
from kemu.testing.cluster import Cluster
from kemu.testing.ports import LOOPBACK

logger = logging.getLogger(__name__)


@dataclass
class CellReport:
    cell: Cell
    results: dict[str, expect.Result] = field(default_factory=dict)
    details: dict[str, list[str]] = field(default_factory=dict)
    """Per scenario, why it failed (or what the refusal said)."""
    warnings: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return {
            "name": self.cell.name,
            "components": self.cell.components(),
            "results": dict(self.results),
            "details": {k: v for k, v in self.details.items() if v},
            "warnings": self.warnings,
            "seconds": round(self.seconds, 1),
        }


def start_cell(cluster: Cluster, cell: Cell) -> list[str]:
    """Starts the cell's control plane (kubelets come with the scenarios); refuses a cell the
    skew policy forbids (UnsupportedCellError) before starting anything."""
    warnings = check(cell)
    cluster.start_etcd(unsafe_no_fsync=True)
    names = ["apiserver", "apiserver-2"][: len(cell.apiservers)]
    for name in names:
        cluster.start_apiserver(
            name=name,
            emulated_version=str(cell.version_of(name)),
            feature_gates=cell.gates_of(name) or None,
            runtime_config=cell.runtime_config,
            wait=False,
        )
    for name in names:
        cluster.wait_ready(name)

    def server(index: int) -> str:
        return f"{LOOPBACK}:{cluster.component(names[index]).port}"

    config = cluster.root / "scheduler.yaml"
    config.write_text(SCHEDULER_CONFIG)
    cluster.start_scheduler(
        config=config,
        emulated_version=str(cell.scheduler),
        feature_gates=cell.gates_of("scheduler") or None,
        extra_args=["--seed", "1"],
        server=server(cell.scheduler_apiserver),
        wait=False,
    )
    cluster.start_component(
        "controllermanager",
        "controllermanager",
        ["--server", server(cell.controllermanager_apiserver)],
        emulated_version=str(cell.controllermanager),
        feature_gates=cell.gates_of("controllermanager") or None,
        wait=False,
    )
    cloud = cluster.start_cloud(CLOUD_CONFIG, emulated_version=str(cell.autoscaler_version))
    cluster.start_component(
        "autoscaler",
        "autoscaler",
        [
            "--server",
            server(cell.scheduler_apiserver),
            "--cloud-provider-address",
            f"{LOOPBACK}:{cloud.port}",
            "--scan-interval",
            "500ms",
        ],  # fmt: skip
        emulated_version=str(cell.autoscaler_version),
        feature_gates=cell.gates_of("autoscaler") or None,
        wait=False,
    )
    for name in ("scheduler", "controllermanager", "autoscaler"):
        cluster.wait_ready(name)
    return warnings


async def _run_scenarios(cluster: Cluster, report: CellReport, scenarios: Sequence[str]) -> None:
    for name in scenarios:
        try:
            observed = await SCENARIO_FUNCS[name](cluster, report.cell)
        except Exception as e:  # a broken scenario is a failed one, reported with its reason
            logger.warning("cell %s scenario %s broke", report.cell.name, name, exc_info=True)
            report.results[name] = "fail"
            report.details[name] = [f"{type(e).__name__}: {e}".splitlines()[0]]
            continue
        report.results[name] = expect.result(name, report.cell, observed)
        report.details[name] = expect.differences(name, report.cell, observed)


def run_cell(
    cell: Cell,
    *,
    unsupported: bool = False,
    scenarios: Sequence[str] | None = None,
    root: Path | None = None,
    clock: ClockMode = ClockMode.REAL,
) -> CellReport:
    """Runs `cell` (its scenario pack, or `scenarios`) on a cluster whose clock is `clock`;
    an `unsupported` cell passes the "policy" scenario when it is refused."""
    if scenarios is None:
        scenarios = (expect.UPGRADE,) if cell.upgrade_to is not None else expect.SCENARIOS
    report = CellReport(cell)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"kemu-skew-{cell.name}-", dir=root) as tmp:
        with Cluster(Path(tmp), startup_timeout=60.0, stop_timeout=10.0, clock=clock) as cluster:
            try:
                report.warnings = start_cell(cluster, cell)
            except UnsupportedCellError as e:
                report.results[expect.POLICY] = "pass" if unsupported else "fail"
                report.details[expect.POLICY] = list(e.problems)
                report.seconds = time.monotonic() - start
                return report
            if unsupported:
                report.results[expect.POLICY] = "fail"
                report.details[expect.POLICY] = ["the cell was not refused"]
            else:
                report.results[expect.POLICY] = "pass"
                anyio.run(_run_scenarios, cluster, report, scenarios)
    report.seconds = time.monotonic() - start
    return report
