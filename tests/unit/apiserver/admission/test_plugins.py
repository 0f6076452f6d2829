"""--enable-admission-plugins and --disable-admission-plugins (issue #57 item 5): upstream's
names and default-on set, an unknown name refused at start-up naming it, and the chain
following the set."""

from __future__ import annotations

import pytest

from apiserver.admission.chain import AdmissionChain
from apiserver.admission.plugins import (
    ALL_ORDERED_PLUGINS,
    DEFAULT_PLUGINS,
    MODELLED,
    AdmissionPlugins,
    UnknownPlugins,
    default_on,
    registered,
)
from apiserver.options import parse_settings
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kemu.testing.builders import make_pod

pytestmark = pytest.mark.anyio


def test_the_default_set_is_upstreams_default_on_plugins() -> None:
    on = DEFAULT_PLUGINS.ordered()
    assert on[:3] == ["NamespaceLifecycle", "LimitRanger", "ServiceAccount"]
    assert on[-3:] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"]
    assert "AlwaysPullImages" not in on and "AlwaysDeny" not in on
    # PodGroupWorkloadExists was 1.36's only; NodeRestriction is off unless enabled (kubeadm
    # and kind enable it)
    assert MODELLED - {"PodGroupWorkloadExists", "NodeRestriction"} <= DEFAULT_PLUGINS.enabled
    assert "NodeRestriction" not in DEFAULT_PLUGINS.enabled
    assert MODELLED <= set(ALL_ORDERED_PLUGINS)


def _at(minor: int) -> VersionRules:
    return VersionRules.at(Version(1, minor))


@pytest.mark.parametrize(
    ("minor", "registered_names", "not_registered", "on", "off"),
    [
        (
            21,
            {"PodSecurityPolicy", "SecurityContextDeny", "PersistentVolumeLabel"},
            {"PodSecurity", "ValidatingAdmissionPolicy", "PodTopologyLabels"},
            {"NamespaceLifecycle", "RuntimeClass", "DefaultIngressClass"},
            {"PodSecurityPolicy"},
        ),
        (
            22,
            {"PodSecurity", "PodSecurityPolicy"},
            {"ClusterTrustBundleAttest"},
            set(),
            {"PodSecurity"},
        ),
        (23, {"PodSecurity"}, set(), {"PodSecurity"}, {"PodSecurityPolicy"}),
        (25, {"PodSecurity"}, {"PodSecurityPolicy"}, {"PodSecurity"}, set()),
        (
            26,
            {"ValidatingAdmissionPolicy"},
            {"MutatingAdmissionPolicy"},
            {"ValidatingAdmissionPolicy"},
            set(),
        ),
        (27, {"ClusterTrustBundleAttest"}, set(), {"ClusterTrustBundleAttest"}, set()),
        (30, {"PersistentVolumeLabel"}, {"SecurityContextDeny"}, set(), {"PersistentVolumeLabel"}),
        (31, set(), {"PersistentVolumeLabel"}, set(), set()),
        (
            32,
            {"MutatingAdmissionPolicy"},
            {"PodTopologyLabels"},
            {"MutatingAdmissionPolicy"},
            set(),
        ),
        (33, {"PodTopologyLabels"}, {"NodeDeclaredFeatureValidator"}, {"PodTopologyLabels"}, set()),
        (
            35,
            {"NodeDeclaredFeatureValidator"},
            {"JobValidation"},
            {"NodeDeclaredFeatureValidator"},
            set(),
        ),
        (
            36,
            {"JobValidation", "PodResizeValidator", "PodGroupWorkloadExists"},
            {"PodGroupProtection"},
            {"JobValidation", "PodResizeValidator", "PodGroupWorkloadExists"},
            set(),
        ),
        (37, {"PodGroupProtection"}, {"PodGroupWorkloadExists"}, {"PodGroupProtection"}, set()),
    ],
)
def test_the_names_and_the_default_set_are_the_emulated_versions(
    minor: int,
    registered_names: set[str],
    not_registered: set[str],
    on: set[str],
    off: set[str],
) -> None:
    """pkg/kubeapiserver/options/plugins.go at each version: the plugins that came and went
    between 1.21 and 1.37, and the default-on set."""
    rules = _at(minor)
    names = set(registered(rules))
    assert registered_names <= names and not (not_registered & names)
    defaults = AdmissionPlugins.from_flags([], [], rules)
    assert on <= defaults.enabled and not (off & defaults.enabled)
    assert defaults.enabled == default_on(rules) <= names


def test_a_plugin_of_another_version_is_refused_naming_the_versions_that_have_it() -> None:
    with pytest.raises(UnknownPlugins) as e:
        AdmissionPlugins.from_flags(["PodSecurityPolicy"], ["PodSecurity"], _at(26))
    assert str(e.value) == (
        'enable-admission-plugins plugin "PodSecurityPolicy" is unknown at emulated version '
        "1.26 (kube-apiserver 1.21-1.24 registers it)"
    )
    with pytest.raises(UnknownPlugins) as e:
        AdmissionPlugins.from_flags([], ["PodSecurity", "PodTopologyLabels"], _at(21))
    assert str(e.value) == (
        'disable-admission-plugins plugin "PodSecurity" is unknown at emulated version 1.21 '
        "(kube-apiserver 1.22-1.37 registers it); disable-admission-plugins plugin "
        '"PodTopologyLabels" is unknown at emulated version 1.21 (kube-apiserver 1.33-1.37 '
        "registers it)"
    )
    with pytest.raises(UnknownPlugins, match=r"kube-apiserver 1\.36 registers it"):
        AdmissionPlugins.from_flags(["PodGroupWorkloadExists"], [], _at(37))
    # at a version that has them, the same flags are accepted
    plugins = AdmissionPlugins.from_flags(["PodSecurityPolicy"], ["PodSecurity"], _at(24))
    assert plugins.on("PodSecurityPolicy") and not plugins.on("PodSecurity")


def test_the_emulated_versions_flags_are_checked_at_start_up(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _ = parse_settings(
        ["--emulated-version", "1.24", "--enable-admission-plugins", "PodSecurityPolicy"]
    )
    assert settings.admission.on("PodSecurityPolicy")
    assert not settings.admission.on("ValidatingAdmissionPolicy")
    with pytest.raises(SystemExit):
        parse_settings(["--enable-admission-plugins", "PodSecurityPolicy"])
    assert (
        'enable-admission-plugins plugin "PodSecurityPolicy" is unknown at emulated version 1.37'
    ) in capsys.readouterr().err


def test_enable_adds_and_disable_removes() -> None:
    plugins = AdmissionPlugins.from_flags(["AlwaysPullImages"], ["ServiceAccount", "Priority"])
    assert plugins.on("AlwaysPullImages")
    assert not plugins.on("ServiceAccount") and not plugins.on("Priority")
    assert plugins.on("NamespaceLifecycle")
    assert plugins.not_modelled() == ["AlwaysPullImages"]


def test_an_unknown_or_overlapping_plugin_is_refused_naming_it() -> None:
    with pytest.raises(UnknownPlugins) as e:
        AdmissionPlugins.from_flags(["Bogus"], ["Nope", "Priority"])
    assert str(e.value) == (
        'enable-admission-plugins plugin "Bogus" is unknown; '
        'disable-admission-plugins plugin "Nope" is unknown'
    )
    with pytest.raises(UnknownPlugins, match=r"\[Priority\] in enable-admission-plugins and "):
        AdmissionPlugins.from_flags(["Priority"], ["Priority"])


def test_the_flags_parse_as_comma_lists_and_an_unknown_name_exits_naming_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings, _ = parse_settings(
        [
            "--disable-admission-plugins",
            "ServiceAccount, Priority",
            "--enable-admission-plugins=AlwaysPullImages",
        ]
    )
    assert not settings.admission.on("ServiceAccount") and not settings.admission.on("Priority")
    assert settings.admission.on("AlwaysPullImages")
    with pytest.raises(SystemExit) as e:
        parse_settings(["--enable-admission-plugins", "NamespaceLifecycle,Bogus"])
    assert e.value.code != 0
    assert 'enable-admission-plugins plugin "Bogus" is unknown' in capsys.readouterr().err


async def test_a_disabled_plugin_does_not_run() -> None:
    """Priority and DefaultTolerationSeconds off: the pod keeps no priority and no added
    tolerations (the chain reads no cache for them)."""
    off = AdmissionPlugins.from_flags(
        [], ["Priority", "DefaultTolerationSeconds", "LimitRanger", "ServiceAccount"]
    )
    chain = AdmissionChain({}, {}, plugins=off)
    pod = make_pod("p").obj()
    await chain.admit_create(pod)
    assert not pod.spec.HasField("priority")
    assert not pod.spec.tolerations
    assert not pod.spec.service_account_name
    on = AdmissionPlugins.from_flags([], ["Priority", "LimitRanger", "ServiceAccount"])
    await AdmissionChain({}, {}, plugins=on).admit_create(pod)
    assert len(pod.spec.tolerations) == 2
