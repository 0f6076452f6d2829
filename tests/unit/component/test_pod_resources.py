"""kemu.component.pod_resources: one PodResourcesOptions per process, from its gates."""

from __future__ import annotations

from kemu.component.featuregate import FeatureGates
from kemu.component.pod_resources import pod_resources_options
from kemu.component.version import Version
from kemu.machinery.resources import SCHEDULER_DEFAULTS, PodResourcesOptions


def test_the_default_version_counts_as_the_scheduler_defaults() -> None:
    assert pod_resources_options(FeatureGates.default()) == SCHEDULER_DEFAULTS


def test_each_field_follows_its_gate_or_version_rule() -> None:
    at_1_33 = pod_resources_options(FeatureGates.for_version(Version(1, 33)))
    assert at_1_33 == PodResourcesOptions(
        use_status_resources=True, pod_level_resources=False, per_container_max=True
    )
    enabled = FeatureGates.for_version(Version(1, 33), {"PodLevelResources": True})
    assert pod_resources_options(enabled).pod_level_resources
    disabled = FeatureGates.for_version(Version(1, 37), {"PodLevelResources": False})
    assert not pod_resources_options(disabled).pod_level_resources
    at_1_32 = pod_resources_options(FeatureGates.for_version(Version(1, 32)))
    assert not at_1_32.use_status_resources


def test_one_instance_per_gates() -> None:
    gates = FeatureGates.for_version(Version(1, 36))
    assert pod_resources_options(gates) is pod_resources_options(
        FeatureGates.for_version(Version(1, 36))
    )
