"""PreemptionScenario.generate's rules for repeatable scenarios (kemu/testing/determinism.py,
docs/virtual-time.md): a plain burst's writes come in the scheduling queue's order."""

from __future__ import annotations

import random

from kemu.testing.determinism import PreemptionScenario, Writes


def test_a_plain_bursts_replica_set_is_never_above_its_last_preemptor() -> None:
    """Its pods are written after every preemptor, so they must not go before them in the
    queue (KEMU_TEST_SEED=18065483's second scenario drew a set at 102 after preemptors at
    102, 101, 100, 100, and two runs bound its pods differently under load)."""
    drawn_above = 0
    for seed in range(300):
        rng = random.Random(seed)
        burst = PreemptionScenario.generate(rng, preemptor_writes=Writes.BURST, replica_sets=1.0)
        assert burst.replica_set is not None
        last = min(p.priority for p in burst.preemptors)
        assert burst.replica_set.priority <= last, (seed, burst)
        # the same draws held: the set keeps the priority it drew
        held = PreemptionScenario.generate(
            random.Random(seed), preemptor_writes=Writes.HELD, replica_sets=1.0
        )
        assert held.replica_set is not None
        drawn_above += held.replica_set.priority > min(p.priority for p in held.preemptors)
    assert drawn_above > 0  # (the rule had something to do)
