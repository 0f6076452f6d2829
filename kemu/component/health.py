"""Health checks and the small HTTP server every component exposes on `--metrics-port`.

Contract:
- A check is a synchronous callable registered by name on `HealthChecks`: it returns True when
  healthy; False or an exception (whose text becomes the reason) means failing. Checks must be
  cheap and do no I/O: they read state the component keeps (informers synced, last etcd call ok).
- `GET /livez` and `/healthz` run the liveness checks; `GET /readyz` runs the liveness and the
  readiness checks. All pass: 200 "ok". One fails: 503 with one line per check, upstream's
  verbose format ("[+]ping ok", "[-]etcd failed: reason", then "readyz check failed"). `?verbose`
  gives that listing on success too; `/readyz/<name>` runs one check.
- `GET /metrics` is the Prometheus text of the component's own CollectorRegistry.
- `GET /version` is JSON: component, emulatedVersion, binaryVersion, enabledFeatureGates and
  featureGates (name -> enabled, for gates that exist at the emulated version).
- `GET /debug/<name>` is the JSON document of the debug handler registered as `name` (a
  synchronous callable that returns what the component last found, e.g. its cache comparison;
  like a check, it does no I/O); an unknown name is 404.
- `await tg.start(server.serve)` returns the bound port once the socket listens (port 0 picks a
  free one), or raises kemu.component.listen.ListenFailed; cancelling serve() closes the
  listener and every open connection.
- With an `ssl_context` (a kubelet's --tls-cert-file, kemu.component.options) it serves HTTPS
  instead: upstream's kubelet serves /metrics and /healthz on its TLS port.
HTTP support is deliberately minimal: GET and HEAD, one request per connection. Malformed
requests get a 4xx as Go's net/http gives them (400; 431 for a head over _MAX_REQUEST_HEAD),
never a closed connection without an answer.
"""

from __future__ import annotations

import json
import logging
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio.abc import ByteStream, Listener, SocketAttribute, TaskStatus
from anyio.streams.tls import TLSListener
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from kemu.component import listen
from kemu.component.featuregate import FeatureGates
from kemu.component.logs import V
from kemu.component.version import BINARY_VERSION

logger = logging.getLogger(__name__)

Check = Callable[[], bool]
DebugHandler = Callable[[Mapping[str, str]], object]
"""Returns a JSON-serialisable document for GET /debug/<name>?<query> (the query's parameters,
the first value of each); raises DebugRequestError for a query it cannot answer (400)."""


class DebugRequestError(ValueError):
    """A debug request that names something wrong: its message is the 400 response."""


_MAX_REQUEST_HEAD: Final = 16 * 1024
_MAX_DRAIN: Final = 1024 * 1024
_REQUEST_TIMEOUT: Final = 10.0
_REASONS: Final = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    reason: str = ""

    def line(self) -> str:
        if self.ok:
            return f"[+]{self.name} ok"
        return f"[-]{self.name} failed: {self.reason or 'not ready'}"


class HealthChecks:
    """The named liveness and readiness checks of one component ("ping" is always live)."""

    def __init__(self) -> None:
        self._liveness: dict[str, Check] = {"ping": lambda: True}
        self._readiness: dict[str, Check] = {}

    def add_liveness_check(self, name: str, check: Check) -> None:
        self._add(self._liveness, name, check)

    def add_readiness_check(self, name: str, check: Check) -> None:
        self._add(self._readiness, name, check)

    def _add(self, table: dict[str, Check], name: str, check: Check) -> None:
        if name in self._liveness or name in self._readiness:
            raise ValueError(f'health check "{name}" is already registered')
        table[name] = check

    def liveness(self) -> list[CheckResult]:
        return [_run_check(name, check) for name, check in self._liveness.items()]

    def readiness(self) -> list[CheckResult]:
        """The liveness checks followed by the readiness checks, as /readyz runs them."""
        return self.liveness() + [_run_check(n, c) for n, c in self._readiness.items()]

    def is_ready(self) -> bool:
        return all(result.ok for result in self.readiness())

    def run_one(self, name: str) -> CheckResult | None:
        check = self._readiness.get(name) or self._liveness.get(name)
        return None if check is None else _run_check(name, check)


def _run_check(name: str, check: Check) -> CheckResult:
    try:
        ok = check()
    except Exception as exc:
        return CheckResult(name, False, str(exc) or type(exc).__name__)
    return CheckResult(name, bool(ok))


@dataclass(frozen=True)
class _Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()


def _text(status: int, text: str) -> _Response:
    return _Response(status, text.encode())


class HealthServer:
    """Serves /metrics, /healthz, /livez, /readyz, /version and /debug/<name>; see the module
    docstring."""

    def __init__(
        self,
        *,
        component: str,
        gates: FeatureGates,
        registry: CollectorRegistry,
        checks: HealthChecks,
        debug: Mapping[str, DebugHandler] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        """`debug`: the debug handlers by name, read at each request (handlers registered
        later are served too). `ssl_context`: serve HTTPS."""
        self.component = component
        self.gates = gates
        self.registry = registry
        self.checks = checks
        self.debug: Mapping[str, DebugHandler] = debug if debug is not None else {}
        self.host = host
        self._requested_port = port
        self.ssl_context = ssl_context
        self._port: int | None = None

    @property
    def port(self) -> int:
        """The bound port; only valid once serve() has reported it started."""
        if self._port is None:
            raise RuntimeError("the health server is not listening")
        return self._port

    async def serve(self, *, task_status: TaskStatus[int] = anyio.TASK_STATUS_IGNORED) -> None:
        try:
            listener = await anyio.create_tcp_listener(
                local_host=self.host or None, local_port=self._requested_port, reuse_port=False
            )
        except OSError as e:
            raise listen.failed(self.host, self._requested_port, e) from None
        async with listener:
            self._port = int(listener.extra(SocketAttribute.local_port))
            served: Listener[ByteStream] = listener
            if self.ssl_context is not None:
                # (handshake_timeout: a client that connects and says nothing is dropped)
                served = TLSListener(
                    listener, self.ssl_context, standard_compatible=False, handshake_timeout=10
                )
            scheme = "https" if self.ssl_context is not None else "http"
            logger.info("serving metrics and health on %s://%s:%d", scheme, self.host, self._port)
            task_status.started(self._port)
            try:
                await served.serve(self._handle)
            finally:
                self._port = None

    async def _handle(self, stream: ByteStream) -> None:
        async with stream:
            try:
                with anyio.move_on_after(_REQUEST_TIMEOUT):
                    try:
                        head = await _read_head(stream)
                    except _HeadTooLarge:
                        response = _text(431, "request header fields too large\n")
                        await stream.send(_encode(response, include_body=True))
                        await _drain(stream)
                        return
                    if head is None:
                        return
                    method, response = self._respond(head)
                    await stream.send(_encode(response, include_body=method != "HEAD"))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream):
                pass
            except Exception:
                logger.exception("health server: failed to answer a request")

    def _respond(self, head: bytes) -> tuple[str, _Response]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            return "GET", _text(400, "bad request\n")
        method, target = parts[0], parts[1]
        if method not in ("GET", "HEAD"):
            return method, _Response(405, b"method not allowed\n", headers=(("Allow", "GET"),))
        url = urlsplit(target)
        query = parse_qs(url.query, keep_blank_values=True)
        logger.log(V(5), "health server: %s %s", method, target)
        params = {k: v[0] for k, v in query.items()}
        return method, self._route(url.path.rstrip("/") or "/", params)

    def _route(self, path: str, params: Mapping[str, str]) -> _Response:
        verbose = "verbose" in params
        if path == "/metrics":
            return _Response(200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
        if path == "/version":
            return _Response(200, self._version_json(), "application/json")
        if path in ("/healthz", "/livez"):
            return _checks_response(path[1:], self.checks.liveness(), verbose)
        if path == "/readyz":
            return _checks_response("readyz", self.checks.readiness(), verbose)
        endpoint, _, name = path[1:].partition("/")
        if endpoint == "debug" and name in self.debug:
            return _debug_response(name, self.debug[name], params)
        if endpoint in ("healthz", "livez", "readyz") and name:
            result = self.checks.run_one(name)
            if result is not None:
                return _text(200, "ok") if result.ok else _text(503, result.line() + "\n")
        return _text(404, "404 page not found\n")

    def _version_json(self) -> bytes:
        states = self.gates.states()
        document = {
            "component": self.component,
            "emulatedVersion": str(self.gates.version),
            "binaryVersion": BINARY_VERSION,
            "enabledFeatureGates": [s.name for s in states if s.enabled],
            "featureGates": {s.name: s.enabled for s in states},
        }
        return (json.dumps(document, indent=2) + "\n").encode()


def _debug_response(name: str, handler: DebugHandler, params: Mapping[str, str]) -> _Response:
    try:
        document = json.dumps(handler(params), indent=2, sort_keys=True) + "\n"
    except DebugRequestError as exc:
        return _text(400, f"{exc}\n")
    except Exception as exc:  # a bug in the handler, not in the request
        logger.exception("debug handler %s failed", name)
        return _text(500, f"debug handler {name} failed: {exc}\n")
    return _Response(200, document.encode(), "application/json")


def _checks_response(endpoint: str, results: list[CheckResult], verbose: bool) -> _Response:
    ok = all(result.ok for result in results)
    if ok and not verbose:
        return _text(200, "ok")
    lines = [result.line() for result in results]
    lines.append(f"{endpoint} check {'passed' if ok else 'failed'}")
    return _text(200 if ok else 503, "\n".join(lines) + "\n")


class _HeadTooLarge(Exception):
    pass


async def _read_head(stream: ByteStream) -> bytes | None:
    """The request line and headers, or None if the client went away sending nothing;
    _HeadTooLarge past _MAX_REQUEST_HEAD."""
    data = b""
    while b"\r\n\r\n" not in data:
        if len(data) > _MAX_REQUEST_HEAD:
            raise _HeadTooLarge
        try:
            data += await stream.receive(4096)
        except anyio.EndOfStream:
            return data if data.strip() else None
    return data.split(b"\r\n\r\n", 1)[0]


async def _drain(stream: ByteStream) -> None:
    """Reads what the client still sends (briefly, boundedly) before the close: closing on
    unread data resets the connection, and the client may lose the answer."""
    received = 0
    with anyio.move_on_after(1.0):
        while received < _MAX_DRAIN:
            try:
                received += len(await stream.receive(65536))
            except anyio.EndOfStream:
                return


def _encode(response: _Response, *, include_body: bool) -> bytes:
    lines = [
        f"HTTP/1.1 {response.status} {_REASONS.get(response.status, 'Unknown')}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + response.body if include_body else head
