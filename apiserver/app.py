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

import dataclasses
import functools
import logging
import signal
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import anyio
import grpc
from anyio.abc import TaskStatus
from google.protobuf.message import Message

from apiserver import flowcontrol_bootstrap, kubernetes_service, rbac_bootstrap
from apiserver.admission.priority import system_priority_classes
from apiserver.authentication.service_accounts import (
    ServiceAccountTokens,
    service_account_tokens,
)
from apiserver.authorization import modes
from apiserver.clock.activity import Activity
from apiserver.clock.cluster_clock import ClusterClock
from apiserver.endpoints import identity
from apiserver.endpoints.calls import Calls
from apiserver.endpoints.clock import ClockService
from apiserver.endpoints.inflight import InflightMetrics, Limiter, MaxInflight, RequestInfo
from apiserver.endpoints.lists import ConsistentReads, Lister
from apiserver.endpoints.metrics import Metrics
from apiserver.endpoints.rest import discovery
from apiserver.endpoints.rest.server import RestApi
from apiserver.endpoints.rest.server import serve as serve_rest
from apiserver.endpoints.rest.token import RegistryLookup
from apiserver.endpoints.servicer import ApiService
from apiserver.endpoints.watches import Watches
from apiserver.flowcontrol.apf_filter import (
    BORROWING_PERIOD,
    DUMP_REQUESTS,
    ApfMetrics,
    BorrowingMetrics,
    Config,
    PriorityAndFairness,
)
from apiserver.options import COMPONENT, parse_settings
from apiserver.registry.apiextensions import CustomResourceDefinitions
from apiserver.registry.names import RANDOM_NAMES, SeededNames
from apiserver.registry.registry import Registry, RegistrySettings
from apiserver.settings import ApiserverSettings, InflightSettings
from apiserver.storage.etcd import EtcdStore
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component import listen
from kemu.component.featuregate import CONSISTENT_LIST_FROM_CACHE
from kemu.component.gc_tuning import tune_gc
from kemu.component.runner import (
    ComponentContext,
    ConfigRefused,
    cleanup_scope,
    retry_until_ready,
    run_component,
)
from kemu.component.secure_serving import SecureServing, ServingError
from kemu.component.version import BINARY_VERSION
from kemu.component.version_rules import VersionRules
from kemu.component.virtual_clock import VirtualClock
from kemu.machinery.apiservices import local_api_services
from kemu.machinery.convert import timestamp
from kemu.machinery.errors import (
    AlreadyExists,
    ApiError,
    Conflict,
    InternalError,
    Invalid,
    NotFound,
    Unavailable,
)
from kemu.machinery.kinds import BY_KIND, BY_RESOURCE, KINDS, kind_of
from kemu.machinery.namespaces import SYSTEM_NAMESPACES, new_namespace

logger = logging.getLogger(__name__)

ETCD_READYCHECK_TIMEOUT: Final = 2.0
"""Upstream's --etcd-readycheck-timeout default: etcd not answering within it fails /readyz."""
_MAX_MESSAGE: Final = 16 * 1024 * 1024
_NO_BACKLOG_LIMIT: Final = 2**31 - 1
"""gRPC core's pending-request backlog (grpc.server.max_pending_requests and its hard limit,
1000 and 3000 by default): calls that arrived but that the server has not picked up yet. Past
the limits core refuses new calls (at random, then all), which a client sees as CANCELLED: a
burst of a scheduler's binds (PreemptionAsync/5000Nodes) failed so. Upstream's apiserver has
no such refusal (its HTTP/2 server hands every stream to a handler) and sheds load only in the
priority and fairness (or max-in-flight) filter, 429 with Retry-After, which clients retry
(here `inflight.Limiter`);
so the backlog is unbounded."""


def _with_certs(settings: ApiserverSettings) -> ApiserverSettings:
    """The settings with --cert-dir's pair, made now when missing (upstream makes it while it
    completes its options, before it binds); ConfigRefused naming the flag when the files
    cannot be made or read."""
    secure = settings.serving.secure
    if not secure.enabled:
        return settings
    try:
        secure = secure.maybe_default_with_self_signed_certs(settings.serving.bind_address)
        secure.read()
        secure.ssl_context()  # (its errors name the flag; the REST edge builds its own)
    except ServingError as e:
        raise ConfigRefused(str(e)) from None
    return dataclasses.replace(
        settings, serving=dataclasses.replace(settings.serving, secure=secure)
    )


def _grpc_credentials(secure: SecureServing) -> grpc.ServerCredentials | None:
    """The gRPC edge's TLS (None: plaintext). With --client-ca-file a client certificate
    signed by it is required (kemu.component.secure_serving: gRPC's Python server cannot ask
    for one without requiring it)."""
    if not secure.enabled:
        return None
    chain, key, client_ca = secure.read()
    return grpc.ssl_server_credentials(
        [(key, chain)], root_certificates=client_ca, require_client_auth=client_ca is not None
    )


def main(argv: Sequence[str] | None = None) -> int:
    settings, options = parse_settings(argv)
    return run_component(COMPONENT, options, functools.partial(run, settings))


async def run(settings: ApiserverSettings, ctx: ComponentContext) -> None:
    settings = _with_certs(settings)
    serving = settings.serving
    # Ready once its edges listen: upstream's /readyz is served by the port it reports on,
    # kemu's on the metrics port, which listens from the process's start, so the check is
    # there from the start (registered only once serving began, /readyz said ok while the
    # apiserver still waited for etcd or built its caches: a harness's wait returned early).
    listening = anyio.Event()
    ctx.add_readiness_check("serving", listening.is_set)
    # (upstream binds its listeners before it talks to etcd: a taken port ends it at once)
    for port in (serving.port, serving.rest_port):
        listen.check_free(serving.bind_address, port)
    store = EtcdStore(settings.etcd.servers)
    try:
        await retry_until_ready(
            f"etcd at {','.join(settings.etcd.servers)}", store.status, clock=ctx.clock
        )
        await _serve(_Apiserver.build(settings, store, ctx), settings, ctx, listening)
    finally:
        with cleanup_scope():
            await store.close()


@dataclass
class _Apiserver:
    """The parts of one apiserver, wired (`build`), before it serves (`_serve`)."""

    store: EtcdStore
    api_store: EtcdStore
    """`store` with --etcd-latency: the API's reads and writes."""
    caches: Mapping[str, WatchCache]
    registry: Registry
    api: ApiService
    grpc_server: grpc.aio.Server
    inflight: Limiter
    cluster_clock: ClusterClock | None
    tokens: ServiceAccountTokens
    etcd_ok: bool = True

    @classmethod
    def build(
        cls, settings: ApiserverSettings, store: EtcdStore, ctx: ComponentContext
    ) -> _Apiserver:
        identity = settings.serving.address
        cluster_clock = None
        if isinstance(ctx.clock, VirtualClock):
            cluster_clock = ClusterClock(
                store, ctx.clock, start=settings.clock_start, identity=identity
            )
        activity = cluster_clock.activity if cluster_clock is not None else Activity()
        # (the API's round trips to etcd wait --etcd-latency; the clock's own do not)
        latency = settings.etcd.latency.on(ctx.clock)
        api_store = (
            store.with_latency(latency, activity.parked)
            if cluster_clock is not None
            else store.with_latency(latency)
        )
        metrics = Metrics(ctx.registry)
        caches = {
            k.resource: WatchCache(
                api_store, k, on_watchers_changed=metrics.watchers_changed, clock=ctx.clock
            )
            for k in KINDS
        }
        logger.info("admission plugins enabled: %s", ",".join(settings.admission.ordered()))
        for name in settings.admission.not_modelled():
            logger.warning("admission plugin %s is enabled, but kemu does not model it", name)
        registry = Registry(
            api_store,
            caches,
            RegistrySettings(
                ctx.gates,
                ctx.options.version,
                settings.toleration_seconds,
                settings.runtime_config,
                settings.admission,
                # (the virtual clock: names the same each run of a seeded scenario)
                RANDOM_NAMES if cluster_clock is None else SeededNames(),
            ),
            clock=ctx.clock,
        )
        if cluster_clock is not None:

            def caught_up() -> bool:
                """Every write of this apiserver seen by its watch cache, every frame taken
                (but those for a frozen process: time goes on without it)."""
                frozen = cluster_clock.sessions.frozen()
                return all(
                    caches[r].event_revision >= rev for r, rev in registry.store.written.items()
                ) and not any(c.buffered(frozen) for c in caches.values())

            cluster_clock.watch_quiescence(caught_up)

        def version() -> api_pb2.ComponentVersion:
            cv = api_pb2.ComponentVersion(
                component=COMPONENT,
                identity=identity,
                emulated_version=str(ctx.options.version),
                binary_version=BINARY_VERSION,
                runtime_config=settings.runtime_config.items(),
            )
            for g in ctx.gates.states():
                cv.feature_gates.add(
                    name=g.name, enabled=g.enabled, stage=str(g.stage), locked=g.locked
                )
            return cv

        authorization = modes.build(
            settings.authorization_modes, caches, modes.Emulated(ctx.gates, ctx.options.version)
        )
        logger.info("authorization modes: %s", ",".join(authorization.modes))
        calls = Calls(metrics, activity, authorization)
        watches = Watches(
            api_store, caches, metrics, activity, ctx.clock, settings.watch_bookmark_frequency
        )
        tokens = service_account_tokens(settings.authentication, ctx.clock.now)
        api = ApiService(
            registry,
            Lister(
                api_store,
                caches,
                metrics,
                ConsistentReads.CACHE
                if ctx.gates.enabled(CONSISTENT_LIST_FROM_CACHE)
                else ConsistentReads.STORAGE,
            ),
            watches,
            calls,
            version,
            caches["leases"],
            tokens,
        )
        clock_service = ClockService(calls, cluster_clock, ctx.clock.now)
        inflight = _limiter(settings.inflight, registry, ctx)
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", _MAX_MESSAGE),
                ("grpc.max_send_message_length", _MAX_MESSAGE),
                ("grpc.so_reuseport", 0),
                ("grpc.server.max_pending_requests", _NO_BACKLOG_LIMIT),
                ("grpc.server.max_pending_requests_hard_limit", _NO_BACKLOG_LIMIT),
            ]
        )
        server.add_generic_rpc_handlers((api.handler(inflight), clock_service.handler(inflight)))
        listen.add_grpc_port(
            server,
            settings.serving.bind_address,
            settings.serving.port,
            _grpc_credentials(settings.serving.secure),
        )
        return cls(store, api_store, caches, registry, api, server, inflight, cluster_clock, tokens)

    def ready(self) -> bool:
        return self.etcd_ok and all(c.ready for c in self.caches.values())

    async def check_etcd(self) -> None:
        """Upstream's etcd readiness check, every 2 s (wall time: etcd's health is a transport
        matter)."""
        while True:
            try:
                await self.store.status(timeout=ETCD_READYCHECK_TIMEOUT)
                self.etcd_ok = True
            except (Unavailable, InternalError):  # (as the watch cache: any transport error)
                self.etcd_ok = False
            await anyio.sleep(2.0)


async def _serve(
    apiserver: _Apiserver,
    settings: ApiserverSettings,
    ctx: ComponentContext,
    listening: anyio.Event,
) -> None:
    caches = apiserver.caches
    ctx.add_readiness_check("etcd", lambda: apiserver.etcd_ok)
    ctx.add_readiness_check("watch-cache", lambda: all(c.ready for c in caches.values()))
    cluster_clock = apiserver.cluster_clock
    # (the apiserver's own periodic work is counted by the event-driven clock's look)
    activity = cluster_clock.activity if cluster_clock is not None else Activity()
    async with anyio.create_task_group() as tg:
        if cluster_clock is not None:  # before anything reads the time
            await tg.start(cluster_clock.run)
        if threading.current_thread() is threading.main_thread():  # not in-process tests
            await tg.start(_drop_watches_on_signal, caches)
        # Every kind's cache lists at once, as upstream's cachers each start their reflector
        # (one list after another took 47 etcd round trips in a row: 19 s at 200 ms of
        # --etcd-latency); nothing reads one before all have listed.
        async with anyio.create_task_group() as starting:
            for cache in list(caches.values()):
                starting.start_soon(tg.start, cache.run)
        # (the custom resources' caches are added as their CRDs are established)
        assert isinstance(caches, dict)
        await tg.start(
            CustomResourceDefinitions(
                apiserver.registry, apiserver.api_store, caches, ctx.clock
            ).run
        )
        await _bootstrap(apiserver.registry, ctx)
        await _bootstrap_kubernetes_service(apiserver.registry, settings, ctx)
        if flowcontrol_bootstrap.served(apiserver.registry):  # issue #58 item 3
            await retry_until_ready(
                "the APF bootstrap configuration",
                functools.partial(flowcontrol_bootstrap.ensure, apiserver.registry),
                clock=ctx.clock,
                # any error, as upstream's hook (storage_flowcontrol.go
                # ensureAPFBootstrapConfiguration: logged, tried again a second later); an
                # etcd Timeout under load must not stop the apiserver before it serves
                retry_on=(ApiError,),
            )
            tg.start_soon(_ensure_flowcontrol, apiserver.registry, activity, ctx)
        if rbac_bootstrap.served(apiserver.registry):  # issue #60 item 3
            await rbac_bootstrap.post_start_hook(apiserver.registry, ctx)
        if isinstance(apiserver.inflight, PriorityAndFairness):
            tg.start_soon(_update_borrowing, apiserver.inflight, ctx)
        tokens = apiserver.tokens
        identity.use(
            identity.Authentication(
                tokens,
                RegistryLookup(apiserver.registry),
                anonymous=settings.authentication.anonymous,
            )
        )
        if settings.serving.rest_port:  # (first: a failed bind leaves no gRPC server running)
            rest = RestApi(
                apiserver.registry,
                apiserver.api,
                ready=apiserver.ready,
                limiter=apiserver.inflight,
                tokens=tokens,
                clock=ctx.clock,
                authorization=apiserver.api.authorization,
            )
            secure = settings.serving.secure
            await tg.start(
                functools.partial(
                    serve_rest,
                    rest,
                    settings.serving.bind_address,
                    settings.serving.rest_port,
                    ssl_context=secure.ssl_context() if secure.enabled else None,
                )
            )
        if threading.current_thread() is threading.main_thread():  # its own process
            # (what the watch caches hold from the start, out of the collector's reach)
            tune_gc(freeze=True)
        await apiserver.grpc_server.start()
        logger.info(
            "serving the kemu API on %s (emulated version %s)",
            settings.serving.address,
            ctx.options.version,
        )
        listening.set()
        if settings.etcd.compaction_interval > 0:
            tg.start_soon(
                _compactor,
                apiserver.store,
                caches,
                settings.etcd.compaction_interval,
                activity,
                ctx,
            )
        tg.start_soon(apiserver.check_etcd)
        await ctx.stopping.wait()
        if settings.shutdown_delay > 0:
            # Upstream's --shutdown-delay-duration (genericapiserver's ShutdownDelayDuration:
            # /readyz fails from the signal, everything else serves as before): the clients
            # stopping at the same moment (make run's leaders releasing their leases) are
            # still answered.
            logger.info("shutdown delay: serving %gs more (/readyz fails)", settings.shutdown_delay)
            await anyio.sleep(settings.shutdown_delay)
        # Upstream's default watch termination grace period 0: the watches end now (a client
        # that re-watches is refused); unary calls in flight get the grace period; the etcd
        # client is closed after (run).
        logger.info(
            "draining: no new calls, watches ended, %gs for running calls",
            ctx.options.shutdown_grace_period,
        )
        for cache in list(caches.values()):
            cache.end_watches()
        # (a Calls stream is a call in flight: it answers its calls under way and ends, as
        # gRPC's stop ends the unary calls' connections; its clients send the rest elsewhere)
        apiserver.api.drain_call_streams()
        if cluster_clock is not None:  # (its components open theirs again elsewhere)
            cluster_clock.end_sessions()
        with cleanup_scope(ctx.options.shutdown_grace_period + 1):
            await apiserver.grpc_server.stop(ctx.options.shutdown_grace_period)
        tg.cancel_scope.cancel()


async def _drop_watches_on_signal(
    caches: Mapping[str, WatchCache], *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGUSR1) as signals:
        task_status.started()
        async for _ in signals:
            ended = sum(cache.close_watches() for cache in list(caches.values()))
            logger.warning("SIGUSR1: ended every watch (%d)", ended)


async def _bootstrap(registry: Registry, ctx: ComponentContext) -> None:
    """Creates the system namespaces and priority classes, as upstream's bootstrap
    controllers do."""
    objects: list[Message] = [new_namespace(name) for name in SYSTEM_NAMESPACES]
    objects.extend(system_priority_classes())
    objects.extend(_local_api_services(registry))  # issue #57 kinds-a
    for obj in objects:

        async def create(obj: Message = obj) -> None:
            try:
                await registry.create(obj)
            except AlreadyExists:
                pass
            await _write_available(registry, obj)

        what = f"{kind_of(obj).kind} {obj.metadata.name}"  # type: ignore[attr-defined]
        await retry_until_ready(what, create, clock=ctx.clock, retry_on=(Unavailable,))


def _local_api_services(registry: Registry) -> list[types_pb2.APIService]:
    """The autoregister controller's APIServices: one per group version served here (issue
    #57 kinds-a; their Available=True Local status is written after the create, whose
    strategy clears it)."""
    if not registry.served.serves(BY_KIND["APIService"]):
        return []
    now = timestamp(registry.now())
    pairs = [(g, v) for g, vs in discovery.group_versions(registry.served).items() for v in vs]
    return local_api_services(pairs, now)


async def _write_available(registry: Registry, obj: Message) -> None:
    """An autoregistered APIService's status (kube-aggregator's available controller)."""
    if isinstance(obj, types_pb2.APIService):
        await registry.update(obj, subresource="status")


async def _bootstrap_kubernetes_service(
    registry: Registry, settings: ApiserverSettings, ctx: ComponentContext
) -> None:
    """The `kubernetes` Service and its endpoints (apiserver/kubernetes_service.py); the
    endpoints are rewritten when the apiserver's address or port changed."""
    serving = settings.serving
    port = serving.rest_port or serving.port
    for obj in kubernetes_service.bootstrap_objects(serving.bind_address, port):

        async def ensure(obj: Message = obj) -> None:
            meta = obj.metadata  # type: ignore[attr-defined]
            try:
                # (read first: another apiserver of the cluster, or this one before a restart,
                # made it, and a second create would be refused by the ClusterIP allocator)
                raw = await registry.get_bytes(kind_of(obj), meta.namespace, meta.name)
            except NotFound:
                try:
                    await registry.create(obj)
                    return
                except (AlreadyExists, Invalid) as e:
                    # (another apiserver of the cluster made it meanwhile: the store refuses
                    # the second create, or first the ClusterIP allocator, which sees the
                    # other's Service holding the IP: "provided IP is already allocated")
                    try:
                        raw = await registry.get_bytes(kind_of(obj), meta.namespace, meta.name)
                    except NotFound:
                        raise e from None
            if isinstance(obj, types_pb2.Service):
                return
            # (an Object envelope, the kind's field set)
            current = getattr(api_pb2.Object.FromString(raw), kind_of(obj).field)
            sent = type(obj)()
            sent.CopyFrom(obj)
            sent.metadata.CopyFrom(current.metadata)  # type: ignore[attr-defined]
            if sent != current:
                await registry.update(sent)

        what = f"{kind_of(obj).kind} default/{kubernetes_service.NAME}"
        await retry_until_ready(what, ensure, clock=ctx.clock, retry_on=(Unavailable, Conflict))


def _limiter(settings: InflightSettings, registry: Registry, ctx: ComponentContext) -> Limiter:
    """Priority and fairness over the server's total concurrency, as upstream's default; the
    max-in-flight filter with --enable-priority-and-fairness=false (or no total: no limit)."""
    if not settings.priority_and_fairness or not settings.server_concurrency_limit:
        return MaxInflight(
            settings.max_requests, settings.max_mutating_requests, InflightMetrics(ctx.registry)
        )
    served = flowcontrol_bootstrap.served(registry)

    def version() -> object:
        """The stored configuration's version: its caches' revisions (None where
        flowcontrol is not served: before 1.26, upstream's v1beta1/v1beta2 not modelled)."""
        if not served:
            return None
        schemas = registry.store.cache(BY_KIND["FlowSchema"])
        levels = registry.store.cache(BY_KIND["PriorityLevelConfiguration"])
        return (schemas.revision, levels.revision)

    def config() -> Config | None:
        """The stored FlowSchemas and levels; None (the bootstrap objects serve) where
        flowcontrol is not served or nothing is stored yet."""
        if not served:
            return None
        fs = [co.obj for co in registry.store.cache(BY_KIND["FlowSchema"]).objects()]
        pl = [
            co.obj for co in registry.store.cache(BY_KIND["PriorityLevelConfiguration"]).objects()
        ]
        if not fs or not pl:
            return None
        return fs, pl  # type: ignore[return-value]

    def object_count(info: RequestInfo) -> int:
        """The objects a list reads: the resource's in its namespace, or all of them."""
        kind = BY_RESOURCE.get(info.resource)
        if kind is None:
            return 0
        try:
            cache = registry.store.cache(kind)
        except KeyError:
            return 0
        if not info.namespace:
            return cache.count()
        prefix = f"{kind.storage_prefix}{info.namespace}/"
        return sum(1 for co in cache.objects() if co.key.startswith(prefix))

    rules = VersionRules.at(ctx.options.version)
    apf = PriorityAndFairness(
        settings.server_concurrency_limit,
        version,
        config,
        object_count,
        ApfMetrics(ctx.registry),
        now=ctx.clock.monotonic,
        borrowing=BorrowingMetrics(ctx.registry) if rules.apf_borrowing else None,
    )
    ctx.add_debug_handler(DUMP_REQUESTS, apf.dump_requests)
    return apf


async def _update_borrowing(apf: PriorityAndFairness, ctx: ComponentContext) -> None:
    """The levels' seats re-divided every BORROWING_PERIOD on the server's clock
    (apf_controller.go Run: wait.Until(updateBorrowing, borrowingAdjustmentPeriod))."""
    while True:
        await ctx.clock.sleep(BORROWING_PERIOD)
        apf.update_borrowing()


async def _ensure_flowcontrol(
    registry: Registry, activity: Activity, ctx: ComponentContext
) -> None:
    """The APF bootstrap ensurer's periodic passes (apiserver/flowcontrol_bootstrap.py), each
    the apiserver's own work for the clock (a FlowSchema's Dangling condition is written by
    the time an advance past the pass holds)."""
    while True:
        await ctx.clock.sleep(flowcontrol_bootstrap.ENSURE_INTERVAL)
        with activity.own_work():
            try:
                await flowcontrol_bootstrap.ensure(registry)
            except Exception as e:  # as upstream: any error logged, tried next time
                logger.warning("APF bootstrap ensurer ran into error, will retry later: %s", e)


async def _compactor(
    store: EtcdStore,
    caches: Mapping[str, WatchCache],
    interval: float,
    activity: Activity,
    ctx: ComponentContext,
) -> None:
    """Compacts etcd to the revision seen one interval ago (upstream's compactor)."""
    previous = 0
    while True:
        await ctx.clock.sleep(interval)
        with activity.own_work():
            try:
                current = await store.current_revision()
                if previous:
                    await store.compact(previous)
                    for cache in list(caches.values()):
                        cache.compacted(previous)
                    logger.info("compacted etcd to revision %d", previous)
                previous = current
            except Exception as e:  # compaction is best effort: log and try next time
                logger.warning("etcd compaction failed: %s", e)
