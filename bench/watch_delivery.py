"""Watch delivery with the writer on each transport of kemu.client, side by side on one cluster
(issue #59 item 1: the Calls stream against one gRPC call per create): rounds of bench
apiserver's watch phase (10 watchers in a process of their own, bench.watchers; a writer
creating pods at a paced rate, at most 256 in flight, each pod carrying its send time),
alternating which transport writes first.

    python -m bench watch_delivery [--rounds 2] [--rate 1000] [--seconds 5]
                                   [-- apiserver flags]

Per round: the writes/s achieved, the delivery latency from the send (the time in the pod) and
after the writer had the create's answer (the watch fan-out alone), the creates' own latency,
the apiserver's cores, and anything not delivered exactly once. The watchers' watches are
unary-stream calls on either transport: only the writer's creates change.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import anyio

from bench.apiserver import Options, WatchReport, watch_delivery
from kemu.client.client import Client, Transport
from kemu.testing import Cluster
from kemu.testing.launch import Launch


def _line(t: Transport, round_: int, w: WatchReport) -> str:
    bad = w.write_errors + w.missing + w.duplicates + w.unexpected + len(w.watcher_errors)
    return (
        f"round {round_} {t.value:6} {w.achieved_rate:5.0f} writes/s | delivery from send "
        f"p50 {w.latency.p50 * 1e3:6.1f} p99 {w.latency.p99 * 1e3:6.1f} ms | after the ack "
        f"p50 {w.ack_latency.p50 * 1e3:6.1f} p99 {w.ack_latency.p99 * 1e3:6.1f} ms | create "
        f"p50 {w.create_latency.p50 * 1e3:6.1f} p99 {w.create_latency.p99 * 1e3:6.1f} ms | "
        f"apiserver {w.cpu_cores.get('apiserver', float('nan')):.2f} cores | not once {bad}"
    )


async def _run(
    cluster: Cluster, opts: argparse.Namespace, tmp: Path
) -> list[tuple[Transport, WatchReport]]:
    pids: dict[str, int | None] = {
        "apiserver": cluster.processes["apiserver"].pid,
        "etcd": cluster.processes["etcd"].pid,
        "bench": os.getpid(),
    }
    options = Options(
        quick=False,
        n=0,
        watch_seconds=opts.seconds,
        watch_rate=opts.rate,
        client_per_worker=False,
        json_path=None,
    )
    # (distinct user agents: a connection per transport)
    clients = {
        t: Client(cluster.server, user_agent=f"bench-{t.value}", transport=t)
        for t in (Transport.UNARY, Transport.STREAM)
    }
    out: list[tuple[Transport, WatchReport]] = []
    try:
        for client in clients.values():
            await client.wait_ready(timeout=30)
        for r in range(opts.rounds):
            order = list(clients) if r % 2 == 0 else list(reversed(clients))
            for t in order:
                report = await watch_delivery(
                    clients[t], cluster.server, pids, options, tmp, f"watch-{t.value}-{r}"
                )
                print(_line(t, r, report), flush=True)
                out.append((t, report))
    finally:
        for client in clients.values():
            await client.close()
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench watch_delivery", description=__doc__)
    parser.add_argument("--rounds", type=int, default=2, help="rounds of each transport")
    parser.add_argument("--rate", type=float, default=1000.0, help="the writer's creates/s")
    parser.add_argument("--seconds", type=float, default=5.0, help="each round's writing time")
    parser.add_argument("apiserver_args", nargs="*", help="extra flags of the apiserver (after --)")
    opts = parser.parse_args(argv)
    if opts.rounds < 1 or opts.rate <= 0 or opts.seconds <= 0:
        parser.error("--rounds, --rate and --seconds must be positive")
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp, Cluster(Path(tmp), launch=Launch.EXEC) as c:
        c.start_etcd()
        c.start_apiserver(extra_args=opts.apiserver_args)
        results = anyio.run(_run, c, opts, Path(tmp))
    print(
        f"\nload average at start {load:.1f}, at end {os.getloadavg()[0]:.1f}; medians of rounds:"
    )
    for t in (Transport.UNARY, Transport.STREAM):
        mine = [w for u, w in results if u is t]

        def med(values: list[float]) -> float:
            return statistics.median(values) * 1e3

        print(
            f"{t.value:6} {statistics.median(w.achieved_rate for w in mine):5.0f} writes/s, "
            f"delivery p50 {med([w.latency.p50 for w in mine]):.1f} / p99 "
            f"{med([w.latency.p99 for w in mine]):.1f} ms, after the ack p50 "
            f"{med([w.ack_latency.p50 for w in mine]):.1f} / p99 "
            f"{med([w.ack_latency.p99 for w in mine]):.1f} ms"
        )
    return 0
