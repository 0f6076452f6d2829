"""A port a component must serve is taken (issue #58 item 5): the real entry points print one
line naming the address, as upstream's `failed to listen on 127.0.0.1:6443: listen tcp
127.0.0.1:6443: bind: address already in use`, and exit 1, without a traceback and without
waiting for the apiserver or etcd (nothing listens at their addresses here)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from kemu.testing.ports import LOOPBACK, free_port
from kemu.testing.processes import run_python_module

pytestmark = pytest.mark.integration

NOWHERE = f"{LOOPBACK}:1"  # (a dependency that never answers: the check comes first)


@pytest.fixture
def held() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((LOOPBACK, free_port()))
        s.listen()
        yield int(s.getsockname()[1])


def _args(module: str, flag: str, port: int, tmp: str) -> list[str]:
    """`module`'s command line with `flag` on `port` and every other port free."""
    ports = {"--metrics-port": str(free_port())}
    if module == "apiserver":
        ports |= {"--port": str(free_port()), "--rest-port": str(free_port())}
        base = ["--etcd-servers", f"http://{NOWHERE}"]
    elif module == "cloud":
        ports |= {"--port": str(free_port())}
        base = ["--server", NOWHERE, "--config", "hack/cloud.yaml", "--state-dir", tmp]
    elif module == "kubelet":
        base = ["--server", NOWHERE, "--node-name", "n1", "--root-dir", tmp]
    elif module == "autoscaler":
        base = ["--server", NOWHERE, "--cloud-provider-address", NOWHERE]
    else:
        base = ["--server", NOWHERE]
    ports[flag] = str(port)
    return [*base, *(word for pair in ports.items() for word in pair)]


@pytest.mark.parametrize(
    ("module", "flag"),
    [
        ("apiserver", "--port"),
        ("apiserver", "--rest-port"),
        ("apiserver", "--metrics-port"),
        ("controllermanager", "--metrics-port"),
        ("scheduler", "--metrics-port"),
        ("kubelet", "--metrics-port"),
        ("cloud", "--port"),
        ("cloud", "--metrics-port"),
        ("autoscaler", "--metrics-port"),
    ],
)
def test_a_taken_port_is_one_line_naming_the_address_and_exit_1(
    module: str, flag: str, held: int, tmp_path: object
) -> None:
    done = run_python_module(module, _args(module, flag, held, str(tmp_path)), timeout=30)
    output = done.stdout + done.stderr
    address = f"{LOOPBACK}:{held}"
    expected = f"failed to listen on {address}: listen tcp {address}: bind: address already in use"
    assert done.returncode == 1, output
    assert "Traceback" not in output, output
    assert [line for line in output.splitlines() if expected in line], output
    errors = [line for line in output.splitlines() if line.startswith("E")]
    assert len(errors) == 1, output
