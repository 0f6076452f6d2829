from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from kemu.component import featuregate as fg
from kemu.component.options import (
    ComponentOptions,
    FlagError,
    OptionsError,
    add_component_flags,
    check_flags,
    new_parser,
    parse_component_args,
)
from kemu.component.secure_serving import add_secure_serving_flags
from kemu.component.version import Version


def parse(argv: list[str]) -> ComponentOptions:
    parser = new_parser("scheduler", "test", default_metrics_port=10259)
    return parse_component_args(parser, argv, "scheduler")[1]


def test_defaults() -> None:
    options = parse([])
    assert options.component == "scheduler"
    assert options.version == Version(1, 37)
    assert options.gates == fg.FeatureGates.default()
    assert options.metrics_port == 10259
    assert options.metrics_bind_address == "127.0.0.1"
    assert options.verbosity == 0
    assert options.shutdown_grace_period == 10.0


def test_every_flag_is_read() -> None:
    options = parse(
        [
            "--emulated-version=1.34",
            "--feature-gates",
            "NominatedNodeNameForExpectation=true",
            "--feature-gates=SchedulerAsyncPreemption=false",
            "--metrics-port=0",
            "--metrics-bind-address",
            "0.0.0.0",
            "-v",
            "4",
            "--shutdown-grace-period=2.5",
        ]
    )
    assert options.version == Version(1, 34)
    assert options.gates.enabled(fg.NOMINATED_NODE_NAME_FOR_EXPECTATION)
    assert not options.gates.enabled(fg.SCHEDULER_ASYNC_PREEMPTION)
    assert options.metrics_port is None  # 0 disables the endpoint
    assert options.metrics_bind_address == "0.0.0.0"
    assert options.verbosity == 4
    assert options.shutdown_grace_period == 2.5
    assert parse(["--v=2"]).verbosity == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--emulated-version=1.20"], "--emulated-version: emulated version 1.20 is not supported"),
        (["--emulated-version=latest"], '--emulated-version: invalid version "latest"'),
        (
            ["--emulated-version=1.33", "--feature-gates=NominatedNodeNameForExpectation=true"],
            '--feature-gates: feature gate "NominatedNodeNameForExpectation" does not exist at '
            "emulated version 1.33 (introduced in 1.34)",
        ),
        (
            ["--feature-gates=InPlacePodVerticalScaling=false"],
            "locked to true (GA) at emulated version 1.37",
        ),
        (["--feature-gates=Foo"], 'missing "=" in feature gate entry "Foo"'),
        (["--metrics-port=70000"], "--metrics-port: 70000 is not a port"),
        (["--metrics-port=http"], "argument --metrics-port: invalid int value: 'http'"),
        (["--v=-1"], "--v: verbosity -1 must not be negative"),
        (["--shutdown-grace-period=-1"], "--shutdown-grace-period: -1 must be >= 0"),
        (["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
    ],
)
def test_errors_are_one_line_and_exit_code_1(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        parse(argv)
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("scheduler: error: ")
    assert message in err


def test_from_args_raises_options_error_for_a_plain_parser() -> None:
    parser = argparse.ArgumentParser()
    add_component_flags(parser, default_metrics_port=0)
    args = parser.parse_args(["--emulated-version=1.99"])
    with pytest.raises(OptionsError, match="1.99 is not supported"):
        ComponentOptions.from_args(args, "kubelet")


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parse(["--help"])
    assert info.value.code == 0
    assert "--emulated-version" in capsys.readouterr().out


def test_for_tests_takes_the_version_from_the_gates() -> None:
    gates = fg.FeatureGates.for_version(Version(1, 30))
    options = ComponentOptions.for_tests("kubelet", gates=gates, metrics_port=0)
    assert options.version == Version(1, 30)
    assert options.metrics_port == 0


def test_check_flags_raises_the_line_the_process_would_print(
    capsys: pytest.CaptureFixture[str],
) -> None:
    parser = new_parser("scheduler", "test", default_metrics_port=10259)
    parser.add_argument("--port", type=int, default=1)
    assert check_flags(parser, ["--port", "2"]).port == 2
    with pytest.raises(FlagError, match="^unrecognized arguments: --nope$"):
        check_flags(parser, ["--nope"])
    with pytest.raises(FlagError, match="^argument --port: invalid int value: 'x'$"):
        check_flags(parser, ["--port", "x"])
    with pytest.raises(SystemExit) as exited:  # the process's own parser still exits
        parser.parse_args(["--nope"])
    assert exited.value.code == 1
    assert capsys.readouterr().err == "scheduler: error: unrecognized arguments: --nope\n"


def test_a_plaintext_metrics_endpoint_off_loopback_is_refused_unless_allowed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as info:
        parse(["--metrics-bind-address", "10.213.0.2"])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err == (
        "scheduler: error: --metrics-bind-address: refusing to serve plaintext on non-loopback "
        "address 10.213.0.2: give --allow-insecure-bind\n"
    )
    allowed = parse(["--metrics-bind-address", "10.213.0.2", "--allow-insecure-bind"])
    assert allowed.metrics_bind_address == "10.213.0.2"
    assert not allowed.metrics_serving.enabled
    assert parse(["--metrics-bind-address", "127.0.0.2"]).metrics_bind_address == "127.0.0.2"


def kubelet_parser() -> argparse.ArgumentParser:
    parser = new_parser("kubelet", "test", default_metrics_port=10255)
    add_secure_serving_flags(parser, pair_name="kubelet")
    return parser


def test_a_component_whose_tls_flags_serve_its_metrics_serves_them_off_loopback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The kubelet's --tls-cert-file/--tls-private-key-file (or --cert-dir) serve its metrics
    endpoint; without them, off loopback, the refusal names them."""
    argv = ["--metrics-bind-address", "10.213.0.2", "--cert-dir", str(tmp_path)]
    _, options = parse_component_args(kubelet_parser(), argv, "kubelet", metrics_pair="kubelet")
    assert options.metrics_serving.cert_file == str(tmp_path / "kubelet.crt")
    assert (tmp_path / "kubelet.key").is_file()  # generated, self-signed, for the address
    with pytest.raises(SystemExit):
        parse_component_args(
            kubelet_parser(),
            ["--metrics-bind-address", "10.213.0.2"],
            "kubelet",
            metrics_pair="kubelet",
        )
    assert capsys.readouterr().err == (
        "kubelet: error: --metrics-bind-address: refusing to serve plaintext on non-loopback "
        "address 10.213.0.2: give TLS (--tls-cert-file and --tls-private-key-file, or "
        "--cert-dir) or --allow-insecure-bind\n"
    )
