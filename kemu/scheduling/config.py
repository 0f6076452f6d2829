"""The scheduler's configuration file (the scheduler's `--config`, the autoscaler's
`--scheduler-config-file`): a KubeSchedulerConfiguration, as upstream (apiVersion
kubescheduler.config.k8s.io/v1).

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                     resourceNamespace: kube-system, resourceName: kube-scheduler}
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    clientConnection: {qps: 50, burst: 100}   # the scheduler's client rate limit (0: these
                                         # defaults; a negative qps: no limit)
    percentageOfNodesToScore: 0          # 0: adaptive (50% - nodes/125, at least 5%)
    percentageOfPlacementsToScore: 100   # KEP-5732 (validated, 0-100; kemu evaluates every
                                         # placement, which is what 100 asks; upstream's
                                         # adaptive limit below 100 is not modelled)
    profiles:
    - schedulerName: default-scheduler
      percentageOfNodesToScore: 30      # overrides the top-level value for this profile
      plugins:
        multiPoint: {enabled: [{name: SlowPreBind}]}
        score:
          enabled: [{name: NodeResourcesFit, weight: 5}]
          disabled: [{name: NodeResourcesBalancedAllocation}]
      pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}

The profiles' semantics (defaults, merging, multiPoint expansion, weights) are
kemu.scheduling.profile's.

Errors are `ConfigError` (a ValueError) naming the YAML path:
`profiles[0].plugins.score.enabled[1].weight: must be positive`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from kemu.component.client_connection import ClientConnection
from kemu.machinery.duration import DurationError, parse_duration
from kemu.scheduling import emulation
from kemu.scheduling.plugins.registry import (
    Registry,
    in_tree_registry,
    installed_registry,
    merge,
)
from kemu.scheduling.profile import (
    ConfigError,
    Profile,
    as_int,
    as_list,
    as_mapping,
    as_str,
    build_profile,
    check_common_queue_sort,
    check_keys,
    check_percentage,
)

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
# Top-level fields of upstream's configuration that kemu accepts and ignores.
_IGNORED_TOP_LEVEL: Final = frozenset(
    {
        "enableProfiling",
        "enableContentionProfiling",
        "delayCacheUntilActive",
        "healthzBindAddress",
        "metricsBindAddress",
    }
)


# ---------------------------------------------------------------- the configuration


@dataclass(frozen=True)
class LeaderElection:
    """`leaderElection`, with upstream's defaults (leaderElect defaults to true upstream)."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_namespace: str = "kube-system"
    resource_name: str = "kube-scheduler"


DEFAULT_CLIENT_CONNECTION: Final = ClientConnection(50.0, 100)
"""The scheduler's own opinion (pkg/scheduler/apis/config/v1 defaults.go: a qps or burst of
0 becomes 50 or 100), before rest.Config's."""


@dataclass(frozen=True)
class KubeSchedulerConfiguration:
    profiles: tuple[Profile, ...]
    leader_election: LeaderElection = LeaderElection()
    client_connection: ClientConnection = DEFAULT_CLIENT_CONNECTION
    percentage_of_nodes_to_score: int = 0
    # KEP-5732 (see the module docstring): None when unset.
    percentage_of_placements_to_score: int | None = None
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    parallelism: int = 16  # accepted for compatibility; kemu schedules in one thread

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None


# ---------------------------------------------------------------- entry points


def load_config(path: str | Path, registry: Registry | None = None) -> KubeSchedulerConfiguration:
    """Reads and validates a configuration file (registry: the in-tree one by default)."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise ConfigError("", f"reading {path}: {err}") from err
    return parse_config(text, registry)


def parse_config(text: str, registry: Registry | None = None) -> KubeSchedulerConfiguration:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError("", f"invalid YAML: {err}") from err
    if data is None:
        data = {}
    return config_from_dict(as_mapping(data, ""), registry)


def scheduler_registry(out_of_tree: Registry | None = None) -> Registry:
    """The scheduler's plugins: the in-tree registry merged with kemu's emulation plugins, the
    plugins installed packages register (entry points kemu.scheduler.plugins) and the caller's
    `out_of_tree` ones (as upstream's scheduler.New merges its out-of-tree registry, given by
    app.WithPlugin, into the in-tree one). A name in two of them is a ValueError."""
    return merge(in_tree_registry(), emulation.registry(), installed_registry(), out_of_tree or {})


def default_config(registry: Registry | None = None) -> KubeSchedulerConfiguration:
    """The configuration without a file: the default profile only."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, registry)


def config_from_dict(
    data: Mapping[str, Any], registry: Registry | None = None
) -> KubeSchedulerConfiguration:
    """Validates and defaults a decoded configuration (args may hold any Python values).
    `registry` names the plugins that exist (the scheduler's, scheduler_registry, by
    default)."""
    if registry is None:
        registry = scheduler_registry()
    check_keys(
        data,
        {
            "apiVersion",
            "kind",
            "profiles",
            "leaderElection",
            "percentageOfNodesToScore",
            "percentageOfPlacementsToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "parallelism",
            "extenders",
            "clientConnection",
            *_IGNORED_TOP_LEVEL,
        },
        "",
    )
    if data.get("apiVersion") != API_VERSION:
        raise ConfigError("apiVersion", f"must be {API_VERSION!r}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        raise ConfigError("kind", f"must be {KIND!r}, got {data.get('kind')!r}")
    if as_list(data.get("extenders"), "extenders"):
        raise ConfigError("extenders", "scheduler extenders are not supported by kemu")

    percentage = as_int(data.get("percentageOfNodesToScore", 0), "percentageOfNodesToScore")
    check_percentage(percentage, "percentageOfNodesToScore")
    placements: int | None = None
    if data.get("percentageOfPlacementsToScore") is not None:
        placements = as_int(data["percentageOfPlacementsToScore"], "percentageOfPlacementsToScore")
        check_percentage(placements, "percentageOfPlacementsToScore")
    initial = as_int(data.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds")
    if initial <= 0:
        raise ConfigError("podInitialBackoffSeconds", "must be greater than 0")
    maximum = as_int(data.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds")
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds"
        )
    parallelism = as_int(data.get("parallelism", 16), "parallelism")
    if parallelism <= 0:
        raise ConfigError("parallelism", "should be an integer value greater than zero")

    election = _leader_election(data.get("leaderElection"), "leaderElection")
    connection = _client_connection(data.get("clientConnection"), "clientConnection")

    raw_profiles = as_list(data.get("profiles"), "profiles") or [{}]
    profiles: list[Profile] = []
    names: set[str] = set()
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        profile = build_profile(
            as_mapping(raw, path),
            path,
            registry,
            default_name=len(raw_profiles) == 1,
            default_percentage=percentage,
        )
        if profile.scheduler_name in names:
            raise ConfigError(
                f"{path}.schedulerName", f"duplicate value {profile.scheduler_name!r}"
            )
        names.add(profile.scheduler_name)
        profiles.append(profile)
    check_common_queue_sort(profiles)

    return KubeSchedulerConfiguration(
        profiles=tuple(profiles),
        leader_election=election,
        client_connection=connection,
        percentage_of_nodes_to_score=percentage,
        percentage_of_placements_to_score=placements,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
    )


# ---------------------------------------------------------------- sections


def _leader_election(value: object, path: str) -> LeaderElection:
    if value is None:
        return LeaderElection()
    m = as_mapping(value, path)
    check_keys(
        m,
        {
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceNamespace",
            "resourceName",
        },
        path,
    )
    d = LeaderElection()
    elect = m.get("leaderElect", d.leader_elect)
    if not isinstance(elect, bool):
        raise ConfigError(f"{path}.leaderElect", "must be a boolean")
    lease = _duration(m.get("leaseDuration"), f"{path}.leaseDuration", d.lease_duration)
    renew = _duration(m.get("renewDeadline"), f"{path}.renewDeadline", d.renew_deadline)
    retry = _duration(m.get("retryPeriod"), f"{path}.retryPeriod", d.retry_period)
    lock = as_str(m.get("resourceLock", d.resource_lock), f"{path}.resourceLock")
    namespace = as_str(
        m.get("resourceNamespace", d.resource_namespace), f"{path}.resourceNamespace"
    )
    name = as_str(m.get("resourceName", d.resource_name), f"{path}.resourceName")
    if lock != "leases":
        raise ConfigError(f"{path}.resourceLock", f"only 'leases' is supported, got {lock!r}")
    if elect:
        # Upstream's ValidateLeaderElectionConfiguration, plus client-go's jitter rule.
        for key, seconds in (
            ("leaseDuration", lease),
            ("renewDeadline", renew),
            ("retryPeriod", retry),
        ):
            if seconds <= 0:
                raise ConfigError(f"{path}.{key}", "must be greater than zero")
        if lease <= renew:
            raise ConfigError(f"{path}.leaseDuration", "must be greater than renewDeadline")
        if renew <= 1.2 * retry:
            raise ConfigError(f"{path}.renewDeadline", "must be greater than retryPeriod*1.2")
        if not namespace:
            raise ConfigError(f"{path}.resourceNamespace", "must not be empty")
        if not name:
            raise ConfigError(f"{path}.resourceName", "must not be empty")
    return LeaderElection(elect, lease, renew, retry, lock, namespace, name)


def _client_connection(value: object, path: str) -> ClientConnection:
    """`clientConnection` (component-base's ClientConnectionConfiguration): qps and burst are
    used, defaulted as the scheduler's (0: 50 and 100) and validated as upstream's (a burst
    below 0 refused); kubeconfig and the content types are accepted and unused (kemu's
    client is --server's gRPC)."""
    if value is None:
        return DEFAULT_CLIENT_CONNECTION
    m = as_mapping(value, path)
    check_keys(m, {"qps", "burst", "kubeconfig", "acceptContentTypes", "contentType"}, path)
    qps = m.get("qps", 0)
    if isinstance(qps, bool) or not isinstance(qps, int | float):
        raise ConfigError(f"{path}.qps", f"must be a number, got {qps!r}")
    burst = as_int(m.get("burst", 0), f"{path}.burst")
    connection = ClientConnection(
        float(qps) or DEFAULT_CLIENT_CONNECTION.qps, burst or DEFAULT_CLIENT_CONNECTION.burst
    )
    try:
        connection.check(f"{path}.qps", f"{path}.burst")
    except ValueError as err:
        raise ConfigError("", str(err)) from None
    return connection


def _duration(value: object, path: str, default: float) -> float:
    """A metav1.Duration field: a Go duration string, as upstream (a YAML number is refused,
    as upstream's decoder refuses it, rather than guessing a unit)."""
    if value is None:
        return default
    if not isinstance(value, str):
        raise ConfigError(path, f'must be a duration string such as "15s", got {value!r}')
    try:
        return parse_duration(value)
    except DurationError as err:
        raise ConfigError(path, str(err)) from err
