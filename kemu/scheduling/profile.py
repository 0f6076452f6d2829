"""Scheduling profiles (upstream pkg/scheduler/apis/config and framework/runtime's profile
expansion): a KubeSchedulerConfiguration profile's plugins, defaulted, merged, expanded and
validated against a plugin registry. The scheduler process reads the file
(kemu/scheduling/config.py); the autoscaler builds the same profiles for its simulations.

Semantics are upstream's (pkg/scheduler/apis/config/v1 defaults, framework/runtime expansion):
- Every profile starts from the default profile `default-scheduler`, whose plugins are all
  enabled through `multiPoint` (upstream v1 default_plugins.go, in upstream's order):
  SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration (score weight 3),
  NodeAffinity (2), NodePorts, DeferredPodScheduling, NodeResourcesFit (1), VolumeRestrictions,
  NodeVolumeLimits, VolumeBinding, VolumeZone, PodTopologySpread (2), InterPodAffinity (2),
  DefaultPreemption, NodeResourcesBalancedAllocation (1), DefaultBinder, GangScheduling
  (upstream appends it when its gate is on, applyFeatureGates in v1/default_plugins.go
  (inferred: that version of the file was not available); kemu lists it always, a no-op unless
  GenericWorkload (and GangScheduling before 1.37) is on, as DeferredPodScheduling), then the
  placement plugins of KEP-5732, TopologyPlacementGenerator (placementGenerate) and
  PodGroupPodsCount (placementScore; NodeResourcesFit serves that point too, through
  multiPoint): upstream's applyFeatureGates adds them with TopologyAwareWorkloadScheduling,
  kemu lists them always and the pod-group cycle runs the placement points only with that
  gate on. The four volume
  plugins are in upstream's default profile at every version kemu emulates (1.21-1.37). kemu
  leaves out the plugins it does not implement: the in-tree EBS/GCE/Azure volume limits
  (their volume sources are not in kemu's pod spec) and ImageLocality. DynamicResources
  comes right before DefaultPreemption (upstream inserts it there with
  DynamicResourceAllocation: "it is better to first deallocate an idle ResourceClaim than it
  is to evict some Pod"; so its PreBind runs after VolumeBinding's); kemu lists it always, a
  no-op without the gate. DefaultPreemption, DeferredPodScheduling, DynamicResources and the
  volume plugins are listed
  only when the registry has them. DeferredPodScheduling (KEP-5836, a no-op unless its gate is
  on) must filter before NodeResourcesFit: on a node that disables resize preemption its
  UnschedulableAndUnresolvable, not NodeResourcesFit's Unschedulable, has to be the node's
  status, or preemption would run there. Upstream's exact slot was not available; kemu puts
  it between NodePorts and NodeResourcesFit.
- A profile's `plugins` are merged into the defaults per extension point: a `disabled` name
  removes that default (`*` removes them all), an `enabled` plugin that is a default replaces
  it in place (new weight), other enabled plugins are appended.
- `multiPoint` plugins are then expanded into every extension point their class implements,
  unless disabled at that point (`disabled: [{name: "*"}]` at a point keeps multiPoint plugins
  out of it). A plugin enabled both by multiPoint and at a point is configured by the point.
  Order at each point: the point's own plugins that override multiPoint ones, then multiPoint
  plugins, then the point's other plugins.
- Score weights: the `score` entry wins over the `multiPoint` one; no weight means 1.
  placementScore weights: the `placementScore` entry's, else 1 (upstream's default weights
  for NodeResourcesFit and PodGroupPodsCount are both 1).
- All profiles must share one queueSort plugin with the same args.
- pluginConfig args are passed to the plugin's factory as a mapping (camelCase keys, as
  upstream); `apiVersion`/`kind` inside args (upstream's typed args) are accepted and dropped.

Errors are `ConfigError` (a ValueError) naming the YAML path:
`profiles[0].plugins.score.enabled[1].weight: must be positive`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from kemu.scheduling.interface import EXTENSION_POINTS as _POINT_PROTOCOLS
from kemu.scheduling.plugins.registry import Registry, extension_points, in_tree_registry

DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"

# The extension points, in configuration spelling, in the order a pod meets them.
EXTENSION_POINTS: Final[tuple[str, ...]] = tuple(_POINT_PROTOCOLS)
MULTI_POINT: Final = "multiPoint"
_PLUGIN_SET_KEYS: Final = (MULTI_POINT, *EXTENSION_POINTS)

DEFAULT_PREEMPTION: Final = "DefaultPreemption"
DYNAMIC_RESOURCES: Final = "DynamicResources"
DEFERRED_POD_SCHEDULING: Final = "DeferredPodScheduling"
GANG_SCHEDULING: Final = "GangScheduling"
TOPOLOGY_PLACEMENT_GENERATOR: Final = "TopologyPlacementGenerator"
POD_GROUP_PODS_COUNT: Final = "PodGroupPodsCount"
VOLUME_PLUGINS: Final = ("VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone")
# Default plugins a registry may lack (a test's or a simulation's): left out rather than an error.
_OPTIONAL_DEFAULTS: Final = frozenset(
    {
        DEFAULT_PREEMPTION,
        DYNAMIC_RESOURCES,
        DEFERRED_POD_SCHEDULING,
        GANG_SCHEDULING,
        TOPOLOGY_PLACEMENT_GENERATOR,
        POD_GROUP_PODS_COUNT,
        *VOLUME_PLUGINS,
    }
)

# Upstream's default multiPoint plugins that kemu implements, in upstream's order; (name, weight).
DEFAULT_MULTI_POINT: Final[tuple[tuple[str, int | None], ...]] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    (DEFERRED_POD_SCHEDULING, None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    (DYNAMIC_RESOURCES, None),
    (DEFAULT_PREEMPTION, None),
    ("NodeResourcesBalancedAllocation", 1),
    ("DefaultBinder", None),
    (GANG_SCHEDULING, None),
    (TOPOLOGY_PLACEMENT_GENERATOR, None),
    (POD_GROUP_PODS_COUNT, None),
)


class ConfigError(ValueError):
    """An invalid configuration; the message starts with the YAML path."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path = path


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
    # A weight for every placementScore plugin.
    placement_score_weights: Mapping[str, int] = field(default_factory=dict)

    def args(self, plugin: str) -> Mapping[str, Any]:
        """The plugin's pluginConfig args ({} when it has none)."""
        return self.plugin_config.get(plugin, {})

    def plugin_names(self) -> list[str]:
        """Every plugin the profile runs, each once, in order of first use."""
        names: dict[str, None] = {}
        for point in EXTENSION_POINTS:
            names.update(dict.fromkeys(self.enabled[point]))
        return list(names)


def build_profile(
    m: Mapping[str, Any],
    path: str,
    registry: Registry,
    *,
    default_name: bool,
    default_percentage: int,
) -> Profile:
    check_keys(m, {"schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore"}, path)
    if "schedulerName" in m or not default_name:
        name = as_str(m.get("schedulerName"), f"{path}.schedulerName")
        if not name:
            raise ConfigError(f"{path}.schedulerName", "required value")
    else:
        name = DEFAULT_SCHEDULER_NAME
    percentage = default_percentage
    if m.get("percentageOfNodesToScore") is not None:
        percentage = as_int(m["percentageOfNodesToScore"], f"{path}.percentageOfNodesToScore")
        check_percentage(percentage, f"{path}.percentageOfNodesToScore")

    points = _Points(registry)
    custom = _plugins(m.get("plugins"), f"{path}.plugins", registry, points)
    plugins = _merge_defaults(custom, registry, f"{path}.plugins")
    enabled = _expand(plugins, points, f"{path}.plugins")
    weights = _score_weights(plugins, enabled["score"], points)
    placement_weights = {ref.name: ref.weight or 1 for ref in plugins["placementScore"].enabled}

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
        placement_score_weights={
            name: placement_weights.get(name, 1) for name in enabled["placementScore"]
        },
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
    value: object, path: str, registry: Registry, points: Callable[[str], frozenset[str]]
) -> dict[str, PluginSet]:
    m = as_mapping(value, path) if value is not None else {}
    check_keys(m, set(_PLUGIN_SET_KEYS), path)
    out: dict[str, PluginSet] = {}
    for key in _PLUGIN_SET_KEYS:
        set_path = f"{path}.{key}"
        raw = as_mapping(m[key], set_path) if m.get(key) is not None else {}
        check_keys(raw, {"enabled", "disabled"}, set_path)
        enabled: list[PluginRef] = []
        seen: set[str] = set()
        for j, entry in enumerate(as_list(raw.get("enabled"), f"{set_path}.enabled")):
            entry_path = f"{set_path}.enabled[{j}]"
            e = as_mapping(entry, entry_path)
            check_keys(e, {"name", "weight"}, entry_path)
            name = as_str(e.get("name"), f"{entry_path}.name")
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
                weight = as_int(e["weight"], f"{entry_path}.weight")
                if weight <= 0:
                    raise ConfigError(f"{entry_path}.weight", "must be positive")
            enabled.append(PluginRef(name, weight))
        disabled: list[str] = []
        for j, entry in enumerate(as_list(raw.get("disabled"), f"{set_path}.disabled")):
            entry_path = f"{set_path}.disabled[{j}]"
            e = as_mapping(entry, entry_path)
            check_keys(e, {"name"}, entry_path)
            name = as_str(e.get("name"), f"{entry_path}.name")
            if name != "*" and name not in registry:
                raise ConfigError(f"{entry_path}.name", f"unknown plugin {name!r}")
            disabled.append(name)
        out[key] = PluginSet(tuple(enabled), tuple(disabled))
    return out


def _default_plugins(registry: Registry) -> dict[str, PluginSet]:
    multi = tuple(
        PluginRef(name, weight)
        for name, weight in DEFAULT_MULTI_POINT
        if name not in _OPTIONAL_DEFAULTS or name in registry
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


def _plugin_config(value: object, path: str, registry: Registry) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for i, entry in enumerate(as_list(value, path)):
        entry_path = f"{path}[{i}]"
        e = as_mapping(entry, entry_path)
        check_keys(e, {"name", "args"}, entry_path)
        name = as_str(e.get("name"), f"{entry_path}.name")
        if name not in registry:
            raise ConfigError(f"{entry_path}.name", f"unknown plugin {name!r}")
        if name in out:
            raise ConfigError(f"{entry_path}.name", f"repeated config for plugin {name!r}")
        args = as_mapping(e["args"], f"{entry_path}.args") if e.get("args") is not None else {}
        out[name] = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
    return out


def check_common_queue_sort(profiles: list[Profile]) -> None:
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


def check_keys(m: Mapping[str, object], allowed: set[str] | frozenset[str], path: str) -> None:
    for key in m:
        if key not in allowed:
            where = f"{path}.{key}" if path else str(key)
            raise ConfigError(where, "unknown field")


def as_mapping(value: object, path: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"must be a mapping, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise ConfigError(path, f"keys must be strings, got {key!r}")
    return value


def as_list(value: object, path: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ConfigError(path, f"must be a list, got {type(value).__name__}")
    return value


def as_str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise ConfigError(path, "must be a string" if value is not None else "required value")
    return value


def as_int(value: object, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"must be an integer, got {value!r}")
    return value


def check_percentage(value: int, path: str) -> None:
    if not 0 <= value <= 100:
        raise ConfigError(path, f"not in valid range [0-100], got {value}")


def default_profile(registry: Registry | None = None) -> Profile:
    """The `default-scheduler` profile with no configuration (the in-tree registry by
    default): what the scheduler runs without --config, and what simulations start from."""
    return build_profile(
        {},
        "profiles[0]",
        registry if registry is not None else in_tree_registry(),
        default_name=True,
        default_percentage=0,
    )
