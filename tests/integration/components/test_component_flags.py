"""Start-up validation of every component's common flags, on the real entry points."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.testing.launch import ForkServer, Launch, shared_forkserver
from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import ManagedProcess, python_env, python_module_argv

pytestmark = pytest.mark.integration


def _forkserver() -> ForkServer | None:
    """The test process's fork server, as the harness's clusters use it (unless
    KEMU_TEST_LAUNCH=exec): each start forked from it skips the component's imports, ~1 s of
    CPU of a fresh interpreter's."""
    return shared_forkserver() if Launch.from_env() is Launch.FORK else None


def _start(tmp_path: Path, module: str, *args: str) -> tuple[int, list[str]]:
    """`python -m module args...` run to its end: its exit code and the non-blank lines it
    wrote (stdout and stderr together)."""
    proc = ManagedProcess(
        module,
        python_module_argv(module, args),
        log_path=tmp_path / f"{module}.log",
        env=python_env(),
        forkserver=_forkserver(),
    )
    proc.start()
    code = proc.wait(30)
    # (the first line is the harness's header)
    _header, *lines = [line for line in proc.logs().splitlines() if line.strip()]
    return code, lines


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
def test_bad_versions_and_gates_stop_start_up_with_one_line(tmp_path, module, args, message):
    code, lines = _start(tmp_path, module, *args, "--metrics-port", "0")
    assert code == 1
    assert len(lines) == 1, lines
    assert message in lines[0] and "Traceback" not in lines[0]


@pytest.mark.parametrize("module", ["apiserver", "scheduler", "kubelet"])
@pytest.mark.parametrize("version", ["1.36", "1.37"])
def test_upstream_refuses_the_kep_name_of_the_resize_preemption_gate(tmp_path, module, version):
    """KEP-5836's text names the gate SchedulerPreemptionForPodResize; upstream shipped
    InPlacePodVerticalScalingSchedulerPreemption and has no other name for it, so a
    --feature-gates naming the KEP's is an unrecognized gate, at every version."""
    code, lines = _start(
        tmp_path,
        module,
        "--feature-gates",
        "SchedulerPreemptionForPodResize=true",
        "--emulated-version",
        version,
        "--metrics-port",
        "0",
    )
    assert code == 1
    assert len(lines) == 1 and "Traceback" not in lines[0], lines
    assert (
        f'unrecognized feature gate "SchedulerPreemptionForPodResize" at emulated version {version}'
    ) in lines[0]


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
        env=python_env(),
        forkserver=_forkserver(),
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
