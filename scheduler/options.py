"""The scheduler's flags and the settings they make: its flag table (`build_parser`) and
`settings_from_flags`, which `app.main` calls once (upstream's cmd/kube-scheduler/app/options).
It loads no server and no gRPC: a driver reads the table (kemu.trace checks CLUSTER.yaml's
args with it)."""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass
from typing import Final

from kemu.client.endpoints import add_server_flag, apiserver_connection
from kemu.client.leaderelection import (
    LeaderElectionConfig,
    add_leader_election_flags,
    leader_election_config,
)
from kemu.component import client_connection
from kemu.component.featuregate import DYNAMIC_RESOURCE_ALLOCATION, FeatureGates
from kemu.component.latency import CallLatency, apiserver_latency
from kemu.component.options import add_record_decisions_flag, new_parser, refuse_config
from kemu.machinery.kubeconfig import ClientTLS
from kemu.scheduling.config import (
    DEFAULT_CLIENT_CONNECTION,
    KubeSchedulerConfiguration,
    default_config,
    load_config,
    scheduler_registry,
)
from kemu.scheduling.filter_score import COLUMNS_WHERE_WORTH_IT, ColumnPaths
from kemu.scheduling.plugins.registry import Registry
from kemu.scheduling.profile import DYNAMIC_RESOURCES

COMPONENT: Final = "kube-scheduler"
DEFAULT_METRICS_PORT: Final = 10259
LEASE_NAME: Final = "kube-scheduler"
QPS_FLAG: Final = "--kube-api-qps"
BURST_FLAG: Final = "--kube-api-burst"


def build_parser() -> argparse.ArgumentParser:
    parser = new_parser(
        "scheduler", "kemu kube-scheduler", default_metrics_port=DEFAULT_METRICS_PORT
    )
    add_server_flag(parser)
    parser.add_argument(
        "--config", metavar="FILE", help="a KubeSchedulerConfiguration YAML (profiles, plugins)"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=None,
        help="seed of the random tie-break between equally scored nodes (tests)",
    )
    parser.add_argument(
        "--no-batch",
        dest="batch",
        action="store_false",
        help="filter and score node by node only, never over node columns (the reference "
        "path the batch path must agree with; for differential runs)",
    )
    add_record_decisions_flag(
        parser,
        what="every scheduling attempt (nodes evaluated, each reason with its node count, the "
        "node chosen, preemption's victims, the binding; ?pod=NAMESPACE/NAME)",
    )
    add_leader_election_flags(parser, lease_name=LEASE_NAME)
    deprecated = parser.add_argument_group(
        "deprecated", "ignored when --config is given (its clientConnection says)"
    )
    client_connection.add_flags(
        deprecated,
        qps_flag=QPS_FLAG,
        burst_flag=BURST_FLAG,
        default=DEFAULT_CLIENT_CONNECTION,
    )
    return parser


@dataclass(frozen=True, slots=True)
class SchedulerSettings:
    """The process's settings, built once by `main` from its flags and --config: the
    apiserver, the KubeSchedulerConfiguration and the plugins it may name, leader election
    (None: off), the tie-break's seed, where the column forms run (--no-batch: never) and
    whether the decision record is kept (--record-decisions)."""

    server: str
    config: KubeSchedulerConfiguration
    registry: Registry
    election: LeaderElectionConfig | None
    seed: int | None = None
    paths: ColumnPaths = COLUMNS_WHERE_WORTH_IT
    record_decisions: bool = False
    apiserver_latency: CallLatency = CallLatency()
    """--apiserver-latency and its seed: what every call of the client waits."""
    tls: ClientTLS | None = None
    """--kubeconfig's TLS to the apiserver: its CA and this component's client certificate
    (None: plaintext)."""


def settings_from_flags(
    parser: argparse.ArgumentParser,
    args: argparse.Namespace,
    out_of_tree: Registry | None,
    gates: FeatureGates,
) -> SchedulerSettings:
    """The settings of `args` (parsed by `parser`, which reports a refused file or flag and
    exits). Without DynamicResourceAllocation the registry has no DynamicResources, so the
    default profile leaves it out (upstream's applyFeatureGates adds it only with the gate)."""
    try:
        registry = scheduler_registry(out_of_tree)
    except ValueError as e:
        refuse_config(parser, "plugins", e)
    if not gates.enabled(DYNAMIC_RESOURCE_ALLOCATION):
        registry.pop(DYNAMIC_RESOURCES, None)
    try:
        config = load_config(args.config, registry) if args.config else default_config(registry)
    except (OSError, ValueError) as e:
        refuse_config(parser, "--config", e)
    try:
        election = leader_election_config(args, lease_name=LEASE_NAME)
        if not args.config:
            # upstream's deprecated --kube-api-qps/--kube-api-burst, without a file only
            connection = client_connection.from_args(args, qps_flag=QPS_FLAG, burst_flag=BURST_FLAG)
            config = dataclasses.replace(config, client_connection=connection)
    except ValueError as e:
        parser.error(str(e))
    server, tls = apiserver_connection(args)
    return SchedulerSettings(
        server=server,
        tls=tls,
        apiserver_latency=apiserver_latency(args),
        config=config,
        registry=registry,
        election=election,
        seed=args.seed,
        paths=COLUMNS_WHERE_WORTH_IT if args.batch else ColumnPaths(enabled=False),
        record_decisions=args.record_decisions,
    )
