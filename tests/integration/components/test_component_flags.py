"""Start-up validation of every component's common flags, on the real entry points."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import ManagedProcess, python_module_argv, run_python_module

pytestmark = pytest.mark.integration


def _start(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    return run_python_module(module, args, timeout=30)


@pytest.mark.parametrize("module", ["apiserver", "controllermanager"])
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            [
                "--emulated-version",
                "1.33",
                "--feature-gates",
                "NominatedNodeNameForExpectation=true",
            ],
            'feature gate "NominatedNodeNameForExpectation" does not exist at emulated version 1.33',
        ),
        (
            ["--emulated-version", "1.35", "--feature-gates", "InPlacePodVerticalScaling=false"],
            '"InPlacePodVerticalScaling" is locked to true',
        ),
        (["--emulated-version", "1.38"], "--emulated-version"),
        (
            ["--emulated-version", "1.35", "--feature-gates", "DynamicResourceAllocation=false"],
            'feature gate "DynamicResourceAllocation" is locked to true (GA) at emulated version '
            "1.35",
        ),
        (
            [
                "--emulated-version",
                "1.36",
                "--feature-gates",
                "InPlacePodVerticalScalingAllocatedStatus=false",
            ],
            'feature gate "InPlacePodVerticalScalingAllocatedStatus" does not exist at emulated '
            "version 1.36 (removed in 1.36",
        ),
        (
            ["--emulated-version", "1.34", "--feature-gates", "PodDisruptionConditions=true"],
            'feature gate "PodDisruptionConditions" does not exist at emulated version 1.34 '
            "(removed in 1.34; its behaviour is always enabled)",
        ),
        (
            ["--emulated-version", "1.31", "--feature-gates", "PodDisruptionConditions=false"],
            '"PodDisruptionConditions" is locked to true (GA) at emulated version 1.31',
        ),
        (["--feature-gates", "NoSuchGate=true"], "NoSuchGate"),
        (["--feature-gates", "SchedulerAsyncPreemption=maybe"], "SchedulerAsyncPreemption"),
    ],
)
def test_bad_versions_and_gates_stop_start_up_with_one_line(module, args, message):
    done = _start(module, *args, "--metrics-port", "0")
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert message in lines[0]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("module", ["apiserver", "scheduler", "kubelet"])
@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_upstream_refuses_the_kep_name_of_the_resize_preemption_gate(module, version):
    """KEP-5836's text names the gate SchedulerPreemptionForPodResize; upstream shipped
    InPlacePodVerticalScalingSchedulerPreemption and has no other name for it, so a
    --feature-gates naming the KEP's is an unrecognized gate, at every version."""
    done = _start(
        module,
        "--feature-gates",
        "SchedulerPreemptionForPodResize=true",
        "--emulated-version",
        version,
        "--metrics-port",
        "0",
    )
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, done.stderr
    assert (
        f'unrecognized feature gate "SchedulerPreemptionForPodResize" at emulated version {version}'
    ) in lines[0]
    assert "Traceback" not in done.stderr


def _accepts(tmp_path: Path, module: str, version: str, gates: str) -> None:
    """The component starts with these flags (its /livez answers) though no apiserver is
    there: the settings passed validation."""
    port = free_port()
    args = [
        "--server",
        f"{LOOPBACK}:{free_port()}",
        "--emulated-version",
        version,
        "--feature-gates",
        gates,
        "--metrics-port",
        str(port),
    ]
    if module == "kubelet":
        args += ["--node-name", "n", "--root-dir", str(tmp_path / "kubelet")]
    proc = ManagedProcess(
        f"{module}-{version}",
        python_module_argv(module, args),
        log_path=tmp_path / f"{module}.log",
        ready=f"http://{LOOPBACK}:{port}/livez",
    )
    proc.start()
    try:
        proc.wait_ready()
    finally:
        proc.terminate()


@pytest.mark.parametrize(
    ("module", "version", "gates"),
    [
        # GA at 1.34 but not locked before 1.35 (pkg/features/kube_features.go).
        ("scheduler", "1.34", "DynamicResourceAllocation=false"),
        ("kubelet", "1.34", "DynamicResourceAllocation=false"),
        # The in-place resize family upstream's kubelet knows, each at a version it exists.
        ("kubelet", "1.35", "InPlacePodVerticalScalingAllocatedStatus=true"),
        (
            "kubelet",
            "1.37",
            "InPlacePodVerticalScalingExclusiveCPUs=true,"
            "InPlacePodVerticalScalingExclusiveMemory=true,"
            "InPlacePodLevelResourcesVerticalScaling=false",
        ),
        # PodDisruptionConditions: alpha at 1.25, beta (settable) until GA at 1.31.
        ("scheduler", "1.25", "PodDisruptionConditions=true"),
        ("scheduler", "1.30", "PodDisruptionConditions=false"),
    ],
)
def test_upstream_gate_settings_are_accepted(tmp_path, module, version, gates):
    _accepts(tmp_path, module, version, gates)
