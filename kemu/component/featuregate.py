"""Versioned feature gates, resolved once per process and passed down explicitly.

Contract (after upstream k8s.io/component-base/featuregate VersionedSpecs):
- `GATES` is the table: per gate, the (first version, stage, default, locked) specs in version
  order, and optionally the version the gate was removed in and the behaviour from then on.
- At an emulated version a gate's spec is the last one whose version is <= it. Before its first
  spec the gate does not exist: `enabled()` is False and setting it is an error. From
  `removed_in` on it does not exist either, but `enabled()` returns the behaviour the removal
  made unconditional (for PreferNominatedNode: True).
- A locked gate may be set to its locked value, never to the other one.
- `FeatureGates.for_version(version, overrides)` checks everything at once and raises one
  `FeatureGateError` listing every problem, each naming the gate and the version. The result is
  immutable; there is no global gate state to patch.
- Only names upstream's table has are gates: a name upstream refuses (as the KEP-5836 text's
  `SchedulerPreemptionForPodResize`, shipped as `InPlacePodVerticalScalingSchedulerPreemption`)
  is refused here too, as any unknown name.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Final, NamedTuple

from kemu.component.version import DEFAULT_VERSION, MIN_VERSION, Version

PREFER_NOMINATED_NODE: Final = "PreferNominatedNode"
NOMINATED_NODE_NAME_FOR_EXPECTATION: Final = "NominatedNodeNameForExpectation"
CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING: Final = "ClearingNominatedNodeNameAfterBinding"
IN_PLACE_POD_VERTICAL_SCALING: Final = "InPlacePodVerticalScaling"
IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION: Final = (
    "InPlacePodVerticalScalingSchedulerPreemption"
)
SCHEDULER_ASYNC_PREEMPTION: Final = "SchedulerAsyncPreemption"
RETROACTIVE_DEFAULT_STORAGE_CLASS: Final = "RetroactiveDefaultStorageClass"
"""KEP-3333: the PersistentVolume controller gives the default StorageClass to an unbound claim
that asked for no class (controllermanager/persistentvolume/pv_controller.py)."""
POD_DISRUPTION_CONDITIONS: Final = "PodDisruptionConditions"
"""KEP-3329: the DisruptionTarget condition on a pod deleted for a disruption: the scheduler's
preemption victims (PreemptionByKubeScheduler until 1.26, PreemptionByScheduler from 1.27:
version rule `preemption_by_scheduler`), the eviction API (EvictionByEvictionAPI), PodGC
(DeletionByPodGC, and phase Failed) and the taint manager (DeletionByTaintManager). Off, no
component writes it, and from 1.27 DefaultPreemption then waits for any terminating
lower-priority pod on the nominated node, as before 1.27."""
POD_OBSERVED_GENERATION_TRACKING: Final = "PodObservedGenerationTracking"
POD_TOPOLOGY_LABELS_ADMISSION: Final = "PodTopologyLabelsAdmission"
"""KEP-5067: status.observedGeneration of pods and of the conditions the kubelet and the
scheduler write, kept or dropped on status writes (apiserver)."""
POD_SCHEDULING_READINESS: Final = "PodSchedulingReadiness"
POD_HOST_IPS: Final = "PodHostIPs"
"""KEP-2681: status.hostIPs, written by the kubelet and kept by the apiserver."""
POD_LEVEL_RESOURCES: Final = "PodLevelResources"
"""KEP-2837: spec.resources (cpu, memory, hugepages for the whole pod) counted instead of the
containers' sum by the scheduler, the kubelet and the autoscaler; without it the apiserver
drops the field (kemu.component.pod_resources)."""
SEPARATE_TAINT_EVICTION_CONTROLLER: Final = "SeparateTaintEvictionController"
"""KEP-3902: the NoExecute taint eviction is its own controller, `taint-eviction-controller`
(beta 1.29, GA 1.34, removed 1.37); without it the node lifecycle controller runs it."""
MIN_DOMAINS_IN_POD_TOPOLOGY_SPREAD: Final = "MinDomainsInPodTopologySpread"
NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD: Final = "NodeInclusionPolicyInPodTopologySpread"
MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD: Final = "MatchLabelKeysInPodTopologySpread"
MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE: Final = (
    "MatchLabelKeysInPodTopologySpreadSelectorMerge"
)
"""KEP-3243: the apiserver merges a spread constraint's matchLabelKeys into its labelSelector
when it creates the pod."""
STATEFUL_SET_AUTO_DELETE_PVC: Final = "StatefulSetAutoDeletePVC"
"""KEP-1847: the StatefulSet controller sets the claims' ownerReferences after
spec.persistentVolumeClaimRetentionPolicy (controllermanager/stateful_set_utils.py); off, it
leaves them alone."""
STATEFUL_SET_START_ORDINAL: Final = "StatefulSetStartOrdinal"
"""KEP-3335: spec.ordinals.start is the StatefulSet's first ordinal; off, 0."""
MAX_UNAVAILABLE_STATEFUL_SET: Final = "MaxUnavailableStatefulSet"
"""KEP-961: a StatefulSet's rollingUpdate.maxUnavailable pods (default 1) are replaced at once."""
POD_INDEX_LABEL: Final = "PodIndexLabel"
"""KEP-4017: StatefulSet pods get the label apps.kubernetes.io/pod-index (their ordinal)."""
CRON_JOB_TIME_ZONE: Final = "CronJobTimeZone"
"""KEP-3140: a CronJob's spec.timeZone is the zone its schedule is read in; off, the
controller's (kemu's: UTC)."""
CRON_JOBS_SCHEDULED_ANNOTATION: Final = "CronJobsScheduledAnnotation"
"""KEP-4006 (kubernetes#118137): a CronJob's Jobs carry the annotation
batch.kubernetes.io/cronjob-scheduled-timestamp."""
GENERIC_WORKLOAD: Final = "GenericWorkload"
"""KEP-4671/KEP-5832: the Workload and PodGroup kinds (scheduling.k8s.io), the pod's reference
to its group, and the scheduler's pod-group cycle; from 1.37 also gang scheduling and
workload-aware preemption (kubernetes#139520 folded their gates into this one)."""
GANG_SCHEDULING: Final = "GangScheduling"
"""KEP-4671: the GangScheduling plugin (1.35, 1.36; removed in 1.37, behind GenericWorkload)."""
WORKLOAD_AWARE_PREEMPTION: Final = "WorkloadAwarePreemption"
"""KEP-5710 (1.36; removed in 1.37, behind GenericWorkload): a victim in a group takes its
group; the PodGroup fields disruptionMode, priorityClassName and priority."""
TOPOLOGY_AWARE_WORKLOAD_SCHEDULING: Final = "TopologyAwareWorkloadScheduling"
"""KEP-5732: a PodGroup's schedulingConstraints.topology."""
POD_GROUP_PREEMPTION_POLICY: Final = "PodGroupPreemptionPolicy"
"""KEP-5710 (1.37): a PodGroup's preemptionPolicy."""
COMPOSITE_POD_GROUP: Final = "CompositePodGroup"
"""KEP-6012 (1.37): CompositePodGroups and a PodGroup's parentCompositePodGroupName."""
WORKLOAD_WITH_JOB: Final = "WorkloadWithJob"
"""KEP-5547: the Job controller creates its Workload and PodGroup."""
DRA_WORKLOAD_RESOURCE_CLAIMS: Final = "DRAWorkloadResourceClaims"
"""KEP-5729: a PodGroup's resourceClaims and status.resourceClaimStatuses."""
SCHEDULER_ASYNC_API_CALLS: Final = "SchedulerAsyncAPICalls"
CONSISTENT_LIST_FROM_CACHE: Final = "ConsistentListFromCache"
"""KEP-2340 (apiserver): a list at the latest resourceVersion ("") served by the watch cache once
it has caught up with etcd's current revision (apiserver.endpoints.lists)."""
RETRY_GENERATE_NAME: Final = "RetryGenerateName"
"""KEP-4420 (apiserver): a create by generateName whose name is taken is tried again with
another name, up to 8 attempts in all (apiserver.registry.registry)."""
"""KEP-5229: the scheduler's binds and failure status patches through a dispatcher."""
# Known, not modelled (GateDefinition.modelled False): upstream's scheduler_perf files set them.
SCHEDULER_QUEUEING_HINTS: Final = "SchedulerQueueingHints"
SCHEDULER_POP_FROM_BACKOFF_Q: Final = "SchedulerPopFromBackoffQ"
OPPORTUNISTIC_BATCHING: Final = "OpportunisticBatching"
NODE_DECLARED_FEATURES: Final = "NodeDeclaredFeatures"
DYNAMIC_RESOURCE_ALLOCATION: Final = "DynamicResourceAllocation"
DRA_EXTENDED_RESOURCE: Final = "DRAExtendedResource"
# Dynamic Resource Allocation's feature gates (pkg/features/kube_features.go at 1.37).
DRA_ADMIN_ACCESS: Final = "DRAAdminAccess"
DRA_PRIORITIZED_LIST: Final = "DRAPrioritizedList"
DRA_RESOURCE_CLAIM_DEVICE_STATUS: Final = "DRAResourceClaimDeviceStatus"
DRA_DEVICE_TAINTS: Final = "DRADeviceTaints"
DRA_DEVICE_TAINT_RULES: Final = "DRADeviceTaintRules"
DRA_PARTITIONABLE_DEVICES: Final = "DRAPartitionableDevices"
DRA_CONSUMABLE_CAPACITY: Final = "DRAConsumableCapacity"
DRA_DEVICE_BINDING_CONDITIONS: Final = "DRADeviceBindingConditions"
DRA_SCHEDULER_FILTER_TIMEOUT: Final = "DRASchedulerFilterTimeout"
# KEP-5690 (scheduler only): DynamicResources' PreFilterExtensions release a victim's claims in
# preemption's dry run, and Filter's "cannot allocate all claims" becomes Unschedulable.
DRA_PREEMPTION: Final = "DRAPreemption"
# Known, not modelled: the in-place resize family beside InPlacePodVerticalScaling (kubelet
# features kemu's kubelet does not have: exclusive CPUs and memory of the CPU and memory
# managers' static policies, resizing pod-level resources, the old allocatedResources gate).
IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS: Final = "InPlacePodVerticalScalingAllocatedStatus"
IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_CPUS: Final = "InPlacePodVerticalScalingExclusiveCPUs"
IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_MEMORY: Final = "InPlacePodVerticalScalingExclusiveMemory"
IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING: Final = "InPlacePodLevelResourcesVerticalScaling"


class Stage(enum.StrEnum):
    ALPHA = "ALPHA"
    BETA = "BETA"
    GA = "GA"
    DEPRECATED = "DEPRECATED"


@dataclass(frozen=True)
class FeatureSpec:
    """The state of a gate from `version` on, until the next spec of the same gate."""

    version: Version
    stage: Stage
    default: bool
    locked: bool = False


@dataclass(frozen=True)
class GateDefinition:
    """One row of the table: `specs` ascend by version; `removed_in` ends the gate's life."""

    name: str
    specs: tuple[FeatureSpec, ...]
    removed_in: Version | None = None
    enabled_after_removal: bool = True
    # False: a gate of upstream that kemu knows (its lifecycle, so that settings are checked
    # as upstream checks them) but whose behaviour it does not model; setting it changes
    # nothing, and tools report it "not modelled".
    modelled: bool = True
    # Gates this one needs on (upstream's defaultKubernetesFeatureGateDependencies, 1.35+):
    # enabling it with one of them off is an error.
    depends_on: tuple[str, ...] = ()

    @property
    def introduced_in(self) -> Version:
        return self.specs[0].version

    def spec_at(self, version: Version) -> FeatureSpec | None:
        """The spec in force at `version`, or None when the gate does not exist there."""
        if self.removed_in is not None and version >= self.removed_in:
            return None
        current: FeatureSpec | None = None
        for spec in self.specs:
            if spec.version <= version:
                current = spec
        return current


def _v(minor: int) -> Version:
    return Version(1, minor)


def _gate(
    name: str,
    *,
    alpha: int | None = None,
    beta_off: int | None = None,
    beta: int | None = None,
    ga: int | None = None,
    removed: int | None = None,
    modelled: bool = True,
    depends_on: tuple[str, ...] = (),
) -> GateDefinition:
    """A gate of upstream's usual lifecycle, by the minor versions (1.x) at which it became
    alpha (off), beta off by default, beta (on), GA (on, locked) and was removed (its
    behaviour on since); the rows that do not follow it are spelled out."""
    specs = [
        FeatureSpec(_v(minor), stage, default, locked=stage is Stage.GA)
        for minor, stage, default in (
            (alpha, Stage.ALPHA, False),
            (beta_off, Stage.BETA, False),
            (beta, Stage.BETA, True),
            (ga, Stage.GA, True),
        )
        if minor is not None
    ]
    return GateDefinition(
        name,
        tuple(specs),
        removed_in=None if removed is None else _v(removed),
        modelled=modelled,
        depends_on=depends_on,
    )


GATES: Final[Mapping[str, GateDefinition]] = MappingProxyType(
    {
        gate.name: gate
        for gate in (
            _gate(PREFER_NOMINATED_NODE, alpha=21, beta=22, ga=24, removed=26),
            _gate(NOMINATED_NODE_NAME_FOR_EXPECTATION, alpha=34, beta=35),
            _gate(CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING, alpha=34, beta=35),
            _gate(IN_PLACE_POD_VERTICAL_SCALING, alpha=27, beta=33, ga=35),
            _gate(IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION, alpha=37),
            _gate(POD_OBSERVED_GENERATION_TRACKING, alpha=33, beta=34, ga=35),
            _gate(POD_TOPOLOGY_LABELS_ADMISSION, alpha=33, beta=35),
            _gate(POD_HOST_IPS, alpha=28, beta=29, ga=30, removed=32),
            _gate(POD_SCHEDULING_READINESS, alpha=26, beta=27, ga=30, removed=32),
            # KEP-2837 (pkg/features/kube_features.go: no GA through the 1.37 cycle).
            _gate(POD_LEVEL_RESOURCES, alpha=32, beta=34),
            _gate(SEPARATE_TAINT_EVICTION_CONTROLLER, beta=29, ga=34, removed=37),
            # "remove in 1.33" in the table, last there in 1.33 (kubernetes#132148 took it
            # out in the 1.34 cycle): the behaviour is unconditional since.
            _gate(POD_DISRUPTION_CONDITIONS, alpha=25, beta=26, ga=31, removed=34),
            _gate(SCHEDULER_ASYNC_PREEMPTION, alpha=32, beta=33),
            # "remove in 1.29" in upstream's 1.28 table.
            _gate(RETROACTIVE_DEFAULT_STORAGE_CLASS, alpha=25, beta=26, ga=28, removed=29),
            # PodTopologySpread's (kemu.scheduling.plugins.pod_topology_spread).
            _gate(
                MIN_DOMAINS_IN_POD_TOPOLOGY_SPREAD,
                alpha=24,
                beta_off=25,
                beta=27,
                ga=30,
                removed=32,
            ),
            _gate(NODE_INCLUSION_POLICY_IN_POD_TOPOLOGY_SPREAD, alpha=25, beta=26, ga=33),
            _gate(MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD, alpha=25, beta=27),
            _gate(MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE, beta=34),
            # The workload controllers' (pkg/features/kube_features.go; removals as its
            # "remove in" comments).
            _gate(STATEFUL_SET_AUTO_DELETE_PVC, alpha=23, beta=27, ga=32, removed=35),
            _gate(STATEFUL_SET_START_ORDINAL, alpha=26, beta=27, ga=31, removed=33),
            _gate(MAX_UNAVAILABLE_STATEFUL_SET, alpha=24, beta=35),
            _gate(POD_INDEX_LABEL, beta=28, ga=32, removed=35),
            _gate(CRON_JOB_TIME_ZONE, alpha=24, beta=25, ga=27, removed=29),
            _gate(CRON_JOBS_SCHEDULED_ANNOTATION, beta=28, ga=32, removed=35),
            # Workload-aware scheduling (pkg/features/kube_features.go; kubernetes#139520
            # removed GangScheduling and WorkloadAwarePreemption in 1.37, their behaviour then
            # GenericWorkload's: enabled after removal, and GenericWorkload still asked).
            _gate(GENERIC_WORKLOAD, alpha=35, beta_off=37),
            _gate(GANG_SCHEDULING, alpha=35, removed=37, depends_on=(GENERIC_WORKLOAD,)),
            _gate(WORKLOAD_AWARE_PREEMPTION, alpha=36, removed=37, depends_on=(GENERIC_WORKLOAD,)),
            # KEP-5732: the pod-group cycle's placements (kemu.scheduling.placement).
            _gate(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, alpha=36, depends_on=(GENERIC_WORKLOAD,)),
            _gate(POD_GROUP_PREEMPTION_POLICY, alpha=37, depends_on=(GENERIC_WORKLOAD,)),
            # KEP-6012: the scheduler schedules CompositePodGroup trees
            # (kemu.scheduling.composite_pod_groups, scheduler/schedule_one_composite_pod_group.py).
            _gate(
                COMPOSITE_POD_GROUP,
                alpha=37,
                depends_on=(GENERIC_WORKLOAD, TOPOLOGY_AWARE_WORKLOAD_SCHEDULING),
            ),
            _gate(WORKLOAD_WITH_JOB, alpha=36, depends_on=(GENERIC_WORKLOAD,)),
            _gate(
                DRA_WORKLOAD_RESOURCE_CLAIMS,
                alpha=36,
                beta_off=37,
                modelled=False,
                depends_on=(GENERIC_WORKLOAD,),
            ),
            # KEP-5229 (scheduler.api_dispatcher): beta on in 1.34.0, off from 1.34's patch
            # releases (kubernetes#134400), on again in 1.35.0 (#135059), off again from
            # 1.35's patch releases (#135903, for #135900's throttled binds); upstream's table
            # since: beta off from 1.34.
            _gate(SCHEDULER_ASYNC_API_CALLS, beta_off=34),
            # staging/src/k8s.io/apiserver/pkg/features/kube_features.go.
            _gate(RETRY_GENERATE_NAME, alpha=30, beta=31, ga=32),
            _gate(CONSISTENT_LIST_FROM_CACHE, alpha=28, beta=31, ga=34),
            # upstream gates that upstream's scheduler_perf files set and kemu does not
            # model (upstream's lifecycle, pkg/features/kube_features.go at 1.37).
            # Gone from upstream's table in the 1.37 cycle (three releases after GA).
            _gate(
                SCHEDULER_QUEUEING_HINTS, beta_off=28, beta=32, ga=34, removed=37, modelled=False
            ),
            _gate(SCHEDULER_POP_FROM_BACKOFF_Q, beta=33, modelled=False),
            _gate(OPPORTUNISTIC_BATCHING, beta=35, modelled=False),
            _gate(NODE_DECLARED_FEATURES, alpha=35, beta=36, ga=37, modelled=False),
            GateDefinition(
                DYNAMIC_RESOURCE_ALLOCATION,
                (
                    FeatureSpec(_v(26), Stage.ALPHA, False),
                    FeatureSpec(_v(32), Stage.BETA, False),
                    FeatureSpec(_v(34), Stage.GA, True),
                    FeatureSpec(_v(35), Stage.GA, True, locked=True),
                ),
                modelled=True,
            ),
            _gate(DRA_EXTENDED_RESOURCE, alpha=34, beta=36, ga=37),
            _gate(DRA_ADMIN_ACCESS, alpha=32, beta=34, ga=36),
            _gate(DRA_PRIORITIZED_LIST, alpha=33, beta=34, ga=36),
            _gate(DRA_RESOURCE_CLAIM_DEVICE_STATUS, alpha=32, beta=33, ga=37),
            GateDefinition(
                DRA_DEVICE_TAINTS,
                (
                    FeatureSpec(_v(33), Stage.ALPHA, False),
                    FeatureSpec(_v(36), Stage.BETA, True),
                    FeatureSpec(_v(37), Stage.GA, True),
                ),
            ),
            # "Depends on an off-by-default beta API" at 1.36.
            GateDefinition(
                DRA_DEVICE_TAINT_RULES,
                (
                    FeatureSpec(_v(35), Stage.ALPHA, False),
                    FeatureSpec(_v(36), Stage.BETA, False),
                    FeatureSpec(_v(37), Stage.GA, True),
                ),
                depends_on=(DRA_DEVICE_TAINTS,),
            ),
            _gate(DRA_PARTITIONABLE_DEVICES, alpha=33, beta=36),
            _gate(DRA_CONSUMABLE_CAPACITY, alpha=34, beta=36),
            _gate(
                DRA_DEVICE_BINDING_CONDITIONS,
                alpha=34,
                beta=36,
                modelled=True,
                depends_on=(DRA_RESOURCE_CLAIM_DEVICE_STATUS,),
            ),
            _gate(DRA_SCHEDULER_FILTER_TIMEOUT, beta=34, modelled=True),
            # Alpha (off) at 1.37: KEP-5690 "The gate is disabled by default"; upstream master's
            # dynamicresources_preemption_test.go (feature.Features.EnableDRAPreemption).
            _gate(DRA_PREEMPTION, alpha=37, depends_on=(DYNAMIC_RESOURCE_ALLOCATION,)),
            # The in-place resize family (KEP-1287, KEP-5419) kemu's kubelet has no part of.
            # PodLevelResources (KEP-2837) is not one of them: kemu models it.
            GateDefinition(
                IN_PLACE_POD_VERTICAL_SCALING_ALLOCATED_STATUS,
                (
                    FeatureSpec(_v(32), Stage.ALPHA, False),
                    FeatureSpec(_v(33), Stage.DEPRECATED, False),
                ),
                # Unused since 1.33 (kubernetes#130880: allocatedResources is reported
                # whenever InPlacePodVerticalScaling is on), gone in the 1.36 cycle
                # (kubernetes#136959).
                removed_in=_v(36),
                enabled_after_removal=True,
                modelled=False,
            ),
            _gate(IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_CPUS, alpha=32, modelled=False),
            _gate(IN_PLACE_POD_VERTICAL_SCALING_EXCLUSIVE_MEMORY, alpha=34, modelled=False),
            _gate(IN_PLACE_POD_LEVEL_RESOURCES_VERTICAL_SCALING, alpha=35, beta=36, modelled=False),
        )
    }
)


class FeatureGateError(ValueError):
    """Invalid gate text or settings; `errors` holds each problem as one sentence."""

    def __init__(self, errors: list[str] | str) -> None:
        self.errors: tuple[str, ...] = (errors,) if isinstance(errors, str) else tuple(errors)
        super().__init__("; ".join(self.errors))


class GateState(NamedTuple):
    name: str
    enabled: bool
    stage: Stage
    locked: bool


def gate_modelled(name: str) -> bool:
    """Whether kemu models the behaviour of gate `name`; an unknown name is not modelled."""
    gate = GATES.get(name)
    return gate is not None and gate.modelled


_TRUE: Final = frozenset({"1", "t", "T", "true", "TRUE", "True"})
_FALSE: Final = frozenset({"0", "f", "F", "false", "FALSE", "False"})


def parse_feature_gates(text: str) -> dict[str, bool]:
    """Parse `--feature-gates` text "A=true,B=false" (whitespace and empty entries ignored).

    Values are Go's strconv.ParseBool spellings, as upstream. The same name given twice with
    different values is an error rather than last-wins, since it is always a mistake.
    Names are not checked against the table here; `FeatureGates.for_version` does that.
    """
    result: dict[str, bool] = {}
    errors: list[str] = []
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        name, sep, value_text = entry.partition("=")
        name, value_text = name.strip(), value_text.strip()
        if not sep:
            errors.append(f'missing "=" in feature gate entry "{entry}" (expected Name=true|false)')
            continue
        if not name:
            errors.append(f'missing feature gate name in entry "{entry}"')
            continue
        if value_text in _TRUE:
            value = True
        elif value_text in _FALSE:
            value = False
        else:
            errors.append(
                f'invalid value "{value_text}" for feature gate "{name}" (expected true or false)'
            )
            continue
        if name in result and result[name] != value:
            errors.append(f'feature gate "{name}" is given twice with different values')
            continue
        result[name] = value
    if errors:
        raise FeatureGateError(errors)
    return result


@dataclass(frozen=True)
class FeatureGates:
    """The gates of one process at one emulated version; build with `for_version`."""

    version: Version
    overrides: Mapping[str, bool]
    """Explicitly set gates, by name; read-only."""
    warnings: tuple[str, ...] = field(default=(), compare=False)
    """Accepted but noteworthy settings (a GA or deprecated gate set)."""
    _enabled: Mapping[str, bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        enabled: dict[str, bool] = {}
        for gate in GATES.values():
            spec = gate.spec_at(self.version)
            if spec is None:
                removed = gate.removed_in is not None and self.version >= gate.removed_in
                enabled[gate.name] = gate.enabled_after_removal if removed else False
            else:
                enabled[gate.name] = self.overrides.get(gate.name, spec.default)
        object.__setattr__(self, "_enabled", MappingProxyType(enabled))

    @classmethod
    def for_version(
        cls, version: Version, overrides: Mapping[str, bool] | None = None
    ) -> FeatureGates:
        """Validate `overrides` (gate names) at `version`; FeatureGateError lists all."""
        errors: list[str] = []
        warnings: list[str] = []
        resolved: dict[str, bool] = {}
        for name, value in (overrides or {}).items():
            gate = GATES.get(name)
            if gate is None:
                errors.append(
                    f'unrecognized feature gate "{name}" at emulated version {version} '
                    f"(known gates: {', '.join(sorted(GATES))})"
                )
                continue
            error = _check_setting(gate, name, value, version)
            if error is not None:
                errors.append(error)
                continue
            spec = gate.spec_at(version)
            assert spec is not None  # _check_setting rejected every other case
            if spec.stage in (Stage.GA, Stage.DEPRECATED):
                warnings.append(
                    f"Setting {spec.stage} feature gate {name}={str(value).lower()}. "
                    "It will be removed in a future release."
                )
            if value and not gate.modelled:
                warnings.append(
                    f"feature gate {name}=true: kemu knows the gate but does not model its "
                    "behaviour"
                )
            resolved[name] = value
        errors.extend(_dependency_errors(version, resolved))
        if errors:
            raise FeatureGateError(errors)
        return cls(version, MappingProxyType(resolved), tuple(warnings))

    @classmethod
    def default(cls) -> FeatureGates:
        """The defaults at DEFAULT_VERSION: a convenience for tests and tools."""
        return cls.for_version(DEFAULT_VERSION)

    def enabled(self, name: str) -> bool:
        """Whether the behaviour behind gate `name` is on at this version.

        An unknown name is a programming error and raises FeatureGateError.
        """
        try:
            return self._enabled[name]
        except KeyError:
            raise FeatureGateError(f'unknown feature gate "{name}"') from None

    def states(self) -> list[GateState]:
        """(name, enabled, stage, locked) of every gate that exists at this version, by name."""
        states: list[GateState] = []
        for name in sorted(GATES):
            spec = GATES[name].spec_at(self.version)
            if spec is not None:
                states.append(GateState(name, self._enabled[name], spec.stage, spec.locked))
        return states

    def __hash__(self) -> int:
        return hash((self.version, tuple(sorted(self.overrides.items()))))

    def to_flag(self) -> str:
        """The explicit overrides as `--feature-gates` text, sorted by name ("" if none)."""
        return ",".join(
            f"{name}={str(value).lower()}" for name, value in sorted(self.overrides.items())
        )


def _dependency_errors(version: Version, overrides: Mapping[str, bool]) -> list[str]:
    """A gate that is on while a gate it depends on is off (upstream's featuregate refuses the
    set at start-up)."""
    errors: list[str] = []
    for gate in GATES.values():
        spec = gate.spec_at(version)
        if spec is None or not gate.depends_on:
            continue
        if not overrides.get(gate.name, spec.default):
            continue
        off = [
            dep
            for dep in gate.depends_on
            if (dep_spec := GATES[dep].spec_at(version)) is not None
            and not overrides.get(dep, dep_spec.default)
        ]
        if off:
            errors.append(
                f"feature gate {gate.name} is enabled at emulated version {version}, but "
                f"depends on {', '.join(off)}, which is disabled"
            )
    return errors


def _check_setting(gate: GateDefinition, given: str, value: bool, version: Version) -> str | None:
    spec = gate.spec_at(version)
    if spec is not None:
        if spec.locked and value != spec.default:
            return (
                f'feature gate "{given}" is locked to {str(spec.default).lower()} ({spec.stage}) '
                f"at emulated version {version} and cannot be set to {str(value).lower()}"
            )
        return None
    if version < gate.introduced_in:
        return (
            f'feature gate "{given}" does not exist at emulated version {version} '
            f"(introduced in {gate.introduced_in})"
        )
    after = "always enabled" if gate.enabled_after_removal else "always disabled"
    return (
        f'feature gate "{given}" does not exist at emulated version {version} '
        f"(removed in {gate.removed_in}; its behaviour is {after})"
    )


def newest_version_accepting(
    settings: Sequence[Mapping[str, bool]], below: Version
) -> Version | None:
    """The newest emulated version older than `below` (and not older than MIN_VERSION) at
    which every one of `settings` is accepted, or None. For a refusal's hint: upstream's test
    helper likewise suggests emulating the version before a gate was locked."""
    minor = below.minor - 1
    while minor >= MIN_VERSION.minor:
        version = Version(below.major, minor)
        try:
            for overrides in settings:
                FeatureGates.for_version(version, overrides)
        except FeatureGateError:
            minor -= 1
            continue
        return version
    return None


def feature_gates_help(version: Version) -> str:
    """One line per gate that exists at `version`, like upstream's --feature-gates help."""
    lines: list[str] = []
    for name in sorted(GATES):
        spec = GATES[name].spec_at(version)
        if spec is not None:
            lock = ", locked" if spec.locked else ""
            note = "" if GATES[name].modelled else ", not modelled"
            lines.append(
                f"{name}=true|false ({spec.stage} - default={str(spec.default).lower()}{lock}{note})"
            )
    return "\n".join(lines)
