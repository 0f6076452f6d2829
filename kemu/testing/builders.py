"""Fluent builders for API objects in tests.

    pod = make_pod("p").namespace("ns").req(cpu="500m", memory="1Gi").priority(10).obj()
    node = make_node("n1").capacity(cpu="4", memory="8Gi", pods="110").taint("k", "v").obj()

Each setter returns the builder; `obj()` returns a fresh message every call, so one builder can
stamp out several objects. Resource and label keyword arguments cover plain names; keys such as
`nvidia.com/gpu` or `app.kubernetes.io/name` go in the positional mapping
(`.req({"nvidia.com/gpu": "1"}, cpu="1")`, `.labels({"app.kubernetes.io/name": "x"})`).
A resource keyword with an underscore means a hyphen (`ephemeral_storage=`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final, Self, TypeVar

from google.protobuf.internal.containers import RepeatedCompositeFieldContainer
from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery.kinds import kind_of

DEFAULT_NAMESPACE: Final = "default"
DEFAULT_IMAGE: Final = "registry.k8s.io/pause:3.10"

_M = TypeVar("_M", bound=Message)


def _resources(
    mapping: Mapping[str, str] | None, kwargs: Mapping[str, str | int]
) -> dict[str, str]:
    out = dict(mapping or {})
    out.update({k.replace("_", "-"): str(v) for k, v in kwargs.items()})
    return out


def _labels(mapping: Mapping[str, str] | None, kwargs: Mapping[str, str]) -> dict[str, str]:
    out = dict(mapping or {})
    out.update(kwargs)
    return out


def _int_or_string(value: int | str) -> types_pb2.IntOrString:
    if isinstance(value, int):
        return types_pb2.IntOrString(int_val=value)
    return types_pb2.IntOrString(str_val=value)


# ---------------------------------------------------------------------- pods


class PodBuilder:
    """A Pod in namespace "default" with one container "c"; resource setters apply to the
    current container, which `container(name)` selects (adding it if missing)."""

    def __init__(self, name: str) -> None:
        self._pod = types_pb2.Pod()
        self._pod.metadata.name = name
        self._pod.metadata.namespace = DEFAULT_NAMESPACE
        self._current = self._pod.spec.containers.add(name="c", image=DEFAULT_IMAGE)

    def obj(self) -> types_pb2.Pod:
        pod = types_pb2.Pod()
        pod.CopyFrom(self._pod)
        return pod

    # metadata
    def namespace(self, namespace: str) -> Self:
        self._pod.metadata.namespace = namespace
        return self

    def uid(self, uid: str) -> Self:
        self._pod.metadata.uid = uid
        return self

    def labels(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        self._pod.metadata.labels.update(_labels(labels, kwargs))
        return self

    def label(self, key: str, value: str) -> Self:
        self._pod.metadata.labels[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._pod.metadata.annotations[key] = value
        return self

    def owner(self, kind: str, name: str, uid: str = "", *, controller: bool = True) -> Self:
        api_version = "apps/v1" if kind in ("ReplicaSet", "StatefulSet", "DaemonSet") else "v1"
        self._pod.metadata.owner_references.add(
            api_version=api_version, kind=kind, name=name, uid=uid, controller=controller
        )
        return self

    # containers and resources
    def container(self, name: str, image: str = DEFAULT_IMAGE) -> Self:
        """Select container `name` for the following resource setters, adding it if missing."""
        return self._select(self._pod.spec.containers, name, image)

    def init_container(
        self, name: str, image: str = DEFAULT_IMAGE, *, restart_policy: str | None = None
    ) -> Self:
        """Select init container `name`; restart_policy="Always" makes it a sidecar."""
        self._select(self._pod.spec.init_containers, name, image)
        if restart_policy is not None:
            self._current.restart_policy = restart_policy
        return self

    def req(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        """Requests of the current container."""
        self._current.resources.requests.update(_resources(resources, kwargs))
        return self

    def lim(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        """Limits of the current container."""
        self._current.resources.limits.update(_resources(resources, kwargs))
        return self

    def port(
        self,
        container_port: int,
        host_port: int = 0,
        *,
        protocol: str = "TCP",
        host_ip: str = "",
        name: str = "",
    ) -> Self:
        """A port of the current container (a hostPort makes the NodePorts plugin place it)."""
        self._current.ports.add(
            name=name,
            container_port=container_port,
            host_port=host_port,
            protocol=protocol,
            host_ip=host_ip,
        )
        return self

    def resize_policy(self, resource: str, restart_policy: str = "NotRequired") -> Self:
        self._current.resize_policy.add(resource_name=resource, restart_policy=restart_policy)
        return self

    def overhead(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        self._pod.spec.overhead.update(_resources(resources, kwargs))
        return self

    def pod_req(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        """Pod-level requests (spec.resources, KEP-2837)."""
        self._pod.spec.resources.requests.update(_resources(resources, kwargs))
        return self

    def pod_lim(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        """Pod-level limits (spec.resources, KEP-2837)."""
        self._pod.spec.resources.limits.update(_resources(resources, kwargs))
        return self

    # scheduling
    def priority(self, value: int) -> Self:
        self._pod.spec.priority = value
        return self

    def priority_class(self, name: str) -> Self:
        self._pod.spec.priority_class_name = name
        return self

    def preemption_policy(self, policy: str) -> Self:
        """PreemptLowerPriority or Never."""
        self._pod.spec.preemption_policy = policy
        return self

    def scheduler_name(self, name: str) -> Self:
        self._pod.spec.scheduler_name = name
        return self

    def pod_group(self, name: str) -> Self:
        """spec.schedulingGroup.podGroupName (1.36+)."""
        self._pod.spec.scheduling_group.pod_group_name = name
        return self

    def workload_ref(self, workload: str, pod_group: str, replica_key: str = "") -> Self:
        """spec.workloadRef (1.35)."""
        ref = self._pod.spec.workload_ref
        ref.name, ref.pod_group, ref.pod_group_replica_key = workload, pod_group, replica_key
        return self

    def node(self, node_name: str) -> Self:
        """spec.nodeName: the pod is bound."""
        self._pod.spec.node_name = node_name
        return self

    def nominated(self, node_name: str) -> Self:
        """status.nominatedNodeName."""
        self._pod.status.nominated_node_name = node_name
        return self

    def node_selector(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        self._pod.spec.node_selector.update(_labels(labels, kwargs))
        return self

    def node_affinity_in(self, key: str, values: list[str]) -> Self:
        """A required node affinity term `key In values` (terms are ORed, as upstream)."""
        required = self._pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        term = required.node_selector_terms.add()
        term.match_expressions.add(key=key, operator="In", values=values)
        return self

    def node_affinity_preferred(self, key: str, values: list[str], weight: int = 1) -> Self:
        """A preferred node affinity term `key In values` of `weight` (1-100): it only scores."""
        node_affinity = self._pod.spec.affinity.node_affinity
        term = node_affinity.preferred_during_scheduling_ignored_during_execution.add(weight=weight)
        term.preference.match_expressions.add(key=key, operator="In", values=values)
        return self

    def toleration(
        self,
        key: str = "",
        value: str = "",
        effect: str = "",
        operator: str = "Equal",
        *,
        seconds: int | None = None,
    ) -> Self:
        t = self._pod.spec.tolerations.add(key=key, operator=operator, value=value, effect=effect)
        if seconds is not None:
            t.toleration_seconds = seconds
        return self

    def affinity(
        self, label_selector: Mapping[str, str], topology_key: str, *, weight: int | None = None
    ) -> Self:
        """An inter-pod affinity term; required unless a `weight` makes it preferred."""
        aff = self._pod.spec.affinity.pod_affinity
        self._pod_term(aff, label_selector, topology_key, weight)
        return self

    def anti_affinity(
        self, label_selector: Mapping[str, str], topology_key: str, *, weight: int | None = None
    ) -> Self:
        """An inter-pod anti-affinity term; required unless a `weight` makes it preferred."""
        aff = self._pod.spec.affinity.pod_anti_affinity
        self._pod_term(aff, label_selector, topology_key, weight)
        return self

    def spread(
        self,
        max_skew: int,
        topology_key: str,
        when: str = "DoNotSchedule",
        selector: Mapping[str, str] | None = None,
        *,
        exists: Sequence[str] = (),
        min_domains: int | None = None,
        node_affinity_policy: str | None = None,
        node_taints_policy: str | None = None,
        match_label_keys: Sequence[str] = (),
    ) -> Self:
        """A topologySpreadConstraint whose labelSelector has `selector` as matchLabels and an
        Exists expression per key of `exists` (no labelSelector when both are empty)."""
        add_spread_constraint(
            self._pod.spec,
            max_skew,
            topology_key,
            when,
            selector,
            exists=exists,
            min_domains=min_domains,
            node_affinity_policy=node_affinity_policy,
            node_taints_policy=node_taints_policy,
            match_label_keys=match_label_keys,
        )
        return self

    def gate(self, name: str) -> Self:
        """A scheduling gate."""
        self._pod.spec.scheduling_gates.add(name=name)
        return self

    def grace(self, seconds: int) -> Self:
        """spec.terminationGracePeriodSeconds."""
        self._pod.spec.termination_grace_period_seconds = seconds
        return self

    # status
    def phase(self, phase: str) -> Self:
        self._pod.status.phase = phase
        return self

    def condition(self, type_: str, status: str = "True", reason: str = "") -> Self:
        self._pod.status.conditions.add(type=type_, status=status, reason=reason)
        return self

    # internals
    def _select(
        self, repeated: RepeatedCompositeFieldContainer[types_pb2.Container], name: str, image: str
    ) -> Self:
        for c in repeated:
            if c.name == name:
                self._current = c
                return self
        self._current = repeated.add(name=name, image=image)
        return self

    @staticmethod
    def _pod_term(
        aff: types_pb2.PodAffinity | types_pb2.PodAntiAffinity,
        label_selector: Mapping[str, str],
        topology_key: str,
        weight: int | None,
    ) -> None:
        if weight is None:
            term = aff.required_during_scheduling_ignored_during_execution.add()
        else:
            weighted = aff.preferred_during_scheduling_ignored_during_execution.add(weight=weight)
            term = weighted.pod_affinity_term
        term.label_selector.match_labels.update(label_selector)
        term.topology_key = topology_key


def add_spread_constraint(
    spec: types_pb2.PodSpec,
    max_skew: int,
    topology_key: str,
    when: str = "DoNotSchedule",
    selector: Mapping[str, str] | None = None,
    *,
    exists: Sequence[str] = (),
    min_domains: int | None = None,
    node_affinity_policy: str | None = None,
    node_taints_policy: str | None = None,
    match_label_keys: Sequence[str] = (),
) -> None:
    """Appends a topologySpreadConstraint to a pod spec (PodBuilder.spread)."""
    c = spec.topology_spread_constraints.add(
        max_skew=max_skew, topology_key=topology_key, when_unsatisfiable=when
    )
    if selector or exists:
        c.label_selector.match_labels.update(selector or {})
        for key in exists:
            c.label_selector.match_expressions.add(key=key, operator="Exists")
    if min_domains is not None:
        c.min_domains = min_domains
    if node_affinity_policy is not None:
        c.node_affinity_policy = node_affinity_policy
    if node_taints_policy is not None:
        c.node_taints_policy = node_taints_policy
    c.match_label_keys.extend(match_label_keys)


def make_pod(name: str) -> PodBuilder:
    return PodBuilder(name)


# ---------------------------------------------------------------------- nodes


class NodeBuilder:
    """A Node; `obj()` sets status.allocatable to the capacity unless `allocatable` was set.

    Like a node a kubelet registers, it carries the label kubernetes.io/hostname=<name>
    (topology key of per-node (anti-)affinity).
    """

    def __init__(self, name: str) -> None:
        self._node = types_pb2.Node()
        self._node.metadata.name = name
        self._node.metadata.labels["kubernetes.io/hostname"] = name
        self._allocatable_set = False

    def obj(self) -> types_pb2.Node:
        node = types_pb2.Node()
        node.CopyFrom(self._node)
        if not self._allocatable_set:
            node.status.allocatable.clear()
            node.status.allocatable.update(node.status.capacity)
        return node

    def unlabel(self, key: str) -> Self:
        """Drops a label (e.g. kubernetes.io/hostname, which nodes carry by default)."""
        self._node.metadata.labels.pop(key, None)
        return self

    def capacity(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        self._node.status.capacity.update(_resources(resources, kwargs))
        return self

    def allocatable(
        self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int
    ) -> Self:
        self._node.status.allocatable.update(_resources(resources, kwargs))
        self._allocatable_set = True
        return self

    def labels(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        self._node.metadata.labels.update(_labels(labels, kwargs))
        return self

    def label(self, key: str, value: str) -> Self:
        self._node.metadata.labels[key] = value
        return self

    def annotation(self, key: str, value: str) -> Self:
        self._node.metadata.annotations[key] = value
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> Self:
        self._node.spec.taints.add(key=key, value=value, effect=effect)
        return self

    def unschedulable(self, value: bool = True) -> Self:
        self._node.spec.unschedulable = value
        return self

    def condition(self, type_: str, status: str = "True", reason: str = "") -> Self:
        self._node.status.conditions.add(type=type_, status=status, reason=reason)
        return self

    def ready(self, value: bool = True) -> Self:
        """The Ready condition."""
        return self.condition("Ready", "True" if value else "False")

    def disable_resize_preemption(self, *owners: str) -> Self:
        """spec.podPreemptionPolicy.disableResizePreemption (KEP-5836)."""
        self._node.spec.pod_preemption_policy.disable_resize_preemption.extend(owners)
        return self


def make_node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


# ---------------------------------------------------------------------- scheduling, policy


class PriorityClassBuilder:
    def __init__(self, name: str, value: int) -> None:
        self._pc = types_pb2.PriorityClass(value=value)
        self._pc.metadata.name = name

    def obj(self) -> types_pb2.PriorityClass:
        pc = types_pb2.PriorityClass()
        pc.CopyFrom(self._pc)
        return pc

    def global_default(self, value: bool = True) -> Self:
        self._pc.global_default = value
        return self

    def preemption_policy(self, policy: str) -> Self:
        self._pc.preemption_policy = policy
        return self

    def description(self, text: str) -> Self:
        self._pc.description = text
        return self


def make_priority_class(name: str, value: int) -> PriorityClassBuilder:
    return PriorityClassBuilder(name, value)


class PdbBuilder:
    """A PodDisruptionBudget in namespace "default"."""

    def __init__(self, name: str) -> None:
        self._pdb = types_pb2.PodDisruptionBudget()
        self._pdb.metadata.name = name
        self._pdb.metadata.namespace = DEFAULT_NAMESPACE

    def obj(self) -> types_pb2.PodDisruptionBudget:
        pdb = types_pb2.PodDisruptionBudget()
        pdb.CopyFrom(self._pdb)
        return pdb

    def namespace(self, namespace: str) -> Self:
        self._pdb.metadata.namespace = namespace
        return self

    def selector(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        """spec.selector.matchLabels (an empty selector selects every pod of the namespace)."""
        self._pdb.spec.selector.match_labels.update(_labels(labels, kwargs))
        return self

    def min_available(self, value: int | str) -> Self:
        self._pdb.spec.min_available.CopyFrom(_int_or_string(value))
        return self

    def max_unavailable(self, value: int | str) -> Self:
        self._pdb.spec.max_unavailable.CopyFrom(_int_or_string(value))
        return self

    def unhealthy_pod_eviction_policy(self, policy: str) -> Self:
        self._pdb.spec.unhealthy_pod_eviction_policy = policy
        return self


def make_pdb(name: str) -> PdbBuilder:
    return PdbBuilder(name)


# ---------------------------------------------------------------------- owners and finalizers


def owner_reference(
    owner: Message, *, controller: bool | None = None, block_owner_deletion: bool | None = None
) -> types_pb2.OwnerReference:
    """An ownerReference to a stored `owner` (its kind, apiVersion, name and uid)."""
    kind = kind_of(owner)
    meta: types_pb2.ObjectMeta = owner.metadata  # type: ignore[attr-defined]
    ref = types_pb2.OwnerReference(
        api_version=kind.api_version, kind=kind.kind, name=meta.name, uid=meta.uid
    )
    if controller is not None:
        ref.controller = controller
    if block_owner_deletion is not None:
        ref.block_owner_deletion = block_owner_deletion
    return ref


def owned(obj: _M, *refs: types_pb2.OwnerReference, finalizers: Sequence[str] = ()) -> _M:
    """`obj` (modified in place and returned) with ownerReferences and finalizers added."""
    meta: types_pb2.ObjectMeta = obj.metadata  # type: ignore[attr-defined]
    meta.owner_references.extend(refs)
    meta.finalizers.extend(finalizers)
    return obj


def make_lease(name: str, namespace: str = DEFAULT_NAMESPACE) -> types_pb2.Lease:
    """A coordination.k8s.io Lease with no holder: a small object of a kind without status."""
    return types_pb2.Lease(metadata=types_pb2.ObjectMeta(name=name, namespace=namespace))


# ---------------------------------------------------------------------- apps/v1


class _WorkloadBuilder:
    """What ReplicaSet and Deployment builders share: a selector that is also the template's
    labels, and a template with one container "c"."""

    def __init__(self, obj: types_pb2.ReplicaSet | types_pb2.Deployment, name: str) -> None:
        self._obj = obj
        obj.metadata.name = name
        obj.metadata.namespace = DEFAULT_NAMESPACE
        obj.spec.replicas = 1
        obj.spec.selector.match_labels["app"] = name
        obj.spec.template.metadata.labels["app"] = name
        obj.spec.template.spec.containers.add(name="c", image=DEFAULT_IMAGE)
        obj.spec.template.spec.restart_policy = "Always"

    def namespace(self, namespace: str) -> Self:
        self._obj.metadata.namespace = namespace
        return self

    def replicas(self, n: int) -> Self:
        self._obj.spec.replicas = n
        return self

    def selector(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        """spec.selector.matchLabels, and the same labels on the template (replacing "app")."""
        wanted = _labels(labels, kwargs)
        self._obj.spec.selector.match_labels.clear()
        self._obj.spec.selector.match_labels.update(wanted)
        self._obj.spec.template.metadata.labels.clear()
        self._obj.spec.template.metadata.labels.update(wanted)
        return self

    def template_label(self, key: str, value: str) -> Self:
        self._obj.spec.template.metadata.labels[key] = value
        return self

    def template_annotation(self, key: str, value: str) -> Self:
        self._obj.spec.template.metadata.annotations[key] = value
        return self

    def image(self, image: str) -> Self:
        self._obj.spec.template.spec.containers[0].image = image
        return self

    def req(self, resources: Mapping[str, str] | None = None, /, **kwargs: str | int) -> Self:
        self._obj.spec.template.spec.containers[0].resources.requests.update(
            _resources(resources, kwargs)
        )
        return self

    def grace(self, seconds: int) -> Self:
        self._obj.spec.template.spec.termination_grace_period_seconds = seconds
        return self

    def spread(self, max_skew: int, topology_key: str, when: str = "DoNotSchedule") -> Self:
        """A topologySpreadConstraint on the template selecting the workload's own pods."""
        add_spread_constraint(
            self._obj.spec.template.spec,
            max_skew,
            topology_key,
            when,
            dict(self._obj.spec.selector.match_labels),
        )
        return self

    def min_ready_seconds(self, seconds: int) -> Self:
        self._obj.spec.min_ready_seconds = seconds
        return self


class ReplicaSetBuilder(_WorkloadBuilder):
    """A ReplicaSet in namespace "default", 1 replica, selector app=<name>."""

    def __init__(self, name: str) -> None:
        self._rs = types_pb2.ReplicaSet()
        super().__init__(self._rs, name)

    def obj(self) -> types_pb2.ReplicaSet:
        rs = types_pb2.ReplicaSet()
        rs.CopyFrom(self._rs)
        return rs


def make_replica_set(name: str) -> ReplicaSetBuilder:
    return ReplicaSetBuilder(name)


class DeploymentBuilder(_WorkloadBuilder):
    """A Deployment in namespace "default", 1 replica, selector app=<name>, with the apiserver's
    defaults (RollingUpdate 25%/25%, revisionHistoryLimit 10, progressDeadlineSeconds 600) so
    that the fake client, which does no defaulting, holds what the apiserver would."""

    def __init__(self, name: str) -> None:
        self._d = types_pb2.Deployment()
        super().__init__(self._d, name)
        self.rolling_update("25%", "25%")
        self._d.spec.revision_history_limit = 10
        self._d.spec.progress_deadline_seconds = 600

    def obj(self) -> types_pb2.Deployment:
        d = types_pb2.Deployment()
        d.CopyFrom(self._d)
        return d

    def rolling_update(self, max_surge: int | str, max_unavailable: int | str) -> Self:
        strategy = self._d.spec.strategy
        strategy.type = "RollingUpdate"
        strategy.rolling_update.max_surge.CopyFrom(_int_or_string(max_surge))
        strategy.rolling_update.max_unavailable.CopyFrom(_int_or_string(max_unavailable))
        return self

    def recreate(self) -> Self:
        self._d.spec.strategy.type = "Recreate"
        self._d.spec.strategy.ClearField("rolling_update")
        return self

    def revision_history_limit(self, n: int) -> Self:
        self._d.spec.revision_history_limit = n
        return self

    def progress_deadline_seconds(self, seconds: int) -> Self:
        self._d.spec.progress_deadline_seconds = seconds
        return self

    def paused(self, value: bool = True) -> Self:
        self._d.spec.paused = value
        return self


def make_deployment(name: str) -> DeploymentBuilder:
    return DeploymentBuilder(name)


# ---------------------------------------------------------------------- batch/v1 and DaemonSets


class JobBuilder:
    """A Job in namespace "default" with upstream's defaults (completions and parallelism 1,
    backoffLimit 6, NonIndexed, TerminatingOrFailed), template labels app=<name>, one container
    "c" and restartPolicy Never. Without `manual_selector()` the apiserver generates the
    selector; the fake client, which does not, needs `manual_selector()`."""

    def __init__(self, name: str) -> None:
        self._job = types_pb2.Job()
        job = self._job
        job.metadata.name = name
        job.metadata.namespace = DEFAULT_NAMESPACE
        job.spec.completions = 1
        job.spec.parallelism = 1
        job.spec.backoff_limit = 6
        job.spec.completion_mode = "NonIndexed"
        job.spec.suspend = False
        job.spec.pod_replacement_policy = "TerminatingOrFailed"
        job.spec.template.metadata.labels["app"] = name
        job.spec.template.spec.containers.add(name="c", image=DEFAULT_IMAGE)
        job.spec.template.spec.restart_policy = "Never"

    def obj(self) -> types_pb2.Job:
        job = types_pb2.Job()
        job.CopyFrom(self._job)
        return job

    def namespace(self, namespace: str) -> Self:
        self._job.metadata.namespace = namespace
        return self

    def completions(self, n: int | None) -> Self:
        if n is None:
            self._job.spec.ClearField("completions")
        else:
            self._job.spec.completions = n
        return self

    def parallelism(self, n: int) -> Self:
        self._job.spec.parallelism = n
        return self

    def backoff_limit(self, n: int) -> Self:
        self._job.spec.backoff_limit = n
        return self

    def active_deadline_seconds(self, seconds: int) -> Self:
        self._job.spec.active_deadline_seconds = seconds
        return self

    def suspend(self, value: bool = True) -> Self:
        self._job.spec.suspend = value
        return self

    def manual_selector(self) -> Self:
        """spec.manualSelector with selector app=<name> (the template's labels)."""
        spec = self._job.spec
        spec.manual_selector = True
        spec.selector.match_labels.clear()
        spec.selector.match_labels.update(spec.template.metadata.labels)
        return self

    def pod_annotation(self, key: str, value: str) -> Self:
        self._job.spec.template.metadata.annotations[key] = value
        return self

    def run_duration(self, duration: str, exit_code: int = 0) -> Self:
        """The kubelet ends each pod after `duration` with `exit_code` (kemu's annotations)."""
        self.pod_annotation("kubelet.kemu.io/run-duration", duration)
        if exit_code:
            self.pod_annotation("kubelet.kemu.io/exit-code", str(exit_code))
        return self

    def req(self, **resources: str) -> Self:
        self._job.spec.template.spec.containers[0].resources.requests.update(resources)
        return self


def make_job(name: str) -> JobBuilder:
    return JobBuilder(name)


class DaemonSetBuilder:
    """A DaemonSet in namespace "default" with upstream's defaults (RollingUpdate, maxUnavailable
    1, maxSurge 0, revisionHistoryLimit 10), selector and template labels app=<name>, one
    container "c"."""

    def __init__(self, name: str) -> None:
        self._ds = types_pb2.DaemonSet()
        ds = self._ds
        ds.metadata.name = name
        ds.metadata.namespace = DEFAULT_NAMESPACE
        ds.spec.selector.match_labels["app"] = name
        ds.spec.template.metadata.labels["app"] = name
        ds.spec.template.spec.containers.add(name="c", image=DEFAULT_IMAGE)
        ds.spec.template.spec.restart_policy = "Always"
        ds.spec.revision_history_limit = 10
        self.rolling_update(1, 0)

    def obj(self) -> types_pb2.DaemonSet:
        ds = types_pb2.DaemonSet()
        ds.CopyFrom(self._ds)
        return ds

    def namespace(self, namespace: str) -> Self:
        self._ds.metadata.namespace = namespace
        return self

    def rolling_update(self, max_unavailable: int | str, max_surge: int | str = 0) -> Self:
        strategy = self._ds.spec.update_strategy
        strategy.type = "RollingUpdate"
        strategy.rolling_update.max_unavailable.CopyFrom(_int_or_string(max_unavailable))
        strategy.rolling_update.max_surge.CopyFrom(_int_or_string(max_surge))
        return self

    def on_delete(self) -> Self:
        self._ds.spec.update_strategy.type = "OnDelete"
        self._ds.spec.update_strategy.ClearField("rolling_update")
        return self

    def min_ready_seconds(self, seconds: int) -> Self:
        self._ds.spec.min_ready_seconds = seconds
        return self

    def node_selector(self, labels: Mapping[str, str] | None = None, /, **kwargs: str) -> Self:
        self._ds.spec.template.spec.node_selector.update(_labels(labels, kwargs))
        return self

    def toleration(self, key: str, effect: str = "", value: str = "") -> Self:
        op = "Equal" if value else "Exists"
        self._ds.spec.template.spec.tolerations.add(
            key=key, operator=op, value=value, effect=effect
        )
        return self

    def image(self, image: str) -> Self:
        self._ds.spec.template.spec.containers[0].image = image
        return self

    def pod_annotation(self, key: str, value: str) -> Self:
        self._ds.spec.template.metadata.annotations[key] = value
        return self

    def req(self, **resources: str) -> Self:
        self._ds.spec.template.spec.containers[0].resources.requests.update(resources)
        return self


def make_daemon_set(name: str) -> DaemonSetBuilder:
    return DaemonSetBuilder(name)


def make_gang_pod_group(
    name: str, min_count: int, namespace: str = "default"
) -> types_pb2.PodGroup:
    """A PodGroup with a Gang policy of `min_count`."""
    pg = types_pb2.PodGroup()
    pg.metadata.name, pg.metadata.namespace = name, namespace
    pg.spec.scheduling_policy.gang.min_count = min_count
    return pg


def make_gang_workload(
    name: str, pod_groups: Mapping[str, int], namespace: str = "default"
) -> types_pb2.Workload:
    """A Workload whose pod groups (name -> minCount) have Gang policies (1.35's shape, stored as
    podGroupTemplates)."""
    wl = types_pb2.Workload()
    wl.metadata.name, wl.metadata.namespace = name, namespace
    for group, minimum in pod_groups.items():
        template = wl.spec.pod_group_templates.add(name=group)
        template.scheduling_policy.gang.min_count = minimum
    return wl
