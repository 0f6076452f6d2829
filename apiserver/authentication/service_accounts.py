"""ServiceAccount tokens: issued by TokenRequest, checked on every request that carries one
(issue #60 item 2).

Upstream: pkg/serviceaccount/jwt.go (the signed JWT: RS256, its `kid` the SHA-256 of the public
key's DER, base64url), claims.go (the claims and their validation), and
pkg/registry/core/serviceaccount/storage/token.go (TokenRequest: audiences defaulted to the
apiserver's `--api-audiences`, the expiration capped by `--service-account-max-token-expiration`,
a bound object looked up and its uid checked, the kubelet's 3607 s pod-bound tokens extended to a
year with `warnafter` when `--service-account-extend-token-expiration`).

A token's user is system:serviceaccount:<namespace>:<name> in system:serviceaccounts,
system:serviceaccounts:<namespace> and system:authenticated. It is refused (401, "Unauthorized"
to the client, the cause in the log as upstream's) when it is expired or not yet valid, its
audiences and the apiserver's have none in common, its signature does not verify, or what it is
bound to is gone: the ServiceAccount (or its uid changed), the pod (or it is past its deletion
timestamp), the secret, the node. A token of another issuer is not this authenticator's: the
next one (anonymous, or 401) decides. Times are the apiserver's clock (virtual time included).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from kemu.api.v1 import types_pb2
from kemu.machinery import convert
from kemu.machinery.errors import BadRequest, Conflict, Invalid, NotFound, Unauthorized
from kemu.machinery.user import AUTHENTICATED, UserInfo

logger = logging.getLogger(__name__)

API_VERSION: Final = "authentication.k8s.io/v1"
KIND: Final = "TokenRequest"
DEFAULT_ISSUER: Final = "https://kubernetes.default.svc.cluster.local"
"""kubeadm's --service-account-issuer; the apiserver's audience when none is given."""
DEFAULT_EXPIRATION: Final = 3600
MIN_EXPIRATION: Final = 600
MAX_EXPIRATION: Final = 1 << 32
WARN_ONLY_BOUND_EXPIRATION: Final = 3607
"""The kubelet's projected token's expiration (token.WarnOnlyBoundTokenExpirationSeconds)."""
EXTENDED_EXPIRATION: Final = 365 * 24 * 3600
"""token.ExpirationExtensionSeconds."""
BOUND_KINDS: Final = ("Pod", "Secret", "Node")
SERVICE_ACCOUNTS_GROUP: Final = "system:serviceaccounts"
USER_PREFIX: Final = "system:serviceaccount:"


def service_account_user(namespace: str, name: str) -> UserInfo:
    """apiserver/pkg/authentication/serviceaccount UserInfo."""
    return UserInfo(
        f"{USER_PREFIX}{namespace}:{name}",
        (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}", AUTHENTICATED),
    )


# ---------------------------------------------------------------- keys


def key_id(public: rsa.RSAPublicKey) -> str:
    """jwt.go keyIDFromPublicKey: base64url (no padding) of the SHA-256 of the PKIX DER."""
    der = public.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return _b64(hashlib.sha256(der).digest())


def new_signing_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def signing_key_pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def public_key_pem(key: rsa.RSAPublicKey) -> bytes:
    return key.public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def load_signing_key(data: bytes, path: str) -> rsa.RSAPrivateKey:
    """--service-account-signing-key-file: an RSA private key in PEM (ValueError naming the
    file otherwise)."""
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as e:
        raise ValueError(f"{path}: not a PEM private key: {e}") from None
    if not isinstance(key, rsa.RSAPrivateKey):
        raise ValueError(f"{path}: kemu signs service account tokens with RSA keys only")
    return key


def load_public_keys(data: bytes, path: str) -> list[rsa.RSAPublicKey]:
    """--service-account-key-file: RSA public keys (or private keys, whose public halves are
    taken, as upstream's keyutil.ParsePublicKeysPEM), PEM blocks one after the other."""
    keys: list[rsa.RSAPublicKey] = []
    for block in _pem_blocks(data):
        loaded: Any
        try:
            if b"PRIVATE KEY" in block.split(b"\n", 1)[0]:
                loaded = serialization.load_pem_private_key(block, password=None).public_key()
            else:
                loaded = serialization.load_pem_public_key(block)
        except (ValueError, TypeError) as e:
            raise ValueError(f"{path}: not a PEM key: {e}") from None
        if not isinstance(loaded, rsa.RSAPublicKey):
            raise ValueError(f"{path}: kemu verifies service account tokens with RSA keys only")
        keys.append(loaded)
    if not keys:
        raise ValueError(f"{path}: no PEM key in it")
    return keys


def _pem_blocks(data: bytes) -> list[bytes]:
    blocks: list[bytes] = []
    current: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if line.startswith(b"-----BEGIN"):
            current = [line]
        elif current:
            current.append(line)
            if line.startswith(b"-----END"):
                blocks.append(b"".join(current))
                current = []
    return blocks


# ---------------------------------------------------------------- JWT


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _compact(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def sign(claims: dict[str, Any], key: rsa.RSAPrivateKey) -> str:
    header = {"alg": "RS256", "kid": key_id(key.public_key())}
    signing_input = f"{_b64(_compact(header))}.{_b64(_compact(claims))}"
    signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{_b64(signature)}"


@dataclass(frozen=True)
class _Jwt:
    header: dict[str, Any]
    claims: dict[str, Any]
    signing_input: bytes
    signature: bytes


def _parse(token: str) -> _Jwt | None:
    """The three parts of a compact JWS, None when `token` is not one (another
    authenticator's token)."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        header = json.loads(_unb64(parts[0]))
        claims = json.loads(_unb64(parts[1]))
        signature = _unb64(parts[2])
    except (ValueError, binascii.Error):
        return None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return None
    return _Jwt(header, claims, f"{parts[0]}.{parts[1]}".encode(), signature)


# ---------------------------------------------------------------- the bound objects


class Lookup(Protocol):
    """What validation reads (the apiserver's watch caches)."""

    def service_account(self, namespace: str, name: str) -> types_pb2.ServiceAccount | None: ...

    def pod(self, namespace: str, name: str) -> types_pb2.Pod | None: ...

    def secret(self, namespace: str, name: str) -> types_pb2.Secret | None: ...

    def node(self, name: str) -> types_pb2.Node | None: ...


@dataclass(frozen=True)
class AuthenticationSettings:
    """The apiserver's authentication flags (apiserver/options.py): --anonymous-auth, the
    --service-account-* flags and --api-audiences."""

    anonymous: bool = True
    issuers: tuple[str, ...] = (DEFAULT_ISSUER,)
    signing_key: rsa.RSAPrivateKey | None = None
    """None: one drawn for the first token (ServiceAccountTokens.key)."""
    public_keys: tuple[rsa.RSAPublicKey, ...] = ()
    api_audiences: tuple[str, ...] = ()
    max_expiration: int = 0
    extend_expiration: bool = True


@dataclass(frozen=True)
class ServiceAccountTokens:
    """The apiserver's issuer and authenticator of ServiceAccount tokens (its
    --service-account-* flags and --api-audiences)."""

    signing_key: rsa.RSAPrivateKey | None = None
    """None (no --service-account-signing-key-file): a key drawn when the first token is
    signed (`key`), an RSA key's tenth of a second of CPU, or more, that an apiserver
    minting none does not spend; until then no token can be its own."""
    issuers: Sequence[str] = (DEFAULT_ISSUER,)
    """The first signs; a token of any of them is accepted."""
    public_keys: Sequence[rsa.RSAPublicKey] = ()
    """What verifies (the signing key's public half is always among them)."""
    api_audiences: Sequence[str] = ()
    """Empty: the issuers (upstream's default)."""
    max_expiration: int = 0
    """Seconds; 0: no cap."""
    extend_expiration: bool = True
    now: Callable[[], float] = field(default=lambda: 0.0)
    """The apiserver's clock."""

    @property
    def audiences(self) -> Sequence[str]:
        return tuple(self.api_audiences) or tuple(self.issuers)

    _drawn: list[rsa.RSAPrivateKey] = field(
        default_factory=list, init=False, repr=False, compare=False
    )
    """The key drawn for the first token when none is configured (one at most)."""

    def _own_key(self) -> rsa.RSAPrivateKey | None:
        """The key that signs, once there is one (configured, or drawn)."""
        if self.signing_key is not None:
            return self.signing_key
        return self._drawn[0] if self._drawn else None

    @property
    def key(self) -> rsa.RSAPrivateKey:
        """What signs: the configured key, else one drawn now (once)."""
        key = self._own_key()
        if key is None:
            key = new_signing_key()
            self._drawn.append(key)
            logger.info(
                "no --service-account-signing-key-file: service account tokens are signed "
                "with a key drawn for this apiserver's first token (key id %s)",
                key_id(key.public_key()),
            )
        return key

    def _verifiers(self) -> list[rsa.RSAPublicKey]:
        # (a key not drawn yet has signed nothing: none is drawn for a verification)
        own = self._own_key()
        return [*([own.public_key()] if own is not None else []), *self.public_keys]

    # ------------------------------------------------------------ TokenRequest

    def token_request(
        self, body: Any, sa: types_pb2.ServiceAccount, lookup: Lookup
    ) -> dict[str, Any]:
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
        if expiration > MAX_EXPIRATION:
            raise Invalid.field(
                "spec.expirationSeconds",
                f"Invalid value: {expiration}: may not specify a duration larger than 2^32 seconds",
            )
        audiences = spec.get("audiences") or list(self.audiences)
        if not isinstance(audiences, list) or not all(isinstance(a, str) for a in audiences):
            raise Invalid.field("spec.audiences", "must be a list of strings")
        if self.max_expiration and expiration > self.max_expiration:
            expiration = self.max_expiration
        ref = spec.get("boundObjectRef")
        bound = self._bound(ref, sa, lookup) if ref else _Bound()
        token_expiration, warn_after = expiration, 0
        if (
            self.extend_expiration
            and bound.pod is not None
            and expiration == WARN_ONLY_BOUND_EXPIRATION
            and set(audiences) & set(self.audiences)
        ):
            token_expiration, warn_after = EXTENDED_EXPIRATION, WARN_ONLY_BOUND_EXPIRATION
        now = int(self.now())
        claims = self._claims(sa, bound, audiences, now, token_expiration, warn_after)
        meta = sa.metadata
        return {
            "kind": KIND,
            "apiVersion": API_VERSION,
            "metadata": {"name": meta.name, "namespace": meta.namespace, "creationTimestamp": None},
            "spec": {
                "audiences": audiences,
                "expirationSeconds": expiration,
                "boundObjectRef": ref,
            },
            "status": {
                "token": sign(claims, self.key),
                "expirationTimestamp": convert.format_time(
                    convert.timestamp(now + expiration), "second"
                ),
            },
        }

    def _bound(self, ref: Any, sa: types_pb2.ServiceAccount, lookup: Lookup) -> _Bound:
        """The object a token is bound to (token.go Create: looked up, its uid checked)."""
        if not isinstance(ref, dict):
            raise BadRequest("spec.boundObjectRef must be an object")
        kind, name, uid = ref.get("kind", ""), ref.get("name", ""), ref.get("uid", "")
        api_version = ref.get("apiVersion", "")
        if kind not in BOUND_KINDS:
            raise Invalid.field(
                "spec.boundObjectRef.kind",
                f'Unsupported value: "{kind}": supported values: "Pod", "Secret", "Node"',
            )
        if api_version not in ("", "v1"):
            raise Invalid.field(
                "spec.boundObjectRef.apiVersion",
                f'Unsupported value: "{api_version}": supported values: "v1"',
            )
        if not name:
            raise Invalid.field("spec.boundObjectRef.name", "Required value")
        namespace = sa.metadata.namespace
        obj: types_pb2.Pod | types_pb2.Secret | types_pb2.Node | None
        if kind == "Pod":
            obj = lookup.pod(namespace, name)
        elif kind == "Secret":
            obj = lookup.secret(namespace, name)
        else:
            obj = lookup.node(name)
        if obj is None:
            raise NotFound(f'{kind.lower()}s "{name}" not found')
        if uid and uid != obj.metadata.uid:
            raise Conflict(
                f"the UID in the bound object reference ({uid}) does not match the UID in "
                "record. The object might have been deleted and then recreated"
            )
        if isinstance(obj, types_pb2.Pod):
            if obj.spec.service_account_name != sa.metadata.name:
                raise BadRequest(
                    f'cannot bind token for serviceaccount "{sa.metadata.name}" to pod running '
                    "with different serviceaccount name."
                )
            node = lookup.node(obj.spec.node_name) if obj.spec.node_name else None
            return _Bound(pod=obj, node=node)
        if isinstance(obj, types_pb2.Secret):
            return _Bound(secret=obj)
        return _Bound(node=obj)

    def _claims(
        self,
        sa: types_pb2.ServiceAccount,
        bound: _Bound,
        audiences: list[str],
        now: int,
        expiration: int,
        warn_after: int,
    ) -> dict[str, Any]:
        """claims.go Claims, with the issuer the generator adds."""
        meta = sa.metadata
        kube: dict[str, Any] = {
            "namespace": meta.namespace,
            "serviceaccount": {"name": meta.name, "uid": meta.uid},
        }
        if bound.pod is not None:
            kube["pod"] = _ref(bound.pod.metadata)
            if bound.node is not None:
                kube["node"] = _ref(bound.node.metadata)
        elif bound.secret is not None:
            kube["secret"] = _ref(bound.secret.metadata)
        elif bound.node is not None:
            kube["node"] = _ref(bound.node.metadata)
        if warn_after:
            kube["warnafter"] = now + warn_after
        return {
            "aud": audiences,
            "exp": now + expiration,
            "iat": now,
            "iss": self.issuers[0],
            "jti": str(uuid.uuid4()),
            "kubernetes.io": kube,
            "nbf": now,
            "sub": f"{USER_PREFIX}{meta.namespace}:{meta.name}",
        }

    # ------------------------------------------------------------ authentication

    def authenticate(self, token: str, lookup: Lookup) -> UserInfo | None:
        """The token's user; None when it is not a token of this apiserver's issuers (another
        authenticator's); Unauthorized when it is one and does not hold."""
        jwt = _parse(token)
        if jwt is None or jwt.claims.get("iss") not in self.issuers:
            return None
        try:
            return self._validated(jwt, lookup)
        except _Refused as e:
            logger.info("service account token refused: %s", e)
            raise Unauthorized("Unauthorized") from None

    def _validated(self, jwt: _Jwt, lookup: Lookup) -> UserInfo:
        if jwt.header.get("alg") != "RS256":
            raise _Refused(f"unsupported signing algorithm {jwt.header.get('alg')!r}")
        if not self._verified(jwt):
            raise _Refused("invalid signature")
        claims = jwt.claims
        aud = claims.get("aud")
        token_audiences = [aud] if isinstance(aud, str) else list(aud or [])
        if not set(token_audiences) & set(self.audiences):
            raise _Refused(
                f"token audiences {token_audiences} is invalid for the target audiences "
                f"{list(self.audiences)}"
            )
        now = self.now()
        exp, nbf = claims.get("exp"), claims.get("nbf")
        if not isinstance(exp, int | float) or now >= exp:
            raise _Refused("service account token has expired")
        if isinstance(nbf, int | float) and now < nbf:
            raise _Refused("service account token is not valid yet")
        kube = claims.get("kubernetes.io")
        if not isinstance(kube, dict):
            return self._legacy(claims, lookup)
        namespace = kube.get("namespace", "")
        sa_ref = kube.get("serviceaccount") or {}
        sa = lookup.service_account(namespace, sa_ref.get("name", ""))
        if sa is None:
            raise _Refused(f"service account {namespace}/{sa_ref.get('name')} has been deleted")
        if sa.metadata.uid != sa_ref.get("uid"):
            raise _Refused(
                f"service account UID ({sa.metadata.uid}) does not match claim "
                f"({sa_ref.get('uid')})"
            )
        pod_ref = kube.get("pod")
        if isinstance(pod_ref, dict):
            pod = lookup.pod(namespace, pod_ref.get("name", ""))
            if pod is None:
                raise _Refused(f"pod {namespace}/{pod_ref.get('name')} has been deleted")
            if pod.metadata.uid != pod_ref.get("uid"):
                raise _Refused(
                    f"pod UID ({pod.metadata.uid}) does not match claim ({pod_ref.get('uid')})"
                )
            deleted = pod.metadata.deletion_timestamp
            if pod.metadata.HasField("deletion_timestamp") and deleted.seconds < now:
                raise _Refused(f"pod {namespace}/{pod.metadata.name} is being deleted")
        secret_ref = kube.get("secret")
        if isinstance(secret_ref, dict):
            secret = lookup.secret(namespace, secret_ref.get("name", ""))
            if secret is None or secret.metadata.uid != secret_ref.get("uid"):
                raise _Refused(f"secret {namespace}/{secret_ref.get('name')} is gone")
        node_ref = kube.get("node")
        if isinstance(node_ref, dict) and not isinstance(pod_ref, dict):
            node = lookup.node(node_ref.get("name", ""))
            if node is None or node.metadata.uid != node_ref.get("uid"):
                raise _Refused(f"node {node_ref.get('name')} is gone")
        return service_account_user(namespace, sa.metadata.name)

    def _legacy(self, claims: dict[str, Any], lookup: Lookup) -> UserInfo:
        """A token without the kubernetes.io claim: its subject names the account."""
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub.startswith(USER_PREFIX):
            raise _Refused("no service account in the token's subject")
        namespace, _, name = sub[len(USER_PREFIX) :].partition(":")
        if lookup.service_account(namespace, name) is None:
            raise _Refused(f"service account {namespace}/{name} has been deleted")
        return service_account_user(namespace, name)

    def _verified(self, jwt: _Jwt) -> bool:
        for key in self._verifiers():
            try:
                key.verify(jwt.signature, jwt.signing_input, padding.PKCS1v15(), hashes.SHA256())
            except InvalidSignature:
                continue
            return True
        return False


@dataclass(frozen=True)
class _Bound:
    pod: types_pb2.Pod | None = None
    secret: types_pb2.Secret | None = None
    node: types_pb2.Node | None = None


class _Refused(Exception):
    """Why a token of ours does not hold (logged; the client sees "Unauthorized")."""


def _ref(meta: types_pb2.ObjectMeta) -> dict[str, str]:
    return {"name": meta.name, "uid": meta.uid}


def service_account_tokens(
    settings: AuthenticationSettings, now: Callable[[], float]
) -> ServiceAccountTokens:
    """The apiserver's tokens from its flags (a signing key drawn when first needed if none
    is given)."""
    return ServiceAccountTokens(
        signing_key=settings.signing_key,
        issuers=settings.issuers,
        public_keys=settings.public_keys,
        api_audiences=settings.api_audiences,
        max_expiration=settings.max_expiration,
        extend_expiration=settings.extend_expiration,
        now=now,
    )
