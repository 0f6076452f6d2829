"""The pairwise slice of the version-skew matrix (kemu/skew/matrix.yaml, `slice`), as
`python -m kemu.skew --slice` runs it: each cell on its own etcd with its own processes, the
scenario pack with expectations computed from the cell; and the unsupported cells refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from kemu.machinery.virtual_time import ClockMode
from kemu.skew import expect
from kemu.skew.matrix import load
from kemu.skew.runner import run_cell

pytestmark = [pytest.mark.integration, pytest.mark.skew, pytest.mark.long]

MATRIX = load()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("cell", MATRIX.slice, ids=lambda c: c.name)
def test_skew_slice_cell(cell, tmp_path: Path) -> None:
    report = run_cell(cell, root=tmp_path)
    assert set(report.results) == {expect.POLICY, *expect.SCENARIOS}
    failed = {s: report.details.get(s) for s, r in report.results.items() if r == "fail"}
    assert not failed, failed


@pytest.mark.timeout(120)
def test_skew_slice_cell_in_virtual_time(tmp_path: Path) -> None:
    """`python -m kemu.skew --clock virtual`: the slice's first cell, its cluster on the
    virtual clock (rate 1), gives the same results."""
    report = run_cell(MATRIX.slice[0], root=tmp_path, clock=ClockMode.VIRTUAL)
    assert set(report.results) == {expect.POLICY, *expect.SCENARIOS}
    failed = {s: report.details.get(s) for s, r in report.results.items() if r == "fail"}
    assert not failed, failed


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "cell", [c for c in MATRIX.cells if c.upgrade_to is not None], ids=lambda c: c.name
)
def test_skew_rolling_upgrade(cell, tmp_path: Path) -> None:
    report = run_cell(cell, root=tmp_path)
    assert report.results == {expect.POLICY: "pass", expect.UPGRADE: "pass"}, report.details


@pytest.mark.parametrize("cell", MATRIX.unsupported, ids=lambda c: c.name)
def test_skew_unsupported_cell_is_refused(cell, tmp_path: Path) -> None:
    report = run_cell(cell, unsupported=True, root=tmp_path)
    assert report.results == {expect.POLICY: "pass"}, report.details
    assert report.details[expect.POLICY]
