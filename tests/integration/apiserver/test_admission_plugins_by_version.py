"""--enable-/--disable-admission-plugins by emulated version (issue #57): the real apiserver
process at 1.24 takes PodSecurityPolicy (upstream's until 1.24) next to its default set (with
PodSecurity, on by default from 1.23); at 1.37 it refuses the name at start-up, naming it and
the versions that have it (pkg/kubeapiserver/options/plugins.go per version,
k8s.io/apiserver pkg/server/options/admission.go Validate)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kemu.testing.cluster import Cluster

pytestmark = pytest.mark.integration


def test_an_emulated_124_apiserver_enables_pod_security_policy(tmp_path: Path) -> None:
    with Cluster(tmp_path) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(
            emulated_version="1.24",
            extra_args=["--enable-admission-plugins", "PodSecurityPolicy"],
        )
        log = c.logs()["apiserver"]
    [enabled] = [line for line in log.splitlines() if "admission plugins enabled:" in line]
    names = enabled.rsplit(": ", 1)[1].split(",")
    # 1.24's default set and order: PodSecurity (on from 1.23) before PodSecurityPolicy; no
    # ValidatingAdmissionPolicy (1.26) nor PodTopologyLabels (1.33)
    assert names.index("PodSecurity") + 1 == names.index("PodSecurityPolicy")
    assert "ValidatingAdmissionPolicy" not in names and "PodTopologyLabels" not in names
    assert "ServiceAccount" not in names  # the harness's --disable-admission-plugins
    assert "admission plugin PodSecurityPolicy is enabled, but kemu does not model it" in log


def test_an_emulated_137_apiserver_refuses_pod_security_policy_naming_it(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "apiserver",
            "--etcd-servers",
            "http://127.0.0.1:1",
            "--metrics-port",
            "0",
            "--emulated-version",
            "1.37",
            "--enable-admission-plugins",
            "PodSecurityPolicy,AlwaysPullImages",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=tmp_path,
    )
    assert proc.returncode != 0
    assert (
        'enable-admission-plugins plugin "PodSecurityPolicy" is unknown at emulated version '
        "1.37 (kube-apiserver 1.21-1.24 registers it)"
    ) in proc.stderr, proc.stderr
    assert "AlwaysPullImages" not in proc.stderr
