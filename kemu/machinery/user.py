"""A request's user as upstream's authenticators name it (k8s.io/apiserver pkg/authentication/
user: user.Info), and how a kemu client claims one on the gRPC edge (issue #58 item 3).

kemu has no authentication (issue #60): a client says who it is. On the REST edge that is
kubectl's impersonation headers (`--as`, `--as-group`); on the gRPC edge the same two names as
metadata keys (IMPERSONATE_USER_KEY, IMPERSONATE_GROUP_KEY, one entry per group), which
kemu.client sends for a client made with a `user` (a kubelet's node identity), and otherwise
the component's name in its user agent (apiserver/endpoints/identity.py maps it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

AUTHENTICATED: Final = "system:authenticated"
NODES_GROUP: Final = "system:nodes"
NODE_USER_PREFIX: Final = "system:node:"
"""A kubelet's user: system:node:<nodeName> in group system:nodes (upstream's node
authorizer's convention, pkg/auth/nodeidentifier: the kubelet's client certificate's CN and O)."""

IMPERSONATE_USER_KEY: Final = "impersonate-user"
IMPERSONATE_GROUP_KEY: Final = "impersonate-group"
"""gRPC metadata keys (lowercase, as gRPC requires) named after the REST edge's
Impersonate-User and Impersonate-Group headers."""
AUTHORIZATION_KEY: Final = "authorization"
"""The gRPC metadata (and HTTP header, `Authorization`) of a bearer token: `Bearer <token>`."""


def bearer(token: str) -> tuple[str, str]:
    """The metadata entry that presents `token`."""
    return (AUTHORIZATION_KEY, f"Bearer {token}")


@dataclass(frozen=True)
class UserInfo:
    """upstream's user.Info: a name and groups."""

    name: str
    groups: tuple[str, ...] = ()

    def metadata(self) -> tuple[tuple[str, str], ...]:
        """The gRPC metadata that claims this user."""
        return (
            (IMPERSONATE_USER_KEY, self.name),
            *((IMPERSONATE_GROUP_KEY, g) for g in self.groups),
        )


def node_user(node_name: str) -> UserInfo:
    """The kubelet of `node_name`: system:node:<nodeName> in system:nodes and
    system:authenticated."""
    return UserInfo(NODE_USER_PREFIX + node_name, (NODES_GROUP, AUTHENTICATED))
