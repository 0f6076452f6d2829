"""What `python -m kemu.trace` and `python -m kemu.whatif` share: the replay's flags, reading a
trace and its CLUSTER.yaml, the replay's options, the outputs, and errors as one line on stderr
(exit status 2 for bad arguments or files, 1 when the cluster failed)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Final, NoReturn

from kemu.machinery.duration import DurationError, parse_duration
from kemu.timeline.render import OutputPathError, check_output_path, write_page
from kemu.trace import cluster_config, files, objects
from kemu.trace.model import Trace
from kemu.trace.replay import ReplayOptions, ReplayResult
from kemu.trace.report import TraceInfo

PROG: Final = "python -m kemu.trace"


def add_replay_arguments(parser: argparse.ArgumentParser) -> None:
    """The options a replay takes (kemu.whatif's too)."""
    parser.add_argument(
        "--speed",
        type=float,
        metavar="N",
        help="replay at N times real time (default: as fast as the work allows, repeatable)",
    )
    parser.add_argument(
        "--tail",
        default="60s",
        metavar="D",
        help="how long the cluster runs after the last event, in its time (default 60s)",
    )
    parser.add_argument("--root", metavar="DIR", help="the cluster's data and logs (default: tmp)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def fail(message: str, code: int = 2) -> NoReturn:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(code)


def duration_arg(flag: str, text: str | None) -> float | None:
    if text is None:
        return None
    try:
        seconds = parse_duration(text)
    except DurationError as e:
        fail(f"{flag}: {e}")
    if seconds < 0:
        fail(f"{flag}: {text} is negative")
    return seconds


def load_trace(path: str) -> tuple[Trace, TraceInfo]:
    try:
        trace, fmt = files.load(Path(path))
    except files.TraceFileError as e:
        fail(str(e))
    if not trace.events:
        fail(f"{path}: the trace has no events")
    info: TraceInfo = {
        "file": str(path),
        "format": fmt,
        "events": len(trace.events),
        "applied": trace.objects_applied(),
        "deleted": trace.objects_deleted(),
        "kinds": trace.kinds(),
    }
    return trace, info


def load_cluster(path: str | None, trace: Trace) -> cluster_config.ClusterConfig:
    """CLUSTER.yaml, or a cluster sized to the trace."""
    if path is None:
        return cluster_config.fitted(*objects.peak_demand(trace))
    try:
        text = Path(path).read_text()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    try:
        return cluster_config.parse(text)
    except cluster_config.ClusterConfigError as e:
        fail(f"{path}: {e}")


def progress_printer(quiet: bool, tag: str = "trace") -> Callable[[str], None]:
    def progress(line: str) -> None:
        if not quiet:
            print(f"[{tag}] {line}", file=sys.stderr, flush=True)

    return progress


def replay_options(
    args: argparse.Namespace, root: Path | None, tag: str = "trace"
) -> ReplayOptions:
    if args.speed is not None and not args.speed > 0:
        fail("--speed: must be > 0")
    tail = duration_arg("--tail", args.tail)
    assert tail is not None
    return ReplayOptions(
        speed=args.speed, tail=tail, root=root, progress=progress_printer(args.quiet, tag)
    )


def check_html(path: str | None) -> None:
    """An --html path that cannot be written is refused before anything starts."""
    if path is not None:
        try:
            check_output_path(path)
        except OutputPathError as e:
            fail(f"--html: {e}")


def write_outputs(result: ReplayResult, json_out: str | None, html_out: str | None) -> None:
    if json_out:
        Path(json_out).write_text(json.dumps(result.report, indent=2, sort_keys=False) + "\n")
    if html_out:
        write_page(html_out, [result.timeline], "kemu trace replay")


def sigterm_as_interrupt() -> None:
    """SIGTERM ends a run as SIGINT does: the cluster is stopped on the way out."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
