"""The workload a chaos run drives while faults happen, and its YAML format.

    nodes:                 # kubelets started for the run (real ones)
      count: 4
      cpu: "4"
      memory: 8Gi
      pods: "110"
    pods:
      total: 200           # pods created over the run
      rate: 5              # creations per second
      cpu: 500m            # each pod's request
      memory: 256Mi
      priorities: [100, 1000, 10000]   # drawn uniformly: preemption when nodes are full
      neverFraction: 0.1   # share with preemptionPolicy Never
      slowPreBind:         # share whose PreBind (SlowPreBind) takes `delay`
        fraction: 0.2
        delay: 2s
      deleteFraction: 0.3  # churn: share deleted again a little after creation
      resizeFraction: 0.1  # share resized in place (requests halved) once running
      shutdown: 1s         # the simulated graceful shutdown of each pod
      lifetime: ""         # the others: deleted this long after creation ("": kept)
    scaling:               # scale-up and scale-down through the cloud and the autoscaler
      waves: 2             # at least this many waves, more while faults go on; 0: no
                           # scaling phase (no cloud, no autoscaler)
      pods: 2              # per wave: pods that each need a new node of the group
      minSize: 1           # the node group's bounds
      maxSize: 3
      cpu: "2"             # each node of the group
      memory: 4Gi
      provisionDelay: 1s   # the cloud's delay before a new instance's kubelet starts

Each wave creates two ReplicaSets in namespace chaos-scale: `pods` more replicas than the
group has nodes (up to maxSize) that take 60% of a group node each (a scale-up) and `pods`
small ones (10%); then the big ones are deleted (the nodes become underused: drains of the
small ones), then the small ones too (empty nodes: scale-down towards minSize).

Every key is optional (defaults below). A wrong key or value is a WorkloadError naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, TypeVar

import yaml

from kemu.machinery.duration import parse_duration
from kemu.machinery.errors import ApiError
from kemu.machinery.resources import amount

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

D = TypeVar("D", bound="DataclassInstance")


class WorkloadError(ValueError):
    """A workload file that does not parse; the message names the field."""


@dataclass(frozen=True)
class Nodes:
    count: int = 4
    cpu: str = "4"
    memory: str = "8Gi"
    pods: str = "110"


@dataclass(frozen=True)
class SlowPreBind:
    fraction: float = 0.2
    delay: str = "2s"


@dataclass(frozen=True)
class Pods:
    total: int = 200
    rate: float = 5.0
    cpu: str = "500m"
    memory: str = "256Mi"
    priorities: tuple[int, ...] = (100, 1000, 10000)
    neverFraction: float = 0.1
    slowPreBind: SlowPreBind = field(default_factory=SlowPreBind)
    deleteFraction: float = 0.3
    resizeFraction: float = 0.1
    shutdown: str = "1s"
    lifetime: str = ""
    """How long a pod the churn leaves lives ("": until the run ends). Bound pods that never
    go fill the nodes with the highest priority in time, and then nothing is bound again."""

    def lifetime_seconds(self) -> float | None:
        return parse_duration(self.lifetime) if self.lifetime else None


@dataclass(frozen=True)
class Scaling:
    waves: int = 0
    pods: int = 2
    minSize: int = 1
    maxSize: int = 3
    cpu: str = "2"
    memory: str = "4Gi"
    provisionDelay: str = "1s"


@dataclass(frozen=True)
class Workload:
    nodes: Nodes = field(default_factory=Nodes)
    pods: Pods = field(default_factory=Pods)
    scaling: Scaling = field(default_factory=Scaling)


def parse_workload(text: str) -> Workload:
    """The workload of a YAML document; WorkloadError naming the field when it is wrong."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise WorkloadError(f"workload: not YAML: {e}") from None
    if doc is None:
        return Workload()
    w = Workload(
        nodes=_section(Nodes, _mapping(doc, "workload"), "nodes"),
        pods=_pods(_mapping(doc, "workload")),
        scaling=_section(Scaling, _mapping(doc, "workload"), "scaling"),
    )
    _validate(w)
    return w


def _mapping(value: object, path: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise WorkloadError(f"{path}: must be a mapping, not {type(value).__name__}")
    return value


def _section(cls: type[D], doc: Mapping[str, object], key: str, path: str = "") -> D:
    where = f"{path}{key}"
    raw = _mapping(doc.get(key) or {}, where)
    names = {f.name: f for f in fields(cls)}
    for k in raw:
        if k not in names:
            raise WorkloadError(f"{where}.{k}: unknown field (known: {', '.join(names)})")
    values: dict[str, object] = {}
    for name, f in names.items():
        if name not in raw or f.name == "slowPreBind":
            continue
        default = f.default
        values[name] = _coerce(raw[name], default, f"{where}.{name}")
    return cls(**values)


def _pods(doc: Mapping[str, object]) -> Pods:
    pods = _section(Pods, doc, "pods")
    raw = _mapping(doc.get("pods") or {}, "pods")
    if "slowPreBind" in raw:
        spb = _section(SlowPreBind, raw, "slowPreBind", "pods.")
        pods = Pods(**{**{f.name: getattr(pods, f.name) for f in fields(Pods)}, "slowPreBind": spb})
    return pods


def _coerce(value: object, default: object, path: str) -> object:
    if isinstance(default, bool):
        raise AssertionError("no boolean fields")
    if isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise WorkloadError(f"{path}: must be an integer, not {value!r}")
        return value
    if isinstance(default, float):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise WorkloadError(f"{path}: must be a number, not {value!r}")
        return float(value)
    if isinstance(default, tuple):
        if not isinstance(value, list) or not value:
            raise WorkloadError(f"{path}: must be a non-empty list of integers, not {value!r}")
        for i, item in enumerate(value):
            if not isinstance(item, int) or isinstance(item, bool):
                raise WorkloadError(f"{path}[{i}]: must be an integer, not {item!r}")
        return tuple(value)
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise WorkloadError(f"{path}: must be a string, not {value!r}")
    return str(value)


def _validate(w: Workload) -> None:
    checks: list[tuple[str, bool, str]] = [
        ("nodes.count", w.nodes.count >= 1, "must be at least 1"),
        ("pods.total", w.pods.total >= 0, "must be >= 0"),
        ("pods.rate", w.pods.rate > 0, "must be > 0"),
    ]
    for name in ("neverFraction", "deleteFraction", "resizeFraction"):
        value = getattr(w.pods, name)
        checks.append((f"pods.{name}", 0.0 <= value <= 1.0, "must be in [0, 1]"))
    spb = w.pods.slowPreBind.fraction
    checks.append(("pods.slowPreBind.fraction", 0.0 <= spb <= 1.0, "must be in [0, 1]"))
    sc = w.scaling
    checks += [
        ("scaling.waves", sc.waves >= 0, "must be >= 0"),
        ("scaling.pods", sc.pods >= 1, "must be at least 1"),
        ("scaling.minSize", sc.minSize >= 0, "must be >= 0"),
        ("scaling.maxSize", sc.maxSize >= max(sc.minSize, 1), "must be >= minSize and >= 1"),
    ]
    for path, ok, what in checks:
        if not ok:
            raise WorkloadError(f"{path}: {what}")
    for path, name, text in (
        ("nodes.cpu", "cpu", w.nodes.cpu),
        ("nodes.memory", "memory", w.nodes.memory),
        ("nodes.pods", "pods", w.nodes.pods),
        ("pods.cpu", "cpu", w.pods.cpu),
        ("pods.memory", "memory", w.pods.memory),
        ("scaling.cpu", "cpu", sc.cpu),
        ("scaling.memory", "memory", sc.memory),
    ):
        try:
            amount(name, text)
        except (ValueError, ApiError) as e:
            raise WorkloadError(f"{path}: {e}") from None
    for path, text in (
        ("pods.shutdown", w.pods.shutdown),
        ("pods.lifetime", w.pods.lifetime or "0s"),
        ("pods.slowPreBind.delay", w.pods.slowPreBind.delay),
        ("scaling.provisionDelay", sc.provisionDelay),
    ):
        try:
            parse_duration(text)
        except (ValueError, ApiError) as e:
            raise WorkloadError(f"{path}: {e}") from None
