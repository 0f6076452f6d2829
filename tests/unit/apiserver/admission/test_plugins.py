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
)
from apiserver.options import parse_settings
from kemu.testing.builders import make_pod

pytestmark = pytest.mark.anyio


def test_the_default_set_is_upstreams_default_on_plugins() -> None:
    on = DEFAULT_PLUGINS.ordered()
    assert on[:3] == ["NamespaceLifecycle", "LimitRanger", "ServiceAccount"]
    assert on[-3:] == ["ValidatingAdmissionPolicy", "ValidatingAdmissionWebhook", "ResourceQuota"]
    assert "AlwaysPullImages" not in on and "AlwaysDeny" not in on
    assert MODELLED <= DEFAULT_PLUGINS.enabled
    assert MODELLED <= set(ALL_ORDERED_PLUGINS)


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
