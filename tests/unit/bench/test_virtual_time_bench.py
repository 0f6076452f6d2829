"""bench virtual_time's pure parts: its options and its table."""

from __future__ import annotations

import argparse
import re

import pytest

from bench.virtual_time import Idle, Options, Result, Span, options_from_args, render


def _args(**kw: object) -> argparse.Namespace:
    base = {"nodes": 100, "hours": 1.0, "only": "", "lease_batch": "on", "json": None}
    return argparse.Namespace(**(base | kw))


def test_options_refuse_what_cannot_run() -> None:
    assert options_from_args(_args()) == Options()
    with pytest.raises(ValueError, match="--nodes: 0"):
        options_from_args(_args(nodes=0))
    with pytest.raises(ValueError, match="--hours"):
        options_from_args(_args(hours=0.0))
    assert options_from_args(_args(lease_batch="both")).batch_variants == (False, True)


def test_the_table_gives_virtual_wall_and_their_ratio_per_phase() -> None:
    idle = Idle(
        True,
        Span(virtual=3600.0, wall=60.0),
        jumps=1200,
        ready=100,
        renewals=36000,
        settle_virtual=10.0,
    )
    idle.cpu_seconds = {"apiserver": 18.0, "etcd": 3.6}
    r = Result(
        idle=[idle],
        scale_up=Span(virtual=40.0, wall=2.0),
        errors=["autoscaler: TimeoutError: "],
    )
    text = render(Options(), r)
    rows = {
        cells[0]: cells[1:]
        for cells in (re.split(r"\s{2,}", line.strip()) for line in text.splitlines())
    }
    assert rows["idle, 100 hollow nodes, advance 1 h, lease batch on"] == [
        "3600",
        "60.0",
        "60.0",
        "1200 jumps; 100/100 nodes Ready after; measured after 10 virtual s of the nodes' "
        "start-up; CPU ms per renewal (36000): apiserver 0.500, "
        "etcd 0.100, kubelet -, controllermanager -, scheduler -",
    ]
    assert rows["autoscaler scale-up, 3 nodes"] == ["40", "2.0", "20"]
    assert "scale-down" not in text  # not measured
    assert "errors:\n  autoscaler: TimeoutError" in text
