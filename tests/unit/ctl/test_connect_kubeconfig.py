"""Which apiserver kemuctl talks to, and with which TLS (issue #60 item 1): kubectl's order
of --kubeconfig and $KUBECONFIG, make run's .kemu/kubeconfig, --server and $KEMU_SERVER."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kemu.client.endpoints import add_server_flag, apiserver_connection
from kemu.ctl.connect import Target, target
from kemu.machinery import kubeconfig

TLS = kubeconfig.ClientTLS(b"CA", b"CERT", b"KEY")


@pytest.fixture
def config(tmp_path: Path) -> Path:
    return kubeconfig.write(
        tmp_path / "k",
        "https://127.0.0.1:7445",
        grpc_server="127.0.0.1:7443",
        ca=b"CA",
        cert=b"CERT",
        key=b"KEY",
    )


def test_the_kubeconfig_names_the_server_and_its_tls(config: Path) -> None:
    assert target(None, str(config), {}) == Target("127.0.0.1:7443", TLS)
    assert target(None, None, {"KUBECONFIG": f"/none:{config}"}) == Target("127.0.0.1:7443", TLS)


def test_a_server_named_elsewhere_wins_and_is_plaintext_unless_it_is_the_kubeconfigs(
    config: Path,
) -> None:
    env = {"KUBECONFIG": str(config)}
    assert target("127.0.0.1:9000", None, env) == Target("127.0.0.1:9000", None)
    assert target(None, None, {**env, "KEMU_SERVER": "127.0.0.1:7443"}) == Target(
        "127.0.0.1:7443", TLS
    )


def test_make_runs_kubeconfig_is_read_only_when_nothing_names_a_server(
    config: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".kemu").mkdir()
    config.rename(tmp_path / ".kemu" / "kubeconfig")
    monkeypatch.chdir(tmp_path)
    assert target(None, None, {}) == Target("127.0.0.1:7443", TLS)
    assert target(None, None, {"KEMU_SERVER": "127.0.0.1:6443"}) == Target("127.0.0.1:6443")


def test_without_any_kubeconfig_it_is_the_default_in_plaintext(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert target(None, None, {}) == Target("127.0.0.1:6443")


def test_a_components_kubeconfig_flag_and_server_flag(config: Path) -> None:
    parser = argparse.ArgumentParser()
    add_server_flag(parser)
    assert apiserver_connection(parser.parse_args(["--kubeconfig", str(config)])) == (
        "127.0.0.1:7443",
        TLS,
    )
    both = parser.parse_args(["--kubeconfig", str(config), "--server", "127.0.0.1:1"])
    assert apiserver_connection(both) == ("127.0.0.1:1", TLS)  # upstream's --master


def test_a_bad_kubeconfig_flag_is_an_argument_error_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad").write_text("clusters: 3\ncurrent-context: x\n")
    parser = argparse.ArgumentParser(prog="scheduler")
    add_server_flag(parser)
    with pytest.raises(SystemExit):
        parser.parse_args(["--kubeconfig", str(tmp_path / "bad")])
    assert "argument --kubeconfig: " in capsys.readouterr().err
