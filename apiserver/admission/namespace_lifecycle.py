"""NamespaceLifecycle admission and the namespace REST rules of the apiserver.

Upstream: plugin namespace/lifecycle (admission.go) and pkg/registry/core/namespace/storage.
- Creating content (any namespaced object, pods/binding, pods/eviction) in a namespace that does
  not exist is NotFound (`namespaces "x" not found`); in a terminating one it is Forbidden.
  The namespaces watch cache answers; a namespace it does not have yet (created a moment ago)
  is read from etcd, and so is one this apiserver began deleting in the last 30 seconds (the
  cache may still show it Active), as upstream's live lookup and force-live-lookup cache do.
- default, kube-system and kube-public cannot be deleted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from kemu.api.v1 import types_pb2
from kemu.component.clock import Clock, RealClock
from kemu.machinery.errors import Forbidden, NotFound, Subject
from kemu.machinery.namespaces import IMMORTAL_NAMESPACES, is_terminating

FORCE_LIVE_LOOKUP_TTL: Final = 30.0

LookUp = Callable[[str], types_pb2.Namespace | None]
LiveLookUp = Callable[[str], Awaitable[types_pb2.Namespace | None]]


def check_deletable(name: str) -> None:
    if name in IMMORTAL_NAMESPACES:
        raise Forbidden(f'namespaces "{name}" is forbidden: this namespace may not be deleted')


class NamespaceLifecycle:
    def __init__(
        self,
        cached: LookUp,
        live: LiveLookUp,
        *,
        clock: Clock | None = None,
        enabled: bool = True,
    ) -> None:
        """`enabled`: the plugin is on (--disable-admission-plugins=NamespaceLifecycle: off,
        and then content may be created in a namespace that does not exist, and default,
        kube-system and kube-public may be deleted, as upstream without the plugin)."""
        self.enabled = enabled
        self._cached = cached
        self._live = live
        self._now = (clock or RealClock()).monotonic
        self._force_live: dict[str, float] = {}  # namespace -> until

    def check_deletable(self, name: str) -> None:
        if self.enabled:
            check_deletable(name)

    def deleting(self, name: str) -> None:
        """A delete of namespace `name` went through: trust only storage about it for a while."""
        self._force_live[name] = self._now() + FORCE_LIVE_LOOKUP_TTL
        if len(self._force_live) > 100:
            now = self._now()
            self._force_live = {k: v for k, v in self._force_live.items() if v > now}

    async def admit_create(self, resource: str, name: str, namespace: str) -> None:
        """Raises NotFound or Forbidden unless `namespace` exists and is not terminating."""
        if not self.enabled:
            return
        ns = self._cached(namespace)
        until = self._force_live.get(namespace)
        if ns is None or (until is not None and until > self._now() and not is_terminating(ns)):
            ns = await self._live(namespace)
        if ns is None:
            raise NotFound(
                f'namespaces "{namespace}" not found',
                subject=Subject(namespace, "", "namespaces"),
            )
        if is_terminating(ns):
            raise Forbidden(
                f'{resource} "{name}" is forbidden: unable to create new content in namespace '
                f"{namespace} because it is being terminated"
            )
