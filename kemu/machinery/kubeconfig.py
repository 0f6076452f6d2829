"""Kubeconfigs: the one kemu writes for kubectl, the official clients and its own components,
and reading one (client-go's clientcmd, for the fields kemu uses).

A kubeconfig's `server` is the REST edge's URL, what kubectl and the Python client talk to. A
kemu client (a component, kemuctl) talks gRPC to the apiserver's other port: a kubeconfig
kemu writes names that address in a cluster extension, `kemu.io/grpc` (`{"server":
"127.0.0.1:6443"}`; kubectl keeps a cluster's extensions and ignores them, as it does
minikube's); a kubeconfig without it is read as naming the gRPC port in its URL (a
component's own kubeconfig, `https://127.0.0.1:6443`).

Credentials as client-go reads them (tools/clientcmd/api/v1 types.go): the cluster's
`certificate-authority-data` (or the file `certificate-authority`), the user's
`client-certificate-data`/`client-key-data` (or the files `client-certificate`/`client-key`),
a relative path relative to the kubeconfig's directory (clientcmd's ResolvePaths). An https
server with no CA is verified against the system's roots, as client-go does.

JSON is YAML, so writing needs no YAML writer; reading takes YAML (kubectl's own files).
"""

from __future__ import annotations

import base64
import binascii
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

import yaml

from kemu.machinery.jsonvalue import JSONObject

CONTEXT: Final = "kemu"
GRPC_EXTENSION: Final = "kemu.io/grpc"
"""The cluster extension naming the apiserver's gRPC address (module docstring)."""
ENV: Final = "KUBECONFIG"
"""kubectl's environment variable: a kubeconfig's path (the first of a list: kemu merges no
files)."""


class KubeConfigError(ValueError):
    """A kubeconfig kemu cannot use; the message names the file and the field."""


@dataclass(frozen=True)
class ClientTLS:
    """A client's TLS: the CA that verifies the server (PEM; None: the system's roots) and its
    own certificate and key (PEM; None: no client certificate)."""

    ca: bytes | None
    cert: bytes | None = None
    key: bytes | None = None


@dataclass(frozen=True)
class KubeConfig:
    """The current context of a kubeconfig: where the apiserver is and how to trust it."""

    path: str
    server: str
    """The cluster's `server` URL (the REST edge)."""
    grpc_server: str
    """HOST:PORT of the apiserver's gRPC port (module docstring)."""
    tls: ClientTLS | None
    """None: a plain http:// server."""
    namespace: str = "default"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def kubeconfig(
    server: str,
    namespace: str = "default",
    *,
    grpc_server: str = "",
    ca: bytes | None = None,
    cert: bytes | None = None,
    key: bytes | None = None,
) -> JSONObject:
    """`server` is the REST endpoint's URL (http://127.0.0.1:6445, https://... with `ca`);
    `grpc_server` the gRPC HOST:PORT for kemu's clients; `cert` and `key` the user's client
    certificate."""
    cluster: JSONObject = {"server": server}
    if ca is not None:
        cluster["certificate-authority-data"] = _b64(ca)
    if grpc_server:
        cluster["extensions"] = [{"name": GRPC_EXTENSION, "extension": {"server": grpc_server}}]
    user: JSONObject = {}
    if cert is not None and key is not None:
        user = {"client-certificate-data": _b64(cert), "client-key-data": _b64(key)}
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
        "users": [{"name": CONTEXT, "user": user}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write(
    path: str | Path,
    server: str,
    *,
    grpc_server: str = "",
    ca: bytes | None = None,
    cert: bytes | None = None,
    key: bytes | None = None,
) -> Path:
    """The kubeconfig at `path`, readable by its owner only when it holds a key."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    config = kubeconfig(server, grpc_server=grpc_server, ca=ca, cert=cert, key=key)
    out.write_text(json.dumps(config, indent=2) + "\n")
    if key is not None:
        out.chmod(0o600)
    return out


def _named(items: object, name: str, what: str, where: str) -> dict[str, object]:
    if not isinstance(items, list):
        raise KubeConfigError(f"{where}: {what}s: not a list")
    for i, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == name:
            body = item.get(what)
            if body is None:
                return {}
            if not isinstance(body, dict):
                raise KubeConfigError(f"{where}: {what}s[{i}].{what}: not a mapping")
            return body
    raise KubeConfigError(f"{where}: no {what} named {name!r}")


def _credential(
    body: dict[str, object], field: str, base: Path, where: str, prefix: str
) -> bytes | None:
    """`field`-data (base64) or `field` (a file), as clientcmd reads them; the data wins."""
    data = body.get(f"{field}-data")
    if data is not None:
        try:
            return base64.b64decode(str(data), validate=True)
        except binascii.Error:
            raise KubeConfigError(f"{where}: {prefix}.{field}-data: not base64") from None
    file = body.get(field)
    if file is None:
        return None
    path = Path(str(file))
    path = path if path.is_absolute() else base / path
    try:
        return path.read_bytes()
    except OSError as e:
        raise KubeConfigError(f"{where}: {prefix}.{field}: {e.strerror}: {path}") from None


def grpc_address(url: str, where: str) -> str:
    """HOST:PORT of a server URL (https's default port 443, http's 80)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise KubeConfigError(f"{where}: cluster.server: {url!r} is not an http(s) URL")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        raise KubeConfigError(f"{where}: cluster.server: {url!r} has a bad port") from None
    host = parts.hostname
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def load(path: str | Path, context: str = "") -> KubeConfig:
    """The kubeconfig at `path` in `context` (default its current-context);
    KubeConfigError naming the file and the field."""
    where = str(path)
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise KubeConfigError(f"{where}: {e.strerror}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise KubeConfigError(f"{where}: not YAML: {e}") from None
    if not isinstance(doc, dict):
        raise KubeConfigError(f"{where}: not a kubeconfig (a mapping)")
    name = context or doc.get("current-context") or ""
    if not name:
        raise KubeConfigError(f"{where}: current-context: not set")
    ctx = _named(doc.get("contexts"), str(name), "context", where)
    cluster = _named(doc.get("clusters"), str(ctx.get("cluster", "")), "cluster", where)
    user_name = ctx.get("user")
    user = _named(doc.get("users"), str(user_name), "user", where) if user_name else {}
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise KubeConfigError(f"{where}: cluster.server: not set")
    grpc_server = ""
    extensions = cluster.get("extensions") or []
    if isinstance(extensions, list):
        for ext in extensions:
            if isinstance(ext, dict) and ext.get("name") == GRPC_EXTENSION:
                body = ext.get("extension")
                if not isinstance(body, dict) or not isinstance(body.get("server"), str):
                    raise KubeConfigError(
                        f"{where}: cluster.extensions[{GRPC_EXTENSION}].extension.server: not set"
                    )
                grpc_server = body["server"]
    grpc_server = grpc_server or grpc_address(server, where)
    base = Path(path).resolve().parent
    tls: ClientTLS | None = None
    if urlsplit(server).scheme == "https":
        cert = _credential(user, "client-certificate", base, where, "user")
        key = _credential(user, "client-key", base, where, "user")
        if (cert is None) != (key is None):
            missing = "client-key" if key is None else "client-certificate"
            raise KubeConfigError(f"{where}: user.{missing}: needed with the other")
        ca = _credential(cluster, "certificate-authority", base, where, "cluster")
        tls = ClientTLS(ca, cert, key)
    namespace = str(ctx.get("namespace") or "default")
    return KubeConfig(where, server, grpc_server, tls, namespace)


if __name__ == "__main__":  # python -m kemu.machinery.kubeconfig PATH URL
    if len(sys.argv) != 3:
        sys.exit("usage: python -m kemu.machinery.kubeconfig PATH SERVER_URL")
    write(sys.argv[1], sys.argv[2])
