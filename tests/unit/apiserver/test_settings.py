"""The apiserver's flags become one frozen settings tree in main (apiserver/settings.py)."""

from __future__ import annotations

import dataclasses

import pytest

from apiserver.admission.default_toleration_seconds import DefaultTolerationSeconds
from apiserver.options import parse_settings
from apiserver.settings import EtcdSettings, InflightSettings, ServingSettings
from kemu.component.secure_serving import SecureServing


def test_the_flags_become_the_settings_tree() -> None:
    settings, options = parse_settings(
        [
            "--etcd-servers",
            "http://a:2379, http://b:2379",
            "--bind-address",
            "0.0.0.0",
            "--port",
            "7443",
            "--rest-port",
            "7445",
            "--cert-dir",  # (TLS: plaintext is refused on 0.0.0.0)
            "certs",
            "--max-requests-inflight",
            "0",
            "--default-unreachable-toleration-seconds",
            "30",
            "--clock",
            "virtual",
            "--clock-start",
            "2030-01-01T00:00:00Z",
        ]
    )
    assert settings.serving == ServingSettings(
        "0.0.0.0", 7443, 7445, SecureServing(cert_dir="certs", pair_name="apiserver")
    )
    assert settings.serving.address == "0.0.0.0:7443"
    assert settings.etcd == EtcdSettings(("http://a:2379", "http://b:2379"), 300.0)
    assert settings.inflight == InflightSettings(0, 200)
    assert settings.toleration_seconds == DefaultTolerationSeconds(not_ready=300, unreachable=30)
    assert settings.watch_bookmark_frequency == 60.0
    assert settings.clock_start == 1893456000.0
    assert options.clock.value == "virtual"
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.serving.port = 1  # type: ignore[misc]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--port", "0"], "--port: 0 is not a port"),
        (["--etcd-servers", " , "], "--etcd-servers: at least one URL is required"),
        (["--max-mutating-requests-inflight", "-1"], "--max-mutating-requests-inflight: -1"),
        (["--clock-start", "2030-01-01T00:00:00Z"], "--clock-start: needs --clock virtual"),
        (
            ["--bind-address", "0.0.0.0"],
            "--bind-address: refusing to serve plaintext on non-loopback address 0.0.0.0",
        ),
        (["--client-ca-file", "ca.crt"], "--client-ca-file: needs TLS"),
    ],
)
def test_a_flag_in_error_is_named(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        parse_settings(argv)
    assert message in capsys.readouterr().err
