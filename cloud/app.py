"""The emulated cloud: `python -m cloud --server HOST:PORT --config FILE --state-dir DIR --port N`.

It owns the node groups of its config and runs a kemu kubelet (`python -m kubelet`) for every
instance it creates: one process per instance, or with `--kubelet-processes node-group` one
hollow kubelet process per node group whose nodes the cloud adds and removes (cloud.kubelets); each instance's Node carries the label
kemu.io/node-group=<group> and spec.providerID kemu://<group>/<instance>. It serves the
node-group API (kemu.api.cloud.v1.CloudProvider, upstream's externalgrpc shape) on --port; its
own process, so an autoscaler restart loses no node, as with a real cloud.

State lives in --state-dir (state.json, and each instance's (or node group's) kubelet root
dir and log under instances/ and logs/). On SIGTERM the cloud stops its kubelets (a kubelet also dies with a
SIGKILLed cloud) and on start it starts them again from its state: instances, their Nodes and
their pods' checkpoints survive a restart, none is lost or duplicated.

/readyz is green once the Node informer has synced and the gRPC API serves.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence

import anyio
import grpc
from anyio.abc import TaskGroup

from cloud.config import NODE_GROUP_LABEL
from cloud.kubelets import KubeletLaunch, KubeletProcesses, NodeGroupKubelets
from cloud.options import (
    COMPONENT,
    CloudSettings,
    KubeletProcessMode,
    build_parser,
    settings_from_args,
)
from cloud.provider import Cloud, Kubelets, NodeLister
from cloud.servicer import CloudProviderServicer
from cloud.state import StateStore
from kemu import wire
from kemu.api.cloud.v1 import cloud_pb2
from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.clock import PeerCalls, follow_cluster_clock
from kemu.client.informer import InformerFactory
from kemu.client.interface import ApiClient
from kemu.client.leaderelection import new_identity
from kemu.component import listen
from kemu.component.options import parse_component_args
from kemu.component.runner import ComponentContext, cleanup_scope, run_component
from kemu.component.virtual_clock import VirtualClock

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT)
    settings = settings_from_args(parser, args)
    return run_component(COMPONENT, options, functools.partial(run, settings))


async def run(settings: CloudSettings, ctx: ComponentContext) -> None:
    client = Client(
        settings.server,
        user_agent=COMPONENT,
        latency=settings.apiserver_latency.on(ctx.clock),
        tls=settings.tls,
    )
    try:
        await serve(client, settings, ctx)
    finally:
        with cleanup_scope():
            await client.close()


def _new_cloud(
    client: ApiClient, settings: CloudSettings, ctx: ComponentContext, nodes: NodeLister
) -> Cloud:
    """The provider over its state in --state-dir, starting kubelets as --kubelet-processes
    says."""
    launch = KubeletLaunch(
        server=settings.server,
        server_order=settings.server_order,
        kubeconfig=settings.kubeconfig,
        instances_dir=settings.state_dir / "instances",
        log_dir=settings.state_dir / "logs",
        clock_mode=ctx.options.clock,
        apiserver_latency=settings.apiserver_latency,
    )
    kubelets: Kubelets = (
        NodeGroupKubelets(launch)
        if settings.kubelet_processes is KubeletProcessMode.NODE_GROUP
        else KubeletProcesses(launch)
    )
    return Cloud(
        settings.config,
        StateStore(settings.state_dir),
        kubelets,
        client,
        nodes,
        provision_delay=settings.provision_delay,
        clock=ctx.clock,
        clock_mode=ctx.options.clock,
    )


def _grpc_server(cloud: Cloud, peers: PeerCalls) -> grpc.aio.Server:
    """The node-group API's server; its calls counted in `peers` for the event-driven clock."""
    server = grpc.aio.server(options=[("grpc.so_reuseport", 0)], interceptors=[_CountCalls(peers)])
    # (wire.service_handler rather than the generated add_..._to_server: a request that does
    # not decode is INVALID_ARGUMENT, not UNKNOWN)
    service = cloud_pb2.DESCRIPTOR.services_by_name["CloudProvider"]
    server.add_generic_rpc_handlers((wire.service_handler(service, CloudProviderServicer(cloud)),))
    return server


async def _follow_cluster_clock(
    tg: TaskGroup, client: ApiClient, cloud: Cloud, ctx: ComponentContext, peers: PeerCalls
) -> None:
    """--clock virtual: on the cluster clock before the instances' times are read."""
    if not (isinstance(ctx.clock, VirtualClock) and isinstance(client, Client)):
        return
    await client.wait_ready()
    await tg.start(
        functools.partial(
            follow_cluster_clock,
            client,
            ctx.clock,
            component=COMPONENT,
            # (one per process: the apiserver counts a session's calls by it, and a restarted
            # cloud on the same address is another session)
            identity=new_identity(),
            # (a kubelet booting is the cloud's work until it is in session)
            busy=cloud.booting,
            ready=ctx.checks.is_ready,
            peers=peers,
        ),
        name="clock session",
    )


async def serve(client: ApiClient, settings: CloudSettings, ctx: ComponentContext) -> None:
    informers = InformerFactory(client, clock=ctx.clock)
    nodes = informers.informer(types_pb2.Node, label_selector=NODE_GROUP_LABEL)
    cloud = _new_cloud(client, settings, ctx, nodes.lister)
    serving = anyio.Event()

    def ready() -> bool:
        if not serving.is_set():
            raise RuntimeError("the node informer has not synced or the API does not serve yet")
        return True

    ctx.add_readiness_check("cloud", ready)
    peers = PeerCalls()
    server = _grpc_server(cloud, peers)
    port = listen.add_grpc_port(server, settings.bind_address, settings.port)
    reconciling = anyio.CancelScope()

    async def reconcile() -> None:
        with reconciling:
            await cloud.run()

    try:
        async with anyio.create_task_group() as tg:
            await _follow_cluster_clock(tg, client, cloud, ctx, peers)
            informers.start(tg)
            await informers.wait_for_cache_sync()
            await cloud.start()
            await server.start()
            tg.start_soon(reconcile, name="cloud reconcile")
            serving.set()
            logger.info(
                "serving the cloud provider API on %s:%d: %d node group(s), %d instance(s)",
                settings.bind_address,
                port,
                len(settings.config.node_groups),
                len(cloud.state.instances),
            )
            await ctx.stopping.wait()
            # No kubelet is (re)started from now on: a SIGTERM sent to the cloud's process
            # group (honcho, the test harness) reaches its kubelets too, and the reconcile
            # loop would replace the ones that exit while the API drains.
            reconciling.cancel()
            with cleanup_scope(ctx.options.shutdown_grace_period + 1):
                await server.stop(min(ctx.options.shutdown_grace_period, 5.0))
            tg.cancel_scope.cancel()
    finally:
        with cleanup_scope(15):
            await cloud.shutdown()


class _CountCalls(grpc.aio.ServerInterceptor):  # type: ignore[type-arg]  # (not generic at run time)
    """Counts the calls served (the autoscaler's), for the event-driven clock."""

    def __init__(self, peers: PeerCalls) -> None:
        self._peers = peers

    async def intercept_service(
        self,
        continuation: Callable[
            [grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler[object, object]]
        ],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[object, object]:
        self._peers.served(handler_call_details.invocation_metadata or ())
        return await continuation(handler_call_details)
