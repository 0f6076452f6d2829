"""The garbage-collector tuning of the scheduler and apiserver processes (kemu.component.gc_tuning)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from kemu.component.gc_tuning import GC_THRESHOLDS, tune_gc


@pytest.fixture
def restore_gc() -> Iterator[None]:
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


@pytest.mark.usefixtures("restore_gc")
def test_thresholds_without_freeze() -> None:
    frozen = gc.get_freeze_count()
    tune_gc(freeze=False)
    assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_freeze_count() == frozen


@pytest.mark.usefixtures("restore_gc")
def test_freeze_moves_live_objects_out_of_reach() -> None:
    gc.unfreeze()
    alive = [[i] for i in range(1000)]  # tracked containers, alive across the freeze
    tune_gc(freeze=True)
    assert gc.get_threshold() == GC_THRESHOLDS
    assert gc.get_freeze_count() >= len(alive)
    # Frozen: still tracked, but in no generation a collection walks.
    probe = alive[0]
    assert gc.is_tracked(probe)
    assert not any(o is probe for o in gc.get_objects())
