"""CLUSTER.yaml: the cluster a replay starts (README "Traces", docs/traces.md).

    nodes:                           # static node pools; each is one kubelet process of
    - name: pool                     #   `count` hollow nodes pool-0 .. pool-(count-1)
      count: 3
      capacity: {cpu: "4", memory: 8Gi, pods: "110"}
      labels: {zone: a}
      taints: [{key: dedicated, value: batch, effect: NoSchedule}]
      kubeletArgs: ["--node-lease-duration-seconds", "40"]   # further kubelet flags
    nodeGroups:                      # the cloud's format (cloud/config.py); turns the
    - name: pool-a                   #   cluster autoscaler on
      minSize: 0
      maxSize: 5
      template: {capacity: {cpu: "2", memory: 4Gi, pods: "20"}}
    versions: {scheduler: "1.36"}    # --emulated-version per component
    featureGates:                    # --feature-gates per component
      scheduler: {SchedulerAsyncPreemption: false}
    schedulerConfig:                 # an inline KubeSchedulerConfiguration
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: KubeSchedulerConfiguration
      profiles: [...]
    autoscaler: {scan-interval: 10s, expander: least-waste}   # its flags
    args:                            # further flags of the control plane's components
      controllermanager: ["--node-monitor-grace-period", "50s"]
    seed: 1                          # the scheduler's and the autoscaler's --seed (default 1)
    latency:                         # the API path's (kemu.machinery.latency's syntax),
      apiserver: 200ms               #   in virtual seconds: every component's calls, and
      etcd: uniform:1ms-3ms          #   the apiserver's round trips to etcd; drawn from seed

Components are apiserver, scheduler, controllermanager, kubelet, cloud and autoscaler.
Everything is checked before anything starts, and an error names the key
(`nodes[0].count: must be >= 1`): versions and gates against kemu's table at that version,
the scheduler config with the scheduler's own reader, the node groups with the cloud's,
`kubeletArgs` and `args` with the component's own flag parser (a flag the replay sets itself,
such as --server, is refused).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, NotRequired, TypedDict

import yaml

from apiserver import options as apiserver_options
from cloud.config import ConfigError, parse_config
from controllermanager import options as controllermanager_options
from kemu.component.featuregate import FeatureGateError, FeatureGates
from kemu.component.options import FlagError, check_flags
from kemu.component.version import DEFAULT_VERSION, parse_emulated_version
from kemu.machinery.errors import Invalid
from kemu.machinery.latency import (
    NO_LATENCY,
    NO_PATH_LATENCY,
    SYNTAX,
    Latency,
    LatencyError,
    PathLatency,
)
from kemu.machinery.quantity import parse_quantity
from kemu.machinery.validation.meta import validate_labels
from kemu.scheduling.config import parse_config as parse_scheduler_config
from kubelet import options as kubelet_options
from scheduler import options as scheduler_options

COMPONENTS: Final = (
    "apiserver",
    "scheduler",
    "controllermanager",
    "kubelet",
    "cloud",
    "autoscaler",
)
_KEYS: Final = frozenset(
    {
        "nodes",
        "nodeGroups",
        "versions",
        "featureGates",
        "schedulerConfig",
        "autoscaler",
        "args",
        "seed",
        "latency",
    }
)
_POOL_KEYS: Final = frozenset({"name", "count", "capacity", "labels", "taints", "kubeletArgs"})
_ARGS_COMPONENTS: Final = ("apiserver", "scheduler", "controllermanager")
"""The components `args` is for (the kubelets' are each pool's kubeletArgs, the cloud's
instances' their template's, the autoscaler's its own key)."""
_LATENCY: Final = ("--apiserver-latency", "--apiserver-latency-seed")
"""Set from `latency` (and `seed`)."""
_SET_BY_REPLAY: Final = {
    "apiserver": (
        "--etcd-servers",
        "--port",
        "--rest-port",
        "--metrics-port",
        "--clock",
        "--clock-start",
        "--etcd-latency",
        "--etcd-latency-seed",
    ),
    "scheduler": ("--server", "--config", "--metrics-port", "--clock", "--seed", *_LATENCY),
    "controllermanager": ("--server", "--metrics-port", "--clock", *_LATENCY),
    "kubelet": (
        "--server",
        "--nodes",
        "--node-name",
        "--node-name-prefix",
        "--node-control",
        "--provider-id",
        "--capacity",
        "--node-labels",
        "--register-with-taints",
        "--root-dir",
        "--metrics-port",
        "--clock",
        *_LATENCY,
    ),
}
FLAG_TABLES: Final[Mapping[str, Callable[[], argparse.ArgumentParser]]] = {
    "apiserver": apiserver_options.build_parser,
    "scheduler": scheduler_options.build_parser,
    "controllermanager": controllermanager_options.build_parser,
    "kubelet": kubelet_options.build_parser,
}
"""The flag table of each component whose further flags CLUSTER.yaml may give (`args`,
`kubeletArgs`): they are checked with it before anything starts."""
_TAINT_EFFECTS: Final = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DEFAULT_CAPACITY: Final = {"cpu": "4", "memory": "8Gi", "pods": "110"}


class PoolDocument(TypedDict):
    """One of CLUSTER.yaml's `nodes`, as the trace's writers (synthetic, openb) build it."""

    name: str
    count: int
    capacity: dict[str, str]
    labels: NotRequired[dict[str, str]]
    kubeletArgs: NotRequired[list[str]]


class NodeGroupTemplate(TypedDict):
    capacity: dict[str, str]
    kubeletArgs: NotRequired[list[str]]


class NodeGroupDocument(TypedDict):
    """One of CLUSTER.yaml's `nodeGroups` (the cloud's format, cloud/config.py)."""

    name: str
    minSize: int
    maxSize: int
    template: NodeGroupTemplate


class ClusterDocument(TypedDict, total=False):
    """CLUSTER.yaml as the trace's writers build it (the keys they set; `parse` reads all)."""

    nodes: list[PoolDocument]
    nodeGroups: list[NodeGroupDocument]
    autoscaler: dict[str, str]
    args: dict[str, list[str]]


class ClusterConfigError(ValueError):
    """CLUSTER.yaml is malformed; the message names the key."""


@dataclass(frozen=True)
class NodePool:
    name: str
    count: int
    capacity: Mapping[str, str]
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[str, ...] = ()
    """As the kubelet's --register-with-taints takes them: key=value:Effect."""
    kubelet_args: tuple[str, ...] = ()

    def node_names(self) -> list[str]:
        return [f"{self.name}-{i}" for i in range(self.count)]


@dataclass(frozen=True)
class ClusterConfig:
    nodes: tuple[NodePool, ...] = ()
    node_groups: str | None = None
    """The cloud's config (YAML text), None without an autoscaler."""
    versions: Mapping[str, str] = field(default_factory=dict)
    feature_gates: Mapping[str, Mapping[str, bool]] = field(default_factory=dict)
    scheduler_config: str | None = None
    """The KubeSchedulerConfiguration (YAML text)."""
    autoscaler_flags: tuple[str, ...] = ()
    seed: int = 1
    args: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Further flags of the apiserver, the scheduler and the controller-manager."""
    latency: PathLatency = NO_PATH_LATENCY
    """`latency`: the API path's, drawn from `seed`."""

    @property
    def autoscaling(self) -> bool:
        return self.node_groups is not None

    def node_count(self) -> int:
        return sum(p.count for p in self.nodes)


def parse(text: str) -> ClusterConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ClusterConfigError(f"not YAML: {e}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ClusterConfigError("expected a mapping at the top")
    _check_keys(data, _KEYS, "")
    pools = tuple(_pool(p, f"nodes[{i}]") for i, p in enumerate(_list(data.get("nodes"), "nodes")))
    names = [p.name for p in pools]
    for name in names:
        if names.count(name) > 1:
            raise ClusterConfigError(f"nodes: the pool name {name!r} is used twice")
    versions = _versions(data.get("versions"))
    gates = _gates(data.get("featureGates"), versions)
    node_groups = None
    if data.get("nodeGroups") is not None:
        node_groups = yaml.safe_dump({"nodeGroups": data["nodeGroups"]}, sort_keys=False)
        try:
            parse_config(node_groups)
        except ConfigError as e:
            raise ClusterConfigError(str(e)) from None
    scheduler_config = None
    if data.get("schedulerConfig") is not None:
        scheduler_config = yaml.safe_dump(data["schedulerConfig"], sort_keys=False)
        try:
            parse_scheduler_config(scheduler_config)
        except ValueError as e:
            raise ClusterConfigError(f"schedulerConfig: {e}") from None
    flags = _flags(data.get("autoscaler"))
    if flags and node_groups is None:
        raise ClusterConfigError("autoscaler: its flags need nodeGroups (no autoscaler runs)")
    seed = data.get("seed", 1)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ClusterConfigError("seed: expected an integer >= 0")
    args = {
        component: _args(value, f"args.{name}", component)
        for name, value in _mapping(data.get("args"), "args").items()
        if (component := _component(name, f"args.{name}", _ARGS_COMPONENTS))
    }
    latency = _latency(data.get("latency"), seed)
    return ClusterConfig(
        pools, node_groups, versions, gates, scheduler_config, flags, seed, args, latency
    )


def _latency(value: object, seed: int) -> PathLatency:
    parts = _mapping(value, "latency")
    _check_keys(parts, frozenset({"apiserver", "etcd"}), "latency")
    out = {}
    for key, text in parts.items():
        if not isinstance(text, str):
            raise ClusterConfigError(f"latency.{key}: expected a latency such as 200ms ({SYNTAX})")
        try:
            out[key] = Latency.parse(text)
        except LatencyError as e:
            raise ClusterConfigError(f"latency.{key}: {e}") from None
    return PathLatency(out.get("apiserver", NO_LATENCY), out.get("etcd", NO_LATENCY), seed)


def _check_keys(data: Mapping[str, object], known: frozenset[str], path: str) -> None:
    for key in data:
        if key not in known:
            where = f"{path}.{key}" if path else str(key)
            raise ClusterConfigError(f"{where}: unknown key (known: {', '.join(sorted(known))})")


def _list(value: object, path: str) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ClusterConfigError(f"{path}: expected a list")
    return value


def _mapping(value: object, path: str) -> dict[str, object]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ClusterConfigError(f"{path}: expected a mapping")
    return {str(k): v for k, v in value.items()}


def _pool(value: object, path: str) -> NodePool:
    data = _mapping(value, path)
    _check_keys(data, _POOL_KEYS, path)
    name = data.get("name")
    if not isinstance(name, str) or not name:
        raise ClusterConfigError(f"{path}.name: required (a DNS label)")
    count = data.get("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ClusterConfigError(f"{path}.count: must be an integer >= 1")
    capacity = {k: str(v) for k, v in _mapping(data.get("capacity"), f"{path}.capacity").items()}
    for resource, quantity in capacity.items():
        try:
            parse_quantity(quantity, f"{path}.capacity.{resource}")
        except Invalid as e:
            raise ClusterConfigError(str(e)) from None
    labels = {k: str(v) for k, v in _mapping(data.get("labels"), f"{path}.labels").items()}
    errors = validate_labels(labels, f"{path}.labels")
    if errors:
        raise ClusterConfigError(str(errors[0]))
    taints = []
    for i, t in enumerate(_list(data.get("taints"), f"{path}.taints")):
        tpath = f"{path}.taints[{i}]"
        taint = _mapping(t, tpath)
        _check_keys(taint, frozenset({"key", "value", "effect"}), tpath)
        if not taint.get("key"):
            raise ClusterConfigError(f"{tpath}.key: required")
        if taint.get("effect") not in _TAINT_EFFECTS:
            raise ClusterConfigError(f"{tpath}.effect: one of {', '.join(_TAINT_EFFECTS)}")
        value = f"={taint['value']}" if taint.get("value") else ""
        taints.append(f"{taint['key']}{value}:{taint['effect']}")
    kubelet_args = _args(data.get("kubeletArgs"), f"{path}.kubeletArgs", "kubelet")
    return NodePool(
        name, count, {**DEFAULT_CAPACITY, **capacity}, labels, tuple(taints), kubelet_args
    )


def _component(name: str, path: str, known: tuple[str, ...] = COMPONENTS) -> str:
    normal = name.replace("-", "").lower()
    if normal not in known:
        raise ClusterConfigError(f"{path}: unknown component (known: {', '.join(known)})")
    return normal


def _args(value: object, path: str, component: str) -> tuple[str, ...]:
    """A component's further flags, checked by its own parser."""
    args = [a for a in _list(value, path) if isinstance(a, str)]
    if len(args) != len(_list(value, path)):
        raise ClusterConfigError(f"{path}: expected a list of strings")
    for i, arg in enumerate(args):
        flag = arg.split("=", 1)[0]
        if flag in _SET_BY_REPLAY[component]:
            raise ClusterConfigError(f"{path}[{i}]: {flag} is set by the replay")
        if flag in ("--emulated-version", "--feature-gates"):
            raise ClusterConfigError(f"{path}[{i}]: {flag}: set it in versions or featureGates")
    if args:
        _check_flags(component, args, path)
    return tuple(args)


def _check_flags(component: str, args: list[str], path: str) -> None:
    try:
        parsed = check_flags(FLAG_TABLES[component](), args)
    except FlagError as e:
        raise ClusterConfigError(f"{path}: {e}") from None
    if component == "kubelet":
        try:
            kubelet_options.settings_from_args(parsed, "v0.0.0")
        except ValueError as e:
            raise ClusterConfigError(f"{path}: {e}") from None


def _versions(value: object) -> dict[str, str]:
    out = {}
    for name, version in _mapping(value, "versions").items():
        path = f"versions.{name}"
        component = _component(name, path)
        try:
            parse_emulated_version(str(version))
        except ValueError as e:
            raise ClusterConfigError(f"{path}: {e}") from None
        out[component] = str(version)
    return out


def _gates(value: object, versions: Mapping[str, str]) -> dict[str, dict[str, bool]]:
    out: dict[str, dict[str, bool]] = {}
    for name, gates in _mapping(value, "featureGates").items():
        path = f"featureGates.{name}"
        component = _component(name, path)
        settings = {}
        for gate, on in _mapping(gates, path).items():
            if not isinstance(on, bool):
                raise ClusterConfigError(f"{path}.{gate}: expected true or false")
            settings[gate] = on
        text = versions.get(component)
        version = parse_emulated_version(text) if text else DEFAULT_VERSION
        try:
            FeatureGates.for_version(version, settings)
        except FeatureGateError as e:
            raise ClusterConfigError(f"{path}: {e}") from None
        out[component] = settings
    return out


def _flags(value: object) -> tuple[str, ...]:
    flags: list[str] = []
    for name, flag_value in _mapping(value, "autoscaler").items():
        flag = name if name.startswith("--") else f"--{name}"
        if flag in ("--server", "--cloud-provider-address", "--metrics-port", "--clock"):
            raise ClusterConfigError(f"autoscaler.{name}: set by the replay")
        if isinstance(flag_value, bool):
            if flag_value:
                flags.append(flag)
            continue
        flags += [flag, str(flag_value)]
    return tuple(flags)


def fitted(peak_requests: Mapping[str, int], pods: int) -> ClusterConfig:
    """A cluster sized to a trace without CLUSTER.yaml: static nodes of DEFAULT_CAPACITY,
    enough of them for the trace's peak requests (`peak_requests`: milli-cpu, memory bytes,
    as kemu.machinery.resources counts them; `pods`: the peak pod count) with a tenth more
    for what packing leaves unused, at least one; no autoscaler."""
    cpu = parse_quantity(DEFAULT_CAPACITY["cpu"]).milli_value()
    memory = parse_quantity(DEFAULT_CAPACITY["memory"]).value()
    per_node_pods = int(DEFAULT_CAPACITY["pods"])
    needed = max(
        1,
        -(-peak_requests.get("cpu", 0) // cpu),
        -(-peak_requests.get("memory", 0) // memory),
        -(-pods // per_node_pods),
    )
    return ClusterConfig(nodes=(NodePool("node", -(-needed * 11 // 10), dict(DEFAULT_CAPACITY)),))
