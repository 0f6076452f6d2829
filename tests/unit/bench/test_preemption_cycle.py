"""bench preemption_cycle: PreemptionBasic's failed cycles in-process choose the minimum of 3
victims per preemptor, every preemptor finding a candidate (the run exits otherwise)."""

from __future__ import annotations

import pytest

from bench import preemption_cycle


def test_every_preemptor_preempts_three_low_pods() -> None:
    filter_ms, dry_run_ms, victims, digest = preemption_cycle.run(nodes=40, preemptors=40, seed=3)
    assert victims == 3.0
    assert filter_ms > 0 and dry_run_ms > 0
    assert len(digest) == 16


def test_the_decisions_digest_depends_on_the_decisions_only() -> None:
    """The same seed decides alike (the digest is repeatable); another seed's random offsets
    choose other nodes."""
    a = preemption_cycle.run(nodes=30, preemptors=10, seed=5)[3]
    b = preemption_cycle.run(nodes=30, preemptors=10, seed=5)[3]
    c = preemption_cycle.run(nodes=30, preemptors=10, seed=6)[3]
    assert a == b
    assert a != c


def test_more_preemptors_than_nodes_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        preemption_cycle.main(["--nodes", "2", "--preemptors", "3"])
    assert "--preemptors" in capsys.readouterr().err
