"""The controller-manager's flags and the settings they make: its flag table (`build_parser`,
with each controller's own flags) and `settings_from_args`, which `app.main` calls once
(upstream's cmd/kube-controller-manager/app/options: one group per controller). It loads no
controller: a driver reads the table (kemu.trace checks CLUSTER.yaml's args with it)."""

from __future__ import annotations

import argparse
import ipaddress
from collections.abc import Collection, Mapping
from typing import Final, TypeVar

from controllermanager import names
from controllermanager.cidrset import CIDRSet
from controllermanager.config import (
    BURST_FLAG,
    DEFAULT_CLIENT_CONNECTION,
    DEFAULT_CONCURRENT_GC_SYNCS,
    DEFAULT_CONCURRENT_HPA_SYNCS,
    DEFAULT_HPA_CPU_INITIALIZATION_PERIOD,
    DEFAULT_HPA_DOWNSCALE_STABILIZATION,
    DEFAULT_HPA_INITIAL_READINESS_DELAY,
    DEFAULT_HPA_SYNC_PERIOD,
    DEFAULT_HPA_TOLERANCE,
    DEFAULT_NODE_CIDR_MASK_SIZE,
    DEFAULT_NODE_MONITOR_PERIOD,
    DEFAULT_QUARANTINE,
    DEFAULT_SYNC_PERIOD,
    DEFAULT_TERMINATED_POD_GC_THRESHOLD,
    GC_CHECK_PERIOD,
    QPS_FLAG,
    ControllerConfigurations,
    ControllerManagerSettings,
    Credentials,
    GarbageCollectorOptions,
    HPAControllerOptions,
    NodeIpamOptions,
    NodeLifecycleOptions,
    PodGCOptions,
    PVBinderOptions,
    SimulatedProvisionerOptions,
)
from kemu.client.endpoints import add_server_flag, apiserver_connection
from kemu.client.leaderelection import add_leader_election_flags, leader_election_config
from kemu.component import client_connection
from kemu.component.latency import apiserver_latency
from kemu.component.options import duration_flag, new_parser

_V = TypeVar("_V")

COMPONENT: Final = "kube-controller-manager"
DEFAULT_METRICS_PORT: Final = 10257
LEASE_NAME: Final = "kube-controller-manager"


def select_controllers(spec: str, known: Mapping[str, _V]) -> dict[str, _V]:
    """upstream --controllers: names to enable, "*" for every one, "-name" to disable one.

    ValueError names an unknown controller.
    """
    items = [s.strip() for s in spec.split(",") if s.strip()]
    for item in items:
        name = item.removeprefix("-")
        if name != "*" and name not in known:
            raise ValueError(
                f"{name!r} is not a known controller (known: {', '.join(sorted(known))})"
            )
    star = "*" in items
    return {
        name: init
        for name, init in known.items()
        if f"-{name}" not in items and (name in items or star)
    }


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "controllermanager",
        "kemu kube-controller-manager",
        default_metrics_port=DEFAULT_METRICS_PORT,
    )
    add_server_flag(parser)
    parser.add_argument(
        "--controllers",
        default="*",
        metavar="NAMES",
        help="controllers to run: '*' for all, 'name' to enable one, '-name' to disable one "
        f"(known: {', '.join(sorted(names.CONTROLLER_NAMES))}; default '*')",
    )
    client_connection.add_flags(
        parser, qps_flag=QPS_FLAG, burst_flag=BURST_FLAG, default=DEFAULT_CLIENT_CONNECTION
    )
    parser.add_argument(
        "--use-service-account-credentials",
        action="store_true",
        help="each controller acts as its own ServiceAccount in kube-system (a token "
        "requested by this process's user), so that RBAC gives it its system:controller: "
        "role only (upstream's flag; default: every controller as this process's user)",
    )
    add_leader_election_flags(parser, lease_name=LEASE_NAME)
    add_node_lifecycle_flags(parser)
    add_pod_gc_flags(parser)
    add_garbage_collector_flags(parser)
    add_node_ipam_flags(parser)
    add_pv_binder_flags(parser)
    add_simulated_provisioner_flags(parser)
    add_hpa_controller_flags(parser)
    return parser


def settings_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> ControllerManagerSettings:
    """The validated settings of `args`; a bad flag exits through `parser` naming it."""
    try:
        controllers = select_controllers(args.controllers, dict.fromkeys(names.CONTROLLER_NAMES))
    except ValueError as e:
        parser.error(f"--controllers: {e}")
    try:
        configurations = configurations_from_args(args, controllers)
    except ValueError as e:
        parser.error(str(e))
    try:
        election = leader_election_config(args, lease_name=LEASE_NAME)
        connection = client_connection.from_args(args, qps_flag=QPS_FLAG, burst_flag=BURST_FLAG)
    except ValueError as e:
        parser.error(str(e))
    server, tls = apiserver_connection(args)
    return ControllerManagerSettings(
        server=server,
        tls=tls,
        apiserver_latency=apiserver_latency(args),
        controllers=tuple(controllers),
        configurations=configurations,
        election=election,
        client_connection=connection,
        credentials=Credentials.SERVICE_ACCOUNTS
        if args.use_service_account_credentials
        else Credentials.PROCESS,
    )


def configurations_from_args(
    args: argparse.Namespace, enabled: Collection[str] | None = None
) -> ControllerConfigurations:
    """The groups of the `enabled` controllers (every one by default) from their flags, the
    others at their defaults (a flag of a disabled controller is not checked, as
    upstream's, which reads a controller's options when it starts it). ValueError naming
    the flag for a bad value."""

    def on(name: str) -> bool:
        return enabled is None or name in enabled

    d = ControllerConfigurations()
    return ControllerConfigurations(
        node_lifecycle_controller=node_lifecycle_options_from_args(args)
        if on(names.NODE_LIFECYCLE)
        else d.node_lifecycle_controller,
        garbage_collector_controller=garbage_collector_options_from_args(args)
        if on(names.GARBAGE_COLLECTOR)
        else d.garbage_collector_controller,
        node_ipam_controller=node_ipam_options_from_args(args) if on(names.NODE_IPAM) else None,
        pod_gc_controller=pod_gc_options_from_args(args)
        if on(names.POD_GC)
        else d.pod_gc_controller,
        persistent_volume_binder_controller=pv_binder_options_from_args(args)
        if on(names.PV_BINDER)
        else d.persistent_volume_binder_controller,
        simulated_provisioner=simulated_provisioner_options_from_args(args)
        if on(names.SIMULATED_PROVISIONER)
        else d.simulated_provisioner,
        hpa_controller=hpa_controller_options_from_args(args)
        if on(names.HORIZONTAL_POD_AUTOSCALING)
        else d.hpa_controller,
    )


def add_node_lifecycle_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("node lifecycle controller")
    group.add_argument(
        "--node-monitor-period",
        type=duration_flag,
        default=DEFAULT_NODE_MONITOR_PERIOD,
        metavar="DURATION",
        help="how often every node's health is checked (5s)",
    )
    group.add_argument(
        "--node-monitor-grace-period",
        type=duration_flag,
        default=None,
        metavar="DURATION",
        help="how long a node may go without a lease renewal or heartbeat before it is marked "
        "Unknown and tainted unreachable (50s; 40s at emulated versions before 1.32)",
    )


def node_lifecycle_options_from_args(args: argparse.Namespace) -> NodeLifecycleOptions:
    """ValueError for an invalid combination."""
    return NodeLifecycleOptions(
        node_monitor_period=args.node_monitor_period,
        node_monitor_grace_period=args.node_monitor_grace_period,
    )


def add_pod_gc_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("pod garbage collector")
    group.add_argument(
        "--pod-gc-quarantine",
        type=duration_flag,
        default=DEFAULT_QUARANTINE,
        metavar="DURATION",
        help="how long a node must have been missing before the pods bound to it are deleted "
        "(40s; upstream's fixed quarantineTime)",
    )
    group.add_argument(
        "--terminated-pod-gc-threshold",
        type=int,
        default=DEFAULT_TERMINATED_POD_GC_THRESHOLD,
        metavar="N",
        help="how many finished pods may exist before the oldest are deleted "
        f"({DEFAULT_TERMINATED_POD_GC_THRESHOLD}; 0: never)",
    )
    group.add_argument(
        "--pod-gc-check-period",
        type=duration_flag,
        default=GC_CHECK_PERIOD,
        metavar="DURATION",
        help=f"how often every pod is checked ({GC_CHECK_PERIOD:g}s; upstream's fixed "
        "gcCheckPeriod)",
    )


def pod_gc_options_from_args(args: argparse.Namespace) -> PodGCOptions:
    """ValueError for an invalid value."""
    return PodGCOptions(
        quarantine=args.pod_gc_quarantine,
        gc_check_period=args.pod_gc_check_period,
        terminated_pod_gc_threshold=args.terminated_pod_gc_threshold,
    )


def add_node_ipam_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("node IPAM")
    group.add_argument(
        "--allocate-node-cidrs",
        action="store_true",
        help="give every node a pod CIDR from --cluster-cidr (the nodeipam controller; "
        "default false, as upstream)",
    )
    group.add_argument(
        "--cluster-cidr",
        default="",
        metavar="CIDR",
        help="the CIDR range of pods in the cluster, required with --allocate-node-cidrs",
    )
    group.add_argument(
        "--node-cidr-mask-size",
        type=int,
        default=None,
        metavar="BITS",
        help="the mask size of each node's pod CIDR (default 24 for IPv4, 64 for IPv6)",
    )


def node_ipam_options_from_args(args: argparse.Namespace) -> NodeIpamOptions | None:
    """The controller's options; None without --allocate-node-cidrs (the controller does not
    run). ValueError naming the flag for a bad value."""
    if not args.allocate_node_cidrs:
        return None
    if not args.cluster_cidr.strip():
        raise ValueError("--cluster-cidr: required with --allocate-node-cidrs")
    if "," in args.cluster_cidr:
        raise ValueError(f"--cluster-cidr: {args.cluster_cidr!r}: kemu takes one CIDR")
    try:
        cluster = ipaddress.ip_network(args.cluster_cidr.strip(), strict=False)
    except ValueError as e:
        raise ValueError(f"--cluster-cidr: {e}") from None
    mask = args.node_cidr_mask_size
    if mask is None:
        mask = DEFAULT_NODE_CIDR_MASK_SIZE[cluster.version]
    try:
        CIDRSet(cluster, mask)
    except ValueError as e:
        raise ValueError(f"--node-cidr-mask-size: {e}") from None
    return NodeIpamOptions(cluster_cidr=cluster, node_cidr_mask_size=mask)


def add_garbage_collector_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("garbage collector")
    group.add_argument(
        "--concurrent-gc-syncs",
        type=int,
        default=DEFAULT_CONCURRENT_GC_SYNCS,
        metavar="N",
        help="how many objects the garbage collector works on at once (default 20)",
    )


def garbage_collector_options_from_args(args: argparse.Namespace) -> GarbageCollectorOptions:
    """ValueError for an invalid value."""
    return GarbageCollectorOptions(concurrent_gc_syncs=args.concurrent_gc_syncs)


def add_pv_binder_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("persistent volume binder")
    group.add_argument(
        "--pvclaimbinder-sync-period",
        type=duration_flag,
        default=DEFAULT_SYNC_PERIOD,
        metavar="DURATION",
        help="how often every claim and volume is synced again "
        f"({DEFAULT_SYNC_PERIOD:g}s, upstream's default)",
    )


def pv_binder_options_from_args(args: argparse.Namespace) -> PVBinderOptions:
    """ValueError for an invalid value."""
    return PVBinderOptions(sync_period=args.pvclaimbinder_sync_period)


def add_simulated_provisioner_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("simulated CSI provisioner (kemu only)")
    group.add_argument(
        "--simulated-provisioner-seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the failureRate draws of the kemu.io/simulated classes (0)",
    )


def simulated_provisioner_options_from_args(
    args: argparse.Namespace,
) -> SimulatedProvisionerOptions:
    return SimulatedProvisionerOptions(seed=args.simulated_provisioner_seed)


def add_hpa_controller_flags(parser: argparse.ArgumentParser) -> None:
    """upstream cmd/kube-controller-manager/app/options/hpacontroller.go (its names, defaults
    and help)."""
    group = parser.add_argument_group("horizontal pod autoscaler controller")
    group.add_argument(
        "--horizontal-pod-autoscaler-sync-period",
        type=duration_flag,
        default=DEFAULT_HPA_SYNC_PERIOD,
        metavar="DURATION",
        help="The period for syncing the number of pods in horizontal pod autoscaler. "
        f"(default {DEFAULT_HPA_SYNC_PERIOD:g}s)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-downscale-stabilization",
        type=duration_flag,
        default=DEFAULT_HPA_DOWNSCALE_STABILIZATION,
        metavar="DURATION",
        help="The period for which autoscaler will look backwards and not scale down below "
        "any recommendation it made during that period. (default 5m0s)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-tolerance",
        type=float,
        default=DEFAULT_HPA_TOLERANCE,
        metavar="RATIO",
        help="The minimum change (from 1.0) in the desired-to-actual metrics ratio for the "
        f"horizontal pod autoscaler to consider scaling. (default {DEFAULT_HPA_TOLERANCE:g})",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-cpu-initialization-period",
        type=duration_flag,
        default=DEFAULT_HPA_CPU_INITIALIZATION_PERIOD,
        metavar="DURATION",
        help="The period after pod start when CPU samples might be skipped. (default 5m0s)",
    )
    group.add_argument(
        "--horizontal-pod-autoscaler-initial-readiness-delay",
        type=duration_flag,
        default=DEFAULT_HPA_INITIAL_READINESS_DELAY,
        metavar="DURATION",
        help="The period after pod start during which readiness changes will be treated as "
        f"initial readiness. (default {DEFAULT_HPA_INITIAL_READINESS_DELAY:g}s)",
    )
    group.add_argument(
        "--concurrent-horizontal-pod-autoscaler-syncs",
        type=int,
        default=DEFAULT_CONCURRENT_HPA_SYNCS,
        metavar="N",
        help="The number of horizontal pod autoscaler objects that are allowed to sync "
        "concurrently. Larger number = more responsive horizontal pod autoscaler objects "
        f"processing, but more CPU (and network) load. (default {DEFAULT_CONCURRENT_HPA_SYNCS})",
    )


def hpa_controller_options_from_args(args: argparse.Namespace) -> HPAControllerOptions:
    """ValueError naming the flag for a bad value."""
    return HPAControllerOptions(
        sync_period=args.horizontal_pod_autoscaler_sync_period,
        downscale_stabilization=args.horizontal_pod_autoscaler_downscale_stabilization,
        tolerance=args.horizontal_pod_autoscaler_tolerance,
        cpu_initialization_period=args.horizontal_pod_autoscaler_cpu_initialization_period,
        initial_readiness_delay=args.horizontal_pod_autoscaler_initial_readiness_delay,
        concurrent_syncs=args.concurrent_horizontal_pod_autoscaler_syncs,
    )
