"""The shape of a standard test cluster, and its start: what `@pytest.mark.kemu(...)` asks of
the `kemu_cluster` fixture (kemu.testing.pytest_plugin), usable without pytest too.

    spec = ClusterSpec.from_options(nodes=3, version="1.34", gates={"SchedulerAsyncPreemption": True})
    with Cluster(root, clock=spec.clock, latency=spec.latency) as cluster:
        start_cluster(cluster, spec)

`start_cluster` starts etcd, an apiserver, a scheduler, a controller-manager and one kubelet
per node, every component at `version` with `gates`, and waits until each is ready (each
waits for what it depends on, so they start together).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, TypedDict

from kemu.machinery.latency import NO_PATH_LATENCY, Latency, LatencyError, PathLatency
from kemu.machinery.virtual_time import ClockMode
from kemu.testing.cluster import DEFAULT_CAPACITY, Cluster

SCHEDULER_CONFIG_FILE: Final = "kemu-scheduler-config.yaml"


@dataclass(frozen=True)
class ClusterSpec:
    nodes: tuple[str, ...] = ("node-0",)
    """The kubelets' node names (`nodes=3` is node-0, node-1, node-2)."""
    version: str | None = None
    """Every component's --emulated-version (None: kemu's default, the newest)."""
    gates: Mapping[str, bool] = field(default_factory=dict)
    """Every component's --feature-gates."""
    scheduler_config: str | None = None
    """A KubeSchedulerConfiguration: its YAML text, or the path of a file holding it."""
    clock: ClockMode = ClockMode.REAL
    """The cluster's clock: "real", or "virtual" (at rate 1; docs/virtual-time.md)."""
    capacity: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CAPACITY))
    """Every node's capacity (cpu, memory, pods, extended resources)."""
    labels: Mapping[str, str] = field(default_factory=dict)
    """Every node's labels (besides the kubelet's own, kubernetes.io/hostname...)."""
    runtime_config: Mapping[str, str] = field(default_factory=dict)
    """The apiserver's --runtime-config (kind's `runtimeConfig`): as upstream, a gate does not
    enable its API group version, so a test of 1.37's pod groups asks for
    `{"scheduling.k8s.io/v1beta1": "true"}` besides `gates={"GenericWorkload": True}`
    (`{"api/all": "true"}` enables every version, as upstream's scheduler_perf does)."""
    latency: PathLatency = NO_PATH_LATENCY
    """The API path's latency (the marker's `apiserver_latency="200ms"`, `etcd_latency=...`
    and `latency_seed=N`; kemu.machinery.latency's syntax): in virtual time a call's answer
    comes that many virtual seconds later."""

    @classmethod
    def from_options(cls, **options: object) -> ClusterSpec:
        """A spec from the marker's keyword arguments; ValueError naming a key that is not
        one, or a value of the wrong kind."""
        known = {
            "nodes",
            "version",
            "gates",
            "scheduler_config",
            "clock",
            "capacity",
            "labels",
            "runtime_config",
            "apiserver_latency",
            "etcd_latency",
            "latency_seed",
        }
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(
                f"kemu: unknown option {unknown[0]!r} (known: {', '.join(sorted(known))})"
            )
        nodes = _nodes(options.get("nodes", 1))
        version = options.get("version")
        if version is not None and not isinstance(version, str):
            raise ValueError(f"kemu: version must be a string such as '1.34', not {version!r}")
        gates = options.get("gates", {})
        if not isinstance(gates, Mapping) or not all(
            isinstance(k, str) and isinstance(v, bool) for k, v in gates.items()
        ):
            raise ValueError(f"kemu: gates must map gate names to True or False, not {gates!r}")
        config = options.get("scheduler_config")
        if isinstance(config, Path):
            config = str(config)
        if config is not None and not isinstance(config, str):
            raise ValueError("kemu: scheduler_config must be YAML text or a path")
        try:
            clock = ClockMode(options.get("clock", ClockMode.REAL.value))
        except ValueError:
            modes = ", ".join(m.value for m in ClockMode)
            raise ValueError(
                f"kemu: clock must be one of {modes}, not {options.get('clock')!r}"
            ) from None
        capacity = _strings(options.get("capacity", DEFAULT_CAPACITY), "capacity")
        labels = _strings(options.get("labels", {}), "labels")
        runtime_config = _strings(options.get("runtime_config", {}), "runtime_config")
        latency = PathLatency(
            _latency(options.get("apiserver_latency", "0"), "apiserver_latency"),
            _latency(options.get("etcd_latency", "0"), "etcd_latency"),
            _seed(options.get("latency_seed", 0)),
        )
        return cls(
            nodes, version, dict(gates), config, clock, capacity, labels, runtime_config, latency
        )


def _latency(value: object, key: str) -> Latency:
    if not isinstance(value, str):
        raise ValueError(f"kemu: {key} must be a latency such as '200ms', not {value!r}")
    try:
        return Latency.parse(value)
    except LatencyError as e:
        raise ValueError(f"kemu: {key}: {e}") from None


def _seed(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"kemu: latency_seed must be an integer, not {value!r}")
    return value


def _strings(value: object, key: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"kemu: {key} must map names to strings, not {value!r}")
    return {str(k): str(v) for k, v in value.items()}


def _nodes(value: object) -> tuple[str, ...]:
    if isinstance(value, bool) or not isinstance(value, (int, Sequence)) or isinstance(value, str):
        raise ValueError(f"kemu: nodes must be a count or a list of names, not {value!r}")
    if isinstance(value, int):
        if value < 0:
            raise ValueError(f"kemu: nodes must be 0 or more, not {value}")
        return tuple(f"node-{i}" for i in range(value))
    names = tuple(str(n) for n in value)
    if len(set(names)) != len(names):
        raise ValueError(f"kemu: nodes names a node twice: {list(names)}")
    return names


class _Versioned(TypedDict):
    """What every component of a spec's cluster is started with."""

    emulated_version: str | None
    feature_gates: Mapping[str, bool]


def start_cluster(cluster: Cluster, spec: ClusterSpec) -> None:
    """Starts the spec's components in `cluster` (made with `clock=spec.clock` and
    `latency=spec.latency`) and waits until every one is ready."""
    if cluster.clock is not spec.clock:
        raise ValueError(
            f"the cluster runs on the {cluster.clock.value} clock, the spec asks {spec.clock.value}"
        )
    if cluster.latency != spec.latency:
        raise ValueError(
            f"the cluster's latency is {cluster.latency.describe()}, the spec asks "
            f"{spec.latency.describe()}"
        )
    common = _Versioned(emulated_version=spec.version, feature_gates=spec.gates)
    cluster.start_etcd()
    cluster.start_apiserver(runtime_config=spec.runtime_config, **common)
    config: str | Path | None = None
    if spec.scheduler_config is not None:
        path = Path(spec.scheduler_config)
        if "\n" not in spec.scheduler_config and path.is_file():
            config = path
        else:
            config = cluster.root / SCHEDULER_CONFIG_FILE
            config.write_text(spec.scheduler_config)
    cluster.start_scheduler(config=config, wait=False, **common)
    cluster.start_controllermanager(wait=False, **common)
    labels = ["--node-labels", ",".join(f"{k}={v}" for k, v in spec.labels.items())]
    for node in spec.nodes:
        cluster.start_kubelet(
            node,
            capacity=spec.capacity,
            extra_args=labels if spec.labels else (),
            wait=False,
            **common,
        )
    for name in cluster.processes:
        cluster.wait_ready(name)
