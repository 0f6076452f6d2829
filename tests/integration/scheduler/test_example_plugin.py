"""The example out-of-tree plugin package (examples/plugins: Gang) as a user takes it: pip
installs it (into a directory of its own here, so that kemu's environment stays as it is), and
its own tests, on kemu clusters started by kemu's pytest plugin, pass: Gang changes what the
scheduler binds and what the cluster autoscaler scales up for. A configuration whose args Gang
refuses stops the scheduler with one line naming the plugin, exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kemu.testing.processes import REPO_ROOT, python_env, run_pytest, run_python_module

pytestmark = pytest.mark.integration

EXAMPLE = REPO_ROOT / "examples" / "plugins"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The environment with the example installed by pip on its PYTHONPATH."""
    site = tmp_path_factory.mktemp("site")
    # --no-build-isolation: build with the environment's setuptools (no download).
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    installed = subprocess.run(
        [*pip, "--target", str(site), str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert installed.returncode == 0, installed.stdout + installed.stderr
    (info,) = site.glob("kemu_example_gang-*.dist-info")
    assert "kemu.scheduler.plugins" in (info / "entry_points.txt").read_text()
    out = python_env()
    out["PYTHONPATH"] = f"{site}{os.pathsep}{out['PYTHONPATH']}"
    return out


def test_the_example_plugin_installs_with_pip_and_its_tests_pass(
    tmp_path: Path, env: dict[str, str]
) -> None:
    done = run_pytest([str(EXAMPLE / "tests")], cwd=tmp_path, env=env)
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout + done.stderr


def test_args_the_plugin_refuses_stop_the_scheduler_with_one_line(
    tmp_path: Path, env: dict[str, str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- plugins: {multiPoint: {enabled: [{name: Gang}]}}\n"
        "  pluginConfig: [{name: Gang, args: {permitWaitingTime: -1}}]\n"
    )
    argv = ["--server", "127.0.0.1:1", "--metrics-port", "0", "--config", str(config)]
    done = run_python_module("scheduler", argv, env=env, timeout=60)
    assert done.returncode == 2, done.stderr
    refusal = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(refusal) == 1, done.stderr
    assert refusal[0].endswith(
        'kube-scheduler: error: --config: initializing plugin "Gang": '
        "permitWaitingTime: must be a positive number, not -1"
    ), refusal
    # A name no package registers is refused before the start, naming it.
    config.write_text(config.read_text().replace("Gang", "Gangs"))
    done = run_python_module("scheduler", argv, env=env, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("scheduler: error: --config: ")
    assert "unknown plugin 'Gangs'" in done.stderr
