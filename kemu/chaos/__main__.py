"""python -m kemu.chaos [--profile ci|full] [--seed N] [--fencing] [--clock real|virtual]
[--latency LATENCY] [--json FILE] [--html FILE] [--workload FILE] [--root DIR] [--quiet]: one chaos run; exit
status 1 when an invariant broke (or the --html file could not be written), 2 for bad
arguments."""

from __future__ import annotations

import argparse
import dataclasses
import logging
import random
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from kemu.chaos.leaders import Election
from kemu.chaos.profiles import PROFILES
from kemu.chaos.runner import ChaosRun
from kemu.chaos.schedule import DEFAULT_LATENCY
from kemu.chaos.workload import WorkloadError, parse_workload
from kemu.component.latency import latency_flag
from kemu.machinery.latency import SYNTAX
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import add_clock_argument
from kemu.timeline.render import OutputPathError, check_output_path, write_page


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kemu.chaos",
        description="Break a kemu cluster on a seeded schedule while a workload runs, then "
        "check that nothing was lost or done twice.",
    )
    parser.add_argument("--profile", choices=sorted(PROFILES), default="ci")
    parser.add_argument("--seed", type=int, help="the fault schedule's seed (default: random)")
    parser.add_argument(
        "--fencing",
        action="store_true",
        help="run the schedulers with --leader-elect-fencing: a stale leader write is then a "
        "violation (by default they elect as upstream, and such writes are only counted)",
    )
    add_clock_argument(parser)
    parser.add_argument(
        "--latency",
        type=latency_flag,
        metavar="LATENCY",
        help="the distribution of the `latency` faults' added round trip (between the "
        "components and the apiservers, and between the apiservers and etcd), drawn from the "
        f"seed: {SYNTAX} (default {DEFAULT_LATENCY})",
    )
    parser.add_argument("--json", metavar="FILE", help="write the result as JSON to FILE")
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="record the run's timeline and write its picture to FILE: one self-contained "
        "HTML page (no network needed to open it) with a lane per node, pods as bars from "
        "binding to deletion coloured by priority, nominatedNodeName spans, preemptions, "
        "pending pods and nodes over time, the faults and the autoscaler's scale-ups and "
        "downs, and each pod's story on hover or click",
    )
    parser.add_argument(
        "--workload", metavar="FILE", help="a YAML workload (see kemu/chaos/workload.py)"
    )
    parser.add_argument(
        "--root", metavar="DIR", help="where the cluster's data and logs go (default: a temp dir)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    profile = PROFILES[args.profile]
    if args.latency is not None:
        try:
            mix = dataclasses.replace(profile.mix, latency=args.latency)
        except ValueError as e:
            parser.error(f"--latency: {e}")
        profile = dataclasses.replace(profile, mix=mix)
    workload = None
    if args.workload is not None:
        try:
            workload = parse_workload(Path(args.workload).read_text())
        except OSError as e:
            parser.error(f"--workload: {e.strerror}: {args.workload}")
        except WorkloadError as e:
            parser.error(f"--workload {args.workload}: {e}")
    if args.seed is not None and args.seed < 0:
        parser.error("--seed: must be >= 0")
    if args.html is not None:
        try:
            check_output_path(args.html)
        except OutputPathError as e:
            print(f"python -m kemu.chaos: error: --html: {e}", file=sys.stderr)
            return 2
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 31)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    def progress(line: str) -> None:
        if not args.quiet:
            print(f"[chaos] {line}", file=sys.stderr, flush=True)

    root = Path(args.root) if args.root else Path(tempfile.mkdtemp(prefix="kemu-chaos-"))
    progress(f"profile {profile.name}, seed {seed}, cluster in {root}")
    election = Election.FENCED if args.fencing else Election.UPSTREAM
    progress(f"leader election: {election.value}, clock: {args.clock}")
    clock = ClockMode(args.clock)
    run = ChaosRun(
        root, profile, seed, workload, progress, election, clock, timeline=args.html is not None
    )
    report = run.run()
    print(report.table())
    if args.json:
        report.write_json(args.json)
    if args.html is not None and run.timeline is not None:
        try:
            size = write_page(args.html, [run.timeline], "kemu.chaos")
        except OSError as e:
            print(f"python -m kemu.chaos: error: --html: {e}", file=sys.stderr)
            return 1
        progress(f"timeline written to {args.html} ({size} bytes)")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
