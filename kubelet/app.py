"""kubelet: `python -m kubelet --server HOST:PORT --node-name N --capacity cpu=4,memory=8Gi,pods=110`.

One process runs one node, or K hollow nodes (`--nodes K --node-name-prefix P`: P-0 .. P-(K-1)),
each with its own Node, Lease, pods and checkpoint, sharing one client, one pod informer and
one node informer, one work queue and one set of pod workers. /readyz is green once every node
is registered and the pod informer has synced.

The informers hold only the process's own objects. One node watches as upstream's kubelet does
(fieldSelector spec.nodeName=<node> for pods, metadata.name=<node> for its Node). Hollow nodes
watch every bound pod (spec.nodeName!=) and every Node in one watch each, since a field selector
takes one value per field; the informer drops on arrival the objects of nodes the process does
not run (`keep`, before they are stored), so K hollow nodes hold their own pods, not the
cluster's.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import logging
import socket
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import anyio
from anyio.abc import TaskGroup

from kemu.api.v1 import types_pb2
from kemu.client.client import Client
from kemu.client.controlplane import run_elected
from kemu.client.endpoints import add_server_flag
from kemu.client.events import EventRecorder
from kemu.client.informer import FuncHandler, InformerFactory
from kemu.client.interface import ApiClient
from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    POD_DISRUPTION_CONDITIONS,
    POD_HOST_IPS,
    POD_OBSERVED_GENERATION_TRACKING,
    FeatureGates,
)
from kemu.component.options import duration_flag, new_parser, parse_component_args
from kemu.component.pod_resources import pod_resources_options
from kemu.component.runner import ComponentContext, cleanup_scope, run_component
from kemu.machinery.quantity import parse_capacity_flag
from kubelet.allocation import DEFAULT_ACTUATION_DELAY
from kubelet.checkpoint import Checkpoint
from kubelet.network import DEFAULT_NODE_IP_RANGE, default_node_ip, parse_node_ip
from kubelet.node_control import serve_node_control
from kubelet.node_status import (
    DEFAULT_LEASE_DURATION_SECONDS,
    DEFAULT_MAX_PODS,
    DEFAULT_STATUS_REPORT_FREQUENCY,
    DEFAULT_STATUS_UPDATE_FREQUENCY,
    LEASE_RENEW_INTERVAL_FRACTION,
    NodeAgent,
    NodeConfig,
    NodeTiming,
    allocatable_of,
    parse_labels,
    parse_taints,
)
from kubelet.pod_manager import NodePods
from kubelet.pod_workers import DEFAULT_WORKERS, PodWorkerOptions, PodWorkers
from kubelet.resize_retry import DEFAULT_RETRY_PERIOD, INITIAL_RETRY_DELAY

logger = logging.getLogger(__name__)

COMPONENT: Final = "kubelet"
# Upstream's kubelet serves 10250 (and the read-only 10255); kemu's endpoint is /metrics and
# /healthz only, so it takes the read-only port.
DEFAULT_METRICS_PORT: Final = 10255
DEFAULT_CAPACITY: Final = "cpu=4,memory=8Gi,pods=110"
DEFAULT_ROOT_DIR: Final = str(Path(tempfile.gettempdir()) / "kemu-kubelet")
REGISTRATION_CONCURRENCY: Final = 16
NODES_PER_PHASE: Final = 100
"""A hollow kubelet's nodes renew their Leases and check their status in phases of at most
this many, spread evenly over the renew interval: a burst of 100 Lease writes is served in a
fraction of a second, and the event-driven virtual clock makes one jump for each phase (the
nodes of one phase share their deadlines) rather than one per node."""


def renewal_offsets(count: int, interval: float) -> list[float]:
    """Where in the renew interval each of `count` nodes renews (NODES_PER_PHASE)."""
    phases = -(-count // NODES_PER_PHASE)
    return [interval * (i // NODES_PER_PHASE) / phases for i in range(count)]


@dataclass(frozen=True)
class KubeletSettings:
    """Everything `python -m kubelet` was told, validated: built once by `main`
    (`settings_from_args`), grouped as the nodes' NodeConfig, their NodeTiming and the
    PodWorkerOptions."""

    server: str
    nodes: tuple[NodeConfig, ...]
    timing: NodeTiming
    pods: PodWorkerOptions
    root_dir: Path | None
    template: NodeConfig | None = None
    """--node-control: what the nodes added at run time share (each has its own name,
    providerID and IP); `nodes` is empty."""


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("kubelet", "kemu kubelet", default_metrics_port=DEFAULT_METRICS_PORT)
    add_server_flag(parser)
    nodes = parser.add_argument_group("nodes")
    nodes.add_argument(
        "--node-name", help="the node's name (default: the host name); not with --nodes"
    )
    nodes.add_argument(
        "--nodes",
        type=int,
        metavar="K",
        help="hollow mode: run K nodes named <prefix>-0 .. <prefix>-(K-1) in this process",
    )
    nodes.add_argument(
        "--node-name-prefix",
        default="hollow-node",
        metavar="P",
        help="the name prefix of hollow nodes (default hollow-node)",
    )
    nodes.add_argument(
        "--node-control",
        choices=["stdin"],
        default="",
        help="hollow mode run by a parent process (the emulated cloud's node-group kubelets): "
        "no node at start; the nodes are added and removed by lines on stdin "
        "(kubelet.node_control); the process stops at the end of stdin",
    )
    nodes.add_argument(
        "--capacity",
        default=DEFAULT_CAPACITY,
        metavar="NAME=QUANTITY[,...]",
        help=f"the node's capacity (default {DEFAULT_CAPACITY}; pods defaults to 110)",
    )
    nodes.add_argument(
        "--system-reserved",
        default="",
        metavar="NAME=QUANTITY[,...]",
        help="resources reserved for the system: allocatable = capacity - system-reserved",
    )
    nodes.add_argument("--node-labels", default="", metavar="K=V[,...]", help="extra node labels")
    nodes.add_argument(
        "--register-with-taints",
        default="",
        metavar="K[=V]:EFFECT[,...]",
        help="taints the node registers with",
    )
    nodes.add_argument(
        "--node-ip",
        default="",
        metavar="IP",
        help="the node's IP address, its InternalIP and its pods' hostIP; with --nodes the "
        "first node's, the others' following it (default: an address in "
        f"{DEFAULT_NODE_IP_RANGE} derived from the node name, or the name prefix)",
    )
    nodes.add_argument(
        "--provider-id",
        default="",
        metavar="ID",
        help="the node's spec.providerID, set when it registers (e.g. kemu://GROUP/INSTANCE, "
        "as the emulated cloud starts its instances); not with --nodes",
    )
    timing = parser.add_argument_group("timing")
    timing.add_argument(
        "--node-lease-renew-interval",
        type=duration_flag,
        default=None,
        metavar="DURATION",
        help="how often the node Lease is renewed (default: a quarter of "
        "--node-lease-duration-seconds, 10s at its default, as upstream's "
        "nodeLeaseRenewIntervalFraction)",
    )
    timing.add_argument(
        "--node-lease-duration-seconds",
        type=int,
        default=DEFAULT_LEASE_DURATION_SECONDS,
        metavar="SECONDS",
        help="the Lease's leaseDurationSeconds (default 40)",
    )
    timing.add_argument(
        "--node-status-update-frequency",
        type=duration_flag,
        default=DEFAULT_STATUS_UPDATE_FREQUENCY,
        metavar="DURATION",
        help="how often the node status is checked and written if it changed (default 10s)",
    )
    timing.add_argument(
        "--node-status-report-frequency",
        type=duration_flag,
        default=DEFAULT_STATUS_REPORT_FREQUENCY,
        metavar="DURATION",
        help="how often the node status is written even if unchanged (default 5m)",
    )
    pods = parser.add_argument_group("pods")
    pods.add_argument(
        "--pod-startup-delay",
        type=duration_flag,
        default=0.5,
        metavar="DURATION",
        help="simulated time from admission to running containers (default 0.5s; "
        "annotation kubelet.kemu.io/startup-delay overrides it per pod)",
    )
    pods.add_argument(
        "--pod-shutdown-duration",
        type=duration_flag,
        default=None,
        metavar="DURATION",
        help="simulated time a container takes to exit on SIGTERM (default: it does not, and "
        "is killed at the end of the grace period; annotation "
        "kubelet.kemu.io/shutdown-duration overrides it per pod)",
    )
    pods.add_argument(
        "--pod-workers",
        type=int,
        default=DEFAULT_WORKERS,
        metavar="N",
        help=f"concurrent pod syncs (default {DEFAULT_WORKERS})",
    )
    pods.add_argument(
        "--resize-actuation-delay",
        type=duration_flag,
        default=DEFAULT_ACTUATION_DELAY,
        metavar="DURATION",
        help="simulated time from accepting an in-place resize to the containers running at "
        f"the new size (default {DEFAULT_ACTUATION_DELAY:g}s)",
    )
    pods.add_argument(
        "--resize-retry-period",
        type=duration_flag,
        default=DEFAULT_RETRY_PERIOD,
        metavar="DURATION",
        help="how long after its last retry a node's Deferred resizes are retried again if no "
        "event retries them first (default 3m, as upstream; the first periodic retry comes "
        f"{INITIAL_RETRY_DELAY:g}s after start, or after this period if shorter)",
    )
    pods.add_argument(
        "--root-dir",
        default=DEFAULT_ROOT_DIR,
        metavar="DIR",
        help=f"where the pod and allocation checkpoints live (default {DEFAULT_ROOT_DIR}); "
        "empty: no checkpoint",
    )
    return parser


def settings_from_args(args: argparse.Namespace, kubelet_version: str) -> KubeletSettings:
    """The validated settings; ValueError naming the flag otherwise."""
    names = _node_names(args)
    template = _node_template(args, kubelet_version)
    timing = _node_timing(args)
    pods = _pod_worker_options(args)
    node_ips = _node_ips(args, names) if names else []
    nodes = tuple(
        dataclasses.replace(template, name=name, node_ip=node_ip)
        for name, node_ip in zip(names, node_ips, strict=True)
    )
    return KubeletSettings(
        server=args.server,
        nodes=nodes,
        timing=timing,
        pods=pods,
        root_dir=Path(args.root_dir) if args.root_dir else None,
        template=template if args.node_control else None,
    )


def _node_names(args: argparse.Namespace) -> list[str]:
    """The nodes this process runs from the start: --node-name, the --nodes hollow ones, or
    none (--node-control)."""
    if args.node_control:
        for flag, given in (
            ("--node-name", bool(args.node_name)),
            ("--nodes", args.nodes is not None),
            ("--provider-id", bool(args.provider_id)),
            ("--node-ip", bool(args.node_ip)),
        ):
            if given:
                raise ValueError(f"{flag} and --node-control are mutually exclusive")
        return []
    if args.nodes is None:
        return [args.node_name or socket.gethostname().lower()]
    if args.node_name:
        raise ValueError("--node-name and --nodes are mutually exclusive")
    if args.nodes < 1:
        raise ValueError(f"--nodes: {args.nodes} must be at least 1")
    if args.provider_id:
        raise ValueError("--provider-id and --nodes are mutually exclusive")
    if not args.node_name_prefix:
        raise ValueError("--node-name-prefix: must not be empty")
    return [f"{args.node_name_prefix}-{i}" for i in range(args.nodes)]


def _node_template(args: argparse.Namespace, kubelet_version: str) -> NodeConfig:
    """What every node of the process shares (its name and IP left out)."""
    try:
        capacity = parse_capacity_flag(args.capacity)
    except ValueError as e:
        raise ValueError(f"--capacity: {e}") from None
    capacity.setdefault("pods", DEFAULT_MAX_PODS)
    try:
        reserved = parse_capacity_flag(args.system_reserved)
    except ValueError as e:
        raise ValueError(f"--system-reserved: {e}") from None
    try:
        labels = parse_labels(args.node_labels)
    except ValueError as e:
        raise ValueError(f"--node-labels: {e}") from None
    try:
        taints = parse_taints(args.register_with_taints)
    except ValueError as e:
        raise ValueError(f"--register-with-taints: {e}") from None
    return NodeConfig(
        name="",
        capacity=capacity,
        allocatable=allocatable_of(capacity, reserved),
        kubelet_version=kubelet_version,
        labels=labels,
        taints=tuple(taints),
        provider_id=args.provider_id,
    )


def _node_timing(args: argparse.Namespace) -> NodeTiming:
    if args.node_lease_duration_seconds < 1:
        raise ValueError("--node-lease-duration-seconds: must be at least 1")
    renew_interval = args.node_lease_renew_interval
    if renew_interval is None:
        renew_interval = args.node_lease_duration_seconds * LEASE_RENEW_INTERVAL_FRACTION
    for flag, value in (
        ("--node-lease-renew-interval", renew_interval),
        ("--node-status-update-frequency", args.node_status_update_frequency),
        ("--node-status-report-frequency", args.node_status_report_frequency),
    ):
        if not value > 0:
            raise ValueError(f"{flag}: must be positive")
    return NodeTiming(
        lease_renew_interval=renew_interval,
        lease_duration_seconds=args.node_lease_duration_seconds,
        status_update_frequency=args.node_status_update_frequency,
        status_report_frequency=args.node_status_report_frequency,
    )


def _pod_worker_options(args: argparse.Namespace) -> PodWorkerOptions:
    """The pod flags; what the emulated version decides is added by `pod_worker_options`."""
    if args.pod_workers < 1:
        raise ValueError("--pod-workers: must be at least 1")
    if args.resize_actuation_delay < 0:
        raise ValueError("--resize-actuation-delay: must not be negative")
    if not args.resize_retry_period > 0:
        raise ValueError("--resize-retry-period: must be positive")
    return PodWorkerOptions(
        startup_delay=args.pod_startup_delay,
        shutdown_duration=args.pod_shutdown_duration,
        workers=args.pod_workers,
        resize_actuation_delay=args.resize_actuation_delay,
        resize_retry_period=args.resize_retry_period,
    )


def _node_ips(args: argparse.Namespace, names: Sequence[str]) -> list[str]:
    """Each node's IP: --node-ip, or one derived from the node's name (hollow nodes: from the
    name prefix), and the following addresses for the further hollow nodes."""
    if args.node_ip:
        try:
            first = parse_node_ip(args.node_ip)
        except ValueError as e:
            raise ValueError(f"--node-ip: {e}") from None
    else:
        seed = args.node_name_prefix if args.nodes is not None else names[0]
        first = default_node_ip(seed, len(names))
    try:
        return [str(first + i) for i in range(len(names))]
    except ValueError:  # ipaddress's overflow past the family's last address
        raise ValueError(f"--node-ip: {len(names)} addresses from {first} overflow") from None


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
    args, options = parse_component_args(parser, argv, COMPONENT)
    try:
        settings = settings_from_args(args, f"v{options.version}.0")
    except ValueError as e:
        parser.error(str(e))
    return run_component(COMPONENT, options, functools.partial(run, settings))


async def run(settings: KubeletSettings, ctx: ComponentContext) -> None:
    client = Client(settings.server, user_agent=COMPONENT)
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


class Kubelet:
    """The parts of one kubelet process, wired; `run()` does the work."""

    def __init__(self, client: ApiClient, settings: KubeletSettings, ctx: ComponentContext) -> None:
        self.settings = settings
        self._client = client
        self._ctx = ctx
        single = len(settings.nodes) == 1 and settings.template is None
        host = settings.nodes[0].name if single else ""
        self.recorder = EventRecorder(client, COMPONENT, host=host, clock=ctx.clock)
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
        self.agents = [
            NodeAgent(
                client,
                config,
                clock=ctx.clock,
                timing=settings.timing,
                lister=self.node_informer.lister,
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

    def _on_node(self, node: types_pb2.Node) -> None:
        # upstream's kubelet passes its Node's podCIDR to the runtime (updatePodCIDR)
        self.pod_workers.set_pod_cidr(node.metadata.name, node.spec.pod_cidr)
        agent = self._agent_of.get(node.metadata.name)
        if agent is not None:
            agent.node_changed(node)

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
        pods = await self._client.list_all(types_pb2.Pod, field_selector=f"spec.nodeName={name}")
        nodes = await self._client.list_all(types_pb2.Node, field_selector=f"metadata.name={name}")
        self.pod_informer.merge(pods.items)
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
        agent = NodeAgent(
            self._client,
            config,
            clock=self._ctx.clock,
            timing=self.settings.timing,
            lister=self.node_informer.lister,
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
        await added.stop()
        # The workers let go first: the informers' deletes of the node's pods below are then
        # not taken for the pods' deletions (which would sync them, and retry resizes).
        self.pod_workers.remove_node(name)
        self.own.names.discard(name)
        self.pod_informer.refilter()
        self.node_informer.refilter()
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
    await run_elected(client, ctx, component=COMPONENT, election=None, work=kubelet.run)
