"""python -m kemu.trace record --server ADDR --out FILE [--duration D] [--track KIND ...]
python -m kemu.trace replay FILE [--cluster CLUSTER.yaml] [--json OUT] [--html OUT]
                               [--speed N] [--tail D] [--root DIR] [--quiet]

python -m kemu.trace synthetic --out FILE [--nodes N] [--span D] [--seed S]
                               [--cluster-out CLUSTER.yaml] [--expander NAME]
                               [--static-nodes N] [--node-lease-duration-seconds S]
python -m kemu.trace convert-openb --nodes NODES.csv --pods PODS.csv --out FILE
                               [--cluster-out CLUSTER.yaml] [--gpu-sharing whole|skip]
                               [--start S] [--end E] [--limit N] [--namespace NS]

record: what a running kemu cluster does, as a SimKube trace (SIGINT or --duration ends it;
the file is written either way). replay: a SimKube trace or a kube-scheduler-simulator record
on a fresh cluster in virtual time, and its report. synthetic: a day of services scaling with
the hour and batch pods at three priorities, sized to N nodes (kemu/trace/synthetic.py), and
its CLUSTER.yaml (with --expander, half the nodes in two autoscaled node groups). convert-openb: Alibaba's GPU trace of 2023
(kemu/trace/openb.py) as a SimKube trace and the CLUSTER.yaml of its nodes. Errors are one
line on stderr, exit status 2 for bad arguments or files, 1 when the cluster failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio
import yaml

from autoscaler.expander import EXPANDERS
from kemu.client.client import Client
from kemu.ctl import connect
from kemu.machinery.errors import ApiError
from kemu.machinery.validation.names import is_dns1123_label
from kemu.trace import files, openb, recorder, synthetic
from kemu.trace.cli import (
    PROG,
    add_replay_arguments,
    check_html,
    duration_arg,
    fail,
    load_cluster,
    load_trace,
    replay_options,
    sigterm_as_interrupt,
    write_outputs,
)
from kemu.trace.replay import Replay
from kemu.trace.report import table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Record a kemu cluster as a SimKube trace; replay a trace."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="record a running kemu cluster as a SimKube trace")
    rec.add_argument(
        "--server",
        default=None,
        help="the apiserver (HOST:PORT; default: $KEMU_SERVER, the kubeconfig's, 127.0.0.1:6443)",
    )
    rec.add_argument(
        "--kubeconfig",
        default=None,
        help="the kubeconfig (its server's CA and client certificate), as kemuctl's: default "
        "$KUBECONFIG, else .kemu/kubeconfig when no server is named",
    )
    rec.add_argument("--out", required=True, metavar="FILE", help="the trace file to write")
    rec.add_argument(
        "--duration",
        metavar="D",
        help="how long to record, in the cluster's time (virtual or real): 10m, 90s; "
        "default: until SIGINT",
    )
    rec.add_argument(
        "--track",
        action="append",
        metavar="KIND",
        help="a kind to track (repeatable; default Deployment, StatefulSet, DaemonSet, Job, "
        "CronJob and bare Pod)",
    )
    rep = sub.add_parser("replay", help="replay a trace on a fresh cluster and report")
    add_replay_arguments(rep)
    rep.add_argument("file", metavar="FILE", help="a SimKube trace or a KSS record")
    rep.add_argument("--cluster", metavar="CLUSTER.yaml", help="the cluster (docs/traces.md)")
    rep.add_argument("--json", metavar="OUT", help="write the report as JSON")
    rep.add_argument(
        "--html",
        metavar="OUT",
        help="write the run's picture (kemu.timeline, on the cluster's clock) with the "
        "report's figures as a self-contained page",
    )
    add_synthetic(sub)
    add_convert_openb(sub)
    return parser


def add_synthetic(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    syn = sub.add_parser(
        "synthetic",
        help="write a synthetic day (services scaling, batch pods, priorities) as a trace",
    )
    syn.add_argument("--out", required=True, metavar="FILE", help="the trace file to write")
    syn.add_argument("--nodes", type=int, default=1000, metavar="N", help="nodes (default 1000)")
    syn.add_argument("--span", default="24h", metavar="D", help="the trace's length (24h)")
    syn.add_argument("--seed", type=int, default=1, metavar="S", help="(default 1)")
    syn.add_argument(
        "--cluster-out",
        metavar="CLUSTER.yaml",
        help="where its cluster goes (default: FILE without its suffix + .cluster.yaml)",
    )
    syn.add_argument(
        "--expander",
        metavar="NAME",
        help="half the nodes in two node groups (small, large) the autoscaler grows with this "
        "expander (least-waste, most-pods, random, priority)",
    )
    syn.add_argument(
        "--static-nodes",
        type=int,
        metavar="N",
        help="with --expander: the nodes that stay static (default half; the others' "
        "capacity is in the node groups)",
    )
    syn.add_argument(
        "--node-lease-duration-seconds",
        type=int,
        metavar="SECONDS",
        help="the nodes' Lease duration (kubelet default 40, renewed every quarter of it) and "
        "the node monitor's grace period at 1.25 times it (upstream's 50s for 40): fewer "
        "renewals, the bulk of a large day's work",
    )


def add_convert_openb(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    conv = sub.add_parser(
        "convert-openb",
        help="convert Alibaba's GPU cluster trace of 2023 (openb CSVs) into a trace",
        description="Alibaba's GPU cluster trace of 2023 (alibaba/clusterdata, "
        "cluster-trace-gpu-v2023; research use only, not shipped with kemu) as a SimKube "
        "trace of bare pods, created and deleted at their times, requesting cpu, memory and "
        f"{openb.GPU}, and the CLUSTER.yaml of its nodes (docs/traces.md). A pod sharing a "
        "GPU (num_gpu 1, gpu_milli < 1000) asks for a whole GPU, its share in the annotation "
        f"{openb.GPU_MILLI_ANNOTATION} (--gpu-sharing whole, the default), or is left out "
        "(--gpu-sharing skip). Replay: python -m kemu.trace replay FILE --cluster "
        "CLUSTER.yaml.",
    )
    conv.add_argument("--nodes", required=True, metavar="CSV", help="an openb_node_list_*.csv")
    conv.add_argument("--pods", required=True, metavar="CSV", help="an openb_pod_list_*.csv")
    conv.add_argument("--out", required=True, metavar="FILE", help="the trace file to write")
    conv.add_argument(
        "--cluster-out",
        metavar="CLUSTER.yaml",
        help="where the nodes go (default: beside the trace, FILE without its suffix "
        "+ .cluster.yaml)",
    )
    conv.add_argument(
        "--gpu-sharing",
        choices=[m.value for m in openb.GpuSharing],
        default=openb.GpuSharing.WHOLE.value,
        help="a pod sharing a GPU: asks for a whole one (whole, the default) or is left out (skip)",
    )
    conv.add_argument(
        "--start",
        metavar="S",
        help="only pods created at or after S (the trace's seconds, or a duration: 72h)",
    )
    conv.add_argument(
        "--end",
        metavar="E",
        help="only pods created before E; a deletion at or after E is left out",
    )
    conv.add_argument(
        "--limit", type=int, metavar="N", help="only the N pods created first (of those kept)"
    )
    conv.add_argument(
        "--namespace",
        default=openb.DEFAULT_NAMESPACE,
        metavar="NS",
        help=f"the pods' namespace (default {openb.DEFAULT_NAMESPACE})",
    )


def cmd_replay(args: argparse.Namespace) -> int:
    trace, info = load_trace(args.file)
    config = load_cluster(args.cluster, trace)
    options = replay_options(args, Path(args.root) if args.root else None)
    check_html(args.html)
    sigterm_as_interrupt()
    try:
        result = Replay(trace, config, options, info).run()
    except KeyboardInterrupt:
        fail("interrupted", 130)
    print(table(result.report))
    write_outputs(result, args.json, args.html)
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    duration = duration_arg("--duration", args.duration)
    try:
        tracked = [recorder.tracked_gvk(k) for k in args.track or recorder.DEFAULT_TRACKED]
    except ValueError as e:
        fail(f"--track: {e}")
    out = Path(args.out)
    if not out.parent.is_dir():
        fail(f"--out: {out.parent}: no such directory")
    rec = recorder.Recorder(tracked)
    try:
        to = connect.target(args.server, args.kubeconfig, os.environ)
    except ValueError as e:
        fail(f"--kubeconfig: {e}")

    async def run() -> None:
        stop = anyio.Event()
        async with Client(to.server, timeout=10.0, tls=to.tls) as client:
            await client.wait_ready(timeout=10)
            async with anyio.create_task_group() as tg:

                async def signals() -> None:
                    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as received:
                        async for _ in received:
                            stop.set()
                            return

                tg.start_soon(signals)
                await recorder.record(
                    client,
                    rec,
                    duration=duration,
                    stop=stop,
                    on_started=lambda t: print(
                        f"[trace] recording from {t:.3f} ({', '.join(tracked)})",
                        file=sys.stderr,
                        flush=True,
                    ),
                )
                tg.cancel_scope.cancel()

    try:
        anyio.run(run)
    except ApiError as e:
        fail(f"--server {to.server}: {e}", 1)
    trace = rec.trace()
    files.save(out, trace)
    print(
        f"{out}: {len(trace.events)} events, {trace.objects_applied()} objects applied, "
        f"{trace.objects_deleted()} deleted, {trace.span:.0f} s",
        file=sys.stderr,
    )
    return 0


def trace_seconds(flag: str, text: str | None) -> int | None:
    """--start/--end: the trace's seconds (as its CSV has them) or a duration."""
    if text is None:
        return None
    if text.isdigit():
        return int(text)
    seconds = duration_arg(flag, text)
    assert seconds is not None
    return int(seconds)


def cmd_convert_openb(args: argparse.Namespace) -> int:
    start = trace_seconds("--start", args.start)
    end = trace_seconds("--end", args.end)
    if start is not None and end is not None and end <= start:
        fail(f"--end: {args.end} is not after --start {args.start}")
    if args.limit is not None and args.limit < 1:
        fail("--limit: must be >= 1")
    if is_dns1123_label(args.namespace):
        fail(f"--namespace: {args.namespace!r} is not a namespace name (a DNS label)")
    out = Path(args.out)
    cluster_out = Path(args.cluster_out) if args.cluster_out else out.with_suffix(".cluster.yaml")
    for flag, path in (("--out", out), ("--cluster-out", cluster_out)):
        if not path.parent.is_dir():
            fail(f"{flag}: {path.parent}: no such directory")
    texts = {}
    for flag in ("nodes", "pods"):
        path = getattr(args, flag)
        try:
            texts[flag] = Path(path).read_text(encoding="utf-8-sig")
        except OSError as e:
            fail(f"--{flag}: {path}: {e.strerror}")
        except UnicodeDecodeError:
            fail(f"--{flag}: {path}: not a UTF-8 text file")
    sharing = openb.GpuSharing(args.gpu_sharing)
    try:
        nodes = openb.read_nodes(texts["nodes"], args.nodes)
        pods = openb.read_pods(texts["pods"], args.pods)
    except openb.OpenbError as e:
        fail(str(e))
    if (start is not None or end is not None) and pods and pods[0].creation_time is None:
        fail(f"--start/--end: {args.pods} has no creation_time column")
    options = openb.Options(args.namespace, sharing, start, end, args.limit)
    converted = openb.convert(nodes, pods, options)
    if not converted.trace.events:
        fail(f"{args.pods}: no pod to convert ({openb.describe(converted.summary, sharing)})")
    files.save(out, converted.trace)
    tmp = cluster_out.with_name(cluster_out.name + ".tmp")
    tmp.write_text(converted.cluster_yaml())
    tmp.replace(cluster_out)
    print(
        f"{out}, {cluster_out}: {openb.describe(converted.summary, sharing)}; "
        f"{len(converted.trace.events)} events over {converted.trace.span:.0f} s",
        file=sys.stderr,
    )
    return 0


def cmd_synthetic(args: argparse.Namespace) -> int:
    span = duration_arg("--span", args.span)
    out = Path(args.out)
    cluster_out = Path(args.cluster_out) if args.cluster_out else out.with_suffix(".cluster.yaml")
    for flag, path in (("--out", out), ("--cluster-out", cluster_out)):
        if not path.parent.is_dir():
            fail(f"{flag}: {path.parent}: no such directory")
    if args.expander is not None and args.expander not in EXPANDERS:
        fail(f"--expander: unknown expander {args.expander!r}: one of {', '.join(EXPANDERS)}")
    try:
        shape = synthetic.DayShape(
            nodes=args.nodes, span=span if span is not None else 86400.0, seed=args.seed
        )
    except ValueError as e:
        fail(f"--nodes/--span: {e}")
    trace, cluster = synthetic.synthetic_day(shape)
    if args.static_nodes is not None and args.expander is None:
        fail("--static-nodes: only with --expander")
    if args.expander is not None:
        try:
            cluster = synthetic.with_autoscaler(cluster, args.expander, args.static_nodes)
        except ValueError as e:
            fail(f"--static-nodes: {e}")
    if args.node_lease_duration_seconds is not None:
        if args.node_lease_duration_seconds < 1:
            fail("--node-lease-duration-seconds: must be at least 1")
        cluster = synthetic.with_lease_duration(cluster, args.node_lease_duration_seconds)
    files.save(out, trace)
    tmp = cluster_out.with_name(cluster_out.name + ".tmp")
    tmp.write_text(yaml.safe_dump(cluster, sort_keys=False))
    tmp.replace(cluster_out)
    print(
        f"{out}, {cluster_out}: {trace.objects_applied()} objects applied and "
        f"{trace.objects_deleted()} deleted in {len(trace.events)} events over {trace.span:.0f} s",
        file=sys.stderr,
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "record":
        return cmd_record(args)
    if args.command == "convert-openb":
        return cmd_convert_openb(args)
    if args.command == "synthetic":
        return cmd_synthetic(args)
    return cmd_replay(args)


if __name__ == "__main__":
    sys.exit(main())
