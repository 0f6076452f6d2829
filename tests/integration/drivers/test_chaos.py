"""The chaos harness's CI profile on real processes (three etcd members, two apiservers,
two schedulers with leader election and SlowPreBind, a controller-manager, kubelets, the
cloud and the autoscaler; every client given both apiservers): tens of faults, every kind at
least once (SIGKILL and restart of every component, of one etcd member, of one apiserver, of
the autoscaler mid-scale-up and mid-drain, a paused scheduler leader; partitions of the
scheduler leader, a kubelet, an apiserver from etcd and an etcd member from its peers, a slow
etcd, skewed clocks, dropped watches) during pod churn with
priorities, preemption, slow PreBinds, resizes and deletions, and scale-ups and scale-downs
of a node group; no invariant may break. By default the schedulers elect as upstream (a stale
leader's write is counted, not a violation); with fencing none may land. A failure prints
the seed and the fault timeline; `python -m kemu.chaos --profile ci --seed N [--fencing]`
replays it (or KEMU_TEST_SEED=N for this test). Also with the cluster on the virtual clock
(`--clock virtual`, rate 1: every apiserver kill must keep the clock). About two minutes each:
the longest tests of the suite."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from kemu.chaos.leaders import Election
from kemu.chaos.profiles import CI
from kemu.chaos.runner import ChaosRun
from kemu.chaos.schedule import KINDS
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.rand import SeededRandom

pytestmark = [pytest.mark.integration, pytest.mark.long]


# About two minutes on an idle machine; the limit is for a hang, not for speed.
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("election", "clock"),
    [
        (Election.UPSTREAM, ClockMode.REAL),
        (Election.FENCED, ClockMode.REAL),
        (Election.UPSTREAM, ClockMode.VIRTUAL),
    ],
    ids=["upstream", "fencing", "upstream-virtual-clock"],
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
    if report.fencing:
        assert report.stale_leader_writes == [], "\n" + report.table()
    assert report.faults >= 15
    assert set(report.faults_by_kind) == set(KINDS), report.faults_by_kind
    assert report.scaling is not None and report.scaling["scale_ups"] > 0, report.scaling
    assert report.scaling["nodes_deleted"] > 0, report.scaling
    # The profile's pods go 20 s after creation, and the workload ends before the check: the
    # pods left then are those whose deletion failed under a fault, none in a run whose faults
    # outlast the workload. What counts is that pods were bound, and that each left that fits
    # is bound.
    assert report.pods_ever_bound > 0, "\n" + report.table()
    assert report.pods_bound == report.pods_expected, "\n" + report.table()
    assert report.recovery_s, "no binding after any restart"
    assert not report.violations, "\n" + report.table()
