"""Who makes a request, for priority and fairness's FlowSchemas (issue #58 item 3).

kemu has no authentication (ServiceAccount and node credentials are issue #60's), so each
edge derives a user as upstream's authenticators would name it:

- gRPC: kemu.client sends its component's name as the first word of its user agent; each
  component is the user upstream's runs as (kube-scheduler and kube-controller-manager their
  system: users, the kubelet in group system:nodes, cluster-autoscaler and the cloud provider
  as kube-system ServiceAccounts, as their usual manifests). Every kubelet is one user,
  `system:node:kubelet` (kemu's client does not send its node's name): the system-nodes
  schema's ByUser flows are one flow, where upstream has one per node.
- REST: the impersonation headers kubectl sends with `--as` and `--as-group`
  (Impersonate-User, Impersonate-Group; upstream's impersonation filter, without its
  authorization check).
- anything else: system:anonymous in system:unauthenticated (kemu's kubeconfig has no
  credentials), which upstream's global-default schema serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, TypeVar

import grpc

_R = TypeVar("_R")

AUTHENTICATED: Final = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    """upstream's user.Info: a name and groups."""

    name: str
    groups: tuple[str, ...] = ()


ANONYMOUS: Final = UserInfo("system:anonymous", ("system:unauthenticated",))


def _service_account(namespace: str, name: str) -> UserInfo:
    return UserInfo(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}", AUTHENTICATED),
    )


COMPONENT_USERS: Final[Mapping[str, UserInfo]] = {
    "kube-scheduler": UserInfo("system:kube-scheduler", (AUTHENTICATED,)),
    "kube-controller-manager": UserInfo("system:kube-controller-manager", (AUTHENTICATED,)),
    "kubelet": UserInfo("system:node:kubelet", ("system:nodes", AUTHENTICATED)),
    "cluster-autoscaler": _service_account("kube-system", "cluster-autoscaler"),
    "cloud": _service_account("kube-system", "cloud-controller-manager"),
}
"""A kemu component (its user agent's first word) -> the user upstream's runs as."""


def of_user_agent(user_agent: str) -> UserInfo:
    first = user_agent.split(" ", 1)[0].split("/", 1)[0]
    return COMPONENT_USERS.get(first, ANONYMOUS)


def of_grpc(context: grpc.aio.ServicerContext[bytes, _R]) -> UserInfo:
    for key, value in context.invocation_metadata() or ():
        if key == "user-agent":
            return of_user_agent(value if isinstance(value, str) else value.decode("latin-1"))
    return ANONYMOUS


def of_headers(user: str, groups: list[str]) -> UserInfo:
    """From Impersonate-User and the Impersonate-Group values; anonymous without a user.
    An impersonated user is authenticated (upstream adds system:authenticated)."""
    if not user:
        return ANONYMOUS
    out = tuple(groups)
    if AUTHENTICATED not in out:
        out = (*out, AUTHENTICATED)
    return UserInfo(user, out)
