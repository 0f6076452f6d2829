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
from kemu.machinery import apps, batch, certificates, dra, storage
from kemu.machinery import namespaces as ns_rules
from kemu.machinery.apiextensions import crd, custom
from kemu.machinery.convert import timestamp
from kemu.machinery.defaults import set_defaults
from kemu.machinery.dra import (
    DEFAULT_DRA_RULES,
    DraRules,
    default_allocation,
    default_claim_spec,
    drop_disabled_claim_spec_fields,
    drop_disabled_claim_status_fields,
    drop_disabled_class_fields,
    drop_disabled_slice_fields,
)
from kemu.machinery.errors import Invalid
from kemu.machinery.kinds import Kind
from kemu.machinery.pod_strategy import (
    apply_scheduling_gated_condition,
    default_pod_level_resources,
    drop_disabled_pod_level_resources,
    drop_disabled_pod_status_fields,
    merge_match_label_keys,
)
from kemu.machinery.podgroups import (
    DEFAULT_RULES,
    PodGroupRules,
    default_composite_pod_group,
    default_pod_group,
    drop_disabled_composite_pod_group_fields,
    drop_disabled_pod_group_fields,
    drop_disabled_pod_group_status_fields,
    drop_disabled_pod_scheduling_group,
    drop_disabled_workload_fields,
)
from kemu.machinery.qos import compute_qos_class
from kemu.machinery.services import default_service, keep_allocated
from kemu.machinery.update_strategy import (
    apply_status_update_metadata,
    backfill_qos_class,
    bumps_generation,
)


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
    pod_observed_generation: bool = True
    """PodObservedGenerationTracking: without it a pod status write's observedGenerations are
    dropped unless the stored pod uses them."""
    pod_host_ips: bool = True
    """PodHostIPs (KEP-2681): without it a pod status write's hostIPs are dropped unless the
    stored pod has some."""
    pod_level_resources: bool = True
    """PodLevelResources: without it a pod's spec.resources is dropped unless the stored pod
    uses it; with it the pod-level requests and limits decide the QoS class."""
    pod_groups: PodGroupRules = DEFAULT_RULES
    """The Workload API at the emulated version with its gates (kemu.machinery.podgroups):
    the fields of a Workload, a PodGroup and a pod's group reference that exist and are
    enabled."""
    job_scheduling: bool = True
    """WorkloadWithJob at 1.37 or later (Job.spec.scheduling exists from 1.37): without it a
    Job's spec.scheduling is dropped unless the stored Job uses it."""
    dra: DraRules = DEFAULT_DRA_RULES
    """resource.k8s.io's gated fields (kemu.machinery.dra)."""


class Strategy:
    """The default strategy: defaults only; the status a client sends on create is kept."""

    reset_status_on_create: bool = False
    """The status of a new object is the server's to write, not the client's."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        set_defaults(obj)
        if self.reset_status_on_create:
            obj.ClearField("status")

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        """The kind's own rules for an update (after defaulting: the registry defaults every
        decoded object); `before_update` applies them with the rules every kind shares."""

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        """What a status update of `old` stores (upstream's <kind>StatusStrategy
        PrepareForUpdate): the stored object with the sent status and the metadata a status
        update may change for the kind; `sent` is only read."""
        result = _copy(old)
        copy_field(result, sent, "status")
        apply_status_update_metadata(result, sent)
        return result


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
        _pod_level_resources(obj, None, opts)
        drop_disabled_pod_scheduling_group(obj.spec, None, opts.pod_groups)
        dra.drop_disabled_pod_fields(obj.spec, None, opts.dra)
        # podStrategy.PrepareForCreate: the QoS class, pod-level resources deciding with their
        # gate. Upstream's quantities were parsed when the request was decoded; here one that
        # does not parse leaves the class empty, for validation to refuse the pod by its field.
        try:
            obj.status.qos_class = compute_qos_class(
                obj, pod_level_resources=opts.pod_level_resources
            )
        except Invalid:
            pass

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        """podStrategy.PrepareForUpdate's dropDisabledPodFields."""
        assert isinstance(new, types_pb2.Pod) and isinstance(old, types_pb2.Pod)
        _pod_level_resources(new, old, opts)
        drop_disabled_pod_scheduling_group(new.spec, old.spec, opts.pod_groups)
        dra.drop_disabled_pod_fields(new.spec, old.spec, opts.dra)

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        """podStatusStrategy.PrepareForUpdate: dropDisabledPodStatusFields and the QoS class
        backfilled when the request leaves it empty."""
        result = super().prepare_for_status_update(sent, old, opts, now)
        assert isinstance(result, types_pb2.Pod) and isinstance(old, types_pb2.Pod)
        drop_disabled_pod_status_fields(
            result,
            old,
            observed_generation=opts.pod_observed_generation,
            host_ips=opts.pod_host_ips,
        )
        dra.drop_disabled_pod_status_fields(result.status, old.status, opts.dra)
        backfill_qos_class(result, old)
        return result


def _pod_level_resources(
    pod: types_pb2.Pod, old: types_pb2.Pod | None, opts: StrategyOptions
) -> None:
    """With PodLevelResources the decoder's pod-level defaults (SetDefaults_Pod), without it
    the field dropped unless the stored pod uses it."""
    if opts.pod_level_resources:
        default_pod_level_resources(pod)
    drop_disabled_pod_level_resources(
        pod.spec, None if old is None else old.spec, enabled=opts.pod_level_resources
    )


class JobStrategy(_StatusReset):
    """pkg/registry/batch/job/strategy.go: a generated selector unless manualSelector;
    dropDisabledFields: spec.scheduling without WorkloadWithJob (1.37)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.Job)
        if not batch.manual_selector(obj):
            batch.generate_selector(obj)
        if not opts.job_scheduling:
            obj.spec.ClearField("scheduling")

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.Job) and isinstance(old, types_pb2.Job)
        if not opts.job_scheduling and not old.spec.HasField("scheduling"):
            new.spec.ClearField("scheduling")


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


class PersistentVolumeStrategy(_StatusReset):
    """pkg/registry/core/persistentvolume/strategy.go: a new volume is Pending (its status
    reset; the PersistentVolume controller makes it Available) since now, and a status
    update that changes the phase records when (PersistentVolumeLastPhaseTransitionTime, on
    by default from 1.29: kemu applies it at every emulated version)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.PersistentVolume)
        obj.status.phase = storage.VOLUME_PENDING
        obj.status.last_phase_transition_time.CopyFrom(timestamp(now))

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        result = super().prepare_for_status_update(sent, old, opts, now)
        assert isinstance(result, types_pb2.PersistentVolume)
        assert isinstance(old, types_pb2.PersistentVolume)
        storage.record_phase_transition(result.status, old.status, now)
        return result


class PersistentVolumeClaimStrategy(_StatusReset):
    """pkg/registry/core/persistentvolumeclaim/strategy.go: a new claim is Pending."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.PersistentVolumeClaim)
        obj.status.phase = storage.CLAIM_PENDING


class WorkloadStrategy(Strategy):
    """pkg/registry/scheduling/workload/strategy.go: no status; the fields the emulated
    version does not have, or whose gate is off, dropped (unless the stored object uses
    them)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.Workload)
        drop_disabled_workload_fields(obj, None, opts.pod_groups)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.Workload) and isinstance(old, types_pb2.Workload)
        drop_disabled_workload_fields(new, old, opts.pod_groups)


class PodGroupStrategy(_StatusReset):
    """pkg/registry/scheduling/podgroup/strategy.go: the status reset on create and kept on
    update (the status strategy keeps the spec), the version's defaults and its disabled
    fields dropped."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.PodGroup)
        drop_disabled_pod_group_fields(obj, None, opts.pod_groups)
        default_pod_group(obj, opts.pod_groups)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.PodGroup) and isinstance(old, types_pb2.PodGroup)
        drop_disabled_pod_group_fields(new, old, opts.pod_groups)
        default_pod_group(new, opts.pod_groups)

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        result = super().prepare_for_status_update(sent, old, opts, now)
        assert isinstance(result, types_pb2.PodGroup) and isinstance(old, types_pb2.PodGroup)
        drop_disabled_pod_group_status_fields(result, old, opts.pod_groups)
        return result


class CompositePodGroupStrategy(_StatusReset):
    """pkg/registry/scheduling/compositepodgroup/strategy.go: the status reset on create and
    kept on update (the status strategy keeps the spec), disruptionMode defaulted, the
    disabled fields dropped."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.CompositePodGroup)
        drop_disabled_composite_pod_group_fields(obj, None, opts.pod_groups)
        default_composite_pod_group(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.CompositePodGroup)
        assert isinstance(old, types_pb2.CompositePodGroup)
        drop_disabled_composite_pod_group_fields(new, old, opts.pod_groups)
        default_composite_pod_group(new)


class DeviceClassStrategy(Strategy):
    """pkg/registry/resource/deviceclass/strategy.go: no status; dropDisabledFields
    (extendedResourceName); the generation bumped on a spec change (before_update)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.DeviceClass)
        drop_disabled_class_fields(obj.spec, None, opts.dra)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.DeviceClass) and isinstance(old, types_pb2.DeviceClass)
        drop_disabled_class_fields(new.spec, old.spec, opts.dra)


class ResourceSliceStrategy(Strategy):
    """pkg/registry/resource/resourceslice/strategy.go: no status; dropDisabledFields
    (taints, partitionable devices, binding conditions, consumable capacity)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.ResourceSlice)
        drop_disabled_slice_fields(obj.spec, None, opts.dra)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.ResourceSlice)
        assert isinstance(old, types_pb2.ResourceSlice)
        drop_disabled_slice_fields(new.spec, old.spec, opts.dra)


class ResourceClaimStrategy(_StatusReset):
    """pkg/registry/resource/resourceclaim/strategy.go: the status reset on create and kept on
    update (the /status subresource writes it, keeping the spec); v1's defaults
    (allocationMode ExactCount, count 1, toleration operator Equal); dropDisabledFields and,
    on a status write, dropDisabledStatusFields and dropDeallocatedStatusDevices."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.ResourceClaim)
        default_claim_spec(obj.spec)
        drop_disabled_claim_spec_fields(obj.spec, None, opts.dra)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.ResourceClaim)
        assert isinstance(old, types_pb2.ResourceClaim)
        default_claim_spec(new.spec)
        drop_disabled_claim_spec_fields(new.spec, old.spec, opts.dra)

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        result = super().prepare_for_status_update(sent, old, opts, now)
        assert isinstance(result, types_pb2.ResourceClaim)
        assert isinstance(old, types_pb2.ResourceClaim)
        default_allocation(result.status)
        drop_disabled_claim_status_fields(result.status, old.status, opts.dra)
        return result


class ResourceClaimTemplateStrategy(Strategy):
    """pkg/registry/resource/resourceclaimtemplate/strategy.go: the claim spec's defaults and
    dropDisabledFields."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.ResourceClaimTemplate)
        default_claim_spec(obj.spec.spec)
        drop_disabled_claim_spec_fields(obj.spec.spec, None, opts.dra)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.ResourceClaimTemplate)
        assert isinstance(old, types_pb2.ResourceClaimTemplate)
        default_claim_spec(new.spec.spec)
        drop_disabled_claim_spec_fields(new.spec.spec, old.spec.spec, opts.dra)


class DeviceTaintRuleStrategy(_StatusReset):
    """pkg/registry/resource/devicetaintrule/strategy.go: the status reset on create; the
    taint's timeAdded set to now when the client left it unset (DeviceTaint.timeAdded's API
    doc: "Added automatically during create or update if not set"; kemu sets it on create)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.DeviceTaintRule)
        if not obj.spec.taint.HasField("time_added"):
            obj.spec.taint.time_added.CopyFrom(timestamp(now))


# ---- issue #57 kinds-a


class CertificateSigningRequestStrategy(Strategy):
    """pkg/registry/certificates/certificates/strategy.go: the requester recorded and the
    status cleared on create; an update keeps the status; a status write keeps the
    Approved and Denied conditions (the /approval subresource's: `prepare_for_approval`)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.CertificateSigningRequest)
        certificates.prepare_for_create(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.CertificateSigningRequest)
        assert isinstance(old, types_pb2.CertificateSigningRequest)
        certificates.prepare_for_update(new, old)

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        result = super().prepare_for_status_update(sent, old, opts, now)
        assert isinstance(result, types_pb2.CertificateSigningRequest)
        assert isinstance(old, types_pb2.CertificateSigningRequest)
        certificates.prepare_for_status_update(result, old, timestamp(now))
        return result


# ---- apiextensions.k8s.io (issue #57 item 3)


class CustomResourceDefinitionStrategy(_StatusReset):
    """Upstream pkg/registry/customresourcedefinition/strategy.go: v1 defaults, the status
    the server's; the cleanup finalizer on every new CRD (its custom resources go first)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        super().prepare_for_create(obj, opts, now)
        assert isinstance(obj, types_pb2.CustomResourceDefinition)
        crd.set_defaults(obj)
        if crd.CLEANUP_FINALIZER not in obj.metadata.finalizers:
            obj.metadata.finalizers.append(crd.CLEANUP_FINALIZER)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        assert isinstance(new, types_pb2.CustomResourceDefinition)
        crd.set_defaults(new)


class CustomResourceStrategy(Strategy):
    """Every custom resource's (kemu.machinery.apiextensions.custom)."""

    def prepare_for_create(self, obj: Message, opts: StrategyOptions, now: float) -> None:
        custom.prepare_for_create(obj)

    def prepare_for_update(self, new: Message, old: Message, opts: StrategyOptions) -> None:
        custom.prepare_for_update(new, old)

    def prepare_for_status_update(
        self, sent: Message, old: Message, opts: StrategyOptions, now: float
    ) -> Message:
        return custom.prepare_for_status_update(sent, old)


CUSTOM_RESOURCE_STRATEGY: Final = CustomResourceStrategy()

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
        "PersistentVolume": PersistentVolumeStrategy(),
        "PersistentVolumeClaim": PersistentVolumeClaimStrategy(),
        "StatefulSet": _StatusReset(),
        "CronJob": _StatusReset(),
        "Workload": WorkloadStrategy(),
        "PodGroup": PodGroupStrategy(),
        "CompositePodGroup": CompositePodGroupStrategy(),
        "DeviceClass": DeviceClassStrategy(),
        "ResourceSlice": ResourceSliceStrategy(),
        "ResourceClaim": ResourceClaimStrategy(),
        "ResourceClaimTemplate": ResourceClaimTemplateStrategy(),
        "DeviceTaintRule": DeviceTaintRuleStrategy(),
        # issue #57 kinds-a: the status is the server's (resourcequota, ingress and
        # apiservice strategies' PrepareForCreate)
        "Ingress": _StatusReset(),
        "ResourceQuota": _StatusReset(),
        "APIService": _StatusReset(),
        "CertificateSigningRequest": CertificateSigningRequestStrategy(),
        "CustomResourceDefinition": CustomResourceDefinitionStrategy(),
        # ---- kinds-b (issue #57): a new object's status is the controller's to write.
        "ReplicationController": _StatusReset(),
        "HorizontalPodAutoscaler": _StatusReset(),
    }
)
"""Kind name -> its strategy; every other kind has DEFAULT_STRATEGY."""


def strategy_for(kind: Kind) -> Strategy:
    if kind.custom:
        return CUSTOM_RESOURCE_STRATEGY
    return STRATEGIES.get(kind.kind, DEFAULT_STRATEGY)


def before_update(kind: Kind, old: Message, sent: Message, opts: StrategyOptions) -> Message:
    """What an update of `old` to `sent` stores (upstream's rest.BeforeUpdate with the kind's
    PrepareForUpdate): `sent` with the identity and server-managed metadata of `old` (name,
    namespace, creationTimestamp, the deletion fields, generation, a missing uid), the stored
    status (the status subresource writes it), the kind's own rules, and the generation bumped
    when the spec changed. `sent` is only read; defaulting and admission come before."""
    result = _copy(sent)
    meta: types_pb2.ObjectMeta = result.metadata  # type: ignore[attr-defined]
    old_meta: types_pb2.ObjectMeta = old.metadata  # type: ignore[attr-defined]
    meta.name, meta.namespace, meta.generation = (
        old_meta.name,
        old_meta.namespace,
        old_meta.generation,
    )
    meta.uid = meta.uid or old_meta.uid  # (a different one is a Conflict: check_update_uid)
    meta.creation_timestamp.CopyFrom(old_meta.creation_timestamp)
    if old_meta.HasField("deletion_timestamp"):
        meta.deletion_timestamp.CopyFrom(old_meta.deletion_timestamp)
        meta.deletion_grace_period_seconds = old_meta.deletion_grace_period_seconds
    else:
        meta.ClearField("deletion_timestamp")
        meta.ClearField("deletion_grace_period_seconds")
    meta.resource_version = old_meta.resource_version
    if kind.has_status and not kind.custom:  # (a custom resource's strategy keeps it)
        copy_field(result, old, "status")
    strategy_for(kind).prepare_for_update(result, old, opts)
    if bumps_generation(old, result):
        meta.generation = old_meta.generation + 1
    return result


def _copy(obj: Message) -> Message:
    out = obj.__class__()
    out.CopyFrom(obj)
    return out


def copy_field(dst: Message, src: Message, name: str) -> None:
    """dst.name = src.name, an unset field staying unset (a write that changes nothing then
    stores the same bytes)."""
    if src.HasField(name):
        getattr(dst, name).CopyFrom(getattr(src, name))
    else:
        dst.ClearField(name)
