"""The cloud's flags and the settings they make: its flag table (`build_parser`) and
`settings_from_args`, which `app.main` calls once (as upstream's cmd/<component>/app/options).
It loads no server: a driver reads the table."""

from __future__ import annotations

import argparse
import enum
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cloud.config import CloudConfig, ConfigError, load_config
from kemu.client.endpoints import ServerOrder, add_server_flag, apiserver_connection
from kemu.component.latency import CallLatency, apiserver_latency
from kemu.component.options import duration_flag, new_parser
from kemu.component.secure_serving import (
    ServingError,
    check_plaintext_bind,
)
from kemu.machinery.kubeconfig import ClientTLS

COMPONENT: Final = "cloud"
DEFAULT_PORT: Final = 8086
DEFAULT_METRICS_PORT: Final = 8087


class KubeletProcessMode(enum.Enum):
    """--kubelet-processes: how the cloud runs its instances' kubelets."""

    INSTANCE = "instance"
    NODE_GROUP = "node-group"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        COMPONENT, "kemu's emulated cloud", default_metrics_port=DEFAULT_METRICS_PORT
    )
    add_server_flag(parser)
    parser.add_argument("--config", required=True, metavar="FILE", help="the node groups (YAML)")
    parser.add_argument(
        "--state-dir", required=True, metavar="DIR", help="where instances are recorded"
    )
    parser.add_argument("--bind-address", default="127.0.0.1", help="address of the gRPC API")
    parser.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"port of the gRPC API (default {DEFAULT_PORT})",
    )
    parser.add_argument(
        "--provision-delay",
        type=duration_flag,
        default=0.0,
        metavar="DURATION",
        help="time from creating an instance to starting its kubelet (default 0s)",
    )
    parser.add_argument(
        "--kubelet-processes",
        choices=[m.value for m in KubeletProcessMode],
        default=KubeletProcessMode.INSTANCE.value,
        help="instance (default): one kubelet process per instance, as each machine runs its "
        "own; node-group: one hollow kubelet process per node group running its instances "
        "as nodes (for hundreds of instances)",
    )
    return parser


@dataclass(frozen=True)
class CloudSettings:
    """Everything `python -m cloud` was told, validated: built once by `main`."""

    server: str
    config: CloudConfig
    """--config: the node groups."""
    state_dir: Path
    bind_address: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    provision_delay: float = 0.0
    kubelet_processes: KubeletProcessMode = KubeletProcessMode.INSTANCE
    apiserver_latency: CallLatency = CallLatency()
    """--apiserver-latency and its seed: what every call of the client waits."""
    tls: ClientTLS | None = None
    server_order: ServerOrder = ServerOrder.LISTED
    """--server-order, passed on to the kubelets it starts: each orders the list itself (as
    each process behind an L4 balancer gets a connection of its own)."""
    kubeconfig: str = ""
    """--kubeconfig's path, passed on to the kubelets it starts ("": none)."""
    """--kubeconfig's TLS to the apiserver: its CA and this component's client certificate
    (None: plaintext)."""


def settings_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> CloudSettings:
    """The validated settings of `args`; a bad flag exits through `parser` naming it."""
    if not 0 <= args.port <= 65535:
        parser.error(f"--port: {args.port} is not a port (0 to 65535)")
    try:
        config = load_config(Path(args.config))
    except ConfigError as e:
        parser.error(f"--config: {e}")
    try:  # the node-group API serves no TLS yet (issue #60 item 4)
        check_plaintext_bind(
            args.bind_address, flag="--bind-address", allowed=args.allow_insecure_bind, tls=False
        )
    except ServingError as e:
        parser.error(str(e))
    server, tls = apiserver_connection(args)
    return CloudSettings(
        server=server,
        tls=tls,
        server_order=args.server_order,
        kubeconfig=str(Path(args.kubeconfig.path).resolve()) if args.kubeconfig else "",
        apiserver_latency=apiserver_latency(args),
        config=config,
        state_dir=Path(args.state_dir),
        bind_address=args.bind_address,
        port=args.port,
        provision_delay=args.provision_delay,
        kubelet_processes=KubeletProcessMode(args.kubelet_processes),
    )
