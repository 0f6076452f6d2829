"""kubelet: `python -m kubelet --server HOST:PORT --node-name N --capacity cpu=4,memory=8Gi,pods=110`.

One process runs one node, or K hollow nodes (`--nodes K --node-name-prefix P`: P-0 .. P-(K-1)),
each with its own Node, Lease, pods and checkpoint, sharing one client, one pod informer and
one node informer, one work queue and one set of pod workers. /readyz is green once every node
is registered and the pod informer has synced.

The informers hold only the process's own objects. One node watches as upstream's kubelet does
(fieldSelector spec.nodeName=<node> for pods and, with --dra-slice-file, ResourceSlices;
metadata.name=<node> for its Node), as its node's user: what the Node authorizer allows it.
Hollow nodes watch every bound pod (spec.nodeName!=), every Node and every slice in one watch
each, since a field selector takes one value per field; the informer drops on arrival the
objects of nodes the process does not run (`keep`, before they are stored), so K hollow nodes
hold their own pods, not the cluster's. Those shared watches (and the process's events) are the
process's user's, not a node's: under `--authorization-mode Node,RBAC` that user needs RBAC to
list and watch pods, nodes and resourceslices (and to impersonate its nodes' users), as
kubemark's hollow nodes' own credentials would (docs/security.md); everything a hollow node
does for itself (its Node, Lease, pods' status and deletion, its claims' reads, its slices)
is its node's user's.

Upstream's kubelet lists no ResourceClaims: its DRA manager gets each claim of a pod when it
prepares the pod (kubelet/dra_manager.py). Only when --dra-slice-file gives a device
bindingConditions does the process watch every claim, as the driver's controller that answers
them (kubelet/dra_driver.py; upstream: the driver's own ServiceAccount, which under
Node,RBAC needs RBAC for it); a pod waiting for a claim is then synced again at the claim's
change, else after the retry period (dra_manager.PREPARE_RETRY_PERIOD), as upstream's pod
workers' back-off.

The kubelet's identity for the Version RPC (`kemuctl version`) rides on one node's Lease
(kubelet/node_status.py): the first node the process runs, or, once that one is removed
(--node-control), the next one added. It keeps no identity lease in kube-system, which the
Node authorizer would refuse.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Final

import anyio
from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.client.client import Client, as_user_of, sibling_of, unthrottled_of
from kemu.client.controlplane import (
    carried_by_the_work,
    component_client,
    component_identity,
    run_elected,
)
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, Informer, InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.client_connection import UNLIMITED
from kemu.component.featuregate import (
    DYNAMIC_RESOURCE_ALLOCATION,
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    POD_DISRUPTION_CONDITIONS,
    POD_HOST_IPS,
    POD_OBSERVED_GENERATION_TRACKING,
    FeatureGates,
)
from kemu.component.options import parse_component_args
from kemu.component.pod_resources import pod_resources_options
from kemu.component.runner import ComponentContext, cleanup_scope, run_component
from kemu.component.version_rules import VersionRules
from kemu.machinery.certs import subject
from kemu.machinery.dra_slice_file import NO_DRIVERS
from kemu.machinery.user import NODE_USER_PREFIX, NODES_GROUP, node_user
from kubelet.checkpoint import Checkpoint
from kubelet.dra_driver import BindingConditionsDriver
from kubelet.lease_batch import LeaseBatcher
from kubelet.network import default_node_ip
from kubelet.node_control import serve_node_control
from kubelet.node_status import NodeAgent
from kubelet.options import COMPONENT, SERVING_PAIR, build_parser, settings_from_args
from kubelet.pod_manager import NodePods
from kubelet.pod_workers import PodWorkers
from kubelet.resourceslice_controller import ResourceSlicePublisher
from kubelet.settings import KubeletSettings, PodWorkerOptions

logger = logging.getLogger(__name__)

REGISTRATION_CONCURRENCY: Final = 16
NODES_PER_PHASE: Final = 100
"""A hollow kubelet's nodes renew their Leases and check their status in phases of at most
this many, spread evenly over the renew interval: a burst of 100 Lease writes is served in a
fraction of a second, and the event-driven virtual clock makes one jump for each phase (the
nodes of one phase share their deadlines) rather than one per node. A phase's renewals travel
as one UpdateBatch call (kubelet/lease_batch.py)."""


def renewal_offsets(count: int, interval: float) -> list[float]:
    """Where in the renew interval each of `count` nodes renews (NODES_PER_PHASE)."""
    phases = -(-count // NODES_PER_PHASE)
    return [interval * (i // NODES_PER_PHASE) / phases for i in range(count)]


def pod_worker_options(options: PodWorkerOptions, gates: FeatureGates) -> PodWorkerOptions:
    """`options` (from the flags) with what the emulated version decides, resolved once: the
    resize gates (a kubelet without in-place resize does not report container resources, so
    the apiserver refuses to resize its pods), PodObservedGenerationTracking, PodHostIPs,
    PodDisruptionConditions (the DisruptionTarget of a pod preempted for a critical one), and
    how pods are counted (kemu.component.pod_resources: PodLevelResources and the aggregation
    rule of a resizing pod's sizes, which upstream changed in 1.37 without a gate)."""
    in_place_resize = gates.enabled(IN_PLACE_POD_VERTICAL_SCALING)
    return dataclasses.replace(
        options,
        in_place_resize=in_place_resize,
        report_resources=in_place_resize,
        observed_generation=gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
        host_ips=gates.enabled(POD_HOST_IPS),
        scheduler_preempts_for_resizes=gates.enabled(
            IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
        ),
        counting=pod_resources_options(gates),
        disruption_conditions=gates.enabled(POD_DISRUPTION_CONDITIONS),
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, options = parse_component_args(parser, argv, COMPONENT, metrics_pair=SERVING_PAIR)
    try:
        settings = settings_from_args(
            args, f"v{options.version}.0", VersionRules.at(options.version)
        )
    except ValueError as e:
        parser.error(str(e))
    return run_component(COMPONENT, options, functools.partial(run, settings))


def claims_node_users(settings: KubeletSettings) -> bool:
    """Whether the process names its nodes' users on its calls (the `impersonate-user`
    metadata). Upstream's kubelet is its client certificate's user, system:node:<name>, and so
    is a one-node kemu kubelet with a node's certificate: it claims nothing (with another
    node's certificate it is that node, and the Node authorizer and NodeRestriction refuse it
    its own). Otherwise it claims its node's user: without a certificate (a plaintext kubelet
    is named too), with one that names no node (the cloud's instance kubelets run with the
    cloud's), and in a hollow process each of its nodes' (impersonation, docs/security.md)."""
    one_node = len(settings.nodes) == 1 and settings.template is None
    if not one_node or settings.tls is None or settings.tls.cert is None:
        return True
    user, groups = subject(settings.tls.cert)
    return not (user.startswith(NODE_USER_PREFIX) and NODES_GROUP in groups)


async def run(settings: KubeletSettings, ctx: ComponentContext) -> None:
    # A hollow process's nodes would each be a kubelet with a client of its own upstream
    # (kubemark); kemu's share one client, so only a one-node kubelet is rate limited.
    one_node = len(settings.nodes) == 1 and settings.template is None
    connection = settings.client_connection if one_node else UNLIMITED
    # Each kubelet is its node's user (`claims_node_users`); a hollow process's nodes claim
    # theirs on their heartbeats (Kubelet._node_client).
    client = component_client(
        settings.server,
        COMPONENT,
        connection,
        ctx,
        settings.apiserver_latency,
        user=node_user(settings.nodes[0].name)
        if one_node and claims_node_users(settings)
        else None,
        tls=settings.tls,
    )
    try:
        await serve(client, settings, ctx)
    finally:
        with cleanup_scope():
            await client.close()


class OwnNodes:
    """The names of the nodes a process runs: the `keep` predicates of its informers (a set
    that --node-control's adds and removes change)."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = set(names)

    def pod(self, pod: types_pb2.Pod) -> bool:
        return pod.spec.node_name in self.names

    def node(self, node: types_pb2.Node) -> bool:
        return node.metadata.name in self.names

    def resource_slice(self, s: types_pb2.ResourceSlice) -> bool:
        return s.spec.node_name in self.names


class Kubelet:
    """The parts of one kubelet process, wired; `run()` does the work."""

    def __init__(self, client: ApiClient, settings: KubeletSettings, ctx: ComponentContext) -> None:
        self.settings = settings
        self._client = client
        self._ctx = ctx
        self._pod_clients: dict[str, ApiClient] = {}
        single = len(settings.nodes) == 1 and settings.template is None
        host = settings.nodes[0].name if single else ""
        self.identity = component_identity(COMPONENT, ctx)
        self._identity_node = settings.nodes[0].name if settings.nodes else None
        """The node whose Lease carries the process's identity (None: none yet)."""
        client_of: Callable[[str], ApiClient] = (
            (lambda _node: client) if single else self._pod_client
        )
        self._client_of = client_of
        """A node's client (its node's user), by its name."""
        # (upstream's kubelet records events over a clientset of its own)
        self.recorder = EventRecorder(sibling_of(client), COMPONENT, host=host, clock=ctx.clock)
        self.informers = InformerFactory(client, clock=ctx.clock)
        # One watch per kind: a node's own pods by field selector, or every bound pod (and
        # every node) for hollow nodes, the other processes' dropped by the informer.
        own = self.own = OwnNodes(config.name for config in settings.nodes)
        self.pod_informer = self.informers.informer(
            types_pb2.Pod,
            field_selector=f"spec.nodeName={host}" if single else "spec.nodeName!=",
            keep=None if single else own.pod,
        )
        self.node_informer = self.informers.informer(
            types_pb2.Node,
            field_selector=f"metadata.name={host}" if single else "",
            keep=None if single else own.node,
        )
        # --dra-slice-file: the simulated drivers publish each node's slices once its Node
        # exists (kubelet.resourceslice_controller).
        self.slice_publisher: ResourceSlicePublisher | None = None
        self.slice_informer: Informer[types_pb2.ResourceSlice] | None = None
        self.binding_driver: BindingConditionsDriver | None = None
        dra = settings.dra
        if dra and not ctx.gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
            logger.warning("--dra-slice-file ignored: DynamicResourceAllocation is off")
            dra = NO_DRIVERS
        if dra:
            self.slice_informer = self.informers.informer(
                types_pb2.ResourceSlice,
                field_selector=f"spec.nodeName={host}" if single else "",
                keep=None if single else own.resource_slice,
            )
            self.slice_publisher = ResourceSlicePublisher(
                client_of, dra, self.slice_informer, clock=ctx.clock
            )
        if dra.binds_devices():
            # Every claim, as the drivers' controller that answers the binding conditions of
            # their devices (kubelet.dra_driver); the pods waiting for theirs are synced at
            # their changes.
            claim_informer = self.informers.informer(types_pb2.ResourceClaim)
            self.binding_driver = BindingConditionsDriver(
                client,
                dra,
                claim_informer,
                clock=ctx.clock,
                owns_pool=lambda pool: pool in own.names,
            )
            binding = self.binding_driver
            claim_informer.add_event_handler(
                FuncHandler(
                    on_add=lambda c: self._on_claim(c, binding),
                    on_update=lambda _old, new: self._on_claim(new, binding),
                    on_delete=binding.on_claim_deleted,
                )
            )
        self.lease_batch = self._lease_batcher(settings)
        self.agents = [
            NodeAgent(
                self._node_client(config.name),
                config,
                clock=ctx.clock,
                timing=settings.timing,
                lister=self.node_informer.lister,
                lease_batch=self.lease_batch,
                identity=self.identity if config.name == self._identity_node else None,
            )
            for config in settings.nodes
        ]
        self.pod_workers = PodWorkers(
            client,
            [
                NodePods(
                    config.name,
                    config.allocatable_ints(),
                    Checkpoint(settings.root_dir, config.name),
                    node_ip=config.node_ip,
                )
                for config in settings.nodes
            ],
            clock=ctx.clock,
            options=pod_worker_options(settings.pods, ctx.gates),
            recorder=self.recorder,
            registry=ctx.registry,
            dra_drivers=dra,
            client_of=client_of,
        )
        self.pod_workers.restore()
        self.pod_informer.add_event_handler(self.pod_workers.handler())
        self.node_informer.add_event_handler(
            FuncHandler(
                on_add=self._on_node,
                on_update=lambda _old, new: self._on_node(new),
            )
        )
        self._synced = False
        self._limiter = anyio.CapacityLimiter(REGISTRATION_CONCURRENCY)
        self._group: TaskGroup | None = None
        self._added: dict[str, _AddedNode] = {}
        """The nodes --node-control added, by name."""
        self._agent_of = {agent.name: agent for agent in self.agents}
        """Every node's agent by name (the node informer's changes go to it)."""

    def _pod_client(self, node_name: str) -> ApiClient:
        """A hollow node's client for its pods' status: the process's client claiming the
        node's user (made once per node, dropped with the node)."""
        client = self._pod_clients.get(node_name)
        if client is None:
            client = self._pod_clients[node_name] = as_user_of(self._client, node_user(node_name))
        return client

    def _lease_batcher(self, settings: KubeletSettings) -> LeaseBatcher | None:
        """The process's batch of Lease renewals (kubelet/lease_batch.py): with
        --node-lease-batch, when it runs several nodes (or the nodes its parent adds) over a
        kemu Client. Its calls are the process's (user system:node:kubelet, in system:nodes:
        the same FlowSchema as each node's), unthrottled as each node's heartbeats."""
        several = len(settings.nodes) > 1 or settings.template is not None
        if not (settings.lease_batch and several and isinstance(self._client, Client)):
            return None
        client = self._client.unthrottled()
        return LeaseBatcher(client.update_batch, client.update)

    def _node_client(self, node_name: str) -> ApiClient:
        """A node's heartbeat client (the Lease and the node's status; upstream's: QPS -1),
        claiming the node's user: in a hollow process, each node's (upstream's kubemark
        gives each hollow node a client of its own); a one-node kubelet with a node's
        certificate claims none (`claims_node_users`)."""
        client = unthrottled_of(self._client)
        if not claims_node_users(self.settings):
            return client
        return as_user_of(client, node_user(node_name))

    def _on_node(self, node: types_pb2.Node) -> None:
        # upstream's kubelet passes its Node's podCIDR to the runtime (updatePodCIDR)
        self.pod_workers.set_pod_cidr(node.metadata.name, node.spec.pod_cidr)
        agent = self._agent_of.get(node.metadata.name)
        if agent is not None:
            agent.node_changed(node)
        if self.slice_publisher is not None and node.metadata.name in self.own.names:
            self.slice_publisher.node_changed(node)

    def _on_claim(self, claim: types_pb2.ResourceClaim, binding: BindingConditionsDriver) -> None:
        self.pod_workers.claim_changed(claim)
        binding.on_claim(claim)

    def ready(self) -> bool:
        if not all(a.ready.is_set() for a in self.agents):
            raise RuntimeError("not every node is registered with its Lease yet")
        if not self._synced:
            raise RuntimeError("the pod informer has not synced yet")
        return True

    async def run(self) -> None:
        count = len(self.agents)
        offsets = renewal_offsets(count, self.settings.timing.lease_renew_interval)
        async with anyio.create_task_group() as tg:
            self._group = tg
            await tg.start(self.recorder.run)
            if self.lease_batch is not None:
                await tg.start(self.lease_batch.run)
            previous: anyio.Event | None = None
            for agent, offset in zip(self.agents, offsets, strict=True):
                tg.start_soon(
                    functools.partial(
                        agent.run, offset=offset, limiter=self._limiter, after=previous
                    ),
                    name=f"node {agent.name}",
                )
                previous = agent.registered
            self.informers.start(tg)
            await self.informers.wait_for_cache_sync()
            await tg.start(self.pod_workers.run)
            if self.slice_publisher is not None:
                await tg.start(self.slice_publisher.run)
            if self.binding_driver is not None:
                await tg.start(self.binding_driver.run)
            self._synced = True
            if self.settings.template is not None:
                logger.info("kubelet running the nodes its parent adds (--node-control stdin)")
                tg.start_soon(
                    functools.partial(serve_node_control, self, on_end=self._ctx.stopping.set),
                    name="node control",
                )
            else:
                logger.info(
                    "kubelet running %d node(s): %s",
                    count,
                    self.agents[0].name
                    if count == 1
                    else f"{self.agents[0].name} .. {self.agents[-1].name}",
                )

    # ------------------------------------------------------------ nodes at run time

    async def add_node(self, name: str, provider_id: str) -> None:
        """Starts running node `name` (--node-control's `add`), as a kubelet starting on a
        new machine: its Node registered with `provider_id`, its checkpoint restored, the
        pods bound to it listed. Adding a node it runs does nothing."""
        template = self.settings.template
        if template is None:
            raise RuntimeError("add_node: the kubelet does not run with --node-control")
        if name in self._added:
            return
        assert self._group is not None
        config = dataclasses.replace(
            template, name=name, provider_id=provider_id, node_ip=str(default_node_ip(name))
        )
        # The informers keep the node's objects from now on; what they dropped before is
        # listed apart and merged (Informer.merge), and the pod workers take the node's pods
        # as the informer then holds them.
        self.own.names.add(name)
        # (as the node's user, with the field selectors the Node authorizer wants of it)
        mine = self._client_of(name)
        pods = await mine.list_all(types_pb2.Pod, field_selector=f"spec.nodeName={name}")
        nodes = await mine.list_all(types_pb2.Node, field_selector=f"metadata.name={name}")
        self.pod_informer.merge(pods.items)
        if self.slice_informer is not None:
            slices = await mine.list_all(
                types_pb2.ResourceSlice, field_selector=f"spec.nodeName={name}"
            )
            self.slice_informer.merge(slices.items)
        self.pod_workers.add_node(
            NodePods(
                name,
                config.allocatable_ints(),
                Checkpoint(self.settings.root_dir, name),
                node_ip=config.node_ip,
            ),
            [p for p in self.pod_informer.lister.list() if p.spec.node_name == name],
        )
        self.node_informer.merge(nodes.items)
        if self._identity_node is None:
            self._identity_node = name
        agent = NodeAgent(
            self._node_client(config.name),
            config,
            clock=self._ctx.clock,
            timing=self.settings.timing,
            lister=self.node_informer.lister,
            lease_batch=self.lease_batch,
            identity=self.identity if name == self._identity_node else None,
        )
        added = self._added[name] = _AddedNode(agent)
        self._agent_of[name] = agent
        self._group.start_soon(
            functools.partial(added.run, limiter=self._limiter), name=f"node {name}"
        )
        logger.info("node %s: started (providerID %s)", name, provider_id or "unset")

    async def remove_node(self, name: str) -> None:
        """Stops running node `name` (--node-control's `remove`), as its machine going away:
        its Lease and status are no longer kept and its pods are forgotten (the cloud deletes
        the Node, the pod garbage collector the pods). Returns once it is stopped."""
        added = self._added.pop(name, None)
        if added is None:
            return
        del self._agent_of[name]
        if self._identity_node == name:
            self._identity_node = None  # the next node added carries it
        await added.stop()
        # The workers let go first: the informers' deletes of the node's pods below are then
        # not taken for the pods' deletions (which would sync them, and retry resizes).
        self.pod_workers.remove_node(name)
        self._pod_clients.pop(name, None)
        if self.slice_publisher is not None:
            self.slice_publisher.forget_node(name)
        self.own.names.discard(name)
        self.pod_informer.refilter()
        self.node_informer.refilter()
        if self.slice_informer is not None:
            self.slice_informer.refilter()
        logger.info("node %s: stopped", name)


class _AddedNode:
    """The agent of a node added at run time, in a scope of its own."""

    def __init__(self, agent: NodeAgent) -> None:
        self.agent = agent
        self._scope = anyio.CancelScope()
        self._done = anyio.Event()

    async def run(self, *, limiter: anyio.CapacityLimiter) -> None:
        try:
            with self._scope:
                await self.agent.run(limiter=limiter)
        finally:
            self._done.set()

    async def stop(self) -> None:
        self._scope.cancel()
        await self._done.wait()


async def serve(client: ApiClient, settings: KubeletSettings, ctx: ComponentContext) -> None:
    kubelet = Kubelet(client, settings, ctx)
    ctx.add_readiness_check("kubelet", kubelet.ready)
    await run_elected(
        client,
        ctx,
        component=COMPONENT,
        election=None,
        work=kubelet.run,
        announce=carried_by_the_work,
    )
