"""python -m kemu.skew [--list] [--slice] [--cell NAME ...] [--matrix FILE] [--clock real|virtual]
[--json FILE]

Runs cells of the version-skew matrix (matrix.yaml) and prints a Markdown table of cells ×
scenarios on stdout; exit status 1 when any result is "fail". Without --cell: every cell of the
matrix (--slice: of its slice), then every unsupported cell (which must be refused). `--list`
prints the selected cells' names, one a line (with --json FILE: also a JSON array of them, for
a CI matrix). Errors (unknown cell, bad matrix file) are one line on stderr, exit status 2.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from kemu.machinery.virtual_time import ClockMode
from kemu.skew import expect
from kemu.skew.matrix import DEFAULT_MATRIX, Matrix, MatrixError, load
from kemu.skew.policy import Cell
from kemu.skew.runner import CellReport, run_cell
from kemu.testing.cluster import add_clock_argument

COLUMNS = ("apiserver", "apiserver-2", "scheduler", "controllermanager", "kubelet", "autoscaler")
SHORT = {"pass": "pass", "fail": "**FAIL**", "expected-difference": "exp-diff"}


class UsageError(Exception):
    pass


def select(matrix: Matrix, names: Sequence[str], slice_: bool) -> list[tuple[Cell, bool]]:
    """(cell, unsupported) pairs to run, in order; UsageError names an unknown cell."""
    if names:
        unsupported = {c.name for c in matrix.unsupported}
        out = []
        for name in names:
            try:
                out.append((matrix.find(name), name in unsupported))
            except KeyError:
                raise UsageError(f'unknown cell "{name}" (python -m kemu.skew --list)') from None
        return out
    cells = matrix.slice if slice_ else matrix.cells
    return [(c, False) for c in cells] + [(c, True) for c in matrix.unsupported]


def table(reports: Sequence[CellReport]) -> str:
    scenarios = [expect.POLICY, *expect.SCENARIOS, expect.UPGRADE]
    head = ["cell", *COLUMNS, *scenarios, "s"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in reports:
        comps = r.cell.components()
        row = [r.cell.name, *(comps.get(c, "") for c in COLUMNS)]
        row += [SHORT.get(r.results.get(s, ""), "-") for s in scenarios]
        row.append(f"{r.seconds:.0f}")
        lines.append("| " + " | ".join(row) + " |")
    notes = [
        f"- {r.cell.name} {s}: {'; '.join(d)}"
        for r in reports
        for s, d in r.details.items()
        if d and (r.results.get(s) == "fail" or s == expect.POLICY)
    ]
    if notes:
        lines += ["", *notes]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kemu.skew", description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print the cells' names only")
    parser.add_argument("--slice", action="store_true", help="the pairwise slice `make test` runs")
    parser.add_argument(
        "--cell", action="append", default=[], metavar="NAME", help="run this cell (repeatable)"
    )
    parser.add_argument(
        "--matrix", type=Path, default=DEFAULT_MATRIX, metavar="FILE", help="the matrix file"
    )
    add_clock_argument(parser)
    parser.add_argument(
        "--json",
        type=Path,
        metavar="FILE",
        help="write the results (or, with --list, the names) as JSON",
    )
    args = parser.parse_args(argv)
    try:
        matrix = load(args.matrix)
        cells = select(matrix, args.cell, args.slice)
    except (MatrixError, UsageError) as e:
        print(f"kemu.skew: {e}", file=sys.stderr)
        return 2
    if args.list:
        names = [c.name for c, _ in cells]
        print("\n".join(names))
        if args.json:
            args.json.write_text(json.dumps(names) + "\n")
        return 0
    logging.basicConfig(level=logging.ERROR, format="%(levelname)s %(name)s: %(message)s")
    start = time.monotonic()
    reports = []
    for i, (cell, unsupported) in enumerate(cells, 1):
        report = run_cell(cell, unsupported=unsupported, clock=ClockMode(args.clock))
        reports.append(report)
        bad = [s for s, r in report.results.items() if r == "fail"]
        print(
            f"[{i}/{len(cells)}] {cell.name}: {'FAIL ' + ','.join(bad) if bad else 'ok'} "
            f"({report.seconds:.1f}s)",
            file=sys.stderr,
        )
        for warning in report.warnings:
            print(f"  warning: {warning}", file=sys.stderr)
    print(table(reports))
    failed = sum(r == "fail" for rep in reports for r in rep.results.values())
    print(f"\n{len(reports)} cells, {failed} failed results, {time.monotonic() - start:.0f}s")
    if args.json:
        args.json.write_text(
            json.dumps({"clock": args.clock, "cells": [r.to_json() for r in reports]}, indent=2)
            + "\n"
        )
    return 1 if failed else 0
