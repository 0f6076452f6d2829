"""The real kubectl (1.32) on what a new user tries first (issue 57 items 6, 7, 8): a pod
deleted in about a second, the kubelet's events in `kubectl describe`, exec, attach, cp and
port-forward answered by the simulated container, NotFound Status bodies with their details.

One cluster for the module (etcd, apiserver with the REST edge, one kubelet). Skipped when
kubectl is not on PATH.
"""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator

import aiohttp
import pytest
from kubernetes import client as k8s
from kubernetes import config
from kubernetes.stream import portforward

from apiserver.endpoints.rest.streams import ERROR, READER_WAIT, STDERR, STREAMS_GRACE, V5
from kemu.testing.cluster import Cluster
from kemu.testing.ports import free_port
from tests.integration.cli.kubectl_env import KUBECTL, Kubectl

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(KUBECTL is None, reason="kubectl is not installed (not on PATH)"),
]
NODE = "n1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with Cluster(tmp_path_factory.mktemp("fidelity")) as c:
        c.start_etcd(unsafe_no_fsync=True)
        c.start_apiserver(rest=True)
        c.start_kubelet(NODE, extra_args=["--pod-startup-delay", "100ms"])
        c.write_kubeconfig()
        yield c


@pytest.fixture(scope="module")
def kubectl(cluster: Cluster) -> Kubectl:
    return Kubectl(cluster)


@pytest.fixture(scope="module")
def running(kubectl: Kubectl) -> tuple[str, str]:
    """A running nginx pod: (namespace, name)."""
    ns = kubectl.namespace("fidelity")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "namespace": ns},
        "spec": {"nodeName": NODE, "containers": [{"name": "nginx", "image": "nginx:1.27"}]},
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(manifest))
    kubectl.run("wait", "--for=condition=Ready", "pod/web", "-n", ns, "--timeout=20s")
    return ns, "web"


def test_s_kl_term_3_kubectl_delete_pod_takes_about_a_second(kubectl: Kubectl) -> None:
    """S-KL-TERM-3: an ordinary pod's containers exit on SIGTERM at once, so `kubectl delete
    pod` (which waits until the pod is gone) returns well within its 30 s grace period."""
    ns = kubectl.namespace("delete")
    manifest = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": ns},
        "spec": {"nodeName": NODE, "containers": [{"name": "c", "image": "nginx:1.27"}]},
    }
    kubectl.run("apply", "-f", "-", stdin=json.dumps(manifest))
    kubectl.run("wait", "--for=condition=Ready", "pod/p", "-n", ns, "--timeout=20s")
    start = time.monotonic()
    out = kubectl.run("delete", "pod", "p", "-n", ns, timeout=30).stdout
    took = time.monotonic() - start
    assert 'pod "p" deleted' in out
    assert took < 3, f"kubectl delete pod took {took:.2f}s"


def test_s_kl_evt_3_describe_and_get_events_show_the_kubelets_events(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    """S-KL-EVT-3: Pulled, Created and Started, upstream's reasons and messages."""
    ns, name = running
    want = [
        ("Pulled", 'Container image "nginx:1.27" already present on machine'),
        ("Created", "Created container: nginx"),
        ("Started", "Started container nginx"),
    ]
    deadline = time.monotonic() + 10
    while True:
        events = kubectl.json("get", "events", "-n", ns)["items"]
        seen = [
            (e["reason"], e["message"]) for e in events if e["source"]["component"] == "kubelet"
        ]
        if all(w in seen for w in want) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert all(w in seen for w in want), seen
    described = kubectl.run("describe", "pod", name, "-n", ns).stdout
    for reason, message in want:
        assert reason in described and message in described, described


def test_s_api_exec_1_exec_answers_with_an_exit_code_and_a_line(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    """S-API-EXEC-1: `kubectl exec` upgrades to WebSocket (v5.channel.k8s.io); the simulated
    container says it runs no process and the command ends with exit code 126, which kubectl
    reports and exits with."""
    ns, name = running
    proc = kubectl.run("exec", name, "-n", ns, "--", "ls", "/", check=False, timeout=15)
    assert proc.returncode == 126, (proc.returncode, proc.stderr)
    assert "is simulated and runs no process" in proc.stderr
    assert "command terminated with exit code 126" in proc.stderr


@pytest.mark.anyio
async def test_s_api_exec_1b_exec_answers_once_the_client_reads(
    cluster: Cluster, running: tuple[str, str]
) -> None:
    """S-API-EXEC-1: a WebSocket exec is answered once its client answers a PING, so that
    kubectl's read loop, which drops a message for a stream it has not created yet, has made
    its streams (kemu answers without running anything; a flake of the README walk lost the
    exit Status): nothing comes before the pong nor within STREAMS_GRACE after it (kubectl
    makes its streams in another goroutine than the read loop that answers), the stderr line
    and the Status after that, and a client that never answers the ping is answered after
    READER_WAIT anyway. A pong just before READER_WAIT still gets the whole grace (it was cut
    short when the grace ran inside READER_WAIT's scope). The grace is timed from before the
    pong is sent (timed after, a loaded CI run saw 0.24998 s)."""
    ns, name = running
    url = (
        f"{cluster.rest_url}/api/v1/namespaces/{ns}/pods/{name}/exec"
        "?command=ls&stdout=true&stderr=true"
    )

    async def exec_frames(pong_after: float | None) -> tuple[float, list[bytes]]:
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(url, protocols=(V5,), autoping=False) as ws,
        ):
            assert ws.protocol == V5
            first = await ws.receive(timeout=10)
            assert first.type is aiohttp.WSMsgType.PING, first
            began = time.monotonic()
            if pong_after is not None:
                with pytest.raises(TimeoutError):  # (a bounded window: nothing yet)
                    await ws.receive(timeout=pong_after)
                # (taken before the pong goes: the apiserver may read it, and start its grace,
                # before this task runs again after the send)
                ponged = time.monotonic()
                await ws.pong(first.data)
            frames = []
            while (message := await ws.receive(timeout=10)).type is aiohttp.WSMsgType.BINARY:
                frames.append(message.data)
            assert message.type is aiohttp.WSMsgType.CLOSE, message
            if pong_after is not None:
                assert time.monotonic() - ponged >= STREAMS_GRACE
            return time.monotonic() - began, frames

    for pong_after in (0.5, READER_WAIT - 0.1):
        _, frames = await exec_frames(pong_after)
        assert [f[0] for f in frames] == [STDERR, ERROR]
        assert b"is simulated and runs no process" in frames[0]
        status = json.loads(frames[1][1:])
        assert status["reason"] == "NonZeroExitCode", status
    waited, frames = await exec_frames(None)
    assert [f[0] for f in frames] == [STDERR, ERROR]
    assert waited >= READER_WAIT * 0.9, waited


def test_s_api_exec_2_attach_and_cp_answer_likewise(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    ns, name = running
    proc = kubectl.run("attach", name, "-n", ns, check=False, timeout=15)
    assert proc.returncode != 0
    assert "is simulated and runs no process" in proc.stderr, proc.stderr
    proc = kubectl.run("cp", f"{ns}/{name}:/etc/hosts", "/tmp/kemu-cp-out", check=False, timeout=15)
    assert proc.returncode != 0
    assert "runs no process" in proc.stderr or "exit code 126" in proc.stderr, proc.stderr


def test_s_api_exec_3_port_forward_ends_with_a_clear_message(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    """S-API-EXEC-3 (issue #57 item 6): `kubectl port-forward` upgrades (SPDY/3.1 tunnelled
    over a WebSocket) and prints "Forwarding from"; a local connection to the forwarded port
    is closed at once and kubectl prints the error stream's message: nothing listens in a
    simulated container. Nothing hangs."""
    ns, name = running
    assert KUBECTL is not None
    local = free_port()
    proc = subprocess.Popen(
        [KUBECTL, "port-forward", f"pod/{name}", "-n", ns, f"{local}:80"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()  # (kubectl writes it once the tunnel is up)
        assert first.startswith(f"Forwarding from 127.0.0.1:{local} -> 80"), first
        with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
            conn.settimeout(10)
            conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
            assert conn.recv(1024) == b""  # closed, not left hanging
    finally:
        proc.terminate()
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            pytest.fail("kubectl port-forward did not end on SIGTERM")
    assert (
        f"an error occurred forwarding {local} -> 80: error forwarding port 80 to pod {name}"
    ) in err, err
    assert "is simulated and its containers run no process: nothing listens on port 80" in err


def test_s_api_exec_3b_python_client_port_forward_gets_the_message(
    cluster: Cluster, running: tuple[str, str]
) -> None:
    """S-API-EXEC-3 through the official Python client (issue #57 item 6), which speaks the
    WebSocket channel protocol of port-forward: its local socket is closed at once and the
    port's error is the simulated pod's message."""
    ns, name = running
    api = config.new_client_from_config(str(cluster.root / "kubeconfig"))  # type: ignore[no-untyped-call]
    core = k8s.CoreV1Api(api)
    pf = portforward(core.connect_get_namespaced_pod_portforward, name, ns, ports="80")
    sock = pf.socket(80)
    sock.settimeout(10)
    assert sock.recv(1024) == b""  # closed, not left hanging
    error = pf.error(80)
    assert error is not None and f"error forwarding port 80 to pod {name}" in error, error
    assert "nothing listens on port 80" in error
    pf.close()


SPDY_ONLY = {
    "KUBECTL_REMOTE_COMMAND_WEBSOCKETS": "false",
    "KUBECTL_PORT_FORWARD_WEBSOCKETS": "false",
}
"""kubectl 1.32's switches back to SPDY/3.1 over a plain HTTP upgrade (its fallback)."""


def _spdy_kubectl(kubectl: Kubectl) -> Kubectl:
    spdy = Kubectl(kubectl.cluster)
    spdy.env = {**kubectl.env, **SPDY_ONLY}
    return spdy


def test_s_api_exec_5_exec_and_attach_over_a_plain_spdy_upgrade(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    """S-API-EXEC-5 (issue #57): with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false kubectl exec
    and attach upgrade the request to SPDY/3.1 (v4.channel.k8s.io): the simulated container's
    line arrives on stderr and the exit code 126 on the error stream, and kubectl ends at
    once (kubectl -v 7 shows the 101 with `Upgrade: SPDY/3.1`)."""
    ns, name = running
    spdy = _spdy_kubectl(kubectl)
    started = time.monotonic()
    proc = spdy.run("exec", name, "-n", ns, "-v", "7", "--", "ls", "/", check=False, timeout=15)
    assert proc.returncode == 126, (proc.returncode, proc.stderr)
    assert time.monotonic() - started < 10, "kubectl exec over SPDY took too long"
    assert "X-Stream-Protocol-Version: v4.channel.k8s.io" in proc.stderr, proc.stderr
    assert "101 Switching Protocols" in proc.stderr, proc.stderr
    assert 'container "nginx" of pod "web" is simulated and runs no process' in proc.stderr
    assert "there is nothing to execute [ls /]" in proc.stderr
    assert "command terminated with exit code 126" in proc.stderr
    # a tty: no stderr stream, the line on stdout
    proc = spdy.run("exec", "-t", name, "-n", ns, "--", "sh", check=False, timeout=15)
    assert proc.returncode == 126, (proc.returncode, proc.stderr)
    assert "is simulated and runs no process" in proc.stdout + proc.stderr
    proc = spdy.run("attach", name, "-n", ns, check=False, timeout=15)
    assert proc.returncode != 0
    assert "there is nothing to attach to" in proc.stderr, proc.stderr
    # cp into the pod: tar through exec with stdin, whose bytes nothing reads
    source = kubectl.dir / "cp-source.txt"
    source.write_text("hello\n")
    proc = spdy.run("cp", str(source), f"{ns}/{name}:/tmp/x", check=False, timeout=15)
    assert proc.returncode != 0
    assert "runs no process" in proc.stderr or "exit code 126" in proc.stderr, proc.stderr


def test_s_api_exec_6_port_forward_over_a_plain_spdy_upgrade(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    """S-API-EXEC-6 (issue #57): with KUBECTL_PORT_FORWARD_WEBSOCKETS=false kubectl
    port-forward upgrades to SPDY/3.1 (portforward.k8s.io); a local connection is closed at
    once, kubectl prints the error stream's message and, as kubectl 1.32 does on a forwarding
    error (client-go portforward.go closes the connection), ends by itself with `lost
    connection to pod`. Nothing hangs."""
    ns, name = running
    assert KUBECTL is not None
    local = free_port()
    proc = subprocess.Popen(
        [KUBECTL, "port-forward", f"pod/{name}", "-n", ns, f"{local}:80", "-v", "7"],
        env=_spdy_kubectl(kubectl).env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith(f"Forwarding from 127.0.0.1:{local} -> 80"), first
        with socket.create_connection(("127.0.0.1", local), timeout=10) as conn:
            conn.settimeout(10)
            try:
                conn.sendall(b"GET / HTTP/1.0\r\n\r\n")
                assert conn.recv(1024) == b""  # closed, not left hanging
            except ConnectionResetError:
                pass  # closed before kubectl read the request: as much not hanging
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 1, proc.returncode
    assert "X-Stream-Protocol-Version: portforward.k8s.io" in err, err
    assert "101 Switching Protocols" in err
    assert (
        f"an error occurred forwarding {local} -> 80: error forwarding port 80 to pod {name}"
    ) in err, err
    assert "is simulated and its containers run no process: nothing listens on port 80" in err
    assert "lost connection to pod" in err


def test_s_api_exec_7_a_spdy_upgrade_without_a_common_protocol_is_refused(
    cluster: Cluster, running: tuple[str, str]
) -> None:
    """Upstream's httpstream Handshake: no X-Stream-Protocol-Version is 400, none in common
    403 naming both sides' protocols; no upgrade header at all is 400."""
    ns, name = running
    path = f"/api/v1/namespaces/{ns}/pods/{name}/exec?command=ls&stdout=true"
    upgrade = {"Connection": "Upgrade", "Upgrade": "SPDY/3.1"}
    for headers, code, message in (
        (upgrade, 400, "unable to upgrade: X-Stream-Protocol-Version is required"),
        (
            {**upgrade, "X-Stream-Protocol-Version": "v9.channel.k8s.io"},
            403,
            "unable to upgrade: unable to negotiate protocol: client supports "
            "[v9.channel.k8s.io], server accepts [v4.channel.k8s.io v3.channel.k8s.io "
            "v2.channel.k8s.io channel.k8s.io]",
        ),
        ({}, 400, "unable to upgrade: missing upgrade headers in request"),
    ):
        # (http.client, not urllib: urllib replaces Connection with "close")
        url = urllib.parse.urlsplit(cluster.rest_url)
        conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=10)
        try:
            conn.request("POST", path, headers=headers)
            response = conn.getresponse()
            assert response.status == code, (response.status, headers)
            assert message in json.loads(response.read())["message"]
            accepted = response.headers.get_all("X-Accepted-Stream-Protocol-Versions") or []
            assert accepted == (
                message.split("server accepts [")[1][:-1].split() if code == 403 else []
            )
        finally:
            conn.close()


def test_s_api_exec_4_a_missing_pod_or_container_is_upstreams_error(
    kubectl: Kubectl, running: tuple[str, str]
) -> None:
    ns, name = running
    proc = kubectl.run("exec", "nope", "-n", ns, "--", "ls", check=False, timeout=15)
    assert proc.returncode == 1
    assert 'pods "nope" not found' in proc.stderr
    proc = kubectl.run("exec", name, "-n", ns, "-c", "x", "--", "ls", check=False, timeout=15)
    assert proc.returncode == 1
    assert "container x not found in pod web" in proc.stderr or "not valid" in proc.stderr


def _status_of(cluster: Cluster, path: str) -> tuple[int, dict[str, object]]:
    """The HTTP code and Status body of a GET of `path` on the REST edge."""
    try:
        with urllib.request.urlopen(cluster.rest_url + path, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_s_api_status_1_not_found_has_details_and_the_group(
    kubectl: Kubectl, cluster: Cluster
) -> None:
    """S-API-STATUS-1: upstream's NotFound names the qualified resource and carries
    details (name, group, kind: the resource)."""
    proc = kubectl.run("get", "deployment", "missing", "-n", "default", check=False)
    assert 'deployments.apps "missing" not found' in proc.stderr
    code, status = _status_of(cluster, "/apis/apps/v1/namespaces/default/deployments/missing")
    assert code == 404
    assert status["details"] == {"name": "missing", "group": "apps", "kind": "deployments"}
    assert status["reason"] == "NotFound"
    code, status = _status_of(cluster, "/api/v1/namespaces/default/configmaps/missing")
    assert status["details"] == {"name": "missing", "kind": "configmaps"}
    assert status["message"] == 'configmaps "missing" not found'
