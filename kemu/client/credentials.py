"""A client's bearer token from a ServiceAccount, as kube-controller-manager's controllers
get theirs with --use-service-account-credentials (upstream's DynamicControllerClientBuilder,
staging/src/k8s.io/controller-manager/pkg/clientbuilder/client_builder_dynamic.go): the
account in its namespace is read, created when missing, and a token requested for it
(serviceaccounts/token, an hour by default); the token is kept until a fifth of its life is
left (the builder's 20% leeway), on the cluster's clock, and dropped when the apiserver
answers 401 with it (client-go's ResettableTokenSource: transport/token_source.go), so the
next call asks for another.

A client made with a token source (kemu.client.client.Client `credentials`) sends the token
on every call and watch (`authorization: Bearer <token>` metadata); the apiserver's gRPC edge
takes it before the connection's certificate (apiserver/endpoints/identity.py says why).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Final, Protocol

import anyio

from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import Clock
from kemu.machinery.errors import AlreadyExists, NotFound

if TYPE_CHECKING:
    from kemu.client.client import Client

logger = logging.getLogger(__name__)

DEFAULT_EXPIRATION_SECONDS: Final = 3600
"""client_builder_dynamic.go defaultExpirationSeconds."""
LEEWAY: Final = 0.2
"""client_builder_dynamic.go defaultLeewayPercent: a token is renewed with 20% of its life
left."""


class TokenSource(Protocol):
    async def token(self) -> str:
        """The token to send now."""
        ...

    def reset(self) -> None:
        """The apiserver refused the token (401): the next `token()` gets another."""
        ...


class ServiceAccountTokens:
    """Tokens of the ServiceAccount `namespace`/`name`, requested by `client` (the
    component's own identity: it needs get and create of serviceaccounts and create of
    serviceaccounts/token there, as system:kube-controller-manager has)."""

    def __init__(
        self,
        client: Client,
        namespace: str,
        name: str,
        clock: Clock,
        *,
        expiration_seconds: int = DEFAULT_EXPIRATION_SECONDS,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self.name = name
        self._clock = clock
        self._expiration = expiration_seconds
        self._token = ""
        self._renew_at = 0.0
        self._lock = anyio.Lock()

    async def token(self) -> str:
        if self._token and self._clock.now() < self._renew_at:
            return self._token
        async with self._lock:  # (one request for the calls that find it stale together)
            if self._token and self._clock.now() < self._renew_at:
                return self._token
            await self._ensure_account()
            request = api_pb2.TokenRequest(
                metadata=types_pb2.ObjectMeta(namespace=self.namespace, name=self.name)
            )
            request.spec.expiration_seconds = self._expiration
            answer = await self._client.create_token(request)
            expires = answer.status.expiration_timestamp.ToNanoseconds() / 1e9
            now = self._clock.now()
            self._token = answer.status.token
            self._renew_at = now + max(0.0, expires - now) * (1 - LEEWAY)
            logger.info(
                "requested a token for %s/%s (expires in %.0fs)",
                self.namespace,
                self.name,
                expires - now,
            )
            return self._token

    def reset(self) -> None:
        if self._token:
            logger.info("token of %s/%s refused: requesting another", self.namespace, self.name)
        self._token = ""

    async def _ensure_account(self) -> None:
        """client_builder_dynamic.go getOrCreateServiceAccount."""
        try:
            await self._client.get(types_pb2.ServiceAccount, self.name, self.namespace)
        except NotFound:
            account = types_pb2.ServiceAccount(
                metadata=types_pb2.ObjectMeta(namespace=self.namespace, name=self.name)
            )
            try:
                await self._client.create(account)
            except AlreadyExists:
                pass
