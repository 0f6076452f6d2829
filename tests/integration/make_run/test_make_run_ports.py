"""`make run`'s ports (issue #58 item 5): one table (kemu/makerun/ports.py) that the Procfile
reads through the environment, moved as a whole by PORT_BASE; every port checked before honcho
starts, a taken one refused in one line that says how to move them."""

from __future__ import annotations

import json
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kemu.machinery import kubeconfig
from kemu.makerun.__main__ import PORTS_ENV, STATE_DIR, USER_ENV, free_base
from kemu.makerun.ports import LOOPBACK, TABLE, PortBaseError, Ports
from kemu.testing import eventually_sync
from kemu.testing.ports import free_port
from kemu.testing.processes import REPO_ROOT, child_pids
from tests.integration.make_run.make_run_env import (
    BIN_DIR,
    MakeRun,
    prepare_root,
    procfile_running,
    sourced,
    user_env,
    worker_bases,
)

pytestmark = [pytest.mark.integration]


def test_the_procfile_takes_every_port_from_the_table() -> None:
    text = (REPO_ROOT / "Procfile").read_text()
    named = set(re.findall(r"\$KEMU_PORT_([A-Z_]+)", text))
    assert named == {spec.name for spec in TABLE}
    commands = [line for line in text.splitlines() if not line.startswith("#")]
    literal = [
        m.group(0)
        for line in commands
        for m in re.finditer(r"(?:--(?:port|rest-port|metrics-port) |127\.0\.0\.1:)\d+", line)
    ]
    assert literal == [], "ports written in the Procfile instead of the table"


def test_the_defaults_are_upstreams_and_a_base_moves_every_port() -> None:
    ports = Ports()
    assert ports.server == "127.0.0.1:6443"
    assert ports.rest_url == "https://127.0.0.1:6445"
    assert ports.port("ETCD") == 2379
    moved = Ports(20000)
    assert sorted(p for _, p in moved.items()) == list(range(20000, 20000 + len(TABLE)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("20x", "PORT_BASE=20x: not a port number"),
        ("80", "PORT_BASE=80: must be 1024 to 65523"),
        ("65530", "PORT_BASE=65530: must be 1024 to 65523"),
    ],
)
def test_a_base_that_cannot_hold_the_table_is_refused(text: str, message: str) -> None:
    with pytest.raises(PortBaseError, match=re.escape(message)):
        Ports.parse(text)
    assert Ports.parse("") == Ports.parse(None) == Ports()


def test_two_workers_share_no_port(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[int, str] = {}
    for worker in ("gw0", "gw1", "gw2", "gw3"):
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
        for base in worker_bases():
            for _, port in Ports(base).items():
                assert port not in seen, f"{worker} and {seen[port]} share port {port}"
                seen[port] = worker


@pytest.fixture
def held_base() -> Iterator[tuple[Ports, int]]:
    """A base whose apiserver gRPC port something else listens on."""
    base = free_base()
    if base is None:
        pytest.skip("no free port base")
    ports = Ports(base)
    port = ports.port("APISERVER")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((LOOPBACK, port))
        s.listen()
        yield ports, port


def test_make_run_refuses_a_taken_port_in_one_line_before_starting_anything(
    tmp_path: Path, held_base: tuple[Ports, int]
) -> None:
    ports, port = held_base
    prepare_root(tmp_path)
    done = subprocess.run(
        [str(BIN_DIR / "python"), "-m", "kemu.makerun", "--port-base", str(ports.base)],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    assert re.fullmatch(
        rf"make run: port {port} \(apiserver gRPC\) is in use; "
        r"move all ports with PORT_BASE=\d+\n",
        done.stderr,
    ), done.stderr
    assert not (tmp_path / STATE_DIR / PORTS_ENV).exists()  # (honcho never started)
    suggested = int(done.stderr.rsplit("=", 1)[1])
    assert suggested != ports.base


@pytest.mark.long
def test_make_run_on_a_port_base_serves_every_port_there(tmp_path: Path) -> None:
    with procfile_running(tmp_path, "real") as run:
        eventually_sync(run.static_nodes_ready, timeout=90, interval=1)
        _assert_serves_on_its_base(run)


def _assert_serves_on_its_base(run: MakeRun) -> None:
    ports = run.ports
    assert ports.base is not None
    for spec, port in ports.items():
        with socket.socket() as probe:
            assert probe.connect_ex((LOOPBACK, port)) == 0, f"nothing on {port} ({spec.what})"
    exported = sourced(run.root / STATE_DIR / USER_ENV)
    assert exported["KEMU_SERVER"] == ports.server
    assert exported["KEMU_SCHEDULER_URL"] == ports.scheduler_url
    config = json.loads(Path(exported["KUBECONFIG"]).read_text())
    assert config["clusters"][0]["cluster"]["server"] == ports.rest_url
    # over TLS, trusting make run's CA (.kemu/pki/ca.crt: the kubeconfig's CA data), as the
    # admin (its certificate: the cluster runs Node,RBAC)
    trusted = ssl.create_default_context(cafile=str(run.root / STATE_DIR / "pki" / "ca.crt"))
    admin = kubeconfig.load(exported["KUBECONFIG"]).tls
    assert admin is not None and admin.cert is not None and admin.key is not None
    (run.root / "admin.crt").write_bytes(admin.cert)
    (run.root / "admin.key").write_bytes(admin.key)
    trusted.load_cert_chain(run.root / "admin.crt", run.root / "admin.key")
    with urllib.request.urlopen(f"{ports.rest_url}/api/v1/nodes", context=trusted) as answer:
        body = answer.read()
    assert {n["metadata"]["name"] for n in json.loads(body)["items"]} >= {"node-a", "node-b"}
    assert f"make run: ports moved to {ports.span} (PORT_BASE={ports.base})" in run.log()


def _guard(port: int, within: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [str(BIN_DIR / "python"), "-m", "kemu.makerun.guard", "--until-closed"]
        + [f"{LOOPBACK}:{port}", "--within", within, "--", "sleep", "60"],
        env=user_env(),
    )


def test_the_etcd_guard_holds_sigterm_until_the_apiserver_port_closes() -> None:
    """kemu.makerun.guard: SIGTERM is passed to its command only once the address refuses
    connections (the apiserver gone), or after --within; the guard exits with the command's
    code (143: sleep ended by SIGTERM)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as apiserver:
        apiserver.bind((LOOPBACK, 0))
        apiserver.listen()
        port = int(apiserver.getsockname()[1])
        guard = _guard(port, "30s")
        eventually_sync(lambda: child_pids(guard.pid), timeout=30)  # (its command started)
        guard.send_signal(signal.SIGTERM)
        with pytest.raises(subprocess.TimeoutExpired):
            guard.wait(1.0)  # held while the address listens
    assert guard.wait(5.0) == 143
    bounded = _guard(free_port(), "1s")  # (nothing listens: passed at once)
    eventually_sync(lambda: child_pids(bounded.pid), timeout=30)
    started = time.monotonic()
    bounded.send_signal(signal.SIGTERM)
    assert bounded.wait(5.0) == 143
    assert time.monotonic() - started < 2.0
