"""`python -m bench apiserver` end to end on a small n: every cell runs without errors
(the scheduler's and the kubelet's calls too: binding, Scheduled event, status PATCH,
deletion), and each apiserver cell says what one op cost the apiserver and etcd."""

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
    expected = {
        "create": 1.0,
        "get": 0.0,
        "update": 1.0,
        "bind": 1.0,
        "event": 1.0,
        "status": 1.0,
        "delete": 2.0,
    }
    assert writes == pytest.approx(expected, abs=0.25)


def test_security_puts_plaintext_tls_and_rbac_side_by_side(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`--security`: creates and gets through each of the three apiservers (bench/tls.py's),
    each with its apiserver's and client's CPU per call, then the two ratios."""
    assert apiserver.main(["--security", "-n", "30", "--rounds", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    for edge in ("plain", "tls", "rbac"):
        for kind in apiserver.SECURITY_KINDS:
            line = next(x for x in lines if x.split()[:2] == [edge, kind] and "calls/s" in x)
            assert "apiserver " in line and " us/call, client " in line, line
    for ratio in ("tls/plain", "rbac/tls"):
        assert {x.split()[1] for x in lines if x.startswith(ratio)} == {"create", "get"}
