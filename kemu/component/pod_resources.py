"""How a process counts a pod's requests, resolved once from its gates and emulated version.

Upstream's components each pass component-helpers' `PodResourcesOptions` from their own
feature gates (the scheduler's NodeResourcesFit and BalancedAllocation through
`feature.Features`, the kubelet's admission and allocation manager, cluster-autoscaler's
simulations); kemu builds that value in this one place and every process passes it down:

* `use_status_resources`: InPlacePodVerticalScaling (a resizing pod counts at the largest of
  its desired, allocated and actual sizes);
* `pod_level_resources`: PodLevelResources (KEP-2837: spec.resources replaces the containers'
  sum for cpu, memory and hugepages; upstream's `SkipPodLevelResources` is its negation);
* `per_container_max`: the aggregation rule of the emulated version, changed in 1.37 without a
  gate (kemu.component.version_rules, `max_of_sums`).

Readers that count only a pod's spec (the kubelet's admission, kemuctl) ignore the first.
"""

from __future__ import annotations

import functools

from kemu.component.featuregate import (
    IN_PLACE_POD_VERTICAL_SCALING,
    POD_LEVEL_RESOURCES,
    FeatureGates,
)
from kemu.component.version_rules import VersionRules
from kemu.machinery.resources import PodResourcesOptions


@functools.lru_cache(maxsize=64)
def pod_resources_options(gates: FeatureGates) -> PodResourcesOptions:
    """The PodResourcesOptions of a process running with `gates` (at `gates.version`); one
    instance per gates, so that its readers (the scheduler's cache and plugins) hold the same
    value."""
    return PodResourcesOptions(
        use_status_resources=gates.enabled(IN_PLACE_POD_VERTICAL_SCALING),
        pod_level_resources=gates.enabled(POD_LEVEL_RESOURCES),
        per_container_max=VersionRules.at(gates.version).per_container_max,
    )
