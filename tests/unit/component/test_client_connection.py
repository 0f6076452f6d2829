"""Each component's client rate limit flags (issue #58 item 2): upstream's names and defaults,
the kubelet's by version, and a clear error naming the flag for a bad value."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoscaler import options as autoscaler_options
from controllermanager import options as cm_options
from kemu.component.client_connection import ClientConnection
from kemu.component.featuregate import FeatureGates
from kemu.component.options import ComponentOptions
from kemu.component.version import Version
from kemu.component.version_rules import VersionRules
from kubelet import options as kubelet_options
from scheduler import options as scheduler_options


def test_kube_controller_manager_defaults_to_20_and_30() -> None:
    parser = cm_options.build_parser()
    settings = cm_options.settings_from_args(parser, parser.parse_args([]))
    assert settings.client_connection == ClientConnection(20.0, 30)
    given = parser.parse_args(["--kube-api-qps", "100", "--kube-api-burst", "200"])
    assert cm_options.settings_from_args(parser, given).client_connection == ClientConnection(
        100.0, 200
    )


def test_kube_controller_manager_refuses_a_negative_burst_naming_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = cm_options.build_parser()
    with pytest.raises(SystemExit):
        cm_options.settings_from_args(parser, parser.parse_args(["--kube-api-burst", "-1"]))
    assert "--kube-api-burst: Invalid value: -1: must be non-negative" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("minor", "expected"), [(26, ClientConnection(5.0, 10)), (27, ClientConnection(50.0, 100))]
)
def test_the_kubelets_defaults_follow_kubernetes_116121(
    minor: int, expected: ClientConnection
) -> None:
    parser = kubelet_options.build_parser()
    args = parser.parse_args(["--node-name", "n"])
    rules = VersionRules.at(Version(1, minor))
    settings = kubelet_options.settings_from_args(args, f"v1.{minor}.0", rules)
    assert settings.client_connection == expected
    args = parser.parse_args(["--node-name", "n", "--kube-api-qps", "7"])
    settings = kubelet_options.settings_from_args(args, f"v1.{minor}.0", rules)
    assert settings.client_connection == ClientConnection(7.0, expected.burst)


def test_the_kubelet_refuses_a_negative_qps() -> None:
    parser = kubelet_options.build_parser()
    args = parser.parse_args(["--node-name", "n", "--kube-api-qps", "-1"])
    with pytest.raises(ValueError, match="--kube-api-qps: -1 must not be a negative number"):
        kubelet_options.settings_from_args(args, "v1.37.0")


def test_the_cluster_autoscaler_has_kube_client_flags_at_client_gos_defaults(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = autoscaler_options.build_parser()
    options = ComponentOptions.for_tests(autoscaler_options.COMPONENT)
    base = ["--cloud-provider-address", "127.0.0.1:1"]
    settings = autoscaler_options.settings_from_args(parser, parser.parse_args(base), options)
    assert settings.client_connection == ClientConnection(5.0, 10)
    args = parser.parse_args([*base, "--kube-client-qps", "40", "--kube-client-burst", "80"])
    settings = autoscaler_options.settings_from_args(parser, args, options)
    assert settings.client_connection == ClientConnection(40.0, 80)
    with pytest.raises(SystemExit):
        args = parser.parse_args([*base, "--kube-client-burst", "-3"])
        autoscaler_options.settings_from_args(parser, args, options)
    assert "--kube-client-burst: Invalid value: -3" in capsys.readouterr().err


def test_the_schedulers_deprecated_flags_apply_without_a_config_file(tmp_path: Path) -> None:
    parser = scheduler_options.build_parser()
    gates = FeatureGates.default()
    plain = scheduler_options.settings_from_flags(parser, parser.parse_args([]), None, gates)
    assert plain.config.client_connection == ClientConnection(50.0, 100)
    args = parser.parse_args(["--kube-api-qps", "10", "--kube-api-burst", "20"])
    flags = scheduler_options.settings_from_flags(parser, args, None, gates)
    assert flags.config.client_connection == ClientConnection(10.0, 20)
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "clientConnection: {qps: 3, burst: 4}\n"
    )
    args = parser.parse_args(["--config", str(config), "--kube-api-qps", "10"])
    filed = scheduler_options.settings_from_flags(parser, args, None, gates)
    assert filed.config.client_connection == ClientConnection(3.0, 4)
