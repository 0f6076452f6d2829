"""The apiserver kemuctl talks to. kemuctl's Client is built with wait_for_server=False: a
user at a terminal gets "cannot reach the kemu apiserver at HOST:PORT" at once, where a
component would wait. Nothing connects before the first call, so local errors (a bad flag, a
bad manifest) are reported first.

Like kubectl, kemuctl reads a kubeconfig (kemu.machinery.kubeconfig): `--kubeconfig`, else the
first file of $KUBECONFIG, else, when neither --server nor $KEMU_SERVER names a server, `make
run`'s `.kemu/kubeconfig` in the current directory when there is one (kubectl's default is
~/.kube/config; kemu's cluster writes its own). The kubeconfig gives the server (its `kemu.io/grpc`
address) and its TLS: the CA and the client certificate, used when kemuctl talks to that
server (a --server or $KEMU_SERVER naming another address is plaintext, as before: a
kubeconfig's credentials are its cluster's)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from kemu.machinery.kubeconfig import ENV, ClientTLS, load

DEFAULT_SERVER: Final = "127.0.0.1:6443"
SERVER_ENV: Final = "KEMU_SERVER"
KUBECONFIG_ENV: Final = ENV
"""kubectl's $KUBECONFIG."""
# The metrics endpoints `kemuctl why` reads (--scheduler, --autoscaler).
SCHEDULER_ENV: Final = "KEMU_SCHEDULER_URL"
AUTOSCALER_ENV: Final = "KEMU_AUTOSCALER_URL"
DEFAULT_SCHEDULER: Final = "http://127.0.0.1:10259"
DEFAULT_AUTOSCALER: Final = "http://127.0.0.1:8085"


LOCAL_KUBECONFIG: Final = Path(".kemu") / "kubeconfig"
"""make run's kubeconfig, relative to the repository's root."""


def server_address(flag: str | None, environ: Mapping[str, str]) -> str:
    """--server, else $KEMU_SERVER, else 127.0.0.1:6443; a URL scheme is dropped."""
    server = flag or environ.get(SERVER_ENV) or DEFAULT_SERVER
    return _strip(server)


def _strip(server: str) -> str:
    for scheme in ("http://", "https://", "grpc://"):
        server = server.removeprefix(scheme)
    return server.rstrip("/")


@dataclass(frozen=True)
class Target:
    """The apiserver kemuctl talks to and how (TLS None: plaintext)."""

    server: str
    tls: ClientTLS | None = None


def kubeconfig_path(flag: str | None, environ: Mapping[str, str], *, server_given: bool) -> str:
    """The kubeconfig kemuctl reads ("" none): module docstring."""
    if flag:
        return flag
    for path in environ.get(KUBECONFIG_ENV, "").split(os.pathsep):
        if path and Path(path).is_file():
            return path
    if not server_given and LOCAL_KUBECONFIG.is_file():
        return str(LOCAL_KUBECONFIG)
    return ""


def target(
    server_flag: str | None, kubeconfig_flag: str | None, environ: Mapping[str, str]
) -> Target:
    """The server and its TLS; KubeConfigError (a ValueError naming the file and field) for a
    kubeconfig that cannot be used."""
    given = server_flag or environ.get(SERVER_ENV)
    path = kubeconfig_path(kubeconfig_flag, environ, server_given=bool(given))
    if not path:
        return Target(server_address(server_flag, environ))
    config = load(path)
    server = _strip(given) if given else config.grpc_server
    return Target(server, config.tls if server == config.grpc_server else None)
