"""Per kind, what the apiserver does to an object before it stores it: upstream's REST
strategies (pkg/registry/<group>/<kind>/strategy.go, PrepareForCreate and PrepareForUpdate;
defaulting first, as the decoder's SetDefaults_* do). The registry looks a kind's strategy up
(`strategy_for`) instead of testing the object's type; a kind without one of its own gets the
default (defaults only). Adding a kind that needs rules is one strategy here and one entry of
`STRATEGIES` (docs/apiserver.md, "Adding a kind").

Pure: a strategy reads only the object, the stored one on update, the time and the
`StrategyOptions` the apiserver resolved once from its feature gates. What needs the store
(a Service's addresses, admission against PriorityClasses) stays in the apiserver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from google.protobuf.message import Message

from kemu.api.v1 import types_pb2
from kemu.machinery import apps, batch
from kemu.machinery import namespaces as ns_rules
from kemu.machinery.defaults import set_defaults
from kemu.machinery.kinds import Kind
from kemu.machinery.pod_strategy import apply_scheduling_gated_condition, merge_match_label_keys
from kemu.machinery.services import default_service, keep_allocated


@dataclass(frozen=True, slots=True)
class StrategyOptions:
    """The feature gates the strategies read, resolved once by the apiserver."""

    match_label_keys_merge: bool = True
    """MatchLabelKeysInPodTopologySpreadSelectorMerge: a new pod's spread constraints get
    their matchLabelKeys merged into the selector."""
    pod_scheduling_readiness: bool = True
    """PodSchedulingReadiness (GA 1.30): before it, spec.schedulingGates is dropped."""
    node_pod_preemption_policy: bool = True
    """InPlacePodVerticalScalingSchedulerPreemption: without it a Node's
    spec.podPreemptionPolicy is dropped (a disabled field), unless it was stored before."""


class Strategy:
    """The default strategy: defaults only; the status a client sends on create is kept."""

    reset_status_on_create: bool = False
    """The status of a new object is the server's to write, not the client's."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        set_defaults(obj)
        if self.reset_status_on_create:
            obj.ClearField("status")

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        """After defaulting (the registry defaults every decoded object)."""


class _StatusReset(Strategy):
    reset_status_on_create = True


class PodStrategy(Strategy):
    """pkg/registry/core/pod/strategy.go: a new pod's status is reset to Pending."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        set_defaults(obj)
        assert isinstance(obj, types_pb2.Pod)
        obj.ClearField("status")
        obj.status.phase = "Pending"
        if opts.match_label_keys_merge:
            merge_match_label_keys(obj)
        if opts.pod_scheduling_readiness:
            apply_scheduling_gated_condition(obj, now)
        else:
            obj.spec.ClearField("scheduling_gates")


class JobStrategy(_StatusReset):
    """pkg/registry/batch/job/strategy.go: a generated selector unless manualSelector."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.Job)
        if not batch.manual_selector(obj):
            batch.generate_selector(obj)


class DaemonSetStrategy(_StatusReset):
    """pkg/registry/apps/daemonset/strategy.go: templateGeneration and its bump."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.DaemonSet)
        apps.prepare_daemon_set_for_create(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.DaemonSet) and isinstance(old, types_pb2.DaemonSet)
        apps.prepare_daemon_set_for_update(new, old)


class NodeStrategy(Strategy):
    """pkg/registry/core/node/strategy.go: dropDisabledFields."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        set_defaults(obj)
        assert isinstance(obj, types_pb2.Node)
        if not opts.node_pod_preemption_policy:
            obj.spec.ClearField("pod_preemption_policy")

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.Node) and isinstance(old, types_pb2.Node)
        if not opts.node_pod_preemption_policy and not old.spec.HasField("pod_preemption_policy"):
            new.spec.ClearField("pod_preemption_policy")


class NamespaceStrategy(Strategy):
    """pkg/registry/core/namespace/strategy.go: the kubernetes finalizer and phase."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        set_defaults(obj)
        assert isinstance(obj, types_pb2.Namespace)
        ns_rules.prepare_for_create(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.Namespace) and isinstance(old, types_pb2.Namespace)
        ns_rules.prepare_for_update(new, old)


class ServiceStrategy(_StatusReset):
    """pkg/registry/core/service/strategy.go (defaults; an update keeps the allocated
    addresses). A new Service's addresses are allocated by the apiserver after this."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.Service)
        default_service(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.Service) and isinstance(old, types_pb2.Service)
        default_service(new)
        keep_allocated(new, old)


DEFAULT_STRATEGY: Final = Strategy()

STRATEGIES: Final[Mapping[str, Strategy]] = MappingProxyType(
    {
        "Pod": PodStrategy(),
        "PodDisruptionBudget": _StatusReset(),
        "ReplicaSet": _StatusReset(),
        "Deployment": _StatusReset(),
        "Job": JobStrategy(),
        "DaemonSet": DaemonSetStrategy(),
        "Node": NodeStrategy(),
        "Namespace": NamespaceStrategy(),
        "Service": ServiceStrategy(),
    }
)
"""Kind name -> its strategy; every other kind has DEFAULT_STRATEGY."""


def strategy_for(kind: Kind) -> Strategy:
    return STRATEGIES.get(kind.kind, DEFAULT_STRATEGY)
