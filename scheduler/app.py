"""kube-scheduler: `python -m scheduler --server HOST:PORT [--config FILE] [--leader-elect]`.

Informers for pods (not yet finished) and nodes feed the cache and the queue from start-up, so a
standby replica has warm caches; only the holder of the Lease kube-system/kube-scheduler runs
scheduling cycles. /readyz is green once the informers have synced (a standby is ready too).

SIGUSR2 runs the cache debugger (scheduler/cache/debugger.py): every informer, the cache and the
queue compared with the truth, the result logged and served at GET /debug/caches, and the cache
and the queue dumped to the log.
"""

from __future__ import annotations

import functools
import logging
import random
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final

import anyio
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.client.client import sibling_of
from kemu.client.comparer import CacheComparer, informer_sources, serve_informers
from kemu.client.controlplane import Elected, component_client, run_elected
from kemu.client.events import EventApi, EventRecorder
from kemu.client.informer import Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock
from kemu.component.clock_steps import StepOrder
from kemu.component.featuregate import (
    DRA_DEVICE_TAINT_RULES,
    DYNAMIC_RESOURCE_ALLOCATION,
    SCHEDULER_ASYNC_API_CALLS,
    FeatureGates,
)
from kemu.component.gc_tuning import tune_gc
from kemu.component.options import (
    DECISIONS_DEBUG_HANDLER,
    parse_component_args,
)
from kemu.component.pod_resources import pod_resources_options
from kemu.component.runner import (
    ComponentContext,
    ConfigRefused,
    cleanup_scope,
    run_component,
)
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.component.virtual_clock import take_step
from kemu.scheduling.composite_pod_groups import WorkloadForest, composite_pod_groups_enabled
from kemu.scheduling.config import (
    KubeSchedulerConfiguration,
)
from kemu.scheduling.deferred import resize_preemption_enabled
from kemu.scheduling.dra_manager import DRA_KINDS, DraManager
from kemu.scheduling.interface import SCHEDULER_POD_FIELD_SELECTOR, ObjectLister
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.plugins.volumes import STORAGE_KINDS
from kemu.scheduling.pod_group_state import GroupMembership, MembershipField, PodGroupStates
from kemu.scheduling.pods_in_pre_bind import PodsInPreBindMap
from kemu.scheduling.runtime import Framework, FrameworkOptions, observer_from_histogram
from kemu.scheduling.status import Status
from kemu.scheduling.waiting_pods import WaitingPodsMap
from scheduler.api_dispatcher import APIDispatcher, DispatchedBinds
from scheduler.cache.cache import Cache, assumed_pod_ttl
from scheduler.cache.debugger import CacheDumper, cache_sources
from scheduler.cycle_observer import NO_OBSERVER, CycleObserver
from scheduler.decisions import DecisionLog, DecisionRecorder
from scheduler.event_handlers import EventHandlers
from scheduler.metrics import PodGroupMetrics, SchedulerMetrics
from scheduler.options import (
    COMPONENT,
    SchedulerSettings,
    build_parser,
    settings_from_flags,
)
from scheduler.preemption_executor import Executor
from scheduler.queue.hints import build_queueing_hint_map
from scheduler.queue.pod_group_entity import (
    ENTITY_QUEUE_SINCE,
    PodGroupQueueing,
    pod_group_queueing,
)
from scheduler.queue.scheduling_queue import PreEnqueueFn, PriorityQueue, QueueOptions
from scheduler.schedule_one import CycleSettings, Scheduler

logger = logging.getLogger(__name__)

# Pods that ended are not the scheduler's business (upstream's informer field selector).
POD_FIELD_SELECTOR: Final = SCHEDULER_POD_FIELD_SELECTOR


def main(argv: Sequence[str] | None = None, out_of_tree: Registry | None = None) -> int:
    """`out_of_tree`: plugins by name (their factories), besides the in-tree, emulation and
    installed ones (upstream's app.NewSchedulerCommand(app.WithPlugin(name, factory)))."""
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    settings = settings_from_flags(parser, args, out_of_tree, options.gates)
    return run_component(COMPONENT, options, functools.partial(run, settings))


async def run(settings: SchedulerSettings, ctx: ComponentContext) -> None:
    client = component_client(
        settings.server,
        COMPONENT,
        settings.config.client_connection,
        ctx,
        settings.apiserver_latency,
        tls=settings.tls,
    )
    try:
        await serve(client, settings, ctx)
    finally:
        with cleanup_scope():
            await client.close()


def new_cache(clock: Clock, gates: FeatureGates) -> Cache:
    """The scheduler's cache, counting pods as the emulated version does
    (kemu.component.pod_resources: InPlacePodVerticalScaling, PodLevelResources and the
    version's aggregation rule, which upstream changed in 1.37 without a gate); its assumed
    pods expire as the version's did. Resolved once here; every PodInfo, the cache's and the
    queue's (`Cache.pod_info`), is built with them, as the plugins' own are."""
    return Cache(
        clock=clock,
        ttl=assumed_pod_ttl(VersionRules.at(gates.version)),
        counting=pod_resources_options(gates),
    )


@dataclass(frozen=True, slots=True)
class _Informers:
    """The scheduler's informers: pods (not yet finished) and nodes feed the cache and the
    queue; the others are read by the plugins through the handle's factory."""

    factory: InformerFactory
    pods: Informer[types_pb2.Pod]
    nodes: Informer[types_pb2.Node]
    storage: list[Informer[Message]]
    pod_groups: list[Informer[Message]]
    dra: list[Informer[Message]]

    @staticmethod
    def of(client: ApiClient, ctx: ComponentContext, membership: GroupMembership) -> _Informers:
        # Each stored object copied out of the response it came in (kemu.client.informer): a
        # decoded pod would otherwise pin its whole WatchResponse, up to 500 pods' older
        # versions.
        factory = InformerFactory(client, clock=ctx.clock, copy_objects=True)
        pods = factory.informer(types_pb2.Pod, field_selector=POD_FIELD_SELECTOR)
        nodes = factory.informer(types_pb2.Node)
        # Preemption (DefaultPreemption) reads PDBs through the handle's informer factory;
        # it is started and synced with the others. (No PriorityClasses: a pod's priority is
        # in its spec, and upstream's system:kube-scheduler role cannot list them.)
        factory.informer(types_pb2.PodDisruptionBudget)
        # InterPodAffinity resolves namespaceSelectors through the Namespace informer.
        factory.informer(types_pb2.Namespace)
        # PodTopologySpread's default constraints select a pod's siblings by its Services and
        # its ReplicaSet (upstream DefaultSelector; kemu has no ReplicationControllers or
        # StatefulSets).
        factory.informer(types_pb2.Service)
        factory.informer(types_pb2.ReplicaSet)
        # The volume plugins read claims, PVs, StorageClasses and CSINodes; their changes
        # requeue the pods waiting for them (EventHandlers.register_storage).
        storage: list[Informer[Message]] = [factory.informer(kind) for kind in STORAGE_KINDS]
        # DynamicResourceAllocation: DynamicResources reads claims, slices, classes and, where
        # served, DeviceTaintRules; their changes requeue the pods waiting for devices
        # (EventHandlers.register_dra).
        dra: list[Informer[Message]] = []
        # (resource.k8s.io is served from 1.34, v1: kemu.machinery.kinds; earlier versions'
        # v1beta* are not emulated, so an older scheduler with the gate forced on reads none.)
        if ctx.gates.enabled(DYNAMIC_RESOURCE_ALLOCATION) and ctx.gates.version >= Version(1, 34):
            dra = [factory.informer(kind) for kind in DRA_KINDS]
            if ctx.gates.enabled(DRA_DEVICE_TAINT_RULES) and ctx.gates.version >= Version(1, 37):
                dra.append(factory.informer(types_pb2.DeviceTaintRule))
        # GenericWorkload: the Workloads (1.35) or PodGroups (1.36+) GangScheduling reads;
        # their adds and updates requeue the members waiting for them.
        pod_groups: list[Informer[Message]] = []
        if membership.field is MembershipField.WORKLOAD_REF:
            pod_groups.append(factory.informer(types_pb2.Workload))
        elif membership.field is MembershipField.SCHEDULING_GROUP:
            pod_groups.append(factory.informer(types_pb2.PodGroup))
            if composite_pod_groups_enabled(ctx.gates):
                pod_groups.append(factory.informer(types_pb2.CompositePodGroup))
        return _Informers(factory, pods, nodes, storage, pod_groups, dra)


def new_frameworks(
    settings: SchedulerSettings,
    client: ApiClient,
    informers: _Informers,
    recorder: EventRecorder,
    metrics: SchedulerMetrics,
    ctx: ComponentContext,
    pod_groups: PodGroupStates | None = None,
    api_dispatcher: APIDispatcher | None = None,
) -> dict[str, Framework]:
    """One Framework per profile, sharing the waiting pods and the random source (--seed;
    preemption's and the host selection's tie-breaks). With `api_dispatcher`
    (SchedulerAsyncAPICalls) the plugins' binds go through it."""
    rng = random.Random(settings.seed)
    waiting_pods = WaitingPodsMap()
    pods_in_pre_bind = PodsInPreBindMap()
    # DRA: one view of the claims (assumed, in flight), slices and classes for every profile.
    dra_manager = (
        DraManager.of(
            informers.factory,
            taint_rules=any(i.kind is types_pb2.DeviceTaintRule for i in informers.dra),
        )
        if informers.dra
        else None
    )
    observe = observer_from_histogram(metrics.framework_extension_point_duration)
    executor = functools.partial(
        Executor,
        client=client,
        pod_lister=informers.pods.lister,
        metrics=metrics,
        rules=VersionRules.at(ctx.gates.version),
        api_dispatcher=api_dispatcher,
    )
    try:
        return {
            profile.scheduler_name: Framework(
                profile,
                settings.registry,
                options=FrameworkOptions(
                    client=client
                    if api_dispatcher is None
                    else DispatchedBinds(client, api_dispatcher),
                    clock=ctx.clock,
                    gates=ctx.gates,
                    # Each profile reports as its schedulerName, as upstream's per-profile
                    # recorders (reportingInstance "<schedulerName>-<host>").
                    event_recorder=recorder.for_component(profile.scheduler_name),
                    informer_factory=informers.factory,
                    waiting_pods=waiting_pods,
                    pods_in_pre_bind=pods_in_pre_bind,
                    observe=observe,
                    metrics=metrics,
                    rng=rng,
                    preemption_executor=executor,
                    pod_group_states=pod_groups,
                    dra_manager=dra_manager,
                ),
            )
            for profile in settings.config.profiles
        }
    except ValueError as e:
        # A plugin factory refused its args (or a plugin lacks a point the profile names):
        # upstream's scheduler.New fails the start the same way.
        raise ConfigRefused(f"--config: {e}") from None


def observed_pre_enqueue(fn: PreEnqueueFn, observer: CycleObserver) -> PreEnqueueFn:
    """A profile's PreEnqueue that tells `observer` when it holds a pod (the decision record:
    who waits at PreEnqueue, since when, why)."""
    if observer is NO_OBSERVER:
        return fn

    def pre_enqueue(pod: types_pb2.Pod) -> Status:
        status = fn(pod)
        if not status.is_success():
            observer.gated(pod, status.plugin or "PreEnqueue", status.message())
        return status

    return pre_enqueue


def new_queue(
    config: KubeSchedulerConfiguration,
    frameworks: dict[str, Framework],
    cache: Cache,
    informers: _Informers,
    metrics: SchedulerMetrics,
    clock: Clock,
    observer: CycleObserver = NO_OBSERVER,
    pod_groups: PodGroupQueueing | None = None,
    settle: Callable[[], Awaitable[None]] | None = None,
) -> PriorityQueue:
    """The scheduling queue, sorted by the first profile's QueueSort, gated and hinted by
    every profile's plugins; the profiles' nominator and activator. `pod_groups`: 1.37's
    pod-group entities (scheduler.queue.pod_group_entity); `settle`: what a pop waits for
    first (a scheduling cycle is a step of the cluster at one virtual instant:
    kemu.component.clock_steps)."""
    first = next(iter(frameworks.values()))
    queue = PriorityQueue(
        clock=clock,
        less=first.queue_sort_func(),
        pre_enqueue={
            name: observed_pre_enqueue(f.run_pre_enqueue_plugins, observer)
            for name, f in frameworks.items()
        },
        queueing_hint_map={
            name: build_queueing_hint_map(f.enqueue_extensions()) for name, f in frameworks.items()
        },
        options=QueueOptions(
            pod_initial_backoff=config.pod_initial_backoff_seconds,
            pod_max_backoff=config.pod_max_backoff_seconds,
        ),
        metrics=metrics,
        pod_lister=informers.pods.lister,
        pod_info_factory=cache.pod_info,
        pod_groups=pod_groups,
        settle=settle,
    )
    for fwk in frameworks.values():
        fwk.set_nominator(queue.nominator)
        fwk.set_pod_activator(queue.activate)
    return queue


async def serve(client: ApiClient, settings: SchedulerSettings, ctx: ComponentContext) -> None:
    """Wires the scheduler (informers, cache, profiles, queue, event handlers, the cycle),
    then runs it: the informers from start-up, the cycles while this replica leads."""
    metrics = SchedulerMetrics(ctx.registry, entities=ctx.gates.version >= ENTITY_QUEUE_SINCE)
    membership = GroupMembership.of(
        ctx.gates, resize_preemption=resize_preemption_enabled(ctx.gates)
    )
    forest = (
        WorkloadForest(enabled=composite_pod_groups_enabled(ctx.gates))
        if membership.group_cycle
        else None
    )
    pod_groups = PodGroupStates(membership, ctx.clock, forest) if membership.enabled else None
    informers = _Informers.of(client, ctx, membership)
    # (upstream's scheduler records through events.k8s.io/v1: cmd/kube-scheduler/app/server.go
    # NewEventBroadcasterAdapter, a recorder per profile, over an event client of its own:
    # options.go createClients, a rate limiter of its own)
    recorder = EventRecorder(
        sibling_of(client),
        COMPONENT,
        api=EventApi.EVENTS_V1,
        host=socket.gethostname(),
        clock=ctx.clock,
    )
    cache = new_cache(ctx.clock, ctx.gates)
    # SchedulerAsyncAPICalls: binds and failure status patches through a dispatcher over
    # the scheduler's one (rate-limited) client (pkg/scheduler/scheduler.go New).
    api_dispatcher = (
        APIDispatcher(client, ctx.clock, ctx.registry)
        if ctx.gates.enabled(SCHEDULER_ASYNC_API_CALLS)
        else None
    )
    frameworks = new_frameworks(
        settings,
        client,
        informers,
        recorder,
        metrics,
        ctx,
        pod_groups=pod_groups,
        api_dispatcher=api_dispatcher,
    )
    observer: CycleObserver = NO_OBSERVER
    if settings.record_decisions:
        decisions = DecisionLog()
        observer = DecisionRecorder(decisions, ctx.clock)
        ctx.add_debug_handler(DECISIONS_DEBUG_HANDLER, decisions.report)
    queue = new_queue(
        settings.config,
        frameworks,
        cache,
        informers,
        metrics,
        ctx.clock,
        observer,
        pod_group_queueing(pod_groups, ctx.gates.version),
        # (taken at once unless in a clock session)
        functools.partial(take_step, ctx.clock, StepOrder.SCHEDULING_CYCLE),
    )
    handlers = EventHandlers(
        cache=cache,
        queue=queue,
        scheduler_names=frameworks,
        frameworks=frameworks,
        resize_preemption=resize_preemption_enabled(ctx.gates),
        pod_groups=pod_groups,
    )
    handlers.register(informers.pods, informers.nodes)
    handlers.register_storage(*informers.storage)
    handlers.register_dra(*informers.dra)
    handlers.register_pod_groups(*informers.pod_groups)
    pod_group_lister: ObjectLister[types_pb2.PodGroup] | None = None
    pod_group_metrics: PodGroupMetrics | None = None
    if membership.group_cycle:
        pod_group_lister = informers.factory.informer(types_pb2.PodGroup).lister
        # (upstream: ALPHA since 1.36, registered with GenericWorkload; `type` from 1.37)
        pod_group_metrics = PodGroupMetrics(ctx.registry, typed=ctx.gates.version >= Version(1, 37))
    scheduler = Scheduler(
        client=client,
        cache=cache,
        queue=queue,
        profiles=dict(frameworks),
        pod_lister=informers.pods.lister,
        clock=ctx.clock,
        metrics=metrics,
        settings=CycleSettings.of(ctx.gates, paths=settings.paths),
        observer=observer,
        pod_groups=pod_groups,
        pod_group_lister=pod_group_lister,
        pod_group_metrics=pod_group_metrics,
        api_dispatcher=api_dispatcher,
    )
    ctx.add_readiness_check("informers", functools.partial(_synced, informers.factory))
    comparer = CacheComparer.wired(
        ctx,
        COMPONENT,
        lambda: [
            *informer_sources(informers.factory),
            *cache_sources(cache, queue, informers.pods, informers.nodes, frameworks),
        ],
    )
    serve_informers(ctx, lambda: informers.factory)
    ctx.on_debug_signal(CacheDumper(cache, queue).dump_all)

    async def schedule() -> None:
        await informers.factory.wait_for_cache_sync()
        tune_gc(freeze=True)
        logger.info("caches synced, scheduling (profiles: %s)", ", ".join(frameworks))
        async with anyio.create_task_group() as tg:
            await tg.start(queue.run)
            await tg.start(cache.run)
            if api_dispatcher is not None:
                await tg.start(api_dispatcher.run)
            await scheduler.run()

    async with anyio.create_task_group() as tg:
        await tg.start(recorder.run)
        await tg.start(comparer.run)
        await run_elected(
            client,
            ctx,
            component=COMPONENT,
            election=settings.election,
            work=schedule,
            elected=Elected(),
            # (a standby's informers run too, once its watches carry its clock identity)
            on_clock=functools.partial(informers.factory.start, tg),
        )
        tg.cancel_scope.cancel()


def _synced(informers: InformerFactory) -> bool:
    if not informers.has_synced():
        raise RuntimeError("the informers have not synced yet")
    return True
