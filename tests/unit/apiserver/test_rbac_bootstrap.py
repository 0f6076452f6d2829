"""The rbac/bootstrap-roles hook's writes (apiserver/rbac_bootstrap.py) against a small fake
of the registry: a stale first guess from the watch cache costs a Conflict (or AlreadyExists)
and a read from the store, then the object is reconciled again; a changed roleRef is a delete
and a create; a protected object is never written."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from google.protobuf.message import Message

from apiserver.authorization.bootstrap_policy import (
    AUTOUPDATE_ANNOTATION,
    BootstrapPolicy,
    cluster_role,
    cluster_role_binding,
    group,
    rule,
)
from apiserver.rbac_bootstrap import ensure_rbac_policy
from kemu.api.v1 import types_pb2
from kemu.machinery.errors import AlreadyExists, Conflict, NotFound

pytestmark = pytest.mark.anyio


@dataclass
class _Cached:
    obj: Message


@dataclass
class _Cache:
    objects: dict[str, Message]
    ready: bool = True

    def get(self, key: str) -> _Cached | None:
        obj = self.objects.get(key.rsplit("/", 1)[-1])
        return None if obj is None else _Cached(obj)


@dataclass
class _Store:
    cache_of: dict[str, _Cache] = field(default_factory=dict)

    def cache(self, kind: object) -> _Cache:
        return self.cache_of[kind.kind]  # type: ignore[attr-defined]


@dataclass
class _Stored:
    obj: Message


class FakeRegistry:
    """Objects by name, each write a compare-and-swap on resourceVersion."""

    def __init__(self) -> None:
        self.objects: dict[str, Message] = {}
        self.store = _Store()
        self.calls: list[str] = []
        self._rv = 0

    def _put(self, obj: Message) -> Message:
        self._rv += 1
        out = type(obj)()
        out.CopyFrom(obj)
        out.metadata.resource_version = str(self._rv)  # type: ignore[attr-defined]
        self.objects[out.metadata.name] = out  # type: ignore[attr-defined]
        return out

    async def read(self, kind: object, namespace: str, name: str) -> _Stored:
        self.calls.append(f"read {name}")
        if name not in self.objects:
            raise NotFound(name)
        return _Stored(self.objects[name])

    async def create(self, obj: Message) -> Message:
        name = obj.metadata.name  # type: ignore[attr-defined]
        self.calls.append(f"create {name}")
        if name in self.objects:
            raise AlreadyExists(name)
        return self._put(obj)

    async def update(self, obj: Message) -> Message:
        name = obj.metadata.name  # type: ignore[attr-defined]
        self.calls.append(f"update {name}")
        current = self.objects.get(name)
        if current is None:
            raise NotFound(name)
        if current.metadata.resource_version != obj.metadata.resource_version:  # type: ignore[attr-defined]
            raise Conflict(name)
        return self._put(obj)

    async def delete(self, resource: str, namespace: str, name: str, **_: object) -> Message:
        self.calls.append(f"delete {name}")
        return self.objects.pop(name)


def _policy(*objects: Message) -> BootstrapPolicy:
    roles = tuple(o for o in objects if isinstance(o, types_pb2.ClusterRole))
    bindings = tuple(o for o in objects if isinstance(o, types_pb2.ClusterRoleBinding))
    return BootstrapPolicy(roles, bindings, (), ())


async def test_a_stale_cached_copy_conflicts_and_the_role_is_read_and_updated() -> None:
    registry = FakeRegistry()
    want = cluster_role("r", [rule(("get",), ("",), ("pods",)), rule(("list",), ("",), ("pods",))])
    stale = registry._put(cluster_role("r", [rule(("get",), ("",), ("pods",))]))
    current = registry._put(stale)  # (someone wrote it since: the cache is behind)
    registry.store.cache_of["ClusterRole"] = _Cache({"r": stale})
    writes = await ensure_rbac_policy(registry, _policy(want))  # type: ignore[arg-type]
    assert writes == 1
    assert registry.calls == ["update r", "read r", "update r"]
    stored = registry.objects["r"]
    assert isinstance(stored, types_pb2.ClusterRole)
    assert list(stored.rules) == [*current.rules, rule(("list",), ("",), ("pods",))]  # type: ignore[attr-defined]


async def test_a_role_the_cache_missed_is_already_there_and_read_then_left() -> None:
    registry = FakeRegistry()
    want = cluster_role("r", [rule(("get",), ("",), ("pods",))])
    registry._put(want)
    registry.store.cache_of["ClusterRole"] = _Cache({})
    assert await ensure_rbac_policy(registry, _policy(want)) == 0  # type: ignore[arg-type]
    assert registry.calls == ["create r", "read r"]


async def test_without_a_listed_cache_each_object_is_read_first() -> None:
    registry = FakeRegistry()
    want = cluster_role("r", [rule(("get",), ("",), ("pods",))])
    registry.store.cache_of["ClusterRole"] = _Cache({}, ready=False)
    assert await ensure_rbac_policy(registry, _policy(want)) == 1  # type: ignore[arg-type]
    assert registry.calls == ["read r", "create r"]


async def test_a_binding_to_another_role_is_deleted_and_created_unless_protected() -> None:
    registry = FakeRegistry()
    want = cluster_role_binding("b", group("g"))
    other = cluster_role_binding("b", group("g"), role_name="other")
    registry._put(other)
    writes = await ensure_rbac_policy(registry, _policy(want))  # type: ignore[arg-type]
    assert writes == 1 and registry.calls == ["read b", "delete b", "create b"]
    stored = registry.objects["b"]
    assert isinstance(stored, types_pb2.ClusterRoleBinding)
    assert stored.role_ref.name == "b"

    registry = FakeRegistry()
    other.metadata.annotations[AUTOUPDATE_ANNOTATION] = "false"
    registry._put(other)
    assert await ensure_rbac_policy(registry, _policy(want)) == 0  # type: ignore[arg-type]
    assert registry.calls == ["read b"]
