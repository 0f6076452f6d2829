"""How each controller gets its client (upstream's ControllerClientBuilder,
staging/src/k8s.io/controller-manager/pkg/clientbuilder):

- `Credentials.PROCESS` (the default): every controller a client of its own (a rate limiter
  each) over the process's connection, as the process's user (SimpleControllerClientBuilder);
- `Credentials.SERVICE_ACCOUNTS` (`--use-service-account-credentials`, kubeadm's setting):
  each controller acts as its ServiceAccount in kube-system (names.SERVICE_ACCOUNTS), its
  token requested by the process's own user (DynamicControllerClientBuilder;
  kemu.client.credentials), so that RBAC gives it its system:controller:<name> role only.

The shared informers and leader election stay the process's own (upstream's
"shared-informers" client and the election's from the root builder).
"""

from __future__ import annotations

from typing import Final, Protocol

from controllermanager.config import Credentials
from controllermanager.names import SERVICE_ACCOUNTS
from kemu.client.client import Client, sibling_of
from kemu.client.credentials import ServiceAccountTokens
from kemu.client.interface import ApiClient
from kemu.component.clock import Clock

NAMESPACE: Final = "kube-system"


class ClientBuilder(Protocol):
    def client(self, controller: str) -> ApiClient:
        """The client of the controller named `controller` (names.py)."""
        ...


class ProcessClients:
    """SimpleControllerClientBuilder: the process's user, a rate limiter per controller."""

    def __init__(self, root: ApiClient) -> None:
        self._root = root

    def client(self, controller: str) -> ApiClient:
        return sibling_of(self._root)


class ServiceAccountClients:
    """DynamicControllerClientBuilder: each controller its ServiceAccount's token (one token
    source per account: node-controller's serves three controllers)."""

    def __init__(self, root: Client, clock: Clock) -> None:
        self._root = root
        self._clock = clock
        self._tokens: dict[str, ServiceAccountTokens] = {}

    def client(self, controller: str) -> ApiClient:
        account = SERVICE_ACCOUNTS[controller.split("/", 1)[0]]
        tokens = self._tokens.get(account)
        if tokens is None:
            tokens = ServiceAccountTokens(self._root, NAMESPACE, account, self._clock)
            self._tokens[account] = tokens
        return self._root.with_credentials(tokens)


def builder(credentials: Credentials, root: ApiClient, clock: Clock) -> ClientBuilder:
    """The builder `credentials` names; a client that is not a kemu Client (a test's fake)
    has no credentials of its own to present: its controllers share it."""
    if credentials is Credentials.SERVICE_ACCOUNTS and isinstance(root, Client):
        return ServiceAccountClients(root, clock)
    return ProcessClients(root)
