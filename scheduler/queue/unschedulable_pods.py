"""The pool of unschedulable and gated pods (upstream's UnschedulablePods), by pod key.

Upstream walks every pod of the pool on every cluster event and lets each gated pod's gating
plugin say whether the event is one it registered for. In Python that walk is the cost: 10,000
gated pods (upstream's SchedulingGatedPods workloads) made every binding cost milliseconds.
So gated pods are also kept per gating plugin, and `candidates` leaves out, all at once, the
gated pods of plugins not interested in the event; the pods it returns, and their order (the
pool's insertion order), are those of the full walk.

A pod's `gated`/`gating_plugin` may change while it is in the pool (its PreEnqueue runs again
when it is requeued): the queue calls `reindex` after each PreEnqueue run; a pod whose gating
changed goes to the end of the pool's order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kemu.scheduling.interface import QueuedPodInfo


class UnschedulablePods:
    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._ungated: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, dict[str, QueuedPodInfo]] = {}  # gating plugin -> key -> pod
        self._bucket: dict[str, str] = {}  # key -> the gating plugin it is indexed under

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def values(self) -> Iterator[QueuedPodInfo]:
        return iter(self._pods.values())

    def add(self, key: str, qpi: QueuedPodInfo) -> None:
        self.pop(key)
        self._pods[key] = qpi
        self._index(key, qpi)

    def pop(self, key: str) -> QueuedPodInfo | None:
        qpi = self._pods.pop(key, None)
        if qpi is not None:
            self._unindex(key)
        return qpi

    def reindex(self, key: str, qpi: QueuedPodInfo) -> None:
        """After the pod's PreEnqueue ran again: if it is this pool's and its gating changed,
        it is indexed again and goes to the end of the pool's order (so that every index
        keeps the pool's order; upstream's pool is a map, with no order to keep)."""
        if self._pods.get(key) is not qpi:
            return
        now = qpi.gating_plugin if qpi.gated else None
        if now == self._bucket.get(key) and (now is not None or key in self._ungated):
            return
        self.add(key, qpi)

    def count_gated(self) -> int:
        return len(self._pods) - len(self._ungated)

    def count_ungated(self) -> int:
        return len(self._ungated)

    def candidates(self, interested: Callable[[str], bool]) -> list[QueuedPodInfo]:
        """The pods an event may move: every pod not gated, and the gated pods whose gating
        plugin is `interested` in the event; in the pool's order."""
        wanted = [plugin for plugin in self._gated if interested(plugin)]
        if not wanted:
            return list(self._ungated.values())
        if len(wanted) == len(self._gated):
            return list(self._pods.values())
        keep = set(wanted)
        return [
            qpi
            for key, qpi in self._pods.items()
            if key in self._ungated or self._bucket.get(key) in keep
        ]

    def _index(self, key: str, qpi: QueuedPodInfo) -> None:
        if qpi.gated:
            self._gated.setdefault(qpi.gating_plugin, {})[key] = qpi
            self._bucket[key] = qpi.gating_plugin
        else:
            self._ungated[key] = qpi

    def _unindex(self, key: str) -> None:
        if self._ungated.pop(key, None) is not None:
            return
        plugin = self._bucket.pop(key, None)
        if plugin is None:
            return
        bucket = self._gated.get(plugin)
        if bucket is not None:
            bucket.pop(key, None)
            if not bucket:
                del self._gated[plugin]
