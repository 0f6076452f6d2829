"""`python -m bench dra_allocator` at a small size: every pod placed, one selector evaluation
per (expression, distinct device content), whatever the number of pods and nodes."""

from __future__ import annotations

from bench.dra_allocator import run


def test_small_run_places_every_pod_and_evaluates_each_device_once() -> None:
    out = run(nodes=5, devices=2, pods=10, cel=True)
    assert out["placed"] == 10
    # Two expressions (class, request) x two distinct device contents (index 0, 1).
    assert out["evaluations"] == 4
    assert out["calls_per_s"] > 0
