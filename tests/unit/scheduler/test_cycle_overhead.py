"""The scheduling cycle's fixed costs cut without changing what it computes: the metrics'
direct observe/inc, constant scores on the batch Score path."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.scheduling.columns import ColumnConstantScorePlugin
from kemu.scheduling.config import default_config
from kemu.scheduling.filter_score import ColumnPaths
from kemu.scheduling.interface import CycleState
from kemu.scheduling.plugins.registry import in_tree_registry
from kemu.scheduling.plugins.taint_toleration import TaintToleration
from kemu.scheduling.runtime import (
    Framework,
    FrameworkOptions,
    fast_observer,
    observer_from_histogram,
)
from kemu.scheduling.types import MAX_NODE_SCORE
from kemu.testing.builders import make_node, make_pod
from scheduler.app import new_cache
from scheduler.metrics import SchedulerMetrics, fast_inc
from scheduler.queue.scheduling_queue import PriorityQueue
from scheduler.schedule_one import CycleSettings, Scheduler

VALUES = [0.0, 1e-6, 0.001, 0.0011, 0.005, 0.1, 0.25, 1.0, 7.5, 1e9, math.inf, -1.0, math.nan]


def _histograms() -> tuple[CollectorRegistry, Histogram, CollectorRegistry, Histogram]:
    out: list[object] = []
    for _ in range(2):
        registry = CollectorRegistry()
        h = Histogram(
            "h_seconds", "help", ["point"], buckets=[0.001, 0.005, 0.25, 1.0], registry=registry
        )
        out += [registry, h]
    return out[0], out[1], out[2], out[3]  # type: ignore[return-value]


def test_fast_observer_exposes_what_observe_does() -> None:
    reg_a, a, reg_b, b = _histograms()
    direct = fast_observer(b.labels("x"))
    for v in VALUES:
        a.labels("x").observe(v)
        direct(v)
    assert _exposed(reg_a) == _exposed(reg_b)


def _exposed(registry: CollectorRegistry) -> list[str]:
    """The exposition without the creation timestamps."""
    return [
        line for line in generate_latest(registry).decode().splitlines() if "_created" not in line
    ]


def test_observer_from_histogram_uses_the_direct_form_and_keeps_the_labels() -> None:
    registry = CollectorRegistry()
    labelled = Histogram("e_seconds", "help", ["extension_point", "status", "profile"],
                         buckets=[0.001, 1.0], registry=registry)  # fmt: skip
    observe = observer_from_histogram(labelled)
    observe("Score", "Success", "p", 0.0005)
    observe("Score", "Success", "p", 2.0)
    text = generate_latest(registry).decode()
    assert (
        'e_seconds_bucket{extension_point="Score",le="0.001",profile="p",status="Success"} 1.0'
        in text
    )
    assert 'e_seconds_count{extension_point="Score",profile="p",status="Success"} 2.0' in text


def test_fast_observer_falls_back_to_observe_for_other_observers() -> None:
    seen: list[float] = []

    class Other:
        def observe(self, amount: float) -> None:
            seen.append(amount)

    fast_observer(Other())(0.5)
    assert seen == [0.5]


def test_fast_inc_counts_as_inc() -> None:
    registry = CollectorRegistry()
    c = Counter("c", "help", ["profile"], registry=registry)
    inc = fast_inc(c.labels("p"))
    inc(3)
    inc(0)
    c.labels("p").inc(2)
    assert registry.get_sample_value("c_total", {"profile": "p"}) == 5.0


def _scheduler(nodes: int, *, taint: bool) -> tuple[Scheduler, Framework]:
    clock = FakeClock()
    gates = FeatureGates.default()
    cache = new_cache(clock, gates)
    for i in range(nodes):
        node = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods="110")
        if taint and i % 3 == 0:
            node = node.taint("k", effect="PreferNoSchedule")
        cache.add_node(node.obj())
    profile = default_config().profiles[0]
    rng = random.Random(1)
    fwk = Framework(
        profile, in_tree_registry(), options=FrameworkOptions(clock=clock, gates=gates, rng=rng)
    )
    queue = PriorityQueue(clock=clock, less=fwk.queue_sort_func())
    fwk.set_nominator(queue.nominator)
    sched = Scheduler(
        client=None,  # type: ignore[arg-type]  # schedule_pod makes no API call
        cache=cache,
        queue=queue,
        profiles={profile.scheduler_name: fwk},
        clock=clock,
        settings=CycleSettings.of(gates, paths=ColumnPaths(min_nodes=0)),
        metrics=SchedulerMetrics(None),
        pod_lister=None,  # type: ignore[arg-type]
    )
    return sched, fwk


@pytest.mark.parametrize("taint", [False, True])
def test_taint_toleration_constant_score_is_what_its_columns_give(taint: bool) -> None:
    sched, fwk = _scheduler(12, taint=taint)
    sched.cache.update_snapshot(sched.snapshot)
    fwk.set_snapshot(sched.snapshot)
    plugin = fwk.plugin(TaintToleration.NAME)
    assert isinstance(plugin, TaintToleration)
    assert isinstance(plugin, ColumnConstantScorePlugin)
    pod = make_pod("p").req(cpu="100m", memory="64Mi").obj()
    state = CycleState()
    infos = sched.snapshot.list()
    assert (
        plugin.constant_score_columns(state, pod, sched.snapshot.columns()) is None
    )  # no PreScore
    assert fwk.run_pre_score_plugins(state, pod, infos).is_success()
    columns = sched.snapshot.columns()
    rows = np.arange(len(infos), dtype=np.int64)
    constant = plugin.constant_score_columns(state, pod, columns)
    raw = plugin.score_columns(state, pod, columns, rows)
    assert raw is not None
    normalized = plugin.normalize_columns(state, pod, raw)
    assert normalized is not None
    if taint:
        assert constant is None
        assert len(set(normalized.tolist())) == 2
    else:
        assert constant == MAX_NODE_SCORE
        assert normalized.tolist() == [constant] * len(infos)
    # The framework's totals are the per-node path's either way.
    scores, status = fwk.run_score_plugins(state, pod, infos)
    totals = fwk.column_runner().run_score_columns(state, pod, columns, rows)
    assert status.is_success() and totals is not None
    assert totals.tolist() == [s.total_score for s in scores]
