"""Start-up validation of every component's common flags, on the real entry points."""

from __future__ import annotations

import subprocess

import pytest

from kemu.testing.processes import run_python_module

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


def test_the_kep_name_of_the_resize_preemption_gate_is_accepted():
    done = _start(
        "apiserver",
        "--feature-gates",
        "SchedulerPreemptionForPodResize=true",
        "--emulated-version",
        "1.36",
        "--metrics-port",
        "0",
    )
    assert done.returncode == 1
    assert "InPlacePodVerticalScalingSchedulerPreemption" in done.stderr or (
        "SchedulerPreemptionForPodResize" in done.stderr
    )
    assert "1.36" in done.stderr
