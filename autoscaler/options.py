"""The cluster autoscaler's flags and the settings they make: its flag table (`build_parser`)
and `settings_from_args`, which `app.main` calls once (upstream's cluster-autoscaler/config/flags).
It loads no autoscaler loop and no gRPC: a driver reads the table."""

from __future__ import annotations

import argparse
from typing import Final

from autoscaler.config import AutoscalerSettings, AutoscalingOptions, Simulation
from autoscaler.expander import (
    EXPANDERS,
    LEAST_WASTE,
)
from autoscaler.scaledown.options import ScaleDownOptions
from kemu.client.endpoints import add_server_flag, apiserver_connection
from kemu.client.leaderelection import add_leader_election_flags, leader_election_config
from kemu.component import client_connection
from kemu.component.client_connection import DEFAULT_BURST, DEFAULT_QPS, ClientConnection
from kemu.component.latency import apiserver_latency
from kemu.component.options import (
    ComponentOptions,
    add_record_decisions_flag,
    duration_flag,
    new_parser,
    refuse_config,
)
from kemu.component.pod_resources import pod_resources_options
from kemu.machinery.duration import format_duration
from kemu.scheduling.config import default_config, load_config, scheduler_registry
from kemu.scheduling.plugins.registry import Registry

COMPONENT: Final = "cluster-autoscaler"
LEASE_NAME: Final = "cluster-autoscaler"
DEFAULT_METRICS_PORT: Final = 8085


def _bool_flag(text: str) -> bool:
    value = text.strip().lower()
    if value in ("true", "1", "t"):
        return True
    if value in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


QPS_FLAG: Final = "--kube-client-qps"
BURST_FLAG: Final = "--kube-client-burst"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "autoscaler", "kemu's cluster autoscaler", default_metrics_port=DEFAULT_METRICS_PORT
    )
    add_server_flag(parser)
    parser.add_argument(
        "--cloud-provider-address",
        required=True,
        metavar="HOST:PORT",
        help="the cloud's node-group gRPC API (python -m cloud --port)",
    )
    client_connection.add_flags(
        parser,
        qps_flag=QPS_FLAG,
        burst_flag=BURST_FLAG,
        default=ClientConnection(DEFAULT_QPS, DEFAULT_BURST),
    )
    add_leader_election_flags(parser, lease_name=LEASE_NAME)
    parser.add_argument(
        "--scheduler-config-file",
        metavar="FILE",
        help="a KubeSchedulerConfiguration whose first profile the simulations run (its plugins, "
        "in-tree or installed, and their args); default: the default profile",
    )
    parser.add_argument(
        "--scan-interval",
        type=duration_flag,
        default=10.0,
        metavar="DURATION",
        help="how often the cluster is re-evaluated (10s)",
    )
    parser.add_argument(
        "--max-node-provision-time",
        type=duration_flag,
        default=15 * 60.0,
        metavar="DURATION",
        help="how long an instance may take to become a Ready node before it is deleted (15m)",
    )
    parser.add_argument(
        "--expendable-pods-priority-cutoff",
        type=int,
        default=-10,
        metavar="N",
        help="pods with a priority below N never trigger a scale-up (-10)",
    )
    parser.add_argument(
        "--expander",
        default=LEAST_WASTE,
        help=f"which node group a scale-up grows: {', '.join(EXPANDERS)} ({LEAST_WASTE})",
    )
    parser.add_argument(
        "--new-pod-scale-up-delay",
        type=duration_flag,
        default=0.0,
        metavar="DURATION",
        help="pods younger than this trigger no scale-up (0s)",
    )
    parser.add_argument(
        "--scale-down-enabled",
        type=_bool_flag,
        default=True,
        metavar="BOOL",
        help="whether unneeded nodes are removed (true)",
    )
    parser.add_argument(
        "--write-status-configmap",
        type=_bool_flag,
        default=True,
        metavar="BOOL",
        help="whether the status ConfigMap kube-system/cluster-autoscaler-status is written (true)",
    )
    _add_scale_down_flags(parser)
    parser.add_argument(
        "--initial-node-group-backoff-duration",
        type=duration_flag,
        default=5 * 60.0,
        metavar="DURATION",
        help="the first back-off of a node group whose scale-up failed (5m)",
    )
    parser.add_argument(
        "--max-node-group-backoff-duration",
        type=duration_flag,
        default=30 * 60.0,
        metavar="DURATION",
        help="the longest back-off of a node group (30m)",
    )
    parser.add_argument(
        "--node-group-backoff-reset-timeout",
        type=duration_flag,
        default=3 * 3600.0,
        metavar="DURATION",
        help="a failure this long after the last one starts the back-off over (3h)",
    )
    parser.add_argument("--seed", type=int, default=None, help="seed of the random expander")
    add_record_decisions_flag(
        parser,
        what="every loop (pods considered and placed, scale-up options and the choice, each "
        "node's scale-down verdict; ?node=NAME for a node's verdicts over time)",
    )
    return parser


def _add_scale_down_flags(parser: argparse.ArgumentParser) -> None:
    d = ScaleDownOptions()
    durations = (
        (
            "--scale-down-unneeded-time",
            d.unneeded_time,
            "how long a node must be unneeded before it is removed",
        ),
        (
            "--scale-down-unready-time",
            d.unready_time,
            "how long an unready node must be unneeded before it is removed",
        ),
        (
            "--scale-down-delay-after-add",
            d.delay_after_add,
            "no scale-down for this long after a scale-up",
        ),
        (
            "--scale-down-delay-after-delete",
            d.delay_after_delete,
            "no scale-down for this long after a node deletion",
        ),
        (
            "--scale-down-delay-after-failure",
            d.delay_after_failure,
            "no scale-down for this long after a failed one",
        ),
        (
            "--node-delete-delay-after-taint",
            d.node_delete_delay_after_taint,
            "how long a node tainted for deletion is left before it is re-checked and deleted",
        ),
        (
            "--max-pod-eviction-time",
            d.max_pod_eviction_time,
            "how long a refused eviction is retried",
        ),
        (
            "--unremovable-node-recheck-timeout",
            d.unremovable_node_recheck_timeout,
            "a node whose pods could not be moved is not checked again for this long",
        ),
    )
    for flag, default, text in durations:
        parser.add_argument(
            flag,
            type=duration_flag,
            default=default,
            metavar="DURATION",
            help=f"{text} ({format_duration(default)})",
        )
    parser.add_argument(
        "--scale-down-utilization-threshold",
        type=float,
        default=d.utilization_threshold,
        metavar="RATIO",
        help="a node whose max(cpu, memory) request ratio is below this may be removed "
        f"({d.utilization_threshold:g})",
    )
    ints = (
        ("--max-empty-bulk-delete", d.max_empty_bulk_delete, "empty nodes deleted at once"),
        ("--max-drain-parallelism", d.max_drain_parallelism, "non-empty nodes drained at once"),
        (
            "--scale-down-non-empty-candidates-count",
            d.non_empty_candidates_count,
            "non-empty nodes whose removal is simulated per loop",
        ),
        (
            "--max-graceful-termination-sec",
            d.max_graceful_termination_sec,
            "the longest grace period a pod evicted by scale-down gets, in seconds",
        ),
    )
    for flag, n, text in ints:
        parser.add_argument(flag, type=int, default=n, metavar="N", help=f"{text} ({n})")
    bools = (
        (
            "--skip-nodes-with-system-pods",
            d.skip_nodes_with_system_pods,
            "kube-system pods (no PDB) block a node's removal",
        ),
        (
            "--scale-down-unready-enabled",
            d.unready_enabled,
            "unready nodes may be scaled down",
        ),
        (
            "--skip-nodes-with-local-storage",
            d.skip_nodes_with_local_storage,
            "pods with emptyDir or hostPath volumes block a node's removal",
        ),
        (
            "--skip-nodes-with-custom-controller-pods",
            d.skip_nodes_with_custom_controller_pods,
            "pods whose controller is not a ReplicaSet, ReplicationController, Job or "
            "StatefulSet block a node's removal",
        ),
        (
            "--daemonset-eviction-for-empty-nodes",
            d.daemonset_eviction_for_empty_nodes,
            "DaemonSet pods are evicted (best effort) from empty nodes before deletion",
        ),
        (
            "--daemonset-eviction-for-occupied-nodes",
            d.daemonset_eviction_for_occupied_nodes,
            "DaemonSet pods are evicted (best effort) from drained nodes",
        ),
    )
    for flag, b, text in bools:
        parser.add_argument(
            flag, type=_bool_flag, default=b, metavar="BOOL", help=f"{text} ({str(b).lower()})"
        )


def _scale_down_options(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> ScaleDownOptions:
    if not 0 <= args.scale_down_utilization_threshold <= 1:
        parser.error("--scale-down-utilization-threshold: must be between 0 and 1")
    for flag in (
        "max_empty_bulk_delete",
        "max_drain_parallelism",
        "scale_down_non_empty_candidates_count",
        "max_graceful_termination_sec",
    ):
        if getattr(args, flag) < 0:
            parser.error(f"--{flag.replace('_', '-')}: must not be negative")
    return ScaleDownOptions(
        utilization_threshold=args.scale_down_utilization_threshold,
        unneeded_time=args.scale_down_unneeded_time,
        unready_time=args.scale_down_unready_time,
        unready_enabled=args.scale_down_unready_enabled,
        delay_after_add=args.scale_down_delay_after_add,
        delay_after_delete=args.scale_down_delay_after_delete,
        delay_after_failure=args.scale_down_delay_after_failure,
        node_delete_delay_after_taint=args.node_delete_delay_after_taint,
        max_empty_bulk_delete=args.max_empty_bulk_delete,
        max_drain_parallelism=args.max_drain_parallelism,
        non_empty_candidates_count=args.scale_down_non_empty_candidates_count,
        max_graceful_termination_sec=args.max_graceful_termination_sec,
        max_pod_eviction_time=args.max_pod_eviction_time,
        unremovable_node_recheck_timeout=args.unremovable_node_recheck_timeout,
        daemonset_eviction_for_empty_nodes=args.daemonset_eviction_for_empty_nodes,
        daemonset_eviction_for_occupied_nodes=args.daemonset_eviction_for_occupied_nodes,
        skip_nodes_with_system_pods=args.skip_nodes_with_system_pods,
        skip_nodes_with_local_storage=args.skip_nodes_with_local_storage,
        skip_nodes_with_custom_controller_pods=args.skip_nodes_with_custom_controller_pods,
    )


def _simulation(
    parser: argparse.ArgumentParser, path: str | None, out_of_tree: Registry | None
) -> Simulation:
    """--scheduler-config-file's first profile (the default one without it) and the plugins
    it may name; a file that cannot run exits CONFIG_REFUSED_EXIT."""
    try:
        registry = scheduler_registry(out_of_tree)
    except ValueError as e:
        refuse_config(parser, "plugins", e)
    try:
        config = load_config(path, registry) if path else default_config(registry)
        return Simulation(config.profiles[0], registry)
    except (OSError, ValueError) as e:
        refuse_config(parser, "--scheduler-config-file", e)


def _check_loop_flags(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.expander not in EXPANDERS:
        parser.error(
            f"--expander: unknown expander {args.expander!r}: one of {', '.join(EXPANDERS)}"
        )
    host, sep, port = args.cloud_provider_address.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        parser.error(f"--cloud-provider-address: {args.cloud_provider_address!r} is not HOST:PORT")
    if not args.scan_interval > 0:
        parser.error("--scan-interval: must be greater than 0")


def _autoscaling_options(
    args: argparse.Namespace, options: ComponentOptions, scale_down: ScaleDownOptions
) -> AutoscalingOptions:
    return AutoscalingOptions(
        version=options.version,
        scan_interval=args.scan_interval,
        max_node_provision_time=args.max_node_provision_time,
        expendable_pods_priority_cutoff=args.expendable_pods_priority_cutoff,
        expander=args.expander,
        new_pod_scale_up_delay=args.new_pod_scale_up_delay,
        scale_down_enabled=args.scale_down_enabled,
        write_status_configmap=args.write_status_configmap,
        initial_node_group_backoff_duration=args.initial_node_group_backoff_duration,
        max_node_group_backoff_duration=args.max_node_group_backoff_duration,
        node_group_backoff_reset_timeout=args.node_group_backoff_reset_timeout,
        counting=pod_resources_options(options.gates),
        scale_down=scale_down,
    )


def settings_from_args(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    options: ComponentOptions,
    out_of_tree: Registry | None = None,
) -> AutoscalerSettings:
    """The validated settings of `args`; a bad flag exits through `parser` with one line
    naming it (a configuration file that cannot run: CONFIG_REFUSED_EXIT)."""
    simulation = _simulation(parser, args.scheduler_config_file, out_of_tree)
    _check_loop_flags(parser, args)
    try:
        election = leader_election_config(args, lease_name=LEASE_NAME)
        connection = client_connection.from_args(args, qps_flag=QPS_FLAG, burst_flag=BURST_FLAG)
    except ValueError as e:
        parser.error(str(e))
    scale_down = _scale_down_options(parser, args)
    server, tls = apiserver_connection(args)
    return AutoscalerSettings(
        server=server,
        tls=tls,
        apiserver_latency=apiserver_latency(args),
        cloud_provider_address=args.cloud_provider_address,
        autoscaling_options=_autoscaling_options(args, options, scale_down),
        simulation=simulation,
        election=election,
        seed=args.seed,
        record_decisions=args.record_decisions,
        client_connection=connection,
    )
