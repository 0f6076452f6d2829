"""python -m kemu.whatif TRACE --a A.yaml [--b B.yaml] [--apiserver-latency L] [--etcd-latency L]
[--json OUT] [--html OUT] [--fail-on-diff] [--bind-threshold S] [--parallel] [--speed N]
[--tail D] [--root DIR] [--quiet]

One trace replayed under two cluster configurations (CLUSTER.yaml each, docs/traces.md), one
fresh cluster after the other (with --parallel, both at once, each replay in a process of its
own), and the two reports side by side with the pods that differ (kemu.trace.diff). JSON: {"a": report, "b": report, "diff": [...]}. In virtual time a
configuration compared with itself gives an empty diff. Exit status 0, or with
--fail-on-diff 1 when the diff is not empty (the reports are written either way); 2 for bad
arguments.

"What if the apiserver answers in 200 ms" (issue #58 item 4): `--apiserver-latency 200ms` (and
`--etcd-latency`) replay B with that latency on the API path (its CLUSTER.yaml's `latency`
replaced; without --b, B is A's file), in virtual seconds, so A at 0 and B at 200 ms compare
side by side; a pod bound later in B by more than --bind-threshold is a `bound` difference.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import signal
import sys
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from pathlib import Path

from kemu.component.latency import latency_flag
from kemu.machinery.latency import SYNTAX
from kemu.timeline.model import Timeline
from kemu.timeline.render import Table, render_page
from kemu.trace.cli import (
    add_replay_arguments,
    check_html,
    fail,
    load_cluster,
    load_trace,
    replay_options,
    sigterm_as_interrupt,
)
from kemu.trace.cluster_config import ClusterConfig
from kemu.trace.diff import DEFAULT_BIND_THRESHOLD, Comparison, Difference, diff
from kemu.trace.model import Trace
from kemu.trace.replay import Replay, ReplayResult
from kemu.trace.report import table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kemu.whatif",
        description="Replay one trace under two cluster configurations and compare them.",
    )
    parser.add_argument("trace", metavar="TRACE", help="a SimKube trace or a KSS record")
    parser.add_argument("--a", required=True, metavar="A.yaml", help="the first cluster")
    parser.add_argument(
        "--b",
        metavar="B.yaml",
        help="the second cluster (default, with a latency flag: A's file, with that latency)",
    )
    parser.add_argument(
        "--apiserver-latency",
        type=latency_flag,
        metavar="LATENCY",
        help="B's latency on every component's calls to the apiserver, in virtual time: "
        f"{SYNTAX} (drawn from B's seed)",
    )
    parser.add_argument(
        "--etcd-latency",
        type=latency_flag,
        metavar="LATENCY",
        help="B's latency on every round trip of its apiserver to etcd, in virtual time",
    )
    parser.add_argument("--json", metavar="OUT", help="write {a, b, diff} as JSON")
    parser.add_argument(
        "--html",
        metavar="OUT",
        help="write both runs' pictures (kemu.timeline) and the differences as one page",
    )
    parser.add_argument("--fail-on-diff", action="store_true", help="exit 1 when the runs differ")
    parser.add_argument(
        "--bind-threshold",
        type=float,
        default=DEFAULT_BIND_THRESHOLD,
        metavar="S",
        help="seconds of difference in a pod's time to bind that count (default 1)",
    )
    parser.add_argument(
        "--parallel",
        action="store_true",
        help="replay A and B at the same time, each in a process of its own (the runs are "
        "those of one after the other in virtual time; their wall times share the cores)",
    )
    add_replay_arguments(parser)
    return parser


def side_by_side(result: Comparison) -> str:
    left = table(result["a"]).splitlines()
    right = table(result["b"]).splitlines()
    width = max(len(line) for line in left)
    lines = [f"{'a: ' + result['names']['a']:<{width}}  | b: {result['names']['b']}"]
    for i in range(max(len(left), len(right))):
        la = left[i] if i < len(left) else ""
        lb = right[i] if i < len(right) else ""
        lines.append(f"{la:<{width}}  | {lb}")
    lines.append(f"differences: {len(result['diff'])}")
    for d in result["diff"][:50]:
        lines.append(f"  {d['pod']}: {d['what']}: {d['a']} -> {d['b']}")
    if len(result["diff"]) > 50:
        lines.append(f"  ... {len(result['diff']) - 50} more (see --json)")
    return "\n".join(lines)


def page(names: dict[str, str], a: Timeline, b: Timeline, differences: list[Difference]) -> str:
    """The comparison as one page: a section per run (its picture, its report's figures as
    its facts), titled A and B with their configurations, then the differences as a table."""
    a.title, b.title = f"A: {names['a']}", f"B: {names['b']}"
    table = Table(
        "Differences",
        ("pod", "what", f"A: {names['a']}", f"B: {names['b']}"),
        [(d["pod"], d["what"], d["a"], d["b"]) for d in differences],
        empty="The two runs agree.",
    )
    return render_page([a, b], "kemu whatif", [table])


def configurations(
    args: argparse.Namespace, trace: Trace
) -> tuple[dict[str, str], ClusterConfig, ClusterConfig]:
    """A's and B's names and configurations: B's file (A's without --b) with the latency
    flags' latency on its API path."""
    if args.b is None and args.apiserver_latency is None and args.etcd_latency is None:
        fail("--b: required unless --apiserver-latency or --etcd-latency gives B")
    b_file = args.b if args.b is not None else args.a
    config_a, config_b = load_cluster(args.a, trace), load_cluster(b_file, trace)
    names = {"a": args.a, "b": b_file}
    latency = config_b.latency
    if args.apiserver_latency is not None:
        latency = dataclasses.replace(latency, apiserver=args.apiserver_latency)
    if args.etcd_latency is not None:
        latency = dataclasses.replace(latency, etcd=args.etcd_latency)
    if latency != config_b.latency:
        config_b = dataclasses.replace(config_b, latency=latency)
        names["b"] = f"{b_file} with latency {latency.describe()}"
    return names, config_a, config_b


def _replay_child(
    send: Connection, args: argparse.Namespace, cluster: ClusterConfig, root: Path | None, name: str
) -> None:
    """One side of --parallel, in a process of its own: the replay, and its result sent back
    (("ok", report, timeline) or ("error", message)). Only the parent stops it: Ctrl-C is
    the parent's to handle, and SIGTERM from it ends the replay as Ctrl-C ends one in the
    foreground (the cluster is stopped on the way out)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sigterm_as_interrupt()
    try:
        trace, info = load_trace(args.trace)
        options = replay_options(args, root, f"whatif {name}")
        result = Replay(trace, cluster, options, info).run()
    except KeyboardInterrupt:
        return
    except Exception as e:  # the parent says which side failed, and how
        send.send(("error", f"{type(e).__name__}: {e}"))
        return
    timeline = result.timeline
    timeline.clock = time.time  # the cluster's clock (a client's) went with the cluster
    send.send(("ok", result.report, timeline))


def _side_by_side_runs(
    args: argparse.Namespace, root: Path | None, configs: tuple[ClusterConfig, ClusterConfig]
) -> list[ReplayResult]:
    """A and B replayed at once (--parallel), each in a spawned process (gRPC is not fork
    safe). Every child is joined before this returns or raises; one still running then (the
    other failed, or this process was interrupted) is stopped with SIGTERM first."""
    context = multiprocessing.get_context("spawn")
    children = []
    reported = False
    try:
        for name, cluster in zip(("a", "b"), configs, strict=True):
            receive, send = context.Pipe(duplex=False)
            child = context.Process(
                target=_replay_child,
                args=(send, args, cluster, root / name if root else None, name),
                name=f"kemu-whatif-{name}",
            )
            child.start()
            send.close()
            children.append((name, child, receive))
        pending = {receive: name for name, _, receive in children}
        done: dict[str, ReplayResult] = {}
        while pending:
            # whichever side ends first: a failure stops the other at once
            for ready in wait(list(pending)):
                assert isinstance(ready, Connection)
                name = pending.pop(ready)
                try:
                    outcome = ready.recv()
                except EOFError:
                    fail(f"the replay of {name} ended without a report (see its output above)", 1)
                if outcome[0] == "error":
                    fail(f"the replay of {name} failed: {outcome[1]}", 1)
                _, report, timeline = outcome
                done[name] = ReplayResult(report, timeline)
        reported = True
        return [done["a"], done["b"]]
    finally:
        for _, child, _receive in children:
            if not reported and child.is_alive():
                child.terminate()
        for _, child, receive in children:
            child.join()
            receive.close()


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.bind_threshold < 0:
        fail("--bind-threshold: must be >= 0")
    trace, info = load_trace(args.trace)
    names, config_a, config_b = configurations(args, trace)
    root = Path(args.root) if args.root else None
    check_html(args.html)
    replay_options(args, None)  # its arguments checked before anything starts
    sigterm_as_interrupt()
    runs = []
    try:
        if args.parallel:
            runs = _side_by_side_runs(args, root, (config_a, config_b))
        else:
            for name, config in (("a", config_a), ("b", config_b)):
                options = replay_options(args, root / name if root else None, f"whatif {name}")
                runs.append(Replay(trace, config, options, info).run())
    except KeyboardInterrupt:
        fail("interrupted", 130)
    reports = [r.report for r in runs]
    result: Comparison = {
        "names": names,
        "a": reports[0],
        "b": reports[1],
        "diff": diff(reports[0], reports[1], bind_threshold=args.bind_threshold),
    }
    print(side_by_side(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    if args.html:
        text = page(result["names"], runs[0].timeline, runs[1].timeline, result["diff"])
        Path(args.html).write_text(text)
    return 1 if args.fail_on_diff and result["diff"] else 0


if __name__ == "__main__":
    sys.exit(main())
