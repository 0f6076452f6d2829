"""The chaos harness's CI profile on real processes (three etcd members, two apiservers,
two schedulers with leader election and SlowPreBind, a controller-manager, kubelets, the
cloud and the autoscaler; every client given both apiservers): tens of faults, every kind at
least once (SIGKILL and restart of every component, of one etcd member, of one apiserver, of
the autoscaler mid-scale-up and mid-drain, a paused scheduler leader; partitions of the
scheduler leader, a kubelet, an apiserver from etcd and an etcd member from its peers, a slow
etcd, skewed clocks, dropped watches) during pod churn with
priorities, preemption, slow PreBinds, resizes and deletions, and scale-ups and scale-downs
of a node group; no invariant may break. With fencing no stale leader's write may land; with
the cluster on the virtual clock (`--clock virtual`, rate 1) every apiserver kill must keep
the clock. The run with upstream's election on the real clock is the command line's, in
test_timeline_browser.py, which also opens its picture. A failure prints the seed and the
fault timeline; `python -m kemu.chaos --profile ci --seed N [--fencing]` replays it (or
KEMU_TEST_SEED=N for this test). About two minutes each: the longest tests of the suite."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kemu.chaos.leaders import Election
from kemu.chaos.profiles import CI
from kemu.chaos.runner import ChaosRun
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.rand import SeededRandom
from tests.integration.drivers.chaos_checks import assert_the_run_held

pytestmark = [pytest.mark.integration, pytest.mark.long]


# About two minutes on an idle machine; the limit is for a hang, not for speed.
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("election", "clock"),
    [(Election.FENCED, ClockMode.REAL), (Election.UPSTREAM, ClockMode.VIRTUAL)],
    ids=["fencing", "upstream-virtual-clock"],
)
def test_chaos_ci_profile_breaks_no_invariant(
    tmp_path: Path, rng: SeededRandom, election: Election, clock: ClockMode
) -> None:
    seed = rng.randrange(1 << 31)
    started = time.monotonic()

    def progress(line: str) -> None:  # shown with a failure, a timeout's too
        print(f"[chaos t+{time.monotonic() - started:.1f}s] {line}", file=sys.stderr, flush=True)

    run = ChaosRun(tmp_path, CI, seed, progress=progress, election=election, clock=clock)
    report = run.run()
    assert report.fencing is (election is Election.FENCED)
    assert report.clock == clock.value
    assert_the_run_held(report.to_json(), report.table())
