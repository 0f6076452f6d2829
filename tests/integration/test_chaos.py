"""The chaos harness's CI profile on real processes (three etcd members, two apiservers,
two schedulers with leader election and SlowPreBind, a controller-manager, kubelets, the
cloud and the autoscaler; every client given both apiservers): tens of faults, every kind at
least once (SIGKILL and restart of every component, of one etcd member, of one apiserver, of
the autoscaler mid-scale-up and mid-drain, a paused scheduler leader) during pod churn with
priorities, preemption, slow PreBinds, resizes and deletions, and scale-ups and scale-downs
of a node group; no invariant may break. A failure prints
the seed and the fault timeline; `python -m kemu.chaos --profile ci --seed N` replays it (or
KEMU_TEST_SEED=N for this test). About two minutes: the longest test of the suite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kemu.chaos.profiles import CI
from kemu.chaos.runner import ChaosRun
from kemu.chaos.schedule import KINDS
from kemu.testing.rand import SeededRandom

pytestmark = [pytest.mark.integration]

# A known autoscaler bug, found by this harness (bench/README.md, "chaos"): a Node the
# autoscaler deletes while pods are bound to it (an "empty" node deleted with pods bound since
# its snapshot; a restarted autoscaler removing the ToBeDeleted taint of a node the cloud is
# still deleting). Until it is fixed in autoscaler/, such a run is an expected failure; any
# other violation fails the test.
KNOWN_AUTOSCALER_BUG = re.compile(r"^Node \S+ deleted \(rv \d+\) under bound pod ")


# About two minutes on an idle machine; the limit is for a hang, not for speed.
@pytest.mark.timeout(300)
def test_chaos_ci_profile_breaks_no_invariant(tmp_path: Path, rng: SeededRandom) -> None:
    seed = rng.randrange(1 << 31)
    report = ChaosRun(tmp_path, CI, seed).run()
    assert report.faults >= 15
    assert set(report.faults_by_kind) == set(KINDS), report.faults_by_kind
    assert report.scaling is not None and report.scaling["scale_ups"] > 0, report.scaling
    assert report.scaling["nodes_deleted"] > 0, report.scaling
    assert report.pods_bound > 0
    assert report.recovery_s, "no binding after any restart"
    others = [v for v in report.violations if not KNOWN_AUTOSCALER_BUG.match(v)]
    assert not others, "\n" + report.table()
    if report.violations:
        pytest.xfail(f"the known autoscaler bug: {report.violations[:3]}")
