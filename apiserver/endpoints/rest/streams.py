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
- port-forward upgrades to a WebSocket tunnelling SPDY/3.1 (subprotocol
  `SPDY/3.1+portforward.k8s.io`, as kubectl 1.32 dials it: client-go tools/portforward
  tunneling_connection.go; the framing is spdy.py), replies to each stream kubectl opens, and
  for each forwarded connection (an error and a data stream of one requestID, as upstream's
  kubelet pairs them: pkg/kubelet/cri/streaming/portforward/httpstream.go) writes on the error
  stream that nothing listens on the port in the simulated pod, then ends both streams: kubectl
  prints `an error occurred forwarding L -> P: ...` and the local connection is closed. A
  PING is answered; the connection lasts until kubectl closes it. A client that does not
  offer that subprotocol (the official Python client) gets the WebSocket channel protocol of
  upstream's kubelet (v4.channel.k8s.io: per port of the query's `ports`, a data and an error
  channel opened with the port number), the same message on each error channel, and the
  close.
- SPDY/3.1 over a plain HTTP upgrade (`Upgrade: SPDY/3.1`; kubectl's fallback, and its only
  transport with KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false or KUBECTL_PORT_FORWARD_WEBSOCKETS=
  false; the upgrade is spdy_upgrade.py): exec and attach negotiate upstream's kubelet's
  protocols (v4.channel.k8s.io down to channel.k8s.io: pkg/kubelet/cri/streaming/
  remotecommand/httpstream.go), reply to each stream kubectl opens (error, stdin, stdout,
  stderr, resize, told apart by their streamType header) and, once the error stream and the
  output streams the query asks for are open, write the line on stderr (stdout with a tty)
  and the NonZeroExitCode Status on the error stream (its message alone before v4), ending
  each; port-forward negotiates portforward.k8s.io and answers as through the WebSocket
  tunnel. The connection lasts until kubectl closes it (a few seconds at most after the
  answer).

Before any upgrade the request is checked as upstream: the pod (404), the container (400
`container x is not valid for pod p`, or the choice among several), a pod not bound or not
running (400). Nothing runs: a WebSocket exec or attach is answered once its client answers a
PING (its read loop is up: _client_reading), a SPDY one once its streams are open, and closed;
a client that sends stdin is not read (its bytes are dropped by the close).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Final

import anyio
from aiohttp import WSMsgType, web

from apiserver.endpoints.rest import spdy, spdy_upgrade
from apiserver.endpoints.rest.logs import container_name
from apiserver.endpoints.rest.request import json_response
from apiserver.endpoints.rest.status import failure
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import BadRequest

logger = logging.getLogger(__name__)

EXEC: Final = "exec"
ATTACH: Final = "attach"
PORT_FORWARD: Final = "portforward"

# Upstream's channel protocols, newest first (wsstream/conn.go; remotecommand constants).
V5: Final = "v5.channel.k8s.io"
V4: Final = "v4.channel.k8s.io"
CHANNEL_PROTOCOLS: Final = (V5, V4, "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
_STATUS_PROTOCOLS: Final = frozenset({V5, V4})
"""The protocols whose error channel carries a metav1.Status (v4 on); the elders carry text."""

SPDY_PORT_FORWARD: Final = "SPDY/3.1+portforward.k8s.io"
"""port-forward's SPDY tunnelled over a WebSocket (WebsocketsSPDYTunnelingPortForwardV1)."""
PORT_FORWARD_V1: Final = "portforward.k8s.io"
"""port-forward's protocol over a plain SPDY upgrade (the kubelet's portforward.ProtocolV1Name)."""
SPDY_EXEC_PROTOCOLS: Final = (V4, "v3.channel.k8s.io", "v2.channel.k8s.io", "channel.k8s.io")
"""exec and attach's protocols over a plain SPDY upgrade (remotecommand's
SupportedStreamingProtocols: there is no v5 over SPDY)."""
STREAM_TYPE_STDOUT: Final = "stdout"
STREAM_TYPE_STDERR: Final = "stderr"
# The stream headers of port-forward (core/v1 constants: StreamType, PortHeader,
# PortForwardRequestIDHeader), lower-cased as SPDY/3 sends them.
STREAM_TYPE_HEADER: Final = "streamtype"
STREAM_TYPE_ERROR: Final = "error"
STREAM_TYPE_DATA: Final = "data"
PORT_HEADER: Final = "port"
REQUEST_ID_HEADER: Final = "requestid"

STDERR: Final = 2
ERROR: Final = 3

EXIT_CANNOT_EXECUTE: Final = 126
"""The exit code of a command that cannot be executed (POSIX shells' 126)."""

_CLOSE_TIMEOUT: Final = 2.0
"""Seconds the close handshake may take before the connection is dropped."""
READER_WAIT: Final = 2.0
"""Seconds a WebSocket exec or attach waits for the client's pong before it answers anyway
(_client_reading)."""
STREAMS_GRACE: Final = 0.25
"""Seconds a WebSocket exec or attach waits after the client's pong before it answers: the
client's streams are made by another goroutine than the read loop that sent the pong, and on
a loaded host (a CI run of `kubectl attach`) the stderr line came before its stream was
there."""
_READER_PING: Final = b"kemu"
_SPDY_STREAM_CREATION_TIMEOUT: Final = 30.0
"""Seconds a SPDY exec or attach waits for kubectl's streams (the kubelet's
streamCreationTimeout default, DefaultStreamCreationTimeout)."""
_SPDY_LINGER: Final = 10.0
"""Seconds an answered SPDY exec or attach waits for kubectl to close the connection (it does
once it has read the streams' ends) before closing it."""


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
    if spdy_upgrade.wants_spdy(request):
        return await _serve_spdy(request, pod, subresource, container)
    if not _wants_websocket(request):
        raise BadRequest(
            "unable to upgrade: missing upgrade headers in request: kemu answers "
            f"{subresource} over a WebSocket or a SPDY/3.1 upgrade"
        )
    if subresource == PORT_FORWARD:
        return await _port_forward(request, pod)
    command = _command(request, subresource)
    action = _action(command, subresource)
    ws = web.WebSocketResponse(protocols=CHANNEL_PROTOCOLS, timeout=_CLOSE_TIMEOUT, autoping=False)
    await ws.prepare(request)
    protocol = ws.ws_protocol or ""
    await _client_reading(ws)
    await ws.send_bytes(bytes([STDERR]) + no_process_line(pod, container, action).encode())
    status = exit_status(command or [subresource], EXIT_CANNOT_EXECUTE)
    if protocol in _STATUS_PROTOCOLS:
        error = json.dumps(status).encode()
    else:
        error = str(status["message"]).encode()
    await ws.send_bytes(bytes([ERROR]) + error)
    await ws.close()
    return ws


async def _client_reading(ws: web.WebSocketResponse) -> None:
    """Returns once the client answers a PING (or after READER_WAIT, or when it goes away).

    client-go's WebSocket executor (tools/remotecommand/websocket.go, kubectl 1.32's exec and
    attach) starts its read loop and creates its streams in two goroutines at once, and its
    read loop discards a message for a stream not created yet ("Unknown stream id %d,
    discarding message"): answering at once, as nothing here runs a command, sometimes lost
    the stderr line or the exit Status (kubectl then exited 0). The client's pong is sent by
    that read loop, so once it comes the client has been reading for a network round trip;
    its streams are made in memory by the other goroutine, which a loaded host may not have
    run yet: the answer waits STREAMS_GRACE more. (A real container's command answers later
    than that.) A ping from the client meanwhile is answered; a data frame (stdin) is
    dropped, as the docstring above says."""
    await ws.ping(_READER_PING)
    ponged = False
    with anyio.move_on_after(READER_WAIT):
        while True:
            message = await ws.receive()
            if message.type is WSMsgType.PONG:
                ponged = True
                break
            if message.type is WSMsgType.PING:
                await ws.pong(message.data)
            elif message.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
                return
            elif message.type is WSMsgType.ERROR:
                return
    if ponged:
        # Outside READER_WAIT's scope: a pong that came just before it ends still gets the
        # whole grace (inside it, a loaded host's late pong had its grace cut short).
        await anyio.sleep(STREAMS_GRACE)
        return
    logger.info("no pong from the exec or attach client within %gs: answering", READER_WAIT)


def _command(request: web.BaseRequest, subresource: str) -> list[str]:
    return request.query.getall("command", []) if subresource == EXEC else []


def _action(command: Sequence[str], subresource: str) -> str:
    return f"execute [{' '.join(command)}]" if subresource == EXEC else "attach to"


def no_listener_message(pod: types_pb2.Pod, port: str) -> str:
    """What the error stream of a forwarded connection says (upstream's kubelet: `error
    forwarding port P to pod ...: ... connection refused`)."""
    return (
        f"error forwarding port {port} to pod {pod.metadata.name}, uid {pod.metadata.uid}: kemu: "
        f'pod "{pod.metadata.name}" is simulated and its containers run no process: nothing '
        f"listens on port {port} (connection refused)"
    )


async def _port_forward(request: web.BaseRequest, pod: types_pb2.Pod) -> web.StreamResponse:
    """kubectl's SPDY tunnel when it is offered, else the channel protocol."""
    offered = {p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",")}
    if SPDY_PORT_FORWARD in offered:
        return await _port_forward_spdy(request, pod)
    return await _port_forward_channels(request, pod)


async def _port_forward_channels(
    request: web.BaseRequest, pod: types_pb2.Pod
) -> web.StreamResponse:
    """The WebSocket channel protocol of port-forward (v4.channel.k8s.io, or none: binary;
    the official Python client's; upstream's kubelet pkg/kubelet/cri/streaming/portforward/
    websocket.go): the `ports` of the query, each with a data channel 2i and an error channel
    2i+1, both opened with the port as 16 bits little-endian; the error channel then says
    that nothing listens, and the connection ends."""
    ports: list[int] = []
    for text in (p for value in request.query.getall("ports", []) for p in value.split(",")):
        if not text.strip().isdigit() or not 0 < int(text) < 65536:
            raise BadRequest(f'invalid port "{text}": a port is a number from 1 to 65535')
        ports.append(int(text))
    if not ports:
        raise BadRequest('query parameter "port" is required')
    ws = web.WebSocketResponse(protocols=(V4,), timeout=_CLOSE_TIMEOUT)
    await ws.prepare(request)
    for i, port in enumerate(ports):
        for channel in (2 * i, 2 * i + 1):
            await ws.send_bytes(bytes([channel]) + port.to_bytes(2, "little"))
    for i, port in enumerate(ports):
        line = no_listener_message(pod, str(port))
        await ws.send_bytes(bytes([2 * i + 1]) + line.encode())
    await ws.close()
    return ws


async def _port_forward_spdy(request: web.BaseRequest, pod: types_pb2.Pod) -> web.StreamResponse:
    ws = web.WebSocketResponse(protocols=(SPDY_PORT_FORWARD,), timeout=_CLOSE_TIMEOUT)
    await ws.prepare(request)

    async def receive() -> bytes | None:
        message = await ws.receive()
        return message.data if message.type == WSMsgType.BINARY else None

    try:
        await _port_forward_frames(receive, ws.send_bytes, pod)
    finally:
        await ws.close()
    return ws


Receive = Callable[[], Awaitable[bytes | None]]
"""The connection's next bytes; None once the peer closed it."""
Send = Callable[[bytes], Awaitable[None]]


async def _port_forward_frames(receive: Receive, send: Send, pod: types_pb2.Pod) -> None:
    """port-forward's SPDY streams, over a WebSocket tunnel or a plain upgrade: each stream
    replied to; for each requestID's error and data streams (upstream's kubelet pairs them:
    pkg/kubelet/cri/streaming/portforward/httpstream.go), the error stream's message that
    nothing listens, and both ended; a PING answered; until the peer closes or goes away."""
    reader, writer = spdy.Reader(), spdy.Writer()
    pending: dict[str, dict[str, int]] = {}
    """Per requestID, its streams by type until both are open."""
    try:
        while (data := await receive()) is not None:
            for frame in reader.feed(data):
                if not frame.control:
                    continue  # the local side's bytes, or its end: nothing reads them
                if frame.kind == spdy.PING:
                    await send(writer.ping(frame))
                elif frame.kind == spdy.GOAWAY:
                    return
                elif frame.kind == spdy.SYN_STREAM:
                    headers = reader.headers(frame)
                    await send(writer.syn_reply(frame.stream_id))
                    streams = pending.setdefault(headers.get(REQUEST_ID_HEADER, ""), {})
                    streams[headers.get(STREAM_TYPE_HEADER, "")] = frame.stream_id
                    if STREAM_TYPE_ERROR in streams and STREAM_TYPE_DATA in streams:
                        del pending[headers.get(REQUEST_ID_HEADER, "")]
                        line = no_listener_message(pod, headers.get(PORT_HEADER, "?"))
                        await send(writer.data(streams[STREAM_TYPE_ERROR], line.encode(), fin=True))
                        await send(writer.data(streams[STREAM_TYPE_DATA], b"", fin=True))
    except spdy.ProtocolError as e:
        logger.info("port-forward of pod %s/%s: %s", pod.metadata.namespace, pod.metadata.name, e)


def _flag(query: Mapping[str, str], name: str) -> bool:
    """A boolean of exec's query (kubectl sends `stdout=true`; upstream parses it as Go's
    strconv.ParseBool through the query decoder)."""
    return query.get(name, "") in ("1", "t", "T", "true", "TRUE", "True")


async def _serve_spdy(
    request: web.BaseRequest, pod: types_pb2.Pod, subresource: str, container: str
) -> web.StreamResponse:
    """exec, attach or port-forward over a plain SPDY/3.1 upgrade."""
    protocols = (PORT_FORWARD_V1,) if subresource == PORT_FORWARD else SPDY_EXEC_PROTOCOLS
    try:
        protocol = spdy_upgrade.negotiate(request, protocols)
    except spdy_upgrade.ProtocolRefused as e:
        refused = json_response(failure(e), e.code)
        for name, value in e.headers():
            refused.headers.add(name, value)
        return refused
    connection = await spdy_upgrade.upgrade(request, protocol)
    try:
        if subresource == PORT_FORWARD:
            await _port_forward_frames(connection.receive, connection.send, pod)
        else:
            await _remote_command_frames(request, connection, pod, subresource, container, protocol)
    finally:
        connection.close()
    return connection.response


async def _remote_command_frames(
    request: web.BaseRequest,
    connection: spdy_upgrade.Connection,
    pod: types_pb2.Pod,
    subresource: str,
    container: str,
    protocol: str,
) -> None:
    """exec or attach over SPDY (the kubelet's remotecommand/httpstream.go): every stream
    replied to; once the error stream and the output streams the query asks for are open
    (kubectl opens error, then stdin, stdout, stderr, resize, each after the last's reply),
    the line on stderr (stdout with a tty, which has no stderr), the exit Status on the error
    stream, all three ended. Then until kubectl closes, at most _SPDY_LINGER seconds (and
    _SPDY_STREAM_CREATION_TIMEOUT for the streams to open)."""
    query = dict(request.query)
    tty = _flag(query, "tty")
    wanted = {STREAM_TYPE_ERROR}
    if _flag(query, "stdout"):
        wanted.add(STREAM_TYPE_STDOUT)
    if _flag(query, "stderr") and not tty:
        wanted.add(STREAM_TYPE_STDERR)
    command = _command(request, subresource)
    reader, writer = spdy.Reader(), spdy.Writer()
    opened: dict[str, int] = {}
    answered = False
    try:
        with anyio.CancelScope(
            deadline=anyio.current_time() + _SPDY_STREAM_CREATION_TIMEOUT
        ) as linger:
            while (data := await connection.receive()) is not None:
                for frame in reader.feed(data):
                    if not frame.control:
                        continue  # stdin or a resize: nothing reads them
                    if frame.kind == spdy.PING:
                        await connection.send(writer.ping(frame))
                    elif frame.kind == spdy.GOAWAY:
                        return
                    elif frame.kind == spdy.SYN_STREAM:
                        headers = reader.headers(frame)
                        await connection.send(writer.syn_reply(frame.stream_id))
                        opened.setdefault(headers.get(STREAM_TYPE_HEADER, ""), frame.stream_id)
                if answered or not wanted <= opened.keys():
                    continue
                answered = True
                line = no_process_line(pod, container, _action(command, subresource)).encode()
                out = opened.get(STREAM_TYPE_STDERR, opened.get(STREAM_TYPE_STDOUT))
                if out is not None:
                    await connection.send(writer.data(out, line, fin=False))
                for kind in (STREAM_TYPE_STDOUT, STREAM_TYPE_STDERR):
                    if kind in opened:
                        await connection.send(writer.data(opened[kind], b"", fin=True))
                status = exit_status(command or [subresource], EXIT_CANNOT_EXECUTE)
                if protocol == V4:
                    error = json.dumps(status).encode()
                else:
                    error = str(status["message"]).encode()
                await connection.send(writer.data(opened[STREAM_TYPE_ERROR], error, fin=True))
                linger.deadline = anyio.current_time() + _SPDY_LINGER
    except spdy.ProtocolError as e:
        logger.info(
            "%s of pod %s/%s: %s", subresource, pod.metadata.namespace, pod.metadata.name, e
        )
