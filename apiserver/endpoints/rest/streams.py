"""pods/exec, pods/attach and pods/portforward (`kubectl exec`, `attach`, `cp`, `port-forward`).

Upstream's apiserver proxies these to the pod's kubelet, which runs the command in the
container (pkg/registry/core/pod/rest/subresources.go, ExecLocation and friends in
pkg/registry/core/pod/strategy.go). kemu's containers run no process, so the apiserver answers
for the kubelet:

- exec and attach upgrade to upstream's WebSocket streaming protocol (subprotocols
  v5/v4.channel.k8s.io and their elders, staging/src/k8s.io/apimachinery/pkg/util/httpstream/
  wsstream/conn.go: binary frames, the first byte the channel, 0 stdin, 1 stdout, 2 stderr, 3
  the error channel carrying a metav1.Status from v4 on), write one line on stderr saying the
  simulated container runs no process, and end with upstream's NonZeroExitCode Status (exit
  code 126, "cannot execute"), which kubectl reports as `command terminated with exit code 126`
  and exits with. `kubectl cp` runs `tar` through exec and reports the same.
- SPDY (kubectl's fallback, and port-forward's protocol, which kubectl 1.32 tunnels over a
  WebSocket): not spoken. port-forward, and exec or attach asking for SPDY only, get a 400
  Status saying why, which kubectl prints as `error upgrading connection: ...`.

Before any upgrade the request is checked as upstream: the pod (404), the container (400
`container x is not valid for pod p`, or the choice among several), a pod not bound or not
running (400). Nothing waits: the connection is answered and closed at once, and a client that
sends stdin is not read (its bytes are dropped by the close).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from aiohttp import web

from apiserver.endpoints.rest.logs import container_name
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest

EXEC: Final = "exec"
ATTACH: Final = "attach"
PORT_FORWARD: Final = "portforward"

# Upstream's channel protocols, newest first (wsstream/conn.go; remotecommand constants).
V5: Final = "v5.channel.k8s.io"
V4: Final = "v4.channel.k8s.io"
CHANNEL_PROTOCOLS: Final = (V5, V4, "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
_STATUS_PROTOCOLS: Final = frozenset({V5, V4})
"""The protocols whose error channel carries a metav1.Status (v4 on); the elders carry text."""

STDERR: Final = 2
ERROR: Final = 3

EXIT_CANNOT_EXECUTE: Final = 126
"""The exit code of a command that cannot be executed (POSIX shells' 126)."""

_CLOSE_TIMEOUT: Final = 2.0
"""Seconds the close handshake may take before the connection is dropped."""


def no_process_line(pod: types_pb2.Pod, container: str, action: str) -> str:
    """The line a simulated container answers exec, attach and cp with."""
    return (
        f'kemu: container "{container}" of pod "{pod.metadata.name}" is simulated and runs '
        f"no process: there is nothing to {action}\n"
    )


def exit_status(command: Sequence[str], code: int) -> dict[str, object]:
    """Upstream's Status for a command that ended with a non-zero exit code (the kubelet's
    pkg/kubelet/cri/streaming/remotecommand/websocket.go and httpstream.go: reason
    NonZeroExitCode, a cause ExitCode whose message is the code)."""
    return {
        "metadata": {},
        "status": "Failure",
        "message": (
            f"command terminated with non-zero exit code: error executing command "
            f"[{' '.join(command)}], exit code {code}"
        ),
        "reason": "NonZeroExitCode",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def check_target(pod: types_pb2.Pod, query: dict[str, str] | None, subresource: str) -> str:
    """The container the request names (as upstream's streamLocation: BadRequest for an
    unknown one or a missing choice), once the pod is bound and running; "" for
    port-forward (a pod's ports, no container)."""
    name = pod.metadata.name
    container = ""
    if subresource != PORT_FORWARD:
        container = container_name(pod, (query or {}).get("container", ""))
    if not pod.spec.node_name:
        raise BadRequest(f"pod {name} does not have a host assigned")
    phase = pod.status.phase
    if phase in ("Succeeded", "Failed"):
        raise BadRequest(
            f"cannot {'exec into' if subresource == EXEC else 'attach to'} a container in a "
            f"completed pod; current phase is {phase}"
            if subresource != PORT_FORWARD
            else f"pod {name} is not running: current phase is {phase}"
        )
    if phase != "Running":
        raise BadRequest(f"pod {name} is not running: current phase is {phase or 'Pending'}")
    return container


def _wants_websocket(request: web.BaseRequest) -> bool:
    return request.headers.get("Upgrade", "").lower() == "websocket"


async def serve(
    request: web.BaseRequest, pod: types_pb2.Pod, subresource: str
) -> web.StreamResponse:
    """Answers pods/exec, pods/attach or pods/portforward for `pod` (as read)."""
    container = check_target(pod, dict(request.query), subresource)
    name = pod.metadata.name
    if subresource == PORT_FORWARD:
        raise BadRequest(
            f'kemu: pod "{name}" is simulated and its containers run no process: nothing '
            "listens on any port, so there is nothing to forward to"
        )
    if not _wants_websocket(request):
        raise BadRequest(
            f'kemu: pod "{name}" is simulated and its containers run no process: kemu '
            f"answers {subresource} over WebSocket ({V5}) only, not SPDY"
        )
    command = request.query.getall("command", []) if subresource == EXEC else []
    action = f"execute [{' '.join(command)}]" if subresource == EXEC else "attach to"
    ws = web.WebSocketResponse(protocols=CHANNEL_PROTOCOLS, timeout=_CLOSE_TIMEOUT)
    await ws.prepare(request)
    protocol = ws.ws_protocol or ""
    await ws.send_bytes(bytes([STDERR]) + no_process_line(pod, container, action).encode())
    status = exit_status(command or [subresource], EXIT_CANNOT_EXECUTE)
    if protocol in _STATUS_PROTOCOLS:
        error = json.dumps(status).encode()
    else:
        error = str(status["message"]).encode()
    await ws.send_bytes(bytes([ERROR]) + error)
    await ws.close()
    return ws
