"""The cyclic garbage collector's tuning in kemu's long-running processes (kemu's process
tuning, as GOGC is Go's): the scheduler and the apiserver hold large caches of live objects
(a 5000-node cluster's nodes and pods; the apiserver's watch caches and their histories), and
a full collection walks every one of them. With CPython's default thresholds a young
collection runs every 700 net allocations and promotes survivors often, so full collections
of hundreds of ms (200-800 ms each over a 5000-node cache when measured in issue #16) land in
whatever request or scheduling cycle allocates past the threshold."""

from __future__ import annotations

import gc
from typing import Final

GC_THRESHOLDS: Final = (10_000, 10, 10)
"""A young collection every 10,000 net allocations instead of 700; fewer young collections
also promote less, so the full ones become rare."""


def tune_gc(*, freeze: bool) -> None:
    """Sets GC_THRESHOLDS; with `freeze`, collects once and moves every object alive (the
    modules, the caches' first contents) out of the collector's reach (gc.freeze), so no
    later collection walks them again. Called with freeze once a process's caches are
    filled (the scheduler's informers synced, the apiserver's watch caches ready)."""
    gc.set_threshold(*GC_THRESHOLDS)
    if freeze:
        gc.collect()
        gc.freeze()
