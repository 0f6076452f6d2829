"""The feature gates the apiserver's strategies read (kemu.machinery.strategy), resolved once
from a process's gates: one place for the apiserver's registry and kemu.client's FakeClient."""

from __future__ import annotations

from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING_SCHEDULER_PREEMPTION,
    MATCH_LABEL_KEYS_IN_POD_TOPOLOGY_SPREAD_SELECTOR_MERGE,
    POD_HOST_IPS,
    POD_LEVEL_RESOURCES,
    POD_OBSERVED_GENERATION_TRACKING,
    POD_SCHEDULING_READINESS,
    WORKLOAD_WITH_JOB,
    FeatureGates,
)
from kemu.component.version_rules import VersionRules
from kemu.machinery.strategy import StrategyOptions


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
        job_scheduling=gates.enabled(WORKLOAD_WITH_JOB)
        and VersionRules.at(gates.version).job_workload_builder,
    )
