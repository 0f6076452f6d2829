"""NamespaceLifecycle admission: the cache answers, storage is asked when the cache may be
behind (a namespace it has not seen yet, or one this apiserver began deleting)."""

from __future__ import annotations

import pytest

from apiserver.admission.namespace_lifecycle import (
    FORCE_LIVE_LOOKUP_TTL,
    NamespaceLifecycle,
    check_deletable,
)
from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.errors import Forbidden, NotFound
from kemu.machinery.namespaces import begin_deletion, new_namespace, prepare_for_create

pytestmark = pytest.mark.anyio


def active(name: str) -> types_pb2.Namespace:
    ns = new_namespace(name)
    prepare_for_create(ns)
    return ns


class Stores:
    def __init__(self) -> None:
        self.cache: dict[str, types_pb2.Namespace] = {}
        self.etcd: dict[str, types_pb2.Namespace] = {}
        self.live_reads: list[str] = []
        self.clock = FakeClock(monotonic=0.0)

    def lifecycle(self) -> NamespaceLifecycle:
        async def live(name: str) -> types_pb2.Namespace | None:
            self.live_reads.append(name)
            return self.etcd.get(name)

        return NamespaceLifecycle(self.cache.get, live, clock=self.clock)


async def test_missing_namespaces_are_not_found_after_a_live_read() -> None:
    s = Stores()
    lc = s.lifecycle()
    with pytest.raises(NotFound, match='^namespaces "x" not found$'):
        await lc.admit_create("pods", "p", "x")
    assert s.live_reads == ["x"]
    s.etcd["x"] = active("x")  # created, not in the cache yet
    await lc.admit_create("pods", "p", "x")


async def test_terminating_namespaces_are_forbidden_even_while_the_cache_lags() -> None:
    s = Stores()
    lc = s.lifecycle()
    s.cache["x"] = s.etcd["x"] = active("x")
    await lc.admit_create("configmaps", "c", "x")
    assert s.live_reads == []  # the cache answered
    terminating = active("x")
    begin_deletion(terminating, terminating.metadata.creation_timestamp)
    s.etcd["x"] = terminating
    lc.deleting("x")
    with pytest.raises(Forbidden) as err:
        await lc.admit_create("pods", "p", "x")
    assert str(err.value) == (
        'pods "p" is forbidden: unable to create new content in namespace x because it is '
        "being terminated"
    )
    s.clock.advance(FORCE_LIVE_LOOKUP_TTL + 1)  # after the TTL the cache is trusted again
    await lc.admit_create("pods", "p", "x")


def test_immortal_namespaces() -> None:
    for name in ("default", "kube-system", "kube-public"):
        with pytest.raises(Forbidden, match="this namespace may not be deleted"):
            check_deletable(name)
    check_deletable("kube-node-lease")
    check_deletable("team-a")
