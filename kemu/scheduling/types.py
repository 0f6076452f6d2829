"""The scheduler's view of pods and nodes (upstream framework/types.go).

`PodInfo` wraps a pod with what every cycle needs precomputed: its resource requests (with the
in-place resize rules of component-helpers/resource) and its parsed affinity terms. `NodeInfo`
aggregates a node's pods: requested resources, pod count, pods with (anti-)affinity, the host
ports in use. Protobuf objects inside are never mutated: they are the informer's.

Resources are exact integers: milli-CPU, bytes, counts.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, NamedTuple

from kemu.api.v1 import types_pb2
from kemu.machinery.keys import object_key
from kemu.machinery.labels import NOTHING, Selector, selector_from_label_selector
from kemu.machinery.quantity import to_int
from kemu.machinery.resources import (
    SCHEDULER_DEFAULTS,
    PodResourcesOptions,
    scheduler_pod_requests,
)

CPU: Final = "cpu"
MEMORY: Final = "memory"
EPHEMERAL_STORAGE: Final = "ephemeral-storage"
PODS: Final = "pods"

_generation = itertools.count(1)


def next_generation() -> int:
    """A process-wide increasing number; a NodeInfo gets a new one on every change."""
    return next(_generation)


@dataclass(slots=True)
class Resource:
    """An amount of every resource (upstream framework.Resource)."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    @classmethod
    def from_list(cls, resources: Mapping[str, str]) -> Resource:
        """From a Kubernetes ResourceList (quantity strings; assumed valid, as admitted)."""
        r = cls()
        for name, text in resources.items():
            r.set(name, to_int(name, text))
        return r

    @classmethod
    def from_amounts(cls, amounts: Mapping[str, int]) -> Resource:
        """From exact integers by resource name (kemu.machinery.resources)."""
        r = cls()
        for name, value in amounts.items():
            r.set(name, value)
        return r

    def get(self, name: str) -> int:
        if name == CPU:
            return self.milli_cpu
        if name == MEMORY:
            return self.memory
        if name == EPHEMERAL_STORAGE:
            return self.ephemeral_storage
        if name == PODS:
            return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def set(self, name: str, value: int) -> None:
        if name == CPU:
            self.milli_cpu = value
        elif name == MEMORY:
            self.memory = value
        elif name == EPHEMERAL_STORAGE:
            self.ephemeral_storage = value
        elif name == PODS:
            self.allowed_pod_number = value
        else:
            self.scalar[name] = value

    def add(self, other: Resource) -> None:
        self.milli_cpu += other.milli_cpu
        self.memory += other.memory
        self.ephemeral_storage += other.ephemeral_storage
        self.allowed_pod_number += other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) + v

    def sub(self, other: Resource) -> None:
        self.milli_cpu -= other.milli_cpu
        self.memory -= other.memory
        self.ephemeral_storage -= other.ephemeral_storage
        self.allowed_pod_number -= other.allowed_pod_number
        for k, v in other.scalar.items():
            self.scalar[k] = self.scalar.get(k, 0) - v

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        self.allowed_pod_number = max(self.allowed_pod_number, other.allowed_pod_number)
        for k, v in other.scalar.items():
            self.scalar[k] = max(self.scalar.get(k, 0), v)

    def clone(self) -> Resource:
        return Resource(
            self.milli_cpu,
            self.memory,
            self.ephemeral_storage,
            self.allowed_pod_number,
            dict(self.scalar),
        )

    def names(self) -> Iterable[str]:
        """Resource names with a non-zero amount."""
        if self.milli_cpu:
            yield CPU
        if self.memory:
            yield MEMORY
        if self.ephemeral_storage:
            yield EPHEMERAL_STORAGE
        yield from (k for k, v in self.scalar.items() if v)


class _ReadOnlyScalars(dict[str, int]):
    """The extended resources of a SharedResource: a dict (reads as fast) that refuses writes."""

    __slots__ = ()

    def _read_only(self, *args: object, **kwargs: object) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]


class SharedResource(Resource):
    """A Resource that may be shared (by every PodInfo of equal requests, `pod_requests`):
    read-only. Its fields read as a Resource's; a write, `set`, `add`, `sub` or `set_max`
    raises TypeError (`clone()` gives a Resource to change). Equal to a Resource of the same
    amounts."""

    __slots__ = ()

    @staticmethod
    def of(r: Resource) -> SharedResource:
        """A read-only copy of `r`."""
        out = object.__new__(SharedResource)
        init = object.__setattr__
        init(out, "milli_cpu", r.milli_cpu)
        init(out, "memory", r.memory)
        init(out, "ephemeral_storage", r.ephemeral_storage)
        init(out, "allowed_pod_number", r.allowed_pod_number)
        init(out, "scalar", _ReadOnlyScalars(r.scalar))
        return out

    def __setattr__(self, name: str, value: object) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    def set(self, name: str, value: int) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    def add(self, other: Resource) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    def sub(self, other: Resource) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    def set_max(self, other: Resource) -> None:
        raise TypeError("a SharedResource is read-only: clone() it first")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Resource):
            return NotImplemented
        return (
            self.milli_cpu == other.milli_cpu
            and self.memory == other.memory
            and self.ephemeral_storage == other.ephemeral_storage
            and self.allowed_pod_number == other.allowed_pod_number
            and dict(self.scalar) == dict(other.scalar)
        )

    __hash__ = None  # type: ignore[assignment]


# ---------------------------------------------------------------- pod requests


def pod_requests(
    pod: types_pb2.Pod, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
) -> tuple[SharedResource, SharedResource]:
    """(requests, non-zero requests) of a pod as read-only Resources, shared with every pod of
    equal requests (`clone()` to change one): what
    `kemu.machinery.resources.scheduler_pod_requests` computes (the in-place resize rules of
    component-helpers resource.PodRequests, staging/src/k8s.io/component-helpers/resource/helpers.go, sidecars, overhead, the scoring defaults). The non-zero Resource holds cpu
    and memory only, as upstream's NonZeroRequested: nothing else is scored with defaults.
    `counting`: the scheduler's counting rules (its gates and version's, resolved once)."""
    requests, non_zero = scheduler_pod_requests(pod, counting)
    key = (tuple(requests.items()), non_zero.get(CPU, 0), non_zero.get(MEMORY, 0))
    shared = _shared_requests.get(key)
    if shared is None:
        if len(_shared_requests) >= _SHARED_REQUESTS_MAX:
            _shared_requests.clear()
        shared = _shared_requests[key] = (
            SharedResource.of(Resource.from_amounts(requests)),
            SharedResource.of(Resource(key[1], key[2])),
        )
    return shared


# Pods of one template have equal requests: their PodInfos share one pair of Resources
# (read only, as every PodInfo's are), which saves two Resources and their dicts per bound pod.
# Keyed by the requests in the order scheduler_pod_requests gives them; bounded, cleared when
# full (a cleared entry only stops being shared).
_SHARED_REQUESTS_MAX: Final = 4096
_shared_requests: dict[
    tuple[tuple[tuple[str, int], ...], int, int], tuple[SharedResource, SharedResource]
] = {}


# ---------------------------------------------------------------- affinity terms


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm (upstream framework.AffinityTerm).

    A pod is in the term's scope when its namespace is one of `namespaces` or its namespace's
    labels match `namespace_selector` (NOTHING without a namespaceSelector, EVERYTHING for an
    empty one); with neither, `namespaces` is the owner's own namespace. An existing pod's term
    is matched against the incoming pod's namespace labels; an incoming pod's term has its
    selector unrolled into `namespaces` first (`with_namespaces`, InterPodAffinity's
    mergeAffinityTermNamespacesIfNotEmpty), so matching it needs no namespace labels.
    """

    selector: Selector
    namespaces: frozenset[str]
    topology_key: str
    namespace_selector: Selector = NOTHING

    @property
    def all_namespaces(self) -> bool:
        """An empty namespaceSelector: every namespace is in scope."""
        return self.namespace_selector.empty

    def in_scope(self, namespace: str, ns_labels: Mapping[str, str] | None) -> bool:
        return namespace in self.namespaces or self.namespace_selector.matches(ns_labels or {})

    def matches(self, pod: types_pb2.Pod, ns_labels: Mapping[str, str] | None = None) -> bool:
        if not self.in_scope(pod.metadata.namespace, ns_labels):
            return False
        return self.selector.matches(pod.metadata.labels)

    def with_namespaces(self, selected: Iterable[str]) -> AffinityTerm:
        """The term with a non-empty namespaceSelector replaced by the namespaces it selects."""
        if self.namespace_selector.empty or self.namespace_selector.nothing:
            return self
        return AffinityTerm(
            self.selector, self.namespaces | frozenset(selected), self.topology_key, NOTHING
        )


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    term: AffinityTerm
    weight: int


def _affinity_term(owner: types_pb2.Pod, t: types_pb2.PodAffinityTerm) -> AffinityTerm:
    namespaces = frozenset(t.namespaces)
    namespace_selector = NOTHING
    if t.HasField("namespace_selector"):
        namespace_selector = selector_from_label_selector(t.namespace_selector)
    elif not namespaces:
        namespaces = frozenset({owner.metadata.namespace})
    selector = (
        selector_from_label_selector(t.label_selector) if t.HasField("label_selector") else NOTHING
    )
    return AffinityTerm(selector, namespaces, t.topology_key, namespace_selector)


# ---------------------------------------------------------------- host ports

DEFAULT_BIND_ALL_HOST_IP: Final = "0.0.0.0"
PROTOCOL_TCP: Final = "TCP"

# (hostIP, protocol, hostPort) with upstream's sanitizing: "" is 0.0.0.0, no protocol is TCP.
HostPort = tuple[str, str, int]


def get_host_ports(pod: types_pb2.Pod) -> tuple[HostPort, ...]:
    """The host ports a pod holds while it runs (upstream schedutil.GetHostPorts): ports with a
    hostPort of its containers and of its restartable (sidecar) init containers. Runs for every
    PodInfo: a pod without ports costs one read of each container's ports."""
    spec = pod.spec
    out: list[HostPort] = []
    if spec.init_containers:
        for c in spec.init_containers:
            if c.ports and c.restart_policy == "Always":
                out += _container_host_ports(c)
    for c in spec.containers:
        if c.ports:
            out += _container_host_ports(c)
    return tuple(out) if out else ()


def _container_host_ports(c: types_pb2.Container) -> list[HostPort]:
    return [
        (p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or PROTOCOL_TCP, p.host_port)
        for p in c.ports
        if p.host_port > 0
    ]


class HostPortInfo:
    """The host ports in use on a node (upstream framework.HostPortInfo), counted per pod so
    that removing one of two pods that claim a port (an assumed and a nominated one) keeps it
    in use. A port bound to 0.0.0.0 conflicts with the same protocol/port on every IP."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        # (protocol, port) -> {hostIP: number of pods}
        self._ports: dict[tuple[str, int], dict[str, int]] = {}

    def add(self, hp: HostPort) -> None:
        ip, protocol, port = hp
        by_ip = self._ports.setdefault((protocol, port), {})
        by_ip[ip] = by_ip.get(ip, 0) + 1

    def remove(self, hp: HostPort) -> None:
        ip, protocol, port = hp
        by_ip = self._ports.get((protocol, port))
        if by_ip is None or ip not in by_ip:
            return
        by_ip[ip] -= 1
        if not by_ip[ip]:
            del by_ip[ip]
            if not by_ip:
                del self._ports[(protocol, port)]

    def check_conflict(self, hp: HostPort) -> bool:
        ip, protocol, port = hp
        by_ip = self._ports.get((protocol, port))
        if not by_ip:
            return False
        return ip == DEFAULT_BIND_ALL_HOST_IP or ip in by_ip or DEFAULT_BIND_ALL_HOST_IP in by_ip

    def clone(self) -> HostPortInfo:
        c = HostPortInfo()
        if self._ports:
            c._ports = {k: dict(v) for k, v in self._ports.items()}
        return c

    def __len__(self) -> int:
        return sum(len(v) for v in self._ports.values())

    def __bool__(self) -> bool:
        return bool(self._ports)


class MetaView(NamedTuple):
    """What label-selecting plugins read of an existing pod (PodInfo.meta_view); read only:
    `labels` may be shared."""

    namespace: str
    labels: dict[str, str]
    terminating: bool


_NO_LABELS: Final[dict[str, str]] = {}


class PodInfo:
    """A pod with what scheduling needs precomputed. Never mutate `pod`."""

    __slots__ = (
        "_meta_view",
        "_start_time_ns",
        "host_ports",
        "non_zero_requests",
        "pod",
        "preferred_affinity_terms",
        "preferred_anti_affinity_terms",
        "priority",
        "requests",
        "required_affinity_terms",
        "required_anti_affinity_terms",
        "uid",
    )

    def __init__(
        self, pod: types_pb2.Pod, counting: PodResourcesOptions = SCHEDULER_DEFAULTS
    ) -> None:
        """`counting`, how the pod's requests are counted (the InPlacePodVerticalScaling gate
        and the emulated version's aggregation rule), is resolved once by the scheduler and
        passed as it is: this runs for every pod event."""
        self.pod = pod
        # Read once: queue ordering, nominated-pod filtering and preemption ask for it often.
        self.priority = pod_priority(pod)
        # Read in every NodeInfo.remove_pod and preemption's victim selection.
        self.uid: str = pod.metadata.uid
        self._start_time_ns: int | None = -1  # not read yet
        self.requests, self.non_zero_requests = pod_requests(pod, counting)
        self.host_ports = get_host_ports(pod)
        self._meta_view: MetaView | None = None
        aff = pod.spec.affinity
        pa, paa = aff.pod_affinity, aff.pod_anti_affinity
        # Tuples: a pod without terms holds the empty tuple (one object for all), not 4 lists.
        self.required_affinity_terms = tuple(
            _affinity_term(pod, t) for t in pa.required_during_scheduling_ignored_during_execution
        )
        self.required_anti_affinity_terms = tuple(
            _affinity_term(pod, t) for t in paa.required_during_scheduling_ignored_during_execution
        )
        self.preferred_affinity_terms = tuple(
            WeightedAffinityTerm(_affinity_term(pod, w.pod_affinity_term), w.weight)
            for w in pa.preferred_during_scheduling_ignored_during_execution
        )
        self.preferred_anti_affinity_terms = tuple(
            WeightedAffinityTerm(_affinity_term(pod, w.pod_affinity_term), w.weight)
            for w in paa.preferred_during_scheduling_ignored_during_execution
        )

    @property
    def key(self) -> str:
        return object_key(self.pod)

    def meta_view(self) -> MetaView:
        """The pod's namespace, labels (a plain dict) and whether it is terminating, read from
        the protobuf on first use only: PodTopologySpread counts every pod of the cluster in a
        cycle, and a dict lookup is ~8x cheaper than a protobuf map's."""
        view = self._meta_view
        if view is None:
            meta = self.pod.metadata
            labels = meta.labels
            # One string per namespace and one empty dict for all pods without labels, not
            # one of each per bound pod (the view is read only).
            view = self._meta_view = MetaView(
                sys.intern(meta.namespace),
                dict(labels) if labels else _NO_LABELS,
                meta.HasField("deletion_timestamp"),
            )
        return view

    def start_time_ns(self) -> int | None:
        """status.startTime in nanoseconds, None when the pod has not started (read once:
        preemption orders the victims of every candidate node by it)."""
        t = self._start_time_ns
        if t == -1:
            status = self.pod.status
            t = self._start_time_ns = (
                int(status.start_time.ToNanoseconds()) if status.HasField("start_time") else None
            )
        return t

    def has_affinity(self) -> bool:
        return bool(
            self.required_affinity_terms
            or self.required_anti_affinity_terms
            or self.preferred_affinity_terms
            or self.preferred_anti_affinity_terms
        )

    def __repr__(self) -> str:
        return f"PodInfo({self.key})"


def pod_priority(pod: types_pb2.Pod) -> int:
    """spec.priority, or 0 when unset (component-helpers PodPriority)."""
    return pod.spec.priority if pod.spec.HasField("priority") else 0


# ---------------------------------------------------------------- nodes


class NodeInfo:
    """A node and the pods on it (assigned or assumed). `clone()` for what-if simulations.

    `pods` holds each uid at most once, in upstream's order: appended as added, and a removed
    pod's place taken by the last one (upstream NodeInfo.RemovePod, pkg/scheduler/framework/
    types.go). Where each uid stands is indexed on the first removal, so a removal costs the
    same on a node of 30,000 pods as on one of 3 (a bound pod's confirmation in the cache is a
    removal of its assumed self: a scan of the list made that the cost of a pod on a crowded
    node)."""

    __slots__ = (
        "_index",
        "allocatable",
        "generation",
        "labels",
        "name",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "requested",
        "taints",
        "unschedulable",
        "used_ports",
    )

    def __init__(self, node: types_pb2.Node | None = None) -> None:
        self.node: types_pb2.Node | None = None
        # Copied out of the Node once: per-node plugin code reads these thousands of times per
        # cycle, and reading protobuf fields costs far more than reading attributes.
        self.name = ""
        self.labels: dict[str, str] = {}
        self.taints: tuple[types_pb2.Taint, ...] = ()
        self.unschedulable = False
        self.pods: list[PodInfo] = []
        self.pods_with_affinity: list[PodInfo] = []
        self.pods_with_required_anti_affinity: list[PodInfo] = []
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.used_ports = HostPortInfo()
        self.generation = next_generation()
        self._index: dict[str, int] | None = None
        """uid -> position in `pods`, built by the first remove_pod (None until then)."""
        if node is not None:
            self.set_node(node)

    def set_node(self, node: types_pb2.Node) -> None:
        self.node = node
        self.name = node.metadata.name
        self.labels = dict(node.metadata.labels)
        self.taints = tuple(node.spec.taints)
        self.unschedulable = node.spec.unschedulable
        self.allocatable = Resource.from_list(node.status.allocatable)
        self.generation = next_generation()

    def remove_node(self) -> None:
        self.node = None
        self.generation = next_generation()

    def add_pod_info(self, pi: PodInfo) -> None:
        if self._index is not None:
            self._index[pi.uid] = len(self.pods)
        self.pods.append(pi)
        if pi.has_affinity():
            self.pods_with_affinity.append(pi)
        if pi.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity.append(pi)
        self.requested.add(pi.requests)
        self.non_zero_requested.add(pi.non_zero_requests)
        for hp in pi.host_ports:
            self.used_ports.add(hp)
        self.generation = next_generation()

    def add_pod(self, pod: types_pb2.Pod) -> None:
        self.add_pod_info(PodInfo(pod))

    def remove_pod(self, pod: types_pb2.Pod) -> bool:
        """Removes the pod with `pod`'s uid (the last pod takes its place); False when it is
        not here."""
        uid = pod.metadata.uid
        pi = self._take(uid)
        if pi is None:
            return False
        # Only add_pod_info fills these lists, with the pods that qualify.
        if pi.has_affinity():
            self.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid != uid]
        if pi.required_anti_affinity_terms:
            self.pods_with_required_anti_affinity = [
                p for p in self.pods_with_required_anti_affinity if p.uid != uid
            ]
        self._uncount(pi)
        self.generation = next_generation()
        return True

    def _take(self, uid: str) -> PodInfo | None:
        """Takes the pod `uid` out of `pods`, the last pod into its place (None: not here)."""
        index = self._index
        if index is None:
            index = self._index = {pi.uid: i for i, pi in enumerate(self.pods)}
        i = index.pop(uid, None)
        if i is None:
            return None
        pods = self.pods
        pi = pods[i]
        last = pods.pop()
        if last is not pi:
            pods[i] = last
            index[last.uid] = i
        return pi

    def _uncount(self, pi: PodInfo) -> None:
        self.requested.sub(pi.requests)
        self.non_zero_requested.sub(pi.non_zero_requests)
        for hp in pi.host_ports:
            self.used_ports.remove(hp)

    def _same_node(self) -> NodeInfo:
        """A new NodeInfo sharing this one's node-level fields (node, name, labels, taints,
        unschedulable: replaced, never changed in place); clone and clone_without fill the
        rest."""
        c = NodeInfo.__new__(NodeInfo)
        c.node = self.node
        c.name = self.name
        c.labels = self.labels
        c.taints = self.taints
        c.unschedulable = self.unschedulable
        c._index = None
        return c

    def clone(self) -> NodeInfo:
        c = self._same_node()
        c.pods = list(self.pods)
        c.pods_with_affinity = list(self.pods_with_affinity)
        c.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        c.requested = self.requested.clone()
        c.non_zero_requested = self.non_zero_requested.clone()
        c.allocatable = self.allocatable  # never changed in place (set_node replaces it)
        c.used_ports = self.used_ports.clone()
        c.generation = self.generation
        return c

    def clone_without(self, removed: Iterable[PodInfo]) -> NodeInfo:
        """`clone()` followed by `remove_pod` of each of `removed` (pods of this node, each at
        most once), the affinity lists filtered once: preemption's dry run removes every
        lower-priority pod of each node it tries. Raises KeyError naming a pod that is not on
        the node."""
        c = self.clone()
        gone: set[str] = set()
        for pi in removed:
            if c._take(pi.uid) is None:
                raise KeyError(f"pod {pi.key} not found on node {self.name}")
            gone.add(pi.uid)
            c._uncount(pi)
        if not gone:
            return c
        if self.pods_with_affinity:
            c.pods_with_affinity = [p for p in self.pods_with_affinity if p.uid not in gone]
        if self.pods_with_required_anti_affinity:
            c.pods_with_required_anti_affinity = [
                p for p in self.pods_with_required_anti_affinity if p.uid not in gone
            ]
        c.generation = next_generation()
        return c

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)})"


# ---------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class NodeScore:
    name: str
    score: int


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """The nodes a PreFilter plugin allows (None in `node_names` means all)."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PreemptionDetail:
    """What the scheduler's decision record tells of a preemption (kemu's; upstream's
    PostFilterResult has no such fields): how many candidate nodes the dry run found, which of
    pickOneNodeForPreemption's criteria chose the node among them, per victim (in the
    result's order) the PodDisruptionBudgets its removal breaks, and the lower-priority pods
    nominated to the node, whose nominations preemption clears."""

    candidates: int
    criterion: str
    victim_pdbs: tuple[tuple[str, ...], ...] = ()
    cleared_nominations: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    """What PostFilter decided: the node the pod is nominated to ("" clears it), or None for
    'leave the nomination alone' (upstream NominatingInfo with ModeOverride vs ModeNoop).
    `victims`, `pdb_violations` and `detail` (kemu's, for the scheduler's decision record;
    upstream's PostFilterResult has no such fields): the pods preemption chose on that node,
    how many of them a PodDisruptionBudget protects, and the rest of the story."""

    nominated_node_name: str | None = None
    victims: tuple[types_pb2.Pod, ...] = field(default=(), compare=False)
    pdb_violations: int = field(default=0, compare=False)
    detail: PreemptionDetail | None = field(default=None, compare=False)


MAX_NODE_SCORE: Final = 100
MIN_NODE_SCORE: Final = 0
