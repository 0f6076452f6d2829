"""The apiserver kemuctl talks to. kemuctl's Client is built with wait_for_server=False: a
user at a terminal gets "cannot reach the kemu apiserver at HOST:PORT" at once, where a
component would wait. Nothing connects before the first call, so local errors (a bad flag, a
bad manifest) are reported first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

DEFAULT_SERVER: Final = "127.0.0.1:6443"
SERVER_ENV: Final = "KEMU_SERVER"
# The metrics endpoints `kemuctl why` reads (--scheduler, --autoscaler).
SCHEDULER_ENV: Final = "KEMU_SCHEDULER_URL"
AUTOSCALER_ENV: Final = "KEMU_AUTOSCALER_URL"
DEFAULT_SCHEDULER: Final = "http://127.0.0.1:10259"
DEFAULT_AUTOSCALER: Final = "http://127.0.0.1:8085"


def server_address(flag: str | None, environ: Mapping[str, str]) -> str:
    """--server, else $KEMU_SERVER, else 127.0.0.1:6443; a URL scheme is dropped."""
    server = flag or environ.get(SERVER_ENV) or DEFAULT_SERVER
    for scheme in ("http://", "https://", "grpc://"):
        server = server.removeprefix(scheme)
    return server.rstrip("/")
