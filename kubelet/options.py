"""The kubelet's flags and the settings they make: its flag table (`build_parser`) and
`settings_from_args`, which `app.main` calls once (upstream's cmd/kubelet/app/options). It loads
no node: a driver reads the table (kemu.trace checks CLUSTER.yaml's kubeletArgs with it)."""

from __future__ import annotations

import argparse
import dataclasses
import socket
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.client.endpoints import add_server_flag, apiserver_connection
from kemu.component import client_connection
from kemu.component.latency import apiserver_latency
from kemu.component.options import duration_flag, new_parser
from kemu.component.secure_serving import add_secure_serving_flags
from kemu.component.version_rules import VersionRules
from kemu.machinery.dra_slice_file import NO_DRIVERS, DraDrivers, load_slice_file
from kemu.machinery.duration import DurationError
from kemu.machinery.quantity import format_resource, parse_capacity_flag, to_int
from kubelet.network import DEFAULT_NODE_IP_RANGE, default_node_ip, parse_node_ip
from kubelet.resize_retry import DEFAULT_RETRY_PERIOD, INITIAL_RETRY_DELAY
from kubelet.runtime import DEFAULT_SHUTDOWN_DURATION, parse_shutdown
from kubelet.settings import (
    DEFAULT_ACTUATION_DELAY,
    DEFAULT_LEASE_DURATION_SECONDS,
    DEFAULT_MAX_PODS,
    DEFAULT_STATUS_REPORT_FREQUENCY,
    DEFAULT_STATUS_UPDATE_FREQUENCY,
    DEFAULT_WORKERS,
    LEASE_RENEW_INTERVAL_FRACTION,
    KubeletSettings,
    NodeConfig,
    NodeTiming,
    PodWorkerOptions,
    kube_api_defaults,
)

COMPONENT: Final = "kubelet"
# Upstream's kubelet serves 10250 (and the read-only 10255); kemu's endpoint is /metrics and
# /healthz only, so it takes the read-only port.
DEFAULT_METRICS_PORT: Final = 10255
DEFAULT_CAPACITY: Final = "cpu=4,memory=8Gi,pods=110"
DEFAULT_ROOT_DIR: Final = str(Path(tempfile.gettempdir()) / "kemu-kubelet")
QPS_FLAG: Final = "--kube-api-qps"
BURST_FLAG: Final = "--kube-api-burst"
_DEFAULT_RULES: Final = VersionRules.default()


SERVING_PAIR: Final = "kubelet"
"""upstream's kubelet.crt/kubelet.key under --cert-dir (cmd/kubelet/app/server.go
InitializeTLS: a self-signed pair for the host when none is given)."""


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser("kubelet", "kemu kubelet", default_metrics_port=DEFAULT_METRICS_PORT)
    add_server_flag(parser)
    # upstream's kubelet flags for its TLS port (10250), which serves /metrics and /healthz:
    # kemu's serve the metrics port (kemu.component.options: ComponentOptions.from_args)
    add_secure_serving_flags(parser, pair_name=SERVING_PAIR)
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
        "--node-lease-batch",
        type=_bool_flag,
        nargs="?",
        const=True,
        default=False,
        metavar="BOOL",
        help="kemu only: the Lease renewals of a process's nodes due at one instant travel "
        "as one UpdateBatch call, each still its own update (kubelet/lease_batch.py; "
        "default false: one Update per renewal as each node's user, as upstream's kubelets; "
        "a batch is the process's user, system:node:kubelet)",
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
        type=_shutdown_flag,
        default=DEFAULT_SHUTDOWN_DURATION,
        metavar="DURATION|never",
        help="simulated time a container takes to exit on SIGTERM (default 0s: at once, as a "
        "pause or nginx container; never: it ignores SIGTERM and is killed at the end of the "
        "grace period; annotation kubelet.kemu.io/shutdown-duration overrides it per pod)",
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
    dra = parser.add_argument_group("dynamic resource allocation")
    dra.add_argument(
        "--dra-slice-file",
        default="",
        metavar="FILE",
        help="simulated DRA drivers: a YAML file of ResourceSlice manifests (driver, devices "
        "or sharedCounters) the kubelet publishes for each of its nodes once its Node exists, "
        "with spec.nodeName and spec.pool (name = the node's name) filled in; annotations "
        "kubelet.kemu.io/prepare-delay, binding-delay and binding-failure-devices set what "
        "the driver does (kemu.machinery.dra_slice_file)",
    )
    client = parser.add_argument_group("client")
    client_connection.add_flags(
        client,
        qps_flag=QPS_FLAG,
        burst_flag=BURST_FLAG,
        default=None,
        default_text="50 and 100 from 1.27, 5 and 10 before, by --emulated-version",
    )
    return parser


def settings_from_args(
    args: argparse.Namespace, kubelet_version: str, rules: VersionRules = _DEFAULT_RULES
) -> KubeletSettings:
    """The validated settings at the emulated version's `rules`; ValueError naming the flag
    otherwise."""
    names = _node_names(args)
    template = _node_template(args, kubelet_version)
    timing = _node_timing(args)
    pods = _pod_worker_options(args)
    node_ips = _node_ips(args, names) if names else []
    nodes = tuple(
        dataclasses.replace(template, name=name, node_ip=node_ip)
        for name, node_ip in zip(names, node_ips, strict=True)
    )
    server, tls = apiserver_connection(args)
    return KubeletSettings(
        server=server,
        tls=tls,
        apiserver_latency=apiserver_latency(args),
        nodes=nodes,
        timing=timing,
        lease_batch=args.node_lease_batch,
        pods=pods,
        root_dir=Path(args.root_dir) if args.root_dir else None,
        template=template if args.node_control else None,
        dra=_dra_drivers(args),
        client_connection=client_connection.from_args(
            args,
            qps_flag=QPS_FLAG,
            burst_flag=BURST_FLAG,
            default=kube_api_defaults(rules),
            negative_qps=False,
        ),
    )


def _dra_drivers(args: argparse.Namespace) -> DraDrivers:
    if not args.dra_slice_file:
        return NO_DRIVERS
    try:
        return load_slice_file(args.dra_slice_file)
    except ValueError as e:
        raise ValueError(f"--dra-slice-file: {args.dra_slice_file}: {e}") from None


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


def _bool_flag(text: str) -> bool:
    """argparse `type=` for a Go-style boolean flag's value (true/false)."""
    value = text.strip().lower()
    if value in ("true", "1", "t"):
        return True
    if value in ("false", "0", "f"):
        return False
    raise argparse.ArgumentTypeError(f"{text!r} is not a boolean (true or false)")


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


def _shutdown_flag(text: str) -> float | None:
    """argparse `type=` for --pod-shutdown-duration: a duration, or `never`."""
    try:
        return parse_shutdown(text)
    except DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


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


def allocatable_of(capacity: Mapping[str, str], reserved: Mapping[str, str]) -> dict[str, str]:
    """Capacity minus the reserved amounts, never below zero (upstream's node allocatable)."""
    out = {}
    for name, text in capacity.items():
        if name in reserved:
            value = max(0, to_int(name, text) - to_int(name, reserved[name]))
            out[name] = format_resource(name, value)
        else:
            out[name] = text
    return out


def parse_taints(text: str) -> list[types_pb2.Taint]:
    """--register-with-taints: "key=value:Effect,key:Effect"; ValueError when malformed."""
    taints: list[types_pb2.Taint] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        spec, sep, effect = item.rpartition(":")
        if not sep or not spec:
            raise ValueError(f"invalid taint {item!r}: expected KEY[=VALUE]:EFFECT")
        if effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(
                f"invalid taint effect {effect!r} in {item!r}: "
                "expected NoSchedule, PreferNoSchedule or NoExecute"
            )
        key, _, value = spec.partition("=")
        if not key:
            raise ValueError(f"invalid taint {item!r}: the key is empty")
        taints.append(types_pb2.Taint(key=key, value=value, effect=effect))
    return taints


def parse_labels(text: str) -> dict[str, str]:
    """--node-labels: "k=v,k2=v2"; ValueError when malformed."""
    labels: dict[str, str] = {}
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"invalid label {item!r}: expected KEY=VALUE")
        labels[key.strip()] = value.strip()
    return labels
