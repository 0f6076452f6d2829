"""kube-apiserver: the Api service over gRPC, stored in etcd.

Start-up waits for etcd (it may start after us), fills one watch cache per resource, creates
the system namespaces (default, kube-system, kube-public, kube-node-lease) and priority classes,
then listens. /readyz turns green once etcd answers and every
cache is filled. SIGTERM ends every watch at once (upstream's watch termination grace period
0), stops accepting calls and gives the unary calls in flight the grace period.

SIGUSR1 (kemu only, a fault to inject: upstream has no such hook) ends every watch stream
open now, on both edges, and the apiserver stays up: its clients watch again from their
last resourceVersion, as after upstream's per-watch timeout (--min-request-timeout) or an
apiserver's restart.
"""

from __future__ import annotations

import argparse
import functools
import logging
import signal
import threading
from collections.abc import Sequence
from typing import Final

import anyio
import grpc
from anyio.abc import TaskStatus
from google.protobuf.message import Message

from apiserver.admission.plugins import (
    DEFAULT_TOLERATION_SECONDS,
    DefaultTolerationSeconds,
    system_priority_classes,
)
from apiserver.clock.cluster_clock import ClusterClock
from apiserver.endpoints.inflight import (
    DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
    DEFAULT_MAX_REQUESTS_INFLIGHT,
    InflightMetrics,
    MaxInflight,
)
from apiserver.endpoints.rest.server import RestApi
from apiserver.endpoints.rest.server import serve as serve_rest
from apiserver.endpoints.servicer import DEFAULT_BOOKMARK_FREQUENCY, ApiService, Metrics
from apiserver.registry.registry import Registry
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2
from kemu.component.options import new_parser, parse_component_args
from kemu.component.runner import ComponentContext, cleanup_scope, retry_until_ready, run_component
from kemu.component.version import BINARY_VERSION
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.convert import parse_time
from kemu.machinery.errors import AlreadyExists, InternalError, Invalid, Unavailable
from kemu.machinery.kinds import KINDS, kind_of
from kemu.machinery.namespaces import SYSTEM_NAMESPACES, new_namespace
from kemu.machinery.virtual_time import ClockMode

logger = logging.getLogger(__name__)

COMPONENT: Final = "kube-apiserver"
ETCD_READYCHECK_TIMEOUT: Final = 2.0
"""Upstream's --etcd-readycheck-timeout default: etcd not answering within it fails /readyz."""
_MAX_MESSAGE: Final = 16 * 1024 * 1024
_NO_BACKLOG_LIMIT: Final = 2**31 - 1
"""gRPC core's pending-request backlog (grpc.server.max_pending_requests and its hard limit,
1000 and 3000 by default): calls that arrived but that the server has not picked up yet. Past
the limits core refuses new calls (at random, then all), which a client sees as CANCELLED: a
burst of a scheduler's binds (PreemptionAsync/5000Nodes) failed so. Upstream's apiserver has
no such refusal (its HTTP/2 server hands every stream to a handler) and sheds load only in the
max-in-flight filter, 429 with Retry-After, which clients retry (here `inflight.MaxInflight`);
so the backlog is unbounded."""


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("apiserver", "kemu kube-apiserver", default_metrics_port=6444)
    parser.add_argument(
        "--etcd-servers",
        default="http://127.0.0.1:2379",
        help="comma-separated etcd client URLs (default http://127.0.0.1:2379)",
    )
    parser.add_argument("--bind-address", default="127.0.0.1", help="address to serve gRPC on")
    parser.add_argument("--port", type=int, default=6443, help="gRPC port (default 6443)")
    parser.add_argument(
        "--rest-port",
        type=int,
        default=0,
        help="serve the Kubernetes REST API (JSON over plain HTTP) on this port of "
        "--bind-address; 0 disables (default 0)",
    )
    parser.add_argument(
        "--etcd-compaction-interval",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="compact etcd history older than this every interval; 0 disables (default 300)",
    )
    parser.add_argument(
        "--watch-bookmark-frequency",
        type=float,
        default=DEFAULT_BOOKMARK_FREQUENCY,
        metavar="SECONDS",
        help="kemu only (upstream fixes it at 1 minute): how often a watch that allows "
        "bookmarks gets one while idle (default 60)",
    )
    parser.add_argument(
        "--max-requests-inflight",
        type=int,
        default=DEFAULT_MAX_REQUESTS_INFLIGHT,
        metavar="N",
        help="the most read-only requests served at once; past it a request is refused with "
        "429 and Retry-After (watches, health checks and Lease renewals are not counted); "
        "0: no limit (default 400)",
    )
    parser.add_argument(
        "--max-mutating-requests-inflight",
        type=int,
        default=DEFAULT_MAX_MUTATING_REQUESTS_INFLIGHT,
        metavar="N",
        help="the most mutating requests served at once, as --max-requests-inflight; 0: no "
        "limit (default 200)",
    )
    for which in ("not-ready", "unreachable"):
        parser.add_argument(
            f"--default-{which}-toleration-seconds",
            type=int,
            default=DEFAULT_TOLERATION_SECONDS,
            metavar="SECONDS",
            help=f"the tolerationSeconds of the {which} NoExecute toleration that "
            "DefaultTolerationSeconds adds to every pod without one (default 300)",
        )
    parser.add_argument(
        "--clock-start",
        default="",
        metavar="RFC3339",
        help="kemu only, with --clock virtual: the virtual time a fresh cluster's clock starts "
        "at (default: the apiserver's start); a cluster whose clock exists keeps it",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    if not 0 < args.port < 65536:
        parser.error(f"--port: {args.port} is not a port (1 to 65535)")
    if not 0 <= args.rest_port < 65536:
        parser.error(f"--rest-port: {args.rest_port} is not a port (1 to 65535, or 0)")
    if not args.watch_bookmark_frequency > 0:
        parser.error(f"--watch-bookmark-frequency: {args.watch_bookmark_frequency} must be > 0")
    for flag in ("default_not_ready_toleration_seconds", "default_unreachable_toleration_seconds"):
        if getattr(args, flag) < 0:
            name = "--" + flag.replace("_", "-")
            parser.error(f"{name}: {getattr(args, flag)} must be >= 0")
    for flag in ("max_requests_inflight", "max_mutating_requests_inflight"):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')}: {getattr(args, flag)} must be >= 0")
    args.clock_start_at = None
    if args.clock_start:
        if options.clock is not ClockMode.VIRTUAL:
            parser.error("--clock-start: needs --clock virtual")
        try:
            args.clock_start_at = (
                parse_time(args.clock_start, "--clock-start").ToNanoseconds() / 1e9
            )
        except Invalid as e:
            parser.error(f"--clock-start: {e.causes[0].message if e.causes else e.message}")
    servers = [s.strip() for s in args.etcd_servers.split(",") if s.strip()]
    if not servers:
        parser.error("--etcd-servers: at least one URL is required")
    return run_component(COMPONENT, options, functools.partial(run, args, servers))


async def run(args: argparse.Namespace, servers: list[str], ctx: ComponentContext) -> None:
    store = EtcdStore(servers)
    try:
        await _serve(args, store, ctx)
    finally:
        with cleanup_scope():
            await store.close()


async def _serve(args: argparse.Namespace, store: EtcdStore, ctx: ComponentContext) -> None:
    etcd_ok = True

    async def check_etcd() -> None:
        await store.status()

    await retry_until_ready(f"etcd at {args.etcd_servers}", check_etcd, clock=ctx.clock)
    cluster_clock = None
    if isinstance(ctx.clock, VirtualClock):
        cluster_clock = ClusterClock(
            store,
            ctx.clock,
            start=getattr(args, "clock_start_at", None),
            identity=f"{args.bind_address}:{args.port}",
        )
    metrics = Metrics(ctx.registry)
    caches = {
        k.resource: WatchCache(
            store, k, on_watchers_changed=metrics.watchers_changed, clock=ctx.clock
        )
        for k in KINDS
    }
    ctx.add_readiness_check("etcd", lambda: etcd_ok)
    ctx.add_readiness_check("watch-cache", lambda: all(c.ready for c in caches.values()))
    if cluster_clock is not None:

        def caught_up() -> bool:
            """Every write of this apiserver seen by its watch cache, every frame taken."""
            return all(
                caches[r].event_revision >= rev for r, rev in registry.store.written.items()
            ) and not any(c.buffered() for c in caches.values())

        cluster_clock.watch_quiescence(caught_up)
    registry = Registry(
        store,
        caches,
        ctx.gates,
        clock=ctx.clock,
        version=ctx.options.version,
        toleration_seconds=DefaultTolerationSeconds(
            not_ready=args.default_not_ready_toleration_seconds,
            unreachable=args.default_unreachable_toleration_seconds,
        ),
    )

    def version() -> api_pb2.ComponentVersion:
        cv = api_pb2.ComponentVersion(
            component=COMPONENT,
            identity=f"{args.bind_address}:{args.port}",
            emulated_version=str(ctx.options.version),
            binary_version=BINARY_VERSION,
        )
        for g in ctx.gates.states():
            cv.feature_gates.add(
                name=g.name, enabled=g.enabled, stage=str(g.stage), locked=g.locked
            )
        return cv

    service = ApiService(
        registry,
        store,
        caches,
        ctx.gates,
        metrics,
        version,
        clock=ctx.clock,
        bookmark_frequency=args.watch_bookmark_frequency,
        cluster_clock=cluster_clock,
    )
    server = grpc.aio.server(
        options=[
            ("grpc.max_receive_message_length", _MAX_MESSAGE),
            ("grpc.max_send_message_length", _MAX_MESSAGE),
            ("grpc.so_reuseport", 0),
            ("grpc.server.max_pending_requests", _NO_BACKLOG_LIMIT),
            ("grpc.server.max_pending_requests_hard_limit", _NO_BACKLOG_LIMIT),
        ]
    )
    inflight = MaxInflight(
        args.max_requests_inflight,
        args.max_mutating_requests_inflight,
        InflightMetrics(ctx.registry),
    )
    server.add_generic_rpc_handlers((service.handler(inflight),))
    address = f"{args.bind_address}:{args.port}"
    try:
        server.add_insecure_port(address)
    except RuntimeError as e:
        raise SystemExit(f"cannot listen on {address}: {e}") from None

    async with anyio.create_task_group() as tg:
        if cluster_clock is not None:  # before anything reads the time
            await tg.start(cluster_clock.run)
        if threading.current_thread() is threading.main_thread():  # not in-process tests
            await tg.start(_drop_watches_on_signal, caches)
        for cache in caches.values():
            await tg.start(cache.run)
        await _bootstrap(registry, ctx)
        await server.start()
        logger.info(
            "serving the kemu API on %s (emulated version %s)", address, ctx.options.version
        )
        if args.rest_port:
            rest = RestApi(
                registry,
                service,
                ready=lambda: etcd_ok and all(c.ready for c in caches.values()),
                inflight=inflight,
                clock=ctx.clock,
            )
            await tg.start(serve_rest, rest, args.bind_address, args.rest_port)
        if args.etcd_compaction_interval > 0:
            tg.start_soon(_compactor, store, caches, args.etcd_compaction_interval, ctx)

        async def health() -> None:
            nonlocal etcd_ok
            while True:
                try:
                    await store.status(timeout=ETCD_READYCHECK_TIMEOUT)
                    etcd_ok = True
                except (Unavailable, InternalError):  # (as the watch cache: any transport error)
                    etcd_ok = False
                await anyio.sleep(2.0)  # (wall time: etcd's health is a transport matter)

        tg.start_soon(health)
        await ctx.stopping.wait()
        # Upstream's defaults: no shutdown delay, watch termination grace period 0. The
        # watches end now (a client that re-watches is refused); unary calls in flight get
        # the grace period; the etcd client is closed after (run).
        logger.info(
            "draining: no new calls, watches ended, %gs for running calls",
            ctx.options.shutdown_grace_period,
        )
        for cache in caches.values():
            cache.end_watches()
        if cluster_clock is not None:  # (its components open theirs again elsewhere)
            cluster_clock.end_sessions()
        with cleanup_scope(ctx.options.shutdown_grace_period + 1):
            await server.stop(ctx.options.shutdown_grace_period)
        tg.cancel_scope.cancel()


async def _drop_watches_on_signal(
    caches: dict[str, WatchCache], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGUSR1) as signals:
        task_status.started()
        async for _ in signals:
            ended = sum(cache.close_watches() for cache in caches.values())
            logger.warning("SIGUSR1: ended every watch (%d)", ended)


async def _bootstrap(registry: Registry, ctx: ComponentContext) -> None:
    """Creates the system namespaces and priority classes, as upstream's bootstrap
    controllers do."""
    objects: list[Message] = [new_namespace(name) for name in SYSTEM_NAMESPACES]
    objects.extend(system_priority_classes())
    for obj in objects:

        async def create(obj: Message = obj) -> None:
            try:
                await registry.create(obj)
            except AlreadyExists:
                pass

        what = f"{kind_of(obj).kind} {obj.metadata.name}"  # type: ignore[attr-defined]
        await retry_until_ready(what, create, clock=ctx.clock, retry_on=(Unavailable,))


async def _compactor(
    store: EtcdStore, caches: dict[str, WatchCache], interval: float, ctx: ComponentContext
) -> None:
    """Compacts etcd to the revision seen one interval ago (upstream's compactor)."""
    previous = 0
    while True:
        await ctx.clock.sleep(interval)
        try:
            current = await store.current_revision()
            if previous:
                await store.compact(previous)
                for cache in caches.values():
                    cache.compacted(previous)
                logger.info("compacted etcd to revision %d", previous)
            previous = current
        except Exception as e:  # compaction is best effort: log and try next time
            logger.warning("etcd compaction failed: %s", e)
