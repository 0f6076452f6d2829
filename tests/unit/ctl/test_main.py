"""The command line itself: server address, connection errors, usage errors, version."""

from __future__ import annotations

import argparse
import io
import json
import socket
import subprocess
import sys

import pytest

from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.version import BINARY_VERSION
from kemu.ctl import main
from kemu.ctl.common import CtlError
from kemu.ctl.connect import server_address
from kemu.ctl.main import run

from .helpers import ctl, fake


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_server_comes_from_the_flag_then_the_environment_then_the_default() -> None:
    env = {"KEMU_SERVER": "10.0.0.1:7000"}
    assert server_address("h:1", env) == "h:1"
    assert server_address(None, env) == "10.0.0.1:7000"
    assert server_address(None, {}) == "127.0.0.1:6443"
    assert server_address("http://h:2/", {}) == "h:2"


async def _run_real(argv: list[str], environ: dict[str, str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = await run(argv, out=out, err=err, environ=environ)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.anyio
async def test_an_unreachable_server_is_one_line_naming_it() -> None:
    port = _closed_port()
    rc, out, err = await _run_real(["get", "pods", "--server", f"127.0.0.1:{port}"], {})
    assert (rc, out) == (1, "")
    assert (
        err == f"error: cannot reach the kemu apiserver at 127.0.0.1:{port}: connection refused\n"
    )


@pytest.mark.anyio
async def test_kemu_server_from_the_environment_is_used() -> None:
    port = _closed_port()
    rc, _, err = await _run_real(["-n", "x", "get", "pods"], {"KEMU_SERVER": f"127.0.0.1:{port}"})
    assert rc == 1
    assert f"at 127.0.0.1:{port}:" in err


@pytest.mark.anyio
async def test_local_errors_come_before_any_connection() -> None:
    port = _closed_port()
    rc, _, err = await _run_real(["get", "--server", f"127.0.0.1:{port}"], {})
    assert (rc, err) == (1, "error: you must specify the type of resource\n")
    rc, _, err = await _run_real(["version", "--client", "--server", f"127.0.0.1:{port}"], {})
    assert rc == 0


@pytest.mark.anyio
@pytest.mark.parametrize(
    "argv",
    [
        ["get", "pods", "--bogus"],
        ["frobnicate"],
        ["delete", "pod", "x", "--grace-period", "soon"],
        ["get", "pods", "--request-timeout", "x"],
    ],
)
async def test_usage_errors_are_one_line(argv: list[str]) -> None:
    result = await ctl(fake(), *argv)
    assert result.rc == 1
    assert result.err.startswith("error: ") and result.err.count("\n") == 1


@pytest.mark.anyio
async def test_version_prints_client_server_components_and_gates() -> None:
    client = fake()
    client.version_info.server.binary_version = BINARY_VERSION
    client.version_info.server.feature_gates.add(
        name="PreferNominatedNode", enabled=True, stage="BETA"
    )
    client.version_info.components.add(
        component="kube-scheduler",
        identity="sched-1",
        emulated_version="1.34",
        binary_version=BINARY_VERSION,
        feature_gates=[
            api_pb2.FeatureGateState(name="SchedulerAsyncPreemption", enabled=False),
            api_pb2.FeatureGateState(name="NominatedNodeNameForExpectation", enabled=True),
        ],
    )
    result = await ctl(client, "version")
    assert result.out.splitlines() == [
        "Client Version: v1.37.0-kemu",
        "Server Version: v1.37.0-kemu (emulated version 1.37)",
        "  Feature Gates: PreferNominatedNode=true",
        "Components:",
        "  kube-scheduler (sched-1): v1.37.0-kemu (emulated version 1.34)",
        "    Feature Gates: NominatedNodeNameForExpectation=true, SchedulerAsyncPreemption=false",
    ]
    data = json.loads((await ctl(client, "version", "-o", "json")).out)
    assert data["clientVersion"] == {"gitVersion": BINARY_VERSION}
    assert data["serverVersion"]["emulatedVersion"] == "1.37"
    assert data["components"][0]["featureGates"][0] == {
        "name": "SchedulerAsyncPreemption",
        "enabled": False,
        "stage": "",
        "locked": False,
    }


def test_python_m_kemu_ctl_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kemu.ctl", "version", "--client"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (
        0,
        f"Client Version: {BINARY_VERSION}\n",
        "",
    )


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("5", 5.0), ("0", main._NO_TIMEOUT), ("1m", 60.0), ("250ms", 0.25), ("-1s", main._NO_TIMEOUT)],
)
def test_request_timeout_is_kubectls_integer_seconds_or_a_duration(
    text: str, seconds: float
) -> None:
    assert main.request_timeout(argparse.Namespace(request_timeout=text)) == seconds


@pytest.mark.parametrize("text", ["x", "1.5", "-1", "5 s"])
def test_a_bad_request_timeout_names_the_flag(text: str) -> None:
    with pytest.raises(CtlError, match=f'invalid argument "{text}" for "--request-timeout" flag'):
        main.request_timeout(argparse.Namespace(request_timeout=text))


def test_flags_may_come_between_the_positionals_as_with_kubectl() -> None:
    args = main.parse_args(
        ["get", "configmap", "-n", "kube-system", "cluster-autoscaler-status", "-o", "yaml"]
    )
    assert args.targets == ["configmap", "cluster-autoscaler-status"]
    assert (args.namespace, args.output) == ("kube-system", "yaml")


@pytest.mark.anyio
async def test_get_by_name_after_the_namespace_flag() -> None:
    cm = types_pb2.ConfigMap()
    cm.metadata.name, cm.metadata.namespace = "status", "kube-system"
    cm.data["status"] = "ok"
    result = await ctl(fake(cm), "get", "configmap", "-n", "kube-system", "status", "-o", "yaml")
    assert result.rc == 0, result.err
    assert "status: ok" in result.out


def test_every_command_names_a_function_of_its_module() -> None:
    for name, (module, function) in main.COMMANDS.items():
        assert callable(main.command_function(name)), (name, module, function)


def test_a_command_loads_only_its_own_module() -> None:
    """kemuctl get starts without apply's manifests and defaulting or why's HTTP client."""
    code = (
        "import sys; from kemu.ctl import main; main.command_function('get'); "
        "print(sorted(m for m in ('kemu.ctl.apply', 'kemu.ctl.why', 'urllib.request') "
        "if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
