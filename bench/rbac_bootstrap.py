"""The start cost of the RBAC bootstrap policy (issue #60 item 3): an apiserver's time from
launch to /readyz on a fresh etcd with the rbac/bootstrap-roles hook (about 100 objects
created), with it on an etcd that already holds the policy (a restart: every object read and
found as it should be) and without it (--runtime-config rbac.authorization.k8s.io/v1=false),
the three alternated in rounds, each on its own etcd; and the hook's own time from its log
line. Median and spread of the rounds.

    python -m bench rbac_bootstrap [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from apiserver.rbac_bootstrap import HOOK
from bench.common import format_table, host_cpu
from kemu.testing import Cluster
from kemu.testing.eventually import eventually_sync
from kemu.testing.processes import url_ok

_HOOK = re.compile(r"RBAC bootstrap policy reconciled: (\d+) writes in ([0-9.]+)s")
CASES = ("fresh", "restart", "off")


def _ok(url: str) -> bool:
    try:
        return url_ok(url)
    except OSError:  # (not listening yet)
        return False


def _start(root: Path, case: str) -> tuple[float, float | None, int | None]:
    """One apiserver started and timed: (ready seconds, hook seconds, writes)."""
    with Cluster(root) as c:
        c.start_etcd(unsafe_no_fsync=True)
        runtime = {"rbac.authorization.k8s.io/v1": "false"} if case == "off" else None
        if case == "restart":
            first = c.start_apiserver(name="first")
            hook = f"{first.readyz_url}/{HOOK}"
            eventually_sync(lambda: _ok(hook), timeout=60, interval=0.01)
            c.terminate("first")
        t0 = time.monotonic()
        proc = c.start_apiserver(runtime_config=runtime, wait=False)
        # (each check asked by name: the apiserver's /readyz passes before its serving's
        # checks are registered)
        checks = ["serving", "watch-cache"] + ([] if case == "off" else [HOOK])
        urls = [f"{proc.readyz_url}/{check}" for check in checks]
        eventually_sync(lambda: all(_ok(u) for u in urls), timeout=60, interval=0.01)
        ready = time.monotonic() - t0
        match = _HOOK.search(proc.logs())
        if match is None:
            return ready, None, None
        return ready, float(match.group(2)), int(match.group(1))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench rbac_bootstrap")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]
    ready: dict[str, list[float]] = {case: [] for case in CASES}
    hook: dict[str, list[float]] = {case: [] for case in CASES}
    writes: dict[str, int | None] = {}
    with tempfile.TemporaryDirectory(prefix="bench-rbac-") as tmp:
        for r in range(args.rounds):
            for case in CASES:
                seconds, hook_seconds, n = _start(Path(tmp) / f"{case}-{r}", case)
                ready[case].append(seconds)
                if hook_seconds is not None:
                    hook[case].append(hook_seconds)
                writes[case] = n
    rows = []
    for case in CASES:
        rs = sorted(ready[case])
        hs = hook[case]
        rows.append(
            [
                case,
                f"{statistics.median(rs):.2f} ({rs[0]:.2f}-{rs[-1]:.2f})",
                f"{statistics.median(hs) * 1000:.0f}" if hs else "-",
                str(writes[case]) if writes[case] is not None else "-",
            ]
        )
    print(f"host {host_cpu()}, load at start {load:.1f}, {args.rounds} rounds")
    print(format_table(["case", "ready s median (min-max)", "hook ms", "writes"], rows))
    return 0
