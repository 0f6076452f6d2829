"""kube-apiserver's --runtime-config (kemu.machinery.runtime_config) and what it serves with the
emulated version and the gates (kemu.machinery.kinds Served.at): upstream's defaults (alpha
off, beta off from 1.24), its override order and its start-up errors (S-API-RC-1..4)."""

from __future__ import annotations

import pytest

from kemu.machinery.kinds import KINDS, Served, registered_group_versions
from kemu.machinery.runtime_config import (
    LEGACY_BETA_ON_BY_DEFAULT,
    RuntimeConfig,
    RuntimeConfigError,
    enabled_by_default,
)

V1ALPHA1 = "scheduling.k8s.io/v1alpha1"
V1ALPHA2 = "scheduling.k8s.io/v1alpha2"
V1ALPHA3 = "scheduling.k8s.io/v1alpha3"
V1BETA1 = "scheduling.k8s.io/v1beta1"
GATES = {"GenericWorkload", "CompositePodGroup"}


def served(minor: int, *flags: str, gates: set[str] = GATES) -> dict[str, tuple[str, ...]]:
    """The pod-group kinds served (kind -> group versions)."""
    at = Served.at(minor, gates.__contains__, RuntimeConfig.parse(flags))
    return {
        k: v
        for k, v in at.api_versions.items()
        if k in ("Workload", "PodGroup", "CompositePodGroup")
    }


def test_s_api_rc_1_every_prerelease_version_kemu_serves_is_off_by_default() -> None:
    """upstream pkg/controlplane/instance.go: alpha versions are always off by default, beta
    versions from 1.24 (KEP-3136; TestNoBetaVersionsEnabledByDefault); GA versions are on. At
    every emulated version, kemu serves without a runtime config exactly its GA versions."""
    for minor in range(21, 38):
        for gv in registered_group_versions(minor):
            version = gv.rpartition("/")[2]
            ga = version.rstrip("0123456789") == "v"
            assert enabled_by_default(gv, minor) == (ga or gv in LEGACY_BETA_ON_BY_DEFAULT), gv
        assert served(minor) == {}
        at = Served.at(minor, lambda gate: True, RuntimeConfig())
        # (a kind whose versions start later, as flowcontrol's at 1.26, from there)
        born = {
            k.kind for k in KINDS if not k.gate and (not k.versions or k.versions[0][0] <= minor)
        }
        assert born <= set(at.api_versions)
    assert enabled_by_default("autoscaling/v2beta2", 23)
    assert not enabled_by_default("storage.k8s.io/v1beta1", 24)


def test_s_api_rc_2_a_group_version_needs_its_runtime_config_and_its_gate() -> None:
    """pkg/registry/scheduling/rest: the kind's storage needs the group version enabled and
    its feature gate on."""
    assert served(37, "scheduling.k8s.io/v1beta1=true") == {
        "Workload": (V1BETA1,),
        "PodGroup": (V1BETA1,),
    }
    assert served(37, "scheduling.k8s.io/v1beta1=true", gates=set()) == {}
    assert served(37, "api/all=true") == {
        "Workload": (V1BETA1, V1ALPHA3),
        "PodGroup": (V1BETA1, V1ALPHA3),
        "CompositePodGroup": (V1ALPHA3,),
    }
    assert served(37, "api/all=true", gates={"GenericWorkload"}) == {
        "Workload": (V1BETA1, V1ALPHA3),
        "PodGroup": (V1BETA1, V1ALPHA3),
    }
    assert served(36, "api/alpha=true") == {"Workload": (V1ALPHA2,), "PodGroup": (V1ALPHA2,)}
    assert served(35, "scheduling.k8s.io/v1alpha1") == {"Workload": (V1ALPHA1,)}  # bare: true


def test_s_api_rc_3_overrides_apply_in_upstreams_order() -> None:
    """resourceconfig.MergeAPIResourceConfigs: api/all, api/ga, api/beta, api/alpha, then each
    group/version, then each group/version/resource (which wins over its version)."""
    assert served(37, "api/all=true", "api/alpha=false") == {
        "Workload": (V1BETA1,),
        "PodGroup": (V1BETA1,),
    }
    assert served(37, "api/alpha=true,scheduling.k8s.io/v1alpha3=false") == {}
    assert served(
        37, "scheduling.k8s.io/v1alpha3=true", "scheduling.k8s.io/v1alpha3/workloads=false"
    ) == {"PodGroup": (V1ALPHA3,), "CompositePodGroup": (V1ALPHA3,)}
    assert served(37, "scheduling.k8s.io/v1beta1/podgroups=true") == {"PodGroup": (V1BETA1,)}
    # a later occurrence of a key wins (ConfigurationMap)
    assert served(37, "scheduling.k8s.io/v1beta1=true", "scheduling.k8s.io/v1beta1=false") == {}
    # the core group: v1 and api/v1 are the version /v1
    assert RuntimeConfig.parse(["api/v1=true,v1=false,api/legacy=false"]).entries == {
        "/v1": "false"
    }
    core_off = Served.at(37, GATES.__contains__, RuntimeConfig.parse(["v1=false"]))
    assert "Pod" not in core_off.api_versions and "Deployment" in core_off.api_versions


@pytest.mark.parametrize(
    ("minor", "flag", "message"),
    [
        (37, "api/all=false", "invalid key with only api/all=false"),
        (37, "foo", "runtime-config invalid key foo"),
        (37, "a/b/c/d=true", "runtime-config invalid key a/b/c/d"),
        (37, "example.com/v1=true", "unknown api groups example.com"),
        (37, "api/beta=yes", "invalid value api/beta=yes"),
        (
            37,
            "scheduling.k8s.io/v1beta1=on",
            'invalid value of scheduling.k8s.io/v1beta1: on, err: strconv.ParseBool: parsing "on": '
            "invalid syntax",
        ),
        (
            36,
            "scheduling.k8s.io/v1beta1=true",
            f"group version {V1BETA1} that has not been registered",
        ),
        (
            37,
            "scheduling.k8s.io/v1alpha2=true",
            f"group version {V1ALPHA2} that has not been registered",
        ),
        (
            37,
            "scheduling.k8s.io/v1beta1/PodGroups=true",
            "invalid key scheduling.k8s.io/v1beta1/PodGroups: group/version/resource and resource "
            'is always lowercase plural, not "PodGroups"',
        ),
    ],
)
def test_s_api_rc_4_a_key_or_value_upstream_refuses_is_an_error_naming_it(
    minor: int, flag: str, message: str
) -> None:
    """api_enablement.go Validate and helpers.go MergeAPIResourceConfigs: upstream's messages."""
    with pytest.raises(RuntimeConfigError) as caught:
        served(minor, flag)
    assert str(caught.value) == message


def test_group_versions_kemu_does_not_model_are_accepted() -> None:
    """A group version of an upstream group that kemu serves no kind of (DRA's, 1.21's
    PriorityClass betas) is accepted and changes nothing kemu serves."""
    assert served(37, "resource.k8s.io/v1beta1=true,storage.k8s.io/v1alpha1=true") == {}
    Served.at(21, GATES.__contains__, RuntimeConfig.parse(["scheduling.k8s.io/v1beta1=true"]))
