"""`python -m bench` lists the benchmarks; `python -m bench NAME [args]` runs one."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Final

# name -> (module with main(argv) -> int, one-line description)
BENCHMARKS: Final[dict[str, tuple[str, str]]] = {
    "apiserver": (
        "bench.apiserver",
        "create/get/update throughput and p50/p99 through the apiserver vs raw etcd, "
        "watch delivery latency",
    ),
    "etcd_clients": (
        "bench.etcd_clients",
        "the apiserver's etcd Txn through grpc.aio, grpc's synchronous stub and etcd's JSON "
        "gateway (alternated in one run): client and etcd CPU per call, calls/s",
    ),
    "ha": (
        "bench.ha",
        "one apiserver against two side by side on one etcd (alternated in one run): creates "
        "and bindings per second from several client processes, CPU per call of each apiserver, "
        "etcd and the clients",
    ),
    "scheduler_perf": (
        "bench.scheduler_perf",
        "scheduler_perf-style scheduling throughput (SchedulingBasic on 500/5000 bare nodes, "
        "PreemptionBasic, PreferNominatedNode and NominatedNodeNameForExpectation A/B), "
        "scheduling_algorithm_duration, victims, API calls, CPU and RSS of each process",
    ),
    "thresholds": (
        "bench.thresholds",
        "every thresholded workload of upstream's scheduler_perf files at the newest emulated "
        "version that accepts it: pods/s against the threshold and the CPU ceiling (issue #36)",
    ),
    "scale": (
        "bench.scale",
        "5000 nodes x 50,000 pods, bare nodes and hollow kubelets: pods/s and "
        "scheduling_algorithm time in windows as the cluster fills, RSS of every process, "
        "the growth from 500 to 5000 nodes and 5,000 to 50,000 pods",
    ),
    "preemption_cycle": (
        "bench.preemption_cycle",
        "PreemptionBasic's failed cycles in-process: CPU time of the Filter pass and the "
        "preemption dry run per preemptor (no cluster)",
    ),
    "node_authorizer": (
        "bench.node_authorizer",
        "the Node authorizer in-process: CPU per decision and per graph update at 1000 nodes "
        "and 10,000 pods (no cluster)",
    ),
    "kubelet": (
        "bench.kubelet",
        "one hollow kubelet with 1000 nodes: registration time, RSS, Lease renewal cadence, "
        "pod created-to-Running p50/p99 at 100 pods/s",
    ),
    "resize_preemption": (
        "bench.resize_preemption",
        "KEP-5836 end to end on hollow kubelets: Deferred resizes completed by preemption on "
        "their node, latency and victims per resize, upstream alpha vs kubelet-like accounting",
    ),
    "fuzz": (
        "bench.fuzz.driver",
        "10,000+ malformed requests across every listening edge (REST JSON and protobuf, gRPC "
        "Api, cloud gRPC, health HTTP): answers by status, bad outcomes, objects changed",
    ),
    "autoscaler": (
        "bench.autoscaler",
        "the cluster autoscaler: scale-up latency (pending to Running, provision delay 0) for "
        "100 pods, the loop's time and RSS at 1000 nodes / 10,000 pods",
    ),
    "flood": (
        "bench.flood",
        "the apiserver flooded at several times its capacity (in-flight limits, 429 + "
        "Retry-After): offered vs served, 429s, /readyz latency, leader leases kept, "
        "nothing lost",
    ),
    "traces": (
        "bench.traces",
        "traces replayed in virtual time: the example traces, a synthetic day of N nodes, and "
        "that day under two autoscaler expanders (kemu.whatif): span, wall, ratio, pods, RSS",
    ),
    "virtual_time": (
        "bench.virtual_time",
        "the event-driven virtual clock against wall time: an idle cluster of hollow nodes "
        "advanced an hour, an autoscaler scale-up and scale-down at upstream's timers",
    ),
    "async_api_calls": (
        "bench.async_api_calls",
        "SchedulerAsyncAPICalls on against off (kubernetes#135900): binds delayed by the "
        "status patches of failing pods at the scheduler's client limits 50/100",
    ),
    "lists": (
        "bench.lists",
        "consistent lists from etcd (1.30) against the watch cache (1.37, "
        "ConsistentListFromCache): apiserver and etcd CPU and wall time per list",
    ),
    "streams": (
        "bench.streams",
        "the Api's unary calls one gRPC call each against frames on one Calls stream "
        "(issue #59): apiserver and client CPU per create and get, calls/s, alternated",
    ),
    "watch_delivery": (
        "bench.watch_delivery",
        "watch delivery p50/p99 with the writer on the Calls stream and on unary calls, "
        "alternated on one cluster (issue #59): from the send and after the create's answer",
    ),
    "tls": (
        "bench.tls",
        "TLS's cost per call (issue #60): a plaintext and a TLS apiserver on one etcd, creates "
        "and gets on gRPC and GETs on REST through each, alternated: CPU per call, calls/s",
    ),
    "rbac_bootstrap": (
        "bench.rbac_bootstrap",
        "the RBAC bootstrap policy's start cost (issue #60): apiserver launch to /readyz on a "
        "fresh etcd, on one holding the policy, and with rbac.authorization.k8s.io/v1 off",
    ),
    "dra_allocator": (
        "bench.dra_allocator",
        "the DRA structured allocator in-process: allocate calls/s and CPU per pod over "
        "500 nodes x 8 devices (a claim for one GPU with CEL selectors), selector evaluations",
    ),
}


def usage() -> str:
    width = max(len(name) for name in BENCHMARKS)
    lines = ["usage: python -m bench NAME [args]   (python -m bench NAME --help)", ""]
    lines.append("benchmarks:")
    for name, (_, description) in BENCHMARKS.items():
        lines.append(f"  {name.ljust(width)}  {description}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "list"):
        print(usage())
        return 0
    name, rest = args[0], args[1:]
    if name not in BENCHMARKS:
        print(f"unknown benchmark {name!r}\n\n{usage()}", file=sys.stderr)
        return 2
    # by name from the table: only the benchmark asked for is loaded (each loads its harness)
    module = importlib.import_module(BENCHMARKS[name][0])
    run: Callable[[Sequence[str]], int] = module.main
    return run(rest)


if __name__ == "__main__":
    sys.exit(main())
