"""`python -m bench apiserver` end to end on a small n: every cell runs without errors
(the scheduler's and the kubelet's calls too: binding, status PATCH, deletion), and each
apiserver cell says what one op cost the apiserver and etcd."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import apiserver

pytestmark = pytest.mark.integration


def test_every_cell_runs_and_says_its_cost_per_op(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "apiserver.json"
    argv = ["-n", "40", "--watch-seconds", "0.5", "--watch-rate", "100", "--json", str(out)]
    assert apiserver.main(argv) == 0
    assert "api ms/op" in capsys.readouterr().out
    rows = json.loads(out.read_text())["rows"]
    cells = {(r["system"], r["op"], r["clients"]): r for r in rows}
    for op in apiserver.OPS:
        for clients in apiserver.CONCURRENCY:
            row = cells[("apiserver", op, clients)]
            assert row["errors"] == 0, (op, clients, row["first_error"])
            assert row["cpu_ms_per_op"]["apiserver"] > 0
    # each write is one etcd write (a put; the deletion of a bound pod with grace 0 two, as
    # upstream: the deletionTimestamp, then the removal), a get none; (the tolerance: the
    # apiserver's own writes meanwhile, if any)
    writes = {
        op: apiserver.etcd_writes(cells[("apiserver", op, 16)]["etcd_per_op"])
        for op in apiserver.OPS
    }
    expected = {"create": 1.0, "get": 0.0, "update": 1.0, "bind": 1.0, "status": 1.0, "delete": 2.0}
    assert writes == pytest.approx(expected, abs=0.25)
