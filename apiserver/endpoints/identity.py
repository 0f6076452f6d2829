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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final, TypeVar

import grpc

from kemu.machinery.user import (
    AUTHENTICATED,
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


def of_user_agent(user_agent: str) -> UserInfo:
    first = user_agent.split(" ", 1)[0].split("/", 1)[0]
    return COMPONENT_USERS.get(first, ANONYMOUS)


def of_grpc(context: grpc.aio.ServicerContext[bytes, _R]) -> UserInfo:
    return of_metadata(context.invocation_metadata() or ())


def of_metadata(metadata: Iterable[tuple[str, str | bytes]]) -> UserInfo:
    """A call's user: the one it claims (impersonate-user, impersonate-group), else its user
    agent's component, else anonymous."""
    agent = ""
    user = ""
    groups: list[str] = []
    for key, value in metadata:
        text = value if isinstance(value, str) else value.decode("latin-1")
        if key == IMPERSONATE_USER_KEY:
            user = text
        elif key == IMPERSONATE_GROUP_KEY:
            groups.append(text)
        elif key == "user-agent":
            agent = text
    if user:
        return of_headers(user, groups)
    return of_user_agent(agent) if agent else ANONYMOUS


def of_headers(user: str, groups: list[str]) -> UserInfo:
    """From Impersonate-User and the Impersonate-Group values; anonymous without a user.
    An impersonated user is authenticated (upstream adds system:authenticated)."""
    if not user:
        return ANONYMOUS
    out = tuple(groups)
    if AUTHENTICATED not in out:
        out = (*out, AUTHENTICATED)
    return UserInfo(user, out)
