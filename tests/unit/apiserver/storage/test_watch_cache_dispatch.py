"""The watch cache's fan-out: watchers kept by the trigger value their field selector requires
(a pod's spec.nodeName, as upstream's cacher valueWatchers) are sent exactly what testing every
watcher would send them, and are not tested against other nodes' pods; each event is encoded
once per event type and the same bytes go to every watcher."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from google.protobuf.message import Message

from apiserver.storage.etcd import RangeResult, StorageEvent
from apiserver.storage.watch_cache import CacheEvent, WatchCache
from kemu.api.v1 import api_pb2, types_pb2
from kemu.component.clock import FakeClock
from kemu.machinery.kinds import kind_for_resource
from kemu.machinery.selection import RequestFilter


class _EmptyStore:
    async def current_revision(self) -> int:
        return 1

    async def range(self, prefix: str, **_: Any) -> RangeResult:
        return RangeResult([], 1, False)


class _Counting:
    """An ObjectFilter that counts the objects it is asked about."""

    def __init__(self, inner: RequestFilter) -> None:
        self.inner = inner
        self.asked: list[str] = []

    def matches(self, obj: Message) -> bool:
        self.asked.append(obj.metadata.name)  # type: ignore[attr-defined]
        return self.inner.matches(obj)

    def exact(self, field: str) -> str | None:
        return self.inner.exact(field)


def _pod(name: str, node: str, namespace: str = "ns", app: str = "x") -> bytes:
    return types_pb2.Pod(
        metadata=types_pb2.ObjectMeta(name=name, namespace=namespace, labels={"app": app}),
        spec=types_pb2.PodSpec(node_name=node),
    ).SerializeToString()


async def _pods_cache() -> WatchCache:
    cache = WatchCache(
        _EmptyStore(),  # type: ignore[arg-type]
        kind_for_resource("pods"),
        clock=FakeClock(monotonic=0.0),
    )
    await cache._initialize()
    return cache


# (name, namespace, node, label) after each change; node None: deleted
_CHANGES = [
    ("p1", "ns", "", "x"),  # created unbound
    ("p2", "ns", "a", "x"),  # created bound to a
    ("p1", "ns", "a", "x"),  # bound to a
    ("p3", "other", "b", "y"),
    ("p1", "ns", "b", "x"),  # moved from a to b (the cache does not care that pods do not)
    ("p2", "ns", "a", "y"),  # relabelled on a
    ("p1", "ns", None, "x"),  # deleted (last seen on b)
    ("p3", "other", "", "y"),  # unbound again
]

_SELECTORS = [
    ("", ""),
    ("", "spec.nodeName=a"),
    ("", "spec.nodeName=b"),
    ("", "spec.nodeName=c"),
    ("", "spec.nodeName!="),
    ("", "spec.nodeName=a,status.phase!=Failed"),
    ("app=x", "spec.nodeName=a"),
    ("app=y", ""),
]


def _apply_changes(cache: WatchCache) -> list[CacheEvent]:
    last: dict[str, bytes] = {}
    for revision, (name, namespace, node, app) in enumerate(_CHANGES, start=2):
        key = f"/registry/pods/{namespace}/{name}"
        if node is None:
            cache._apply([StorageEvent("DELETE", key, None, last.pop(key), revision)])
        else:
            value = _pod(name, node, namespace, app)
            cache._apply([StorageEvent("PUT", key, value, last.get(key), revision)])
            last[key] = value
    return list(cache._history)


def _drain(stream: MemoryObjectReceiveStream[bytes]) -> list[bytes]:
    out = []
    while True:
        try:
            out.append(stream.receive_nowait())
        except anyio.WouldBlock:
            return out


@pytest.mark.anyio
@pytest.mark.parametrize("namespace", ["", "ns"])
async def test_watchers_kept_by_node_get_what_testing_every_watcher_would_send(
    namespace: str,
) -> None:
    cache = await _pods_cache()
    watchers = []
    for labels, fields in _SELECTORS:
        flt = _Counting(RequestFilter("pods", labels, fields))
        _, stream, w = cache.watch(namespace=namespace, filter=flt, resource_version=None)
        watchers.append((fields, flt, stream, w))
    assert {w.trigger for *_, w in watchers} == {None, "a", "b", "c"}
    events = _apply_changes(cache)
    asked = {fields: list(flt.asked) for fields, flt, _, _ in watchers}
    for fields, _, stream, w in watchers:
        # the reference: this watcher's filter over every event, as before the index
        expected = [ev.frame(t) for ev in events if (t := w.event_type(ev)) is not None]
        assert _drain(stream) == expected, fields
    # node c's watcher was never asked about a pod; node b's only about those on b before or
    # after a change (p1 moving to b and deleted from it, p3 on b and leaving it)
    assert asked["spec.nodeName=c"] == []
    # (a watcher of namespace ns is not asked about p3, of namespace other)
    assert set(asked["spec.nodeName=b"]) == ({"p1", "p3"} if not namespace else {"p1"})
    assert "p3" not in asked["spec.nodeName=a"]
    assert len(asked[""]) >= len(_CHANGES)  # unindexed: asked about every change


@pytest.mark.anyio
async def test_a_stopped_watcher_leaves_the_index() -> None:
    cache = await _pods_cache()
    flt = RequestFilter("pods", "", "spec.nodeName=a")
    _, first, w1 = cache.watch(namespace="", filter=flt, resource_version=None)
    _, second, w2 = cache.watch(namespace="", filter=flt, resource_version=None)
    cache.stop(w1)
    cache._apply([StorageEvent("PUT", "/registry/pods/ns/p", _pod("p", "a"), None, 2)])
    assert len(_drain(second)) == 1
    cache.stop(w2)
    assert cache.watcher_count == 0
    assert cache._by_trigger == {}
    cache._apply([StorageEvent("PUT", "/registry/pods/ns/q", _pod("q", "a"), None, 3)])
    with pytest.raises(anyio.EndOfStream):
        first.receive_nowait()


@pytest.mark.anyio
async def test_an_events_encoding_is_shared_and_equal_to_each_watchers_own() -> None:
    """Every watcher that sees a change as ADDED gets the very same bytes, equal to that
    change's object encoded on its own (resourceVersion set) in a WatchEvent."""
    cache = await _pods_cache()
    streams = [
        cache.watch(namespace=ns, filter=flt, resource_version=None)[1]
        for ns, flt in [
            ("", None),
            ("ns", None),
            ("", RequestFilter("pods", "", "spec.nodeName=a")),
            ("", RequestFilter("pods", "app=x", "")),
        ]
    ]
    cache._apply([StorageEvent("PUT", "/registry/pods/ns/p", _pod("p", "a"), None, 7)])
    frames = [_drain(s) for s in streams]
    assert all(len(f) == 1 for f in frames)
    assert all(f[0] is frames[0][0] for f in frames)  # one encoding, shared
    own = types_pb2.Pod()
    own.ParseFromString(_pod("p", "a"))
    own.metadata.resource_version = "7"
    response = api_pb2.WatchResponse()
    response.ParseFromString(frames[0][0])
    (event,) = response.events
    assert event.type == "ADDED"
    assert event.object.pod == own
