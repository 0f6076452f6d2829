"""The cluster autoscaler: `python -m autoscaler --server HOST:PORT --cloud-provider-address
HOST:PORT [upstream's flags]`.

Node groups, their min and max sizes and templates come from the cloud's gRPC API (kemu's
`python -m cloud`, upstream's externalgrpc shape). Leader-elected on kube-system/
cluster-autoscaler with --leader-elect. Every --scan-interval the loop of
autoscaler/static_autoscaler.py runs: scale-up, then (when nothing was scaled up) scale-down
(autoscaler/scaledown/).

/readyz is green once the informers have synced (a standby is ready too). SIGUSR2 compares every
informer's store with a fresh list from the apiserver (kemu.client.comparer; a standby has none)
and serves the result at GET /debug/caches.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import random
from collections.abc import Sequence

import anyio

from autoscaler.clusterstate import CloudApi
from autoscaler.config import AutoscalerSettings
from autoscaler.decisions import LoopDecisionLog
from autoscaler.expander import (
    PRIORITY_CONFIGMAP,
    PRIORITY_KEY,
    Expander,
)
from autoscaler.metrics import Metrics
from autoscaler.options import COMPONENT, build_parser, settings_from_args
from autoscaler.static_autoscaler import ListerRegistry, Reporting, StaticAutoscaler
from autoscaler.status import StatusWriter
from kemu.api.v1 import types_pb2
from kemu.client.client import sibling_of
from kemu.client.cloudprovider import CloudProviderClient
from kemu.client.comparer import CacheComparer, Source, informer_sources
from kemu.client.controlplane import (
    Elected,
    component_client,
    run_elected,
)
from kemu.client.events import EventRecorder
from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.client_connection import REST_DEFAULTS
from kemu.component.featuregate import DYNAMIC_RESOURCE_ALLOCATION
from kemu.component.options import (
    DECISIONS_DEBUG_HANDLER,
    parse_component_args,
)
from kemu.component.runner import (
    ComponentContext,
    ConfigRefused,
    cleanup_scope,
    run_component,
)
from kemu.scheduling.dra_snapshot import SimulationDraManager
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.plugins.volumes import STORAGE_KINDS
from kemu.scheduling.runtime import Framework, FrameworkOptions
from kemu.scheduling.snapshot import Snapshot

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None, out_of_tree: Registry | None = None) -> int:
    """`out_of_tree`: scheduler plugins by name (their factories) for the simulations, besides
    the in-tree, emulation and installed ones (as the scheduler's main)."""
    parser = build_parser()
    args, options = parse_component_args(parser, argv, "autoscaler")
    settings = settings_from_args(parser, args, options, out_of_tree)
    return run_component("autoscaler", options, functools.partial(run, settings))


async def run(settings: AutoscalerSettings, ctx: ComponentContext) -> None:
    client = component_client(
        settings.server,
        COMPONENT,
        settings.client_connection,
        ctx,
        settings.apiserver_latency,
        tls=settings.tls,
    )
    cloud = CloudProviderClient(settings.cloud_provider_address)
    logger.info("the cloud's node-group API: %s", cloud.address)
    try:
        await serve(client, cloud, settings, ctx)
    finally:
        with cleanup_scope():
            await cloud.close()
            await client.close()


class _Informers:
    """The informers the loop reads, and those the simulations' plugins read through the
    framework's handle."""

    def __init__(self, client: ApiClient, ctx: ComponentContext) -> None:
        self.factory = factory = InformerFactory(client, clock=ctx.clock)
        self.nodes = factory.informer(types_pb2.Node)
        self.pods = factory.informer(types_pb2.Pod)
        self.pdbs = factory.informer(types_pb2.PodDisruptionBudget)
        self.daemonsets = factory.informer(types_pb2.DaemonSet)
        self.configmaps = factory.informer(types_pb2.ConfigMap, namespace="kube-system")
        # What the default profile's plugins read through the handle, as in the scheduler:
        # the volume plugins' claims, PVs, classes and CSINodes too (upstream's predicate
        # checker runs VolumeBinding's PreFilter and Filter on the shared informers' listers).
        for kind in (
            types_pb2.Namespace,
            types_pb2.Service,
            types_pb2.ReplicaSet,
            *STORAGE_KINDS,
        ):
            factory.informer(kind)
        # DRA (upstream's --enable-dynamic-resource-allocation; here the
        # DynamicResourceAllocation gate): the claims, slices and classes the simulations copy
        # into their DraSnapshot each loop.
        self.dra = ctx.gates.enabled(DYNAMIC_RESOURCE_ALLOCATION)
        self.claims = factory.informer(types_pb2.ResourceClaim) if self.dra else None
        self.slices = factory.informer(types_pb2.ResourceSlice) if self.dra else None
        self.classes = factory.informer(types_pb2.DeviceClass) if self.dra else None

    def listers(self) -> ListerRegistry:
        registry = ListerRegistry(
            nodes=self.nodes.lister.list,
            pods=self.pods.lister.list,
            pdbs=self.pdbs.lister.list,
            daemonsets=self.daemonsets.lister.list,
        )
        if self.claims is None or self.slices is None or self.classes is None:
            return registry
        return dataclasses.replace(
            registry,
            resource_claims=self.claims.lister.list,
            resource_slices=self.slices.lister.list,
            device_classes=self.classes.lister.list,
        )

    def priority_config(self) -> str | None:
        """The priority expander's configuration (its ConfigMap in kube-system)."""
        cm = self.configmaps.lister.get(PRIORITY_CONFIGMAP, "kube-system")
        return None if cm is None else cm.data.get(PRIORITY_KEY)


class Autoscaler:
    """The parts of one autoscaler process; `work()` is what its leader runs."""

    def __init__(
        self,
        client: ApiClient,
        cloud: CloudApi,
        settings: AutoscalerSettings,
        ctx: ComponentContext,
        decisions: LoopDecisionLog | None,
    ) -> None:
        self.client = client
        self.cloud = cloud
        self.settings = settings
        self.ctx = ctx
        self.decisions = decisions
        self.elected = Elected()
        self.informers: _Informers | None = None
        """Set once the informers have synced."""
        self.metrics = Metrics(ctx.registry)
        # (upstream's EventSource{Component: "cluster-autoscaler"}: no host,
        # cluster-autoscaler/utils/kubernetes/factory.go CreateEventRecorder; over an events
        # client of its own made from the kubeconfig alone, rest's 5/10 and not
        # --kube-client-qps/--kube-client-burst: cluster-autoscaler/main.go eventsKubeClient)
        self.recorder = EventRecorder(sibling_of(client, REST_DEFAULTS), COMPONENT, clock=ctx.clock)

    def ready(self) -> bool:
        if self.elected.is_standby():
            return True
        if self.informers is None or not self.informers.factory.has_synced():
            raise RuntimeError("the informers have not synced yet")
        return True

    def _framework(self, informers: _Informers) -> Framework:
        simulation = self.settings.simulation
        try:
            return Framework(
                simulation.profile,
                simulation.registry,
                options=FrameworkOptions(
                    clock=self.ctx.clock,
                    gates=self.ctx.gates,
                    informer_factory=informers.factory,
                    # The simulations' claims, slices and classes (upstream's
                    # WithSharedDraManager on its DRA snapshot).
                    dra_manager=SimulationDraManager() if informers.dra else None,
                ),
                snapshot=Snapshot(),
            )
        except ValueError as e:  # a plugin factory refused its args
            raise ConfigRefused(f"--scheduler-config-file: {e}") from None

    def _static_autoscaler(
        self, informers: _Informers, status: StatusWriter | None
    ) -> StaticAutoscaler:
        options = self.settings.autoscaling_options
        return StaticAutoscaler(
            options,
            self.cloud,
            self._framework(informers),
            informers.listers(),
            Reporting(self.recorder, self.metrics, status=status, decisions=self.decisions),
            clock=self.ctx.clock,
            expander=Expander(
                options.expander,
                rng=random.Random(self.settings.seed),
                priority_config=informers.priority_config,
            ),
            client=self.client,
        )

    async def work(self) -> None:
        """Starts the informers and, once they have synced, runs the loop until cancelled."""
        options = self.settings.autoscaling_options
        informers = _Informers(self.client, self.ctx)
        status = (
            StatusWriter(self.client, self.ctx.clock, informers.nodes.lister.list)
            if options.write_status_configmap
            else None
        )
        autoscaler = self._static_autoscaler(informers, status)
        async with anyio.create_task_group() as tg:
            await tg.start(self.recorder.run)
            informers.factory.start(tg)
            await informers.factory.wait_for_cache_sync()
            self.informers = informers
            if status is not None:
                await status.initializing()
            logger.info(
                "caches synced; autoscaling every %gs (emulated %s)",
                options.scan_interval,
                options.version,
            )
            await autoscaler.run()


async def serve(
    client: ApiClient,
    cloud: CloudApi,
    settings: AutoscalerSettings,
    ctx: ComponentContext,
    *,
    identity: str | None = None,
) -> None:
    """The body of the component over any ApiClient and cloud (tests pass fakes); the
    decision record (--record-decisions) is served at /debug/decisions."""
    decisions = LoopDecisionLog() if settings.record_decisions else None
    if decisions is not None:
        ctx.add_debug_handler(DECISIONS_DEBUG_HANDLER, decisions.report)
    autoscaler = Autoscaler(client, cloud, settings, ctx, decisions)
    ctx.add_readiness_check("autoscaler", autoscaler.ready)

    def sources() -> list[Source]:
        informers = autoscaler.informers
        return informer_sources(None if informers is None else informers.factory)

    comparer = CacheComparer.wired(ctx, COMPONENT, sources)
    async with anyio.create_task_group() as tg:
        await tg.start(comparer.run)
        await run_elected(
            client,
            ctx,
            component=COMPONENT,
            election=settings.election,
            work=autoscaler.work,
            identity=identity,
            elected=autoscaler.elected,
            # (a call to the cloud in flight is the autoscaler's work: the clock waits for it)
            busy=lambda: cloud.requests_in_flight > 0,
            peers=cloud.peer_calls,
        )
        tg.cancel_scope.cancel()
