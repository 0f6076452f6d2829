"""Pods in PreBind (upstream framework/runtime/pods_in_prebind_map.go, kubernetes#135502, 1.36).

From 1.36 (version rule `preempt_pre_bind_in_memory`) a pod whose binding cycle has PreBind
work (PreBindPreFlight Success) is registered here while PreBind runs, so that a preemption
that takes it as a victim cancels its binding cycle in memory (`PodInPreBind.cancel_pod`)
instead of deleting it: the cycle fails as a PreBind error and the pod is retried after
backoff. Once PreBind is over the binding cycle marks the pod prebound (`mark_prebound`): from
then on it cannot be cancelled, and a preemption deletes it through the API as before. The
two calls race as upstream's do; whichever comes first wins.

The cancellation is an anyio cancel scope the runtime enters around the PreBind plugins
(`Framework.run_pre_bind_plugins`); cancelling it before PreBind started cancels the first
plugin at its first await.
"""

from __future__ import annotations

import anyio


class PodInPreBind:
    """One pod's PreBind (upstream podInPreBind); implements interface.PodInPreBind."""

    def __init__(self) -> None:
        self.scope = anyio.CancelScope()
        self._finished = False
        self._cause: str | None = None

    @property
    def cause(self) -> str | None:
        """Why the pod's PreBind was cancelled (None: it was not)."""
        return self._cause

    def cancel_pod(self, message: str) -> bool:
        """Cancels the pod's PreBind (`message` is the cause); False once the pod is prebound
        (its binding is no longer cancellable)."""
        if self._finished:
            return False
        if self._cause is None:
            self._cause = message
            self.scope.cancel()
        return True

    def mark_prebound(self) -> bool:
        """PreBind is over: the binding can no longer be cancelled. False when it was
        cancelled first."""
        if self._cause is not None:
            return False
        self._finished = True
        return True


class PodsInPreBindMap:
    """Pods in PreBind by uid; one map shared by the frameworks of every profile."""

    def __init__(self) -> None:
        self._pods: dict[str, PodInPreBind] = {}

    def add(self, uid: str) -> PodInPreBind:
        """Registers the pod (replacing an entry of the same uid) and returns its entry."""
        entry = self._pods[uid] = PodInPreBind()
        return entry

    def get(self, uid: str) -> PodInPreBind | None:
        return self._pods.get(uid)

    def remove(self, uid: str) -> None:
        self._pods.pop(uid, None)

    def __len__(self) -> int:
        return len(self._pods)
