"""The scheduler's configuration file (`--config`): a KubeSchedulerConfiguration, as upstream
(apiVersion kubescheduler.config.k8s.io/v1).

    apiVersion: kubescheduler.config.k8s.io/v1
    kind: KubeSchedulerConfiguration
    leaderElection: {leaderElect: true, leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s,
                     resourceNamespace: kube-system, resourceName: kube-scheduler}
    podInitialBackoffSeconds: 1
    podMaxBackoffSeconds: 10
    percentageOfNodesToScore: 0          # 0: adaptive (50% - nodes/125, at least 5%)
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

Semantics are upstream's (pkg/scheduler/apis/config/v1 defaults, framework/runtime expansion):
- Every profile starts from the default profile `default-scheduler`, whose plugins are all
  enabled through `multiPoint` (upstream v1 default_plugins.go, in upstream's order):
  SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration (score weight 3),
  NodeAffinity (2), NodeResourcesFit (1), InterPodAffinity (2), DefaultPreemption,
  NodeResourcesBalancedAllocation (1), DefaultBinder. kemu leaves out the plugins it does not
  implement: NodePorts, the volume plugins (VolumeRestrictions, NodeVolumeLimits,
  VolumeBinding, VolumeZone, EBS/GCE/Azure limits), DynamicResources, PodTopologySpread and
  ImageLocality; DefaultPreemption is listed only when the registry has it.
- A profile's `plugins` are merged into the defaults per extension point: a `disabled` name
  removes that default (`*` removes them all), an `enabled` plugin that is a default replaces
  it in place (new weight), other enabled plugins are appended.
- `multiPoint` plugins are then expanded into every extension point their class implements,
  unless disabled at that point (`disabled: [{name: "*"}]` at a point keeps multiPoint plugins
  out of it). A plugin enabled both by multiPoint and at a point is configured by the point.
  Order at each point: the point's own plugins that override multiPoint ones, then multiPoint
  plugins, then the point's other plugins.
- Score weights: the `score` entry wins over the `multiPoint` one; no weight means 1.
- All profiles must share one queueSort plugin with the same args.
- pluginConfig args are passed to the plugin's factory as a mapping (camelCase keys, as
  upstream); `apiVersion`/`kind` inside args (upstream's typed args) are accepted and dropped.

Errors are `ConfigError` (a ValueError) naming the YAML path:
`profiles[0].plugins.score.enabled[1].weight: must be positive`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import yaml

from kemu.client.controlplane import parse_duration
from scheduler.framework.plugins.registry import (
    POINT_METHODS,
    Registry,
    extension_points,
    in_tree_registry,
)

API_VERSION: Final = "kubescheduler.config.k8s.io/v1"
KIND: Final = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

# The extension points, in configuration spelling, in the order a pod meets them.
EXTENSION_POINTS: Final[tuple[str, ...]] = tuple(POINT_METHODS)
MULTI_POINT: Final = "multiPoint"
_PLUGIN_SET_KEYS: Final = (MULTI_POINT, *EXTENSION_POINTS)

DEFAULT_PREEMPTION: Final = "DefaultPreemption"

# Upstream's default multiPoint plugins that kemu implements, in upstream's order; (name, weight).
DEFAULT_MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("InterPodAffinity", 2),
    (DEFAULT_PREEMPTION, None),
    ("NodeResourcesBalancedAllocation", 1),
    ("DefaultBinder", None),
)

# Top-level fields of upstream's configuration that kemu accepts and ignores.
_IGNORED_TOP_LEVEL: Final = frozenset(
    {
        "clientConnection",
        "enableProfiling",
        "enableContentionProfiling",
        "delayCacheUntilActive",
        "healthzBindAddress",
        "metricsBindAddress",
    }
)


class ConfigError(ValueError):
    """An invalid configuration; the message starts with the YAML path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


# ---------------------------------------------------------------- the configuration


@dataclass(frozen=True)
class PluginRef:
    """One `{name, weight}` entry of an `enabled` list."""

    name: str
    weight: int | None = None


@dataclass(frozen=True)
class PluginSet:
    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[str, ...] = ()


@dataclass(frozen=True)
class Profile:
    """One scheduling profile, defaulted and expanded.

    `plugins` is the configuration merged into the defaults (keys: "multiPoint" and every
    extension point); `enabled` is what runs: per extension point, the plugin names in order
    after multiPoint expansion; `score_weights` has a weight for every score plugin.
    """

    scheduler_name: str
    plugins: Mapping[str, PluginSet]
    enabled: Mapping[str, tuple[str, ...]]
    score_weights: Mapping[str, int]
    plugin_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # The profile's value, or else the configuration's; 0 means adaptive (upstream).
    percentage_of_nodes_to_score: int = 0

    def args(self, plugin: str) -> Mapping[str, Any]:
        """The plugin's pluginConfig args ({} when it has none)."""
        return self.plugin_config.get(plugin, {})

    def plugin_names(self) -> list[str]:
        """Every plugin the profile runs, each once, in order of first use."""
        names: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            names.update(dict.fromkeys(self.enabled[point]))
        return list(names)


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


@dataclass(frozen=True)
class KubeSchedulerConfiguration:
    profiles: tuple[Profile, ...]
    leader_election: LeaderElection = LeaderElection()
    percentage_of_nodes_to_score: int = 0
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
    return config_from_dict(_mapping(data, ""), registry)


def default_config(registry: Registry | None = None) -> KubeSchedulerConfiguration:
    """The configuration without a file: the default profile only."""
    return config_from_dict({"apiVersion": API_VERSION, "kind": KIND}, registry)


def config_from_dict(
    data: Mapping[str, Any], registry: Registry | None = None
) -> KubeSchedulerConfiguration:
    """Validates and defaults a decoded configuration (args may hold any Python values).
    `registry` names the plugins that exist (the in-tree registry by default)."""
    if registry is None:
        registry = in_tree_registry()
    _check_keys(
        data,
        {
            "apiVersion",
            "kind",
            "profiles",
            "leaderElection",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "parallelism",
            "extenders",
            *_IGNORED_TOP_LEVEL,
        },
        "",
    )
    if data.get("apiVersion") != API_VERSION:
        raise ConfigError("apiVersion", f"must be {API_VERSION!r}, got {data.get('apiVersion')!r}")
    if data.get("kind") != KIND:
        raise ConfigError("kind", f"must be {KIND!r}, got {data.get('kind')!r}")
    if _list(data.get("extenders"), "extenders"):
        raise ConfigError("extenders", "scheduler extenders are not supported by kemu")

    percentage = _int(data.get("percentageOfNodesToScore", 0), "percentageOfNodesToScore")
    _check_percentage(percentage, "percentageOfNodesToScore")
    initial = _int(data.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds")
    if initial <= 0:
        raise ConfigError("podInitialBackoffSeconds", "must be greater than 0")
    maximum = _int(data.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds")
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds", "must be greater than or equal to podInitialBackoffSeconds"
        )
    parallelism = _int(data.get("parallelism", 16), "parallelism")
    if parallelism <= 0:
        raise ConfigError("parallelism", "should be an integer value greater than zero")

    election = _leader_election(data.get("leaderElection"), "leaderElection")

    raw_profiles = _list(data.get("profiles"), "profiles") or [{}]
    profiles: list[Profile] = []
    names: set[str] = set()
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        profile = _profile(
            _mapping(raw, path),
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
    _check_common_queue_sort(profiles)

    return KubeSchedulerConfiguration(
        profiles=tuple(profiles),
        leader_election=election,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
    )


# ---------------------------------------------------------------- sections


def _leader_election(value: Any, path: str) -> LeaderElection:
    if value is None:
        return LeaderElection()
    m = _mapping(value, path)
    _check_keys(
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
    lock = _str(m.get("resourceLock", d.resource_lock), f"{path}.resourceLock")
    namespace = _str(m.get("resourceNamespace", d.resource_namespace), f"{path}.resourceNamespace")
    name = _str(m.get("resourceName", d.resource_name), f"{path}.resourceName")
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


def _profile(
    m: Mapping[str, Any],
    path: str,
    registry: Registry,
    *,
    default_name: bool,
    default_percentage: int,
) -> Profile:
    _check_keys(m, {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}, path)
    if "schedulerName" in m or not default_name:
        name = _str(m.get("schedulerName"), f"{path}.schedulerName")
        if not name:
            raise ConfigError(f"{path}.schedulerName", "required value")
    else:
        name = DEFAULT_SCHEDULER_NAME
    percentage = default_percentage
    if m.get("percentageOfNodesToScore") is not None:
        percentage = _int(m["percentageOfNodesToScore"], f"{path}.percentageOfNodesToScore")
        _check_percentage(percentage, f"{path}.percentageOfNodesToScore")

    points = _Points(registry)
    custom = _plugins(m.get("plugins"), f"{path}.plugins", registry, points)
    plugins = _merge_defaults(custom, registry, f"{path}.plugins")
    enabled = _expand(plugins, points, f"{path}.plugins")
    weights = _score_weights(plugins, enabled["score"], points)

    n = len(enabled["queueSort"])
    if n != 1:
        raise ConfigError(
            f"{path}.plugins.queueSort",
            f"only one queue sort plugin required for profile with scheduler name {name!r}, "
            f"but got {n}",
        )
    if not enabled["bind"]:
        raise ConfigError(
            f"{path}.plugins.bind",
            f"at least one bind plugin is needed for profile with scheduler name {name!r}",
        )
    plugin_config = _plugin_config(m.get("pluginConfig"), f"{path}.pluginConfig", registry)
    return Profile(
        scheduler_name=name,
        plugins=plugins,
        enabled=enabled,
        score_weights=weights,
        plugin_config=plugin_config,
        percentage_of_nodes_to_score=percentage,
    )


class _Points:
    """Which extension points each registered plugin implements (cached per profile)."""

    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._cache: dict[str, frozenset[str]] = {}

    def __call__(self, name: str) -> frozenset[str]:
        points = self._cache.get(name)
        if points is None:
            points = self._cache[name] = extension_points(self._registry[name])
        return points


def _plugins(
    value: Any, path: str, registry: Registry, points: Callable[[str], frozenset[str]]
) -> dict[str, PluginSet]:
    m = _mapping(value, path) if value is not None else {}
    _check_keys(m, set(_PLUGIN_SET_KEYS), path)
    out: dict[str, PluginSet] = {}
    for key in _PLUGIN_SET_KEYS:
        set_path = f"{path}.{key}"
        raw = _mapping(m[key], set_path) if m.get(key) is not None else {}
        _check_keys(raw, {"enabled", "disabled"}, set_path)
        enabled: list[PluginRef] = []
        seen: set[str] = set()
        for j, entry in enumerate(_list(raw.get("enabled"), f"{set_path}.enabled")):
            entry_path = f"{set_path}.enabled[{j}]"
            e = _mapping(entry, entry_path)
            _check_keys(e, {"name", "weight"}, entry_path)
            name = _str(e.get("name"), f"{entry_path}.name")
            if name not in registry:
                raise ConfigError(f"{entry_path}.name", f"unknown plugin {name!r}")
            if key != MULTI_POINT and key not in points(name):
                raise ConfigError(
                    f"{entry_path}.name", f"plugin {name!r} does not extend {key} plugin"
                )
            if name in seen:
                raise ConfigError(
                    f"{entry_path}.name", f"plugin {name!r} already registered as {key}"
                )
            seen.add(name)
            weight: int | None = None
            if e.get("weight") is not None:
                weight = _int(e["weight"], f"{entry_path}.weight")
                if weight <= 0:
                    raise ConfigError(f"{entry_path}.weight", "must be positive")
            enabled.append(PluginRef(name, weight))
        disabled: list[str] = []
        for j, entry in enumerate(_list(raw.get("disabled"), f"{set_path}.disabled")):
            entry_path = f"{set_path}.disabled[{j}]"
            e = _mapping(entry, entry_path)
            _check_keys(e, {"name"}, entry_path)
            name = _str(e.get("name"), f"{entry_path}.name")
            if name != "*" and name not in registry:
                raise ConfigError(f"{entry_path}.name", f"unknown plugin {name!r}")
            disabled.append(name)
        out[key] = PluginSet(tuple(enabled), tuple(disabled))
    return out


def _default_plugins(registry: Registry) -> dict[str, PluginSet]:
    multi = tuple(
        PluginRef(name, weight)
        for name, weight in DEFAULT_MULTI_POINT
        if name != DEFAULT_PREEMPTION or name in registry
    )
    sets = {key: PluginSet() for key in _PLUGIN_SET_KEYS}
    sets[MULTI_POINT] = PluginSet(multi)
    return sets


def _merge_defaults(
    custom: Mapping[str, PluginSet], registry: Registry, path: str
) -> dict[str, PluginSet]:
    """upstream mergePlugins: per set, defaults minus disabled, replaced in place by custom
    entries of the same name, then the other custom entries."""
    defaults = _default_plugins(registry)
    merged: dict[str, PluginSet] = {}
    for key in _PLUGIN_SET_KEYS:
        default, mine = defaults[key], custom[key]
        disabled = set(mine.disabled) | set(default.disabled)
        by_name = {ref.name: ref for ref in mine.enabled}
        replaced: set[str] = set()
        enabled: list[PluginRef] = []
        if "*" not in disabled:
            for ref in default.enabled:
                if ref.name in disabled:
                    continue
                if ref.name in by_name:
                    ref = by_name[ref.name]
                    replaced.add(ref.name)
                enabled.append(ref)
        enabled.extend(ref for ref in mine.enabled if ref.name not in replaced)
        for ref in enabled:
            if ref.name not in registry:  # a default plugin missing from the registry
                raise ConfigError(f"{path}.{key}", f"default plugin {ref.name!r} is not registered")
        merged[key] = PluginSet(tuple(enabled), mine.disabled + default.disabled)
    return merged


def _expand(
    plugins: Mapping[str, PluginSet], points: Callable[[str], frozenset[str]], path: str
) -> dict[str, tuple[str, ...]]:
    """upstream expandMultiPointPlugins."""
    multi = plugins[MULTI_POINT].enabled
    out: dict[str, tuple[str, ...]] = {}
    for point in EXTENSION_POINTS:
        pset = plugins[point]
        specific = [ref.name for ref in pset.enabled]
        disabled = set(pset.disabled)
        if "*" in disabled:
            out[point] = tuple(specific)
            continue
        overrides: set[str] = set()
        from_multi: list[str] = []
        for ref in multi:
            if point not in points(ref.name) or ref.name in disabled:
                continue
            if ref.name in specific:
                overrides.add(ref.name)
                continue
            if ref.name in from_multi:
                raise ConfigError(
                    f"{path}.{MULTI_POINT}", f"plugin {ref.name!r} already registered as {point}"
                )
            from_multi.append(ref.name)
        out[point] = (
            *(n for n in specific if n in overrides),
            *from_multi,
            *(n for n in specific if n not in overrides),
        )
    return out


def _score_weights(
    plugins: Mapping[str, PluginSet],
    score_plugins: tuple[str, ...],
    points: Callable[[str], frozenset[str]],
) -> dict[str, int]:
    """upstream getScoreWeights: the score entry first, then multiPoint; unset means 1."""
    weights: dict[str, int] = {}
    for ref in (*plugins["score"].enabled, *plugins[MULTI_POINT].enabled):
        if "score" not in points(ref.name) or ref.name in weights:
            continue
        weights[ref.name] = ref.weight or 1
    return {name: weights.get(name, 1) for name in score_plugins}


def _plugin_config(value: Any, path: str, registry: Registry) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(_list(value, path)):
        entry_path = f"{path}[{i}]"
        e = _mapping(entry, entry_path)
        _check_keys(e, {"name", "args"}, entry_path)
        name = _str(e.get("name"), f"{entry_path}.name")
        if name not in registry:
            raise ConfigError(f"{entry_path}.name", f"unknown plugin {name!r}")
        if name in out:
            raise ConfigError(f"{entry_path}.name", f"repeated config for plugin {name!r}")
        args = _mapping(e["args"], f"{entry_path}.args") if e.get("args") is not None else {}
        out[name] = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
    return out


def _check_common_queue_sort(profiles: list[Profile]) -> None:
    if not profiles:
        return
    first = profiles[0]
    (sort_plugin,) = first.enabled["queueSort"]
    for i, p in enumerate(profiles[1:], start=1):
        if p.enabled["queueSort"] != first.enabled["queueSort"]:
            raise ConfigError(
                f"profiles[{i}].plugins.queueSort",
                f"queueSort must be the same for all profiles: {p.enabled['queueSort'][0]!r} "
                f"differs from {sort_plugin!r}",
            )
        if p.args(sort_plugin) != first.args(sort_plugin):
            raise ConfigError(
                f"profiles[{i}].pluginConfig",
                f"args of queueSort plugin {sort_plugin!r} must be the same for all profiles",
            )


# ---------------------------------------------------------------- typed readers


def _check_keys(m: Mapping[str, Any], allowed: set[str] | frozenset[str], path: str) -> None:
    for key in m:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(where, "unknown field")


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(path, f"keys must be strings, got {key!r}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(path, f"must be a list, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, "must be a string" if value is not None else "required value")
    return value


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    return value


def _duration(value: Any, path: str, default: float) -> float:
    if value is None:
        return default
    if isinstance(value, bool):
        raise ConfigError(path, f"must be a duration, got {value!r}")
    if isinstance(value, int | float):
        return float(value)
    try:
        return parse_duration(_str(value, path))
    except ValueError as err:
        raise ConfigError(path, str(err)) from err


def _check_percentage(value: int, path: str) -> None:
    if not 0 <= value <= 100:
        raise ConfigError(path, f"not in valid range [0-100], got {value}")
