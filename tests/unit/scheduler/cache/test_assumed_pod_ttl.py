"""The assumed pods' expiry of the emulated version (upstream's durationToExpireAssumedPod)."""

from __future__ import annotations

import pytest

from kemu.component.clock import FakeClock
from kemu.component.featuregate import FeatureGates
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from scheduler.app import new_cache
from scheduler.cache.cache import assumed_pod_ttl


@pytest.mark.parametrize(
    ("version", "ttl"),
    [("1.21", 120.0), ("1.22", 120.0), ("1.23", 900.0), ("1.24", 0.0), ("1.37", 0.0)],
)
def test_the_scheduler_cache_expires_assumed_pods_as_its_version_did(
    version: str, ttl: float
) -> None:
    assert assumed_pod_ttl(VersionRules.at(Version.parse(version))) == ttl
    assert new_cache(FakeClock(), FeatureGates.for_version(Version.parse(version))).ttl == ttl
