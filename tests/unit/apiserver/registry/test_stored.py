"""A write's starting point (store.Stored) from the watch cache: the copy it mutates is parsed
from the bytes etcd holds, equal to the cached object and not it; the no-op check compares with
those bytes (upstream's origState.data)."""

from __future__ import annotations

from typing import Any

import pytest

from apiserver.registry.store import Stored, stored_bytes
from apiserver.storage.etcd import RangeResult, StorageEvent
from apiserver.storage.watch_cache import WatchCache
from kemu.api.v1 import types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.kinds import kind_for_resource

KEY = "/registry/pods/ns/p"


class _EmptyStore:
    async def current_revision(self) -> int:
        return 1

    async def range(self, prefix: str, **_: Any) -> RangeResult:
        return RangeResult([], 1, False)


def _value() -> bytes:
    pod = types_pb2.Pod(
        metadata=types_pb2.ObjectMeta(name="p", namespace="ns", labels={"b": "2", "a": "1"}),
        spec=types_pb2.PodSpec(node_name="n1", containers=[types_pb2.Container(name="c")]),
    )
    return stored_bytes(pod)  # (as the registry writes it)


@pytest.mark.anyio
async def test_a_copy_from_the_caches_bytes_equals_the_cached_object_and_is_not_it() -> None:
    cache = WatchCache(
        _EmptyStore(),  # type: ignore[arg-type]
        kind_for_resource("pods"),
        clock=FakeClock(monotonic=0.0),
    )
    await cache._initialize()
    value = _value()
    cache._apply([StorageEvent("PUT", KEY, value, None, 7)])
    co = cache.get(KEY)
    assert co is not None
    assert co.stored_value() == value
    state = Stored(co.obj, co.revision, co.stored_value())
    copy = state.mutable()
    assert copy == co.obj and copy is not co.obj
    assert copy.metadata.resource_version == "7"  # type: ignore[attr-defined]
    copy.metadata.labels["c"] = "3"  # type: ignore[attr-defined]
    copy.spec.node_name = "n2"  # type: ignore[attr-defined]
    assert "c" not in co.obj.metadata.labels  # type: ignore[attr-defined]
    assert co.obj.spec.node_name == "n1"  # type: ignore[attr-defined]
    # the no-op check's bytes: what etcd holds, the same as the cached object's own
    assert state.stored_bytes() == value == stored_bytes(co.obj)
    # a DELETED event's last state (re-encoded at the deletion) has no stored bytes
    cache._apply([StorageEvent("DELETE", KEY, None, value, 8)])
    last = cache._history[-1].cur
    assert last.stored_value() is None
    fallback = Stored(last.obj, last.revision, last.stored_value())
    assert fallback.mutable() == last.obj and fallback.mutable() is not last.obj
    assert fallback.stored_bytes() == value
