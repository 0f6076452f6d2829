"""Ctrl-C of `make run`, then `make run` again (issue #58 item 5): the leaders (scheduler,
controller-manager, autoscaler) release their leases on the way out, because etcd outlives the
apiserver (kemu.makerun.guard) and the apiserver keeps serving for its shutdown delay
(--shutdown-delay-duration 1s in the Procfile), so the next run schedules a pod at once instead
of waiting out the old leases (15 s), as a fresh cluster would: each leader of the second run
holds its lease within a few seconds of its first try (measured from its own log, so that a
loaded machine's slow starts do not count), and a pod created at once is scheduled."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import pytest

from kemu.testing import eventually_sync
from tests.integration.make_run.make_run_env import MakeRun, procfile_running

pytestmark = [pytest.mark.integration, pytest.mark.long]

LEADERS: Final = ("kube-scheduler", "kube-controller-manager", "cluster-autoscaler")
ACQUIRED_WITHIN: Final = 5.0
"""Wall seconds from a leader's first try to its lease; behind an unreleased lease: about 15."""
KLOG_TIME: Final = re.compile(r"\| [IWE]\d{4} (\d\d):(\d\d):(\d\d\.\d+)")
POD: Final = """
apiVersion: v1
kind: Pod
metadata: {name: after-restart}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: 100m}}}]
"""


def _leases(run: MakeRun) -> dict[str, dict[str, Any]]:
    items = run.get_json("leases", "-n", "kube-system")["items"]
    return {lease["metadata"]["name"]: lease.get("spec", {}) for lease in items}


def _led(run: MakeRun) -> dict[str, dict[str, Any]]:
    leases = _leases(run)
    assert all(leases.get(name, {}).get("holderIdentity") for name in LEADERS), leases
    return leases


def _logged_at(log: str, text: str) -> float:
    """The time of day (seconds) of the first line of honcho's log that has `text`."""
    for line in log.splitlines():
        if text in line and (m := KLOG_TIME.search(line)):
            return int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
    raise AssertionError(f"not logged: {text}")


def test_ctrl_c_releases_the_leases_and_the_next_make_run_schedules_at_once(
    tmp_path: Path,
) -> None:
    with procfile_running(tmp_path, "real") as first:
        eventually_sync(first.static_nodes_ready, timeout=90, interval=1)
        eventually_sync(lambda: _led(first), timeout=60, interval=1)
        code = first.interrupt()
    log = first.log()
    assert code == 130, log[-3000:]  # (honcho's exit code for SIGINT)
    for name in LEADERS:
        assert f"released lease kube-system/{name}" in log, log[-4000:]
    assert "Traceback" not in log, log[-4000:]

    # The leases as the first run left them: etcd and the apiserver only, no leader yet.
    with procfile_running(
        tmp_path, "real", first.ports, processes=("etcd", "apiserver"), log_name="storage.log"
    ) as storage:
        leases = eventually_sync(lambda: _leases(storage), timeout=60, interval=0.5)
        for name in LEADERS:
            spec = leases[name]
            assert spec.get("holderIdentity", "") == "", (name, spec)
            assert spec.get("leaseDurationSeconds") == 1, (name, spec)

    with procfile_running(tmp_path, "real", first.ports, log_name="second.log") as second:
        eventually_sync(lambda: second.kemuctl("get", "ns").returncode == 0, timeout=60)
        done = second.kemuctl("apply", "-f", "-", input=POD)
        assert done.returncode == 0, done.stderr

        def bound() -> str:
            pod = second.get_json("pod", "after-restart")
            node: str = pod["spec"].get("nodeName", "")
            assert node, pod.get("status")
            return node

        eventually_sync(bound, timeout=60, interval=0.5)
        log = second.log()
        for name in LEADERS:
            tried = _logged_at(log, f"attempting to acquire leader lease kube-system/{name}")
            held = _logged_at(log, f"successfully acquired lease kube-system/{name}")
            assert held - tried < ACQUIRED_WITHIN, (name, held - tried)
