"""The feature gates the apiserver's strategies read (kemu.machinery.strategy), resolved once
from a process's gates: one place for the apiserver's registry and kemu.client's FakeClient."""

from __future__ import annotations

from kemu.component.featuregate import (
    COMPOSITE_POD_GROUP,
    DRA_ADMIN_ACCESS,
    DRA_CONSUMABLE_CAPACITY,
    DRA_DEVICE_BINDING_CONDITIONS,
    DRA_DEVICE_TAINTS,
    DRA_EXTENDED_RESOURCE,
    DRA_PARTITIONABLE_DEVICES,
    DRA_PRIORITIZED_LIST,
    DRA_RESOURCE_CLAIM_DEVICE_STATUS,
    DRA_WORKLOAD_RESOURCE_CLAIMS,
    DYNAMIC_RESOURCE_ALLOCATION,
    GENERIC_WORKLOAD,
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE,
    POD_GROUP_PREEMPTION_POLICY,
    POD_HOST_IPS,
    POD_LEVEL_RESOURCES,
    POD_OBSERVED_GENERATION_TRACKING,
    POD_SCHEDULING_READINESS,
    TOPOLOGY_AWARE_WORKLOAD_SCHEDULING,
    WORKLOAD_AWARE_PREEMPTION,
    WORKLOAD_WITH_JOB,
    FeatureGates,
)
from kemu.component.version_rules import VersionRules
from kemu.machinery.dra import DraRules
from kemu.machinery.podgroups import PodGroupRules
from kemu.machinery.strategy import StrategyOptions


def pod_group_rules(gates: FeatureGates) -> PodGroupRules:
    """The Workload API's rules at the gates' emulated version (kemu.machinery.podgroups)."""
    return PodGroupRules(
        minor=gates.version.minor,
        generic_workload=gates.enabled(GENERIC_WORKLOAD),
        topology_aware=gates.enabled(TOPOLOGY_AWARE_WORKLOAD_SCHEDULING),
        workload_aware_preemption=gates.enabled(WORKLOAD_AWARE_PREEMPTION),
        preemption_policy=gates.enabled(POD_GROUP_PREEMPTION_POLICY),
        composite=gates.enabled(COMPOSITE_POD_GROUP),
        resource_claims=gates.enabled(DRA_WORKLOAD_RESOURCE_CLAIMS),
        protection_admission=VersionRules.at(gates.version).podgroup_protection_admission,
    )


def dra_rules(gates: FeatureGates) -> DraRules:
    """resource.k8s.io's gated fields at the gates (kemu.machinery.dra)."""
    return DraRules(
        dynamic_resource_allocation=gates.enabled(DYNAMIC_RESOURCE_ALLOCATION),
        admin_access=gates.enabled(DRA_ADMIN_ACCESS),
        prioritized_list=gates.enabled(DRA_PRIORITIZED_LIST),
        device_taints=gates.enabled(DRA_DEVICE_TAINTS),
        partitionable_devices=gates.enabled(DRA_PARTITIONABLE_DEVICES),
        consumable_capacity=gates.enabled(DRA_CONSUMABLE_CAPACITY),
        binding_conditions=gates.enabled(DRA_DEVICE_BINDING_CONDITIONS),
        device_status=gates.enabled(DRA_RESOURCE_CLAIM_DEVICE_STATUS),
        extended_resource=gates.enabled(DRA_EXTENDED_RESOURCE),
    )


def strategy_options(gates: FeatureGates) -> StrategyOptions:
    return StrategyOptions(
        match_label_keys_merge=gates.enabled(
            MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE
        ),
        pod_scheduling_readiness=gates.enabled(POD_SCHEDULING_READINESS),
        node_pod_preemption_policy=gates.enabled(
            IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION
        ),
        pod_observed_generation=gates.enabled(POD_OBSERVED_GENERATION_TRACKING),
        pod_host_ips=gates.enabled(POD_HOST_IPS),
        pod_level_resources=gates.enabled(POD_LEVEL_RESOURCES),
        pod_groups=pod_group_rules(gates),
        job_scheduling=gates.enabled(WORKLOAD_WITH_JOB)
        and VersionRules.at(gates.version).job_workload_builder,
        dra=dra_rules(gates),
    )
