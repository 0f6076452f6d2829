"""serviceaccounts/token: the TokenRequest (authentication.k8s.io/v1) that `kubectl create
token` posts (upstream pkg/registry/core/serviceaccount/storage/token.go). The answer carries a
JWT-shaped token for the ServiceAccount: upstream's claims (iss, sub
`system:serviceaccount:<ns>:<name>`, aud, iat, nbf, exp, jti and the `kubernetes.io` claim
naming the namespace and the account with its uid), signed HS256 with a key the apiserver
draws at start. Nothing checks tokens yet (kemu has no authentication: the security issue's);
the expiry is `spec.expirationSeconds` (default 3600, at least 600, as upstream validates)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import uuid
from typing import Any, Final

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.errors import BadRequest, Invalid

API_VERSION: Final = "authentication.k8s.io/v1"
KIND: Final = "TokenRequest"
ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
"""--service-account-issuer of a kubeadm cluster; also the default audience."""
DEFAULT_EXPIRATION: Final = 3600
MIN_EXPIRATION: Final = 600
_KEY: Final = secrets.token_bytes(32)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def sign(claims: dict[str, Any], key: bytes = _KEY) -> str:
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}, separators=(",", ":")).encode())
    payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
    mac = hmac.new(key, f"{header}.{payload}".encode(), hashlib.sha256).digest()
    return f"{header}.{payload}.{_b64(mac)}"


def token_request(body: Any, sa: types_pb2.ServiceAccount, now: float) -> dict[str, Any]:
    """The TokenRequest answered for `body` (a TokenRequest, possibly empty) on `sa`."""
    if body is None or body == b"" or body == {}:
        body = {}
    if not isinstance(body, dict):
        raise BadRequest("a TokenRequest must be a JSON object")
    spec = body.get("spec") or {}
    if not isinstance(spec, dict):
        raise BadRequest("spec must be an object")
    expiration = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    if not isinstance(expiration, int) or isinstance(expiration, bool):
        raise Invalid.field("spec.expirationSeconds", "must be an integer")
    if expiration < MIN_EXPIRATION:
        raise Invalid.field(
            "spec.expirationSeconds",
            f"Invalid value: {expiration}: may not specify a duration less than 10 minutes",
        )
    audiences = spec.get("audiences") or [ISSUER]
    iat = int(now)
    exp = iat + expiration
    meta = sa.metadata
    claims = {
        "aud": audiences,
        "exp": exp,
        "iat": iat,
        "iss": ISSUER,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": {
            "namespace": meta.namespace,
            "serviceaccount": {"name": meta.name, "uid": meta.uid},
        },
        "nbf": iat,
        "sub": f"system:serviceaccount:{meta.namespace}:{meta.name}",
    }
    out_meta = {"name": meta.name, "namespace": meta.namespace}
    return {
        "kind": KIND,
        "apiVersion": API_VERSION,
        "metadata": {**out_meta, "creationTimestamp": None},
        "spec": {
            "audiences": audiences,
            "expirationSeconds": expiration,
            "boundObjectRef": spec.get("boundObjectRef"),
        },
        "status": {
            "token": sign(claims),
            "expirationTimestamp": convert.format_time(convert.timestamp(exp), "second"),
        },
    }
