from __future__ import annotations

import functools
import json
import pathlib
import ssl
import urllib.error
from collections.abc import AsyncIterator, Mapping

import anyio
import pytest
from prometheus_client import Counter

from kemu.component.featuregate import FeatureGates
from kemu.component.health import DebugHandler, DebugRequestError, HealthChecks, HealthServer
from kemu.component.metrics import new_registry
from kemu.component.secure_serving import SecureServing
from kemu.component.version import BINARY_VERSION, Version
from kemu.machinery.certs import issue, new_ca
from kemu.testing.processes import http_get

from .http_get import http_request

pytestmark = pytest.mark.anyio


def make_server(
    component: str = "scheduler", debug: Mapping[str, DebugHandler] | None = None
) -> HealthServer:
    gates = FeatureGates.for_version(Version(1, 35), {"SchedulerAsyncPreemption": False})
    return HealthServer(
        component=component,
        gates=gates,
        registry=new_registry(component, gates),
        checks=HealthChecks(),
        debug=debug,
        port=0,
    )


@pytest.fixture
async def server() -> AsyncIterator[HealthServer]:
    server = make_server()
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.serve)
        assert port == server.port and port > 0
        yield server
        tg.cancel_scope.cancel()


async def test_metrics_are_the_component_registry(server: HealthServer) -> None:
    requests = Counter("kemu_test_requests", "test counter", registry=server.registry)
    requests.inc(3)
    status, headers, body = await http_request(server.port, "/metrics")
    assert status == 200
    assert headers["content-type"].startswith("text/plain; version=")
    text = body.decode()
    assert "kemu_test_requests_total 3.0" in text
    assert 'kubernetes_feature_enabled{name="SchedulerAsyncPreemption",stage="BETA"} 0.0' in text
    assert 'kubernetes_feature_enabled{name="InPlacePodVerticalScaling",stage=""} 1.0' in text
    assert "kubernetes_build_info{" in text
    assert int(headers["content-length"]) == len(body)


async def test_two_servers_in_one_process_keep_separate_registries(server: HealthServer) -> None:
    other = make_server("kubelet")
    Counter("kemu_only_here", "x", registry=server.registry).inc()
    async with anyio.create_task_group() as tg:
        port = await tg.start(other.serve)
        assert port != server.port
        _, _, body = await http_request(port, "/metrics")
        assert b"kemu_only_here" not in body
        tg.cancel_scope.cancel()


async def test_health_endpoints_are_ok_without_checks(server: HealthServer) -> None:
    for path in ("/healthz", "/livez", "/readyz", "/readyz/"):
        assert await http_request(server.port, path) == (
            200,
            {
                "content-type": "text/plain; charset=utf-8",
                "content-length": "2",
                "connection": "close",
            },
            b"ok",
        )


async def test_readyz_fails_with_the_names_of_failing_checks(server: HealthServer) -> None:
    synced = False
    etcd_up = False

    def informers_synced() -> bool:
        return synced

    def etcd() -> bool:
        if not etcd_up:
            raise ConnectionError("connection refused")
        return True

    server.checks.add_readiness_check("informers-synced", informers_synced)
    server.checks.add_readiness_check("etcd", etcd)
    status, _, body = await http_request(server.port, "/readyz")
    assert status == 503
    assert body.decode().splitlines() == [
        "[+]ping ok",
        "[-]informers-synced failed: not ready",
        "[-]etcd failed: connection refused",
        "readyz check failed",
    ]
    # Liveness is unaffected by readiness checks.
    assert (await http_request(server.port, "/livez"))[0] == 200
    # One check at a time.
    assert (await http_request(server.port, "/readyz/etcd"))[0] == 503
    assert (await http_request(server.port, "/readyz/ping"))[2] == b"ok"
    assert (await http_request(server.port, "/readyz/nope"))[0] == 404

    synced = etcd_up = True
    assert (await http_request(server.port, "/readyz"))[2] == b"ok"
    status, _, body = await http_request(server.port, "/readyz?verbose")
    assert status == 200
    assert body.decode().splitlines()[-1] == "readyz check passed"
    assert "[+]informers-synced ok" in body.decode()


async def test_failing_liveness_check_fails_livez_and_readyz(server: HealthServer) -> None:
    server.checks.add_liveness_check("deadlock", lambda: False)
    assert (await http_request(server.port, "/livez"))[0] == 503
    assert (await http_request(server.port, "/healthz"))[0] == 503
    assert (await http_request(server.port, "/readyz"))[0] == 503


async def test_check_names_are_unique(server: HealthServer) -> None:
    server.checks.add_readiness_check("etcd", lambda: True)
    with pytest.raises(ValueError, match="already registered"):
        server.checks.add_liveness_check("etcd", lambda: True)


async def test_version_is_json(server: HealthServer) -> None:
    status, headers, body = await http_request(server.port, "/version")
    assert status == 200 and headers["content-type"] == "application/json"
    document = json.loads(body)
    assert document["component"] == "scheduler"
    assert document["emulatedVersion"] == "1.35"
    assert document["binaryVersion"] == BINARY_VERSION
    assert "SchedulerAsyncPreemption" not in document["enabledFeatureGates"]
    assert "NominatedNodeNameForExpectation" in document["enabledFeatureGates"]
    assert document["featureGates"]["SchedulerAsyncPreemption"] is False
    assert "PreferNominatedNode" not in document["featureGates"]


async def test_other_paths_methods_and_garbage(server: HealthServer) -> None:
    assert (await http_request(server.port, "/nope"))[0] == 404
    status, headers, _ = await http_request(server.port, "/metrics", method="POST")
    assert status == 405 and headers["allow"] == "GET"
    status, headers, body = await http_request(server.port, "/readyz", method="HEAD")
    assert status == 200 and headers["content-length"] == "2" and body == b""
    with anyio.fail_after(5):
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(b"garbage\r\n\r\n")
            assert (await stream.receive()).startswith(b"HTTP/1.1 400 ")
        # A client that connects and leaves does not disturb the server.
        async with await anyio.connect_tcp("127.0.0.1", server.port):
            pass
    assert (await http_request(server.port, "/healthz"))[0] == 200


async def test_a_head_too_large_is_431_not_a_closed_connection(server: HealthServer) -> None:
    """Before #28 the server closed the connection on a head over 16 KiB without a word."""
    with anyio.fail_after(5):
        async with await anyio.connect_tcp("127.0.0.1", server.port) as stream:
            await stream.send(b"GET /healthz HTTP/1.1\r\nX: " + b"a" * 100_000 + b"\r\n\r\n")
            await stream.send_eof()
            data = b""
            while True:
                try:
                    data += await stream.receive()
                except anyio.EndOfStream:
                    break
    assert data.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert (await http_request(server.port, "/healthz"))[0] == 200


async def test_port_is_unavailable_after_the_server_stops() -> None:
    server = make_server()
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.serve)
        tg.cancel_scope.cancel()
    with pytest.raises(RuntimeError):
        _ = server.port
    with pytest.raises(OSError):
        await http_request(port, "/healthz")


async def test_debug_handlers_serve_json_and_unknown_ones_are_404() -> None:
    def broken(_query: Mapping[str, str]) -> object:
        raise RuntimeError("no comparison yet")

    def echo(query: Mapping[str, str]) -> object:
        if "bad" in query:
            raise DebugRequestError("bad: not a thing")
        return dict(query)

    server = make_server(
        debug={
            "caches": lambda _q: {"last": None, "triggers": 0},
            "broken": broken,
            "echo": echo,
        }
    )
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.serve)
        status, headers, body = await http_request(port, "/debug/caches")
        assert status == 200 and headers["content-type"] == "application/json"
        assert json.loads(body) == {"last": None, "triggers": 0}
        assert (await http_request(port, "/debug/nope"))[0] == 404
        assert (await http_request(port, "/debug"))[0] == 404
        status, _, body = await http_request(port, "/debug/broken")
        assert status == 500 and b"no comparison yet" in body
        status, _, body = await http_request(port, "/debug/echo?pod=ns/a&x=1&x=2")
        assert status == 200 and json.loads(body) == {"pod": "ns/a", "x": "1"}
        status, _, body = await http_request(port, "/debug/echo?bad")
        assert (status, body) == (400, b"bad: not a thing\n")
        tg.cancel_scope.cancel()


async def test_with_an_ssl_context_it_serves_https_that_its_ca_verifies(
    tmp_path: pathlib.Path,
) -> None:
    """A kubelet's --tls-cert-file serves its metrics port (kemu.component.options)."""
    ca = new_ca("test-ca")
    issue(ca, "kubelet", ips=["127.0.0.1"], client=False, server=True).write(
        tmp_path / "k.crt", tmp_path / "k.key"
    )
    serving = SecureServing(cert_file=str(tmp_path / "k.crt"), key_file=str(tmp_path / "k.key"))
    server = make_server(component="kubelet")
    server.ssl_context = serving.ssl_context()
    trusted = ssl.create_default_context(cadata=ca.cert.decode())
    async with anyio.create_task_group() as tg:
        port = await tg.start(server.serve)
        url = f"https://127.0.0.1:{port}/healthz"
        got = await anyio.to_thread.run_sync(functools.partial(http_get, url, context=trusted))
        assert got == (200, b"ok")
        # a client that does not trust the CA is refused the handshake
        with pytest.raises(urllib.error.URLError, match="CERTIFICATE_VERIFY_FAILED"):
            await anyio.to_thread.run_sync(
                functools.partial(http_get, url, context=ssl.create_default_context())
            )
        tg.cancel_scope.cancel()
