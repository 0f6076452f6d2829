"""Who makes a request, for priority and fairness's FlowSchemas (issue #58 item 3).

kemu has no authentication (ServiceAccount and node credentials are issue #60's), so each
edge derives a user as upstream's authenticators would name it:

- gRPC: a client that claims a user sends it as metadata (`impersonate-user`, and
  `impersonate-group` once per group: kemu/machinery/user.py): each kubelet claims its node's
  user, system:node:<nodeName> in system:nodes, as upstream's kubelet authenticates with its
  node's client certificate, so the system-nodes schema's ByUser distinguisher gives each
  kubelet a flow of its own. Otherwise kemu.client sends its component's name as the first
  word of its user agent; each component is the user upstream's runs as (kube-scheduler and
  kube-controller-manager their system: users, cluster-autoscaler and the cloud provider as
  kube-system ServiceAccounts, as their usual manifests; a hollow kubelet process's calls made
  for no one node of it (its shared watches, events): `system:node:kubelet` in system:nodes).
- REST: the impersonation headers kubectl sends with `--as` and `--as-group`
  (Impersonate-User, Impersonate-Group; upstream's impersonation filter, without its
  authorization check).
- anything else: system:anonymous in system:unauthenticated (kemu's kubeconfig has no
  credentials), which upstream's global-default schema serves.

With TLS and --client-ca-file (issue #60 item 1), a gRPC call's verified client certificate
is its user, as upstream's x509 authenticator names it (k8s.io/apiserver
pkg/authentication/request/x509: CommonNameUserConversion: the CN the user, the
Organizations the groups, and system:authenticated added by the authenticated-group
authenticator); the impersonation metadata still wins over it once allowed (`Requester`:
the authenticated user and whom it asks to act as; with an authorization mode other than
AlwaysAllow, upstream's impersonation check: apiserver/endpoints/filters/impersonation.py),
so a hollow kubelet process with one certificate speaks for each of its nodes (under RBAC
with the right to: docs/security.md). The user agent names the user only without a
certificate. The REST edge the same: a verified client certificate (kubectl's from the
kubeconfig) is the user, Impersonate-User wins once allowed. Calls on the Calls stream
(apiserver/endpoints/stream_calls.py) carry their stream's TLS auth context: their
certificate's user is the same.

On the gRPC edge a call's bearer token comes before its connection's certificate, where
upstream's union tries the certificate first (k8s.io/apiserver pkg/authentication/request/union
in the order of pkg/kubeapiserver/authenticator/config.go): gRPC's Python server cannot ask for
a certificate without requiring one (kemu.component.secure_serving), so a client whose
credential is a token (kube-controller-manager's controllers with
--use-service-account-credentials) still presents its process's certificate to connect. Upstream's
clients send one or the other (client-go's AnonymousClientConfig drops the certificate of a
token's config), so the token is the call's credential; it never grants more than the token
alone would on the REST edge.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

import grpc

from apiserver.authentication.service_accounts import Lookup, ServiceAccountTokens
from kemu.machinery.certs import subject
from kemu.machinery.errors import Unauthorized
from kemu.machinery.user import (
    AUTHENTICATED,
    AUTHORIZATION_KEY,
    IMPERSONATE_GROUP_KEY,
    IMPERSONATE_USER_KEY,
    NODES_GROUP,
    UserInfo,
)

__all__ = ["ANONYMOUS", "AUTHENTICATED", "COMPONENT_USERS", "UserInfo"]

_R = TypeVar("_R")

ANONYMOUS: Final = UserInfo("system:anonymous", ("system:unauthenticated",))


def _service_account(namespace: str, name: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


COMPONENT_USERS: Final[Mapping[str, UserInfo]] = {
    "kube-scheduler": UserInfo("system:kube-scheduler", (AUTHENTICATED,)),
    "kube-controller-manager": UserInfo("system:kube-controller-manager", (AUTHENTICATED,)),
    "kubelet": UserInfo("system:node:kubelet", (NODES_GROUP, AUTHENTICATED)),
    "cluster-autoscaler": _service_account("kube-system", "cluster-autoscaler"),
    "cloud": _service_account("kube-system", "cloud-controller-manager"),
}
"""A kemu component (its user agent's first word) -> the user upstream's runs as."""


BEARER_KEY: Final = AUTHORIZATION_KEY


def bearer_token(value: str) -> str:
    """The token of an Authorization value (`Bearer <token>`, the scheme in any case, as
    upstream's bearertoken authenticator); "" for none or another scheme."""
    scheme, _, token = value.strip().partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


class Authentication:
    """How the apiserver authenticates a request (upstream's union of authenticators, in its
    order): a verified client certificate, else a bearer token (a ServiceAccount token of its
    issuers: 401 when one is presented and none accepts it), else, as kemu's bare clusters
    name them, a kemu component by its user agent, else anonymous (or 401 with
    --anonymous-auth=false). One per apiserver process, set at its start (`use`)."""

    def __init__(
        self,
        tokens: ServiceAccountTokens | None = None,
        lookup: Lookup | None = None,
        *,
        anonymous: bool = True,
    ) -> None:
        self._tokens = tokens
        self._lookup = lookup
        self.anonymous = anonymous

    def authenticated(self, certificate: UserInfo | None, bearer: str, agent: str) -> UserInfo:
        """The request's user; Unauthorized for a credential no authenticator accepts, or
        none where anonymous requests are refused."""
        if certificate is not None:
            return certificate
        if bearer:
            user = None
            if self._tokens is not None and self._lookup is not None:
                user = self._tokens.authenticate(bearer, self._lookup)
            if user is None:
                raise Unauthorized("Unauthorized")
            return user
        if not self.anonymous:
            raise Unauthorized("Unauthorized")
        return of_user_agent(agent) if agent else ANONYMOUS


_CURRENT: list[Authentication] = [Authentication()]


def use(authentication: Authentication) -> None:
    """The apiserver's authentication from now on (its start, from its flags)."""
    _CURRENT[0] = authentication


def current() -> Authentication:
    return _CURRENT[0]


def of_user_agent(user_agent: str) -> UserInfo:
    first = user_agent.split(" ", 1)[0].split("/", 1)[0]
    return COMPONENT_USERS.get(first, ANONYMOUS)


def of_grpc(context: grpc.aio.ServicerContext[bytes, _R]) -> UserInfo:
    return of_metadata(context.invocation_metadata() or (), of_certificate(context))


@dataclass(frozen=True)
class Requester:
    """Who made a request (`authenticated`: its certificate's user, else its user agent's
    component, else anonymous) and whom it asks to act as (`impersonate_user`,
    `impersonate_groups` as sent): what upstream's impersonation filter checks
    (apiserver/endpoints/filters/impersonation.py) before `user` acts."""

    authenticated: UserInfo
    impersonate_user: str = ""
    impersonate_groups: tuple[str, ...] = ()

    @property
    def impersonating(self) -> bool:
        return bool(self.impersonate_user or self.impersonate_groups)

    @property
    def user(self) -> UserInfo:
        """Whom the request acts as (as `of_metadata`, `of_headers`)."""
        if self.impersonate_user:
            return of_headers(self.impersonate_user, list(self.impersonate_groups))
        return self.authenticated


@dataclass(frozen=True)
class _Claims:
    """What a call's metadata says of its user: whom it impersonates, its user agent and its
    bearer token."""

    impersonate_user: str
    impersonate_groups: tuple[str, ...]
    agent: str
    bearer: str


def _claims(metadata: Iterable[tuple[str, str | bytes]]) -> _Claims:
    agent = user = bearer = ""
    groups: list[str] = []
    for key, value in metadata:
        text = value if isinstance(value, str) else value.decode("latin-1")
        if key == IMPERSONATE_USER_KEY:
            user = text
        elif key == IMPERSONATE_GROUP_KEY:
            groups.append(text)
        elif key == "user-agent":
            agent = text
        elif key == BEARER_KEY:
            bearer = bearer_token(text)
    return _Claims(user, tuple(groups), agent, bearer)


def requester_of_grpc(context: grpc.aio.ServicerContext[bytes, _R]) -> Requester:
    """Who made the call (Unauthorized for a credential no authenticator accepts) and whom it
    asks to act as."""
    claims = _claims(context.invocation_metadata() or ())
    certificate = None if claims.bearer else of_certificate(context)
    authenticated = current().authenticated(certificate, claims.bearer, claims.agent)
    return Requester(authenticated, claims.impersonate_user, claims.impersonate_groups)


X509_PEM_CERT: Final = "x509_pem_cert"
"""gRPC's auth context key of the peer's verified certificate (grpc_security_constants.h
GRPC_X509_PEM_CERT_PROPERTY_NAME)."""


def of_certificate(context: grpc.aio.ServicerContext[bytes, _R]) -> UserInfo | None:
    """The user of the call's verified client certificate (None: none, plaintext or no
    --client-ca-file)."""
    pem = context.auth_context().get(X509_PEM_CERT)
    if not pem:
        return None
    return _user_of_pem(next(iter(pem)))


def of_peer_certificate(der: bytes | None) -> UserInfo | None:
    """The user of the REST edge's verified client certificate (DER, as Python's ssl gives
    it; None: none)."""
    return _user_of_pem(ssl.DER_cert_to_PEM_cert(der).encode()) if der else None


@functools.lru_cache(maxsize=1024)
def _user_of_pem(pem: bytes) -> UserInfo | None:
    """(a certificate is parsed once: every call of a client presents the same)"""
    name, organizations = subject(pem)
    if not name:
        return None  # upstream: "common name is empty"
    return of_headers(name, list(organizations))


def of_metadata(
    metadata: Iterable[tuple[str, str | bytes]], certificate: UserInfo | None = None
) -> UserInfo:
    """A call's user: the one it claims (impersonate-user, impersonate-group), else its
    verified certificate's, else its user agent's component, else anonymous."""
    claims = _claims(metadata)
    if claims.impersonate_user:
        return of_headers(claims.impersonate_user, list(claims.impersonate_groups))
    if claims.bearer:
        certificate = None  # (the gRPC edge: the call's token before its connection's certificate)
    try:
        return current().authenticated(certificate, claims.bearer, claims.agent)
    except Unauthorized:
        return ANONYMOUS  # (refused by the authentication filter: Calls.authorized)


def of_headers(user: str, groups: list[str]) -> UserInfo:
    """From Impersonate-User and the Impersonate-Group values; anonymous without a user.
    An impersonated user is authenticated (upstream adds system:authenticated)."""
    if not user:
        return ANONYMOUS
    out = tuple(groups)
    if AUTHENTICATED not in out:
        out = (*out, AUTHENTICATED)
    return UserInfo(user, out)
